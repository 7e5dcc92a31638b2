"""A dataset change updates everything set for the previous table at once: the active policy (sidebar
included, in the same rerun), the Personalized DP bounds and release, the Budget functions editor; defaults
that do not come from the new table's data are labelled as defaults."""

from __future__ import annotations

from .conftest import open_page, texts, upload

BIG = ("id,SALES\n" + "".join(f"a{i},{50_000 + 8 * i}\n" for i in range(100))).encode()  # p99 ≈ 50,784
SMALL = ("id,SALES\n" + "".join(f"b{i},{100 + 2 * i}\n" for i in range(100))).encode()  # p99 ≈ 296


def _sidebar_policy(at) -> str:
    return next(m.value for m in at.sidebar.markdown if "Unit splitting" in m.value or "none yet" in m.value)


def test_the_sidebar_shows_the_new_tables_policy_in_the_same_rerun():
    at = open_page("data")
    assert "none yet" in _sidebar_policy(at)
    upload(at, "big.csv", BIG)
    assert "T(SALES) = 51,000" in _sidebar_policy(at)  # made with the dataset, not when a page asks for it
    at.switch_page("app_pages/policy_designer.py").run()
    at.number_input(key="thr_SALES").set_value(60_000.0).run()
    assert "T(SALES) = 60,000" in _sidebar_policy(at)
    at.switch_page("app_pages/data.py").run()
    upload(at, "small.csv", SMALL, use=False)
    assert "T(SALES) = 60,000" in _sidebar_policy(at)  # not confirmed: the previous table and its policy stay
    at.button(key=f"apply_{at.session_state['raw']['id']}").click().run()
    shown = _sidebar_policy(at)
    assert "T(SALES) = 300" in shown and "60,000" not in shown and "51,000" not in shown
    assert at.session_state["policy"].thresholds.as_dict()["*"] == {"SALES": 300.0}
    at.switch_page("app_pages/policy_designer.py").run()
    assert at.number_input(key="thr_SALES").value == 300.0 and not at.exception


def test_personalized_bounds_and_release_follow_the_dataset():
    at = open_page("data")
    upload(at, "big.csv", BIG)
    at.switch_page("app_pages/personalized.py").run()
    at.selectbox(key="pdp_value").set_value("SALES").run()
    assert at.session_state["pdp_hi"] == 100_000.0  # the big table's p99, rounded up (flagged as such)
    at.radio(key="pdp_view").set_value("Run a release").run()
    at.button(key="pdp_run").click().run()
    assert at.session_state.get("pdp_last_release") is not None
    at.switch_page("app_pages/data.py").run()
    upload(at, "small.csv", SMALL)  # the same column name, other values
    at.switch_page("app_pages/personalized.py").run()
    assert not at.exception, at.exception
    assert at.session_state["pdp_hi"] == 500.0 and "upper bound hi = 500" in texts(at)
    assert at.session_state.get("pdp_last_release") is None  # the big table's release is not shown


def test_budget_bound_defaults_follow_the_data_source_and_are_labelled():
    at = open_page("budget_functions")  # the CBP-like sample
    assert at.number_input(key="bf_U").value == 1e6
    assert "U = 10⁶ is a round placeholder, not read from the data" in texts(at)
    at.number_input(key="bf_U").set_value(5e5).run()
    assert "round placeholder" not in texts(at)  # a typed bound is the designer's
    at.switch_page("app_pages/data.py").run()
    at.selectbox(key="sample_name").set_value("bank_normal_50k").run()
    at.button(key="load_sample").click().run()
    at.switch_page("app_pages/budget_functions.py").run()
    assert not at.exception, at.exception
    assert at.number_input(key="bf_U").value == 1e12 and at.session_state["bf_measure"] == "BALANCE"
    assert "U = 10¹² and the budget α = 10⁴ are those of the paper's bank experiments" in texts(at)
