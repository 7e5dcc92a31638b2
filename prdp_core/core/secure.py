"""Secure release mode: exact samplers backed by OpenDP, outputs on a documented grid.

Seeded numpy generators (:mod:`prdp_core.core.noise`) are for teaching and review: their
floating-point Laplace and Gaussian samplers are predictable from the seed, and the set of
floating-point numbers they can return depends on the true answer, which leaks it (Mironov
2012, "On significance of the least significant bits for differential privacy"). A real
release uses a :class:`SecureSampler` instead:

* **Exact samplers with a cryptographic generator.** Noise is drawn by OpenDP
  (``opendp.measurements.make_laplace`` / ``make_gaussian`` on 64-bit integers, i.e. the
  discrete Laplace and the discrete Gaussian of Canonne, Kamath and Steinke 2020, and
  ``make_noisy_max`` for selections). OpenDP samples them exactly (arbitrary-precision
  arithmetic, no floating-point rounding) from OpenSSL's ``RAND_bytes``. Secure runs have
  no seed and cannot be reproduced.

* **A documented grid.** Every secure answer is an integer number of grid steps
  ``g = 2^(⌊log₂ Δ⌋ − bits)`` (``bits`` = :data:`DEFAULT_BITS` = 10 unless set), where Δ is
  the sensitivity of one contribution (the splitting threshold T(a) of a SUM, the clipping
  bound τ of a clipped sum). COUNTs use the integer grid g = 1. The noise is added to the
  *quantised* answer in grid units (integers) and the result is multiplied by g; a power of
  two times an integer below 2^53 is exactly representable, so the released float carries
  no information beyond the integer OpenDP returned.

* **How the scale maps and why the guarantee is kept.** Each record's contribution v is
  quantised on its own, u(v) = round(v/g), and the units are summed in exact integer
  arithmetic (no floating-point summation, whose rounding can make the sensitivity larger
  than Δ). Since v ≤ Δ implies u(v) ≤ round(Δ/g) ≤ Δ_u = ⌈Δ/g⌉, the quantised query has
  integer sensitivity Δ_u and the noise is calibrated to it:

  - Laplace, ε-DP: discrete Laplace with scale t = Δ_u/ε grid units; in value units the
    scale is g·t = g·⌈Δ/g⌉/ε ≥ Δ/ε — never less noise than the continuous mechanism, and
    at most (1 + 2^(−bits)) times more;
  - Gaussian, ρ-zCDP: discrete Gaussian with σ_u = Δ_u/√(2ρ) grid units (CKS 2020, Thm 4:
    ρ = Δ_u²/(2σ_u²) exactly as for the continuous Gaussian); in value units σ = g·σ_u ≥ Δ/√(2ρ).

  A record spread over m pieces of at most Δ each (unit splitting) moves a cell by
  u(v) ≤ m·Δ_u units, so it pays ρ·m² as in the continuous analysis. The loss of each call is
  read back from OpenDP's own privacy map and checked against the budget before anything is
  returned (:attr:`NoisyAnswers.loss`). The reported σ, scale and intervals are the
  effective ones (value units), so the error analysis stays honest.

* **Exact coins.** :meth:`SecureSampler.bernoulli_dyadic` draws Bernoulli(k/2^53) exactly by comparing
  53 bits of the operating system's cryptographic generator (``os.urandom``) with k, vectorised; a
  caller rounds an irrational probability to that grid in the direction that keeps its privacy
  claim (Sample's keep probability is rounded down) or bounds the difference in its certified loss
  (the multi-tier residual mixtures and local coins).

* **Selections** (the clipping threshold of the PrDP clipped sum, the rank-error max) use
  OpenDP's report-noisy-max with exponential noise on integer scores: the score is scaled by
  K = 2^20 and rounded, the data-independent preference weights are rounded to the same
  integer scale (which changes only public weights, not the privacy), and OpenDP's map
  confirms ε. Report-noisy-max with exponential noise has the same guarantee as the
  exponential mechanism but not the same output law (it is permute-and-flip), so secure and
  seeded runs of a selection differ in distribution, not in privacy.

What secure mode does not do: it does not make per-record *values* safe to show (the app
still hides them in review mode), it does not protect against timing side channels, and
the analytic error formulas (which assume continuous noise) are off by at most one grid
step. Mechanisms that have no secure path yet stay teaching-only; docs/security.md lists them.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from . import limits
from .errors import ParameterError
from .validate import positive as _positive

#: Grid resolution: g = 2^(⌊log₂ Δ⌋ − DEFAULT_BITS), so Δ/g ∈ [1024, 2048).
DEFAULT_BITS: int = 10

#: Integer scale of selection scores (report-noisy-max): scores are multiplied by 2^20.
SCORE_SCALE: int = 1 << 20

#: Bernoulli probabilities of the secure samplers are multiples of 2^−53 (see :meth:`SecureSampler.bernoulli_dyadic`).
BERNOULLI_BITS: int = 53

#: Labels the app shows next to results and in the ledger.
SECURE_LABEL = "secure (exact OpenDP samplers, unseeded)"
TEACHING_LABEL = "seeded teaching run"

# integers (grid units) must stay exactly representable as floats and within OpenDP's i64
_MAX_UNITS = float(2**53)


def mode_label(secure: bool) -> str:
    """The label of the mode that produced a release: secure or seeded teaching run."""
    return SECURE_LABEL if secure else TEACHING_LABEL


def _dp() -> Any:
    """OpenDP's prelude with the 'contrib' features enabled (imported on first use)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def grid_for(sensitivity: float, bits: int = DEFAULT_BITS) -> float:
    """The grid step g = 2^(⌊log₂ Δ⌋ − bits) for contributions bounded by Δ (exact power of two)."""
    d = _positive("Sensitivity", sensitivity)
    _, e = math.frexp(d)  # d = f·2^e, f in [0.5, 1): ⌊log₂ d⌋ = e − 1 exactly
    return math.ldexp(1.0, e - 1 - int(bits))


