"""Sample's keep probability π and delivered ε (Def. 9, Thm 5; T1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from prdp_core.mechanisms.personalized.sample import sample_delivered, sample_probability


def test_pi_formula_properties():
    t = 1.0
    phi = np.array([0.01, 0.05, 0.1, 0.3, 0.7, 0.999, 1.0, 2.0])
    pi = sample_probability(phi, t)
    assert np.all((pi > 0) & (pi <= 1))
    assert np.all(np.diff(pi) >= 0)
    assert pi[-1] == 1 and pi[-2] == 1
    below = phi < t
    eff = np.log1p(pi[below] * math.expm1(t))
    np.testing.assert_allclose(eff, phi[below], atol=1e-12)
    np.testing.assert_allclose(sample_delivered(phi, t), np.minimum(phi, t))
    # the direction the paper skips: ln(1 − π + π e^{−t}) ≥ −Φ
    for ph, tt, expected in ((0.1, 1.0, -0.039459), (0.5, 0.6, -0.440097)):
        p = float(sample_probability(ph, tt))
        low = math.log(1 - p + p * math.exp(-tt))
        assert low == pytest.approx(expected, abs=1e-6)
        assert low >= -ph
    # tiny ε: no cancellation; huge ε (a mis-scaled column): no overflow
    assert float(sample_probability(1e-6, 0.01)) == pytest.approx(math.expm1(1e-6) / math.expm1(0.01), rel=1e-12)
    assert float(sample_probability(900.0, 1000.0)) == pytest.approx(math.exp(-100.0), rel=1e-12)
    assert float(sample_probability(5.0, 60_000.0)) == 0.0
