"""AppTest of the Trade-offs page: sweep, splitting vs top-coding, fitness for use, solver, Fig. 1."""

from __future__ import annotations

import pytest

from .conftest import chart_traces, open_page, texts


@pytest.fixture(scope="module")
def page():
    return open_page("tradeoffs", timeout=300)


def test_all_tabs_render(page):
    at = page
    assert not at.exception
    t = texts(at)
    assert "best setting keeping at most 1% of records above the base loss" in t
    assert "best Δ" in t
    keys = [el.proto.id.split("-")[-1] for el in at.get("plotly_chart")]
    for k in ("tr_sweep_chart", "tr_sweep_cdf", "tr_fit_cdf", "tr_clip_chart"):
        assert any(x.endswith(k) for x in keys), k
    assert any("SUM(EMP)" in k for k in keys)  # a splitting-vs-top-coding box plot per family


def test_splitting_beats_topcoding_in_the_page_table(page):
    at = page
    med = [d.value for d in at.dataframe if "split: Conservative" in list(d.value.columns)][0]
    for fam in ("SUM(EMP)", "SUM(PAYANN)", "SUM(PAYQTR1)"):
        assert med.loc[fam, "split: Conservative"] < med.loc[fam, "top-code: Moderate"]


def test_sweep_reacts_to_inputs(page):
    at = page
    before = chart_traces(at, "tr_sweep_cdf")
    at.multiselect(key="tr_pcts").set_value([99.9])
    at.run()
    after = chart_traces(at, "tr_sweep_cdf")
    assert [t["name"] for t in after] == ["p99.9"] and len(before) == 4


def test_solver_adopts_budgets(page):
    at = page
    at.number_input(key="tr_solve_t").set_value(0.2)
    at.run()
    assert "relative error" in at.success[0].value
    at.button(key="tr_use_budgets").click()
    at.run()
    assert not at.exception
    sol_rho = at.session_state["policy"].workload.total_rho
    assert sol_rho > 0 and abs(sol_rho - 1.0) > 1e-6  # the active policy now has the solved budgets


def test_all_zero_measure_and_empty_choices_give_messages():
    """A measure whose true sums are all 0 has no relative error: the sweep says so instead of crashing;
    empty goal and α selections say what to choose."""
    at = open_page("data")
    rows = "".join(f"{i},{'ab'[i % 2]},0,{i}\n" for i in range(60))
    at.file_uploader(key="upload").set_value(("zero.csv", ("id,g,x,y\n" + rows).encode(), "text/csv"))
    at.run()
    rid = at.session_state["raw"]["id"]
    at.multiselect(key=f"map_measures_{rid}").set_value(["x"])
    at.multiselect(key=f"map_groups_{rid}").set_value(["g"])
    at.run()
    at.button(key=f"apply_{rid}").click()
    at.run()
    assert at.session_state["dataset"].name == "zero.csv"
    at.switch_page("app_pages/tradeoffs.py")
    at.run()
    assert not at.exception, at.exception
    assert "is undefined: every true answer it covers is 0" in texts(at)
    at.multiselect(key="tr_targets").set_value([])
    at.multiselect(key="tr_clip_a").set_value([])
    at.run()
    assert not at.exception
    info = [i.value for i in at.info]
    assert "Choose at least one relative-error goal." in info and "Choose at least one tail index α." in info