def units_ceil(sensitivity: np.ndarray | float, grid: float) -> np.ndarray:
    """Δ_u = ⌈Δ/g⌉ (integer sensitivity in grid units; exact for a power-of-two g)."""
    s = np.asarray(sensitivity, dtype=float) / grid  # division by a power of two is exact
    return np.ceil(s).astype(np.int64)


def to_units(values: np.ndarray | float, grid: float) -> np.ndarray:
    """round(v/g) as int64, refusing values that would not be exact on the grid."""
    v = np.asarray(values, dtype=float) / grid
    if v.size and not np.all(np.isfinite(v)):
        raise ParameterError("Secure releases need finite values.")
    if v.size and float(np.max(np.abs(v))) >= _MAX_UNITS:
        raise ParameterError("A value is too large for the secure grid.",
                             hint="Use fewer grid bits (a coarser grid) or smaller thresholds.")
    return np.rint(v).astype(np.int64)


def exact_cell_sums(cells: np.ndarray, units: np.ndarray, n_cells: int) -> np.ndarray:
    """Σ units per cell in exact integer arithmetic (int64), for cells in 0..n_cells−1.

    The units are cut into three 21-bit limbs whose per-cell sums stay below 2^53 for up to
    2^31 records, so three float ``bincount`` calls are exact; the limbs are recombined in int64.
    """
    u = np.asarray(units, dtype=np.int64)
    c = np.asarray(cells, dtype=np.int64)
    neg = u < 0
    a = np.abs(u)
    out = np.zeros(int(n_cells), dtype=np.int64)
    for sign, mask in ((1, ~neg), (-1, neg)):
        if not mask.any():
            continue
        part = a[mask] if not mask.all() else a
        cc = c[mask] if not mask.all() else c
        for k in range(3):
            limb = (part >> (21 * k)) & ((1 << 21) - 1)
            s = np.bincount(cc, weights=limb.astype(np.float64), minlength=int(n_cells))
            out += sign * (np.rint(s).astype(np.int64) << (21 * k))
    if out.size and np.max(np.abs(out)) >= _MAX_UNITS:
        raise ParameterError("A total is too large for the secure grid.",
                             hint="Use fewer grid bits (a coarser grid).")
    return out


@dataclass(frozen=True)
class NoisyAnswers:
    """Secure noisy answers.

    ``estimate`` = ``grid`` × ``units`` (value units, exact floats); ``scale`` is the effective
    noise parameter per answer in value units (Laplace scale b or Gaussian σ); ``loss`` is
    the privacy loss per answer that OpenDP's privacy map certifies for the stated
    sensitivity (ε for Laplace, ρ for Gaussian); ``grid`` the grid step.
    """

    estimate: np.ndarray
    units: np.ndarray
    scale: np.ndarray
    grid: float
    loss: np.ndarray
    family: Literal["laplace", "gaussian"]


