"""Privacy audit of Algorithm 1 (PrDP count) and of Part 1 of Algorithm 2.

Analytic: each record falls in exactly one privacy-specified domain; the domain's count
has sensitivity 1 and gets Laplace noise of scale 1/(2^{i−1}ε̌), so by parallel
composition (Lemma 3.11) record r pays 2^{i(r)−1}ε̌ — checked to be ≤ E(r) for every record,
including records exactly on domain boundaries, and checked on the output density itself.

Statistical: the released noisy counts minus the true counts follow Laplace at exactly the
claimed scales — a KS test accepts the claimed scale and rejects 0.9× and 1.1× (power in
both directions), end to end through ``count`` and per domain.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import prdp_core
from prdp_core.mechanisms.prdp.budget import BudgetFunction, inverse, log_budget, parse_budget, sqrt_budget, step_table
from prdp_core.mechanisms.prdp.central import count, framework_trials
from prdp_core.mechanisms.prdp.queries import prepare
from prdp_core.mechanisms.prdp.selection import select_domain

BUDGETS = {
    "inverse": inverse(1e4, "BALANCE"),
    "example 5.2": inverse(1e4, "BALANCE", eps_max=4.096, U=1.28e9),
    "log": log_budget(500, "BALANCE", k=4),
    "sqrt": sqrt_budget(8, "BALANCE"),
    "step": step_table("BALANCE", [1e3, 1e5], [1.0, 0.25, 0.01]),
    "expression": parse_budget("where(BALANCE > 1e5, 0.002, 2 / max(log(BALANCE + 2), 1))"),
}


def _records(budget: BudgetFunction) -> pd.DataFrame:
    """Sample balances plus records sitting exactly on every domain boundary of an inverse budget."""
    base = prdp_core.data.samples.load("bank_normal_50k", n=20_000, seed=1).BALANCE.to_numpy(dtype=float)
    dp = budget.domains()
    edges = budget.upper_values(dp.lo)
    edges = edges[np.isfinite(edges) & (edges >= 0) & (edges <= budget.U)]
    v = np.concatenate((base, edges, np.nextafter(edges, 0), np.nextafter(edges, np.inf), [0.0, 1.0, budget.U]))
    return pd.DataFrame({"BALANCE": np.clip(v, 0, budget.U)})


@pytest.mark.parametrize("name", list(BUDGETS))
def test_per_domain_laplace_scales_give_each_record_at_most_its_budget(name):
    budget = BUDGETS[name]
    df = _records(budget)
    e = budget(df)
    r = count(e, eps_min=budget.eps_min, eps_max=budget.eps_max, beta=0.1, rng=np.random.default_rng(0))
    dp = budget.domains()
    scales = r.extras["scales"]
    idx = dp.index(e)
    # parallel composition: a record moves only its own domain's count, by 1 (sensitivity 1)
    loss_per_domain = 1.0 / scales
    for i in range(1, dp.L + 1):
        members = e[idx == i]
        if members.size:
            assert loss_per_domain[i - 1] <= members.min() * (1 + 1e-12), (name, i)
            assert members.max() <= dp.hi[i - 1] * (1 + 1e-12)
    np.testing.assert_allclose(r.loss, loss_per_domain[idx - 1])
    assert np.all(r.loss <= e * (1 + 1e-12))
    assert np.all(r.loss >= e / 2 * (1 - 1e-12)) or budget.eps_max / budget.eps_min < 2  # at most 2× stronger
    # Part 1 of Algorithm 2 charges half: scales 2/(2^{i−1}ε̌)
    p = prepare(df, budget, "count")
    _, sel, _, _ = framework_trials(p, beta=0.1, rng=np.random.default_rng(1))
    th_half = math.log(dp.L / 0.05) / (dp.lo / 2)
    np.testing.assert_allclose(sel.thresholds, th_half)


def test_output_density_ratio_on_neighbours_is_the_domain_budget():
    """With the noise scales the ENGINE uses (Algorithm 1's release), log p(y | D) − log p(y | D + r)
    over a grid of outputs y peaks at the loss the release charges r: 2^{i−1}ε̌ ≤ E(r) for r in domain i."""
    budget = BUDGETS["example 5.2"]
    dp = budget.domains()
    df = prdp_core.data.samples.load("bank_normal_50k", n=2_000, seed=2)
    e = budget(df)
    rel = count(e, eps_min=budget.eps_min, eps_max=budget.eps_max, beta=0.1, rng=np.random.default_rng(0))
    scales = np.asarray(rel.extras["scales"], dtype=float)
    idx = dp.index(e)
    counts = np.bincount(idx, minlength=dp.L + 1)[1:].astype(float)
    for i in sorted(set(idx.tolist()) | {1, dp.L}):
        b = scales[i - 1]
        y = counts[i - 1] + np.linspace(-30 * b, 30 * b, 20_001)
        lr = stats.laplace.logpdf(y, counts[i - 1], b) - stats.laplace.logpdf(y, counts[i - 1] + 1, b)
        worst = float(np.max(np.abs(lr)))
        assert worst == pytest.approx(dp.lo[i - 1], rel=1e-9)
        # the charged loss of every record of domain i covers it, and stays within its requirement
        members = idx == i
        if members.any():
            assert np.all(rel.loss[members] >= worst * (1 - 1e-9))
            assert np.all(rel.loss[members] <= e[members] * (1 + 1e-9))


def _standardised_residuals(n_runs: int) -> np.ndarray:
    df = prdp_core.data.samples.load("bank_normal_50k", n=2_000, seed=2)
    budget = BUDGETS["example 5.2"]
    e = budget(df)
    dp = budget.domains()
    true = np.bincount(dp.index(e), minlength=dp.L + 1)[1:]
    rng = np.random.default_rng(3)
    out = []
    for _ in range(n_runs):
        r = count(e, eps_min=budget.eps_min, eps_max=budget.eps_max, beta=0.1, rng=rng)
        out.append((r.extras["noisy_counts"] - true) / r.extras["scales"])
    return np.concatenate(out)


def test_count_noise_has_the_claimed_scale_end_to_end_with_power():
    z = _standardised_residuals(1_500)  # 1,500 runs × 19 domains, each scaled by its claimed scale
    assert stats.kstest(z, stats.laplace(scale=1.0).cdf).pvalue > 1e-3
    assert stats.kstest(z, stats.laplace(scale=0.9).cdf).pvalue < 1e-4
    assert stats.kstest(z, stats.laplace(scale=1.1).cdf).pvalue < 1e-4


@pytest.mark.parametrize("domain", [1, 12, 19])
def test_each_domain_noise_scale_with_power(domain):
    budget = BUDGETS["example 5.2"]
    dp = budget.domains()
    true = np.zeros(dp.L)
    scales = 1.0 / dp.lo
    sel = select_domain(true, scales, dp.thresholds(0.1), rng=np.random.default_rng(domain), trials=30_000)
    x = sel.noisy[:, domain - 1]
    s = scales[domain - 1]
    assert stats.kstest(x, stats.laplace(scale=s).cdf).pvalue > 1e-3
    assert stats.kstest(x, stats.laplace(scale=0.9 * s).cdf).pvalue < 1e-4
    assert stats.kstest(x, stats.laplace(scale=1.1 * s).cdf).pvalue < 1e-4


def test_selection_rule_and_answer_follow_algorithm_1():
    """ℓ is the first domain whose noisy count reaches T_i; the answer sums domains ℓ..L."""
    true = np.array([0.0, 0.0, 5.0, 300.0, 40.0, 2.0])
    scales = np.array([8.0, 4.0, 2.0, 1.0, 0.5, 0.25])
    th = np.array([50.0, 25.0, 12.0, 6.0, 3.0, 1.5])
    sel = select_domain(true, scales, th, rng=np.random.default_rng(4), trials=5_000)
    for t in range(0, 5_000, 97):
        noisy = sel.noisy[t]
        ok = np.flatnonzero(noisy >= th)
        ell = ok[0] + 1 if ok.size else true.size
        assert sel.ell[t] == ell
        assert sel.retained_sum()[t] == pytest.approx(noisy[ell - 1:].sum())
