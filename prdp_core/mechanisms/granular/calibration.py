"""Privacy of PrivHeavyHitter and the calibration of the Theorem 15 histogram.

The exact worst-case accountant of Algorithm 2 (:func:`hh_epsilon_exact`), Lemma 28's bound, the
accountant of the whole histogram (heavy-hitter lists plus Lap counts), and the calibration of
λ, μ and the count scale that meets a claimed per-attribute ε0 (``exact``, ``lemma28`` or the
paper's ``paper`` setting, which does not meet it: see docs/architecture.md).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from ...core.errors import ParameterError
from ...core.validate import positive as _pos
from ...core.validate import whole_number as _int_param

CalibrationMethod = Literal["exact", "lemma28", "paper"]


# ---------------------------------------------------------------------------
# PrivHeavyHitter accountant (Algorithm 2, Lemma 28, exact worst case)
# ---------------------------------------------------------------------------


def hh_levels(d: int) -> int:
    """Number of noisy levels of PrivHeavyHitter on d attributes: ⌈log2 d⌉ (d padded to 2^L)."""
    d = _int_param("The number of attributes d", d, 1)
    return (d - 1).bit_length()


def hh_epsilon_lemma28(lam: float, mu: float) -> float:
    """The paper's sufficient condition (Lemma 28): (2/λ)(1 + 1/(1 − e^{−µ/λ})) (needs µ > 1).

    ``lam`` — Laplace scale λ of every noisy count; ``mu`` — threshold step µ per level.
    """
    lam, mu = _pos("λ", lam), _pos("µ", mu)
    return (2.0 / lam) * (1.0 + 1.0 / (-math.expm1(-mu / lam)))


def _log_tail(t: np.ndarray, lam: float) -> np.ndarray:
    """log P[Lap(λ) > t], stable on both sides."""
    t = np.asarray(t, dtype=float)
    neg = np.minimum(t, 0.0)
    return np.where(t >= 0, math.log(0.5) - np.maximum(t, 0.0) / lam, np.log1p(-0.5 * np.exp(neg / lam)))


def _h(m: np.ndarray, lam: float, mu: float) -> np.ndarray:
    """Log-ratio of the inclusion probabilities of a string whose capped count margin is m vs m+1."""
    m = np.asarray(m, dtype=float)
    return _log_tail(-np.maximum(m + 1.0, -mu), lam) - _log_tail(-np.maximum(m, -mu), lam)


def _chain(m: np.ndarray | float, lam: float, mu: float, levels: int) -> np.ndarray:
    m = np.asarray(m, dtype=float)
    return sum((_h(m + i * mu, lam, mu) for i in range(levels)), np.zeros_like(m))


def _sup_chain(lam: float, mu: float, levels: int) -> float:
    """sup_m Σ_{i<L} h(m + iµ): the largest log-ratio of one string kept at every level."""
    if levels <= 0:
        return 0.0
    # G is smooth between the kinks of the shifted copies of h (at −µ−1, −µ, −1, 0);
    # maximise on every piece (grid + bounded refinement) and at every kink.
    kinks = np.unique([k - i * mu for k in (-mu - 1.0, -mu, -1.0, 0.0) for i in range(levels)])
    pts = np.concatenate(([kinks[0] - 1.0], kinks, [kinks[-1] + 60.0 * lam]))
    a, b = pts[:-1], pts[1:]
    a, b = a[b - a > 1e-12], b[b - a > 1e-12]
    grid = a[:, None] + (b - a)[:, None] * np.linspace(0.0, 1.0, 65)[None, :]
    vals = _chain(grid, lam, mu, levels)
    best = float(vals.max())
    # refine around the best grid point of the three best pieces (vectorised zoom, 4 rounds)
    for p in np.argsort(-vals.max(axis=1))[:3]:
        i = int(np.argmax(vals[p]))
        lo, hi = grid[p, max(i - 1, 0)], grid[p, min(i + 1, grid.shape[1] - 1)]
        for _ in range(4):
            if not hi > lo:
                break
            xs = np.linspace(lo, hi, 33)
            v = _chain(xs, lam, mu, levels)
            j = int(np.argmax(v))
            best = max(best, float(v[j]))
            lo, hi = xs[max(j - 1, 0)], xs[min(j + 1, xs.size - 1)]
    return max(best, 0.0)


def hh_epsilon_exact(lam: float, mu: float, levels: int) -> float:
    """Exact worst-case per-attribute ε of PrivHeavyHitter, with every list L_I released.

    ``lam`` — Laplace scale λ of the noisy counts (larger = more private); ``mu`` — the
    threshold step µ per level and the capping margin (needs µ ≥ 1); ``levels`` — the
    number of noisy levels L = ⌈log2 d⌉. Changing one attribute j of one record from u to
    u′ changes, in the one node per level that contains j, the count of u|I by −1 and of
    u′|I by +1. The string whose count drops contributes a chain of "kept" factors whose
    margins fall by ≥ µ per level (counts shrink, thresholds rise); the other contributes
    at most one "dropped" factor e^{1/λ}. Hence

        ε = 1/λ + sup_m Σ_{i<L} h(m + iµ),  h(m) = log S(−max(m+1, −µ)) − log S(−max(m, −µ)),

    S(t) = P[Lap(λ) > t]. It is ≈ 2/λ + ln(2 − e^{−1/λ}) for L ≥ 2 (2/λ for L = 1), always
    below Lemma 28's bound, and independent of τ and n. Checked against exact enumeration
    of all output lists on neighbouring datasets (tests/audit/test_granular_audit.py).
    """
    lam, mu = _pos("λ", lam), _pos("µ", mu)
    levels = _int_param("The number of levels", levels, 0, 64)
    if levels == 0:
        return 0.0
    if mu < 1.0:
        raise ParameterError(f"The threshold step µ must be at least 1 (got {mu:.3g}).",
                             hint="Raise µ (µ = λ·ln(16/ν) by default).")
    return 1.0 / lam + _sup_chain(lam, mu, levels)


def histogram_epsilon_exact(lam: float, mu: float, levels: int, count_scale: float) -> float:
    """Exact worst-case per-attribute ε of the Theorem 15 histogram (lists + Laplace counts).

    ``count_scale`` — Laplace scale b of the second-stage counts on the final list. The
    changed record's old string contributes its kept chain plus 1/b (it is listed); the new
    one either a dropped factor 1/λ or, when listed, at most 1/b:

        ε = sup_m Σ h(m + iµ) + 1/b + max(1/λ, 1/b)   (≤ ε_HH + 2/b, the composition bound).

    With no noisy level (one attribute) the histogram is a plain Laplace histogram: 2/b.
    """
    b = _pos("The count scale b", count_scale)
    levels = _int_param("The number of levels", levels, 0, 64)
    if levels == 0:
        return 2.0 / b
    lam, mu = _pos("λ", lam), _pos("µ", mu)
    return hh_epsilon_exact(lam, mu, levels) - 1.0 / lam + 1.0 / b + max(1.0 / lam, 1.0 / b)


# ---------------------------------------------------------------------------
# Calibration of the Theorem 15 histogram
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HeavyHitterCalibration:
    """Noise of the Theorem 15 histogram and what it delivers per attribute.

    Attributes
    ----------
    eps0:
        Requested per-attribute ε0 (pure ∇0DP): the loss of changing one attribute.
    nu:
        Target error ν as a share of n (heavy hitters have count ≥ νn); sets µ = λ·ln(16/ν).
    levels:
        Noisy levels L = ⌈log2 d⌉.
    method:
        ``"exact"`` (λ from the exact accountant), ``"lemma28"`` (λ from Lemma 28) or
        ``"paper"`` (the printed λ = 3/ε0 and Lap(2/ε0), which do **not** deliver ε0).
    lam, mu, count_scale:
        Laplace scale λ, threshold step µ and count scale b.
    eps_heavy_hitters, eps_heavy_hitters_lemma28, eps_counts:
        Delivered loss of the list stage (exact / Lemma 28) and of the counts (2/b).
    eps_joint:
        Exact worst case of the whole histogram (:func:`histogram_epsilon_exact`).
    """

    eps0: float
    nu: float
    levels: int
    method: str
    lam: float
    mu: float
    count_scale: float
    eps_heavy_hitters: float
    eps_heavy_hitters_lemma28: float
    eps_counts: float
    eps_joint: float

    @property
    def eps_composed(self) -> float:
        """Delivered per-attribute ε by sequential composition: ε_HH + 2/b."""
        return self.eps_heavy_hitters + self.eps_counts

    @property
    def delivered(self) -> float:
        """Delivered per-attribute ε0 (the exact joint worst case)."""
        return self.eps_joint

    @property
    def meets_target(self) -> bool:
        return self.delivered <= self.eps0 * (1 + 1e-9)

    def whole_record(self, d: int) -> float:
        """Whole-record ε: group privacy over the d attributes for the lists, plus the counts
        (a whole-record change still moves one record between two cells: 2/b)."""
        return min(int(d) * self.eps_heavy_hitters + self.eps_counts, int(d) * self.eps_joint)

    def as_dict(self) -> dict[str, Any]:
        return {"eps0": self.eps0, "nu": self.nu, "levels": self.levels, "method": self.method,
                "lam": self.lam, "mu": self.mu, "count_scale": self.count_scale,
                "eps_heavy_hitters": self.eps_heavy_hitters,
                "eps_heavy_hitters_lemma28": self.eps_heavy_hitters_lemma28,
                "eps_counts": self.eps_counts, "eps_composed": self.eps_composed, "eps_joint": self.eps_joint}


def _mu_for(lam: float, nu: float) -> float:
    return max(lam * math.log(16.0 / nu), 1.0)


def calibrate_heavy_hitter_histogram(eps0: float, nu: float = 0.01, d: int = 64, *,
                                     method: CalibrationMethod = "exact",
                                     share: float = 0.5) -> HeavyHitterCalibration:
    """Noise of the Theorem 15 histogram for a per-attribute budget ε0.

    ``eps0`` — per-attribute ε0 (pure ∇0DP); ``nu`` — error target ν ∈ (0, 0.1]; ``d`` —
    number of attributes; ``share`` — part of ε0 given to the list stage (the paper: ½).

    * ``"exact"``: λ solves ε_exact(λ, µ, L) = share·ε0 with µ = λ·ln(16/ν) (λ ≈ 5.70/ε0 at
      ν = 0.01); counts Lap(2/((1−share)·ε0)) — Lap(4/ε0) at share ½.
    * ``"lemma28"``: λ = (2/(share·ε0))·(1 + 1/(1−ν/16)) (≈ 8.0/ε0), same counts.
    * ``"paper"``: λ = 3/ε0 and Lap(2/ε0) as printed in the proof of Thm 15 — delivers
      ≈ 1.6·ε0 (exact) instead of ε0; kept to show the error, never as a default.

    With one attribute there is no noisy level: the histogram is a plain Laplace histogram,
    Lap(2/ε0).
    """
    e0, nu, share = calibration_inputs(eps0, nu, share)
    if method not in ("exact", "lemma28", "paper"):
        raise ParameterError(f"Unknown calibration '{method}'.", hint="Use exact, lemma28 or paper.")
    return _calibrate(e0, nu, hh_levels(d), str(method), share)


def calibration_inputs(eps0: float, nu: float, share: float) -> tuple[float, float, float]:
    """ε0, ν and the list stage's share of a Theorem 15 calibration, checked (seeded or secure)."""
    e0 = _pos("The per-attribute ε0", eps0)
    if e0 < 1e-9:  # λ ∝ 1/ε0 would overflow the accountant
        raise ParameterError(f"The per-attribute ε0 must be at least 1e-9 (got {eps0!r}).")
    nu = _pos("The error target ν", nu)
    if nu > 0.5:
        raise ParameterError(f"The error target ν is a share of the records; use a value ≤ 0.5 (got {nu}).")
    share = _pos("The list stage's share of ε0", share)
    if share >= 1:
        raise ParameterError(f"The list stage's share of ε0 must be strictly between 0 and 1 (got {share}).")
    return e0, nu, share


