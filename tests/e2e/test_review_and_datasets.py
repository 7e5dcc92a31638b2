"""Review mode, dataset switches, the negative-value shift and the confirmation of guessed roles, in a real browser
on uploaded tables.

* Review mode: a table with a planted record (SALES = 987654.321, alone at the top) is uploaded after switching
  to review mode; every page is visited (every view of the Personalized DP page, a release on the Run, Budget
  functions and Concepts pages, the Study report) and its rendered text, the data of its Plotly figures and
  every websocket frame the server sent (Arrow tables of dataframes included) are scanned for the record's
  value, its loss (the largest), its group's true sum and the number of rows.
* A dataset switch replaces the active policy at once: the sidebar shows the new table's thresholds in the
  same rerun, on the Data page, without opening another page.
* A negative measure is shifted by exactly the public constant typed, and the profile says so.
* An upload — even a clean one — lands on the Column roles view with its guessed roles and becomes active only
  on *Use this table*.
"""

from __future__ import annotations

import io
import json
import re
import struct

import numpy as np
import pandas as pd
import pytest
from playwright.sync_api import expect

from prdp_core.core.loss_profile import format_loss
from prdp_core.data.dataset import guess_schema, prepare_dataset
from prdp_core.mechanisms.preview import preview_policy
from ui.policy_designer import default_policy

from .conftest import shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

N = 1873  # rows of the planted table: a count that appears nowhere else
PLANTED = 987654.321
PLANT_GROUP = "R_PLANT"


def _planted_csv() -> str:
    rng = np.random.default_rng(7)
    rows = []
    for i in range(N):
        region = PLANT_GROUP if i % 9 == 0 else f"R{i % 5}"
        sales = PLANTED if i == 1000 else round(float(rng.uniform(10, 5000)), 2)
        emp = int(rng.integers(1, 300))
        rows.append(f"{i},F{i // 4},{region},{sales},{emp}")
    return "rec,FIRM,REGION,SALES,EMP\n" + "\n".join(rows) + "\n"


def _secrets(csv: str) -> dict[str, list[str]]:
    """The planted statistics as they could be written: text forms for the page, float bytes for the frames."""
    df = pd.read_csv(io.StringIO(csv))
    ds = prepare_dataset(df, guess_schema(df), name="planted.csv")  # the roles the app guesses and confirms
    losses = preview_policy(ds, default_policy(ds)).records.values
    top = float(losses.max())
    assert float(losses[ds.table["SALES"].to_numpy() == PLANTED][0]) == top  # the planted record loses the most
    group_sum = float(df.loc[df["REGION"] == PLANT_GROUP, "SALES"].sum())
    return {
        "text": ["987654.321", "987,654", "987654", format_loss(top), f"{top:,.0f}", repr(top),
                 f"{group_sum:,.0f}", f"{group_sum:.2f}", repr(group_sum), f"{N:,}"],
        "regex": [rf"(?<![\d.,]){N}(?![\d.,]\d)"],
        "json": ["987654.321", repr(top), repr(group_sum)],
        "bytes": [struct.pack("<d", v) for v in (PLANTED, top, group_sum)],
    }


_TEXT_JS = """() => {
  const out = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {acceptNode: n =>
      ['SCRIPT', 'STYLE', 'NOSCRIPT'].includes(n.parentElement && n.parentElement.tagName)
        ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  while (walk.nextNode()) out.push(walk.currentNode.nodeValue);
  document.querySelectorAll('input, textarea').forEach(e => out.push(e.value || ''));
  return out.join('\\n');
}"""

