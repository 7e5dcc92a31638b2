"""AppTest of the Personalized DP page: specification, views, release, review mode, bad input."""

from __future__ import annotations

import pytest

from .conftest import open_page, texts


@pytest.fixture(scope="module")
def page():
    return open_page("personalized")


def _view(at, name):
    at.radio(key="pdp_view").set_value(name).run()
    assert not at.exception, at.exception
    return at


def test_default_page_generated_tiers(page):
    at = page
    t = texts(at)
    assert "Personalized DP" in [e.value for e in at.title]
    assert "Users (roster U)" in [m.label for m in at.metric]
    assert "generated tiers" in t and "never over the users" in t
    assert len(at.get("plotly_chart")) >= 3  # spec histogram, delivered CDFs, π curve
    # the generated tiers are drawn for the table's rows: the roster comes from the table, so the page states
    # substitution neighbours (and says why add/remove is not claimed)
    assert "substitution neighbours" in t and "roster U comes from the table" in t and "add/remove" in t
    assert set(at.dataframe[-1].value["neighbours"]) == {"substitution"}
    assert "Reproduce in Python" in [e.label for e in at.expander]
    # the default upper bound is labelled as computed from the confidential data
    assert any("computed from the confidential data" in w.value for w in at.warning)


def test_value_column_change_resets_bounds(page):
    at = page
    hi_emp = at.number_input(key="pdp_hi").value
    at.selectbox(key="pdp_value").set_value("PAYANN").run()
    assert not at.exception
    assert at.number_input(key="pdp_hi").value > hi_emp
    at.selectbox(key="pdp_value").set_value("EMP").run()
    assert at.number_input(key="pdp_hi").value == hi_emp


def test_data_derived_bounds_are_flagged_in_the_release_and_ledger():
    at = open_page("personalized")
    at.radio(key="pdp_view").set_value("Run a release").run()
    at.selectbox(key="pdp_rel_kind").set_value("sum").run()
    at.button(key="pdp_run").click().run()
    assert not at.exception, at.exception
    rel = at.session_state["pdp_last_release"]
    assert "confidential data" in rel.params["hi_source"]
    assert "confidential data" in at.session_state["ledger"].entries[-1].params["hi_source"]
    assert rel.params["neighbours"] == rel.entries[0].neighbours.name == "substitution"
    assert "design default" in texts(at)
    # bounds and cut-off set by the designer are not flagged, and the warning goes away
    at.number_input(key="pdp_hi").set_value(12345.0).run()
    assert not any("hi = " in w.value for w in at.warning)
    at.number_input(key="pdp_cutoff").set_value(3.0).run()
    assert not any("upper bound hi" in w.value for w in at.warning)  # the count cut-off may still be flagged
    at.button(key="pdp_run").click().run()
    assert "hi_source" not in at.session_state["pdp_last_release"].params


def test_declared_integer_values_give_integer_medians():
    at = open_page("personalized")
    at.radio(key="pdp_view").set_value("Run a release").run()
    at.selectbox(key="pdp_rel_kind").set_value("median").run()
    at.number_input(key="pdp_hi").set_value(5000.0).run()
    for declared in (True, False):
        at.checkbox(key="pdp_integer").set_value(declared).run()
        at.button(key="pdp_run").click().run()
        assert not at.exception, at.exception
        rel = at.session_state["pdp_last_release"]
        est = float(rel.answers["estimate"].iloc[0])
        assert rel.params["integer"] is declared and (est == round(est)) is declared


def test_threshold_explorer_proxy_then_oracle_warning(page):
    at = _view(page, "Threshold explorer")
    assert "costs no privacy" in texts(at)
    at.radio(key="pdp_mode_count").set_value("oracle").run()
    assert not at.exception
    warn = " ".join(w.value for w in at.warning)
    assert "uses the private data" in warn and "leaks" in warn
    assert "Lowest RMSE on this grid" in texts(at)
    at.selectbox(key="pdp_tq").set_value("sum").run()
    assert not at.exception and "Lowest RMSE" in texts(at)


def test_compare_mechanisms(page):
    at = _view(page, "Compare mechanisms")
    at.number_input(key="pdp_cmp_runs").set_value(20).run()
    at.button(key="pdp_cmp_go").click().run()
    assert not at.exception, at.exception
    t = texts(at)
    assert t.count("lowest RMSE") == 3
    assert "Confidential" in t


def test_run_release_adds_to_ledger(page):
    at = _view(page, "Run a release")
    at.selectbox(key="pdp_rel_kind").set_value("median").run()
    at.button(key="pdp_run").click().run()
    assert not at.exception, at.exception
    t = texts(at)
    # the default roster comes from the table: the rank-score median is recalibrated for substitution
    assert "Promise: at most min(Φ, t)" in t and "calibrated at ε/2" in t and "Seeded run" in t
    rel = at.session_state["pdp_last_release"]
    assert rel.check_delivered_within_requested() and "every user within their request: **True**" in t
    assert len(at.session_state["ledger"]) >= 1
    # a query PE does not answer gives a message, not a traceback
    at.selectbox(key="pdp_rel_mech").set_value("PE (personalized exponential)").run()
    at.selectbox(key="pdp_rel_kind").set_value("sum").run()
    at.button(key="pdp_run").click().run()
    assert not at.exception
    assert any("does not answer a sum" in e.value for e in at.error)


