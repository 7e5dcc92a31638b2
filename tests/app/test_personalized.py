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
    assert "Users (public universe U)" in [m.label for m in at.metric]
    assert "generated tiers" in t and "never over the users" in t
    assert len(at.get("plotly_chart")) >= 3  # spec histogram, delivered CDFs, π curve
    assert "substitution neighbours" in t and "add/remove neighbours" in t
    assert "Reproduce in Python" in [e.label for e in at.expander]


def test_value_column_change_resets_bounds(page):
    at = page
    hi_emp = at.number_input(key="pdp_hi").value
    at.selectbox(key="pdp_value").set_value("PAYANN").run()
    assert not at.exception
    assert at.number_input(key="pdp_hi").value > hi_emp
    at.selectbox(key="pdp_value").set_value("EMP").run()
    assert at.number_input(key="pdp_hi").value == hi_emp


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
    assert "Promise: min(Φ, t)" in t and "Seeded run" in t
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
    assert "E(r) = 1 * v_bud" in texts(at)
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
    at.switch_page("pages/personalized.py")
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


@pytest.mark.parametrize("source", ["tiers", "column", "labels"])
def test_reproduce_code_runs(source):
    from prdp_core.mechanisms import personalized as P
    from ui import personalized as upd

    params = dict(upd.SPEC_DEFAULTS, labels=(), seed=3)
    if source != "tiers":
        params.update(pdp_source="column", pdp_col="HT2" if source == "column" else "CatIX")
    if source == "labels":
        params["labels"] = (("1", 0.1), ("2", 0.5))
    code = upd.reproduce_code({"kind": "sample", "name": "sim_pareto", "n": 2000, "seed": 0}, params,
                              P.Query("count", "HT1", cutoff=2, hi=100), 3)
    exec(compile(code, "<reproduce>", "exec"), {})
