"""The budget-expression compiler: functions, comparisons and text, clear messages, limits, strict evaluation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ExpressionError, PolicyError
from prdp_core.mechanisms.prdp.budget import inverse, parse_budget

DF = pd.DataFrame({"BALANCE": [0.0, 1.0, 5.0, 100.0, 1e5, 1e9], "BRANCH": list("ABABAC"),
                   "annual pay": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})


def test_functions_comparisons_text_and_backticks():
    e = parse_budget("where(BRANCH == 'A', 1e4 / max(BALANCE, 1), min(0.5, sqrt(4) / 4))", eps_min=1e-8)
    np.testing.assert_allclose(e(DF), [100, 0.5, 100, 0.5, 0.1, 0.5])
    assert set(e.columns) == {"BALANCE", "BRANCH"} and e.value_column is None
    f = parse_budget("`annual pay` / 2 + abs(-1) * exp(0) + log(100, 10) + log2(4) + log10(10)", eps_min=0.1)
    np.testing.assert_allclose(f(DF), DF["annual pay"] / 2 + 1 + 2 + 2 + 1)
    g = parse_budget("where(1 < BALANCE <= 100, 2, 1)")
    np.testing.assert_allclose(g(DF), [1, 1, 2, 2, 1, 1])


def test_multi_column_expression_needs_eps_min():
    with pytest.raises(PolicyError, match="State ε̌"):
        parse_budget("BALANCE / `annual pay`")
    b = parse_budget("1 / (1 + BALANCE * `annual pay`)", eps_min=1e-12, eps_max=1.0)
    with pytest.raises(ExpressionError, match="evaluate it on a table"):
        b([1.0, 2.0])


@pytest.mark.parametrize("text, fragment", [
    ("1e4 / balanse", "Did you mean 'BALANCE'"),
    ("1e4 / ", "Syntax error"),
    ("1e4 // BALANCE", "not allowed"),
    ("foo(BALANCE)", "not an allowed function"),
    ("sqrt(BALANCE, 2)", "takes 1 arguments"),
    ("BALANCE ** 1000", "exponent"),
    ("BALANCE.real", "attribute access"),
    ("[1, 2]", "lists"),
    ("'a' + 1", "compared with a column"),
    ("log(x=3)", "plain arguments"),
    ("1 if BALANCE else 2", "where(c, a, b)"),
    ("", "empty"),
    ("`BALANCE", "backticks"),
    ("`BALANCE`BALANCE", "`BALANCE` is joined to other text without an operator"),
    ("x`annual pay`", "`annual pay` is joined"),
    ("`annual pay`(2)", "`annual pay` is a column, not a function"),
])
def test_clear_messages_for_bad_expressions(text, fragment):
    with pytest.raises(ExpressionError, match=None) as info:
        parse_budget(text, eps_min=1e-3)(DF)
    assert fragment in str(info.value), str(info.value)


def test_limits_on_length_nesting_and_size():
    with pytest.raises(ExpressionError, match="limit is"):
        parse_budget("1" + "+1" * 1500)
    with pytest.raises(ExpressionError, match="nested"):
        parse_budget("sqrt(" * 60 + "1" + ")" * 60)
    with pytest.raises(ExpressionError, match="nested"):
        parse_budget("(" * 250 + "1" + ")" * 250)  # the parser's own limit, reported the same way
    assert parse_budget("(" * 100 + "2" + ")" * 100).eps_min == 2.0  # redundant brackets are fine
    with pytest.raises(ExpressionError, match="nested|parts"):
        parse_budget("-" * 60 + "1")
    with pytest.raises(ExpressionError, match="nested"):
        parse_budget("+".join(["1"] * 450))  # a chain is a deep tree

    def balanced(depth: int) -> str:
        return "1" if depth == 0 else f"({balanced(depth - 1)}+{balanced(depth - 1)})"

    with pytest.raises(ExpressionError, match="parts"):
        parse_budget(balanced(8))  # 511 nodes, 8 levels


def test_strict_evaluation_never_raises_a_requirement():
    b = inverse(1e4, "BALANCE", U=1e6)
    with pytest.raises(PolicyError, match="above the domain bound"):
        b(DF)  # 1e9 > U: its E(r) = 1e-5 is below ε̌ = 0.01
    np.testing.assert_allclose(b.curve(np.array([1e9])), [b.eps_min])  # plots clip
    nan = parse_budget("log(BALANCE - 10)", eps_min=0.1, eps_max=5)
    with pytest.raises(PolicyError, match="no valid ε"):
        nan(DF)
