"""The designer's public assumption about the measure, and the records per domain it implies (forecast inputs).

An :class:`AssumedData` (Normal with negative draws redrawn, as the paper's synthetic data;
log-normal; or a table of public quantiles), capped at U, is represented by about 4,100 quantile
points with their probability masses (dense in both tails), on which E is evaluated: the
share p_i of records in each domain i and M's expected per-domain statistics (counts and sums
per power-of-two bin), times n (:class:`RecordModel`). Part 1's pass probabilities per domain
(binomial count plus Laplace, exact; normal in the local model) are computed here. Never
reads a record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import special, stats

from ...core.errors import ParameterError, PolicyError
from ...core.validate import positive
from .budget import BudgetFunction

# ---------------------------------------------------------------------------
# The assumed distribution of the measure
# ---------------------------------------------------------------------------


def _quantile_grid() -> tuple[np.ndarray, np.ndarray]:
    """Mid-quantiles and masses of a grid uniform in u and in logit(u) (dense in both tails)."""
    edges = np.unique(np.concatenate((np.linspace(0.0, 1.0, 2049), special.expit(np.linspace(-30, 30, 2049)),
                                      [0.0, 1.0])))
    return 0.5 * (edges[1:] + edges[:-1]), np.diff(edges)


_U_MID, _U_MASS = _quantile_grid()


@dataclass(frozen=True)
class AssumedData:
    """The designer's public assumption about the measure v (never read from the records).

    ``kind``: ``normal`` — Normal(``a`` = mean, ``b`` = standard deviation) with negative draws
    redrawn (the paper's synthetic balances, Sec. 8.1); ``lognormal`` — median ``a``, standard
    deviation ``b`` of ln v; ``quantiles`` — a table of public quantiles (``probs`` from 0 to 1,
    non-decreasing ``values`` ≥ 0), linear in between. Values above the domain bound U are
    capped at U (a record lives in [0, U]).
    """

    kind: Literal["normal", "lognormal", "quantiles"]
    a: float = 0.0
    b: float = 0.0
    probs: tuple[float, ...] = ()
    values: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.kind == "normal":
            positive("The assumed standard deviation", self.b)
            if not math.isfinite(self.a) or self.a / self.b < -30:
                raise ParameterError("The assumed mean must be a number not far below zero.",
                                     hint="Values are non-negative: give a mean of at least −30 standard deviations.")
        elif self.kind == "lognormal":
            positive("The assumed median", self.a)
            positive("The assumed spread of ln v", self.b)
        elif self.kind == "quantiles":
            p, v = np.asarray(self.probs, dtype=float), np.asarray(self.values, dtype=float)
            if p.size < 2 or p.size != v.size or p[0] != 0.0 or p[-1] != 1.0 or np.any(np.diff(p) <= 0) \
                    or not np.all(np.isfinite(v)) or np.any(v < 0) or np.any(np.diff(v) < 0):
                raise ParameterError("Assumed quantiles need probabilities rising from 0 to 1 and non-decreasing "
                                     "values ≥ 0, one value per probability.",
                                     hint="E.g. probabilities 0, 0.5, 0.99, 1 with values 0, 40000, 300000, 2000000.")
        else:
            raise ParameterError(f"Unknown assumed distribution '{self.kind}'.",
                                 hint="Use normal, lognormal or quantiles.")

    @staticmethod
    def normal(mean: float, sd: float) -> "AssumedData":
        return AssumedData("normal", float(mean), float(sd))

    @staticmethod
    def lognormal(median: float, log_sd: float) -> "AssumedData":
        return AssumedData("lognormal", float(median), float(log_sd))

    @staticmethod
    def from_quantiles(probs: Any, values: Any) -> "AssumedData":
        return AssumedData("quantiles", probs=tuple(float(x) for x in probs), values=tuple(float(x) for x in values))

    def quantile(self, u: np.ndarray) -> np.ndarray:
        """Quantile function of the assumed distribution (before the cap at U)."""
        u = np.asarray(u, dtype=float)
        if self.kind == "normal":  # truncated at 0: F⁻¹(u) = μ − σ·Φ⁻¹((1 − u)·Φ(μ/σ))
            return np.maximum(self.a - self.b * special.ndtri((1.0 - u) * special.ndtr(self.a / self.b)), 0.0)
        if self.kind == "lognormal":
            return self.a * np.exp(self.b * special.ndtri(u))
        return np.interp(u, self.probs, self.values)

    def points(self, U: float) -> tuple[np.ndarray, np.ndarray]:
        """(values capped at U, probability masses) representing the distribution."""
        return np.minimum(self.quantile(_U_MID), float(U)), _U_MASS

    def describe(self) -> str:
        if self.kind == "normal":
            return f"Normal(mean {self.a:,.4g}, sd {self.b:,.4g}), negative values redrawn"
        if self.kind == "lognormal":
            return f"log-normal (median {self.a:,.4g}, sd of ln v {self.b:.3g})"
        return "quantiles " + ", ".join(f"p{100 * p:g} = {v:,.4g}" for p, v in zip(self.probs, self.values))

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "quantiles":
            return {"kind": self.kind, "probs": list(self.probs), "values": list(self.values)}
        return {"kind": self.kind, "a": self.a, "b": self.b}


# ---------------------------------------------------------------------------
# Records per domain under the assumed distribution
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordModel:
    """n records drawn from an :class:`AssumedData`, seen through a budget's domains: per point of
    the assumed distribution its value, mass and domain (1..L), and the expected per-domain shares."""

    budget: BudgetFunction
    n: int
    values: np.ndarray
    mass: np.ndarray
    domain: np.ndarray

    @staticmethod
    def of(budget: BudgetFunction, assumed: AssumedData, n: Any) -> "RecordModel":
        if not isinstance(budget, BudgetFunction):
            raise ParameterError("budget must be a BudgetFunction (see prdp_core.mechanisms.prdp.budget).")
        if not isinstance(assumed, AssumedData):
            raise ParameterError("assumed must be an AssumedData (the assumed distribution of the measure).")
        nn = _check_n(n)
        if budget.columns and (budget.value_column is None or len(budget.columns) != 1):
            raise PolicyError("The forecast needs a budget of one measure (or a constant budget): this one reads "
                              f"{', '.join(budget.columns)}.", hint="Forecast a preset, a step table or an "
                                                                    "expression of the measure alone.")
        v, m = assumed.points(budget.U)
        e = budget(v)
        return RecordModel(budget, nn, v, m, budget.domains().index(e).astype(np.int64))

    @property
    def L(self) -> int:
        return self.budget.domains().L

    def shares(self) -> np.ndarray:
        """p_i: the share of records in each domain."""
        return np.bincount(self.domain, weights=self.mass, minlength=self.L + 1)[1:]

    def per_domain(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance, per domain, of the total of x(v) over n records (x = 0 outside)."""
        m1 = np.bincount(self.domain, weights=self.mass * x, minlength=self.L + 1)[1:]
        m2 = np.bincount(self.domain, weights=self.mass * x * x, minlength=self.L + 1)[1:]
        return self.n * m1, self.n * np.maximum(m2 - m1 * m1, 0.0)


def _check_n(n: Any) -> int:
    try:
        v = float(n)
    except (TypeError, ValueError):
        raise ParameterError(f"The number of records must be a whole number (got {n!r}).") from None
    if not math.isfinite(v) or v < 1 or v > 1e12:
        raise ParameterError(f"The number of records must be between 1 and 10¹² (got {n!r}).",
                             hint="Give the public (or a noisy) number of records.")
    return round(v)


def _laplace_sf(x: np.ndarray, b: float) -> np.ndarray:
    """P(Laplace(b) ≥ x)."""
    z = np.asarray(x, dtype=float) / b
    return np.where(z >= 0, 0.5 * np.exp(-np.maximum(z, 0.0)), 1.0 - 0.5 * np.exp(np.minimum(z, 0.0)))


def _binomial_pass(n: int, p: float, threshold: float, b: float) -> tuple[float, float, float]:
    """For c ~ Binomial(n, p): P(c + Laplace(b) ≥ T), E[c | passed], E[c | failed] (exact sums over
    c within 12 standard deviations of its mean)."""
    if p <= 0:
        pi = float(_laplace_sf(np.array([threshold]), b)[0])
        return pi, 0.0, 0.0
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    lo, hi = max(0, int(math.floor(mean - 12 * sd - 2))), min(n, int(math.ceil(mean + 12 * sd + 2)))
    c = np.arange(lo, hi + 1, dtype=float)
    pmf = stats.binom.pmf(c, n, min(p, 1.0))
    sf = _laplace_sf(threshold - c, b)
    pi = float(np.dot(pmf, sf))
    e_pass = float(np.dot(pmf, c * sf)) / pi if pi > 0 else mean
    e_fail = float(np.dot(pmf, c * (1 - sf))) / (1 - pi) if pi < 1 else mean
    return pi, e_pass, e_fail


_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(64)
_GH_W = _GH_W / _GH_W.sum()


def _normal_pass(mean: np.ndarray, var: np.ndarray, thresholds: np.ndarray, b: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For S ~ Normal(mean, var) per domain: P(S + Laplace(b) ≥ T), E[S | passed], E[S | failed]
    (Gauss–Hermite quadrature over S; b = 0 means no noise)."""
    s = mean[:, None] + np.sqrt(var)[:, None] * _GH_X[None, :]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        z = np.where(b[:, None] > 0, (thresholds[:, None] - s) / np.where(b > 0, b, 1.0)[:, None],
                     np.where(thresholds[:, None] - s > 0, np.inf, -np.inf))
        sf = np.where(z >= 0, 0.5 * np.exp(-np.maximum(z, 0.0)), 1.0 - 0.5 * np.exp(np.minimum(z, 0.0)))
    sf = np.where(np.isnan(z), 0.0, sf)
    pi = sf @ _GH_W
    with np.errstate(divide="ignore", invalid="ignore"):
        e_pass = np.where(pi > 0, (s * sf) @ _GH_W / pi, mean)
        e_fail = np.where(pi < 1, (s * (1 - sf)) @ _GH_W / (1 - pi), mean)
    return pi, e_pass, e_fail


def _first_passing(pi: np.ndarray) -> tuple[np.ndarray, float]:
    """P(ℓ = i) for the first domain passing (ℓ = L when none does), and P(no domain passes)."""
    L = pi.size
    pi = np.clip(pi, 0.0, 1.0)
    fail_before = np.concatenate(([1.0], np.cumprod(1.0 - pi)))  # ∏_{k<i}(1 − π_k), i = 1..L+1
    ell = pi * fail_before[:L]
    ell[L - 1] = fail_before[L - 1]  # domain L: passes or nothing passed
    return ell, float(fail_before[L])
