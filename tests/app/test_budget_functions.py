"""AppTest of the Budget functions page: editor, live validation, runs in teaching and review modes."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

import prdp_core

from .conftest import ROOT, texts

PAGE = "app_pages/budget_functions.py"


def _open(mode: str = "teaching") -> AppTest:
    """The page on a 20,000-account bank sample (the natural demo data of the paper)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["dataset"] = prdp_core.data.samples.load_dataset("bank_normal_50k", n=20_000, seed=1)
    at.session_state["dataset_source"] = {"kind": "sample", "name": "bank_normal_50k", "n": 20_000, "seed": 1}
    at.session_state["dataset_token"] = "bank20k"
    at.session_state["mode"] = mode
    at.run()
    at.switch_page(PAGE)
    at.run()
    assert not at.exception, at.exception
    return at


def _figures(at: AppTest) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def _trace_names(at: AppTest) -> list[str]:
    return [t.get("name", "") for fig in _figures(at) for t in fig.get("data", [])]


def test_default_preset_curve_and_domains():
    at = _open()
    t = texts(at)
    assert "E(r) = 10000 / BALANCE" in t and "L = 34" in t
    assert "records (sample)" in _trace_names(at)
    assert "Confidential" in t
    assert len(at.get("plotly_chart")) == 2  # the curve and the domains
    at.selectbox(key="bf_preset").set_value("log")
    at.run()
    assert at.session_state["bf_alpha"] == 500.0  # the paper's α for the log budget
    assert "500 / log(max(BALANCE, 1)) ** 4" in texts(at)
    at.selectbox(key="bf_preset").set_value("constant")
    at.run()
    assert "L = 1" in texts(at) and not at.exception


def test_invalid_expression_shows_a_message_and_keeps_the_last_valid_budget():
    at = _open()
    at.radio(key="bf_mode").set_value("expression")
    at.run()
    at.text_input(key="bf_expr").set_value("2e4 / max(BALANCE, 1)")
    at.run()
    assert not at.error and "2e4 / max(BALANCE, 1)" in texts(at)
    at.text_input(key="bf_expr").set_value("2e4 / max(BALANSE, 1)")
    at.run()
    assert not at.exception
    assert "Did you mean 'BALANCE'" in at.error[0].value
    assert "Keeping the last valid budget: E(r) = 2e4 / max(BALANCE, 1)" in texts(at)
    assert len(at.get("plotly_chart")) == 2  # the page goes on with the last valid budget
    at.text_input(key="bf_expr").set_value("2e4 / (BALANCE")
    at.run()
    assert "Syntax error" in at.error[0].value
    at.text_input(key="bf_expr").set_value("__import__('os').system('true')")
    at.run()
    assert "Only the functions" in at.error[0].value
    # running keeps working with the last valid budget
    at.button(key="bf_run").click()
    at.run()
    assert not at.exception and at.session_state["bf_result"] is not None


def test_run_in_teaching_mode_shows_truth_and_losses():
    at = _open()
    n0 = len(at.session_state["ledger"]) if "ledger" in at.session_state else 0
    at.button(key="bf_run").click()
    at.run()
    assert not at.exception and not at.error
    rows = at.session_state["bf_result"]["rows"]
    assert list(rows["mechanism"]) == ["PrDP framework (Alg. 2)", "PrDP extension (Sec. 5.2)", "naive ε̌"]
    assert {"true", "error", "records dropped"} <= set(rows.columns)
    assert rows["relative error"].iloc[0] < 0.05 and rows["relative error"].iloc[-1] > 0.5
    assert "at most its requirement E(r)" in texts(at)
    assert len(at.session_state["ledger"]) == n0 + 3
    assert "delivered = requested" in _trace_names(at)
    # a count: Algorithm 1 joins the comparison; a distinct count on the branches
    at.selectbox(key="bf_query").set_value("count")
    at.button(key="bf_run").click()
    at.run()
    assert at.session_state["bf_result"]["rows"]["mechanism"].iloc[0] == "PrDP count (Alg. 1)"
    at.selectbox(key="bf_query").set_value("distinct")
    at.run()
    at.button(key="bf_run").click()
    at.run()
    assert not at.exception and "distinct:BRANCH" in texts(at)


def test_review_mode_shows_no_true_values():
    at = _open("review")
    t = texts(at)
    assert "Confidential" not in t
    assert "records (sample)" not in _trace_names(at)
    assert "records in the domain (true)" not in _trace_names(at)
    at.selectbox(key="bf_query").set_value("max")
    at.button(key="bf_run").click()
    at.run()
    assert not at.exception
    shown = at.dataframe[-1].value
    assert set(shown.columns) <= {"mechanism", "estimate", "ε_τ (budget level settled on)", "ℓ (first domain answered)",
                                  "ε of M (= ε_τ/2)"}
    assert "Confidential" not in texts(at)
    assert "delivered = requested" not in _trace_names(at)
    assert "true answer" not in json.dumps(_figures(at))


def test_local_model_runs_counts_and_sums():
    at = _open()
    at.radio(key="bf_model").set_value("local")
    at.run()
    assert len(at.selectbox(key="bf_query").options) == 2  # count and sum only
    at.selectbox(key="bf_query").set_value("count")
    at.radio(key="bf_threshold").set_value("bernstein")
    at.button(key="bf_run").click()
    at.run()
    assert not at.exception and not at.error
    rows = at.session_state["bf_result"]["rows"]
    assert list(rows["mechanism"]) == ["PrLDP count (Alg. 3–4)", "PrLDP framework (Alg. 5)", "naive ε̌ (local)"]


def test_step_table_and_per_group_editors():
    at = _open()
    for mode, fragment in (("step", "where(BALANCE <= 1000, 1"), ("groups", "BRANCH ==")):
        at.radio(key="bf_mode").set_value(mode)
        at.run()
        assert not at.exception and not at.error, mode
        assert fragment in texts(at), mode


def test_scaling_view_simulates_on_demand():
    at = _open()
    assert len(at.get("plotly_chart")) == 2  # nothing simulated until asked
    at.radio(key="bf_scale_vary").set_value("sigma")
    at.number_input(key="bf_scale_trials").set_value(5)
    at.button(key="bf_scale_go").click()
    at.run()
    assert not at.exception
    names = _trace_names(at)
    assert any(n.startswith("PrDP framework (Alg. 2), log") for n in names)
    assert len(at.get("plotly_chart")) == 3


def test_reproduce_in_python_code_runs():
    at = _open()
    at.radio(key="bf_mode").set_value("expression")
    at.run()
    code = at.code[-1].value
    assert "prdp.framework(ds.table, E, 'sum:BALANCE'" in code and "1e4 / max(BALANCE, 1)" in code
    namespace: dict = {}
    exec(code.replace("study = prdp.scaling_study(", "study = (lambda *a, **k: None)("), namespace)  # noqa: S102
    assert namespace["rel"].check_delivered_within_requested()
    assert namespace["E"].eps_min == 1e-8 and namespace["E"].eps_max == 100.0
