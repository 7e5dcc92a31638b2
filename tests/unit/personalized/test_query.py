"""The personalized DP query: validation, per-tuple inputs and the true answer."""

from __future__ import annotations

import numpy as np
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.personalized.query import PersonalizedQuery


def test_query_validation():
    with pytest.raises(ParameterError):
        PersonalizedQuery("sum", "v")
    with pytest.raises(ParameterError):
        PersonalizedQuery("median", "v", lo=5, hi=1)
    with pytest.raises(ParameterError):
        PersonalizedQuery("variance", "v")
    with pytest.raises(ParameterError):
        PersonalizedQuery("median", "v", hi=5, median_score="best")
    q = PersonalizedQuery("count", "v", cutoff=3)
    np.testing.assert_array_equal(q.prepare(np.array([1, 3, 5.0])), [0, 1, 1])
    assert PersonalizedQuery("median", "v", hi=10).truth(np.array([4.0, 1, 9, 7])) == 7  # upper median
