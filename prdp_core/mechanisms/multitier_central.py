"""Multi-tier release in the central (curator) model: residual noise from characteristic functions.

Wang et al., "Multi-tier Differential Private Query Release" (arXiv:2606.15543), §4.
Several analysts ("tiers") ask the same query with budgets ε_1 > ε_2 > … > ε_m. The
curator touches the data once, to release r_1 = q(X) + η(ε_1); every lower tier is
derived by adding *residual* noise, r_{i+1} = r_i + s_i, whose characteristic function
(CF) is the ratio of the tiers' noise CFs (Algorithm 1):

    Φ_{s_i}(t) = Φ_{η(ε_{i+1})}(t) / Φ_{η(ε_i)}(t).

The ratio does not involve q(X), so the residual is a data-independent post-processing
of r_i: any coalition of tiers learns no more than its highest-budget member (Thm 4.1),
while each r_i is distributed exactly as the single-tier release at ε_i. The construction
exists only when the ratio is a valid CF (Bochner's theorem); :func:`check_residual`
decides that for a family and a pair of budgets *before* any data is touched.

Noise families (``Δ`` is the query's sensitivity under add/remove neighbours):

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
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Sequence

import numpy as np
from scipy import optimize, special

from .. import noise as _noise
from ..errors import ParameterError
from ..validate import positive as _pos
from ..validate import probability

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
    delta: float | None = 1e-6

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


# ---------------------------------------------------------------------------
# Validity of a residual (Bochner's theorem), Table 1 and App. F
# ---------------------------------------------------------------------------


def bochner_matrix(ratio: Callable[[np.ndarray], np.ndarray], points: Sequence[float]) -> np.ndarray:
    """M_ab = R(t_a − t_b): a valid CF makes M Hermitian positive semi-definite for any points."""
    t = np.asarray(points, dtype=float)
    diff = np.subtract.outer(t, t)
    return np.asarray(ratio(diff.ravel()), dtype=float).reshape(diff.shape)


def bochner_min_eigenvalue(ratio: Callable[[np.ndarray], np.ndarray], points: Sequence[float]) -> float:
    """Smallest eigenvalue of the Bochner matrix (negative ⇒ ``ratio`` is not a CF)."""
    return float(np.linalg.eigvalsh(bochner_matrix(ratio, points)).min())


def lattice_residual_pmf(ratio: Callable[[np.ndarray], np.ndarray], n: int = 1 << 14) -> np.ndarray:
    """Fourier coefficients p(k) = (1/2π)∫ R(t) e^{−ikt} dt of a 2π-periodic ratio R, k = −n/2 … n/2−1.

    For integer-valued noise R is a valid CF iff every p(k) ≥ 0; then p is the residual pmf.
    Computed by an n-point FFT (aliasing error is negligible for the smooth ratios here).
    """
    t = 2 * np.pi * np.arange(n) / n
    vals = np.asarray(ratio(t), dtype=complex)
    coef = np.fft.fft(vals).real / n
    return np.fft.fftshift(coef)


def residual_ratio(family: str | NoiseFamily, eps_from: float, eps_to: float, t: np.ndarray, *,
                   sensitivity: float = 1.0, delta: float | None = None,
                   params: tuple[float, float] | None = None) -> np.ndarray:
    """R(t) = Φ_to(t)/Φ_from(t), the characteristic function the residual would need (Algorithm 1)."""
    fam = family if isinstance(family, NoiseFamily) else noise_family(family, sensitivity=sensitivity, delta=delta)
    a, b = params if params is not None else (fam.param(eps_from), fam.param(eps_to))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(fam.cf(t, b), dtype=float) / np.asarray(fam.cf(t, a), dtype=float)


@dataclass(frozen=True)
class ResidualCheck:
    """Does a residual distribution exist from budget ``eps_from`` to ``eps_to``? (Algorithm 1)

    ``exists`` is True/False when decided (closed form, a negative Fourier mass, |R| > 1 or a
    negative Bochner eigenvalue), None when no counterexample was found and no closed form is
    known (not a proof). ``witness`` holds the numbers that prove a negative answer.
    """

    family: str
    eps_from: float
    eps_to: float
    param_from: float
    param_to: float
    exists: bool | None
    method: str
    detail: str
    min_eigenvalue: float | None = None
    points: tuple[float, ...] = ()
    min_mass: float | None = None
    max_abs_ratio: float | None = None
    witness: dict[str, float] = field(default_factory=dict)

    def sentence(self) -> str:
        verdict = {True: "a residual exists", False: "no residual exists", None: "undecided"}[self.exists]
        return f"{FAMILY_LABELS[self.family]}, ε {self.eps_from:g} → {self.eps_to:g}: {verdict} ({self.method}). " \
               f"{self.detail}"


def check_residual(family: str | NoiseFamily, eps_from: float, eps_to: float, *, sensitivity: float = 1.0,
                   delta: float | None = None, params: tuple[float, float] | None = None,
                   points: Sequence[float] | None = None) -> ResidualCheck:
    """Decide whether a lower tier at ``eps_to`` can be derived from a higher one at ``eps_from``.

    The residual's CF is R(t) = Φ_{to}(t)/Φ_{from}(t) (Algorithm 1). It exists iff R is a valid
    CF (Bochner). Decided by, in order: a closed form (geometric, Laplace, Gaussian, Skellam);
    for integer-valued noise, the sign of R's Fourier coefficients (the residual pmf); for
    real-valued noise, |R(t)| ≤ 1 on a fine grid (a 2-point Bochner matrix) and the smallest
    eigenvalue of a Bochner matrix on a grid. ``params`` bypasses the ε → parameter mapping
    (e.g. σ 1 → 1.1 for the discrete Gaussian); ``points`` are extra Bochner points to report.
    Depends on the budgets only, never on data, so a plan is checked before the release.
    """
    fam = family if isinstance(family, NoiseFamily) else noise_family(family, sensitivity=sensitivity, delta=delta)
    if params is None:
        e_from, e_to = _pos("ε (from)", eps_from), _pos("ε (to)", eps_to)
        a, b = fam.param(e_from), fam.param(e_to)
    else:
        a, b = float(params[0]), float(params[1])
        e_from, e_to = float(eps_from), float(eps_to)

    def ratio(t: np.ndarray) -> np.ndarray:
        num = np.asarray(fam.cf(t, b), dtype=float)
        den = np.asarray(fam.cf(t, a), dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = num / den
        return np.where(np.abs(den) < 1e-300, np.where(np.abs(num) < 1e-300, 1.0, np.inf), r)

    common = dict(family=fam.name, eps_from=e_from, eps_to=e_to, param_from=a, param_to=b)
    if a == b:
        return ResidualCheck(**common, exists=True, method="equal budgets",
                             detail="Same budget: the residual is 0 and both tiers receive the same output.")
    pts = tuple(float(p) for p in (points or ()))
    eig = bochner_min_eigenvalue(ratio, pts) if pts else None
    verdict, why = fam.closed_form(a, b)
    if verdict is not None:
        return ResidualCheck(**common, exists=verdict, method="closed form", detail=why, min_eigenvalue=eig,
                             points=pts)
    if fam.lattice:
        pmf = lattice_residual_pmf(ratio)
        half = pmf.size // 2
        kmin = int(np.argmin(pmf)) - half
        mass = float(pmf.min())
        if not pts:
            pts = (0.0, math.pi / 2, math.pi, 3 * math.pi / 2)
            eig = bochner_min_eigenvalue(ratio, pts)
        ok = mass >= -1e-12
        detail = ("All Fourier coefficients of the ratio are non-negative: they form the residual pmf."
                  if ok else f"The ratio's Fourier coefficient at k = {kmin} is {mass:.5g} < 0, a negative "
                             "'probability': no additive noise maps one tier to the other.")
        return ResidualCheck(**common, exists=True if ok else False, method="lattice Fourier inversion",
                             detail=detail, min_eigenvalue=eig, points=pts, min_mass=mass,
                             witness={"k": float(kmin), "mass": mass})
    # continuous: |R| ≤ 1 everywhere (2-point Bochner matrices), then a Bochner matrix on a grid
    scale = max(math.sqrt(max(fam.variance(a), 0.0)) if fam.name != "staircase" else 1.0 / fam.sensitivity, 1e-9)
    tmax = 40.0 * math.pi / scale
    grid = np.linspace(tmax / 200_000, tmax, 200_000)
    r = ratio(grid)
    absr = np.abs(r)
    i = int(np.argmax(absr))
    if absr[i] > 1 + 1e-9:
        t0 = float(grid[i])
        wit_pts = pts or (0.0, t0)
        return ResidualCheck(**common, exists=False, method="Bochner (2 points)",
                             detail=f"|R(t)| = {absr[i]:.5g} > 1 at t = {t0:.5g}: the 2×2 Bochner matrix "
                                    f"[[1, R(t)], [R(t), 1]] has eigenvalue {1 - absr[i]:.5g} < 0.",
                             min_eigenvalue=bochner_min_eigenvalue(ratio, wit_pts), points=tuple(wit_pts),
                             max_abs_ratio=float(absr[i]), witness={"t": t0, "R": float(r[i])})
    bpts = np.linspace(0, tmax / 8, 96)
    eig_grid = bochner_min_eigenvalue(ratio, bpts)
    if eig_grid < -1e-9:
        return ResidualCheck(**common, exists=False, method="Bochner matrix", detail=(
            f"The Bochner matrix on 96 points has eigenvalue {eig_grid:.5g} < 0."), min_eigenvalue=eig_grid,
            points=tuple(bpts), max_abs_ratio=float(absr[i]))
    return ResidualCheck(**common, exists=None, method="Bochner matrix", detail=(
        "No counterexample found on the test grid; this is not a proof that a residual exists."),
        min_eigenvalue=eig_grid if eig is None else eig, points=pts, max_abs_ratio=float(absr[i]))


# ---------------------------------------------------------------------------
# Sampling: Algorithm 1, independent releases and the gradual baseline
# ---------------------------------------------------------------------------


def sample_multitier(family: NoiseFamily, params: Sequence[float], true: np.ndarray, *,
                     rng: np.random.Generator) -> np.ndarray:
    """Algorithm 1: r_1 = q + η(param_1); r_{i+1} = r_i + s_i (residual from param_i to param_{i+1}).

    ``params`` are the tiers' parameters in decreasing-budget order; ``true`` the true answers
    (one per query). Equal consecutive budgets give the *same* output (no fresh draw).
    Returns an array (tiers × queries).
    """
    q = np.atleast_1d(np.asarray(true, dtype=float))
    out = np.empty((len(params), q.size))
    r = q + family.sample(params[0], q.size, rng=rng)
    out[0] = r
    for i in range(1, len(params)):
        if params[i] != params[i - 1]:
            r = r + family.residual(params[i - 1], params[i], q.size, rng=rng)
        out[i] = r
    return out


def sample_independent(family: NoiseFamily, params: Sequence[float], true: np.ndarray, *,
                       rng: np.random.Generator) -> np.ndarray:
    """Naive baseline: a fresh release per tier (collusion costs Σ ε)."""
    q = np.atleast_1d(np.asarray(true, dtype=float))
    return np.stack([q + family.sample(p, q.size, rng=rng) for p in params])


def gradual_pieces(budgets: Sequence[float]) -> np.ndarray:
    """Budget splitting ("gradual" baseline, §6): e_m = b_m, e_l = b_l − b_{l+1} (decreasing budgets)."""
    b = np.asarray(budgets, dtype=float)
    return np.append(b[:-1] - b[1:], b[-1])


def gradual_variance(piece_variances: Sequence[float]) -> np.ndarray:
    """MSE of tier j under the gradual baseline: 1 / Σ_{l ≥ j} 1/v(e_l) (inverse-variance weights)."""
    v = np.asarray(piece_variances, dtype=float)
    with np.errstate(divide="ignore"):
        inv = np.where(np.isfinite(v), 1.0 / v, 0.0)
    tail = np.cumsum(inv[::-1])[::-1]
    with np.errstate(divide="ignore"):
        return 1.0 / tail


def family_piece_variances(family: NoiseFamily, eps: Sequence[float]) -> np.ndarray:
    """Variance of each gradual piece (inf for empty pieces of repeated budgets)."""
    budgets = [family.budget(e) for e in eps]
    pieces = gradual_pieces(budgets)
    return np.array([family.variance_at_budget(e) if e > 1e-15 else math.inf for e in pieces])


def sample_gradual(family: NoiseFamily, eps: Sequence[float], true: np.ndarray, *,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Gradual baseline: one release per budget piece, tier j averages pieces l ≥ j by inverse variance.

    Returns (tier answers, piece answers). Collusion costs the top tier's budget (pieces are
    disjoint budget shares that compose sequentially).
    """
    q = np.atleast_1d(np.asarray(true, dtype=float))
    budgets = [family.budget(e) for e in eps]
    pieces = gradual_pieces(budgets)
    var = family_piece_variances(family, eps)
    piece_out = np.full((len(pieces), q.size), np.nan)
    for l, e in enumerate(pieces):
        if e > 1e-15:
            piece_out[l] = q + family.sample(family.param(e) if family.budget_unit == "eps"
                                             else math.sqrt(family.variance_at_budget(e)), q.size, rng=rng)
    w = np.where(np.isfinite(var), 1.0 / var, 0.0)
    out = np.empty((len(pieces), q.size))
    for j in range(len(pieces)):
        ww = w[j:]
        out[j] = np.nansum(ww[:, None] * np.nan_to_num(piece_out[j:]), axis=0) / ww.sum()
    return out, piece_out


