"""Noise at the claimed scale, with power against ±10% (both directions), for the continuous
mechanisms whose scale is not already checked elsewhere:

* the clipped-sum baselines (Laplace b = Δ/ε, Gaussian σ = Δ/√(2ρ)), through the primitives;
* the top-coded SUM of a unit-splitting workload (σ = c/√(2ρ)), through ``release``;
* the Sec. 5.2 PrDP sum extension (Laplace b_i per domain), through its trial function;
* round II of the PrLDP framework (one party: Laplace(2τ/ε_τ)), through its trial function;
* partition selection's keep probability Φ̄((τ − pieces)/σ) (χ² with power against σ ± 10%).
* the answer of Algorithm 2's count and distinct count (``LaplaceCount``, ``DistinctCount``:
  Laplace(1/ε_M) on the kept domains) and the naive baselines at ε̌ (central and local).

Elsewhere: tests/unit/test_noise.py (samplers), unit_splitting/test_release.py (split SUM and
COUNT), prdp/test_answers.py (clipped sum of the framework), prdp/test_local.py (sums of Laplace),
personalized/test_*.py, multitier/test_central.py, granular/test_histogram.py, test_secure.py (exact
samplers), tests/audit/test_prdp_audit.py (Algorithm 1).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Query, SplittingPolicy, Workload
from prdp_core.mechanisms import baselines as BL
from prdp_core.mechanisms.prdp import local as prldp
from prdp_core.mechanisms.prdp.budget import constant, inverse, step_table
from prdp_core.mechanisms.prdp.central import framework_trials, naive_trials
from prdp_core.mechanisms.prdp.extension import extension_stats, extension_trials
from prdp_core.mechanisms.prdp.queries import prepare
from prdp_core.mechanisms.unit_splitting import PartitionSelection, release


def _power(x: np.ndarray, dist) -> None:
    """Accept the claimed scale, reject 0.9× and 1.1×."""
    assert stats.kstest(x, dist(1.0).cdf).pvalue > 1e-3
    assert stats.kstest(x, dist(0.9).cdf).pvalue < 1e-4
    assert stats.kstest(x, dist(1.1).cdf).pvalue < 1e-4


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_baseline_clipped_sum_scale_with_power(noise):
    v = np.array([3.0, 70.0, 12.0, 49.0, -8.0])
    lo, hi, budget = -10.0, 50.0, 0.7
    truth = float(np.clip(v, lo, hi).sum())
    rng = np.random.default_rng(11)
    if noise == "laplace":
        x = np.array([BL.clipped_sum_laplace(v, lo, hi, budget, rng=rng) for _ in range(30_000)]) - truth
        b = 50.0 / budget
        _power(x, lambda f: stats.laplace(scale=f * b))
    else:
        x = np.array([BL.clipped_sum_gaussian(v, lo, hi, budget, rng=rng) for _ in range(30_000)]) - truth
        s = 50.0 / math.sqrt(2 * budget)
        _power(x, lambda f: stats.norm(scale=f * s))
    assert BL.ClippedSum("v", budget, upper=hi, lower=lo, noise=noise).scale == pytest.approx(
        50.0 / budget if noise == "laplace" else 50.0 / math.sqrt(2 * budget))


def test_topcoded_sum_of_a_workload_scale_with_power():
    rng = np.random.default_rng(12)
    g = np.repeat(np.arange(20_000), 2)
    df = pd.DataFrame({"id": np.arange(g.size), "g": g, "v": rng.integers(0, 300, g.size).astype(float)})
    q = Query("sum", "v", rho=0.4, group_by=("g",), split=False, clamp=120.0)
    pol = SplittingPolicy(as_thresholds({"v": 40.0}), Workload((q,)))
    rel = release(df, pol, rng=np.random.default_rng(13), reveal=True, owner_realized=False)
    s = 120.0 / math.sqrt(0.8)
    assert np.allclose(rel.answers["sigma"], s) and np.allclose(rel.loss, 0.4)
    _power(rel.answers["error"].to_numpy(), lambda f: stats.norm(scale=f * s))


def test_sum_extension_noise_per_domain_scale_with_power():
    bud = inverse(100.0, "v", U=1000.0, eps_max=8.0)
    st = extension_stats(pd.DataFrame({"v": [1.0, 3.0, 30.0, 300.0, 900.0]}), bud)
    _, sel = extension_trials(st, bud.domains(), beta=0.1, rng=np.random.default_rng(14), trials=30_000)
    for i in np.flatnonzero(st.scales > 0)[:3]:
        x = sel.noisy[:, i] - st.sums[i]
        _power(x, lambda f, i=i: stats.laplace(scale=f * st.scales[i]))


def test_prldp_round_two_scale_with_power():
    bud = constant(0.8, U=500.0)
    d = prldp._LocalData(pd.DataFrame({"v": [120.0]}), bud, "sum:v")
    est, sel, taus = prldp.framework_trials(d, beta=0.1, rng=np.random.default_rng(15), trials=30_000)
    assert np.all(sel.ell == 1) and np.all(taus == taus[0])
    b = 2 * taus[0] / 0.8  # one party: min(v, τ) + Laplace(2τ/ε_τ)
    _power(est - min(120.0, taus[0]), lambda f: stats.laplace(scale=f * b))


def test_partition_selection_keep_rate_with_power():
    ps = PartitionSelection(rho=0.1, delta=1e-3)
    pieces = np.round(ps.tau + np.array([-2.0, -1.0, 0.0, 1.0, 2.0]) * ps.sigma)
    trials = 40_000
    kept = ps.select(np.tile(pieces, (trials, 1)), np.random.default_rng(16)).sum(axis=0)

    def p_value(sig):
        p = stats.norm.sf((ps.tau - pieces) / sig)
        obs = np.concatenate((kept, trials - kept))
        exp = np.concatenate((p, 1 - p)) * trials
        return stats.chisquare(obs, exp, ddof=0).pvalue

    assert p_value(ps.sigma) > 1e-3
    assert p_value(0.9 * ps.sigma) < 1e-4
    assert p_value(1.1 * ps.sigma) < 1e-4


def _retained(cnt: np.ndarray, ell: np.ndarray) -> np.ndarray:
    """The true answer of a count-like M on the domains ℓ..L it keeps (per trial)."""
    return np.cumsum(np.asarray(cnt, dtype=float)[::-1])[::-1][np.asarray(ell) - 1]


_FW_BUDGET = step_table("v", [10.0, 100.0], [2.0, 1.0, 0.5], U=1000.0)
_FW_TABLE = pd.DataFrame({"v": np.repeat([5.0, 50.0, 500.0, 7.0, 70.0], [40, 30, 20, 5, 5])})


@pytest.mark.parametrize("query", ["count", "distinct:v"])
def test_framework_count_and_distinct_answer_noise_scale_with_power(query):
    """M of Algorithm 2 for count and distinct count (``LaplaceCount``, ``DistinctCount``): the answer
    is the retained domains' true value + Laplace(1/ε_M), ε_M = ε_τ/2 — standardised by the ε_M of
    each trial, the noise is Laplace(1) and not 0.9 or 1.1."""
    p = prepare(_FW_TABLE, _FW_BUDGET, query)
    est, sel, eps_m, _ = framework_trials(p, beta=0.1, rng=np.random.default_rng(17), trials=30_000)
    assert len(np.unique(sel.ell)) >= 1 and np.all(eps_m == p.domains.lo[sel.ell - 1] / 2.0)
    x = (est - _retained(p.stats["cnt"], sel.ell)) * eps_m
    _power(x, lambda f: stats.laplace(scale=f))


@pytest.mark.parametrize("query", ["count", "distinct:v"])
def test_prdp_naive_noise_at_the_global_minimum_scale_with_power(query):
    """The straw man of Sec. 4.1 runs M on every record at ε̌: Laplace(1/ε̌) around the whole data's
    count (its sum runs ``ClippedSum``, audited in tests/unit/prdp/test_answers.py)."""
    p = prepare(_FW_TABLE, _FW_BUDGET, query)
    est, _ = naive_trials(p, beta=0.1, rng=np.random.default_rng(18), trials=30_000)
    x = (est - _retained(p.stats["cnt"], np.ones(est.size, dtype=int))) * _FW_BUDGET.eps_min
    _power(x, lambda f: stats.laplace(scale=f))


def test_prldp_naive_scale_with_power():
    """Local baseline: one party randomises min(v, U) with Laplace(U/ε̌)."""
    bud = constant(0.8, U=500.0)
    d = prldp._LocalData(pd.DataFrame({"v": [120.0]}), bud, "sum:v")
    est = prldp.naive_trials(d, rng=np.random.default_rng(19), trials=30_000)
    _power(est - 120.0, lambda f: stats.laplace(scale=f * 500.0 / 0.8))
    dc = prldp._LocalData(pd.DataFrame({"v": [120.0]}), bud, "count")
    est = prldp.naive_trials(dc, rng=np.random.default_rng(20), trials=30_000)
    _power(est - 1.0, lambda f: stats.laplace(scale=f / 0.8))
