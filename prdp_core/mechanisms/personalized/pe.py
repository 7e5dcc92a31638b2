"""PE, the personalized exponential mechanism: its score d_f and exact output law (Def. 10, Eqs. 4–5, Sec. IV-C).

Pr[PE(D) = r] ∝ exp(½ d_f(D, r, Φ)), d_f = −(cheapest total Φ of the tuples that must change
for r to be the answer), for count, median and min, computed with the fast formulas of
Sec. IV-C (sign-corrected, tie-safe for the median; brute-force verified in tests).
"""

from __future__ import annotations

import numpy as np

from ...core.errors import ParameterError
from .ranges import Pieces, _draw_from_pieces, _on_grid, _pieces, _pieces_probs


def k_smallest_prefix_sums(phi: np.ndarray, p: np.ndarray, k: np.ndarray) -> np.ndarray:
    """out[j] = sum of the k[j] smallest entries of phi[:p[j]] (0 ≤ k[j] ≤ p[j] ≤ len(phi)).

    All queries at once with a wavelet matrix over the distinct levels of phi:
    O((n + q)·log K) numpy work for K distinct values (no loop over records).
    """
    phi = np.asarray(phi, dtype=float)
    p = np.asarray(p, dtype=np.int64)
    kk = np.asarray(k, dtype=np.int64).copy()
    out = np.zeros(p.size)
    n = phi.size
    if n == 0 or p.size == 0:
        return out
    if (kk < 0).any() or (kk > p).any() or (p > n).any():
        raise ParameterError("k_smallest_prefix_sums needs 0 ≤ k ≤ p ≤ n.")
    levels, codes = np.unique(phi, return_inverse=True)
    nbits = max(1, int(levels.size - 1).bit_length())
    cur_codes = codes.astype(np.int64)
    cur_phi = phi.copy()
    lo = np.zeros(p.size, dtype=np.int64)
    hi = p.copy()
    c0 = np.zeros(n + 1, dtype=np.int64)
    s0 = np.zeros(n + 1)
    for bit in range(nbits - 1, -1, -1):
        is0 = ((cur_codes >> bit) & 1) == 0
        np.cumsum(is0, out=c0[1:])
        np.cumsum(np.where(is0, cur_phi, 0.0), out=s0[1:])
        z = c0[-1]
        c0_lo, c0_hi = c0[lo], c0[hi]
        n0 = c0_hi - c0_lo
        go0 = n0 >= kk
        out += np.where(go0, 0.0, s0[hi] - s0[lo])
        kk = np.where(go0, kk, kk - n0)
        lo, hi = np.where(go0, c0_lo, z + lo - c0_lo), np.where(go0, c0_hi, z + hi - c0_hi)
        order = np.concatenate((np.flatnonzero(is0), np.flatnonzero(~is0)))
        cur_codes = cur_codes[order]
        cur_phi = cur_phi[order]
    has = kk > 0
    out[has] += kk[has] * cur_phi[lo[has]]
    return out


def d_count(bits: np.ndarray, phi: np.ndarray, r: np.ndarray | None = None) -> np.ndarray:
    """Personalized score d_count(D, r, Φ) (Eq. 5, Sec. IV-C, sign-corrected) for r ∈ {0..n} (or given r).

    With x = count(D): r > x costs the r − x smallest Φ among the 0-tuples, r < x the
    x − r smallest Φ among the 1-tuples, r = x costs 0; d is minus that cost.
    """
    b = np.asarray(bits, dtype=float) > 0
    ph = np.asarray(phi, dtype=float)
    n = b.size
    x = int(b.sum())
    rr = np.arange(n + 1) if r is None else np.asarray(r, dtype=np.int64)
    ones = np.concatenate(([0.0], np.cumsum(np.sort(ph[b]))))
    zeros = np.concatenate(([0.0], np.cumsum(np.sort(ph[~b]))))
    up = np.clip(rr - x, 0, n - x)
    down = np.clip(x - rr, 0, x)
    return -(zeros[up] + ones[down])


