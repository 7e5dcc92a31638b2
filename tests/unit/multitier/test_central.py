"""Central multi-tier release: Algorithm 1 sampling (each tier with power), the gradual baseline, plans, releases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from prdp_core.core.errors import ParameterError, PolicyError
from prdp_core.mechanisms.multitier.central import (
    family_piece_variances,
    gradual_variance,
    lattice_round,
    plan_central,
    release_central,
    sample_gradual,
    sample_multitier,
)
from prdp_core.mechanisms.multitier.noise_families import noise_family, tsg_pmf, tsg_variance
from prdp_core.mechanisms.multitier.queries import central_query
from prdp_core.mechanisms.multitier.tiers import tiers_from
from tests.laws import chi2_p

N = 40_000


def test_geometric_chain_reproduces_every_tier_with_power():
    eps = [3.0, 2.0, 1.0, 0.5]
    fam = noise_family("geometric")
    out = sample_multitier(fam, [fam.param(e) for e in eps], np.zeros(N), rng=np.random.default_rng(11))
    support = np.arange(-40, 41)
    for i, e in enumerate(eps):
        x = out[i].astype(int)
        assert chi2_p(x, lambda k: tsg_pmf(k, e), support) > 1e-3, e
        assert chi2_p(x, lambda k: tsg_pmf(k, e * 1.1), support) < 1e-4, e
        assert chi2_p(x, lambda k: tsg_pmf(k, e / 1.1), support) < 1e-4, e
        # closed-form MSE: variance z-test
        v = tsg_variance(e)
        se = math.sqrt(np.var((x - 0.0) ** 2) / N)
        assert abs(np.mean(x ** 2.0) - v) < 4 * se


def test_geometric_sensitivity_two_uses_eps_over_delta():
    fam = noise_family("geometric", sensitivity=2)
    out = sample_multitier(fam, [fam.param(4.0), fam.param(1.0)], np.zeros(N), rng=np.random.default_rng(5))
    support = np.arange(-60, 61)
    assert chi2_p(out[1].astype(int), lambda k: tsg_pmf(k, 0.5), support) > 1e-3
    assert chi2_p(out[1].astype(int), lambda k: tsg_pmf(k, 0.55), support) < 1e-4


@pytest.mark.parametrize("family", ["laplace", "gaussian"])
def test_continuous_chain_reproduces_every_tier_with_power(family):
    eps = [4.0, 1.5, 0.6]
    fam = noise_family(family, sensitivity=1.0, delta=1e-5)
    params = [fam.param(e) for e in eps]
    out = sample_multitier(fam, params, np.zeros(N), rng=np.random.default_rng(12))
    for i, p in enumerate(params):
        dist = (lambda s: stats.laplace(scale=s)) if family == "laplace" else (lambda s: stats.norm(scale=s))
        assert stats.kstest(out[i], dist(p).cdf).pvalue > 1e-3
        assert stats.kstest(out[i], dist(p * 0.9).cdf).pvalue < 1e-4
        assert stats.kstest(out[i], dist(p * 1.1).cdf).pvalue < 1e-4
        v = fam.variance(p)
        assert abs(np.mean(out[i] ** 2) - v) < 4 * math.sqrt(np.var(out[i] ** 2) / N)


def test_multiscale_chain_matches_its_exact_pmf_and_variance():
    fam = noise_family("multiscale_geometric", sensitivity=2)
    eps = [3.0, 1.5]
    out = sample_multitier(fam, eps, np.zeros(N), rng=np.random.default_rng(13))
    support = np.arange(-30, 31)
    x = out[1].astype(int)
    assert chi2_p(x, lambda k: fam.pmf(k, 1.5), support) > 1e-3
    assert chi2_p(x, lambda k: fam.pmf(k, 1.65), support) < 1e-4
    assert chi2_p(x, lambda k: fam.pmf(k, 1.5 / 1.1), support) < 1e-4
    assert fam.variance(1.5) == pytest.approx((1 + 4) * tsg_variance(1.5))
    assert abs(np.mean(x ** 2.0) - fam.variance(1.5)) < 4 * math.sqrt(np.var(x ** 2.0) / N)


def test_gradual_closed_form_matches_simulation():
    eps = [2.0, 1.0, 0.5]
    fam = noise_family("laplace")
    out, _ = sample_gradual(fam, eps, np.zeros(N), rng=np.random.default_rng(14))
    v = gradual_variance(family_piece_variances(fam, eps))
    # pieces 1, 0.5, 0.5 → variances 2, 8, 8; tier 1: 1/(1/2+1/8+1/8) = 4/3
    assert v == pytest.approx([4 / 3, 4.0, 8.0])
    for i in range(3):
        assert abs(np.mean(out[i] ** 2) - v[i]) < 4 * math.sqrt(np.var(out[i] ** 2) / N)


def test_gradual_is_lossless_for_gaussian_noise():
    """Averaging Gaussian pieces with ρ split additively recovers σ_i exactly (a teaching point)."""
    plan = plan_central([("a", 3.0), ("b", 1.0), ("c", 0.4)], "gaussian", delta=1e-6)
    assert plan.gradual_variances() == pytest.approx(plan.variances(), rel=1e-9)


def test_equal_budgets_get_the_same_output():
    fam = noise_family("geometric")
    out = sample_multitier(fam, [1.0, 1.0, 0.5], np.zeros(1000), rng=np.random.default_rng(1))
    assert np.array_equal(out[0], out[1]) and not np.array_equal(out[1], out[2])


def test_plan_table_and_loss_summary():
    plan = plan_central({"public": 0.5, "researchers": 2.0, "agency": 8.0}, "geometric")
    assert plan.names == ["agency", "researchers", "public"]
    tab = plan.table()
    assert list(tab["ratio_multitier"]) == [1.0, 1.0, 1.0]
    assert (tab["ratio_gradual"] >= 1 - 1e-12).all() and tab["ratio_gradual"].iloc[0] > 5
    assert plan.loss_summary() == {"multitier": 8.0, "independent": 10.5, "gradual": 8.0}


def test_release_structure_and_ledger_entries():
    plan = plan_central([("a", 2.0), ("b", 0.5)], "geometric")
    mask = np.array([True, False, True])
    rel = release_central(plan, 7, rng=np.random.default_rng(0), seed=0, reveal=True, records=mask, query="n")
    assert rel.measure == "eps" and rel.truth_included
    assert list(rel.answers["tier"]) == ["a", "b"] and set(rel.answers["true"]) == {7.0}
    assert len(rel.entries) == 1 and rel.entries[0].loss.value == 2.0
    assert list(rel.loss) == [2.0, 0.0, 2.0]
    assert float(rel.answers["estimate"].iloc[0]) == int(rel.answers["estimate"].iloc[0])
    review = rel.for_review()
    assert "true" not in review.answers.columns and review.loss is None
    ind = release_central(plan, 7, rng=np.random.default_rng(0), strategy="independent")
    assert [e.loss.value for e in ind.entries] == [2.0, 0.5]
    grad = release_central(plan, 7, rng=np.random.default_rng(0), strategy="gradual")
    assert [e.loss.value for e in grad.entries] == [1.5, 0.5]


def test_gaussian_release_is_recorded_in_rho():
    plan = plan_central([("a", 2.0), ("b", 0.5)], "gaussian", delta=1e-6)
    rel = release_central(plan, 10.0, rng=np.random.default_rng(0))
    assert rel.measure == "rho" and rel.entries[0].loss.measure == "rho"
    assert rel.entries[0].loss.value == pytest.approx(plan.budgets()[0])


def test_bad_inputs_raise_actionable_errors():
    with pytest.raises(PolicyError, match="unique"):
        tiers_from([("a", 1.0), ("a", 2.0)])
    with pytest.raises(PolicyError, match="positive"):
        tiers_from([("a", -1.0)])
    with pytest.raises(PolicyError, match="no name"):
        tiers_from(pd.DataFrame({"name": [None, "b"], "eps": [1.0, 2.0]}))
    assert len(tiers_from(pd.DataFrame({"name": ["a", None], "eps": [1.0, None]}))) == 1
    with pytest.raises(PolicyError, match="at least one"):
        tiers_from([])
    with pytest.raises(ParameterError):
        plan_central([("a", 1.0)], "staircase")
    with pytest.raises(ParameterError, match="integer"):
        plan_central([("a", 1.0)], "geometric", sensitivity=2.5)
    with pytest.raises(ParameterError, match="finite"):
        release_central(plan_central([("a", 1.0)], "geometric"), math.nan, rng=np.random.default_rng(0))


def test_lattice_rounding_keeps_the_integer_sensitivity():
    """⌊q + ½⌋ moves by at most Δ when q moves by at most Δ (round-half-to-even would not: 0.5 → 0, 1.5 → 2)."""
    rng = np.random.default_rng(3)
    for delta in (1, 2, 7):
        a = np.concatenate([rng.uniform(-50, 50, 20_000), np.arange(-20, 20, 0.5)])
        step = rng.uniform(-delta, delta, a.size)
        step[: a.size // 4] = np.sign(step[: a.size // 4]) * delta  # the extreme moves
        assert np.max(np.abs(lattice_round(a + step) - lattice_round(a))) <= delta
    assert np.round(1.5) - np.round(0.5) == 2  # numpy's half-to-even rounding would double a count's sensitivity
    assert lattice_round(np.array([0.5, 1.5, 2.0, -0.5]).tolist()).tolist() == [1.0, 2.0, 2.0, 0.0]


def test_geometric_release_of_a_non_integer_answer_never_aborts_and_is_eps_dp():
    """A data-dependent abort (the sum happens not to be an integer) is gone: the release answers ⌊q + ½⌋.
    Exact output pmfs on neighbouring answers q = 0.5 and q' = 1.5 (Δ = 1): max log-ratio ≤ ε."""
    eps = 1.0
    plan = plan_central([("a", eps), ("b", 0.4)], "geometric")
    outs = {}
    for q in (0.5, 1.5, 2.0):
        rel = release_central(plan, q, rng=np.random.default_rng(0), reveal=True)
        assert np.all(rel.answers["estimate"] == np.round(rel.answers["estimate"]))
        outs[q] = rel
    assert outs[2.0].answers["true"].iloc[0] == 2.0 and outs[0.5].answers["true"].iloc[0] == 1.0
    k = np.arange(-60, 61)
    a = plan.family.param(eps)
    p0 = tsg_pmf(k - lattice_round(0.5), a)
    p1 = tsg_pmf(k - lattice_round(1.5), a)
    assert np.max(np.abs(np.log(p0) - np.log(p1))) <= eps + 1e-12
    # sums of unrounded per-record values: the same release path, no abort for any data
    df = pd.DataFrame({"v": [0.3, 0.4, 2.25]})
    q = central_query(df, "sum", measure="v", clip=5)
    rel = release_central(plan, q.value, rng=np.random.default_rng(1), records=q.mask, query=q.label)
    assert len(rel.answers) == 2
