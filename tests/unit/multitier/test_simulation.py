"""Exact simulation of n users of local multi-tier release: moments, uniform orderings, coupled tiers, epochs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from prdp_core.mechanisms.multitier.local import plan_local
from prdp_core.mechanisms.multitier.simulation import (
    epoch_counts,
    iid_subset_counts,
    multitier_subset_counts,
    nested_prefix_counts,
)
from prdp_core.mechanisms.multitier.subset import joint_exact, subset_signal, subsets_of_size


def test_iid_subset_counts_moments():
    rng = np.random.default_rng(1)
    n, k, d = 500, 3, 9
    c = iid_subset_counts(np.full(3000, n), k, d, rng=rng)  # 3000 independent groups in one call
    assert np.all(c.sum(axis=1) == n * k)
    p = k / d
    assert np.abs(c.mean(0) - n * p).max() < 5 * math.sqrt(n * p * (1 - p) / 3000)
    assert c.var(0).mean() == pytest.approx(n * p * (1 - p), rel=0.05)
    cov = np.cov(c[:, 0], c[:, 1])[0, 1]  # exact: −n k(d−k)/(d²(d−1))
    assert cov == pytest.approx(-n * k * (d - k) / (d * d * (d - 1)), abs=6 * n * p * (1 - p) / math.sqrt(3000))


def test_nested_prefixes_are_uniform_orderings():
    """A single epoch over sizes (1, 2, 3) of d = 4 with x = 2 first: every (a, b) order equally likely."""
    rng = np.random.default_rng(2)
    seen = {}
    for _ in range(1500):
        C = nested_prefix_counts(np.array([0]), np.array([2]), np.array([2]), np.array([1, 2, 3]), 4, rng=rng)
        assert C[0].tolist() == [0, 0, 1, 0]
        a = int(np.flatnonzero(C[1] - C[0])[0])
        b = int(np.flatnonzero(C[2] - C[1])[0])
        seen[(a, b)] = seen.get((a, b), 0) + 1
    assert len(seen) == 6 and all(a != 2 and b != 2 and a != b for a, b in seen)
    assert stats.chisquare(list(seen.values())).pvalue > 1e-3


def _plan5():
    return plan_local([("a", 2.0), ("b", 0.9), ("c", 0.3)], 5)


def test_simulated_marginals_and_variances_are_exact():
    plan = _plan5()
    uniq, sizes, keep = plan.chain()
    rng = np.random.default_rng(4)
    xc = np.array([150, 40, 0, 10, 0])
    n = int(xc.sum())
    C = np.array([multitier_subset_counts(sizes, keep, xc, rng=rng) for _ in range(800)])
    for j, ti in enumerate(uniq):
        t, f = subset_signal(plan.templates[ti].rho, plan.templates[ti].k, 5)
        mean = xc * t + (n - xc) * f
        var = xc * t * (1 - t) + (n - xc) * f * (1 - f)
        z = (C[:, j].mean(0) - mean) / np.sqrt(var / C.shape[0])
        assert np.abs(z).max() < 4.5
        assert (C[:, j].var(0).sum() / var.sum()) == pytest.approx(1.0, abs=0.08)


def test_simulated_tiers_are_coupled_as_the_chain_not_independent():
    """Cross-tier covariance of the aggregate equals n·Cov from the exact joint of the chain."""
    plan = _plan5()
    uniq, sizes, keep = plan.chain()
    d, n, reps = 5, 300, 1200
    xc = np.array([n, 0, 0, 0, 0])
    rng = np.random.default_rng(6)
    C = np.array([multitier_subset_counts(sizes, keep, xc, rng=rng) for _ in range(reps)])
    for ia, ib in ((0, 1), (0, 2)):
        a, b = uniq[ia], uniq[ib]
        J = joint_exact(plan.templates, [a, b], d)[0]  # joint of (S_a, S_b) for x = 0
        A = subsets_of_size(d, plan.templates[a].k).astype(float)
        Bm = subsets_of_size(d, plan.templates[b].k).astype(float)
        pa, pb = J.sum(1) @ A, J.sum(0) @ Bm
        exact = n * (A.T @ J @ Bm - np.outer(pa, pb))
        emp = np.array([[np.cov(C[:, ia, i], C[:, ib, j])[0, 1] for j in range(d)] for i in range(d)])
        se = np.sqrt(np.outer(C[:, ia].var(0), C[:, ib].var(0)) / reps) + 1e-9
        assert np.abs((emp - exact) / se).max() < 5
        # independent tiers would give zero covariance: the coupling is clearly detected
        assert exact[0, 0] > 5 * se[0, 0] and emp[0, 0] > 4 * se[0, 0]


def test_epoch_counts_conserve_users():
    rng = np.random.default_rng(9)
    xc = np.array([100, 0, 7, 3000])
    first, fresh = epoch_counts([0.5, 0.9, 0.2, 1.0], xc, rng=rng)
    assert first.shape == (4, 4) and fresh.shape == (4, 4)
    # every user has exactly one epoch covering the last template
    assert first[:, 3].sum() + fresh[:, 3].sum() == xc.sum()
    assert np.all(np.triu(fresh) == fresh)
