"""LossDistribution: exact read-outs equal those of the per-record array; binned ones are bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prdp_core.core.distribution import LossDistribution, log_edges
from prdp_core.core.errors import ParameterError
from prdp_core.core.loss_profile import LossProfile, ecdf
from prdp_core.engines.memory import distribution_of


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 4.5, 12.0, 1e6]), min_size=1, max_size=200),
       st.floats(0, 1))
def test_exact_read_outs_equal_the_arrays(values, q):
    v = np.array(values)
    d = LossDistribution.from_values(v, base=0.5)
    p = LossProfile(v, base=0.5)
    assert d.n == p.n and d.quantile(q) == pytest.approx(float(np.quantile(v, q)), rel=0, abs=0)
    x, y = d.ecdf()
    x2, y2 = ecdf(v)
    assert np.array_equal(x, x2) and np.allclose(y, y2)
    assert d.share_above() == p.share_above() and d.count_above(4.0) == p.count_above(4.0)
    assert d.plain_language() == p.plain_language()
    s, t = d.summary(), p.summary()
    assert {k: s[k] for k in s if k != "mean"} == pytest.approx({k: t[k] for k in t if k != "mean"})


def test_from_counts_merges_and_drops_zero_counts():
    d = LossDistribution.from_counts([2.0, 1.0, 2.0, 5.0], [3, 1, 2, 0])
    assert d.values.tolist() == [1.0, 2.0] and d.counts.tolist() == [1, 5] and d.total == 11.0
    m = d.merge(LossDistribution.from_values([1.0, 7.0]))
    assert m.values.tolist() == [1.0, 2.0, 7.0] and m.counts.tolist() == [2, 5, 1]
    with pytest.raises(ParameterError):
        LossDistribution(np.array([2.0, 1.0]), np.array([1, 1]))
    with pytest.raises(ParameterError):
        LossDistribution.from_values([]).quantile(0.5)


def test_binned_read_outs_are_upper_bounds():
    rng = np.random.default_rng(0)
    v = rng.lognormal(0, 3, 50_000)
    edges = log_edges(float(v.min()), float(v.max()), 100)
    counts = np.bincount(np.clip(np.searchsorted(edges, v, side="left") - 1, 0, 99), minlength=100)
    d = LossDistribution.binned(edges, counts, total=float(v.sum()))
    assert not d.exact and d.n == v.size and d.mean == pytest.approx(v.mean())
    for q in (0.1, 0.5, 0.9, 0.999):
        assert d.quantile(q) >= np.quantile(v, q)
        assert d.quantile(q) <= np.quantile(v, q) * (edges[1] / edges[0]) * (1 + 1e-12)
    for level in (0.01, 1.0, 100.0):
        assert d.share_above(level) >= np.mean(v > level)
    assert "upper bound" in d.plain_language(1.0)


def test_distribution_of_bins_beyond_the_exact_limit(monkeypatch):
    import prdp_core.engines.memory as M

    monkeypatch.setattr(M, "MAX_EXACT_VALUES", 10)
    v = np.concatenate(([0.0] * 5, np.linspace(1, 100, 1000)))
    d = distribution_of(v)
    assert not d.exact and d.n == v.size and d.edges[0] == 0.0 and d.max == pytest.approx(100.0)
