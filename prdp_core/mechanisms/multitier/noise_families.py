"""Noise families of central multi-tier release and their residuals (Wang et al., §4, Table 1).

``Δ`` is the query's sensitivity under add/remove neighbours:

* ``geometric`` — two-sided geometric TSG(p), p = e^{−ε/Δ}, on integer queries; ε-DP,
  universally optimal for Δ = 1 (Ghosh et al. 2012). Residual: Eq. (1), a mixture of a
  point mass at 0 and TSG(p_{i+1}); every tier is exactly TSG(p_i) (α = 1).
* ``multiscale_geometric`` — the paper's Δ > 1 construction (§4.2.2): Σ_{ξ=1}^{Δ} ξ·Z_ξ with
  Z_ξ i.i.d. TSG(e^{−ε}); ε-DP on integer queries of sensitivity Δ (a shift s ≤ Δ is absorbed
  by a unit shift of Z_s). Residual: an independent Eq.-(1) residual per Z_ξ (the paper's
  "Σ ξ·r_i" is a typo for independent residuals).
* ``laplace`` — Laplace(Δ/ε); residual 0 w.p. (ε_{i+1}/ε_i)², else Laplace(Δ/ε_{i+1})
  (Table 1; Koufogiannis et al.).
* ``gaussian`` — N(0, σ²) with σ calibrated to (ε, δ) by the analytic Gaussian mechanism
  (Balle and Wang 2018, Thm 8); residual N(0, σ_{i+1}² − σ_i²). Also exactly ρ-zCDP with
  ρ = Δ²/(2σ²), which is the unit its ledger entries use.

Families kept for the validity check only (Table 1 and App. F): ``discrete_gaussian``
(no valid residual in general; Remark 4.1), ``staircase`` (App. F) and ``skellam``
(its residual exists, but Skellam noise is *not* pure ε-DP, contrary to the paper's §2.2).

Floating-point samplers (numpy) are for teaching and review: real releases need exact
discrete samplers (Canonne, Kamath and Steinke 2020) because of floating-point attacks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy import optimize, special

from ...core import noise as _noise
from ...core.errors import ParameterError
from ...core.validate import positive as _pos
from ...core.validate import probability

#: Families a release can use (each has an exact residual sampler).
RELEASE_FAMILIES: tuple[str, ...] = ("geometric", "multiscale_geometric", "laplace", "gaussian")
#: Families the validity check knows (Table 1 of the paper and App. F).
CHECK_FAMILIES: tuple[str, ...] = RELEASE_FAMILIES + ("discrete_gaussian", "staircase", "skellam")

FAMILY_LABELS: dict[str, str] = {
    "geometric": "Two-sided geometric (discrete Laplace)",
    "multiscale_geometric": "Multi-scale geometric Σξ·TSG (Δ > 1 construction)",
    "laplace": "Laplace",
    "gaussian": "Gaussian (analytic calibration)",
    "discrete_gaussian": "Discrete Gaussian",
    "staircase": "Staircase",
    "skellam": "Skellam",
}

#: Largest sensitivity the multi-scale geometric family accepts (it draws Δ variables per answer).
MAX_MULTISCALE_SENSITIVITY = 1000


# ---------------------------------------------------------------------------
# Small numerical helpers
# ---------------------------------------------------------------------------


def tsg_variance(a: float | np.ndarray) -> float | np.ndarray:
    """Variance of TSG(p) with p = e^{−a}: 2p/(1−p)² = 1/(2·sinh²(a/2)) (stable for tiny a)."""
    a = np.asarray(a, dtype=float)
    with np.errstate(over="ignore"):
        out = 0.5 / np.sinh(a / 2.0) ** 2
    return out if out.ndim else float(out)


def tsg_pmf(k: np.ndarray | int, a: float) -> np.ndarray:
    """pmf of TSG(e^{−a}) at integers k: (1−p)/(1+p)·p^{|k|}, computed as tanh(a/2)·e^{−a|k|}."""
    k = np.abs(np.asarray(k, dtype=float))
    return math.tanh(a / 2.0) * np.exp(-a * k)


def geometric_residual_weights(a_from: float, a_to: float) -> tuple[float, float]:
    """Eq. (1): weights (w0, w1) of the point mass at 0 and of TSG(p_to) in the residual.

    ``a_from`` = ε_i/Δ and ``a_to`` = ε_{i+1}/Δ (so p = e^{−a}). With p_i < p_{i+1}:
    w0 = (1−p_{i+1})² p_i / ((1−p_i)² p_{i+1}) and
    w1 = (p_{i+1} − p_i)(1 − p_i p_{i+1}) / ((1−p_i)² p_{i+1}); w0 + w1 = 1.
    Computed with expm1 so that small budgets do not cancel catastrophically.
    """
    a_from, a_to = float(a_from), float(a_to)
    if not (a_from >= a_to > 0):
        raise ParameterError("A residual only exists from a larger budget to a smaller (or equal) one.")
    if a_from == a_to:
        return 1.0, 0.0
    r = math.expm1(-a_to) / math.expm1(-a_from)  # (1−p_to)/(1−p_from)
    w0 = r * r * math.exp(a_to - a_from)
    # w1 directly: (p_to − p_from)(1 − p_from p_to) / ((1 − p_from)² p_to)
    w1 = (-math.expm1(-(a_from - a_to))) * (-math.expm1(-(a_from + a_to))) / math.expm1(-a_from) ** 2
    return w0, w1


def analytic_gaussian_delta(eps: float, sigma: float, sensitivity: float = 1.0) -> float:
    """δ of the Gaussian mechanism N(0, σ²) at ε (Balle and Wang 2018, Thm 8), exact:
    δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)."""
    s, d = float(sigma), float(sensitivity)
    a = d / (2 * s)
    b = eps * s / d
    t1 = special.ndtr(a - b)
    t2 = math.exp(min(eps + special.log_ndtr(-a - b), 700.0))
    return float(max(t1 - t2, 0.0))


def gaussian_sigma_for(eps: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ for which N(0, σ²) on a Δ-sensitive query is (ε, δ)-DP (analytic calibration)."""
    eps = _pos("ε", eps)
    sens = _pos("sensitivity", sensitivity)
    delta = probability("δ", delta)

    def f(log_s: float) -> float:
        return math.log(max(analytic_gaussian_delta(eps, math.exp(log_s), sens), 1e-300)) - math.log(delta)

    lo, hi = math.log(sens) - 12.0, math.log(sens) + 12.0
    if f(lo) < 0:  # already private with almost no noise
        return math.exp(lo)
    while f(hi) > 0 and hi < math.log(sens) + 600.0:  # tiny ε or δ need more noise than e^12·Δ
        hi += 12.0
    if f(hi) > 0:
        raise ParameterError(f"No Gaussian noise gives (ε, δ) = ({eps:g}, {delta:g}).",
                             hint="Use a larger ε or δ (δ below about 1e-300 cannot be represented).")
    return float(math.exp(optimize.brentq(f, lo, hi, xtol=1e-12)))