def _median_side_costs(phi_sorted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SL[p] = Σ of the (p − a)⁺ smallest Φ among the p smallest values; SR[q] likewise for the q largest."""
    n = phi_sorted.size
    a = n // 2
    b = n - 1 - a
    p = np.arange(n + 1)
    SL = k_smallest_prefix_sums(phi_sorted, p, np.maximum(p - a, 0))
    SR = k_smallest_prefix_sums(phi_sorted[::-1], p, np.maximum(p - b, 0))
    return SL, SR


def _sorted_pieces(values: np.ndarray, phi: np.ndarray, lo: float, hi: float,
                   integer: bool) -> tuple[Pieces, np.ndarray]:
    """Values moved onto the public range and sorted, cut into output pieces; Φ in the same order."""
    v = _on_grid(np.asarray(values, dtype=float), lo, hi, bool(integer))
    if v.size == 0:
        raise ParameterError("PE needs at least one tuple (n is public under substitution neighbours).")
    order = np.argsort(v, kind="stable")
    xs, ps = v[order], np.asarray(phi, dtype=float)[order]
    return _pieces(xs, lo, hi, bool(integer)), ps


def d_median_pieces(values: np.ndarray, phi: np.ndarray, lo: float, hi: float, *,
                    integer: bool = False) -> tuple[Pieces, np.ndarray]:
    """d_med over the output range, piece by piece (tie-safe form of Sec. IV-C).

    With L(r) = #{x < r}, G(r) = #{x > r}, a = ⌊n/2⌋, b = n − 1 − a:
    d = −[Σ of the (L − a)⁺ smallest Φ among {x < r}] − [Σ of the (G − b)⁺ smallest Φ
    among {x > r}]. For even n this prices the upper median (rank ⌊n/2⌋, 0-indexed).
    """
    pcs, ps = _sorted_pieces(values, phi, lo, hi, integer)
    SL, SR = _median_side_costs(ps)
    return pcs, -(SL[pcs.L] + SR[pcs.G])


def d_min_pieces(values: np.ndarray, phi: np.ndarray, lo: float, hi: float, *,
                 integer: bool = False) -> tuple[Pieces, np.ndarray]:
    """d_min over the output range: r > min costs Σ{Φ : x < r}, r < min costs min Φ, r = min costs 0."""
    pcs, ps = _sorted_pieces(values, phi, lo, hi, integer)
    cum = np.concatenate(([0.0], np.cumsum(ps)))
    d = -cum[pcs.L]
    below = (pcs.L == 0) & ~pcs.is_point
    d = np.where(below, -float(ps.min()), d)
    return pcs, d


def d_median(values: np.ndarray, phi: np.ndarray, r: np.ndarray) -> np.ndarray:
    """d_med(D, r, Φ) at given points r (for checks against brute force and plots)."""
    v = np.asarray(values, dtype=float)
    order = np.argsort(v, kind="stable")
    xs, ps = v[order], np.asarray(phi, dtype=float)[order]
    SL, SR = _median_side_costs(ps)
    rr = np.asarray(r, dtype=float)
    L = np.searchsorted(xs, rr, side="left")
    G = v.size - np.searchsorted(xs, rr, side="right")
    return -(SL[L] + SR[G])


def d_min(values: np.ndarray, phi: np.ndarray, r: np.ndarray) -> np.ndarray:
    """d_min(D, r, Φ) at given points r."""
    v = np.asarray(values, dtype=float)
    order = np.argsort(v, kind="stable")
    xs, ps = v[order], np.asarray(phi, dtype=float)[order]
    cum = np.concatenate(([0.0], np.cumsum(ps)))
    rr = np.asarray(r, dtype=float)
    L = np.searchsorted(xs, rr, side="left")
    return np.where(rr < xs[0], -float(ps.min()), -cum[L])


def pe_distribution(kind: str, values: np.ndarray, phi: np.ndarray, *, lo: float = 0.0, hi: float | None = None,
                    integer: bool = False) -> tuple[Pieces, np.ndarray, np.ndarray]:
    """PE's exact output distribution (Eq. 4): pieces, d per piece, probability per piece.

    For count the pieces are the points 0..n. For median and min, ``integer`` (public,
    declared) chooses the integers of [lo, hi] over the continuum.
    """
    if kind == "count":
        b = np.asarray(values, dtype=float)
        n = b.size
        r = np.arange(n + 1, dtype=float)
        pcs = Pieces(r, r, np.ones(n + 1), np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64),
                     np.ones(n + 1, bool), n, True)
        d = d_count(b, phi)
    elif kind in ("median", "min"):
        if hi is None:
            raise ParameterError(f"PE for {kind} needs the output range [lo, hi].")
        fn = d_median_pieces if kind == "median" else d_min_pieces
        pcs, d = fn(values, phi, float(lo), float(hi), integer=integer)
    else:
        raise ParameterError(f"PE is defined for count, median and min, not for {kind}.",
                             hint="Use Sample, Threshold, Minimum or Stretching for sums and means.")
    return pcs, d, _pieces_probs(pcs, d / 2.0)


def pe_draw(kind: str, values: np.ndarray, phi: np.ndarray, *, rng: np.random.Generator, lo: float = 0.0,
            hi: float | None = None, integer: bool = False) -> float:
    """One draw of PE: piece ∝ size·exp(d/2), then uniform inside the piece."""
    pcs, d, _ = pe_distribution(kind, values, phi, lo=lo, hi=hi, integer=integer)
    return _draw_from_pieces(pcs, d / 2.0, rng)
