"""The law of a forecast error: a sum of Laplace variables."""

from __future__ import annotations

import numpy as np
import pytest

from prdp_core.mechanisms.prdp.error_law import ErrorLaw


def test_error_law_of_a_sum_of_laplace_variables():
    rng = np.random.default_rng(0)
    scales = np.array([3.0, 1.5, 0.4])
    x = (rng.laplace(0, 1, (400_000, 3)) * scales).sum(axis=1)
    law = ErrorLaw.laplace([1.0], [-2.0], [10.0], scales[None, :])
    for r in (0.05, 0.2, 0.5, 1.0):
        assert law.cdf(r)[0] == pytest.approx(np.mean(np.abs(x - 2.0) <= 10 * r), abs=0.003)
    assert law.mean() == pytest.approx(np.mean(np.abs(x - 2.0)) / 10, rel=0.01)
    assert law.quantile(0.5) == pytest.approx(np.median(np.abs(x - 2.0)) / 10, rel=0.01)
    normal = ErrorLaw.normal([0.3, 0.7], [0.0, 5.0], [10.0, 10.0], [1.0, 2.0])
    y = np.where(rng.random(400_000) < 0.3, rng.normal(0, 1, 400_000), 5 + rng.normal(0, 2, 400_000))
    assert normal.failure(0.5) == pytest.approx(np.mean(np.abs(y) >= 5), abs=0.003)
    assert normal.mean() == pytest.approx(np.mean(np.abs(y)) / 10, rel=0.01)
