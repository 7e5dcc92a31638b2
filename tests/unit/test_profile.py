"""Measure profiles agree with brute-force numpy/scipy computations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import prdp_core
from prdp_core.core.errors import DataError
from prdp_core.data.profile import gini_from_lorenz, log_histogram, lorenz_curve, profile_measure

values = st.lists(st.floats(0, 1e9, allow_nan=False), min_size=1, max_size=300).map(np.array)


@given(values)
def test_profile_matches_numpy(v):
    p = profile_measure(v, "x")
    assert p.count == v.size
    assert p.min == v.min() and p.max == v.max()
    for q, got in ((0.5, p.median), (0.9, p.p90), (0.99, p.p99)):
        assert got == pytest.approx(np.quantile(v, q), rel=1e-9, abs=1e-9)
    k = max(1, int(np.ceil(0.01 * v.size)))
    if v.sum() > 0:
        assert p.top1_share == pytest.approx(np.sort(v)[-k:].sum() / v.sum(), rel=1e-9)
    if v.size >= 3 and v.std() > 1e-6 * max(1.0, abs(v.mean())):
        assert p.skewness == pytest.approx(stats.skew(v), rel=1e-6, abs=1e-6)


@given(values)
def test_lorenz_is_monotone_convex_and_ends_at_one(v):
    pop, share = lorenz_curve(v, points=51)
    assert share[0] == 0
    if v.sum() > 0:
        assert share[-1] == pytest.approx(1.0)
        assert (np.diff(share) >= -1e-12).all()
        assert (share <= pop + 1e-9).all()  # below the equality line


def test_gini_of_known_distributions():
    assert gini_from_lorenz(*lorenz_curve(np.ones(1000))) == pytest.approx(0.0, abs=1e-9)
    v = np.zeros(1000)
    v[-1] = 1
    assert gini_from_lorenz(*lorenz_curve(v, points=1001)) == pytest.approx(1.0, abs=2e-3)


def test_log_histogram_counts_everything():
    v = np.array([0, 0, 1, 2, 3, 10, 100, 1000.0])
    h = log_histogram(v, bins=5)
    assert h.zeros == 2 and h.counts.sum() == 6
    assert h.edges[0] == 1 and h.edges[-1] == 1000


def test_profile_rejects_bad_values():
    with pytest.raises(DataError):
        profile_measure(np.array([1.0, np.nan]))
    with pytest.raises(DataError):
        profile_measure(np.array([1.0, -2.0]))


def test_profile_dataset_table():
    ds = prdp_core.data.samples.load_dataset("table2_example")
    t = prdp_core.data.profile.profile_dataset(ds).table()
    assert t.loc["Employees", "max"] == 150 and t.loc["Employees", "median"] == 50