def test_pe_scores_and_paper_experiments(page):
    at = _view(page, "PE scores")
    assert len(at.get("plotly_chart")) >= 2
    at.radio(key="pdp_pe_src").set_value("active data").run()
    assert not at.exception
    at = _view(at, "Paper experiments")
    at.number_input(key="pdp_exp_runs").set_value(20).run()
    at.button(key="pdp_exp_go").click().run()
    assert not at.exception, at.exception
    assert "S-avg < S < PE ≈ T ≪ M" in texts(at)


def test_pdp_vs_prdp(page):
    at = _view(page, "PDP vs PrDP")
    t = texts(at)
    # ε̌, ε̂ from the public tier menu (ε_C = 0.01, ε_L = 1), not from the table's smallest and largest Φ
    assert "E(r) = 1 * v_bud" in t and "ε̌ = 0.01, ε̂ = 1" in t and "public range of choices" in t
    at.button(key="pdp_prdp_go").click().run()
    assert not at.exception, at.exception
    assert len(at.dataframe) >= 1


def test_spec_from_a_column_and_bad_tiers(page):
    at = _view(page, "Delivered ε")
    at.number_input(key="pdp_fc").set_value(0.9).run()
    at.number_input(key="pdp_fm").set_value(0.5).run()
    assert not at.exception
    assert any("add up to" in e.value for e in at.error)
    at.number_input(key="pdp_fm").set_value(0.05).run()
    assert not at.error
    at.radio(key="pdp_source").set_value("column").run()
    assert not at.exception, at.exception
    assert any("public" in w.value for w in at.warning)
    assert "column 'EMP'" in texts(at) or "column '" in texts(at)
    at.radio(key="pdp_source").set_value("tiers").run()
    assert not at.exception


def test_review_mode_hides_true_values():
    at = open_page("personalized")
    # review mode is set through the sidebar radio's key, for the run that follows
    at.session_state["mode"] = "review"
    at.radio(key="pdp_view").set_value("Compare mechanisms")
    at.run()
    assert not at.exception, at.exception
    assert any("Review mode hides" in i.value for i in at.info)
    at.session_state["mode"] = "review"
    at.radio(key="pdp_view").set_value("Threshold explorer")
    at.run()
    assert not at.exception, at.exception
    assert list(at.radio(key="pdp_mode_count").options) == ["assumed data (safe to tune on)"]
    at.session_state["mode"] = "review"
    at.radio(key="pdp_view").set_value("Run a release")
    at.run()
    at.session_state["mode"] = "review"
    at.button(key="pdp_run").click()
    at.run()
    assert not at.exception, at.exception
    rel = at.session_state["pdp_last_release"]
    assert not rel.truth_included and "True answer" not in texts(at)


def test_small_sample_with_label_column():
    at = open_page("data")
    at.selectbox(key="sample_name").set_value("table2_example").run()
    at.button(key="load_sample").click().run()
    assert at.session_state["dataset"].name == "table2_example"
    at.switch_page("app_pages/personalized.py")
    at.run()
    assert not at.exception, at.exception
    at.radio(key="pdp_source").set_value("column").run()
    at.selectbox(key="pdp_col").set_value("Industry").run()
    assert not at.exception, at.exception
    assert "map each label to an ε" in texts(at)
    for view in ("Delivered ε", "PE scores", "Threshold explorer", "Compare mechanisms"):
        at = _view(at, view)
    at.button(key="pdp_cmp_go").click().run()
    assert not at.exception, at.exception


def test_a_private_upper_bound_is_drawn_charged_and_no_longer_a_data_default():
    at = open_page("personalized")
    assert "hi" in at.session_state["pdp_data_defaults"] and at.session_state["pdp_hi"] == \
        at.session_state["pdp_data_defaults"]["hi"]
    before = len(at.session_state["ledger"])
    col = at.session_state["pdp_value"]
    at.number_input(key=f"pdp_psugg_hi_{col}").set_value(1e7)
    at.button(key="pdp_psugg_apply").click().run()
    assert not at.exception, at.exception
    led = at.session_state["ledger"]
    assert len(led) == before + 1 and led.entries[-1].mechanism == "dp_quantile"
    assert f"upper bound of {col}" in led.entries[-1].label
    assert at.session_state["pdp_hi"] != at.session_state["pdp_data_defaults"]["hi"]
    assert not any("upper bound hi" in w.value for w in at.warning)  # the count cut-off may still be flagged
