"""AppTest of the Analyst tiers page: tiers, central and local models, coalitions, releases, review mode."""

from __future__ import annotations

import pandas as pd
import pytest

from .conftest import open_page, texts


@pytest.fixture(scope="module")
def page():
    return open_page("analyst_tiers")


def _ok(at):
    at.run()
    assert not at.exception, at.exception
    return at


def test_default_tiers_central_count(page):
    at = page
    t = texts(at)
    assert "Analyst tiers" in t
    assert "**agency** ε = 8 · **researchers** ε = 2 · **public** ε = 0.5" in t
    assert "exactly as good as a release made for this tier alone" in t
    # total loss: multi-tier 8 against 10.5 for independent releases, computed from the exact joint pmf
    assert "learn **ε = 8**" in t and "ε = 10.5" in t
    assert "exact joint pmf" in t
    # residual checks and the Table 1 counterexamples
    assert "Eq. (1)" in t
    assert "-0.1886953" in t and "-0.43887" in t
    assert len(at.get("plotly_chart")) >= 3
    assert any("mt.plan_central" in c.value for c in at.code)


def test_preset_and_coalition_choice():
    at = open_page("analyst_tiers")
    at.selectbox(key="mt_preset").set_value(list(__import__("ui.analyst_tiers", fromlist=["PRESETS"]).PRESETS)[1])
    _ok(at)
    at.button(key="mt_preset_apply").click()
    _ok(at)
    t = texts(at)
    assert "**tier 10** ε = 4" in t and "**tier 1** ε = 0.4" in t
    at.multiselect(key="mt_coalition").set_value(["tier 3", "tier 7"])
    _ok(at)
    t = texts(at)
    assert "**tier 7 + tier 3** learn **ε = 2.8**" in t  # the top member's budget, not 2.8 + 1.2


def test_sum_with_laplace_gaussian_and_filter():
    at = open_page("analyst_tiers")
    at.radio(key="mt_query").set_value("sum")
    _ok(at)
    at.selectbox(key="mt_family").set_value("laplace")
    _ok(at)
    assert "sum of" in texts(at)
    clip_help = at.number_input(key="mt_clip").help
    assert "not read from the data" in clip_help and "percentile" not in clip_help  # the default is a placeholder
    at.selectbox(key="mt_family").set_value("gaussian")
    _ok(at)
    t = texts(at)
    assert "ρ = " in t and "(ε, δ" in t
    # a filter on a group column
    groups = [o for o in at.selectbox(key="mt_filter_col").options if o != "(no filter)"]
    at.selectbox(key="mt_filter_col").set_value(groups[0])
    _ok(at)
    assert " where " in texts(at)


def test_local_model_template_plan_and_release():
    at = open_page("analyst_tiers")
    at.radio(key="mt_model").set_value("local")
    _ok(at)
    at.number_input(key="mt_d").set_value(8)
    _ok(at)
    t = texts(at)
    assert "served by a template" in t and "Unused budget" in t
    assert "exact joint distribution" in t  # d ≤ 8: coalitions by exact enumeration
    at.button(key="mt_release_btn").click()
    _ok(at)
    t = texts(at)
    assert "Seeded run" in t and "Squared error of each tier" in t
    assert any("Confidential" in c.value for c in at.caption)
    ledger = at.session_state["ledger"]
    assert len(ledger) == 1 and ledger.entries[0].loss.value <= 8.0


def test_release_central_and_review_mode():
    at = open_page("analyst_tiers")
    at.button(key="mt_release_btn").click()
    _ok(at)
    t = texts(at)
    assert "Added to the session ledger" in t and "8ε for every record" in t
    rel = at.session_state["mt_release"]["release"]
    assert list(rel.answers["tier"]) == ["agency", "researchers", "public"]
    at.session_state["mode"] = "review"  # the sidebar radio's key
    _ok(at)
    t = texts(at)
    assert "Review mode: the release shows the noisy answers only" in t
    assert "matching records" not in t  # the count's true answer is not shown in review mode
    shown = [df.value for df in at.dataframe]
    assert shown and not any({"true", "error", "abs_error"} & set(getattr(v, "columns", [])) for v in shown)
    at.toggle(key="mt_secure").set_value(True)
    at.button(key="mt_release_btn").click()
    _ok(at)
    rel = at.session_state["mt_release"]["release"]
    assert rel.secure and rel.seed is None and "true" not in rel.answers.columns  # nothing true was computed
    assert "secure" in texts(at).lower()
    assert at.session_state["ledger"].entries[-1].secure
    at.radio(key="mt_model").set_value("local")
    _ok(at)
    t = texts(at)
    assert "Errors are per user" in t and "records (users)" not in t


