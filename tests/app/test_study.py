"""Study page: export → import restores every page (policy, workload, results with the seed)."""

from __future__ import annotations

import nbformat
import pandas as pd
import pytest

from prdp_core.study.config import parse_config
from tests.hostile import run_python

from .conftest import open_page, texts

BASE = """
version: 1
mode: teaching
seed: 5
data: {sample: cbp_like, n: 4000, seed: 1}
policy:
  thresholds: {EMP: 50, PAYANN: 5000, PAYQTR1: 2000}
  budget: {expression: "1e3 / max(EMP, 1)", eps_max: 50, U: 1e6}
  specification: {tiers: {f_c: 0.3, f_m: 0.3}}
  tiers: {public: 1.0, agency: 4.0}
workload:
  queries:
    - {kind: count, group_by: [STATE], rho: 0.3}
    - {kind: sum, measure: EMP, rho: 0.4, group_by: [STATE]}
mechanisms:
  - {kind: unit_splitting, partition_delta: 1.0e-5}
  - {kind: prdp, query: count}
  - {kind: personalized, mechanism: threshold, t: mean, query: {kind: count, column: EMP, cutoff: 5}}
  - {kind: multitier, family: laplace}
app:
  tradeoffs: {tr_rhos: [0.5, 2.0]}
"""


def _load(at, text: str):
    at.switch_page("app_pages/study.py").run()
    at.text_area(key="study_paste").set_value(text).run()
    at.button(key="study_load_paste").click().run()
    assert not at.exception, at.exception
    return at


def _exported(at) -> str:
    at.switch_page("app_pages/study.py").run()
    assert not at.exception, at.exception
    return next(c.value for c in at.code if c.language == "yaml")


def _run_everything(at) -> dict[str, pd.DataFrame]:
    """Press every page's release button once; the answers of each release."""
    out = {}
    at.switch_page("app_pages/run.py").run()
    at.button(key="run_go").click().run()
    out["run"] = at.session_state["run_release"].answers
    at.switch_page("app_pages/budget_functions.py").run()
    at.button(key="bf_run").click().run()
    out["budget"] = at.session_state["bf_result"]["rows"]
    at.switch_page("app_pages/personalized.py").run()
    at.radio(key="pdp_view").set_value("Run a release").run()
    at.button(key="pdp_run").click().run()
    out["personalized"] = at.session_state["pdp_last_release"].answers
    at.switch_page("app_pages/analyst_tiers.py").run()
    at.button(key="mt_release_btn").click().run()
    out["tiers"] = at.session_state["mt_release"]["release"].answers
    assert not at.exception, at.exception
    return out


def test_round_trip_of_every_page():
    # session 1: load a study, change settings on several pages, run every release
    a = _load(open_page("study"), BASE)
    assert a.session_state["dataset"].n == 4000 and a.session_state["seed"] == 5
    a.switch_page("app_pages/policy_designer.py").run()
    a.number_input(key="thr_EMP").set_value(25.0).run()
    a.switch_page("app_pages/budget_functions.py").run()
    a.radio(key="bf_model").set_value("local").run()
    a.switch_page("app_pages/analyst_tiers.py").run()
    a.selectbox(key="mt_family").set_value("gaussian").run()
    a.switch_page("app_pages/tradeoffs.py").run()
    a.multiselect(key="tr_pcts").set_value([95.0, 99.0]).run()
    first = _run_everything(a)
    exported = _exported(a)
    study = parse_config(exported)
    assert study.policy["thresholds"]["EMP"] == 25.0
    assert study.app["tradeoffs"]["tr_pcts"] == [95.0, 99.0]
    policy = a.session_state["policy"]

    # session 2: a fresh app loads the export and gets the same policy, settings and results
    b = _load(open_page("study"), exported)
    assert "Loaded the study" in texts(b)
    assert b.session_state["policy"] == policy
    assert b.session_state["bf_model"] == "local" and b.session_state["mt_family"] == "gaussian"
    assert b.session_state["tr_pcts"] == [95.0, 99.0]
    second = _run_everything(b)
    for name in first:
        pd.testing.assert_frame_equal(first[name].reset_index(drop=True), second[name].reset_index(drop=True),
                                      check_exact=True, obj=name)
    # and exporting again gives the same config
    assert parse_config(_exported(b)) == study


