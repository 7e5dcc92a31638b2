"""AppTest of the Budget functions page's forecast before the run: a warning with the remedies when the
framework is likely to fail at the assumed data's n, none when it is not, in both modes."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from .conftest import texts
from .test_budget_functions import _open  # the page on a 20,000-account bank sample


def _warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.warning]


def test_forecast_warns_before_the_run_and_lists_remedies():
    at = _open()
    assert at.session_state["bf_fc_n"] == 20_000  # teaching mode starts from the dataset's count
    at.selectbox(key="bf_preset").set_value("sqrt")
    at.number_input(key="bf_fc_n").set_value(10_000)
    at.run()
    assert not at.exception
    w = " ".join(_warnings(at))
    assert "likely to fail at n = 10,000" in w and "Recommended" in w and "extension" in w
    table = at.dataframe[-1].value
    assert table["option"].iloc[0].startswith("as designed") and len(table) >= 5
    assert "Forecast before the run" in " ".join(e.label for e in at.expander)
    # more records of the assumed data: no warning, a one-line forecast
    at.number_input(key="bf_fc_n").set_value(1_000_000)
    at.run()
    assert not any("likely to fail" in x for x in _warnings(at))
    assert "Forecast for n = 1,000,000 records of the assumed data" in texts(at)
    # the run itself is unchanged
    at.button(key="bf_run").click()
    at.run()
    assert not at.exception and at.session_state["bf_result"] is not None


def test_forecast_inputs_and_queries_without_a_forecast():
    at = _open("review")
    assert at.session_state["bf_fc_n"] == 10_000 and "20,000" not in texts(at)  # no record count in review mode
    at.number_input(key="bf_fc_n").set_value(2_000)
    at.run()
    assert any("likely to fail at n = 2,000" in x for x in _warnings(at))  # the forecast uses no record
    at.selectbox(key="bf_fc_kind").set_value("lognormal")
    at.number_input(key="bf_fc_a").set_value(0.0)  # a median of 0 is refused with a message, not a crash
    at.run()
    assert not at.exception and "No forecast: The assumed median" in texts(at)
    at.selectbox(key="bf_query").set_value("max")
    at.run()
    assert not at.exception and "No forecast for this query" in texts(at)
    assert at.session_state["bf_fc_kind"] == "lognormal"  # the inputs stay (and keep their values)
    at.selectbox(key="bf_fc_kind").set_value("normal")
    at.radio(key="bf_model").set_value("local")
    at.run()
    at.selectbox(key="bf_query").set_value("count")
    at.run()
    assert not at.exception and any("PrLDP framework (Alg. 5) is likely to fail" in x for x in _warnings(at))
    assert at.session_state["bf_fc_n"] == 2_000  # the typed n is kept


def test_review_mode_drops_the_count_taken_in_teaching_mode():
    at = _open()
    assert at.session_state["bf_fc_n"] == 20_000
    at.session_state["mode"] = "review"
    at.run()
    assert not at.exception and at.session_state["bf_fc_n"] == 10_000
