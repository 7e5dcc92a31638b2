"""The Subset mechanism of local multi-tier release: variances, optimal k, Expansion and the corrected Rescale."""

from __future__ import annotations

import math

import numpy as np
import pytest

from prdp_core.mechanisms.multitier.subset import (
    brr_variance,
    expansion_level,
    expansion_matrix,
    grr_variance,
    optimal_k,
    rescale_keep_probability,
    rescale_level,
    subset_pmf_exact,
    subset_variance,
    subset_variance_tf,
)


@pytest.mark.parametrize("d", [3, 7, 15, 128])
def test_variance_closed_form_equals_definition(d):
    eps = np.linspace(0.02, 9, 120)
    for k in {1, 2, d // 3 or 1, max(d // 2, 1)}:
        a = subset_variance(eps, k, d)
        b = subset_variance_tf(eps, k, d)
        assert np.max(np.abs(a / b - 1)) < 1e-10


def test_grr_and_brr_variances():
    for d, e in [(10, 1.0), (128, 0.1), (4, 5.0)]:
        assert grr_variance(e, d) == pytest.approx((d - 1) * (d - 2 + 2 * math.exp(e)) / math.expm1(e) ** 2)
        assert brr_variance(e, d) == pytest.approx(d * math.exp(e / 2) / math.expm1(e / 2) ** 2)


@pytest.mark.parametrize("d", [2, 5, 8, 15, 33, 64])
def test_optimal_k_is_the_argmin(d):
    eps = np.linspace(0.01, 8, 300)
    ks = np.arange(1, max(d // 2, 1) + 1)
    brute = ks[np.argmin(subset_variance(eps[None, :], ks[:, None], d), axis=0)]
    got = optimal_k(eps, d)
    assert np.all(subset_variance(eps, got, d) <= subset_variance(eps, brute, d) * (1 + 1e-12))


def test_equal_variance_threshold_eq3():
    d = 15
    for k in range(1, 6):
        e = math.log(math.sqrt((d - k) / k * (d - k - 1) / (k + 1)))
        assert subset_variance(e, k, d) == pytest.approx(subset_variance(e, k + 1, d), rel=1e-12)
        assert optimal_k(math.log(d / k - 1), d)[0] == k  # the reference level is exactly optimal


@pytest.mark.parametrize("k,rho,target", [(1, 6.4, 3.7), (2, 3.0, 7 / 3), (3, 1.5, 1.375)])
def test_expansion_lemma_by_exact_enumeration(k, rho, target):
    d = 7
    assert expansion_level(rho, k) == pytest.approx(target)
    out = subset_pmf_exact(k, rho, d) @ expansion_matrix(k, d)
    assert np.abs(out - subset_pmf_exact(k + 1, target, d)).max() < 1e-15


def test_corrected_rescale_hits_the_target_and_stays_a_probability():
    rng = np.random.default_rng(0)
    for _ in range(400):
        d = int(rng.integers(3, 200))
        k = int(rng.integers(1, d // 2 + 1))
        rho = math.exp(rng.uniform(0.01, 8))
        rho2 = 1 + (rho - 1) * rng.uniform(0.01, 0.99)
        beta = rescale_keep_probability(rho, rho2, k, d)
        assert 0 <= beta <= 1
        assert rescale_level(beta, rho, k, d) == pytest.approx(rho2, rel=1e-11)
    # from the true value (ρ = ∞, k = 1): β = (ρ′−1)/(ρ′+d−1), i.e. GRR(ρ′)
    assert rescale_keep_probability(math.inf, 5.0, 1, 10) == pytest.approx(4 / 14)
    assert rescale_level(4 / 14, math.inf, 1, 10) == pytest.approx(5.0)


def test_worked_example_d10_naive_expansion_falls_below_the_reference():
    """§5.2: with d = 10, expanding ln 6.4 gives ln 3.7 < ln 4, the reference level of k = 2."""
    assert expansion_level(6.4, 1) == pytest.approx(3.7) and 3.7 < 10 / 2 - 1