class SecureSampler:
    """Exact, unseeded noise for real releases (see the module docstring for the grid).

    ``bits``: grid resolution (g = 2^(⌊log₂ Δ⌋ − bits)); more bits give a finer grid and
    noise closer to the continuous one. The sampler keeps no state: every call draws fresh
    randomness from OpenDP's generator.
    """

    secure: bool = True
    label: str = SECURE_LABEL

    def __init__(self, bits: int = DEFAULT_BITS) -> None:
        if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 0 <= int(bits) <= 30:
            raise ParameterError(f"Grid bits must be a whole number from 0 to 30 (got {bits!r}).")
        self.bits = int(bits)

    def __repr__(self) -> str:
        return f"SecureSampler(bits={self.bits})"

    def describe(self) -> dict[str, Any]:
        """Public description for a release's parameters and the ledger."""
        return {"sampler": "opendp", "grid": f"2^(floor(log2 sensitivity) - {self.bits})", "bits": self.bits}

    def grid(self, sensitivity: float) -> float:
        return grid_for(sensitivity, self.bits)

    # -- integer mechanisms -------------------------------------------------------------

    @staticmethod
    def _measurement(kind: str, scale: float) -> Any:
        dp = _dp()
        metric = dp.l1_distance(T="i64") if kind == "laplace" else dp.l2_distance(T="i64")
        make = dp.m.make_laplace if kind == "laplace" else dp.m.make_gaussian
        return make(dp.vector_domain(dp.atom_domain(T="i64")), metric, scale=float(scale))

    def _answers(self, kind: Literal["laplace", "gaussian"], units: np.ndarray, grid: float,
                 sensitivity: np.ndarray | float, budget: float) -> NoisyAnswers:
        g = _positive("Grid step", grid)
        if math.frexp(g)[0] != 0.5:
            raise ParameterError("The secure grid step must be a power of two.")
        b = _positive("ε" if kind == "laplace" else "ρ", budget)
        u = np.asarray(units, dtype=np.int64).ravel()
        limits.check_limit("Noisy answers in one secure release", u.size, limits.MAX_SECURE_ANSWERS,
                           "Release fewer cells (coarser groups) or run it as a seeded teaching run.")
        d_u = np.broadcast_to(units_ceil(sensitivity, g), u.shape).astype(np.int64)
        if d_u.size and d_u.min() < 1:
            raise ParameterError("Sensitivities must be positive.")
        est_units = np.empty_like(u)
        scale = np.empty(u.size)
        loss = np.empty(u.size)
        for du in np.unique(d_u):
            rows = np.flatnonzero(d_u == du)
            s = du / b if kind == "laplace" else du / math.sqrt(2.0 * b)
            # OpenDP's map certifies the loss at sensitivity Δ_u; nudge the scale up if float
            # rounding of s left it a hair above the budget
            for _ in range(8):
                meas = self._measurement(kind, s)
                lss = float(meas.map(int(du)))
                if lss <= b * (1 + 1e-12):
                    break
                s = math.nextafter(s, math.inf) * (1 + 1e-15)
            else:  # pragma: no cover - OpenDP's map never strays this far
                raise ParameterError("OpenDP could not certify the privacy budget for this scale.")
            est_units[rows] = np.asarray(meas([int(x) for x in u[rows]]), dtype=np.int64)
            scale[rows] = g * s
            loss[rows] = lss
        if est_units.size and np.max(np.abs(est_units)) >= _MAX_UNITS:
            raise ParameterError("A noisy answer is too large for the secure grid.",
                                 hint="Use fewer grid bits (a coarser grid).")
        return NoisyAnswers(estimate=est_units.astype(np.float64) * g, units=est_units, scale=scale, grid=g,
                            loss=loss, family=kind)

    def laplace_answers(self, units: np.ndarray, grid: float, sensitivity: np.ndarray | float,
                        eps: float) -> NoisyAnswers:
        """Answers (in grid units) + discrete Laplace: ε-DP for contributions bounded by ``sensitivity``
        (value units) on the grid ``grid``."""
        return self._answers("laplace", units, grid, sensitivity, eps)

    def gaussian_answers(self, units: np.ndarray, grid: float, sensitivity: np.ndarray | float,
                         rho: float) -> NoisyAnswers:
        """Answers (in grid units) + discrete Gaussian: ρ-zCDP for contributions bounded by
        ``sensitivity`` (value units) on the grid ``grid``."""
        return self._answers("gaussian", units, grid, sensitivity, rho)

    # -- drop-in noise (values already on the grid) --------------------------------------

    def laplace(self, scale: float, size: int | None = None, *, sensitivity: float = 1.0) -> np.ndarray | float:
        """Laplace-like noise on the grid of ``sensitivity``: g·K with K discrete Laplace, calibrated so
        that a query of that sensitivity gets at least the privacy of Laplace(``scale``).

        Only add this to answers that are already on the same grid (e.g. integer counts with
        sensitivity 1): added to an arbitrary float it would reveal the float's offset from the grid.
        """
        b = _positive("Laplace scale", scale)
        d = _positive("Sensitivity", sensitivity)
        n = 1 if size is None else int(size)
        g = 1.0 if d == 1.0 else self.grid(d)
        out = self.laplace_answers(np.zeros(n, dtype=np.int64), g, d, d / b).estimate
        return float(out[0]) if size is None else out

    def gaussian(self, sigma: float, size: int | None = None, *, sensitivity: float = 1.0) -> np.ndarray | float:
        """Gaussian-like noise on the grid of ``sensitivity`` (discrete Gaussian, at least the privacy of
        N(0, σ²) for that sensitivity). Same caveat as :meth:`laplace`."""
        s = _positive("Gaussian σ", sigma)
        d = _positive("Sensitivity", sensitivity)
        n = 1 if size is None else int(size)
        g = 1.0 if d == 1.0 else self.grid(d)
        out = self.gaussian_answers(np.zeros(n, dtype=np.int64), g, d, d * d / (2 * s * s)).estimate
        return float(out[0]) if size is None else out

    # -- selection ---------------------------------------------------------------------

    def select(self, scores: np.ndarray, eps: float, *, sensitivity: float = 1.0, monotonic: bool = False,
               log_weights: np.ndarray | None = None) -> tuple[int, float]:
        """Index chosen by OpenDP's report-noisy-max (exponential noise): ε-DP when the ``scores``
        have sensitivity Δ (monotone scores: ε = Δ/scale; otherwise 2Δ/scale).

        ``scores``/Δ must be whole numbers (counts, ranks), so that scaling by K = 2^20 is exact.
        ``log_weights``: a data-independent preference log w_j, added to the scores in the units
        of the exponent (as in the exponential mechanism P ∝ w·e^{ε·score/(cΔ)}); it changes the
        output law, never the privacy. Returns (index, ε certified by OpenDP's map).
        """
        e = _positive("Selection ε", eps)
        d = _positive("Score sensitivity", sensitivity)
        sc = np.asarray(scores, dtype=float).ravel()
        if sc.size == 0 or not np.all(np.isfinite(sc)):
            raise ParameterError("A selection needs a non-empty list of finite scores.")
        if not np.all(sc / d == np.rint(sc / d)):
            raise ParameterError("Secure selection needs whole-number scores (in units of the sensitivity).")
        K = SCORE_SCALE
        # exponent of candidate j: (ε/(cΔ))·score_j + log w_j, c = 1 (monotone) or 2
        c = 1.0 if monotonic else 2.0
        scale_u = c * K / e                      # noise scale in score units of 1/K
        s_u = np.rint(sc / d * K)
        if log_weights is not None:
            lw = np.asarray(log_weights, dtype=float).ravel()
            if lw.shape != sc.shape or not np.all(np.isfinite(lw)):
                raise ParameterError("Preference weights must be finite, one per candidate.")
            s_u = s_u + np.rint(lw * scale_u)  # P ∝ w·e^{s_u/scale_u}: add scale_u·log w
        if np.max(np.abs(s_u)) >= 2.0**62:
            raise ParameterError("Selection scores are too large for the secure selection.",
                                 hint="Use a larger ε for the selection.")
        return _noisy_max(s_u, K, scale_u, monotonic, e)

    def select_integers(self, scores: np.ndarray, eps: float, *, sensitivity: int,
                        monotonic: bool = False) -> tuple[int, float]:
        """Index chosen by OpenDP's report-noisy-max (exponential noise) over whole-number ``scores``
        whose ℓ∞ change between neighbours is at most the whole number ``sensitivity`` Δ: noise scale
        cΔ/ε (c = 1 for monotone scores, else 2), ε-DP. Returns (index, ε certified by OpenDP's map)."""
        e = _positive("Selection ε", eps)
        if isinstance(sensitivity, bool) or int(sensitivity) != sensitivity or int(sensitivity) < 1:
            raise ParameterError(f"The score sensitivity must be a positive whole number (got {sensitivity!r}).")
        sc = np.asarray(scores).ravel()
        if sc.size == 0 or not np.all(np.isfinite(sc)) or not np.all(sc == np.rint(sc)):
            raise ParameterError("Secure selection needs a non-empty list of whole-number scores.")
        if np.max(np.abs(sc)) >= 2.0**62:
            raise ParameterError("Selection scores are too large for the secure selection.")
        d = int(sensitivity)
        return _noisy_max(sc, d, (1.0 if monotonic else 2.0) * d / e, monotonic, e)

    def select_at_scale(self, scores: np.ndarray, scale: float, sensitivities: np.ndarray) -> tuple[int, np.ndarray]:
        """Index chosen by OpenDP's report-noisy-max (exponential noise of ``scale``, non-monotone) over
        whole-number ``scores``, with the loss OpenDP's map certifies for each whole-number score change in
        ``sensitivities`` (2Δ/scale each). For selections whose sensitivity differs per record (the
        personalized exponential mechanism): the caller checks each certified loss against its record's
        budget. Returns (index, certified loss per entry of ``sensitivities``)."""
        b = _positive("Selection noise scale", scale)
        sc = np.asarray(scores).ravel()
        if sc.size == 0 or not np.all(np.isfinite(sc)) or not np.all(sc == np.rint(sc)):
            raise ParameterError("Secure selection needs a non-empty list of whole-number scores.")
        if np.max(np.abs(sc)) >= 2.0**62:
            raise ParameterError("Selection scores are too large for the secure selection.")
        limits.check_limit("Candidates of one secure selection", sc.size, limits.MAX_SECURE_ANSWERS,
                           "Use a coarser output grid (fewer grid bits) or run it as a seeded teaching run.")
        d = np.asarray(sensitivities, dtype=np.int64).ravel()
        if d.size == 0 or d.min() < 0:
            raise ParameterError("Selection sensitivities must be whole numbers ≥ 0.")
        meas = _noisy_max_measurement(float(b))
        uniq, inv = np.unique(d, return_inverse=True)
        losses = np.array([float(meas.map(int(x))) for x in uniq])[inv]
        return int(meas([int(x) for x in sc])), losses

    def bernoulli_dyadic(self, numerators: np.ndarray) -> np.ndarray:
        """Independent exact Bernoulli(k/2^53) draws, one per whole number k in [0, 2^53] of ``numerators``.

        Each draw compares a uniform 53-bit integer U (8 bytes of the operating system's cryptographic
        generator, ``os.urandom``, the top 53 bits kept) with k: P(U < k) = k/2^53 exactly, with no
        floating-point step. Callers round a probability to a multiple of 2^−53 in the direction that
        keeps their privacy claim (never up where a larger probability would cost more)."""
        k = np.asarray(numerators, dtype=np.int64).ravel()
        if k.size and (k.min() < 0 or k.max() > 2**53):
            raise ParameterError("Bernoulli numerators must lie in [0, 2^53].")
        u = np.frombuffer(os.urandom(8 * k.size), dtype=np.uint64) >> np.uint64(11)
        return u.astype(np.int64) < k