def gaussian_eps_for(sigma: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest ε for which N(0, σ²) on a Δ-sensitive query is (ε, δ)-DP (analytic, exact)."""
    sigma = _pos("σ", sigma)
    if analytic_gaussian_delta(0.0, sigma, sensitivity) <= delta:
        return 0.0

    def f(e: float) -> float:
        return analytic_gaussian_delta(e, sigma, sensitivity) - delta

    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
        if hi > 1e4:
            return math.inf
    return float(optimize.brentq(f, 0.0, hi, xtol=1e-12))


def staircase_cf(t: np.ndarray, eps: float, sensitivity: float = 1.0) -> np.ndarray:
    """CF of the staircase noise (Geng and Viswanath 2015), App. F Eq. (4)–(5), γ = 1/(e^{ε/2}+1):
    Φ(t) = e^{−3ε/2}(e^ε−1)² [e^ε sin(Δtγ) + sin(Δ(1−γ)t)] / (2Δt(cosh ε − cos Δt)).
    (The paper's LaTeX drops the fraction in e^{−3ε/2}; checked against numerical integration.)"""
    t = np.asarray(t, dtype=float)
    g = 1.0 / (math.exp(eps / 2) + 1.0)
    d = float(sensitivity)
    with np.errstate(invalid="ignore", divide="ignore"):
        num = math.exp(-1.5 * eps) * math.expm1(eps) ** 2 * (math.exp(eps) * np.sin(d * t * g)
                                                                 + np.sin(d * (1 - g) * t))
        out = num / (2 * d * t * (math.cosh(eps) - np.cos(d * t)))
    return np.where(np.abs(t) < 1e-12, 1.0, out)


def discrete_gaussian_cf(t: np.ndarray, sigma: float) -> np.ndarray:
    """CF of the discrete Gaussian DG(σ²) (Remark 4.1): Σ_k e^{−k²/2σ²} cos(kt) / Σ_k e^{−k²/2σ²}."""
    t = np.asarray(t, dtype=float)
    half = int(12 * sigma + 20)
    k = np.arange(-half, half + 1, dtype=float)
    w = np.exp(-k * k / (2 * sigma * sigma))
    return (np.cos(np.multiply.outer(t, k)) @ w) / w.sum()


# ---------------------------------------------------------------------------
# Noise families
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NoiseFamily:
    """A noise family η(ε) of additive mechanisms, with what Algorithm 1 needs of it.

    ``param(ε)`` is the family's natural parameter at budget ε (p, b, σ, λ …), ``cf`` its
    characteristic function, ``variance`` the MSE of one noisy answer. Budgets are pure ε
    except for ``gaussian`` (ε with the shared δ). ``sensitivity`` Δ is the largest change of
    the query when one record is added or removed.
    """

    name: ClassVar[str] = "abstract"
    lattice: ClassVar[bool] = False
    releasable: ClassVar[bool] = True
    sensitivity: float = 1.0
    delta: float | None = None

    @property
    def label(self) -> str:
        return FAMILY_LABELS[self.name]

    def param(self, eps: float) -> float:
        raise NotImplementedError

    def param_name(self) -> str:
        return "parameter"

    def cf(self, t: np.ndarray, param: float) -> np.ndarray:
        raise NotImplementedError

    def variance(self, param: float) -> float:
        raise NotImplementedError

    def sample(self, param: float, size: int | tuple[int, ...], *, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def residual(self, p_from: float, p_to: float, size: int | tuple[int, ...], *,
                 rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError(f"{self.label} has no residual sampler.")

    def closed_form(self, p_from: float, p_to: float) -> tuple[bool | None, str]:
        """Whether a residual exists by a closed-form argument (None: no closed form known)."""
        return None, ""

    def halfwidth(self, param: float, level: float = 0.95) -> float:
        """Half-width h with P(|η| ≤ h) ≥ level (an exact quantile where available)."""
        return float(math.sqrt(self.variance(param)) * special.ndtri(0.5 + level / 2))

    # budget algebra for the "gradual" baseline: pieces add in this unit
    budget_unit: ClassVar[str] = "eps"

    def budget(self, eps: float) -> float:
        """The tier's budget in the unit that composes additively (ε; ρ for the Gaussian)."""
        return float(eps)

    def variance_at_budget(self, b: float) -> float:
        """Variance of one release that spends budget ``b`` (in :attr:`budget_unit`)."""
        return self.variance(self.param(b))


@dataclass(frozen=True)
class GeometricNoise(NoiseFamily):
    """TSG(p), p = e^{−ε/Δ}: ε-DP for integer queries of sensitivity Δ (Δ = 1 for counts)."""

    name: ClassVar[str] = "geometric"
    lattice: ClassVar[bool] = True

    def param(self, eps: float) -> float:  # a = ε/Δ, p = e^{-a}
        return float(eps) / float(self.sensitivity)

    def param_name(self) -> str:
        return "ε/Δ"

    def cf(self, t: np.ndarray, param: float) -> np.ndarray:
        p = math.exp(-param)
        return (1 - p) ** 2 / (1 - 2 * p * np.cos(np.asarray(t, dtype=float)) + p * p)

    def variance(self, param: float) -> float:
        return float(tsg_variance(param))

    def sample(self, param, size, *, rng):
        return _noise.two_sided_geometric(param, size, rng=rng)

    def residual(self, p_from, p_to, size, *, rng):
        w0, _ = geometric_residual_weights(p_from, p_to)
        z = _noise.two_sided_geometric(p_to, size, rng=rng)
        return np.where(rng.random(size) < w0, 0, z)

    def closed_form(self, p_from, p_to):
        if p_to <= p_from:
            w0, w1 = geometric_residual_weights(p_from, p_to)
            return True, (f"Eq. (1): 0 with probability {w0:.4g}, else TSG(e^(−{p_to:.4g})) "
                          f"with probability {w1:.4g}.")
        return False, "A residual cannot remove noise: the smaller budget must come second."

    def pmf(self, k: np.ndarray, param: float) -> np.ndarray:
        return tsg_pmf(k, param)

    def halfwidth(self, param: float, level: float = 0.95) -> float:
        # P(|η| ≤ h) = 1 − 2 p^{h+1}/(1+p)  →  smallest integer h with that ≥ level
        p = math.exp(-param)
        h = math.log((1 - level) * (1 + p) / 2) / (-param) - 1
        return float(max(0, math.ceil(h - 1e-12)))


@dataclass(frozen=True)
class MultiscaleGeometricNoise(NoiseFamily):
    """Σ_{ξ=1}^{Δ} ξ·Z_ξ, Z_ξ i.i.d. TSG(e^{−ε}) (§4.2.2): ε-DP on integer queries of sensitivity Δ."""

    name: ClassVar[str] = "multiscale_geometric"
    lattice: ClassVar[bool] = True

    def __post_init__(self) -> None:
        d = self.sensitivity
        if d != int(d) or not (1 <= d <= MAX_MULTISCALE_SENSITIVITY):
            raise ParameterError(f"The multi-scale geometric noise needs an integer sensitivity between 1 and "
                                 f"{MAX_MULTISCALE_SENSITIVITY} (got {d!r}).",
                                 hint="Use integer clipping bounds, or the Laplace family for large bounds.")

    @property
    def _scales(self) -> np.ndarray:
        return np.arange(1, int(self.sensitivity) + 1, dtype=float)

    def param(self, eps: float) -> float:
        return float(eps)

    def param_name(self) -> str:
        return "ε (per scale)"

    def cf(self, t, param):
        p = math.exp(-param)
        ct = np.cos(np.multiply.outer(np.asarray(t, dtype=float), self._scales))
        return np.prod((1 - p) ** 2 / (1 - 2 * p * ct + p * p), axis=-1)

    def variance(self, param):
        s = self._scales
        return float((s * s).sum() * tsg_variance(param))

    def sample(self, param, size, *, rng):
        shape = (size,) if isinstance(size, int) else tuple(size)
        z = _noise.two_sided_geometric(param, (int(self.sensitivity),) + shape, rng=rng)
        return np.tensordot(self._scales.astype(np.int64), z, axes=(0, 0))

    def residual(self, p_from, p_to, size, *, rng):
        shape = (size,) if isinstance(size, int) else tuple(size)
        w0, _ = geometric_residual_weights(p_from, p_to)
        full = (int(self.sensitivity),) + shape
        z = np.where(rng.random(full) < w0, 0, _noise.two_sided_geometric(p_to, full, rng=rng))
        return np.tensordot(self._scales.astype(np.int64), z, axes=(0, 0))

    def closed_form(self, p_from, p_to):
        if p_to <= p_from:
            w0, _ = geometric_residual_weights(p_from, p_to)
            return True, f"An independent Eq.-(1) residual per scale ξ (point mass weight {w0:.4g})."
        return False, "A residual cannot remove noise: the smaller budget must come second."

    def pmf(self, k: np.ndarray, param: float, *, window: int | None = None) -> np.ndarray:
        """Exact pmf on integers k (by convolution of the scaled TSG pmfs on a wide window)."""
        k = np.asarray(k)
        half = window or int(np.abs(k).max() + 40 * self.sensitivity ** 1.5 / max(param, 0.05) + 50)
        grid = np.arange(-half, half + 1)
        out = np.zeros(grid.size)
        out[half] = 1.0
        for xi in self._scales.astype(int):
            comp = np.zeros(grid.size)
            ks = np.arange(-(half // xi), half // xi + 1)
            comp[ks * xi + half] = tsg_pmf(ks, param)
            out = np.convolve(out, comp, mode="same")
        return out[np.clip(k + half, 0, grid.size - 1)] * (np.abs(k) <= half)


@dataclass(frozen=True)
class LaplaceNoise(NoiseFamily):
    """Laplace(b = Δ/ε): ε-DP for real-valued queries of sensitivity Δ."""

    name: ClassVar[str] = "laplace"

    def param(self, eps):
        return float(self.sensitivity) / float(eps)

    def param_name(self) -> str:
        return "scale b"

    def cf(self, t, param):
        t = np.asarray(t, dtype=float)
        return 1.0 / (1.0 + (param * t) ** 2)

    def variance(self, param):
        return 2.0 * param * param

    def sample(self, param, size, *, rng):
        return np.asarray(_noise.laplace(param, size, rng=rng))

    def residual(self, p_from, p_to, size, *, rng):
        keep0 = (p_from / p_to) ** 2  # (ε_{i+1}/ε_i)²
        z = np.asarray(_noise.laplace(p_to, size, rng=rng))
        return np.where(rng.random(size) < keep0, 0.0, z)

    def closed_form(self, p_from, p_to):
        if p_to >= p_from:
            w = (p_from / p_to) ** 2
            return True, f"Table 1: 0 with probability {w:.4g}, else Laplace(scale {p_to:.4g})."
        return False, "A residual cannot remove noise: the smaller budget must come second."

    def halfwidth(self, param, level=0.95):
        return float(param * math.log(1.0 / (1.0 - level)))


@dataclass(frozen=True)
class GaussianNoise(NoiseFamily):
    """N(0, σ²), σ from (ε, δ) by the analytic calibration; exactly ρ-zCDP with ρ = Δ²/(2σ²)."""

    name: ClassVar[str] = "gaussian"
    budget_unit: ClassVar[str] = "rho"
    delta: float = 1e-6

    def __post_init__(self) -> None:
        probability("The Gaussian family's δ", self.delta)

    def param(self, eps):
        return gaussian_sigma_for(eps, float(self.delta), self.sensitivity)

    def param_name(self) -> str:
        return "σ"

    def cf(self, t, param):
        t = np.asarray(t, dtype=float)
        return np.exp(-0.5 * (param * t) ** 2)

    def variance(self, param):
        return float(param) ** 2

    def sample(self, param, size, *, rng):
        return np.asarray(_noise.gaussian(param, size, rng=rng))

    def residual(self, p_from, p_to, size, *, rng):
        var = p_to * p_to - p_from * p_from
        if var <= 0:
            return np.zeros(size)
        return np.asarray(_noise.gaussian(math.sqrt(var), size, rng=rng))

    def closed_form(self, p_from, p_to):
        if p_to >= p_from:
            return True, f"Table 1: N(0, σ²) with σ² = {p_to ** 2 - p_from ** 2:.4g}."
        return False, "A residual cannot remove noise: the smaller budget must come second."

    def rho(self, sigma: float) -> float:
        return float(self.sensitivity) ** 2 / (2.0 * sigma * sigma)

    def budget(self, eps):
        return self.rho(self.param(eps))

    def variance_at_budget(self, b):
        return float(self.sensitivity) ** 2 / (2.0 * b)


@dataclass(frozen=True)
class DiscreteGaussianNoise(NoiseFamily):
    """DG(σ²) (Canonne et al. 2020); σ² = 2Δ² ln(2/δ)/ε² as in the paper's §2.2 (validity check only)."""

    name: ClassVar[str] = "discrete_gaussian"
    lattice: ClassVar[bool] = True
    releasable: ClassVar[bool] = False
    delta: float | None = 1e-6

    def param(self, eps):
        return math.sqrt(2.0 * self.sensitivity ** 2 * math.log(2.0 / float(self.delta or 1e-6))) / float(eps)

    def param_name(self) -> str:
        return "σ"

    def cf(self, t, param):
        return discrete_gaussian_cf(t, param)

    def variance(self, param):
        k = np.arange(-int(12 * param + 20), int(12 * param + 20) + 1, dtype=float)
        w = np.exp(-k * k / (2 * param * param))
        return float((k * k * w).sum() / w.sum())


@dataclass(frozen=True)
class StaircaseNoise(NoiseFamily):
    """Staircase noise (Geng and Viswanath 2015), parameter ε (validity check only; App. F)."""

    name: ClassVar[str] = "staircase"
    releasable: ClassVar[bool] = False

    def param(self, eps):
        return float(eps)

    def param_name(self) -> str:
        return "ε"

    def cf(self, t, param):
        return staircase_cf(t, param, self.sensitivity)


@dataclass(frozen=True)
class SkellamNoise(NoiseFamily):
    """Skellam(λ), λ = Δ/(e^ε − 1) as in the paper (validity check only: Skellam is not pure ε-DP)."""

    name: ClassVar[str] = "skellam"
    lattice: ClassVar[bool] = True
    releasable: ClassVar[bool] = False

    def param(self, eps):
        return float(self.sensitivity) / math.expm1(float(eps))

    def param_name(self) -> str:
        return "λ"

    def cf(self, t, param):
        return np.exp(2 * param * (np.cos(np.asarray(t, dtype=float)) - 1))

    def variance(self, param):
        return 2.0 * param

    def closed_form(self, p_from, p_to):
        if p_to >= p_from:
            return True, f"Table 1: Skellam(λ = {p_to - p_from:.4g})."
        return False, "A residual cannot remove noise: the smaller budget must come second."


_FAMILIES: dict[str, type[NoiseFamily]] = {
    "geometric": GeometricNoise,
    "multiscale_geometric": MultiscaleGeometricNoise,
    "laplace": LaplaceNoise,
    "gaussian": GaussianNoise,
    "discrete_gaussian": DiscreteGaussianNoise,
    "staircase": StaircaseNoise,
    "skellam": SkellamNoise,
}


#: Largest sensitivity Δ (a sum's clipping bound) a noise family accepts: larger ones overflow.
MAX_SENSITIVITY = 1e15


def noise_family(name: str, *, sensitivity: float = 1.0, delta: float | None = None) -> NoiseFamily:
    """The noise family ``name`` for a query of sensitivity Δ (δ only for Gaussian families)."""
    if name not in _FAMILIES:
        raise ParameterError(f"Unknown noise family '{name}'.", hint=f"Choose one of {', '.join(_FAMILIES)}.")
    sens = _pos("The sensitivity Δ", sensitivity)
    if sens > MAX_SENSITIVITY:
        raise ParameterError(f"The sensitivity Δ = {sens:g} is too large: at most {MAX_SENSITIVITY:g} is supported "
                             "(the noise scales and their checks overflow beyond).",
                             hint="Lower the clipping bound U: it is the largest value one record may contribute.")
    cls = _FAMILIES[name]
    if name in ("geometric",) and sens != int(sens):
        raise ParameterError(f"The geometric family needs an integer sensitivity (got {sensitivity!r}).",
                             hint="Use integer clipping bounds or the Laplace family.")
    if name in ("gaussian", "discrete_gaussian"):
        return cls(sensitivity=sens, delta=1e-6 if delta is None else float(delta))
    return cls(sensitivity=sens)
