"""The exact accountant of PrivHeavyHitter with discrete Laplace noise, and the secure calibration of Theorem 15.

A secure release (:mod:`prdp_core.core.secure`) cannot draw the continuous Laplace noise that
:mod:`.calibration` accounts for; it draws OpenDP's exact discrete Laplace K ~ DLap(λ),
P(k) ∝ e^{−|k|/λ}, on the integer counts. The accountant's argument carries over unchanged —
one changed attribute moves one string's count down and one up by 1 in the one node per level
that holds the attribute; the string whose count drops contributes a chain of "kept" factors
whose margins fall by ≥ µ per level, the other at most one factor — only the tail changes:

    ε_lists = 1/λ + sup_m Σ_{i<L} h_d(m + iµ),
    h_d(m) = log S_d(−max(m+1, −µ)) − log S_d(−max(m, −µ)),   S_d(x) = P[K > x].

The "dropped" factor stays ≤ e^{1/λ} because the pmf ratio of neighbouring integers is ≤ e^{1/λ}.
S_d is a step function (K is an integer), so the chain is piecewise constant in the margin m and
its supremum is attained on finitely many pieces: :func:`hh_epsilon_discrete` evaluates every
piece between the breakpoints (m + iµ or m + iµ + 1 an integer, or a cap kink) — exact, no grid
search. The second-stage counts DLap(b) cost 1/b per unit change exactly as Lap(b), so the whole
histogram's ε has the continuous form with this ε_lists (:func:`histogram_epsilon_discrete`).
:func:`calibrate_discrete` solves for λ as the exact calibration does. Checked against exact
enumeration of every output on 4 binary attributes (tests/audit/test_granular_discrete_audit.py).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.optimize import brentq

from ...core.errors import ParameterError
from ...core.validate import positive as _pos
from ...core.validate import whole_number as _int_param
from .calibration import HeavyHitterCalibration, calibration_inputs, hh_levels

#: Most margins the discrete accountant evaluates (ε0 below about 0.01 needs more: refused).
MAX_PIECES: int = 4_000_000


def log_tail_discrete(x: np.ndarray | float, lam: float) -> np.ndarray:
    """log P[K > x] for K ~ DLap(λ) (P(k) ∝ e^{−|k|/λ}) and real x: P[K ≥ k] with k = ⌊x⌋ + 1 is
    a^k/(1 + a) for k ≥ 1 and 1 − a^{1−k}/(1 + a) for k ≤ 0, a = e^{−1/λ}."""
    k = np.floor(np.asarray(x, dtype=float)) + 1.0
    log_a = -1.0 / lam
    l1a = math.log1p(math.exp(log_a))
    pos = k * log_a - l1a
    with np.errstate(divide="ignore"):  # the k ≥ 1 side of the other branch, discarded
        neg = np.log1p(-np.exp(np.minimum((1.0 - k) * log_a - l1a, 0.0)))
    return np.where(k >= 1, pos, neg)


def _chain_discrete(m: np.ndarray, lam: float, mu: float, levels: int) -> np.ndarray:
    out = np.zeros_like(m)
    for i in range(levels):
        x = m + i * mu
        out += log_tail_discrete(-np.maximum(x + 1.0, -mu), lam) - log_tail_discrete(-np.maximum(x, -mu), lam)
    return out


@functools.lru_cache(maxsize=512)
def _sup_chain_discrete(lam: float, mu: float, levels: int) -> float:
    """sup_m Σ_{i<L} h_d(m + iµ): every breakpoint and every piece between two breakpoints."""
    lo = -mu - 2.0 - (levels - 1) * mu        # below: every term is capped, the chain is 0
    hi = 40.0 * lam + 2.0                      # above: every term is below e^{−40}
    span = int(math.ceil(hi - lo)) + 2
    if 2 * levels * span > MAX_PIECES:
        raise ParameterError("The per-attribute ε0 is too small for the secure heavy-hitter histogram's "
                             "accountant.", hint="Use a larger ε0 (above about 0.01) or a seeded teaching run.")
    ints = np.arange(math.floor(lo), math.ceil(hi) + 1, dtype=float)
    pts = [np.array([-mu - 1.0, -mu]) - i * mu for i in range(levels)]
    pts += [ints - i * mu - d for i in range(levels) for d in (0.0, 1.0)]
    b = np.unique(np.concatenate(pts))
    b = b[(b >= lo) & (b <= hi)]
    cand = np.concatenate((b, 0.5 * (b[1:] + b[:-1])))
    return max(float(_chain_discrete(cand, lam, mu, levels).max()), 0.0)


def hh_epsilon_discrete(lam: float, mu: float, levels: int) -> float:
    """Exact worst-case per-attribute ε of PrivHeavyHitter with DLap(λ) noise on the integer counts
    (``lam`` — scale λ, ``mu`` — threshold step µ ≥ 1, ``levels`` — L = ⌈log2 d⌉)."""
    lam, mu = _pos("λ", lam), _pos("µ", mu)
    levels = _int_param("The number of levels", levels, 0, 64)
    if levels == 0:
        return 0.0
    if mu < 1.0:
        raise ParameterError(f"The threshold step µ must be at least 1 (got {mu:.3g}).")
    return 1.0 / lam + _sup_chain_discrete(lam, mu, levels)


def histogram_epsilon_discrete(lam: float, mu: float, levels: int, count_scale: float) -> float:
    """Exact worst-case per-attribute ε of the Theorem 15 histogram with discrete Laplace lists and
    counts: sup chain + 1/b + max(1/λ, 1/b) (2/b with one attribute)."""
    b = _pos("The count scale b", count_scale)
    if levels == 0:
        return 2.0 / b
    return hh_epsilon_discrete(lam, mu, levels) - 1.0 / lam + 1.0 / b + max(1.0 / lam, 1.0 / b)


@functools.lru_cache(maxsize=128)
def _calibrate(e0: float, nu: float, L: int, share: float) -> HeavyHitterCalibration:
    if L == 0:  # one attribute: a plain histogram, DLap(2/ε0) counts, as in the continuous calibration
        return HeavyHitterCalibration(e0, nu, 0, "exact (discrete Laplace)", math.nan, math.nan, 2.0 / e0, 0.0,
                                      math.nan, e0, e0)
    b = 2.0 / ((1.0 - share) * e0)
    e1 = share * e0

    def mu_for(x: float) -> float:
        return max(x * math.log(16.0 / nu), 1.0)

    def gap(x: float) -> float:
        return hh_epsilon_discrete(x, mu_for(x), L) - e1

    lo, hi = 1.0 / e1, 4.2 / e1
    while gap(hi) > 0:
        hi *= 1.5
    lam = brentq(gap, lo, hi, xtol=1e-10, rtol=1e-10) if gap(lo) > 0 else lo
    lam *= 1 + 1e-9  # the private side of the root
    while gap(lam) > 0:  # a step function: make sure of the side
        lam *= 1 + 1e-6
    mu = mu_for(lam)
    return HeavyHitterCalibration(e0, nu, L, "exact (discrete Laplace)", lam, mu, b, hh_epsilon_discrete(lam, mu, L),
                                  math.nan, 2.0 / b, histogram_epsilon_discrete(lam, mu, L, b))


def calibrate_discrete(eps0: float, nu: float = 0.01, d: int = 64, *, share: float = 0.5) -> HeavyHitterCalibration:
    """The secure calibration of the Theorem 15 histogram: λ solves ε_lists(λ, µ, L) = share·ε0 under the
    discrete accountant (µ = λ·ln(16/ν)); counts DLap(2/((1 − share)·ε0)). ``delivered`` is the exact
    joint ε of the discrete mechanism (≤ ε0); ``eps_heavy_hitters_lemma28`` is not defined (NaN)."""
    e0, nu, share = calibration_inputs(eps0, nu, share)
    return _calibrate(e0, nu, hh_levels(d), share)