@functools.lru_cache(maxsize=64)
def _noisy_max_measurement(scale: float) -> Any:
    """OpenDP's non-monotone ``make_noisy_max`` on i64 scores at ``scale`` (kept: every call of a
    measurement draws fresh randomness, so reusing it only saves its construction)."""
    dp = _dp()
    space = (dp.vector_domain(dp.atom_domain(T="i64")), dp.linf_distance(T="i64", monotonic=False))
    return dp.m.make_noisy_max(*space, dp.max_divergence(), scale=scale)


def _noisy_max(scores: np.ndarray, d_in: int, scale: float, monotonic: bool, eps: float) -> tuple[int, float]:
    """OpenDP's ``make_noisy_max`` on i64 scores at ``scale``, its map at ``d_in`` checked against ``eps``
    before the index is drawn."""
    dp = _dp()
    space = (dp.vector_domain(dp.atom_domain(T="i64")), dp.linf_distance(T="i64", monotonic=monotonic))
    meas = dp.m.make_noisy_max(*space, dp.max_divergence(), scale=float(scale))
    loss = float(meas.map(int(d_in)))
    if loss > eps * (1 + 1e-9):  # pragma: no cover - guarded by the construction above
        raise ParameterError("OpenDP could not certify the selection's budget.")
    return int(meas([int(x) for x in scores])), loss


__all__ = ["BERNOULLI_BITS", "DEFAULT_BITS", "NoisyAnswers", "SECURE_LABEL", "SCORE_SCALE", "SecureSampler",
           "TEACHING_LABEL", "exact_cell_sums", "grid_for", "mode_label", "to_units", "units_ceil"]
