"""Noise samplers: right distribution, with power against ±10% scale (both directions)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from prdp_core.core import noise
from prdp_core.core.errors import ParameterError
from tests.laws import chi2_p

N = 40_000


def _ks_p(sample, dist):
    return stats.kstest(sample, dist.cdf).pvalue


@pytest.mark.parametrize("scale", [0.5, 3.0])
def test_laplace_scale_with_power(scale):
    x = noise.laplace(scale, N, rng=np.random.default_rng(1))
    assert _ks_p(x, stats.laplace(scale=scale)) > 1e-3
    assert _ks_p(x, stats.laplace(scale=scale * 0.9)) < 1e-4
    assert _ks_p(x, stats.laplace(scale=scale * 1.1)) < 1e-4


@pytest.mark.parametrize("sigma", [1.0, 50.0])
def test_gaussian_sigma_with_power(sigma):
    x = noise.gaussian(sigma, N, rng=np.random.default_rng(2))
    assert _ks_p(x, stats.norm(scale=sigma)) > 1e-3
    assert _ks_p(x, stats.norm(scale=sigma * 0.9)) < 1e-4
    assert _ks_p(x, stats.norm(scale=sigma * 1.1)) < 1e-4


@pytest.mark.parametrize("eps", [0.3, 1.5])
def test_two_sided_geometric_exact_pmf_with_power(eps):
    x = noise.two_sided_geometric(eps, N, rng=np.random.default_rng(3))
    support = np.arange(-40, 41)
    assert chi2_p(x, lambda k: noise.two_sided_geometric_pmf(k, eps), support) > 1e-3
    assert chi2_p(x, lambda k: noise.two_sided_geometric_pmf(k, eps * 1.1), support) < 1e-4
    assert chi2_p(x, lambda k: noise.two_sided_geometric_pmf(k, eps / 1.1), support) < 1e-4


@pytest.mark.parametrize("t", [0.8, 5.0])
def test_discrete_laplace_exact_pmf_with_power(t):
    x = noise.discrete_laplace(t, N, rng=np.random.default_rng(6))
    support = np.arange(-int(12 * t) - 2, int(12 * t) + 3)
    assert chi2_p(x, lambda k: noise.two_sided_geometric_pmf(k, 1.0 / t), support) > 1e-3
    assert chi2_p(x, lambda k: noise.two_sided_geometric_pmf(k, 1.0 / (0.9 * t)), support) < 1e-4
    assert chi2_p(x, lambda k: noise.two_sided_geometric_pmf(k, 1.0 / (1.1 * t)), support) < 1e-4


@pytest.mark.parametrize("sigma", [0.7, 4.0])
def test_discrete_gaussian_with_power(sigma):
    x = noise.discrete_gaussian(sigma, N, rng=np.random.default_rng(4))
    support = np.arange(-int(8 * sigma) - 2, int(8 * sigma) + 3)
    assert chi2_p(x, lambda k: noise.discrete_gaussian_pmf(k, sigma), support) > 1e-3
    assert chi2_p(x, lambda k: noise.discrete_gaussian_pmf(k, sigma * 0.9), support) < 1e-4
    assert chi2_p(x, lambda k: noise.discrete_gaussian_pmf(k, sigma * 1.1), support) < 1e-4


def test_exponential_mechanism_distribution():
    scores = np.array([0.0, 1.0, 3.0, 2.0])
    probs = noise.exponential_mechanism_probs(scores, eps=2.0)
    draws = noise.exponential_mechanism(scores, 2.0, rng=np.random.default_rng(5), size=N)
    obs = np.bincount(draws, minlength=4)
    assert stats.chisquare(obs, probs * N).pvalue > 1e-3
    for wrong_eps in (2.0 * 1.1, 2.0 / 1.1):  # power both ways
        wrong = noise.exponential_mechanism_probs(scores, eps=wrong_eps)
        assert stats.chisquare(obs, wrong * N).pvalue < 1e-4
    assert isinstance(noise.exponential_mechanism(scores, 1.0, rng=np.random.default_rng(0)), int)


def test_calibration_helpers_and_validation():
    assert noise.gaussian_sigma_for_rho(10.0, 0.5) == pytest.approx(10.0)
    assert noise.laplace_scale_for_eps(2.0, 0.5) == 4.0
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ParameterError):
            noise.laplace(bad, 3, rng=np.random.default_rng(0))
    with pytest.raises(ParameterError):
        noise.exponential_mechanism(np.array([]), 1.0, rng=np.random.default_rng(0))


def test_parameter_errors_are_value_errors_too():
    """Code written against numpy/scipy conventions (``except ValueError``) catches an impossible parameter."""
    with pytest.raises(ValueError, match="ε"):
        noise.exponential_mechanism(np.array([1.0, 2.0]), -1.0, rng=np.random.default_rng(0))
