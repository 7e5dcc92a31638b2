"""PE, the personalized exponential mechanism: d_f against brute force (T6), range compression (T8), its sampler."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from prdp_core.core import noise
from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.personalized.blackbox import em_pieces
from prdp_core.mechanisms.personalized.mechanisms import PE
from prdp_core.mechanisms.personalized.pe import (
    d_count,
    d_median,
    d_min,
    k_smallest_prefix_sums,
    pe_distribution,
    pe_draw,
)
from prdp_core.mechanisms.personalized.ranges import expand_pieces

from .helpers import chi2_p, piece_draws


def _brute_d(kind, vals, phi, dom):
    vals = np.asarray(vals, dtype=float)
    n = vals.size
    grid = np.array(list(itertools.product(list(dom), repeat=n)), dtype=float)
    if kind == "median":
        f = np.sort(grid, axis=1)[:, n // 2]
    elif kind == "min":
        f = grid.min(axis=1)
    else:
        f = grid.sum(axis=1)
    cost = ((grid != vals[None, :]) * np.asarray(phi)[None, :]).sum(axis=1)
    out = {}
    for fv in np.unique(f):
        out[fv] = -float(cost[f == fv].min())
    return out


def test_paper_worked_example_values():
    D = np.array([3.0, 5, 6, 9, 11])
    Phi = np.array([0.1, 1, 1, 0.5, 1])
    d = d_median(D, Phi, np.array([3, 4, 5, 11, 1, 2, 6, 7, 10, 12]))
    np.testing.assert_allclose(d, [-1.5, -1.5, -0.5, -0.6, -1.6, -1.6, 0, -0.1, -0.6, -1.6], atol=1e-12)
    # the paper's uniform-score example: s(D, 2) = s(D, 4) = s(D, 5) = −1 and s(D, 11) = −4 for min
    dm = d_min(D, np.ones(5), np.array([2, 4, 5, 11, 3]))
    np.testing.assert_allclose(dm, [-1, -1, -1, -4, 0])
    # median: s(D,5) = s(D,9) = −1, s(D,3) = s(D,10) = s(D,11) = −2
    np.testing.assert_allclose(d_median(D, np.ones(5), np.array([5, 9, 3, 10, 11])), [-1, -1, -2, -2, -2])


@pytest.mark.parametrize("kind", ["median", "min", "count"])
def test_fast_scores_match_brute_force(kind):
    rng = np.random.default_rng({"median": 1, "min": 2, "count": 3}[kind])
    for trial in range(40):
        n = int(rng.integers(1, 6))
        phi = np.round(rng.uniform(0.05, 1.0, n), 2)
        if trial % 4 == 0:
            phi = rng.choice([0.1, 0.5], n)  # ties in Φ
        if kind == "count":
            bits = rng.integers(0, 2, n).astype(float)
            brute = _brute_d("count", bits, phi, (0, 1))
            np.testing.assert_allclose(d_count(bits, phi), [brute[x] for x in range(n + 1)], atol=1e-12)
            continue
        vals = rng.integers(1, 8, n).astype(float)
        if trial % 5 == 0:
            vals[:] = vals[0]  # ties in values
        brute = _brute_d(kind, vals, phi, range(1, 8))
        r = np.arange(1, 8)
        fast = d_median(vals, phi, r) if kind == "median" else d_min(vals, phi, r)
        np.testing.assert_allclose(fast, [brute[x] for x in r], atol=1e-12)
        # range compression gives the same pmf as the full grid (T8)
        pcs, d, probs = pe_distribution(kind, vals, phi, lo=1, hi=7, integer=True)
        rr, pmf = expand_pieces(pcs, probs)
        full = np.exp(np.array([brute[x] for x in rr]) / 2)
        np.testing.assert_allclose(pmf, full / full.sum(), atol=1e-12)


def test_uniform_spec_pe_is_the_exponential_mechanism():
    vals = np.array([2.0, 3, 5, 6, 8])
    eps = 0.7
    phi = np.full(5, eps)
    pcs, d, probs = pe_distribution("median", vals, phi, lo=1, hi=9, integer=True)
    r, pmf = expand_pieces(pcs, probs)
    scores = np.array([_brute_d("median", vals, np.ones(5), range(1, 10))[x] for x in r])
    np.testing.assert_allclose(pmf, noise.exponential_mechanism_probs(scores, eps, 1.0), atol=1e-12)
    # and PE with uniform Φ is the black box with the paper's change-count score
    pcs2, probs2 = em_pieces("median", vals, eps, 1, 9, score="changes", integer=True)
    np.testing.assert_allclose(expand_pieces(pcs2, probs2)[1], pmf, atol=1e-12)


def test_k_smallest_prefix_sums_matches_naive():
    rng = np.random.default_rng(4)
    for levels in (1, 3, 17, None):
        n = 60
        phi = rng.choice(rng.uniform(0.01, 1, levels), n) if levels else rng.uniform(0.01, 1, n)
        p = rng.integers(0, n + 1, 200)
        k = (rng.random(200) * (p + 1)).astype(int)
        k = np.minimum(k, p)
        naive = np.array([np.sort(phi[:pp])[:kk].sum() for pp, kk in zip(p, k)])
        np.testing.assert_allclose(k_smallest_prefix_sums(phi, p, k), naive, atol=1e-12)
    with pytest.raises(ParameterError):
        k_smallest_prefix_sums(np.ones(3), np.array([2]), np.array([3]))


def test_pe_continuous_range_and_even_n():
    vals = np.array([1.5, 2.5, 2.5, 7.25])
    phi = np.array([0.2, 0.4, 0.3, 1.0])
    pcs, d, probs = pe_distribution("median", vals, phi, lo=0.0, hi=10.0)
    assert not pcs.integer
    assert probs.sum() == pytest.approx(1.0)
    assert np.all(pcs.size > 0) and not pcs.is_point.any()
    # even n: the upper median (rank 2, 0-indexed) = 2.5 is priced 0 but is a single point of a continuous range;
    # the best gap is (2.5, 7.25): one tuple below must move up, the cheapest is Φ = 0.2
    assert d_median(vals, phi, np.array([2.5]))[0] == 0
    assert d.max() == pytest.approx(-0.2)
    assert pcs.start[np.argmax(d)] == 2.5
    # r = 2.0 needs two of the three tuples above it to move down: 0.3 + 0.4
    assert d_median(vals, phi, np.array([2.0]))[0] == pytest.approx(-0.7)


def test_pe_needs_a_supported_query_and_data():
    with pytest.raises(ParameterError):
        pe_distribution("sum", np.ones(3), np.ones(3))
    with pytest.raises(ParameterError):
        pe_distribution("median", np.array([]), np.array([]), lo=0, hi=5)
    with pytest.raises(ParameterError):
        PE().check_kind("mean")


def test_pe_sampler_matches_pmf_with_power():
    vals = np.array([2.0, 3, 5, 6, 7])
    phi = np.array([0.1, 1, 0.3, 0.5, 1])
    pcs, d, probs = pe_distribution("median", vals, phi, lo=1, hi=9, integer=True)
    r, pmf = expand_pieces(pcs, probs)
    rng = np.random.default_rng(12)
    direct = [pe_draw("median", vals, phi, rng=rng, lo=1, hi=9, integer=True) for _ in range(200)]
    np.testing.assert_array_equal(direct, piece_draws(pcs, d / 2.0, 200, 12))
    draws = piece_draws(pcs, d / 2.0, 8000, 13)
    assert chi2_p(draws, r, pmf) > 1e-3
    for f in (0.5, 2.0):
        _, _, wrong = pe_distribution("median", vals, phi * f, lo=1, hi=9, integer=True)
        assert chi2_p(draws, r, expand_pieces(pcs, wrong)[1]) < 1e-4


def test_small_eps_numerics_are_stable():
    vals = np.arange(1.0, 1002.0)
    phi = np.full(1001, 0.01)
    pcs, d, probs = pe_distribution("median", vals, phi, lo=1, hi=100_000)
    assert np.isfinite(probs).all() and probs.sum() == pytest.approx(1.0)
    pcs, probs = em_pieces("median", vals, 0.01, 1, 100_000)
    assert np.isfinite(probs).all()
