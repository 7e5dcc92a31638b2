"""Noise families of central multi-tier release: Eq. (1) weights, residual CFs, multi-scale ε-DP, calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from prdp_core.mechanisms.multitier.noise_families import (
    analytic_gaussian_delta,
    gaussian_eps_for,
    gaussian_sigma_for,
    geometric_residual_weights,
    noise_family,
    staircase_cf,
    tsg_variance,
)


@pytest.mark.parametrize("a_from,a_to,w0", [(2.0, 1.0, 0.196612), (5.0, 0.3, 0.000619), (0.8, 0.7, 0.756202)])
def test_eq1_weights_match_the_notes_and_sum_to_one(a_from, a_to, w0):
    got0, got1 = geometric_residual_weights(a_from, a_to)
    assert got0 == pytest.approx(w0, abs=1e-6)
    assert got0 + got1 == pytest.approx(1.0, abs=1e-14)
    p_i, p_j = math.exp(-a_from), math.exp(-a_to)  # the paper's printed forms
    assert got0 == pytest.approx((1 - p_j) ** 2 * p_i / ((1 - p_i) ** 2 * p_j), rel=1e-12)
    assert got1 == pytest.approx((p_j - p_i) * (1 - p_i * p_j) / ((1 - p_i) ** 2 * p_j), rel=1e-10)


def test_eq1_mixture_cf_equals_the_ratio_of_cfs():
    fam = noise_family("geometric")
    t = np.linspace(-math.pi, math.pi, 2001)
    for a, b in [(3.0, 2.0), (1.0, 0.05), (0.3, 0.2999), (12.0, 0.5)]:
        w0, w1 = geometric_residual_weights(a, b)
        assert 0.0 <= w0 <= 1.0
        mixture = w0 + w1 * fam.cf(t, b)
        assert np.max(np.abs(mixture - fam.cf(t, b) / fam.cf(t, a))) < 1e-12


def test_laplace_and_gaussian_residual_cfs():
    t = np.linspace(-40, 40, 4001)
    lap = noise_family("laplace", sensitivity=2.0)
    b1, b2 = lap.param(3.0), lap.param(1.2)
    w = (1.2 / 3.0) ** 2
    assert np.max(np.abs(w + (1 - w) * lap.cf(t, b2) - lap.cf(t, b2) / lap.cf(t, b1))) < 1e-12
    gau = noise_family("gaussian", delta=1e-6)
    s1, s2 = gau.param(2.0), gau.param(0.5)
    t = np.linspace(-0.3, 0.3, 601)
    ratio = gau.cf(t, s2) / gau.cf(t, s1)
    assert np.max(np.abs(np.exp(-0.5 * (s2 ** 2 - s1 ** 2) * t ** 2) - ratio)) < 1e-12


def test_multiscale_noise_is_eps_dp_exactly():
    """Σ ξ·TSG(ε) on a Δ-sensitive integer query: max log-ratio over shifts 1..Δ is ε (notes, §3.3),
    never exceeded and approached in the tails."""
    for sens, eps in [(3, 2.0), (4, 3.0)]:
        fam = noise_family("multiscale_geometric", sensitivity=sens)
        k = np.arange(-60, 61)
        worst = 0.0
        for s in range(1, sens + 1):
            lp0 = np.log(fam.pmf(k, eps, window=400))
            lp1 = np.log(fam.pmf(k - s, eps, window=400))
            worst = max(worst, float(np.max(np.abs(lp0 - lp1))))
        assert eps - 1e-6 < worst <= eps + 1e-9


def test_numerics_tiny_and_huge_budgets():
    w0, w1 = geometric_residual_weights(40.0, 1e-4)
    assert 0.0 <= w0 < 1e-12 and w1 == pytest.approx(1.0)
    w0, w1 = geometric_residual_weights(2e-4, 1e-4)
    assert np.isfinite(w0) and w0 + w1 == pytest.approx(1.0, abs=1e-9)
    assert np.isfinite(tsg_variance(1e-4)) and tsg_variance(1e-4) == pytest.approx(2e8, rel=1e-6)


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
        assert (dens * np.cos(t * x)).sum() * dx == pytest.approx(staircase_cf(np.array([t]), eps)[0], abs=1e-4)


def test_gaussian_calibration_is_exact():
    s = gaussian_sigma_for(1.0, 1e-5)
    assert analytic_gaussian_delta(1.0, s) == pytest.approx(1e-5, rel=1e-6)
    assert s < math.sqrt(2 * math.log(1.25 / 1e-5))  # tighter than the classical calibration
    assert gaussian_eps_for(s, 1e-5) == pytest.approx(1.0, abs=1e-8)
