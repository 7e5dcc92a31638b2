"""Output ranges of the personalized median and min: the public grid and its pieces (Sec. IV-C "for large R").

The output range R is the query's declared interval [lo, hi] (the integers of it when the
value type is declared integer), never inferred from the values. Sorted data points cut R into
pieces — the data points and the open gaps between them — on which the exponential-mechanism
scores are constant, so draws, probabilities and errors are exact without enumerating R.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.errors import ParameterError


def _integer_bounds(lo: float, hi: float) -> None:
    if lo != round(lo) or hi != round(hi):
        raise ParameterError(f"An integer output range needs whole-number bounds (got lo = {lo:g}, hi = {hi:g}).",
                             hint="Round the public bounds to whole numbers, or declare the values continuous.")


def _on_grid(values: np.ndarray, lo: float, hi: float, integer: bool) -> np.ndarray:
    """Values moved onto the public output range: clipped to [lo, hi], and rounded to the nearest
    integer first when the range is the integers (a per-tuple step that depends on nothing but
    the tuple and the public bounds)."""
    v = np.asarray(values, dtype=float)
    if integer:
        _integer_bounds(lo, hi)
        v = np.rint(v)
    return np.clip(v, lo, hi)


@dataclass(frozen=True)
class Pieces:
    """The output range [lo, hi] cut at the data values.

    Every r inside one piece has the same counts L(r) = #{x < r} and G(r) = #{x > r},
    hence the same score. ``size`` is the number of integers (integer grid) or the
    length (continuous range) of each piece; points have size 1 on an integer grid and
    are left out of a continuous range (measure zero).
    """

    start: np.ndarray
    end: np.ndarray
    size: np.ndarray
    L: np.ndarray
    G: np.ndarray
    is_point: np.ndarray
    n: int
    integer: bool


def _pieces(xs_sorted: np.ndarray, lo: float, hi: float, integer: bool) -> Pieces:
    xs = np.asarray(xs_sorted, dtype=float)
    n = xs.size
    if n == 0:
        width = (hi - lo + 1) if integer else (hi - lo)
        return Pieces(np.array([lo]), np.array([hi]), np.array([max(width, 0.0)]), np.array([0]), np.array([0]),
                      np.array([False]), 0, integer)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(xs[1:], xs[:-1], out=change[1:])
    first = np.flatnonzero(change)
    u = xs[first]
    cnt = np.diff(np.append(first, n))
    cum = np.cumsum(cnt)
    before = cum - cnt
    k = u.size
    step = 1.0 if integer else 0.0
    # points
    p_start, p_end = u, u
    p_size = np.full(k, 1.0 if integer else 0.0)
    p_L, p_G = before, n - cum
    # gaps: below u0, between consecutive values, above the last value
    g_start = np.concatenate(([lo], u + step))
    g_end = np.concatenate((u - step, [hi]))
    g_size = (g_end - g_start + 1.0) if integer else (g_end - g_start)
    g_L = np.concatenate(([0], cum))
    g_G = n - g_L
    start = np.concatenate((p_start, g_start))
    end = np.concatenate((p_end, g_end))
    size = np.concatenate((p_size, g_size))
    L = np.concatenate((p_L, g_L)).astype(np.int64)
    G = np.concatenate((p_G, g_G)).astype(np.int64)
    is_point = np.concatenate((np.ones(k, bool), np.zeros(k + 1, bool)))
    keep = size > 0
    order = np.argsort(start[keep], kind="stable")
    return Pieces(start[keep][order], end[keep][order], size[keep][order], L[keep][order], G[keep][order],
                  is_point[keep][order], n, integer)


def _log_weights(pieces: Pieces, logits: np.ndarray) -> np.ndarray:
    return np.log(pieces.size) + logits


def _draw_from_pieces(pieces: Pieces, logits: np.ndarray, rng: np.random.Generator) -> float:
    """Pick a piece with probability ∝ size·exp(logit) (Gumbel-max), then a value uniformly in it."""
    if pieces.size.size == 0:
        raise ParameterError("The output range is empty.", hint="Choose bounds with lo < hi.")
    lw = _log_weights(pieces, logits)
    i = int(np.argmax(lw + rng.gumbel(size=lw.size)))
    if pieces.integer:
        return float(pieces.start[i] + math.floor(rng.random() * pieces.size[i]))
    return float(pieces.start[i] + rng.random() * (pieces.end[i] - pieces.start[i]))


def _pieces_probs(pieces: Pieces, logits: np.ndarray) -> np.ndarray:
    lw = _log_weights(pieces, logits)
    w = np.exp(lw - lw.max())
    return w / w.sum()


def _pieces_mse(pieces: Pieces, probs: np.ndarray, target: float) -> tuple[float, float]:
    """Exact mean and mean squared error (about ``target``) of a value drawn from the pieces."""
    mid = (pieces.start + pieces.end) / 2
    if pieces.integer:
        var_in = (pieces.size ** 2 - 1) / 12
    else:
        var_in = (pieces.end - pieces.start) ** 2 / 12
    mean = float(np.sum(probs * mid))
    mse = float(np.sum(probs * (var_in + (mid - target) ** 2)))
    return mean, mse


def expand_pieces(pieces: Pieces, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The full pmf over the integer range (small ranges only; for audits and plots)."""
    if not pieces.integer:
        raise ParameterError("Only integer output ranges can be expanded to a pmf.")
    r = np.arange(int(pieces.start.min()), int(pieces.end.max()) + 1)
    idx = np.searchsorted(pieces.start, r, side="right") - 1
    return r, probs[idx] / pieces.size[idx]
