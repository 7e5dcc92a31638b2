"""Secure (publishable) personalized DP: the black boxes, Sample's draw, PE and Stretching with exact samplers.

Used by every :class:`~prdp_core.mechanisms.personalized.mechanisms.PDPMechanism` when a release
is made with ``secure=True`` (see :mod:`prdp_core.core.secure` for the grid and the samplers). Each
function returns the answer, its effective noise scale (value units, or None) and the ε that
OpenDP's privacy map certifies, checked against the ε the mechanism promises before the answer
is returned:

* **count** — integer count + discrete Laplace (Δ = 1; the seeded "geometric" count noise is
  the same law); **sum** — each clipped value quantised on the grid g of the bound
  max(|lo|, |hi|), summed exactly, + discrete Laplace in grid units; **mean** — the secure sum
  and count at ε/2 each, their ratio clamped to [lo, hi] (post-processing);
* **median / min** (the black box) — the exponential mechanism over a *public finite grid* of
  [lo, hi] (:func:`output_grid`: every integer of an integer range of at most 2^(bits+1)+1
  values, otherwise lo + k·g with g a power of two, and hi) instead of the continuum, by
  OpenDP's report-noisy-max on whole-number scores: the rank score doubled (sensitivity 1), the
  change-count scores as they are (sensitivity 1). The answer is a grid point; the ε is exact;
* **Sample's draw** — keep probability π = (e^Φ − 1)/(e^t − 1) rounded *down* to a multiple of
  2^−53 (:func:`sample_keep_numerators`, checked in 60-digit decimal arithmetic), drawn exactly
  (:meth:`~prdp_core.core.secure.SecureSampler.bernoulli_dyadic`): since the loss ln(1 + π(e^t − 1))
  grows with π, every user receives at most min(Φ, t), as promised;
* **PE** — the personalized exponential mechanism with each Φ replaced by the whole number
  φ = ⌊K·Φ⌋ (K = 2^20; exact integer scores d_f, whose change for user x is at most φ_x by the
  paper's proof) and report-noisy-max with exponential noise of scale 2K: user x's loss is
  2φ_x/(2K) ≤ Φ_x, certified by OpenDP's map for every distinct φ. Median and min answer on
  the public grid of :func:`output_grid`;
* **Stretching** — each stretched value v·Φ/ε_ref quantised on the grid of the bound, capped
  at ⌊Φ·Δ_u/ε_ref⌋ units (Δ_u = ⌈bound/g⌉), summed exactly, + discrete Laplace of Δ_u·c/ε_ref
  units: user x's certified loss is cap_x·ε_ref/(Δ_u·c) ≤ Φ_x/c.

Caller-supplied black boxes draw from a seeded generator and are refused in secure mode.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from typing import TYPE_CHECKING

import numpy as np

from ...core.errors import ParameterError
from ...core.secure import BERNOULLI_BITS, SCORE_SCALE, SecureSampler, exact_cell_sums, grid_for, to_units, units_ceil
from .pe import d_median, d_min
from .sample import sample_probability

if TYPE_CHECKING:
    from .query import PersonalizedQuery

#: Secure answer: (estimate, effective noise scale in value units or None, certified ε).
SecureResult = tuple[float, "float | None", float]


def _check_budget(certified: float, promised: float, what: str) -> None:
    if certified > promised * (1 + 1e-9):  # pragma: no cover - guarded by the constructions below
        raise ParameterError(f"OpenDP could not certify the ε of the secure {what} ({certified:.6g} > {promised:.6g}).")


def secure_count(bits: np.ndarray, eps: float, smp: SecureSampler) -> SecureResult:
    """ε-DP count (add/remove, Δ = 1): integer count + discrete Laplace(1/ε)."""
    c = int(np.count_nonzero(np.asarray(bits) > 0))
    na = smp.laplace_answers(np.array([c], dtype=np.int64), 1.0, 1.0, eps)
    _check_budget(float(na.loss[0]), eps, "count")
    return float(na.estimate[0]), float(na.scale[0]), float(na.loss[0])


def secure_sum(values: np.ndarray, eps: float, bound: float, smp: SecureSampler) -> SecureResult:
    """ε-DP sum of values with |v| ≤ ``bound``: quantised on the grid of the bound, discrete Laplace."""
    g = smp.grid(bound)
    u = to_units(np.asarray(values, dtype=float), g)
    total = exact_cell_sums(np.zeros(u.size, dtype=np.int64), u, 1)
    na = smp.laplace_answers(total, g, bound, eps)
    _check_budget(float(na.loss[0]), eps, "sum")
    return float(na.estimate[0]), float(na.scale[0]), float(na.loss[0])


def secure_mean(values: np.ndarray, eps: float, lo: float, hi: float, smp: SecureSampler) -> SecureResult:
    """ε-DP mean: secure sum (ε/2) over secure count (ε/2), clamped to [lo, hi]."""
    s, _, ls = secure_sum(values, eps / 2, max(abs(lo), abs(hi)), smp)
    c, _, lc = secure_count(np.ones(np.size(values)), eps / 2, smp)
    return float(np.clip(s / max(c, 1.0), lo, hi)), None, ls + lc


def output_grid(lo: float, hi: float, integer: bool, bits: int) -> np.ndarray:
    """The public candidates of a secure median or min: every integer of [lo, hi] when there are at most
    2^(bits+1)+1 of them, otherwise lo + k·g (g = 2^(⌊log₂(hi − lo)⌋ − bits), a whole number for an
    integer range) for k = 0, 1, … below hi, and hi. Depends on the public bounds only."""
    lo, hi = float(lo), float(hi)
    if integer and hi - lo + 1 <= 2 ** (bits + 1) + 1:
        return np.arange(lo, hi + 1.0)
    g = grid_for(hi - lo, bits)
    if integer:
        g = max(g, 1.0)
    k = np.arange(int(math.floor((hi - lo) / g)) + 1, dtype=float)
    r = lo + k * g
    r = r[r < hi]
    return np.append(r, hi)


def _counts_at(values: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    xs = np.sort(np.asarray(values, dtype=float))
    L = np.searchsorted(xs, r, side="left").astype(np.int64)
    G = (xs.size - np.searchsorted(xs, r, side="right")).astype(np.int64)
    return L, G, xs.size


def black_box_scores(kind: str, values: np.ndarray, r: np.ndarray, score: str = "rank") -> np.ndarray:
    """Whole-number scores of sensitivity 1 (add/remove) at the candidates ``r``: the median's rank score
    doubled (2s = −(2·max(L, G) − n)⁺), its change-count score, or the minimum's change-count score
    (−#{x < r}, −1 below the minimum or on an empty input), as in :mod:`.blackbox`."""
    L, G, n = _counts_at(values, r)
    if kind == "median":
        if score == "changes":
            a = n // 2
            b = n - 1 - a
            return -(np.maximum(L - a, 0) + np.maximum(G - b, 0)) if n else np.zeros(r.size, dtype=np.int64)
        return -np.maximum(2 * np.maximum(L, G) - n, 0)
    on_min = (L == 0) & (n - G > 0)  # r equals the smallest value
    return -(L + ((L == 0) & ~on_min))


def secure_quantile(kind: str, values: np.ndarray, eps: float, query: PersonalizedQuery,
                    smp: SecureSampler) -> SecureResult:
    """ε-DP median or min (add/remove): exponential mechanism over the public grid by report-noisy-max."""
    r = output_grid(float(query.lo), query.hi_bound, query.on_integers, smp.bits)
    s = black_box_scores(kind, values, r, query.median_score)
    idx, loss = smp.select_integers(s, eps, sensitivity=1, monotonic=False)
    _check_budget(loss, eps, kind)
    return float(r[idx]), None, float(loss)


def secure_answer(kind: str, values: np.ndarray, eps: float, query: PersonalizedQuery,
                  smp: SecureSampler) -> SecureResult:
    """The secure ε-DP black box of ``kind`` on prepared values (bits or clipped values)."""
    if query.black_box is not None:
        raise ParameterError(f"The black box '{query.black_box.name}' draws from a seeded generator and has no "
                             "secure path.", hint="Use the built-in mechanism, or a seeded teaching run.")
    if kind == "count":
        return secure_count(values, eps, smp)
    if kind == "sum":
        return secure_sum(values, eps, query.bound, smp)
    if kind == "mean":
        return secure_mean(values, eps, float(query.lo), query.hi_bound, smp)
    return secure_quantile(kind, values, eps, query, smp)


# -- Sample's draw --------------------------------------------------------------------------

def sample_keep_numerators(phi: np.ndarray, t: float) -> np.ndarray:
    """k_x with k_x/2^53 ≤ π_x = (e^{Φ^x} − 1)/(e^t − 1) (2^53 when Φ^x ≥ t), the largest such multiple
    of 2^−53 up to float rounding: checked (and lowered when needed) in 60-digit decimal arithmetic, so
    the loss ln(1 + (k/2^53)(e^t − 1)) never exceeds min(Φ^x, t)."""
    ph = np.asarray(phi, dtype=float)
    one = 2 ** BERNOULLI_BITS
    uniq, inv = np.unique(ph, return_inverse=True)
    p = sample_probability(uniq, t)
    k = np.floor(p * one).astype(np.int64)  # p·2^53 is exact (power of two); floor rounds down
    with localcontext() as ctx:
        ctx.prec = 60
        et = Decimal(float(t)).exp() - 1
        for i, f in enumerate(uniq):
            if f >= t:
                k[i] = one
                continue
            cap = Decimal(float(f)).exp() - 1
            while k[i] > 0 and Decimal(int(k[i])) / Decimal(one) * et > cap:
                k[i] -= 1
    return k[inv]


def secure_sample_keep(phi: np.ndarray, t: float, smp: SecureSampler) -> np.ndarray:
    """Sample's keep mask, drawn exactly with probabilities rounded down to multiples of 2^−53."""
    return smp.bernoulli_dyadic(sample_keep_numerators(phi, t))


# -- PE -------------------------------------------------------------------------------------

def pe_weights(phi: np.ndarray) -> np.ndarray:
    """φ = ⌊K·Φ⌋ (K = 2^20) as whole-number floats (sums stay exact below 2^53)."""
    w = np.floor(np.asarray(phi, dtype=float) * SCORE_SCALE)
    if w.size and (w.min() < 1 or float(w.sum()) >= 2.0**52):
        raise ParameterError("The personal budgets are outside the range of the secure PE (each Φ must be at "
                             "least 2^−20 and their sum below 2^32).")
    return w


def pe_scores(kind: str, values: np.ndarray, w: np.ndarray, r: np.ndarray) -> np.ndarray:
    """PE's scores d_f (Eq. 5) with the whole-number weights ``w`` at the candidates ``r`` (exact)."""
    if kind == "count":
        b = np.asarray(values) > 0
        x = int(b.sum())
        ones = np.concatenate(([0.0], np.cumsum(np.sort(w[b]))))
        zeros = np.concatenate(([0.0], np.cumsum(np.sort(w[~b]))))
        rr = r.astype(np.int64)
        return -(zeros[np.clip(rr - x, 0, b.size - x)] + ones[np.clip(x - rr, 0, x)])
    return d_median(values, w, r) if kind == "median" else d_min(values, w, r)


def secure_pe(kind: str, values: np.ndarray, phi: np.ndarray, query: PersonalizedQuery,
              smp: SecureSampler) -> tuple[float, float]:
    """One secure draw of PE and the largest ratio certified loss / Φ over the users (≤ 1)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        raise ParameterError("PE needs at least one tuple (n is public under substitution neighbours).")
    w = pe_weights(phi)
    if kind == "count":
        r = np.arange(v.size + 1, dtype=float)
    else:
        r = output_grid(float(query.lo), query.hi_bound, query.on_integers, smp.bits)
    s = pe_scores(kind, v, w, r)
    idx, losses = smp.select_at_scale(s, 2.0 * SCORE_SCALE, w.astype(np.int64))
    ratio = float(np.max(losses / np.asarray(phi, dtype=float)))
    _check_budget(ratio, 1.0, "PE")
    return float(r[idx]), ratio


# -- Stretching -----------------------------------------------------------------------------

def secure_stretching(values: np.ndarray, phi: np.ndarray, bound: float, ref: float, calibration: float,
                      smp: SecureSampler) -> SecureResult:
    """Stretched sum Σ v·Φ/ε_ref + discrete Laplace of scale bound·c/ε_ref (value units, at least), each
    stretched value capped so that user x's certified add/remove loss is at most Φ_x/c. Returns the
    estimate, the effective scale and the largest certified loss·c/Φ over the users (≤ 1)."""
    ph = np.asarray(phi, dtype=float)
    g = grid_for(bound, smp.bits)
    du = int(units_ceil(bound, g))
    cap = np.floor(ph * du / ref).astype(np.int64)
    u = np.clip(to_units(np.asarray(values, dtype=float) * (ph / ref), g), -cap, cap)
    total = exact_cell_sums(np.zeros(u.size, dtype=np.int64), u, 1)
    na = smp.laplace_answers(total, g, bound, ref / calibration)
    per_unit = float(na.loss[0]) / du  # the discrete Laplace map is linear in the sensitivity
    ratio = float(np.max(cap * per_unit * calibration / ph)) if ph.size else 0.0
    _check_budget(ratio, 1.0, "Stretching")
    return float(na.estimate[0]), float(na.scale[0]), ratio


__all__ = ["SecureResult", "black_box_scores", "output_grid", "pe_scores", "pe_weights", "sample_keep_numerators",
           "secure_answer", "secure_count", "secure_mean", "secure_pe", "secure_quantile", "secure_sample_keep",
           "secure_stretching", "secure_sum"]
