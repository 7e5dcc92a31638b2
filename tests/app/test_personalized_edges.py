"""Personalized DP page at edge values: liberal budgets, mode switches after a run."""

from __future__ import annotations

from .conftest import open_page, texts


def test_sample_release_with_a_liberal_tier_and_signed_bounds():
    at = open_page("personalized")
    at.number_input(key="pdp_el").set_value(100.0).run()
    at.radio(key="pdp_view").set_value("Run a release").run()
    at.number_input(key="pdp_lo").set_value(-5.0).run()
    at.number_input(key="pdp_hi").set_value(5.0).run()
    at.selectbox(key="pdp_rel_kind").set_value("sum").run()
    at.button(key="pdp_run").click().run()
    assert not at.exception, at.exception
    assert "every user within their request: **True**" in texts(at)


def test_review_mode_hides_true_values_of_runs_made_in_teaching_mode():
    at = open_page("personalized")
    at.radio(key="pdp_view").set_value("Run a release").run()
    at.button(key="pdp_run").click().run()
    assert "True answer" in texts(at)
    at.radio(key="pdp_view").set_value("PDP vs PrDP").run()
    at.button(key="pdp_prdp_go").click().run()
    assert "true" in at.dataframe[-1].value.columns
    at.radio(key="mode").set_value("review").run()
    assert not at.exception, at.exception
    assert all("true" not in df.value.columns for df in at.dataframe)
    assert "press the button to run it again" in texts(at)
    at.button(key="pdp_prdp_go").click().run()
    assert "true" not in at.dataframe[-1].value.columns and "error" not in at.dataframe[-1].value.columns
    at.radio(key="pdp_view").set_value("Run a release").run()
    assert "True answer" not in texts(at)


def test_comparison_table_of_another_dataset_is_not_shown():
    at = open_page("personalized")
    at.radio(key="pdp_view").set_value("PDP vs PrDP").run()
    at.button(key="pdp_prdp_go").click().run()
    n_before = len(at.dataframe)
    at.number_input(key="pdp_fc").set_value(0.2).run()  # another specification
    assert not at.exception, at.exception
    assert len(at.dataframe) == n_before - 1
    assert "press the button to run it again" in texts(at)


def test_data_derived_bound_stays_flagged_after_a_config_round_trip():
    at = open_page("personalized")
    at.radio(key="pdp_view").set_value("Run a release").run()
    at.selectbox(key="pdp_rel_kind").set_value("sum").run()  # hi is still the column's 99th percentile
    at.switch_page("app_pages/study.py")
    at.run()
    yaml_text = next(c.value for c in at.code if "version: 1" in c.value)
    assert "design_defaults" in yaml_text
    fresh = open_page("study")  # another session loads the config
    fresh.text_area(key="study_paste").set_value(yaml_text).run()
    fresh.button(key="study_load_paste").click().run()
    assert not fresh.exception, fresh.exception
    fresh.switch_page("app_pages/personalized.py")
    fresh.run()
    assert any("computed from the confidential data" in w.value for w in fresh.warning)
    fresh.radio(key="pdp_view").set_value("Run a release").run()
    fresh.button(key="pdp_run").click().run()
    assert "confidential data" in fresh.session_state["pdp_last_release"].params["hi_source"]


def test_threshold_explorer_with_huge_bounds_gives_a_message():
    at = open_page("personalized")
    at.number_input(key="pdp_lo").set_value(-1e300).run()
    at.number_input(key="pdp_hi").set_value(1e300).run()
    at.radio(key="pdp_view").set_value("Threshold explorer").run()
    at.selectbox(key="pdp_tq").set_value("sum").run()
    assert not at.exception, at.exception
    assert any("overflows" in e.value for e in at.error)


def test_threshold_slider_reaches_choices_below_one_hundredth():
    at = open_page("personalized")
    for key in ("pdp_ec", "pdp_em", "pdp_el"):
        at.number_input(key=key).set_value(0.005).run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    slider = at.slider(key="pdp_t")
    assert slider.min <= 0.005 and slider.value == 0.005
    assert "does not use the data of 0% of users" in texts(at)
