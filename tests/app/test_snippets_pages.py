"""Every page's "Reproduce in Python" code, run beside the page: it rebuilds what the page shows and, with the
session's seed, computes the numbers the page released (prdp_core.study.snippets, through ui.reproduce)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.mechanisms.preview import preview_policy
from ui.common import md_escape
from ui.reproduce import INCOMPLETE

from .conftest import open_page


def _ok(at):
    at.run()
    assert not at.exception, at.exception
    return at


def _snippet(at) -> dict:
    """Run the page's snippet (the last Python code block) in this process; its globals."""
    code = [c.value for c in at.code if c.language == "python"][-1]
    assert code != INCOMPLETE
    ns: dict = {}
    exec(compile(code, "<snippet>", "exec"), ns)  # the page's code runs as shown
    return ns


def _released(page: str, button: str, *settings: tuple[str, str]):
    """Open ``page``, set its radio ``settings`` (key, value), press its release ``button``."""
    at = open_page(page)
    for key, value in settings:
        at.radio(key=key).set_value(value)
        _ok(at)
    at.button(key=button).click()
    return _ok(at)


def _estimates(rel) -> np.ndarray:
    return rel.answers["estimate"].to_numpy(dtype=float)


def test_data_page_snippet_rebuilds_the_active_dataset():
    at = open_page("data")
    ns = _snippet(at)
    pd.testing.assert_frame_equal(ns["ds"].table, at.session_state["dataset"].table)
    assert "profile" in ns


def test_policy_designer_snippet_rebuilds_the_policy_and_its_preview():
    at = open_page("policy_designer")
    ns = _snippet(at)
    pol = at.session_state["policy"]
    assert ns["policy"].describe() == pol.describe()
    assert ns["preview"].summary() == preview_policy(at.session_state["dataset"], pol, owner_method="lemma4").summary()


def test_run_snippet_gives_the_released_answers():
    at = _released("run", "run_go")
    rel = at.session_state["run_release"]
    ns = _snippet(at)
    np.testing.assert_array_equal(_estimates(ns["rel"]), _estimates(rel))
    assert ns["rel"].seed == rel.seed == at.session_state["seed"]


def test_tradeoffs_snippet_solves_the_same_budgets():
    at = open_page("tradeoffs")
    ns = _snippet(at)
    assert md_escape(ns["solution"].describe()) in [s.value for s in at.success]


@pytest.mark.parametrize("model", ["central", "local"])
def test_budget_functions_snippet_gives_every_released_answer(model):
    at = _released("budget_functions", "bf_run", ("bf_model", model))
    shown = at.session_state["bf_result"]["releases"]
    ns = _snippet(at)
    assert [label.split(": ")[-1] for label, _ in ns["releases"]] == [label for label, _ in shown]
    for (_, mine), (_, page) in zip(ns["releases"], shown):
        np.testing.assert_array_equal(_estimates(mine), _estimates(page))


@pytest.mark.parametrize("source", ["tiers", "column"])
def test_personalized_snippet_gives_the_released_answer(source):
    at = _released("personalized", "pdp_run", ("pdp_source", source), ("pdp_view", "Run a release"))
    rel = at.session_state["pdp_last_release"]
    ns = _snippet(at)
    np.testing.assert_array_equal(_estimates(ns["rel"]), _estimates(rel))
    np.testing.assert_array_equal(ns["rel"].loss, rel.loss)  # the delivered ε of every tuple


@pytest.mark.parametrize("model", ["central", "local"])
def test_analyst_tiers_snippet_gives_every_tiers_answer(model):
    at = _released("analyst_tiers", "mt_release_btn", ("mt_model", model))
    rel = at.session_state["mt_release"]["release"]
    ns = _snippet(at)
    assert list(ns["rel"].answers["tier"]) == list(rel.answers["tier"])
    np.testing.assert_array_equal(_estimates(ns["rel"]), _estimates(rel))


def test_concepts_snippet_gives_the_histogram_labs_cells():
    at = open_page("concepts")
    at.number_input(key="hl_n").set_value(2000)
    at.slider(key="hl_d").set_value(6)
    _ok(at)
    at.button(key="hl_run").click()
    _ok(at)
    ns = _snippet(at)
    shown = [d.value for d in at.dataframe if "estimate" in getattr(d.value, "columns", ())]
    assert len(shown) == 2, [list(d.value.columns) for d in at.dataframe]
    for mine, page in zip((ns["hh"], ns["std"]), shown):
        np.testing.assert_allclose(_estimates(mine)[:len(page)], page["estimate"].to_numpy(dtype=float))
