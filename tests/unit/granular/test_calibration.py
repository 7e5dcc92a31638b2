"""Granular DP: the exact accountant of PrivHeavyHitter and the calibration of the Theorem 15 histogram."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.granular.calibration import (
    _h,
    calibrate_heavy_hitter_histogram,
    calibration_table,
    hh_epsilon_exact,
    hh_epsilon_lemma28,
    hh_levels,
)

# ---------------------------------------------------------------------------
# The heavy-hitter accountant (Algorithm 2)
# ---------------------------------------------------------------------------


def test_exact_accountant_values_of_the_notes():
    for lam, target in ((1, 2.49), (3, 2.75), (8, 2.89), (20, 2.95)):
        assert lam * hh_epsilon_exact(lam, lam * math.log(1600), 6) == pytest.approx(target, abs=5e-3)
    assert hh_epsilon_exact(3.0, 3 * math.log(1600), 6) == pytest.approx(0.9162, abs=5e-4)
    for lam in (0.7, 2.0, 9.0):
        assert hh_epsilon_exact(lam, 10 * lam, 1) == pytest.approx(2 / lam)
        assert hh_epsilon_exact(lam, 10 * lam, 2) == pytest.approx(2 / lam + math.log(2 - math.exp(-1 / lam)),
                                                                       rel=1e-9)


def test_exact_accountant_below_lemma28_on_a_grid():
    for lam in (0.5, 1, 3, 10, 50):
        for ratio in (1.0, 2.0, 5.0, 10.0):
            mu = max(lam * ratio, 1.0)
            for L in (1, 2, 3, 6, 12):
                ex = hh_epsilon_exact(lam, mu, L)
                assert ex <= hh_epsilon_lemma28(lam, mu) + 1e-12
                assert ex >= 2 / lam - 1e-12
    # non-decreasing in the number of levels
    vals = [hh_epsilon_exact(2.0, 6.0, L) for L in range(1, 9)]
    assert all(b >= a - 1e-12 for a, b in zip(vals, vals[1:]))


@given(st.floats(0.5, 20), st.floats(1.0, 10.0), st.lists(st.floats(0, 30), min_size=1, max_size=6),
       st.floats(-40, 10))
def test_uneven_margins_never_beat_the_accountant(lam, ratio, extra_gaps, start):
    """Counts shrink along the tree, so margins fall by ≥ µ per level; the accountant takes the
    supremum over evenly spaced margins — any larger gaps must not give more."""
    mu = max(ratio * lam, 1.0)
    margins = start + np.cumsum([0.0] + [mu + g for g in extra_gaps])
    total = float(np.sum(_h(margins, lam, mu)))
    assert 1 / lam + total <= hh_epsilon_exact(lam, mu, len(margins)) + 1e-9


def test_accountant_rejects_small_mu():
    with pytest.raises(ParameterError, match="µ"):
        hh_epsilon_exact(1.0, 0.5, 3)
    assert hh_levels(1) == 0 and hh_levels(2) == 1 and hh_levels(5) == 3 and hh_levels(256) == 8


def test_calibrations():
    ex = calibrate_heavy_hitter_histogram(1.0, 0.01, 64, method="exact")
    assert ex.lam == pytest.approx(5.70, abs=0.01)
    assert ex.mu == pytest.approx(ex.lam * math.log(1600))
    assert ex.count_scale == pytest.approx(4.0)
    assert ex.eps_heavy_hitters <= 0.5 and ex.eps_heavy_hitters == pytest.approx(0.5, abs=1e-8)
    assert ex.eps_counts == pytest.approx(0.5) and ex.eps_composed <= 1.0 + 1e-9
    assert ex.eps_joint == pytest.approx(0.8246, abs=1e-4) and ex.meets_target
    assert ex.whole_record(64) == pytest.approx(64 * ex.eps_heavy_hitters + 0.5)
    l28 = calibrate_heavy_hitter_histogram(1.0, 0.01, 64, method="lemma28")
    assert l28.lam == pytest.approx(8.0, abs=0.01) and l28.eps_heavy_hitters_lemma28 <= 0.5 + 1e-12
    assert l28.eps_heavy_hitters < 0.5 and l28.meets_target
    paper = calibrate_heavy_hitter_histogram(1.0, 0.01, 64, method="paper")
    assert paper.lam == 3.0 and paper.count_scale == 2.0
    assert paper.eps_heavy_hitters == pytest.approx(0.916, abs=1e-3)
    assert paper.eps_heavy_hitters_lemma28 == pytest.approx(1.334, abs=1e-3)
    assert paper.eps_joint == pytest.approx(1.583, abs=1e-3) and not paper.meets_target
    one = calibrate_heavy_hitter_histogram(2.0, 0.01, 1)
    assert one.levels == 0 and one.count_scale == pytest.approx(1.0) and one.delivered == 2.0
    for eps in (0.1, 0.5, 3.0, 10.0):
        c = calibrate_heavy_hitter_histogram(eps, 0.02, 16)
        assert c.eps_heavy_hitters <= 0.5 * eps * (1 + 1e-9) and c.meets_target
    t = calibration_table(1.0, 0.01, 64)
    assert list(t["meets_claim"]) == [False, True, True]
    with pytest.raises(ParameterError):
        calibrate_heavy_hitter_histogram(1.0, 0.01, 8, method="guess")
    with pytest.raises(ParameterError):
        calibrate_heavy_hitter_histogram(0, 0.01, 8)
    with pytest.raises(ParameterError):
        calibrate_heavy_hitter_histogram(1.0, 0.9, 8)
