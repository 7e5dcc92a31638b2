"""Budget functions E(r): presets of the paper, bounds and defaults, per-group budgets, value ranges and grids."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ExpressionError, ParameterError, PolicyError
from prdp_core.core.shapes import Constant
from prdp_core.mechanisms.prdp.budget import (
    constant,
    inverse,
    log_budget,
    parse_budget,
    per_group,
    preset,
    sqrt_budget,
    step_table,
    value_grid,
)

DF = pd.DataFrame({"BALANCE": [0.0, 1.0, 5.0, 100.0, 1e5, 1e9], "BRANCH": list("ABABAC"),
                   "annual pay": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})


def test_inverse_preset_defaults_follow_the_paper():
    b = inverse(1e4, "BALANCE")
    assert b.U == 1e12 and b.eps_min == pytest.approx(1e-8) and b.eps_max == 100.0
    assert b.domains().L == 34  # ⌈log2(100 / 1e-8)⌉
    np.testing.assert_allclose(b(DF), [100, 100, 100, 100, 0.1, 1e-5])
    np.testing.assert_allclose(b([2e4, 1e12]), [0.5, 1e-8])
    assert b.value_column == "BALANCE" and b.decreasing()
    assert any("E(U)" in n for n in b.notes)


def test_paper_budget_functions_of_sec_8():
    log4 = log_budget(500, "BALANCE", k=4)
    sq = sqrt_budget(8, "BALANCE")
    assert log4.eps_min == pytest.approx(500 / math.log(1e12) ** 4)
    assert sq.eps_min == pytest.approx(8 / 1e6)
    v = np.array([0.0, 1.0, math.e ** 2, 1e4])
    np.testing.assert_allclose(log4(v), [100, 100, 500 / 16, 500 / math.log(1e4) ** 4])
    np.testing.assert_allclose(sq(v), [100, 8, 8 / math.e, 0.08])


def test_expression_matches_preset_and_evaluates_vectorised():
    e = parse_budget("1e4 / max(BALANCE, 1)")
    p = inverse(1e4, "BALANCE")
    assert e.eps_min == pytest.approx(p.eps_min) and e.eps_max == p.eps_max
    np.testing.assert_allclose(e(DF), p(DF))
    big = pd.DataFrame({"BALANCE": np.linspace(0, 1e6, 200_001)})
    np.testing.assert_allclose(e(big), p(big))
    # every preset's equivalent expression gives the same budgets
    for b in (p, log_budget(500, "BALANCE", k=4), sqrt_budget(8, "BALANCE"),
              step_table("BALANCE", [10, 1e4], [1.0, 0.1, 0.01]), constant(0.5)):
        again = parse_budget(b.expression(), eps_min=b.eps_min, eps_max=b.eps_max, U=b.U)
        np.testing.assert_allclose(again(DF), b(DF))


def test_bounds_defaults_and_validation():
    c = constant(0.7)
    assert (c.eps_min, c.eps_max, c.domains().L) == (0.7, 0.7, 1)
    s = step_table("BALANCE", [10, 1000], [2.0, 0.5, 0.1])
    assert (s.eps_min, s.eps_max) == (0.1, 2.0)  # ε̂ = the largest value the formula takes
    dip = parse_budget("where(BALANCE < 5e11, 1e-9 + BALANCE * 0, 1)")  # below E(U) inside [0, U]
    assert dip.eps_min == pytest.approx(1e-9) and "dips below" in " ".join(dip.notes)
    over = inverse(1e4, "BALANCE", eps_max=1e-9)
    assert over.eps_min == over.eps_max == 1e-9
    for bad in (dict(eps_min=-1.0), dict(eps_min=float("nan")), dict(U=0.0), dict(eps_min=5.0, eps_max=1.0)):
        with pytest.raises(ParameterError):
            inverse(1e4, "BALANCE", **bad)
    with pytest.raises(PolicyError):
        step_table("BALANCE", [10, 5], [1.0, 0.5, 0.1])
    with pytest.raises(ParameterError):
        preset("cubic", "BALANCE")


def test_per_group_budget():
    g = per_group("BRANCH", {"A": "1e4 / max(BALANCE, 1)", "B": constant(0.5)}, default=Constant(2.0))
    np.testing.assert_allclose(g(DF), [100, 0.5, 100, 0.5, 0.1, 2.0])
    assert g.eps_min == pytest.approx(1e-8)  # the smallest E(U) of the parts
    no_default = per_group("BRANCH", {"A": constant(1.0)})
    with pytest.raises(PolicyError, match="BRANCH = B"):
        no_default(DF)
    with pytest.raises(ExpressionError):
        g([1.0, 2.0])  # needs the group column


def test_value_ranges_by_bisection_match_closed_forms():
    for built, expr in [(log_budget(500, "BALANCE", k=4), "500 / log(max(BALANCE, 1.0000001)) ** 4"),
                         (sqrt_budget(8, "BALANCE"), "8 / sqrt(max(BALANCE, 1e-9))"),
                         (inverse(1e4, "BALANCE"), "1e4 / max(BALANCE, 1e-9)")]:
        e = parse_budget(expr, eps_min=built.eps_min, eps_max=built.eps_max)
        assert e.decreasing()
        levels = built.domains().lo[1:]
        np.testing.assert_allclose(e.upper_values(levels), built.upper_values(levels), rtol=1e-6)
    wiggly = parse_budget("1 + 0.5 * where(BALANCE > 10, 1, 0) + 1e-12 * BALANCE", eps_min=1.0)
    assert not wiggly.decreasing()
    assert np.all(wiggly.upper_values(np.array([1.2])) == wiggly.U)  # unknown shape: the safe bound U
    counts = inverse(1e4, "BALANCE").domain_table(DF)["records"]
    assert counts.sum() == len(DF)


def test_value_grid_and_curve():
    g = value_grid(1e6, 50)
    assert g[0] == 0 and g[-1] == pytest.approx(1e6) and np.all(np.diff(g) > 0)
    b = inverse(1e4, "BALANCE")
    c = b.curve(g)
    assert c[0] == 100 and np.all(np.diff(c) <= 0)
    with pytest.raises(ParameterError):
        value_grid(-1)


def test_values_outside_the_domain_are_refused_not_given_the_weakest_budget():
    from prdp_core.core.shapes import Inverse, Log, Sqrt

    v = {"BALANCE": np.array([0.0, -5e5, np.nan, 100.0])}
    for shape in (Inverse(1e4, "BALANCE"), Sqrt(8.0, "BALANCE"), Log(500.0, "BALANCE", k=4.0)):
        raw = shape.raw(v, 4)
        # v = 0 gets ε̂ (the paper's α/0 capped); negative and missing values get no budget at all
        assert np.isinf(raw[0]) and np.isnan(raw[1]) and np.isnan(raw[2]) and np.isfinite(raw[3])
    bud = parse_budget("1e4 / max(BALANCE, 1)")
    assert np.all(np.isfinite(bud(pd.DataFrame({"BALANCE": [10.0, 5e5]}))))
