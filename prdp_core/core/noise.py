"""Noise samplers. Every function takes an explicit ``rng`` (``numpy.random.Generator``).

Seeded generators are for teaching and review: numpy's floating-point Laplace and
Gaussian samplers are predictable from the seed and leak through their low-order bits
(Mironov 2012). Real releases use the secure mode of :mod:`prdp_core.core.secure`, whose
exact samplers replace these.

Privacy meaning of the scale parameters:

* Laplace(b) on a query of ℓ1-sensitivity Δ is ε-DP with ε = Δ / b.
* Gaussian(σ) on a query of ℓ2-sensitivity Δ is ρ-zCDP with ρ = Δ² / (2σ²).
* Two-sided geometric with parameter ε (P(k) ∝ e^{-ε|k|}) on an integer query of
  sensitivity Δ is (Δ·ε)-DP.
* Discrete Gaussian with variance parameter σ² on an integer query of ℓ2-sensitivity Δ
  is Δ²/(2σ²)-zCDP (Canonne, Kamath, Steinke 2020).
* The exponential mechanism with scores of sensitivity Δ, run at ε, is ε-DP (ε/2·… for
  monotone scores see :func:`exponential_mechanism`).
"""

from __future__ import annotations

import math

import numpy as np

from .errors import ParameterError
from .validate import positive as _positive

Size = int | tuple[int, ...] | None


def laplace(scale: float, size: Size = None, *, rng: np.random.Generator) -> np.ndarray | float:
    """Laplace(0, scale) noise: ε = sensitivity / scale."""
    return rng.laplace(0.0, _positive("Laplace scale", scale), size)


def gaussian(sigma: float, size: Size = None, *, rng: np.random.Generator) -> np.ndarray | float:
    """Gaussian N(0, σ²) noise: ρ = sensitivity² / (2σ²)."""
    return rng.normal(0.0, _positive("Gaussian σ", sigma), size)


def two_sided_geometric(eps: float, size: Size = None, *, rng: np.random.Generator) -> np.ndarray:
    """Integer noise with P(k) = (1-a)/(1+a) · a^|k|, a = e^{-ε} (the discrete Laplace).

    Sampled exactly as the difference of two i.i.d. geometric variables on {0, 1, ...}.
    """
    e = _positive("geometric ε", eps)
    p = -math.expm1(-e)  # 1 - e^{-ε}, accurate for small ε
    g1 = rng.geometric(p, size)
    g2 = rng.geometric(p, size)
    return np.asarray(g1 - g2, dtype=np.int64)


def two_sided_geometric_pmf(k: np.ndarray | int, eps: float) -> np.ndarray:
    """Exact pmf of :func:`two_sided_geometric` (for audits and tests)."""
    a = math.exp(-_positive("geometric ε", eps))
    dist = np.abs(np.asarray(k, dtype=float))
    return (1 - a) / (1 + a) * a**dist


def discrete_laplace(t: float, size: Size = None, *, rng: np.random.Generator) -> np.ndarray:
    """Integer noise with P(k) ∝ e^{-|k|/t}."""
    return two_sided_geometric(1.0 / _positive("discrete Laplace scale", t), size, rng=rng)


def discrete_gaussian(sigma: float, size: int = 1, *, rng: np.random.Generator) -> np.ndarray:
    """Discrete Gaussian N_Z(0, σ²): P(k) ∝ exp(-k²/(2σ²)), k ∈ ℤ.

    Rejection sampling from a discrete Laplace with t = ⌊σ⌋ + 1 (Canonne, Kamath and
    Steinke 2020, Algorithm 3), vectorised. The acceptance test uses floating point, so
    this sampler is exact up to float rounding; secure mode uses an exact one.
    """
    s = _positive("discrete Gaussian σ", sigma)
    n = int(size)
    t = math.floor(s) + 1
    out = np.empty(0, dtype=np.int64)
    while out.size < n:
        m = max(16, int((n - out.size) * 1.6))
        y = discrete_laplace(t, m, rng=rng)
        accept = rng.random(m) < np.exp(-((np.abs(y) - s * s / t) ** 2) / (2 * s * s))
        out = np.concatenate((out, y[accept]))
    return out[:n]