_FIGURES_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => JSON.stringify(
  {data: gd.data, layout: gd.layout}, (k, v) => ArrayBuffer.isView(v) ? Array.from(v) : v))"""


def _open(page, app_url: str) -> list[bytes]:
    """Open the app on its Data page; returns the list every websocket frame the server sends is appended to."""
    frames: list[bytes] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(
        payload if isinstance(payload, bytes) else payload.encode())))
    page.goto(app_url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    wait_idle(page)
    return frames


def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click()
    wait_idle(page)
    assert page.locator('[data-testid="stException"]').count() == 0, title


def _upload(page, tmp_path, name: str, csv: str) -> None:
    page.get_by_role("tab", name=re.compile("Upload a file")).click()
    wait_idle(page)  # switching tabs reruns the page
    f = tmp_path / name
    f.write_text(csv, encoding="utf-8")
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(f))
    wait_idle(page)
    page.get_by_text(f"{name} is not in use yet").wait_for()  # its own roles view, not the previous table's


def _use_this_table(page) -> None:
    page.get_by_role("button", name="Use this table").click()
    wait_idle(page)


def _sidebar(page):
    return page.locator('[data-testid="stSidebar"]')


def _scan(page, secrets: dict[str, list], where: str) -> list[str]:
    text = page.evaluate(_TEXT_JS)
    figures = "\n".join(page.evaluate(_FIGURES_JS))
    found = [f"{where}: text {s!r}" for s in secrets["text"] if s in text]
    found += [f"{where}: text /{r}/" for r in secrets["regex"] if re.search(r, text)]
    found += [f"{where}: figure {s!r}" for s in secrets["json"] if re.search(rf"(?<![\d.]){re.escape(s)}(?!\d)",
                                                                              figures)]
    return found


def test_review_mode_shows_no_statistic_of_the_records_on_any_page(page, app_url, tmp_path):
    csv = _planted_csv()
    secrets = _secrets(csv)
    frames = _open(page, app_url)
    _sidebar(page).get_by_text("Review (true values hidden)").click()
    wait_idle(page)
    frames.clear()  # from here on, everything the server sends is scanned

    _upload(page, tmp_path, "planted.csv", csv)
    page.get_by_text("planted.csv is not in use yet").wait_for()
    _use_this_table(page)
    _sidebar(page).get_by_text("planted.csv").wait_for()
    leaks = _scan(page, secrets, "Data")
    for title in ("Policy designer", "Budget functions", "Personalized DP", "Trade-offs", "Run", "Analyst tiers",
                  "Study", "Concepts"):
        _nav(page, title)
        if title == "Policy designer":
            page.get_by_text("a record cut into 10 pieces loses").wait_for()
        if title == "Run":
            page.get_by_role("button", name="Run release").click()
            wait_idle(page)
            page.get_by_text("Released answers", exact=True).wait_for()
        if title == "Budget functions":
            page.get_by_role("button", name="Run", exact=True).click()
            wait_idle(page)
            page.get_by_text("The framework released ε_τ").wait_for()
        if title == "Personalized DP":
            for view in ("Threshold explorer", "Compare mechanisms", "Run a release", "PE scores", "PDP vs PrDP"):
                page.locator('[data-testid="stRadio"]').get_by_text(view, exact=True).click()
                wait_idle(page)
                if view == "Run a release":
                    page.get_by_role("button", name="Run release").click()
                    wait_idle(page)
                if view == "PDP vs PrDP":
                    page.get_by_role("button", name="Run PDP and PrDP side by side").click()
                    wait_idle(page)
                leaks += _scan(page, secrets, f"{title} / {view}")
        if title == "Study":
            page.get_by_role("tab", name=re.compile("Report")).click()
            page.get_by_role("button", name=re.compile("Build the report")).click()
            wait_idle(page, timeout=120_000)
            page.get_by_text("Report built").wait_for(timeout=120_000)
        if title == "Concepts":
            page.get_by_role("tab", name=re.compile("Histogram lab")).click()
            page.get_by_text(re.compile(r"^Active dataset \(planted\.csv\)$")).click()
            wait_idle(page)
            page.get_by_role("button", name="Run both histograms").click()
            wait_idle(page, timeout=120_000)
        leaks += _scan(page, secrets, title)
        shot(page, f"review-{re.sub(r'[^a-z]+', '-', title.lower())}")
    _nav(page, "Data")
    leaks += _scan(page, secrets, "Data (again)")
    sent = b"".join(frames)
    assert sent, "no websocket frame was recorded"
    leaks += [f"websocket: float64 {struct.unpack('<d', b)[0]!r}" for b in secrets["bytes"] if b in sent]
    leaks += [f"websocket: {s!r}" for s in secrets["json"] if s.encode() in sent]
    assert not leaks, leaks
    # the scan finds what it looks for: in teaching mode the same pages show the planted record
    frames.clear()
    _sidebar(page).get_by_text("Teaching (seeded, shows true values)").click()
    wait_idle(page)
    _sidebar(page).get_by_role("button", name="Switch to teaching").click()  # leaving review mode is confirmed
    wait_idle(page)
    _nav(page, "Policy designer")
    page.get_by_text("Largest record loss", exact=True).wait_for()
    shown = _scan(page, secrets, "teaching")
    assert f"teaching: text {secrets['text'][3]!r}" in shown, shown  # the largest loss, formatted
    assert f"teaching: figure {secrets['json'][1]!r}" in shown, shown  # the records' loss CDF reaches it
    assert secrets["bytes"][1] in b"".join(frames)  # and the frames carry it


def _registry_outputs(tmp_path, csv: str, mode: str) -> dict[str, str]:
    """Every output of the review boundary's registry, made from the planted table with the policy and roles
    the app gives it (its default policy on the guessed roles) in ``mode``: name → text."""
    from prdp_core.review import report
    from prdp_core.review import review_boundary as boundary

    df = pd.read_csv(io.StringIO(csv))
    schema = guess_schema(df)
    pol = default_policy(prepare_dataset(df, schema, name="planted.csv"))
    (tmp_path / "planted.csv").write_text(csv, encoding="utf-8")
    queries = [{k: v for k, v in q.to_dict().items() if v not in (None, "", 0.0)}
               for q in pol.workload.queries]
    study = report.study_from_dict({
        "version": 1, "mode": mode, "seed": 0,
        "data": {"path": "planted.csv", "schema": {"measures": list(schema.measures), "groups": list(schema.groups),
                                                   "owner": schema.owner_col}},
        "policy": {"thresholds": dict(pol.thresholds.rows[0][1])},
        "workload": {"queries": queries}, "mechanisms": [{"kind": "unit_splitting"}]}, base_dir=tmp_path)
    run = report.run_study(study)
    return {name: boundary.readable(name, boundary.produce(name, boundary.subject_of(run, out.takes),
                                                           teaching=mode == "teaching"))
            for name, out in boundary.REGISTRY.items()}


def test_every_registered_output_of_the_planted_table_hides_it_in_review_mode(tmp_path):
    """The pages' scan above, over every output of ``prdp_core.review.review_boundary.REGISTRY`` (report, CSV/JSON/YAML
    files, the ledger exports, board entries, the share link, snippets, prdp run's line): an output added to
    the registry is scanned without a change here. No browser: the outputs are bytes."""
    csv = _planted_csv()
    secrets = _secrets(csv)

    def scan(files: dict[str, str]) -> list[str]:  # whole numbers only: "570,195" is not in "[…,570,195,…]"
        found = [f"{name}: {s!r}" for name, text in files.items() for s in secrets["text"] + secrets["json"]
                 if re.search(rf"(?<![\d.,]){re.escape(s)}(?!\d|[.,]\d)", text)]
        return found + [f"{name}: /{r}/" for name, text in files.items() for r in secrets["regex"]
                        if re.search(r, text)]

    for mode in ("review", "teaching"):
        (tmp_path / mode).mkdir()
    leaks = scan(_registry_outputs(tmp_path / "review", csv, "review"))
    assert not leaks, leaks
    shown = scan(_registry_outputs(tmp_path / "teaching", csv, "teaching"))  # the scan finds what it looks for
    assert f"report.html: {secrets['text'][3]!r}" in shown, shown  # the largest loss, under the records' CDF
    assert f"report.html: {secrets['text'][-1]!r}" in shown, shown  # the row count


def _sidebar_policy(page):
    return _sidebar(page).locator('[data-testid="stMarkdown"]').filter(has_text="Unit splitting")


def test_a_dataset_switch_replaces_the_active_policy_at_once_everywhere(page, app_url, tmp_path):
    big = "id,SALES\n" + "".join(f"a{i},{50_000 + 8 * i}\n" for i in range(100))  # p99 ≈ 50,792 → 51,000
    small = "id,SALES\n" + "".join(f"b{i},{100 + 2 * i}\n" for i in range(100))  # p99 ≈ 298 → 300
    _open(page, app_url)
    _upload(page, tmp_path, "big.csv", big)
    _use_this_table(page)
    expect(_sidebar_policy(page)).to_contain_text("T(SALES) = 51,000")  # the new table's policy, on the Data page
    _nav(page, "Policy designer")
    page.get_by_text("Policy-loss CDF over records").first.wait_for()
    _nav(page, "Data")
    _upload(page, tmp_path, "small.csv", small)
    expect(_sidebar_policy(page)).to_contain_text("T(SALES) = 51,000")  # not confirmed: the previous table stays
    _use_this_table(page)
    # the rerun of the click, on the same page (nothing else reruns the app): the sidebar shows the new policy
    expect(_sidebar_policy(page)).to_contain_text("T(SALES) = 300")
    expect(_sidebar_policy(page)).not_to_contain_text("51,000")
    _sidebar(page).get_by_text("small.csv").wait_for()
    shot(page, "dataset-switch-sidebar")
    _nav(page, "Run")
    body = page.evaluate(_TEXT_JS)
    assert "T(SALES) = 300" in body and "51,000" not in body


def test_a_negative_measure_is_shifted_by_the_public_constant_typed_and_the_profile_says_so(page, app_url, tmp_path):
    csv = "id,SALES\n" + "".join(f"n{i},{-502.3 if i == 0 else 10 + i}\n" for i in range(50))
    frames = _open(page, app_url)
    _upload(page, tmp_path, "net.csv", csv)
    page.get_by_text("Add a public constant to every value of each such measure").click()
    wait_idle(page)
    _use_this_table(page)  # no constant typed: nothing is shifted, nothing becomes active
    page.get_by_text("No public constant is typed for 'SALES'").wait_for()
    box = page.get_by_label("Public constant added to SALES")
    box.fill("1000")
    box.press("Enter")
    wait_idle(page)
    frames.clear()
    _use_this_table(page)
    page.get_by_text("SALES shifted by +1,000 (public constant)", exact=True).wait_for()
    expect(page.get_by_role("tab", name=re.compile("Profile"))).to_have_attribute("aria-selected", "true")
    sent = b"".join(frames)
    assert b"497.7" in sent and b"+1,000" in sent  # the profile table: shifted minimum and the shift
    shot(page, "shift-profile")


def test_a_clean_upload_waits_for_confirmation_of_its_guessed_roles(page, app_url, tmp_path):
    csv = "rec,SALES\n" + "".join(f"{i},{5 + (i * 37) % 400}\n" for i in range(120))  # rec: 0 … N−1
    _open(page, app_url)
    _sidebar(page).get_by_text("cbp_like").wait_for()
    _upload(page, tmp_path, "clean.csv", csv)
    expect(page.get_by_role("tab", name=re.compile("Column roles"))).to_have_attribute("aria-selected", "true")
    page.get_by_text("clean.csv is not in use yet").wait_for()
    measures = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Measures (numeric, non-negative)")
    expect(measures).to_contain_text("SALES")  # the guess is shown for confirmation
    page.get_by_role("button", name="Use this table").wait_for()
    expect(_sidebar(page).get_by_text("cbp_like")).to_have_count(1)  # the previous dataset is still active
    expect(_sidebar(page).get_by_text("clean.csv")).to_have_count(0)
    shot(page, "upload-roles-confirmation")
    _use_this_table(page)
    _sidebar(page).get_by_text("clean.csv").wait_for()
    _sidebar(page).get_by_text("120 records").wait_for()
    expect(page.get_by_role("tab", name=re.compile("Profile"))).to_have_attribute("aria-selected", "true")
    assert json.dumps(page.evaluate(_TEXT_JS)).count("not in use yet") == 0