# ---------------------------------------------------------------------------
# Exact joint privacy loss of a coalition (geometric families, finite window)
# ---------------------------------------------------------------------------


def _residual_pmf_window(a_from: float, a_to: float, half: int) -> np.ndarray:
    """pmf of the Eq.-(1) residual on [−half, half]."""
    k = np.arange(-half, half + 1)
    w0, w1 = geometric_residual_weights(a_from, a_to)
    out = w1 * tsg_pmf(k, a_to)
    out[half] += w0
    return out


def geometric_coalition_loss(params: Sequence[float], *, strategy: str = "multitier", shift: int = 1,
                             half: int = 12, chain: Sequence[float] | None = None) -> float:
    """Exact max |log P_q(y)/P_{q+shift}(y)| of the joint output of a coalition, on a finite window.

    ``params`` are the members' a = ε/Δ in decreasing order (two-sided geometric, Δ-sensitive
    query, neighbours q and q + shift). ``chain`` lists every tier's a between the top member
    and the last one (the residuals actually applied); by default the members themselves.
    For ``multitier`` the joint pmf is r_top = q + η and r_next = r_prev + (composed residuals),
    the composed residual pmf being computed by convolving the per-step residual pmfs; for
    ``independent`` the members' outputs are independent. The pmf is evaluated exactly at every
    point of the window [−half, half]^j (j members, j ≤ 4) and the largest log-ratio returned.
    """
    a = [float(x) for x in params]
    j = len(a)
    if not 1 <= j <= 4:
        raise ParameterError("The exact window computation handles coalitions of 1 to 4 tiers.")
    grid = np.arange(-half, half + 1)
    wide = 4 * half
    if strategy == "independent":
        logp0 = sum(np.log(tsg_pmf(grid, ai)).reshape((1,) * i + (-1,) + (1,) * (j - i - 1)) for i, ai in enumerate(a))
        logp1 = sum(np.log(tsg_pmf(grid - shift, ai)).reshape((1,) * i + (-1,) + (1,) * (j - i - 1))
                    for i, ai in enumerate(a))
        return float(np.max(np.abs(logp0 - logp1)))
    if strategy != "multitier":
        raise ParameterError(f"Unknown strategy '{strategy}'.")
    steps = [float(x) for x in (chain if chain is not None else a)]
    # positions of the members in the chain of applied residuals
    idx, pos = [], 0
    for am in a:
        while pos < len(steps) and steps[pos] != am:
            pos += 1
        if pos == len(steps):
            raise ParameterError("The chain of tiers does not contain every coalition member in order.")
        idx.append(pos)
    # composed residual pmf between consecutive members, by convolution of the step residuals
    kernels = []
    for m in range(1, j):
        comp = np.zeros(2 * wide + 1)
        comp[wide] = 1.0
        for s_ in range(idx[m - 1], idx[m]):
            if steps[s_ + 1] != steps[s_]:
                comp = np.convolve(comp, _residual_pmf_window(steps[s_], steps[s_ + 1], wide), mode="same")
        kernels.append(comp)
    # joint pmf on the window: f(a1 − q) Π K(a_{l+1} − a_l)
    def joint(q: int) -> np.ndarray:
        lp = np.log(np.maximum(tsg_pmf(grid - q, a[0]), 1e-320)).reshape((-1,) + (1,) * (j - 1))
        for m in range(1, j):
            diff = np.subtract.outer(grid, grid)  # a_{m} − a_{m−1}: rows a_{m−1}, cols a_m
            k = kernels[m - 1][np.clip(-diff + wide, 0, 2 * wide)]  # kernel at (a_m − a_{m−1})
            shape = [1] * j
            shape[m - 1], shape[m] = grid.size, grid.size
            lp = lp + np.log(np.maximum(k, 1e-320)).reshape(shape)
        return lp

    l0, l1 = joint(0), joint(shift)
    return float(np.max(np.abs(l0 - l1)))