@functools.lru_cache(maxsize=256)
def _calibrate(e0: float, nu: float, L: int, method: str, share: float) -> HeavyHitterCalibration:
    if L == 0:
        b = 2.0 / e0
        return HeavyHitterCalibration(e0, nu, 0, method, math.nan, math.nan, b, 0.0, 0.0, e0, e0)
    if method == "paper":
        lam, b = 3.0 / e0, 2.0 / e0
        mu = _mu_for(lam, nu)
    else:
        e1, b = share * e0, 2.0 / ((1.0 - share) * e0)
        if method == "lemma28":
            lam = (2.0 / e1) * (1.0 + 1.0 / (1.0 - nu / 16.0))
            mu = _mu_for(lam, nu)
        else:
            def gap(x: float) -> float:
                return hh_epsilon_exact(x, _mu_for(x, nu), L) - e1

            lo, hi = 2.0 / e1, 4.2 / e1
            while gap(hi) > 0:
                hi *= 1.5
            lam = brentq(gap, lo, hi, xtol=1e-12, rtol=1e-12) if L > 1 else lo
            lam *= 1 + 1e-9  # stay on the private side of the root
            mu = _mu_for(lam, nu)
    return HeavyHitterCalibration(
        e0, nu, L, method, lam, mu, b, hh_epsilon_exact(lam, mu, L), hh_epsilon_lemma28(lam, mu), 2.0 / b,
        histogram_epsilon_exact(lam, mu, L, b))


def calibration_table(eps0: float, nu: float = 0.01, d: int = 64) -> pd.DataFrame:
    """The three calibrations side by side: λ, µ, b and what each delivers per attribute."""
    rows = []
    label = {"paper": "as printed (Thm 15 proof)", "lemma28": "corrected, Lemma 28",
             "exact": "corrected, exact accountant"}
    for m in ("paper", "lemma28", "exact"):
        c = calibrate_heavy_hitter_histogram(eps0, nu, d, method=m)
        rows.append({"calibration": label[m], "method": m, "lambda": c.lam, "mu": c.mu, "count_scale": c.count_scale,
                     "eps_lists": c.eps_heavy_hitters, "eps_lists_lemma28": c.eps_heavy_hitters_lemma28,
                     "eps_counts": c.eps_counts, "eps_composed": c.eps_composed, "eps_exact": c.eps_joint,
                     "claimed": c.eps0, "meets_claim": c.meets_target})
    return pd.DataFrame(rows)
