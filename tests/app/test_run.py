"""AppTest of the Run page: a seeded release, errors in teaching mode, nothing true in review mode."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from .conftest import chart_traces, open_page, texts


@pytest.fixture
def page():
    return open_page("run")


def _run(at):
    at.button(key="run_go").click()
    at.run()
    assert not at.exception, at.exception
    return at


def test_release_in_teaching_mode(page):
    at = _run(page)
    rel = at.session_state["run_release"]
    assert rel.truth_included and len(rel.answers) > 100
    t = texts(at)
    assert "Seeded run (seed 0)" in t and "Confidential" in t
    shown_cols = set(at.dataframe[2].value.columns)
    assert {"true", "error", "rel_error"} <= shown_cols
    names = [tr["name"] for tr in chart_traces(at, "run_cdf_records")]
    assert names == ["policy loss", "realized loss"]
    led = at.session_state["ledger"]
    assert len(led) == 1 and led.entries[0].mechanism == "unit_splitting.gaussian"
    # same seed, same answers
    first = rel.answers["estimate"].to_numpy().copy()
    at = _run(at)
    assert (at.session_state["run_release"].answers["estimate"].to_numpy() == first).all()
    assert len(at.session_state["ledger"]) == 2


def test_review_mode_shows_no_true_values(page):
    at = page
    at.sidebar.radio(key="mode").set_value("review")
    at.run()
    at = _run(at)
    for df in at.dataframe:
        assert not {"true", "error", "rel_error", "n_records"} & set(df.value.columns)
    assert "Hidden in review mode:** true answers, errors and record counts" in texts(at)
    assert "Hidden in review mode:** the policy and realized losses of the records" in texts(at)
    assert not any(el.proto.id.endswith("run_cdf_records") for el in at.get("plotly_chart"))
    data = at.get("download_button")[0]
    assert data.proto.label == "Download answers (CSV)"


def test_download_is_the_review_table_in_review_mode(page):
    from ui.run import answers_for_display

    at = _run(page)
    rel = at.session_state["run_release"]
    review = answers_for_display(rel, teaching=False)
    assert not {"true", "error"} & set(review.columns)
    teach = answers_for_display(rel, teaching=True)
    assert {"true", "error"} <= set(teach.columns) and "label" in teach.columns
    from prdp_core.io.export import to_csv_bytes
    back = pd.read_csv(io.BytesIO(to_csv_bytes(review)))
    assert len(back) == len(review)


def test_partition_selection_run(page):
    at = page
    at.switch_page("app_pages/policy_designer.py")
    at.run()
    at.number_input(key="policy_partition_rho").set_value(0.1)
    at.run()
    at.switch_page("app_pages/run.py")
    at.run()
    at = _run(at)
    assert "Partition selection kept" in texts(at)
    ps = at.session_state["run_release"].extras["partition_selection"]
    assert ps["kept"]["COUNTY"] < ps["candidates"]["COUNTY"]


def test_releasing_chosen_queries_only(page):
    at = page
    pol = at.session_state["policy"]
    assert at.multiselect(key="run_queries").value == list(range(len(pol.workload.queries)))
    at.multiselect(key="run_queries").set_value([0])
    at.run()
    at = _run(at)
    rel = at.session_state["run_release"]
    assert list(rel.answers["query"].unique()) == ["1. " + pol.workload.queries[0].name()]
    entry = at.session_state["ledger"].entries[0]
    assert len(entry.loss.workload.queries) == 1
    # the count alone costs every record its flat ρ, less than the whole workload's base loss
    assert entry.loss.workload.total_rho == pytest.approx(pol.workload.queries[0].rho)
    ns: dict = {}  # the Reproduce-in-Python code releases the chosen query alone, with the same numbers
    exec(compile([c.value for c in at.code if c.language == "python"][-1], "<snippet>", "exec"), ns)
    assert list(ns["rel"].answers["query"]) == list(rel.answers["query"])
    assert list(ns["rel"].answers["estimate"]) == list(rel.answers["estimate"])
    # no query chosen: a clear error, no release added
    at.multiselect(key="run_queries").set_value([])
    at.run()
    at.button(key="run_go").click()
    at.run()
    assert "Choose at least one query" in at.error[0].value
    assert len(at.session_state["ledger"]) == 1



def test_a_release_of_some_queries_is_charged_but_not_the_studys_release(page):
    """The Study report renders the study's releases: a Run-page release of one query of the workload is charged
    to the ledger but is not kept as the study's unit-splitting release (its YAML lists every query)."""
    at = page
    at.multiselect(key="run_queries").set_value([0])
    at.run()
    at = _run(at)
    assert len(at.session_state["ledger"]) == 1
    assert "run" not in (at.session_state.get("recorded_releases") or {})
    at.multiselect(key="run_queries").set_value(list(range(len(at.session_state["policy"].workload.queries))))
    at.run()
    at = _run(at)
    assert len(at.session_state["ledger"]) == 2 and "run" in at.session_state["recorded_releases"]


def test_release_of_an_edited_policy_is_flagged_and_charted_at_its_own_base():
    """After the policy is edited, the last release is labelled as made with the earlier policy, and its
    loss chart keeps the base loss of the policy actually released (not the edited one)."""
    at = open_page("run")
    at.button(key="run_go").click()
    at.run()
    assert not at.warning or "earlier version" not in at.warning[0].value
    at.switch_page("app_pages/policy_designer.py")
    at.run()
    at.session_state["wl_table"] = {"edited_rows": {"0": {"rho": 5.0}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert at.session_state["policy"].workload.total_rho == pytest.approx(5.75)
    at.switch_page("app_pages/run.py")
    at.run()
    assert not at.exception
    assert any("earlier version of the policy" in w.value for w in at.warning)
    import json

    spec = [json.loads(el.proto.spec) for el in at.get("plotly_chart") if el.proto.id.endswith("run_cdf_records")][0]
    notes = [a["text"] for a in spec["layout"].get("annotations", []) if "base loss" in a.get("text", "")]
    assert notes == ["base loss 1ρ"], notes
    at.button(key="run_go").click()
    at.run()
    assert not any("earlier version of the policy" in w.value for w in at.warning)
