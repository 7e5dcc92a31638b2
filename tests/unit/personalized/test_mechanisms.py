"""The personalized DP mechanisms: degenerate cases (T2) and the Laplace noise scale of each wrapper, with power."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from prdp_core.mechanisms.personalized.accuracy import linear_moments
from prdp_core.mechanisms.personalized.mechanisms import Minimum, Sample, Stretching, Threshold
from prdp_core.mechanisms.personalized.query import PersonalizedQuery
from prdp_core.mechanisms.personalized.sample import sample_probability
from prdp_core.mechanisms.personalized.spec import spec_from_values


def test_sample_at_min_threshold_is_minimum():
    spec = spec_from_values([0.2, 0.5, 1.0, 0.2])
    s = Sample("min")
    assert np.all(sample_probability(spec.eps, spec.threshold("min")) == 1)
    np.testing.assert_allclose(s.delivered(spec.eps, spec), Minimum().delivered(spec.eps, spec))


def test_all_equal_phi_makes_s_t_m_identical_promises():
    spec = spec_from_values(np.full(6, 0.4))
    for m in (Minimum(), Threshold("max"), Sample("max")):
        np.testing.assert_allclose(m.delivered(spec.eps, spec), 0.4)
    assert np.all(sample_probability(spec.eps, spec.max_eps) == 1)


@pytest.mark.parametrize("mech", ["minimum", "threshold", "stretching", "sample_all_kept"])
def test_laplace_noise_scale_with_power(mech):
    vals = np.array([1.0, 0, 1, 1, 0, 1, 1, 0])
    phi = np.array([0.5, 0.5, 1.0, 1.0, 2.0, 2.0, 0.5, 1.0])
    spec = spec_from_values(phi)
    q = PersonalizedQuery("count")
    m = {"minimum": Minimum(), "threshold": Threshold(1.0), "stretching": Stretching(),
         "sample_all_kept": Sample(0.5)}[mech]
    mean, _ = linear_moments(m, vals, phi, q, spec)
    eps = {"minimum": 0.5, "threshold": 1.0, "stretching": 2.0, "sample_all_kept": 0.5}[mech]
    rng = np.random.default_rng(13)
    x = np.array([m.answer(vals, phi, q, spec, rng=rng).estimate for _ in range(30_000)]) - mean
    scale = 1.0 / eps
    assert stats.kstest(x, stats.laplace(scale=scale).cdf).pvalue > 1e-3
    assert stats.kstest(x, stats.laplace(scale=scale * 0.9).cdf).pvalue < 1e-3
    assert stats.kstest(x, stats.laplace(scale=scale * 1.1).cdf).pvalue < 1e-3
