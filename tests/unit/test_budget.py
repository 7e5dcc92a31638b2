"""Budget functions E(r): presets, expressions, bounds, domains and Example 5.2 of the paper."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from prdp_core import budget as B
from prdp_core.errors import ConfigError, ExpressionError, ParameterError, PolicyError

DF = pd.DataFrame({"BALANCE": [0.0, 1.0, 5.0, 100.0, 1e5, 1e9], "BRANCH": list("ABABAC"),
                   "annual pay": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})


def test_inverse_preset_defaults_follow_the_paper():
    b = B.inverse(1e4, "BALANCE")
    assert b.U == 1e12 and b.eps_min == pytest.approx(1e-8) and b.eps_max == 100.0
    assert b.domains().L == 34  # ⌈log2(100 / 1e-8)⌉
    np.testing.assert_allclose(b(DF), [100, 100, 100, 100, 0.1, 1e-5])
    np.testing.assert_allclose(b([2e4, 1e12]), [0.5, 1e-8])
    assert b.value_column == "BALANCE" and b.decreasing()
    assert any("E(U)" in n for n in b.notes)


def test_paper_budget_functions_of_sec_8():
    log4 = B.log_budget(500, "BALANCE", k=4)
    sq = B.sqrt_budget(8, "BALANCE")
    assert log4.eps_min == pytest.approx(500 / math.log(1e12) ** 4)
    assert sq.eps_min == pytest.approx(8 / 1e6)
    v = np.array([0.0, 1.0, math.e ** 2, 1e4])
    np.testing.assert_allclose(log4(v), [100, 100, 500 / 16, 500 / math.log(1e4) ** 4])
    np.testing.assert_allclose(sq(v), [100, 8, 8 / math.e, 0.08])


def test_expression_matches_preset_and_evaluates_vectorised():
    e = B.parse_budget("1e4 / max(BALANCE, 1)")
    p = B.inverse(1e4, "BALANCE")
    assert e.eps_min == pytest.approx(p.eps_min) and e.eps_max == p.eps_max
    np.testing.assert_allclose(e(DF), p(DF))
    big = pd.DataFrame({"BALANCE": np.linspace(0, 1e6, 200_001)})
    np.testing.assert_allclose(e(big), p(big))
    # every preset's equivalent expression gives the same budgets
    for b in (p, B.log_budget(500, "BALANCE", k=4), B.sqrt_budget(8, "BALANCE"),
              B.step_table("BALANCE", [10, 1e4], [1.0, 0.1, 0.01]), B.constant(0.5)):
        again = B.parse_budget(b.expression(), eps_min=b.eps_min, eps_max=b.eps_max, U=b.U)
        np.testing.assert_allclose(again(DF), b(DF))


def test_functions_comparisons_text_and_backticks():
    e = B.parse_budget("where(BRANCH == 'A', 1e4 / max(BALANCE, 1), min(0.5, sqrt(4) / 4))", eps_min=1e-8)
    np.testing.assert_allclose(e(DF), [100, 0.5, 100, 0.5, 0.1, 0.5])
    assert set(e.columns) == {"BALANCE", "BRANCH"} and e.value_column is None
    f = B.parse_budget("`annual pay` / 2 + abs(-1) * exp(0) + log(100, 10) + log2(4) + log10(10)", eps_min=0.1)
    np.testing.assert_allclose(f(DF), DF["annual pay"] / 2 + 1 + 2 + 2 + 1)
    g = B.parse_budget("where(1 < BALANCE <= 100, 2, 1)")
    np.testing.assert_allclose(g(DF), [1, 1, 2, 2, 1, 1])


def test_multi_column_expression_needs_eps_min():
    with pytest.raises(PolicyError, match="State ε̌"):
        B.parse_budget("BALANCE / `annual pay`")
    b = B.parse_budget("1 / (1 + BALANCE * `annual pay`)", eps_min=1e-12, eps_max=1.0)
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
        B.parse_budget(text, eps_min=1e-3)(DF)
    assert fragment in str(info.value), str(info.value)


def test_limits_on_length_nesting_and_size():
    with pytest.raises(ExpressionError, match="limit is"):
        B.parse_budget("1" + "+1" * 1500)
    with pytest.raises(ExpressionError, match="nested"):
        B.parse_budget("sqrt(" * 60 + "1" + ")" * 60)
    with pytest.raises(ExpressionError, match="nested"):
        B.parse_budget("(" * 250 + "1" + ")" * 250)  # the parser's own limit, reported the same way
    assert B.parse_budget("(" * 100 + "2" + ")" * 100).eps_min == 2.0  # redundant brackets are fine
    with pytest.raises(ExpressionError, match="nested|parts"):
        B.parse_budget("-" * 60 + "1")
    with pytest.raises(ExpressionError, match="nested"):
        B.parse_budget("+".join(["1"] * 450))  # a chain is a deep tree

    def balanced(depth: int) -> str:
        return "1" if depth == 0 else f"({balanced(depth - 1)}+{balanced(depth - 1)})"

    with pytest.raises(ExpressionError, match="parts"):
        B.parse_budget(balanced(8))  # 511 nodes, 8 levels


def test_strict_evaluation_never_raises_a_requirement():
    b = B.inverse(1e4, "BALANCE", U=1e6)
    with pytest.raises(PolicyError, match="above the domain bound"):
        b(DF)  # 1e9 > U: its E(r) = 1e-5 is below ε̌ = 0.01
    np.testing.assert_allclose(b.curve(np.array([1e9])), [b.eps_min])  # plots clip
    nan = B.parse_budget("log(BALANCE - 10)", eps_min=0.1, eps_max=5)
    with pytest.raises(PolicyError, match="no valid ε"):
        nan(DF)


def test_bounds_defaults_and_validation():
    c = B.constant(0.7)
    assert (c.eps_min, c.eps_max, c.domains().L) == (0.7, 0.7, 1)
    s = B.step_table("BALANCE", [10, 1000], [2.0, 0.5, 0.1])
    assert (s.eps_min, s.eps_max) == (0.1, 2.0)  # ε̂ = the largest value the formula takes
    dip = B.parse_budget("where(BALANCE < 5e11, 1e-9 + BALANCE * 0, 1)")  # below E(U) inside [0, U]
    assert dip.eps_min == pytest.approx(1e-9) and "dips below" in " ".join(dip.notes)
    over = B.inverse(1e4, "BALANCE", eps_max=1e-9)
    assert over.eps_min == over.eps_max == 1e-9
    for bad in (dict(eps_min=-1.0), dict(eps_min=float("nan")), dict(U=0.0), dict(eps_min=5.0, eps_max=1.0)):
        with pytest.raises(ParameterError):
            B.inverse(1e4, "BALANCE", **bad)
    with pytest.raises(PolicyError):
        B.step_table("BALANCE", [10, 5], [1.0, 0.5, 0.1])
    with pytest.raises(ParameterError):
        B.preset("cubic", "BALANCE")


def test_per_group_budget():
    g = B.per_group("BRANCH", {"A": "1e4 / max(BALANCE, 1)", "B": B.constant(0.5)}, default=B.Constant(2.0))
    np.testing.assert_allclose(g(DF), [100, 0.5, 100, 0.5, 0.1, 2.0])
    assert g.eps_min == pytest.approx(1e-8)  # the smallest E(U) of the parts
    no_default = B.per_group("BRANCH", {"A": B.constant(1.0)})
    with pytest.raises(PolicyError, match="BRANCH = B"):
        no_default(DF)
    with pytest.raises(ExpressionError):
        g([1.0, 2.0])  # needs the group column


@pytest.mark.parametrize("b", [
    B.inverse(1e4, "BALANCE"), B.log_budget(500, "BALANCE", k=4), B.sqrt_budget(8, "BALANCE", U=1e10),
    B.step_table("BALANCE", [10, 1e4], [1.0, 0.1, 0.01]), B.constant(0.5),
    B.parse_budget("1e4 / max(BALANCE, 1)", eps_max=4.0),
    B.per_group("BRANCH", {"A": "1e4 / max(BALANCE, 1)"}, default=B.Sqrt(8.0, "BALANCE")),
])
def test_serialisation_round_trip(b):
    again = B.budget_from_dict(b.to_dict())
    assert again.to_dict() == b.to_dict()
    np.testing.assert_allclose(again(DF), b(DF))
    assert again.describe() == b.describe()


def test_bad_serialised_budgets():
    with pytest.raises(ConfigError):
        B.budget_from_dict({"budget": {"kind": "cubic"}, "eps_min": 1, "eps_max": 2})
    with pytest.raises(ConfigError):
        B.budget_from_dict({"budget": {"kind": "inverse", "alpha": 1.0, "column": "v"}})


# -- domains ---------------------------------------------------------------------------


def test_domain_partition_and_index_invariants():
    dp = B.DomainPartition(1e-8, 100.0)
    assert dp.L == 34
    np.testing.assert_allclose(dp.lo, 1e-8 * 2.0 ** np.arange(34))
    assert dp.hi[-1] == 100.0 and dp.hi[0] == pytest.approx(2e-8)
    rng = np.random.default_rng(0)
    e = np.exp(rng.uniform(math.log(1e-8), math.log(100), 100_000))
    e = np.concatenate((e, dp.lo, dp.hi, np.nextafter(dp.lo, np.inf), [1e-8, 100.0]))
    e = np.clip(e, 1e-8, 100.0)
    i = dp.index(e)
    assert i.min() >= 1 and i.max() <= 34
    assert np.all(dp.lo[i - 1] <= e)  # charged budget never exceeds the requirement
    assert np.all(e <= dp.hi[i - 1] * (1 + 1e-12))
    # interval ends: (2^{i−1}ε̌, 2^iε̌], the first closed
    assert dp.index(np.array([1e-8, 2e-8, np.nextafter(2e-8, 1)])).tolist() == [1, 1, 2]
    assert B.DomainPartition(1.0, 1.0).L == 1 and B.DomainPartition(1.0, 2.0).L == 1
    assert B.DomainPartition(1.0, 2.0000001).L == 2
    with pytest.raises(ParameterError):
        B.DomainPartition(1.0, 0.5)
    with pytest.raises(ParameterError):
        dp.thresholds(1.5)


def test_ceil_log2_is_exact():
    p = np.exp2(np.arange(-60, 61, dtype=float))
    x = np.concatenate((p, np.nextafter(p, np.inf), np.nextafter(p, 0), np.random.default_rng(1).uniform(1e-9, 1e9, 1000)))
    k = B.ceil_log2(x)
    assert np.all(np.ldexp(1.0, k) >= x) and np.all(np.ldexp(1.0, k - 1) < x)


# Example 5.2 / Fig. 1: E(r) = α / v_Bal with α = 1e4, U = 1.28e9, ε̂ = 4.096.
EX52 = B.inverse(1e4, "BALANCE", eps_max=4.096, U=1.28e9)
#: T_12 = 437.69 ⟺ ln(L/β) = 437.69 · 2^11 ε̌ = 7.0030 ⟺ L/β = 1100, i.e. β = 19/1100 ≈ 0.017273
#: with L = 19 (no round β reproduces it; β = 0.01 would need 11 in place of L = 19).
BETA_EX52 = 19 * math.exp(-437.69 * 0.016)


def test_example_5_2_domains_values_and_threshold():
    assert EX52.eps_min == pytest.approx(7.8125e-6, rel=1e-12)
    dp = EX52.domains()
    assert dp.L == 19
    t = EX52.domain_table(beta=BETA_EX52)
    d12 = t.iloc[11]
    assert d12.eps_low == pytest.approx(0.016) and d12.eps_high == pytest.approx(0.032)
    assert d12.value_from == pytest.approx(312_500) and d12.value_to == pytest.approx(625_000)
    assert round(d12.threshold, 2) == 437.69
    assert BETA_EX52 == pytest.approx(19 / 1100, rel=1e-4)  # T is printed to 2 decimals
    assert round(math.log(11 / 0.01) / 0.016, 2) == 437.69  # the alternative reading
    # the last domain holds the capped records (v below α/ε̂ ≈ 2441 get ε̂) and the first reaches U
    assert t.iloc[-1].value_from == 0 and t.iloc[0].value_to == 1.28e9
    assert t.iloc[0].value_from == pytest.approx(6.4e8)
    # ε_τ of the first passing domain X_12, and the sum of Fig. 1's noisy counts X_12..X_19
    assert dp.lo[11] == pytest.approx(0.016)
    noisy = [1729.38, 4042.73, 2384.80, 1042.90, 484.86, 199.22, 92.26, -0.14]
    assert round(sum(noisy), 2) == 9976.01 and noisy[0] > 437.69


def test_value_ranges_by_bisection_match_closed_forms():
    for preset, expr in [(B.log_budget(500, "BALANCE", k=4), "500 / log(max(BALANCE, 1.0000001)) ** 4"),
                         (B.sqrt_budget(8, "BALANCE"), "8 / sqrt(max(BALANCE, 1e-9))"),
                         (B.inverse(1e4, "BALANCE"), "1e4 / max(BALANCE, 1e-9)")]:
        e = B.parse_budget(expr, eps_min=preset.eps_min, eps_max=preset.eps_max)
        assert e.decreasing()
        levels = preset.domains().lo[1:]
        np.testing.assert_allclose(e.upper_values(levels), preset.upper_values(levels), rtol=1e-6)
    wiggly = B.parse_budget("1 + 0.5 * where(BALANCE > 10, 1, 0) + 1e-12 * BALANCE", eps_min=1.0)
    assert not wiggly.decreasing()
    assert np.all(wiggly.upper_values(np.array([1.2])) == wiggly.U)  # unknown shape: the safe bound U
    counts = B.inverse(1e4, "BALANCE").domain_table(DF)["records"]
    assert counts.sum() == len(DF)


def test_value_grid_and_curve():
    g = B.value_grid(1e6, 50)
    assert g[0] == 0 and g[-1] == pytest.approx(1e6) and np.all(np.diff(g) > 0)
    b = B.inverse(1e4, "BALANCE")
    c = b.curve(g)
    assert c[0] == 100 and np.all(np.diff(c) <= 0)
    with pytest.raises(ParameterError):
        B.value_grid(-1)


def test_values_outside_the_domain_are_refused_not_given_the_weakest_budget():
    from prdp_core.budget import Inverse, Log, Sqrt

    v = {"BALANCE": np.array([0.0, -5e5, np.nan, 100.0])}
    for shape in (Inverse(1e4, "BALANCE"), Sqrt(8.0, "BALANCE"), Log(500.0, "BALANCE", k=4.0)):
        raw = shape.raw(v, 4)
        # v = 0 gets ε̂ (the paper's α/0 capped); negative and missing values get no budget at all
        assert np.isinf(raw[0]) and np.isnan(raw[1]) and np.isnan(raw[2]) and np.isfinite(raw[3])
    bud = B.parse_budget("1e4 / max(BALANCE, 1)")
    assert np.all(np.isfinite(bud(pd.DataFrame({"BALANCE": [10.0, 5e5]}))))
