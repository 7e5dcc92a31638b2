"""Multi-tier release, central model: Eq. (1), Table 1, Algorithm 1 sampling, MSEs, coalitions, releases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from prdp_core.errors import ParameterError, PolicyError
from prdp_core.mechanisms import multitier as mt
from prdp_core.mechanisms import multitier_central as mc

N = 40_000


# ---------------------------------------------------------------------------
# Eq. (1) and Table 1 residuals
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("a_from,a_to,w0", [(2.0, 1.0, 0.196612), (5.0, 0.3, 0.000619), (0.8, 0.7, 0.756202)])
def test_eq1_weights_match_the_notes_and_sum_to_one(a_from, a_to, w0):
    got0, got1 = mc.geometric_residual_weights(a_from, a_to)
    assert got0 == pytest.approx(w0, abs=1e-6)
    assert got0 + got1 == pytest.approx(1.0, abs=1e-14)
    p_i, p_j = math.exp(-a_from), math.exp(-a_to)  # the paper's printed forms
    assert got0 == pytest.approx((1 - p_j) ** 2 * p_i / ((1 - p_i) ** 2 * p_j), rel=1e-12)
    assert got1 == pytest.approx((p_j - p_i) * (1 - p_i * p_j) / ((1 - p_i) ** 2 * p_j), rel=1e-10)


def test_eq1_mixture_cf_equals_the_ratio_of_cfs():
    fam = mc.noise_family("geometric")
    t = np.linspace(-math.pi, math.pi, 2001)
    for a, b in [(3.0, 2.0), (1.0, 0.05), (0.3, 0.2999), (12.0, 0.5)]:
        w0, w1 = mc.geometric_residual_weights(a, b)
        assert 0.0 <= w0 <= 1.0
        mixture = w0 + w1 * fam.cf(t, b)
        assert np.max(np.abs(mixture - fam.cf(t, b) / fam.cf(t, a))) < 1e-12


def test_laplace_and_gaussian_residual_cfs():
    t = np.linspace(-40, 40, 4001)
    lap = mc.noise_family("laplace", sensitivity=2.0)
    b1, b2 = lap.param(3.0), lap.param(1.2)
    w = (1.2 / 3.0) ** 2
    assert np.max(np.abs(w + (1 - w) * lap.cf(t, b2) - lap.cf(t, b2) / lap.cf(t, b1))) < 1e-12
    gau = mc.noise_family("gaussian", delta=1e-6)
    s1, s2 = gau.param(2.0), gau.param(0.5)
    t = np.linspace(-0.3, 0.3, 601)
    ratio = gau.cf(t, s2) / gau.cf(t, s1)
    assert np.max(np.abs(np.exp(-0.5 * (s2 ** 2 - s1 ** 2) * t ** 2) - ratio)) < 1e-12


def test_chained_residuals_equal_the_direct_residual():
    """Composing Eq.-(1) residuals ε 3 → 2 → 1 → 0.5 gives the single residual (p_1, p_4)."""
    half = 60
    comp = np.zeros(2 * half + 1)
    comp[half] = 1.0
    steps = [3.0, 2.0, 1.0, 0.5]
    for a, b in zip(steps, steps[1:]):
        comp = np.convolve(comp, mc._residual_pmf_window(a, b, half), mode="same")
    direct = mc._residual_pmf_window(3.0, 0.5, half)
    assert np.max(np.abs(comp[half - 20:half + 21] - direct[half - 20:half + 21])) < 1e-12


# ---------------------------------------------------------------------------
# Sampling: every tier's marginal, with power against ±10% (both directions)
# ---------------------------------------------------------------------------


def _chi2_p(sample: np.ndarray, pmf, support: np.ndarray) -> float:
    obs = np.array([(sample == k).sum() for k in support] + [(np.abs(sample) > support.max()).sum()])
    p = pmf(support)
    exp = np.concatenate((p, [max(1 - p.sum(), 1e-12)])) * sample.size
    keep = exp > 5
    obs, exp = obs[keep], exp[keep]
    exp = exp * obs.sum() / exp.sum()
    return stats.chisquare(obs, exp).pvalue


def test_geometric_chain_reproduces_every_tier_with_power():
    eps = [3.0, 2.0, 1.0, 0.5]
    fam = mc.noise_family("geometric")
    out = mc.sample_multitier(fam, [fam.param(e) for e in eps], np.zeros(N), rng=np.random.default_rng(11))
    support = np.arange(-40, 41)
    for i, e in enumerate(eps):
        x = out[i].astype(int)
        assert _chi2_p(x, lambda k: mc.tsg_pmf(k, e), support) > 1e-3, e
        assert _chi2_p(x, lambda k: mc.tsg_pmf(k, e * 1.1), support) < 1e-4, e
        assert _chi2_p(x, lambda k: mc.tsg_pmf(k, e / 1.1), support) < 1e-4, e
        # closed-form MSE: variance z-test
        v = mc.tsg_variance(e)
        se = math.sqrt(np.var((x - 0.0) ** 2) / N)
        assert abs(np.mean(x ** 2.0) - v) < 4 * se


def test_geometric_sensitivity_two_uses_eps_over_delta():
    fam = mc.noise_family("geometric", sensitivity=2)
    out = mc.sample_multitier(fam, [fam.param(4.0), fam.param(1.0)], np.zeros(N), rng=np.random.default_rng(5))
    support = np.arange(-60, 61)
    assert _chi2_p(out[1].astype(int), lambda k: mc.tsg_pmf(k, 0.5), support) > 1e-3
    assert _chi2_p(out[1].astype(int), lambda k: mc.tsg_pmf(k, 0.55), support) < 1e-4


@pytest.mark.parametrize("family", ["laplace", "gaussian"])
def test_continuous_chain_reproduces_every_tier_with_power(family):
    eps = [4.0, 1.5, 0.6]
    fam = mc.noise_family(family, sensitivity=1.0, delta=1e-5)
    params = [fam.param(e) for e in eps]
    out = mc.sample_multitier(fam, params, np.zeros(N), rng=np.random.default_rng(12))
    for i, p in enumerate(params):
        dist = (lambda s: stats.laplace(scale=s)) if family == "laplace" else (lambda s: stats.norm(scale=s))
        assert stats.kstest(out[i], dist(p).cdf).pvalue > 1e-3
        assert stats.kstest(out[i], dist(p * 0.9).cdf).pvalue < 1e-4
        assert stats.kstest(out[i], dist(p * 1.1).cdf).pvalue < 1e-4
        v = fam.variance(p)
        assert abs(np.mean(out[i] ** 2) - v) < 4 * math.sqrt(np.var(out[i] ** 2) / N)


def test_multiscale_chain_matches_its_exact_pmf_and_variance():
    fam = mc.noise_family("multiscale_geometric", sensitivity=2)
    eps = [3.0, 1.5]
    out = mc.sample_multitier(fam, eps, np.zeros(N), rng=np.random.default_rng(13))
    support = np.arange(-30, 31)
    x = out[1].astype(int)
    assert _chi2_p(x, lambda k: fam.pmf(k, 1.5), support) > 1e-3
    assert _chi2_p(x, lambda k: fam.pmf(k, 1.65), support) < 1e-4
    assert _chi2_p(x, lambda k: fam.pmf(k, 1.5 / 1.1), support) < 1e-4
    assert fam.variance(1.5) == pytest.approx((1 + 4) * mc.tsg_variance(1.5))
    assert abs(np.mean(x ** 2.0) - fam.variance(1.5)) < 4 * math.sqrt(np.var(x ** 2.0) / N)


def test_multiscale_noise_is_eps_dp_exactly():
    """Σ ξ·TSG(ε) on a Δ-sensitive integer query: max log-ratio over shifts 1..Δ is ε (notes, §3.3),
    never exceeded and approached in the tails."""
    for sens, eps in [(3, 2.0), (4, 3.0)]:
        fam = mc.noise_family("multiscale_geometric", sensitivity=sens)
        k = np.arange(-60, 61)
        worst = 0.0
        for s in range(1, sens + 1):
            lp0 = np.log(fam.pmf(k, eps, window=400))
            lp1 = np.log(fam.pmf(k - s, eps, window=400))
            worst = max(worst, float(np.max(np.abs(lp0 - lp1))))
        assert eps - 1e-6 < worst <= eps + 1e-9


def test_gradual_closed_form_matches_simulation():
    eps = [2.0, 1.0, 0.5]
    fam = mc.noise_family("laplace")
    out, _ = mc.sample_gradual(fam, eps, np.zeros(N), rng=np.random.default_rng(14))
    v = mc.gradual_variance(mc.family_piece_variances(fam, eps))
    # pieces 1, 0.5, 0.5 → variances 2, 8, 8; tier 1: 1/(1/2+1/8+1/8) = 4/3
    assert v == pytest.approx([4 / 3, 4.0, 8.0])
    for i in range(3):
        assert abs(np.mean(out[i] ** 2) - v[i]) < 4 * math.sqrt(np.var(out[i] ** 2) / N)


def test_gradual_is_lossless_for_gaussian_noise():
    """Averaging Gaussian pieces with ρ split additively recovers σ_i exactly (a teaching point)."""
    plan = mt.plan_central([("a", 3.0), ("b", 1.0), ("c", 0.4)], "gaussian", delta=1e-6)
    assert plan.gradual_variances() == pytest.approx(plan.variances(), rel=1e-9)


def test_equal_budgets_get_the_same_output():
    fam = mc.noise_family("geometric")
    out = mc.sample_multitier(fam, [1.0, 1.0, 0.5], np.zeros(1000), rng=np.random.default_rng(1))
    assert np.array_equal(out[0], out[1]) and not np.array_equal(out[1], out[2])


def test_numerics_tiny_and_huge_budgets():
    w0, w1 = mc.geometric_residual_weights(40.0, 1e-4)
    assert 0.0 <= w0 < 1e-12 and w1 == pytest.approx(1.0)
    w0, w1 = mc.geometric_residual_weights(2e-4, 1e-4)
    assert np.isfinite(w0) and w0 + w1 == pytest.approx(1.0, abs=1e-9)
    assert np.isfinite(mc.tsg_variance(1e-4)) and mc.tsg_variance(1e-4) == pytest.approx(2e8, rel=1e-6)


# ---------------------------------------------------------------------------
# Table 1: the validity check and its counterexamples
# ---------------------------------------------------------------------------


def test_discrete_gaussian_counterexample():
    """Remark 4.1: DG(1²) → DG(1.1²) has no residual (Bochner eigenvalue −0.1886953)."""
    chk = mt.check_residual("discrete_gaussian", 1.0, 1.0, params=(1.0, 1.1))
    assert chk.exists is False
    assert chk.min_eigenvalue == pytest.approx(-0.1886953, abs=1e-6)
    fam = mc.noise_family("discrete_gaussian")
    row = [fam.cf(np.array([t]), 1.1)[0] / fam.cf(np.array([t]), 1.0)[0] for t in (0, math.pi / 2, math.pi)]
    assert row == pytest.approx([1.0, 0.771729, 0.354762], abs=1e-6)
    assert chk.min_mass == pytest.approx(-0.02141, abs=1e-5)  # negative 'probability' at k = ±2
    assert abs(chk.witness["k"]) == 2


def test_staircase_counterexample():
    """App. F: staircase ε 2.8 → 1 has no residual; R(5π) = −1.43887, eigenvalue −0.43887."""
    fam = mc.noise_family("staircase")
    t = np.array([5 * math.pi])
    assert (fam.cf(t, 1.0) / fam.cf(t, 2.8))[0] == pytest.approx(-1.43887, abs=1e-5)
    chk = mt.check_residual("staircase", 2.8, 1.0, points=(0.0, 5 * math.pi))
    assert chk.exists is False
    assert chk.min_eigenvalue == pytest.approx(-0.43887, abs=1e-5)
    assert mt.check_residual("staircase", 2.8, 1.0).exists is False  # found by the grid scan too


def test_staircase_cf_matches_numerical_integration():
    eps = 1.0
    g = 1 / (math.exp(eps / 2) + 1)
    a = (1 - math.exp(-eps)) / (2 * (g + math.exp(-eps) * (1 - g)))
    x = np.linspace(-40, 40, 800_001)
    ax = np.abs(x)
    k = np.floor(ax)
    dens = a * np.exp(-k * eps) * np.where(ax - k < g, 1.0, math.exp(-eps))
    dx = x[1] - x[0]
    for t in (0.7, 2.0, 5.0):
        assert (dens * np.cos(t * x)).sum() * dx == pytest.approx(mc.staircase_cf(np.array([t]), eps)[0], abs=1e-4)


@pytest.mark.parametrize("family", ["geometric", "laplace", "gaussian", "skellam", "multiscale_geometric"])
def test_families_with_residuals_are_accepted_and_reversals_refused(family):
    sens = 2 if family == "multiscale_geometric" else 1
    assert mt.check_residual(family, 2.0, 0.7, sensitivity=sens).exists is True
    assert mt.check_residual(family, 0.7, 2.0, sensitivity=sens).exists is False
    assert mt.check_residual(family, 1.0, 1.0, sensitivity=sens).exists is True


def test_lattice_inversion_agrees_with_eq1():
    fam = mc.noise_family("geometric")
    pmf = mc.lattice_residual_pmf(lambda t: fam.cf(t, 0.8) / fam.cf(t, 1.6))
    half = pmf.size // 2
    assert np.max(np.abs(pmf[half - 30:half + 31] - mc._residual_pmf_window(1.6, 0.8, 30))) < 1e-12


def test_gaussian_calibration_is_exact():
    s = mc.gaussian_sigma_for(1.0, 1e-5)
    assert mc.analytic_gaussian_delta(1.0, s) == pytest.approx(1e-5, rel=1e-6)
    assert s < math.sqrt(2 * math.log(1.25 / 1e-5))  # tighter than the classical calibration
    assert mc.gaussian_eps_for(s, 1e-5) == pytest.approx(1.0, abs=1e-8)


# ---------------------------------------------------------------------------
# Coalitions (computed) and plans / releases
# ---------------------------------------------------------------------------


def test_exact_joint_loss_two_tiers_matches_the_notes():
    assert mc.geometric_coalition_loss([1.5, 0.5]) == pytest.approx(1.5, abs=1e-9)
    assert mc.geometric_coalition_loss([1.5, 0.5], strategy="independent") == pytest.approx(2.0, abs=1e-9)


def test_full_coalition_loss_equals_the_top_budget():
    plan = mt.plan_central([("a", 3.0), ("b", 2.0), ("c", 1.0), ("d", 0.4)], "geometric")
    cl = mt.coalition_loss(plan)
    assert "exact joint pmf" in cl.method
    assert cl.multitier == pytest.approx(3.0, abs=1e-9)
    assert cl.independent == pytest.approx(6.4, abs=1e-9)
    assert cl.gradual == pytest.approx(3.0) and cl.naive == pytest.approx(6.4)
    # a coalition without the top tier pays its own top budget, with the chain of residuals in between
    assert mt.coalition_loss(plan, ["b", "d"]).multitier == pytest.approx(2.0, abs=1e-9)


def test_coalition_sensitivity_two():
    plan = mt.plan_central([("a", 3.0), ("b", 1.0)], "geometric", sensitivity=2)
    cl = mt.coalition_loss(plan)
    assert cl.multitier == pytest.approx(3.0, abs=1e-9) and cl.independent == pytest.approx(4.0, abs=1e-9)


def test_gaussian_coalition_in_rho_and_eps():
    plan = mt.plan_central([("a", 2.0), ("b", 1.0)], "gaussian", delta=1e-6)
    cl = mt.coalition_loss(plan)
    assert cl.unit == "ρ"
    assert cl.multitier == pytest.approx(plan.budgets()[0]) and cl.independent == pytest.approx(plan.budgets().sum())
    assert cl.eps_at_delta["multitier"] == pytest.approx(2.0, abs=1e-6)
    assert 2.0 < cl.eps_at_delta["independent"] < 3.0  # far less than the 3.0 of basic composition


def test_plan_table_and_loss_summary():
    plan = mt.plan_central({"public": 0.5, "researchers": 2.0, "agency": 8.0}, "geometric")
    assert plan.names == ["agency", "researchers", "public"]
    tab = plan.table()
    assert list(tab["ratio_multitier"]) == [1.0, 1.0, 1.0]
    assert (tab["ratio_gradual"] >= 1 - 1e-12).all() and tab["ratio_gradual"].iloc[0] > 5
    assert plan.loss_summary() == {"multitier": 8.0, "independent": 10.5, "gradual": 8.0}


def test_release_structure_and_ledger_entries():
    plan = mt.plan_central([("a", 2.0), ("b", 0.5)], "geometric")
    mask = np.array([True, False, True])
    rel = mt.release_central(plan, 7, rng=np.random.default_rng(0), seed=0, reveal=True, records=mask, query="n")
    assert rel.measure == "eps" and rel.truth_included
    assert list(rel.answers["tier"]) == ["a", "b"] and set(rel.answers["true"]) == {7.0}
    assert len(rel.entries) == 1 and rel.entries[0].loss.value == 2.0
    assert list(rel.loss) == [2.0, 0.0, 2.0]
    assert float(rel.answers["estimate"].iloc[0]) == int(rel.answers["estimate"].iloc[0])
    review = rel.for_review()
    assert "true" not in review.answers.columns and review.loss is None
    ind = mt.release_central(plan, 7, rng=np.random.default_rng(0), strategy="independent")
    assert [e.loss.value for e in ind.entries] == [2.0, 0.5]
    grad = mt.release_central(plan, 7, rng=np.random.default_rng(0), strategy="gradual")
    assert [e.loss.value for e in grad.entries] == [1.5, 0.5]


def test_gaussian_release_is_recorded_in_rho():
    plan = mt.plan_central([("a", 2.0), ("b", 0.5)], "gaussian", delta=1e-6)
    rel = mt.release_central(plan, 10.0, rng=np.random.default_rng(0))
    assert rel.measure == "rho" and rel.entries[0].loss.measure == "rho"
    assert rel.entries[0].loss.value == pytest.approx(plan.budgets()[0])


def test_bad_inputs_raise_actionable_errors():
    with pytest.raises(PolicyError, match="unique"):
        mt.tiers_from([("a", 1.0), ("a", 2.0)])
    with pytest.raises(PolicyError, match="positive"):
        mt.tiers_from([("a", -1.0)])
    with pytest.raises(PolicyError, match="no name"):
        mt.tiers_from(pd.DataFrame({"name": [None, "b"], "eps": [1.0, 2.0]}))
    assert len(mt.tiers_from(pd.DataFrame({"name": ["a", None], "eps": [1.0, None]}))) == 1
    with pytest.raises(PolicyError, match="at least one"):
        mt.tiers_from([])
    with pytest.raises(ParameterError):
        mt.plan_central([("a", 1.0)], "staircase")
    with pytest.raises(ParameterError, match="integer"):
        mt.plan_central([("a", 1.0)], "geometric", sensitivity=2.5)
    with pytest.raises(ParameterError, match="finite"):
        mt.release_central(mt.plan_central([("a", 1.0)], "geometric"), math.nan, rng=np.random.default_rng(0))


def test_lattice_rounding_keeps_the_integer_sensitivity():
    """⌊q + ½⌋ moves by at most Δ when q moves by at most Δ (round-half-to-even would not: 0.5 → 0, 1.5 → 2)."""
    rng = np.random.default_rng(3)
    for delta in (1, 2, 7):
        a = np.concatenate([rng.uniform(-50, 50, 20_000), np.arange(-20, 20, 0.5)])
        step = rng.uniform(-delta, delta, a.size)
        step[: a.size // 4] = np.sign(step[: a.size // 4]) * delta  # the extreme moves
        assert np.max(np.abs(mt.lattice_round(a + step) - mt.lattice_round(a))) <= delta
    assert np.round(1.5) - np.round(0.5) == 2  # numpy's half-to-even rounding would double a count's sensitivity
    assert mt.lattice_round(np.array([0.5, 1.5, 2.0, -0.5]).tolist()).tolist() == [1.0, 2.0, 2.0, 0.0]


def test_geometric_release_of_a_non_integer_answer_never_aborts_and_is_eps_dp():
    """A data-dependent abort (the sum happens not to be an integer) is gone: the release answers ⌊q + ½⌋.
    Exact output pmfs on neighbouring answers q = 0.5 and q' = 1.5 (Δ = 1): max log-ratio ≤ ε."""
    eps = 1.0
    plan = mt.plan_central([("a", eps), ("b", 0.4)], "geometric")
    outs = {}
    for q in (0.5, 1.5, 2.0):
        rel = mt.release_central(plan, q, rng=np.random.default_rng(0), reveal=True)
        assert np.all(rel.answers["estimate"] == np.round(rel.answers["estimate"]))
        outs[q] = rel
    assert outs[2.0].answers["true"].iloc[0] == 2.0 and outs[0.5].answers["true"].iloc[0] == 1.0
    k = np.arange(-60, 61)
    a = plan.family.param(eps)
    p0 = mc.tsg_pmf(k - mt.lattice_round(0.5), a)
    p1 = mc.tsg_pmf(k - mt.lattice_round(1.5), a)
    assert np.max(np.abs(np.log(p0) - np.log(p1))) <= eps + 1e-12
    # sums of unrounded per-record values: the same release path, no abort for any data
    df = pd.DataFrame({"v": [0.3, 0.4, 2.25]})
    q = mt.central_query(df, "sum", measure="v", clip=5)
    rel = mt.release_central(plan, q.value, rng=np.random.default_rng(1), records=q.mask, query=q.label)
    assert len(rel.answers) == 2


def test_central_query_count_and_sum():
    df = pd.DataFrame({"emp": [1.0, 5.0, 100.0, 7.0], "county": ["A", "B", "A", "A"]})
    q = mt.central_query(df, "count", filter=mt.RecordFilter("county", "==", "A"))
    assert q.value == 3 and q.sensitivity == 1 and list(q.mask) == [True, False, True, True]
    s = mt.central_query(df, "sum", measure="emp", clip=10, integer=True)
    assert s.value == 1 + 5 + 10 + 7 and s.sensitivity == 10
    assert mt.central_query(df, "sum", measure="emp", clip=10,
                            filter=mt.RecordFilter("emp", ">=", 6)).value == 17
    with pytest.raises(ParameterError):
        mt.central_query(df, "sum", measure="emp", clip=2.5, integer=True)
