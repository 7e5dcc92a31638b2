"""Real-browser flow of the Study page: download a config and a report, then load a config back."""

from __future__ import annotations

import re

import pytest

from prdp_core.study.config import parse_config

from .conftest import shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click()
    wait_idle(page)


def test_study_download_report_and_config_then_reload(page, app_url, tmp_path):
    page.goto(app_url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    wait_idle(page)
    _nav(page, "Policy designer")  # the study then holds a policy and a unit-splitting release
    page.get_by_text("Policy-loss CDF over records").first.wait_for()
    _nav(page, "Study")
    page.get_by_role("heading", name="Study", exact=True).wait_for()

    # download the config
    with page.expect_download() as info:
        page.get_by_role("button", name=re.compile("Download the study config")).click()
    cfg_path = tmp_path / "study.yaml"
    info.value.save_as(str(cfg_path))
    study = parse_config(cfg_path.read_text(encoding="utf-8"))
    assert study.data.sample == "cbp_like" and "thresholds" in study.policy
    assert [m["kind"] for m in study.mechanisms] == ["unit_splitting"]
    shot(page, "study-01-export")

    # build and download the report
    page.get_by_role("tab", name=re.compile("Report")).click()
    # nothing released yet on this page: the button runs the study once (recorded) and builds the report
    page.get_by_role("button", name=re.compile("Run the study's mechanisms and build the report")).click()
    wait_idle(page, timeout=120_000)
    page.get_by_text("Report built").wait_for(timeout=120_000)
    with page.expect_download() as info:
        page.get_by_role("button", name=re.compile(r"Report \(HTML\)")).click()
    html_path = tmp_path / "report.html"
    info.value.save_as(str(html_path))
    html = html_path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "Budget table" in html
    assert not re.search(r"<script[^>]+src=[\"']?https?:", html, re.I)
    shot(page, "study-02-report")

    # load the downloaded config back, changed: a smaller sample, review mode, another threshold
    text = cfg_path.read_text(encoding="utf-8")
    text = text.replace("mode: teaching", "mode: review").replace("seed: 0\ndata:", "seed: 42\ndata:")
    text = text.replace("  sample: cbp_like\n", "  sample: cbp_like\n  n: 5000\n")
    text = re.sub(r"EMP: 100\.0", "EMP: 77.0", text, count=1)
    changed = tmp_path / "changed.yaml"
    changed.write_text(text, encoding="utf-8")
    page.get_by_role("tab", name=re.compile("Load a study")).click()
    uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="Study config (YAML)")
    uploader.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(changed))
    wait_idle(page)
    page.get_by_role("button", name="Load this study").click()
    wait_idle(page)
    page.get_by_text("Loaded the study from changed.yaml").wait_for()
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("T(EMP) = 77").wait_for()
    assert sidebar.get_by_text("5,000 records").count() == 0  # review mode: no record count
    sidebar.get_by_text("Teaching (seeded, shows true values)").click()
    wait_idle(page)
    sidebar.get_by_role("button", name="Switch to teaching").click()  # leaving review mode is confirmed
    wait_idle(page)
    sidebar.get_by_text("5,000 records").wait_for()  # the config's sample size
    sidebar.get_by_text("Review (true values hidden)").click()
    wait_idle(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    shot(page, "study-03-reloaded")

    # the pages show the loaded study (in its review mode: the public reading of the policy, not the records')
    _nav(page, "Policy designer")
    page.get_by_text("a record cut into 10 pieces loses").first.wait_for()
    assert page.get_by_text("Policy-loss CDF over records").count() == 0
    assert page.locator('[data-testid="stException"]').count() == 0
