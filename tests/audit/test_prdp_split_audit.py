"""Privacy audit of Algorithm 2 with another split between Part 1 and M (``eps_share`` = s,
``beta_share``): Part 1's per-domain counts carry Laplace(1/(s·2^{i−1}ε̌)) and M's count and distinct
count Laplace(1/ε_M) with ε_M ≤ (1 − s)·ε_τ — both at exactly the claimed scale (power against ±10%),
so a record of domain i pays s·2^{i−1}ε̌ + (1 − s)·ε_τ·[i ≥ ℓ] ≤ 2^{i−1}ε̌ ≤ E(r)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from prdp_core.mechanisms.prdp.budget import inverse
from prdp_core.mechanisms.prdp.central import Split, framework_trials
from prdp_core.mechanisms.prdp.queries import prepare

from .test_scale_audit import _FW_BUDGET, _FW_TABLE, _power, _retained


@pytest.mark.parametrize("share", [0.25, 0.1, 0.8])
def test_part1_counts_have_the_split_scale_with_power(share):
    p = prepare(_FW_TABLE, _FW_BUDGET, "count")
    _, sel, _, _ = framework_trials(p, beta=0.1, rng=np.random.default_rng(21), trials=30_000, eps_share=share,
                                      beta_share=0.2)
    dp = p.domains
    z = (sel.noisy - p.counts[None, :]) * (share * dp.lo)[None, :]  # standardised by the claimed scales
    _power(z.ravel(), lambda f: stats.laplace(scale=f))
    np.testing.assert_allclose(sel.thresholds, math.log(dp.L / (0.1 * 0.2)) / (share * dp.lo))


@pytest.mark.parametrize("query", ["count", "distinct:v"])
@pytest.mark.parametrize("share", [0.25, 0.7])
def test_m_answer_has_the_rest_of_the_budget_with_power(query, share):
    p = prepare(_FW_TABLE, _FW_BUDGET, query)
    est, sel, eps_m, _ = framework_trials(p, beta=0.1, rng=np.random.default_rng(22), trials=30_000,
                                            eps_share=share)
    lo = p.domains.lo[sel.ell - 1]
    assert np.all(share * lo + eps_m <= lo) and np.allclose(eps_m, (1 - share) * lo, rtol=1e-15)
    x = (est - _retained(p.stats["cnt"], sel.ell)) * eps_m
    _power(x, lambda f: stats.laplace(scale=f))


def test_charged_loss_covers_both_parts_and_stays_within_the_budget():
    """The charge of every record (sum over the two parts of the density-ratio bounds) is what the
    release reports, for every ℓ the selection can return, on records sitting on domain boundaries."""
    bud = inverse(1e4, "v")
    dp = bud.domains()
    edges = bud.upper_values(dp.lo)
    edges = edges[np.isfinite(edges) & (edges > 0)]
    t = pd.DataFrame({"v": np.concatenate((edges, np.nextafter(edges, 0), np.nextafter(edges, np.inf),
                                           np.linspace(1, 2e5, 500)))})
    e = bud(t)
    idx = dp.index(e)
    for share in (0.5, 0.3, 0.125, 0.9):
        sp = Split(dp, 0.1, share)
        for ell in range(1, dp.L + 1):
            charged = sp.per_domain(ell)[idx - 1]
            assert np.all(charged <= e), (share, ell)  # exactly, no tolerance
            part1 = share * dp.lo[idx - 1]
            part2 = np.where(idx >= ell, sp.eps_m(np.array([ell]))[0], 0.0)
            np.testing.assert_allclose(charged, part1 + part2, rtol=1e-15)
