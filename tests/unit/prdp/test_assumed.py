"""The assumed distributions of the measure used by the forecast."""

from __future__ import annotations

import numpy as np
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.prdp.assumed import AssumedData
from prdp_core.mechanisms.prdp.experiments import normal_balances

NORMAL = AssumedData.normal(5e4, 5e4)


def test_assumed_distributions():
    v, m = NORMAL.points(1e12)
    assert m.sum() == pytest.approx(1.0)
    sample = normal_balances(400_000, 5e4, 5e4, rng=np.random.default_rng(1))
    assert float(np.dot(v, m)) == pytest.approx(sample.mean(), rel=0.005)
    assert float(np.dot(v * v, m)) == pytest.approx(np.mean(sample ** 2), rel=0.01)
    ln = AssumedData.lognormal(1000.0, 1.0)
    assert float(ln.quantile(np.array([0.5]))[0]) == pytest.approx(1000.0)
    q = AssumedData.from_quantiles([0, 0.5, 1], [0, 10, 30])
    assert q.quantile(np.array([0.25, 0.75])).tolist() == [5.0, 20.0]
    assert np.max(q.points(12.0)[0]) == 12.0  # capped at U
    assert "Normal" in NORMAL.describe() and AssumedData(**{**q.to_dict(), "probs": tuple(q.probs),
                                                               "values": tuple(q.values)}) == q
    for bad in (lambda: AssumedData.normal(1, 0), lambda: AssumedData.lognormal(-1, 1),
                lambda: AssumedData.from_quantiles([0.1, 1], [0, 1]), lambda: AssumedData("pareto", 1, 1),
                lambda: AssumedData.from_quantiles([0, 1], [5, 1])):
        with pytest.raises(ParameterError):
            bad()
