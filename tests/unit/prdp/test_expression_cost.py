"""Budget expressions under hostile input: the cost model, chunked evaluation, text comparisons.

Issue 15: a 1,996-character chain of text comparisons (``BAL!=''!=BAL…``) ran for over a minute at
8.7 GB on 10⁶ records, and a negation chain ``-a<-a<…`` took 1.2 GB. Each is now refused before
evaluation or evaluated chunk by chunk; the memory assertions below use tracemalloc, the time
figures live in benchmarks/README.md ("Hostile inputs").
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pandas as pd
import pytest

from prdp_core.core import limits
from prdp_core.core.errors import ExpressionError, ResourceLimitError
from prdp_core.core.expressions import COST_TEXT_COMPARISON, compile_expression
from prdp_core.core.shapes import Expression
from prdp_core.mechanisms.prdp.budget import BudgetFunction, parse_budget

N = 1_000_000


@pytest.fixture(scope="module")
def big() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"BAL": rng.pareto(1.0, N) * 1000 + 1, "a": rng.random(N) + 1,
                         "BRANCH": pd.Series(rng.choice(["A", "B", "C"], N), dtype="str")})


def _peak_mb(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        out = fn()
        return tracemalloc.get_traced_memory()[1] / 2**20, out
    finally:
        tracemalloc.stop()


# ---------------------------------------------------------------------------
# The hostile expressions of the issue
# ---------------------------------------------------------------------------


def test_a_chain_of_text_comparisons_is_refused_at_parse_time():
    text = "BAL" + "!=''!=BAL" * 221  # 1,992 characters, valid before
    with pytest.raises(ExpressionError, match="one column at a time"):
        compile_expression(text)
    for chain in ("BRANCH == 'A' == BRANCH", "'A' == BRANCH != 'B'", "BRANCH != '' != BAL"):
        with pytest.raises(ExpressionError, match="one column at a time"):
            parse_budget(chain, eps_min=0.1)


def test_text_is_compared_with_a_column_or_text_only():
    for text in ("(BAL + 1) == 'x'", "1 == 'x'", "max(BAL, 1) != 'x'"):
        with pytest.raises(ExpressionError, match="may only be compared with a column"):
            compile_expression(text)
    with pytest.raises(ExpressionError, match="== or !="):
        compile_expression("BRANCH < 'A'")


def test_a_negation_chain_on_a_million_records_runs_in_bounded_memory(big):
    text = "-a<" * 133 + "-a"  # 133 comparisons: each operand used to stay in memory (1.2 GB)
    b = parse_budget(text, eps_min=1e-3, eps_max=10)
    peak, out = _peak_mb(lambda: b.raw(big))
    assert np.array_equal(out, np.zeros(N))
    assert peak < 40, f"{peak:.0f} MB"  # the 8 MB output plus a few 512 KB chunks


def test_many_text_comparisons_on_a_million_records_are_refused_before_evaluation(big):
    term = "(BRANCH=='A')"
    text = "1+" + "+".join("max(" + ",".join([term] * 8) + ")" for _ in range(16))  # 128 text comparisons
    b = parse_budget(text, eps_min=1e-3, eps_max=1e3)
    calls = []
    original = b.shape.compiled.evaluate
    object.__setattr__(b.shape.compiled, "evaluate", lambda cols, n: calls.append(n) or original(cols, n))
    with pytest.raises(ResourceLimitError) as info:
        b.raw(big)
    msg = str(info.value)
    assert f"{limits.MAX_EXPRESSION_COST:,}" in msg and "1,000,000 records" in msg and "per record" in msg
    assert calls == []  # refused from the cost alone: nothing was evaluated
    assert b.raw(big.head(1000)).shape == (1000,)  # the same expression on fewer records runs


def test_a_text_comparison_never_turns_numbers_into_python_objects(big):
    b = parse_budget("where(BAL != '', 2, 1)", eps_min=0.5, eps_max=5)
    peak, out = _peak_mb(lambda: b.raw(big))
    assert np.all(out == 2.0)
    assert peak < 16, f"{peak:.0f} MB"  # one object per record would be 32 MB
    b = parse_budget("where(BRANCH == 'A', 2, 1)", eps_min=0.5, eps_max=5)
    peak, out = _peak_mb(lambda: b.raw(big))
    np.testing.assert_array_equal(out, np.where(big["BRANCH"].to_numpy() == "A", 2.0, 1.0))
    assert peak < 24, f"{peak:.0f} MB"  # Arrow compares the text: no Python string per record


# ---------------------------------------------------------------------------
# The cost model
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, cost", [
    ("1", 1), ("BAL", 1), ("-BAL", 2), ("BAL + 1", 3), ("BAL ** 2", 6), ("1e4 / max(BAL, 1)", 6),
    ("sqrt(BAL)", 3), ("log(BAL, 10)", 4), ("where(BAL > 1, 1, 2)", 7), ("abs(BAL)", 2),
    ("1 < BAL <= 100", 5), ("BRANCH == 'A'", 1 + COST_TEXT_COMPARISON), ("'A' != 'B'", 1 + COST_TEXT_COMPARISON),
    ("max(BAL, 1, 2, 3)", 8),
])
def test_cost_per_record(text, cost):
    assert compile_expression(text).cost == cost


def test_the_cost_limit_is_cost_times_records(monkeypatch):
    c = compile_expression("1e4 / max(BAL, 1)")
    assert c.cost == 6
    cols = {"BAL": np.arange(1.0, 11.0)}
    monkeypatch.setattr(limits, "MAX_EXPRESSION_COST", 60)
    np.testing.assert_allclose(c(cols, 10), 1e4 / np.arange(1.0, 11.0))  # 6 × 10 = 60: at the limit
    monkeypatch.setattr(limits, "MAX_EXPRESSION_COST", 59)
    with pytest.raises(ResourceLimitError, match="over the limit of 59 operations"):
        c(cols, 10)


# ---------------------------------------------------------------------------
# Chunked evaluation gives the results of one pass, bit for bit
# ---------------------------------------------------------------------------

EXPRESSIONS = [
    "1e4 / max(BAL, 1)", "where(BRANCH == 'A', 1e4 / max(BAL, 1), min(0.5, sqrt(4) / 4))", "log(BAL - 10)",
    "where(1 < BAL <= 100, 2, 1)", "-BAL < -a < 0", "where(LABEL != 'x', a, 3)", "where('x' == CAT, 1, 2) + a ** 2",
    "exp(-a) * (a > 1.5) + abs(-a)", "where(NUM == 'x', 1, 2)", "not BAL", "where(OBJ == 'q', 5, 0.1)",
    "max(a, BAL, 3) / min(a, 2)", "log2(BAL) + log10(a) + log(BAL, 3)",
]


def _table(n: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    bal = rng.pareto(1.0, n) * 100
    bal[rng.random(n) < 0.05] = np.nan
    label = pd.Series(rng.choice(["x", "y", "zz"], n), dtype="str")
    label[rng.random(n) < 0.05] = np.nan
    obj = pd.Series(rng.choice(["q", "r"], n).astype(object))
    obj[rng.random(n) < 0.05] = None
    return pd.DataFrame({"BAL": bal, "a": rng.random(n) + 1, "BRANCH": rng.choice(["A", "B"], n).astype(object),
                         "LABEL": label, "CAT": pd.Categorical(rng.choice(["x", "w"], n)),
                         "NUM": rng.integers(0, 5, n), "OBJ": obj})


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_chunked_evaluation_equals_one_pass(text, monkeypatch):
    tab = _table(10_001)
    shape = Expression(text)
    monkeypatch.setattr(limits, "EXPRESSION_CHUNK_ROWS", 10**9)
    whole = BudgetFunction(shape, 1e-12, 1e12).raw(tab)
    for step in (1, 7, 4096):
        monkeypatch.setattr(limits, "EXPRESSION_CHUNK_ROWS", step if step > 1 else 10_001 // 3)
        np.testing.assert_array_equal(BudgetFunction(shape, 1e-12, 1e12).raw(tab), whole)


def test_text_comparisons_keep_their_meaning():
    tab = _table(2_000)
    ref_label = np.array([v == "x" for v in tab["LABEL"].astype(object)])  # missing equals no text
    b = BudgetFunction(Expression("where(LABEL == 'x', 1, 2)"), 1e-3, 10)
    np.testing.assert_array_equal(b.raw(tab), np.where(ref_label, 1.0, 2.0))
    b = BudgetFunction(Expression("where(LABEL != 'x', 1, 2)"), 1e-3, 10)
    np.testing.assert_array_equal(b.raw(tab), np.where(~ref_label, 1.0, 2.0))
    ref_obj = np.array([v == "q" for v in tab["OBJ"]])
    b = BudgetFunction(Expression("where(OBJ == 'q', 1, 2)"), 1e-3, 10)
    np.testing.assert_array_equal(b.raw(tab), np.where(ref_obj, 1.0, 2.0))
    for col in ("NUM", "BAL"):  # numbers never equal text
        np.testing.assert_array_equal(BudgetFunction(Expression(f"{col} == '1'"), 1e-3, 10).raw(tab), 0.0)
        np.testing.assert_array_equal(BudgetFunction(Expression(f"{col} != '1'"), 1e-3, 10).raw(tab), 1.0)
    cols = {"U": np.array(["a", "b", "a"]), "NA": np.array(["a", pd.NA, None], dtype=object)}
    np.testing.assert_array_equal(compile_expression("U == 'a'")(cols, 3), [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(compile_expression("NA == 'a'")(cols, 3), [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(compile_expression("NA != 'a'")(cols, 3), [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(compile_expression("'a' == 'a'")({}, 2), [1.0, 1.0])
    nested = np.empty(2, dtype=object)
    nested[0], nested[1] = np.zeros(2), np.ones(3)
    for bad in (nested, np.array([["a", "b"], ["c", "d"]], dtype=object)):
        with pytest.raises(ExpressionError, match="cannot be compared with text"):
            compile_expression("L == 'a'")({"L": bad}, 2)


# ---------------------------------------------------------------------------
# Limits from the environment
# ---------------------------------------------------------------------------


def _limits_in_subprocess(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = "from prdp_core import limits; print(limits.MAX_EXPRESSION_COST, limits.EXPRESSION_CHUNK_ROWS)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, **env})


def test_expression_limits_can_be_set_by_environment_variables():
    out = _limits_in_subprocess({"PRDP_MAX_EXPRESSION_COST": "1_000", "PRDP_EXPRESSION_CHUNK_ROWS": "512"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1000", "512"]
    bad = _limits_in_subprocess({"PRDP_MAX_EXPRESSION_COST": "lots"})
    assert bad.returncode != 0 and "PRDP_MAX_EXPRESSION_COST must be a positive whole number" in bad.stderr