def test_settings_survive_visiting_other_pages():
    at = _load(open_page("study"), BASE)
    before = _exported(at)
    for page in ("policy_designer", "run", "budget_functions", "personalized", "analyst_tiers", "tradeoffs"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
    after = parse_config(_exported(at))
    ref = parse_config(before)
    assert after.policy == ref.policy and after.workload == ref.workload and after.data == ref.data
    assert [m["kind"] for m in after.mechanisms] == [m["kind"] for m in ref.mechanisms]


def test_invalid_config_keeps_the_session():
    at = _load(open_page("study"), BASE)
    policy, ds = at.session_state["policy"], at.session_state["dataset"]
    bad = BASE.replace("EMP: 50,", "EMP: -50,")
    _load(at, bad)
    assert "policy.thresholds.EMP" in texts(at) and "Nothing was changed" in texts(at)
    assert at.session_state["policy"] == policy and at.session_state["dataset"] is ds
    _load(at, "version: 7\ndata: {sample: cbp_like}\n")
    assert "unsupported version 7" in texts(at)
    _load(at, BASE + "\nbogus: 1\n")
    assert "bogus: unknown key" in texts(at)
    _load(at, BASE.replace("tr_rhos", "tr_nonsense"))
    assert "app.tradeoffs.tr_nonsense: unknown setting" in texts(at)
    _load(at, BASE.replace("group_by: [STATE], rho: 0.3", "group_by: [NOPE], rho: 0.3"))
    assert "workload.queries[0].group_by" in texts(at)
    assert at.session_state["policy"] == policy


def test_file_study_needs_its_data():
    at = _load(open_page("study"), "version: 1\ndata: {path: firms.csv}\n")
    assert "firms.csv" in texts(at) and "Nothing was changed" in texts(at)


@pytest.mark.parametrize("mode", ["teaching", "review"])
def test_build_report(mode):
    at = _load(open_page("study"), BASE.replace("mode: teaching", f"mode: {mode}"))
    at.switch_page("app_pages/study.py").run()
    at.button(key="study_build").click().run()
    assert not at.exception, at.exception
    assert "Report built" in texts(at)
    out = at.session_state["study_outputs"]
    html = out["html"].decode()
    assert "<script src=\"http" not in html and "Budget table" in html
    results = out["results"].decode()
    assert ("true" in results.splitlines()[0].split(",")) == (mode == "teaching")
    budget = next(b for b in at.get("download_button") if b.proto.id.endswith("study_dl_budget"))
    assert budget.proto.label == "Budget table (CSV)"


def test_the_report_offers_the_reproduction_notebook(tmp_path):
    """The Study page's downloads hold study.ipynb beside reproduce.py: the same code in cells, each after its
    explanation; its cells, run in order, write the results table the page built (a seeded teaching study)."""
    at = _load(open_page("study"), BASE)
    at.switch_page("app_pages/study.py").run()
    at.button(key="study_build").click().run()
    assert not at.exception, at.exception
    out = at.session_state["study_outputs"]
    button = next(b for b in at.get("download_button") if b.proto.id.endswith("study_dl_notebook"))
    assert button.proto.label == "Notebook (Jupyter)"
    nb = nbformat.reads(out["notebook"].decode("utf-8"), as_version=4)
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    script = out["script"].decode("utf-8")
    assert all(c.startswith("# --- mechanism") and c in script for c in code[2:-1])  # the script's code, in cells
    (tmp_path / "notebook.py").write_text("\n\n".join(code) + "\n", encoding="utf-8")
    run_python(tmp_path / "notebook.py", tmp_path)
    assert (tmp_path / "reproduced" / "results.csv").read_bytes() == out["results"]


def test_seed_survives_review_mode():
    at = _load(open_page("study"), BASE)
    at.radio(key="mode").set_value("review").run()
    at.switch_page("app_pages/run.py").run()
    assert at.session_state["seed"] == 5
    assert parse_config(_exported(at)).seed == 5


def test_secure_toggle_round_trips():
    at = _load(open_page("study"), BASE.replace("{kind: unit_splitting, partition_delta: 1.0e-5}",
                                                "{kind: unit_splitting, partition_delta: 1.0e-5, secure: true}"))
    assert at.session_state["run_secure"] is True
    at.switch_page("app_pages/run.py").run()
    assert not at.exception, at.exception
    study = parse_config(_exported(at))
    assert study.mechanisms[0].get("secure") is True and "seed" not in study.mechanisms[0]


def test_round_trip_of_an_uploaded_file_with_fixes_and_concepts_settings():
    """Data page state (uploaded file, edited roles, dropped rows, a public shift) and the Concepts
    page's settings: export → import in a fresh session (config + its data file) → the same dataset,
    the same policy, the same settings."""
    csv = b"acct,branch,bal,pay\n1,x,-5,3\n2,y,10,\n3,x,20,7\n4,y,40,9\n5,x,80,11\n"
    a = open_page("data")
    a.file_uploader(key="upload").set_value(("bank.csv", csv, "text/csv")).run()
    rid = a.session_state["raw"]["id"]
    a.selectbox(key=f"map_id_{rid}").set_value("acct")
    a.multiselect(key=f"map_measures_{rid}").set_value(["bal", "pay"])
    a.multiselect(key=f"map_groups_{rid}").set_value(["branch"]).run()
    a.checkbox(key=f"fix_missing_{rid}").check().run()
    a.radio(key=f"fix_neg_{rid}").set_value("shift").run()
    a.number_input(key=f"fix_shift_{rid}_bal").set_value(100.0)
    a.button(key=f"apply_{rid}").click().run()
    assert not a.exception, a.exception
    ds_a = a.session_state["dataset"]
    assert ds_a.name == "bank.csv" and ds_a.n == 4 and ds_a.shifts == {"bal": 100.0}
    a.switch_page("app_pages/concepts.py").run()
    a.number_input(key="cc_eps").set_value(2.5).run()
    a.switch_page("app_pages/policy_designer.py").run()
    assert not a.exception, a.exception
    exported = _exported(a)
    assert not any("Configuration problem" in str(e.value) for e in a.error), [e.value for e in a.error]
    study = parse_config(exported)
    assert study.data.path == "bank.csv" and study.data.prepare == {
        "missing": "drop", "negative": "shift", "shift_by": {"bal": 100.0}}
    assert study.app["concepts"]["cc_eps"] == 2.5

    b = open_page("study")
    b.text_area(key="study_paste").set_value(exported).run()
    b.file_uploader(key="study_data_upload").set_value(("bank.csv", csv, "text/csv")).run()
    b.button(key="study_load_paste").click().run()
    assert not b.exception, b.exception
    assert "Loaded the study" in texts(b), texts(b)
    ds_b = b.session_state["dataset"]
    pd.testing.assert_frame_equal(ds_a.table, ds_b.table, check_exact=True)
    assert ds_b.schema == ds_a.schema and ds_b.shifts == ds_a.shifts and ds_b.notes == ds_a.notes
    assert b.session_state["policy"] == a.session_state["policy"]
    assert b.session_state["cc_eps"] == 2.5
    assert parse_config(_exported(b)) == study


def test_a_study_with_granular_mechanisms_loads_and_says_they_stay_with_prdp_run():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "examples" / "cbp_granular.yaml").read_text(encoding="utf-8")
    at = _load(open_page("study"), text)
    t = texts(at)
    assert "Loaded the study" in t
    assert "granular-DP mechanisms" in t and "State x sector (standard histogram)" in t and "prdp run" in t


def test_the_config_download_is_made_by_the_review_boundary_in_the_sessions_mode(monkeypatch):
    """The config the page shows and downloads is the registered output ``study config (YAML)``, made in the
    session's mode (a builder swapped for one that names its mode is what the page shows)."""
    from dataclasses import replace

    from prdp_core.review import review_boundary as B

    def build(study, teaching):
        return study.to_yaml() + f"# made in {'teaching' if teaching else 'review'} mode\n"

    monkeypatch.setitem(B.REGISTRY, "study config (YAML)", replace(B.REGISTRY["study config (YAML)"], build=build))
    at = _load(open_page("study"), BASE)
    assert _exported(at).rstrip().endswith("# made in teaching mode")
    at.radio(key="mode").set_value("review").run()
    text = _exported(at)
    assert text.rstrip().endswith("# made in review mode") and parse_config(text).mode == "review"
