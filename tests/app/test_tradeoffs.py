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