def test_bad_tiers_show_an_error_and_keep_the_session():
    at = open_page("analyst_tiers")
    at.session_state["mt_tiers_base"] = pd.DataFrame({"name": ["a", "a"], "eps": [1.0, 2.0]})
    at.session_state["mt_editor_version"] = 7
    _ok(at)
    assert any("unique" in e.value for e in at.error)
    at.session_state["mt_tiers_base"] = pd.DataFrame({"name": ["a"], "eps": [-1.0]})
    at.session_state["mt_editor_version"] = 8
    _ok(at)
    assert any("positive budget" in e.value for e in at.error)
    assert at.session_state["dataset"].name == "cbp_like"


def test_local_model_with_a_filter_keeps_every_user_and_public_edges():
    """Local model: category edges come from d, the bins and the public top U; a filter adds the public
    category "not matching" instead of dropping users, so n is the roster size."""
    from prdp_core.mechanisms import multitier as mt

    at = open_page("analyst_tiers")
    assert at.session_state["mt_clip"] == 100.0  # a round public default, not a percentile of the data
    at.radio(key="mt_model").set_value("local")
    _ok(at)
    at.number_input(key="mt_d").set_value(6)
    at.selectbox(key="mt_filter_col").set_value("STATE")
    _ok(at)
    assert at.selectbox(key="mt_filter_val").value == "AL"  # the sample's documented categories
    at.selectbox(key="mt_filter_val").set_value("CA")
    _ok(at)
    t = texts(at)
    assert "d = 7 categories: 6 public bins" in t and "never by the data" in t
    at.button(key="mt_release_btn").click()
    _ok(at)
    rel = at.session_state["mt_release"]["release"]
    n = at.session_state["dataset"].n
    assert rel.params["n"] == n and rel.params["d"] == 7
    assert list(rel.answers["category"].iloc[:7]) == mt.bin_labels(mt.bin_edges(6)) + [mt.NOT_MATCHING]
    assert abs(rel.answers.groupby("tier")["estimate"].sum() - n).max() < 1e-6
    code = at.code[-1].value
    assert "mt.local_categories(" in code and "filter=mt.RecordFilter('STATE', '==', 'CA')" in code
    ns: dict = {}
    exec(compile(code, "<reproduce>", "exec"), ns)
    assert ns["rel"].params["n"] == n and ns["labels"][-1] == mt.NOT_MATCHING


def test_filter_value_of_an_undocumented_column_is_typed_not_listed():
    at = open_page("analyst_tiers")
    at.selectbox(key="mt_filter_col").set_value("COUNTY")
    _ok(at)
    assert not [s for s in at.selectbox if s.key == "mt_filter_val"]  # no list of the data's values
    at.text_input(key="mt_filter_val").input("06037")
    _ok(at)
    assert "where COUNTY equals 06037" in texts(at)


def test_a_private_clipping_bound_of_a_sum_is_drawn_and_charged():
    at = open_page("analyst_tiers")
    at.radio(key="mt_query").set_value("sum")
    _ok(at)
    assert at.session_state["mt_clip"] == 100.0  # the round public placeholder
    col = at.session_state["mt_measure"]
    before = len(at.session_state["ledger"])
    at.number_input(key=f"mt_psugg_hi_{col}").set_value(1e7)
    at.button(key="mt_psugg_apply").click()
    _ok(at)
    led = at.session_state["ledger"]
    assert len(led) == before + 1 and led.entries[-1].mechanism == "dp_quantile"
    assert f"upper bound of {col}" in led.entries[-1].label
    clip = at.session_state["mt_clip"]
    assert clip != 100.0 and 1.0 <= clip <= 1e7
    assert "Adopted a private upper bound" in texts(at)