def discrete_gaussian_pmf(k: np.ndarray, sigma: float, *, support: int | None = None) -> np.ndarray:
    """pmf of :func:`discrete_gaussian` (normalised over a wide support; for tests)."""
    s = _positive("discrete Gaussian σ", sigma)
    half = support if support is not None else int(12 * s + 20)
    grid = np.arange(-half, half + 1)
    z = np.exp(-(grid.astype(float) ** 2) / (2 * s * s)).sum()
    return np.exp(-(np.asarray(k, dtype=float) ** 2) / (2 * s * s)) / z


def exponential_mechanism(scores: np.ndarray, eps: float, sensitivity: float = 1.0, *,
                          rng: np.random.Generator, monotone: bool = False, size: Size = None) -> np.ndarray | int:
    """Index drawn with probability ∝ exp(ε·score / (2Δ)) (or ε·score/Δ for monotone scores).

    Implemented with the Gumbel-max trick (exact in distribution). ε-DP when the scores
    have sensitivity Δ (for monotone scores, e.g. rank-based quality functions that only
    move in one direction between neighbours, the factor 2 can be dropped).
    """
    e = _positive("exponential-mechanism ε", eps)
    d = _positive("score sensitivity", sensitivity)
    sc = np.asarray(scores, dtype=float)
    if sc.ndim != 1 or sc.size == 0:
        raise ParameterError("The exponential mechanism needs a non-empty list of scores.")
    factor = e / (d if monotone else 2 * d)
    logits = factor * sc
    shape = (sc.size,) if size is None else ((size,) if isinstance(size, int) else tuple(size)) + (sc.size,)
    g = rng.gumbel(size=shape)
    idx = np.argmax(logits + g, axis=-1)
    return int(idx) if size is None else idx


def exponential_mechanism_probs(scores: np.ndarray, eps: float, sensitivity: float = 1.0, *,
                                monotone: bool = False) -> np.ndarray:
    """Exact output distribution of :func:`exponential_mechanism` (for audits)."""
    e = _positive("exponential-mechanism ε", eps)
    d = _positive("score sensitivity", sensitivity)
    logits = (e / (d if monotone else 2 * d)) * np.asarray(scores, dtype=float)
    logits -= logits.max()
    w = np.exp(logits)
    return w / w.sum()


def noisy_max_exponential_probs(scores: np.ndarray, scale: float) -> np.ndarray:
    """Exact law of report-noisy-max with exponential noise, argmax_i (s_i + E_i), E_i ~ Exponential(``scale``)
    i.i.d. — OpenDP's ``make_noisy_max`` and the permute-and-flip law (for audits):
    P(j) = ∫ e^{−x/b}/b · Π_{i≠j} (1 − e^{−(x − (s_i − s_j))/b}) dx over x ≥ max(0, max_{i≠j} s_i − s_j)
    (below it some candidate beats j surely), by adaptive quadrature."""
    from scipy import integrate

    s = np.asarray(scores, dtype=float)
    b = float(scale)
    out = np.empty(s.size)
    for j in range(s.size):
        others = np.delete(s - s[j], j)

        def density(x: float, others: np.ndarray = others) -> float:
            return math.exp(-x / b) / b * float(np.prod(-np.expm1(-(x - others) / b)))

        start = max(0.0, float(others.max()) if others.size else 0.0)
        out[j] = integrate.quad(density, start, start + 50 * b, limit=400, epsabs=0, epsrel=1e-12)[0] \
            + integrate.quad(density, start + 50 * b, math.inf, limit=200)[0]
    return out


def gaussian_sigma_for_rho(sensitivity: float, rho: float) -> float:
    """σ such that the Gaussian mechanism on a Δ-sensitive query is ρ-zCDP: σ = Δ / √(2ρ)."""
    return _positive("sensitivity", sensitivity) / math.sqrt(2 * _positive("ρ", rho))


def laplace_scale_for_eps(sensitivity: float, eps: float) -> float:
    """Scale b such that Laplace(b) on a Δ-sensitive query is ε-DP: b = Δ / ε."""
    return _positive("sensitivity", sensitivity) / _positive("ε", eps)
