"""The general PrDP framework's failure predicted before a run (Algorithms 2 and 5), from a public
assumption about the measure and a public or noisy number of records — never from the records.

Why. Algorithm 2 (Sec. 6) selects a domain ℓ with a noisy threshold test (Part 1) and runs a
standard mechanism M at (1 − s)·ε_τ on the records of domains ≥ ℓ. With few records for the
budgets, either step can make the answer collapse to a relative error near 100%: Part 1 stops
at a domain holding no records (or none passes, ℓ = L) and M sees almost nothing, or M's budget
ε_M is so small that the sum's private clipping threshold falls to the smallest candidates
(Normal(50k, 50k) balances, β = 0.1: median error 100% at n = 10⁴ with the log and sqrt
budgets of Sec. 8.1, and for all three at n = 10³). This module says so before the run.

The model (closed form; :func:`forecast`)
-----------------------------------------
* **Records**: n independent draws from an :class:`AssumedData` — the designer's public
  assumption about the measure v (Normal with negative draws redrawn, as the paper's synthetic
  data; log-normal; or a table of public quantiles), capped at U. It is represented by about
  4,100 quantile points with their probability masses (dense in both tails), on which E is
  evaluated: the share p_i of records in each domain i and M's expected per-domain statistics
  (counts and sums per power-of-two bin), times n. Budgets must depend on the measure alone (or
  be constant).
* **Part 1** (Algorithm 1 on E' = s·E with β₁): domain i's count c_i ~ Binomial(n, p_i) plus
  Laplace(b_i), b_i = 1/(s·2^{i−1}ε̌), reaches T_i = b_i·ln(L/β₁) with probability
  π_i = E[S_b(T_i − c_i)] (S_b the Laplace survival function, summed exactly over c_i's pmf).
  Treating domains as independent (the multinomial's weak negative correlation is neglected),
  the first domain passing has the product-rule law P(ℓ = i) = π_i·∏_{k<i}(1 − π_k) for i < L,
  and P(ℓ = L) = ∏_{k<L}(1 − π_k), which includes "no domain passes" (ℓ = L, the paper's
  initialisation).
* **Given ℓ**: the dropped domains k < ℓ hold E[c_k | failed] records, domain ℓ holds
  E[c_ℓ | passed], later ones their mean; M runs at ε_M = (1 − s)·2^{ℓ−1}ε̌ on D_ℓ:
  count — error −dropped + Laplace(1/ε_M); sum (:class:`~prdp_core.mechanisms.prdp.ClippedSum`)
  — τ = 2^j with the exponential mechanism's probabilities on the expected counts above each
  candidate, error Σ_{D_ℓ} min(v, τ) − total + Laplace(τ/ε_sum). The relative error
  |error|/total is then a mixture over (ℓ, j) of folded shifted Laplace laws
  (:class:`ErrorLaw`), whose CDF, quantiles and mean are closed forms.
* **Failure** is P(relative error ≥ ``level``) (50% by default: the answer misses at least half
  of the total — a collapse misses nearly all of it).

Comparison mechanisms (the remedies) use the same record model: the Sec. 5.2 sum extension and
Algorithm 1 (retained sums of noisy per-domain answers: their noise is a sum of independent
Laplace variables with distinct scales, a signed mixture of Laplace laws by partial fractions;
the chosen domain's noise, conditioned on passing, is replaced by its conditional mean plus an
unconditioned Laplace — an approximation), the naive ε̌ baseline, and the local model
(Algorithm 5, PrLDP): every total there carries the sum of n Laplace variables, taken as normal
(its excess kurtosis is 3/n), with the thresholds of Algorithm 4.

:func:`outlook` evaluates the forecast for the design and for each remedy that keeps the
policy (another split of E and β between Part 1 and M, the sum extension, Algorithm 1, the
naive baseline, the tighter PrLDP thresholds, fewer domains through a smaller ε̂) and for the
policy changes that might be needed (a smaller declared bound U, i.e. a larger ε̌ = E(U); every
budget raised), and recommends one. Everything here uses public parameters, the assumed
distribution and n only: it can be shown in review mode. ``benchmarks/repro_prdp_forecast.py``
checks it against simulation (docs/reproductions/prdp-general-framework.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import special, stats

from ..budget import BudgetFunction
from ..engines.memory import value_bins
from ..errors import ParameterError, PolicyError
from ..validate import positive
from .prdp import PAPER_SHARE, ClippedSum, Split, _check_beta, check_share
from .prldp import ThresholdRule, local_thresholds

Model = Literal["central", "local"]
ForecastQuery = Literal["count", "sum"]

#: Relative error from which an answer counts as a failure (it misses at least half of the truth).
FAILURE_LEVEL = 0.5
#: Failure probability from which the forecast warns before a run.
WARN_AT = 0.1
#: Splits of (E, β) between Part 1 and M tried as a remedy (Part 1's shares).
SPLITS: tuple[tuple[float, float], ...] = tuple((s, b) for s in (1 / 3, 0.25, 1 / 6, 0.1) for b in (0.5, 0.1, 0.9))
#: Caps ε̂/2^k tried for fewer domains.
CAP_HALVINGS = (1, 2, 4, 8, 16)
#: Factors tried when every budget is raised (a weaker policy: only when nothing else works).
BUDGET_FACTORS = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0)


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
# The law of the error: a mixture of shifted noises
# ---------------------------------------------------------------------------


def _partial_fractions(scales: np.ndarray) -> np.ndarray:
    """Weights A_k with ∏_j 1/(1 + b_j²t²) = Σ_k A_k/(1 + b_k²t²): the density of a sum of
    independent Laplace(b_k) variables is Σ_k A_k·Laplace(b_k) (distinct scales; zeros ignored)."""
    b2 = np.asarray(scales, dtype=float) ** 2
    out = np.zeros(b2.shape)
    for row in range(b2.shape[0]):
        nz = np.flatnonzero(b2[row] > 0)
        for k in nz:
            others = b2[row, nz[nz != k]]
            out[row, k] = float(np.prod(b2[row, k] / (b2[row, k] - others))) if others.size else 1.0
    return out


def _merge_close(scales: np.ndarray) -> np.ndarray:
    """Scales sorted in decreasing order, merging neighbours within 10% into one Laplace of the same
    variance (partial fractions need distinct scales; the merge is an approximation)."""
    b = np.sort(np.asarray(scales, dtype=float)[np.asarray(scales) > 0])[::-1]
    out: list[float] = []
    for x in b:
        if out and x > 0.9 * out[-1]:
            out[-1] = math.sqrt(out[-1] ** 2 + x ** 2)
        else:
            out.append(float(x))
    return np.array(out)


def _laplace_cdf(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        z = np.where(b > 0, x / np.where(b > 0, b, 1.0), np.where(x >= 0, np.inf, -np.inf))
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0)), 1.0 - 0.5 * np.exp(-np.maximum(z, 0.0)))


@dataclass(frozen=True)
class ErrorLaw:
    """The law of a mechanism's signed error, as a mixture of components: component c has
    probability ``weight[c]``, a fixed part ``shift[c]`` (dropped records, clipping) plus noise —
    a sum of independent Laplace variables with scales ``scales[c]`` (zeros unused), or, when
    ``sd`` is given, a normal with standard deviation ``sd[c]`` — and a true answer ``truth[c]``
    (relative errors are |error| / truth)."""

    weight: np.ndarray
    shift: np.ndarray
    truth: np.ndarray
    scales: np.ndarray | None = None      # (components, K)
    sd: np.ndarray | None = None          # (components,)
    coef: np.ndarray | None = field(default=None, repr=False)

    @staticmethod
    def laplace(weight: Any, shift: Any, truth: Any, scales: Any) -> "ErrorLaw":
        sc = np.asarray(scales, dtype=float)
        if sc.ndim == 1:  # one Laplace per component
            one = np.where(sc > 0, sc, 0.0)[:, None]
            return ErrorLaw(np.asarray(weight, dtype=float), np.asarray(shift, dtype=float),
                            np.asarray(truth, dtype=float), one, None, (one > 0).astype(float))
        rows = [_merge_close(r) for r in sc]
        k = max(1, max(r.size for r in rows))
        sc = np.zeros((len(rows), k))
        for i, r in enumerate(rows):
            sc[i, : r.size] = r
        return ErrorLaw(np.asarray(weight, dtype=float), np.asarray(shift, dtype=float),
                        np.asarray(truth, dtype=float), sc, None, _partial_fractions(sc))

    @staticmethod
    def normal(weight: Any, shift: Any, truth: Any, sd: Any) -> "ErrorLaw":
        return ErrorLaw(np.asarray(weight, dtype=float), np.asarray(shift, dtype=float),
                        np.asarray(truth, dtype=float), None, np.asarray(sd, dtype=float))

    def _noise_cdf(self, x: np.ndarray) -> np.ndarray:
        """P(noise ≤ x) per component, for x of shape (components, …)."""
        if self.sd is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                sd = self.sd.reshape((-1,) + (1,) * (x.ndim - 1))
                return np.where(sd > 0, special.ndtr(x / np.where(sd > 0, sd, 1.0)), (x >= 0).astype(float))
        assert self.scales is not None and self.coef is not None
        out = np.zeros(x.shape)
        nonzero = np.zeros(self.weight.shape, dtype=bool)
        for k in range(self.scales.shape[1]):
            b = self.scales[:, k].reshape((-1,) + (1,) * (x.ndim - 1))
            a = self.coef[:, k].reshape((-1,) + (1,) * (x.ndim - 1))
            out += np.where(b > 0, a * _laplace_cdf(x, b), 0.0)
            nonzero |= self.scales[:, k] > 0
        step = (x >= 0).astype(float)
        nz = nonzero.reshape((-1,) + (1,) * (x.ndim - 1))
        return np.clip(np.where(nz, out, step), 0.0, 1.0)

    def within(self, r: float | np.ndarray) -> np.ndarray:
        """P(relative error ≤ r) per component (rows) and r (columns)."""
        rr = np.atleast_1d(np.asarray(r, dtype=float))
        t = np.abs(self.truth)[:, None]
        mu = self.shift[:, None]
        inside = self._noise_cdf(rr[None, :] * t - mu) - self._noise_cdf(-rr[None, :] * t - mu)
        return np.clip(np.where(t > 0, inside, 0.0), 0.0, 1.0)

    def cdf(self, r: float | np.ndarray) -> np.ndarray:
        """P(relative error ≤ r) for each r."""
        return np.clip(self.weight @ self.within(r) / max(float(self.weight.sum()), 1e-300), 0.0, 1.0)

    def failure(self, level: float = FAILURE_LEVEL) -> float:
        """P(relative error ≥ level)."""
        return float(1.0 - self.cdf(level)[0])

    def quantile(self, q: float) -> float:
        """The q-quantile of the relative error (geometric bisection over [10⁻¹⁵, 10³⁰])."""
        lo, hi = 1e-15, 1e30
        if self.cdf(lo)[0] >= q:
            return 0.0
        if self.cdf(hi)[0] < q:
            return math.inf
        for _ in range(90):
            mid = math.sqrt(lo * hi)
            if self.cdf(mid)[0] >= q:
                hi = mid
            else:
                lo = mid
        return hi

    def mean(self) -> float:
        """E[relative error]: E|μ + X| = Σ_k A_k(|μ| + b_k·e^{−|μ|/b_k}) for Laplace sums, the folded
        normal's mean for normal noise."""
        mu = np.abs(self.shift)
        if self.sd is not None:
            s = self.sd
            with np.errstate(divide="ignore", invalid="ignore"):
                folded = np.where(s > 0, s * math.sqrt(2 / math.pi) * np.exp(-0.5 * (mu / np.where(s > 0, s, 1)) ** 2)
                                  + mu * (1 - 2 * special.ndtr(-mu / np.where(s > 0, s, 1))), mu)
        else:
            assert self.scales is not None and self.coef is not None
            b = self.scales
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                term = np.where(b > 0, self.coef * (mu[:, None] + b * np.exp(-mu[:, None] / np.where(b > 0, b, 1))),
                                0.0)
            has = (b > 0).any(axis=1)
            folded = np.where(has, term.sum(axis=1), mu)
        t = np.abs(self.truth)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(t > 0, folded / np.where(t > 0, t, 1.0), np.inf)
        w = self.weight / max(float(self.weight.sum()), 1e-300)
        return float(np.sum(np.where(w > 0, w * rel, 0.0)))


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
            raise ParameterError("budget must be a BudgetFunction (see prdp_core.budget).")
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


# ---------------------------------------------------------------------------
# The forecast of one mechanism
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Forecast:
    """A mechanism's predicted behaviour at n records of the assumed distribution.

    ``ell_probability[i−1]``: P(the selection settles on domain i) (empty for the naive
    baseline); ``no_pass``: P(no domain reaches its threshold, ℓ = L); ``failure``: P(relative
    error ≥ ``level``); ``median_re``, ``p90_re``, ``expected_re``: the relative error's median,
    90th percentile and mean; ``cause``: where most of the failure comes from (``dropped`` —
    the selection settles too late and drops records, ``clipped`` — the sum's clipping
    threshold falls far below the values, ``noise`` — the noise at the selected budget, or ``""``).
    """

    mechanism: str
    label: str
    query: str
    n: int
    level: float
    failure: float
    median_re: float
    p90_re: float
    expected_re: float
    ell_probability: np.ndarray
    no_pass: float
    cause: str
    law: ErrorLaw = field(repr=False)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def likely_to_fail(self) -> bool:
        return self.failure >= WARN_AT

    def summary(self) -> dict[str, Any]:
        return {"mechanism": self.label, "P(fail)": self.failure, "median RE": self.median_re,
                "90th pct RE": self.p90_re, "expected RE": self.expected_re}


def _finish(mechanism: str, label: str, query: str, rm: RecordModel, level: float, law: ErrorLaw,
            ell_p: np.ndarray, no_pass: float, causes: dict[str, np.ndarray], options: dict[str, Any]) -> Forecast:
    fail_c = 1.0 - law.within(level)[:, 0]
    total = float(np.dot(law.weight, fail_c))
    cause = ""
    if total > 1e-9:
        by = {k: float(np.dot(law.weight * fail_c, m)) for k, m in causes.items()}
        cause = max(by, key=by.get)  # type: ignore[arg-type]
    return Forecast(mechanism, label, query, rm.n, level, float(1.0 - law.cdf(level)[0]), law.quantile(0.5),
                    law.quantile(0.9), law.mean(), ell_p, no_pass, cause, law, options)


def _selection(rm: RecordModel, part1: np.ndarray, thresholds: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """Part 1 of Algorithm 2 (Algorithm 1 on counts): per-domain pass probabilities, conditional
    counts given passed / failed, P(ℓ = i) and P(no pass)."""
    p = rm.shares()
    b = 1.0 / part1
    # exact sums over the binomial's pmf; beyond a standard deviation of 1,000 records, its normal law
    pi, e_pass, e_fail = _normal_pass(rm.n * p, rm.n * p * (1 - p), thresholds, b)
    for i in np.flatnonzero(rm.n * p * (1 - p) <= 1e6):
        pi[i], e_pass[i], e_fail[i] = _binomial_pass(rm.n, float(p[i]), float(thresholds[i]), float(b[i]))
    ell_p, no_pass = _first_passing(pi)
    return pi, e_pass, e_fail, ell_p, no_pass


def _scaling(rm: RecordModel, e_pass: np.ndarray, e_fail: np.ndarray, ell: int) -> np.ndarray:
    """Per-domain factors on the expected statistics given ℓ: failed before ℓ, passed at ℓ < L."""
    mean = rm.n * rm.shares()
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.ones(rm.L)
        g[: ell - 1] = np.where(mean[: ell - 1] > 0, e_fail[: ell - 1] / np.where(mean[: ell - 1] > 0,
                                                                                   mean[: ell - 1], 1), 1.0)
        if ell < rm.L and mean[ell - 1] > 0:
            g[ell - 1] = e_pass[ell - 1] / mean[ell - 1]
    return g


def _m_components(rm: RecordModel, query: ForecastQuery, mech: ClippedSum, g: np.ndarray, ell: int, eps_m: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """M on D_ℓ (domains ≥ ℓ, statistics scaled by g) at ε_M: (probabilities, shifts, truth, scales, causes)."""
    w_pt = rm.mass * g[rm.domain - 1] * rm.n           # records each point stands for, given ℓ
    kept = rm.domain >= ell
    if query == "count":
        truth = float(w_pt.sum())
        dropped = float(w_pt[~kept].sum())
        one = np.ones(1)
        return one, np.array([-dropped]), np.array([truth]), np.array([1.0 / eps_m]), \
            {"dropped": one * (dropped >= 0.5 * truth), "clipped": one * 0.0, "noise": one * (dropped < 0.5 * truth)}
    b = ClippedSum.bins(rm.budget.U)
    key = value_bins(rm.values, b)
    cnt = np.bincount(key[kept], weights=w_pt[kept], minlength=b.size)
    sm = np.bincount(key[kept], weights=(w_pt * rm.values)[kept], minlength=b.size)
    taus, above, clipped = ClippedSum.candidates(cnt, sm, b.j0, b.J)
    e_sel = mech.split * eps_m
    lg = mech.logits(above, np.array([e_sel]))[0]
    prob = np.exp(lg - lg.max())
    prob /= prob.sum()
    truth = float(np.dot(w_pt, rm.values))
    kept_sum = float(sm.sum())
    dropped = truth - kept_sum
    drop_m = np.full(taus.size, float(dropped >= 0.5 * truth))
    clip_m = (1 - drop_m) * ((kept_sum - clipped) >= 0.5 * truth)
    return prob, clipped - truth, np.full(taus.size, truth), taus / (eps_m - e_sel), \
        {"dropped": drop_m, "clipped": clip_m, "noise": (1 - drop_m) * (1 - clip_m)}


def _framework(rm: RecordModel, query: ForecastQuery, beta: float, level: float, eps_share: float,
               beta_share: float, mech: ClippedSum) -> Forecast:
    sp = Split(rm.budget.domains(), beta, eps_share, beta_share)
    _, e_pass, e_fail, ell_p, no_pass = _selection(rm, sp.part1, sp.thresholds())
    parts: list[tuple[np.ndarray, ...]] = []
    causes: dict[str, list[np.ndarray]] = {"dropped": [], "clipped": [], "noise": []}
    for ell in np.flatnonzero(ell_p > 1e-12) + 1:
        g = _scaling(rm, e_pass, e_fail, int(ell))
        eps_m = float(sp.eps_m(np.array([ell]))[0])
        pr, sh, tr, sc, cs = _m_components(rm, query, mech, g, int(ell), eps_m)
        parts.append((ell_p[ell - 1] * pr, sh, tr, sc))
        for k in causes:
            causes[k].append(cs[k])
    law = ErrorLaw.laplace(*(np.concatenate([p[i] for p in parts]) for i in range(4)))
    paper = eps_share == PAPER_SHARE and beta_share == PAPER_SHARE
    label = "PrDP framework (Alg. 2)" if paper else \
        f"PrDP framework (Alg. 2), Part 1 spends {eps_share:.3g} of E and {beta_share:.3g} of β"
    return _finish("framework", label, query, rm, level, law, ell_p, no_pass,
                   {k: np.concatenate(v) for k, v in causes.items()},
                   {"eps_share": eps_share, "beta_share": beta_share})


def _naive(rm: RecordModel, query: ForecastQuery, level: float, mech: ClippedSum) -> Forecast:
    pr, sh, tr, sc, cs = _m_components(rm, query, mech, np.ones(rm.L), 1, rm.budget.eps_min)
    law = ErrorLaw.laplace(pr, sh, tr, sc)
    return _finish("naive", "naive ε̌ (M at ε̌ for everyone)", query, rm, level, law, np.zeros(0), 0.0, cs, {})


def _retained(rm: RecordModel, query: ForecastQuery, beta: float, level: float) -> Forecast:
    """Algorithm 1 (count) or its Sec. 5.2 extension (sum): retained sums of noisy per-domain answers."""
    dp = rm.budget.domains()
    lo = dp.lo
    if query == "count":
        x = np.ones(rm.values.size)
        scales = 1.0 / lo
        thresholds = dp.thresholds(beta)
        name, label = "count", "PrDP count (Alg. 1)"
    else:
        v_bar = rm.budget.upper_values(lo)
        v_bar[0] = rm.budget.U
        v_bar = np.clip(v_bar, 0.0, rm.budget.U)
        x = np.minimum(rm.values, v_bar[rm.domain - 1])
        scales = v_bar / lo
        with np.errstate(invalid="ignore"):
            thresholds = np.where(scales > 0, scales * math.log(dp.L / beta), np.inf)
        name, label = "extension", "PrDP sum extension (Sec. 5.2)"
    mean, var = rm.per_domain(x)
    truth_pt = rm.values if query == "sum" else np.ones(rm.values.size)
    t_mean, _ = rm.per_domain(truth_pt)
    pi, e_pass, e_fail = _normal_pass(mean, var, thresholds, scales)
    ell_p, no_pass = _first_passing(pi)
    with np.errstate(divide="ignore", invalid="ignore"):
        fail_f = np.where(mean > 0, e_fail / np.where(mean > 0, mean, 1), 1.0)
    ws, shs, trs, scs = [], [], [], []
    drop_c: list[float] = []
    for ell in np.flatnonzero(ell_p > 1e-12) + 1:
        t_dom = t_mean.copy()
        t_dom[: ell - 1] *= fail_f[: ell - 1]          # dropped domains: their totals given they failed
        truth = float(t_dom.sum())
        base = float(mean[ell - 1:].sum()) - truth      # −dropped (and any clipping), before the noise
        later = np.zeros(dp.L)
        later[: dp.L - ell] = scales[ell:]              # the later domains' noise stays unconditioned
        # the chosen domain's noise, conditioned on its test: passed (≥ t), or — ℓ = L — nothing passed (< t)
        cases = [(ell_p[ell - 1] - (no_pass if ell == dp.L else 0.0), True)]
        if ell == dp.L:
            cases.append((no_pass, False))
        t = float(thresholds[ell - 1] - mean[ell - 1])
        for w, passed in cases:
            if w <= 0:
                continue
            x = _truncated_laplace_quantiles(t, float(scales[ell - 1]), passed)
            ws.append(np.full(x.size, w / x.size))
            shs.append(base + x)
            trs.append(np.full(x.size, truth))
            scs.append(np.repeat(later[None, :], x.size, axis=0))
            drop_c += [float(truth - float(t_dom[ell - 1:].sum()) >= 0.5 * truth)] * x.size
    law = ErrorLaw.laplace(np.concatenate(ws), np.concatenate(shs), np.concatenate(trs), np.concatenate(scs))
    dc = np.array(drop_c)
    return _finish(name, label, query, rm, level, law, ell_p, no_pass, {"dropped": dc, "noise": 1 - dc}, {})


#: Quantile points of the chosen domain's conditioned noise in the retained-sum forecasts.
_TRUNCATED_POINTS = 48


def _truncated_laplace_quantiles(t: float, b: float, above: bool) -> np.ndarray:
    """Mid-quantiles of Laplace(b) conditioned on ≥ t (``above``) or < t; exact, memoryless tails
    (b = 0 or t infinite: no noise)."""
    u = (np.arange(_TRUNCATED_POINTS) + 0.5) / _TRUNCATED_POINTS
    if not (b > 0) or not math.isfinite(t):
        return np.zeros(1)
    if above and t >= 0:
        return t - b * np.log1p(-u)
    if not above and t <= 0:
        return t + b * np.log(u)
    f_t = 0.5 * math.exp(t / b) if t < 0 else 1.0 - 0.5 * math.exp(-t / b)
    p = f_t + u * (1.0 - f_t) if above else u * f_t
    return np.where(p < 0.5, b * np.log(2 * p), -b * np.log(2 * (1 - p)))


def _local(rm: RecordModel, query: ForecastQuery, beta: float, level: float, threshold: ThresholdRule,
           naive: bool = False) -> Forecast:
    """Algorithm 5 (PrLDP framework) or the local naive baseline: every total carries n Laplace
    variables, taken as normal."""
    dp = rm.budget.domains()
    n = rm.n
    pts_truth = rm.values if query == "sum" else np.ones(rm.values.size)
    if naive:
        U = rm.budget.U
        tau = U if query == "sum" else 1.0
        truth = float(rm.n * np.dot(rm.mass, pts_truth))
        clipped = float(rm.n * np.dot(rm.mass, np.minimum(pts_truth, tau)))
        law = ErrorLaw.normal([1.0], [clipped - truth], [truth], [math.sqrt(2 * n) * tau / dp.eps_min])
        return _finish("local naive", "naive ε̌ (local)", query, rm, level, law, np.zeros(0), 0.0,
                       {"noise": np.ones(1)}, {})
    part1 = dp.lo / 2.0
    th = local_thresholds(n, part1, beta / 2.0, threshold)
    p = rm.shares()
    m, vc = n * p, n * p * (1 - p)
    vs = 2.0 * n / part1 ** 2
    tot = np.sqrt(vc + vs)
    a = (th - m) / tot
    pi = special.ndtr(-a)
    with np.errstate(divide="ignore", invalid="ignore"):
        e_pass = m + vc / tot * np.where(pi > 0, stats.norm.pdf(a) / np.maximum(pi, 1e-300), 0.0)
        e_fail = m - vc / tot * np.where(pi < 1, stats.norm.pdf(a) / np.maximum(1 - pi, 1e-300), 0.0)
    ell_p, no_pass = _first_passing(pi)
    ws, shs, trs, sds, drop_c = [], [], [], [], []
    for ell in np.flatnonzero(ell_p > 1e-12) + 1:
        g = _scaling(rm, e_pass, e_fail, int(ell))
        w_pt = rm.mass * g[rm.domain - 1] * n
        eps_tau = float(dp.lo[ell - 1])
        tau = 1.0
        if query == "sum":
            up = float(rm.budget.upper_values(np.array([eps_tau * (1 - 1e-12)]))[0])
            tau = rm.budget.U if not math.isfinite(up) or up <= 0 else min(up, rm.budget.U)
        kept = rm.domain >= ell
        truth = float(np.dot(w_pt, pts_truth))
        kept_sum = float(np.dot(w_pt[kept], np.minimum(pts_truth[kept], tau)))
        ws.append(ell_p[ell - 1])
        shs.append(kept_sum - truth)
        trs.append(truth)
        sds.append(math.sqrt(2 * n) * 2.0 * tau / eps_tau)
        drop_c.append(float(truth - float(np.dot(w_pt[kept], pts_truth[kept])) >= 0.5 * truth))
    law = ErrorLaw.normal(ws, shs, trs, sds)
    dc = np.array(drop_c)
    return _finish("local framework", "PrLDP framework (Alg. 5)" + ("" if threshold == "paper" else
                                                                     ", tighter thresholds"),
                   query, rm, level, law, ell_p, no_pass, {"dropped": dc, "noise": 1 - dc}, {"threshold": threshold})


def forecast(budget: BudgetFunction, assumed: AssumedData, n: Any, query: ForecastQuery = "sum", *,
             beta: float = 0.1, model: Model = "central", method: str = "framework",
             threshold: ThresholdRule = "paper", level: float = FAILURE_LEVEL, eps_share: float = PAPER_SHARE,
             beta_share: float = PAPER_SHARE, mechanism: ClippedSum | None = None) -> Forecast:
    """Predict a PrDP mechanism's error before running it, without reading any record.

    Parameters
    ----------
    budget: the budget function E (public; one measure or constant).
    assumed: the assumed distribution of the measure (public; :class:`AssumedData`).
    n: the number of records — public, or a noisy count released beforehand.
    query: ``count`` or ``sum`` (of the budget's measure).
    beta: the failure rate β of the design.
    model: ``central`` (PrDP) or ``local`` (PrLDP).
    method: central — ``framework`` (Algorithm 2), ``count`` (Algorithm 1, count queries),
        ``extension`` (Sec. 5.2, sums), ``naive`` (M at ε̌); local — ``framework`` (Algorithm 5)
        or ``naive``.
    threshold: the PrLDP thresholds (``paper`` or ``bernstein``).
    level: a relative error from this level on counts as a failure (default 50%).
    eps_share, beta_share: Algorithm 2's split between Part 1 and M (the paper's ½ each).
    mechanism: the sum's M (default :class:`ClippedSum` with its defaults).

    Returns a :class:`Forecast` (see the module docstring for the model and its approximations).
    """
    b = _check_beta(beta)
    lv = positive("The failure level", level)
    if query not in ("count", "sum"):
        raise ParameterError(f"The forecast covers count and sum queries (not '{query}').",
                             hint="The maximum and distinct count have no closed-form forecast.")
    rm = RecordModel.of(budget, assumed, n)
    mech = mechanism if mechanism is not None else ClippedSum()
    if model == "local":
        if method not in ("framework", "naive"):
            raise ParameterError(f"Unknown local method '{method}'.", hint="Use framework or naive.")
        return _local(rm, query, b, lv, threshold, naive=method == "naive")
    if model != "central":
        raise ParameterError(f"Unknown model '{model}'.", hint="Use central or local.")
    if method == "framework":
        return _framework(rm, query, b, lv, check_share("Part 1's share of the budget", eps_share),
                          check_share("Part 1's share of β", beta_share), mech)
    if method == "naive":
        return _naive(rm, query, lv, mech)
    if method in ("count", "extension"):
        if (method == "count") != (query == "count"):
            raise ParameterError("Algorithm 1 answers counts and the Sec. 5.2 extension sums.")
        return _retained(rm, query, b, lv)
    raise ParameterError(f"Unknown method '{method}'.", hint="Use framework, count, extension or naive.")


# ---------------------------------------------------------------------------
# Remedies and the recommendation
# ---------------------------------------------------------------------------

CAUSES = {
    "dropped": "domain selection is likely to settle on a late domain (or find none above its threshold) and drop "
               "most of the records",
    "clipped": "the budget of M at the level selected is so small that the sum's private clipping threshold falls to "
               "the smallest candidates: the clipped sum misses most of the total",
    "noise": "the noise at the budget level selected is larger than half the answer",
}


@dataclass(frozen=True)
class Remedy:
    """A change to the design and its forecast.

    ``keeps_policy``: True when every record keeps at least the protection E promises (another
    mechanism or split, a smaller ε̂); False for a change of the policy itself (a smaller declared
    bound U refuses records above it; raised budgets protect everyone less). ``change``: the
    parameters to apply (``method``, ``eps_share``/``beta_share``, ``threshold``, ``eps_max``,
    ``U``, ``budget_factor``).
    """

    label: str
    forecast: Forecast
    keeps_policy: bool
    change: dict[str, Any]
    note: str = ""

    @property
    def works(self) -> bool:
        return self.forecast.failure < WARN_AT


@dataclass(frozen=True)
class Outlook:
    """The design's forecast, the remedies evaluated and the recommendation (None: keep the design
    when it is not likely to fail, or nothing evaluated works)."""

    forecast: Forecast
    remedies: tuple[Remedy, ...]
    recommended: Remedy | None
    assumed: AssumedData
    beta: float

    @property
    def likely_to_fail(self) -> bool:
        return self.forecast.likely_to_fail

    def warning(self) -> str | None:
        """A plain warning when failure is likely (None otherwise)."""
        f = self.forecast
        if not f.likely_to_fail:
            return None
        msg = (f"{f.label} is likely to fail at n = {f.n:,}: the relative error reaches {f.level:.0%} or more with "
               f"probability {f.failure:.0%} (median {_pct(f.median_re)})")
        if f.cause:
            msg += f" — {CAUSES[f.cause]}"
        msg += "."
        if self.recommended is not None:
            r = self.recommended
            msg += (f" Recommended: {r.label} (predicted failure {r.forecast.failure:.0%}, median error "
                    f"{_pct(r.forecast.median_re)}).")
            better = [x for x in self.remedies if x.works and not x.keeps_policy
                      and x.forecast.median_re < 0.5 * r.forecast.median_re]
            if r.keeps_policy and r.forecast.median_re >= 0.1 and better:
                msg += (f" With a change of the policy, {better[0].label}: median error "
                        f"{_pct(better[0].forecast.median_re)} ({better[0].note}).")
        else:
            msg += " None of the remedies evaluated works at this n: more records (or a weaker policy) are needed."
        return msg

    def table(self) -> pd.DataFrame:
        """One row for the design and one per remedy: failure probability, median, 90th percentile and
        mean relative error, whether the policy's promises are kept."""
        rows = [{"option": "as designed: " + self.forecast.label, **_cols(self.forecast), "keeps the policy": True,
                 "works": not self.forecast.likely_to_fail}]
        rows += [{"option": r.label, **_cols(r.forecast), "keeps the policy": r.keeps_policy, "works": r.works}
                 for r in self.remedies]
        return pd.DataFrame(rows)


def _cols(f: Forecast) -> dict[str, float]:
    return {"P(RE ≥ %g%%)" % (100 * f.level): f.failure, "median RE": f.median_re, "90th pct RE": f.p90_re,
            "mean RE": f.expected_re}


def _pct(x: float) -> str:
    return "∞" if not math.isfinite(x) else f"{100 * x:.3g}%"


def _rank(f: Forecast) -> tuple[float, float]:
    """Order of preference: the smaller median error, then the smaller failure probability."""
    return (f.median_re, f.failure)


def outlook(budget: BudgetFunction, assumed: AssumedData, n: Any, query: ForecastQuery = "sum", *,
            beta: float = 0.1, model: Model = "central", threshold: ThresholdRule = "paper",
            level: float = FAILURE_LEVEL, always: bool = False) -> Outlook:
    """The framework's forecast and, when failure is likely (or ``always``), the remedies with their
    forecasts and a recommendation.

    Remedies that keep the policy (every record still gets at most E(r)): another split of E and
    β between Part 1 and M (central, the best of :data:`SPLITS`), Algorithm 1 (count) or the
    Sec. 5.2 extension (sum), the naive ε̌ baseline, the tighter PrLDP thresholds (local), fewer
    domains through a smaller ε̂ (records asking more get ε̂: more protection). Changes of the
    policy, recommended only when nothing else works: a smaller declared bound U — ε̌ = E(U)
    rises, and records above U would be refused — and every budget raised ×c (less protection
    for everyone; the smallest factor of :data:`BUDGET_FACTORS` that works).
    """
    base = forecast(budget, assumed, n, query, beta=beta, model=model, threshold=threshold, level=level)
    if not (always or base.likely_to_fail):
        return Outlook(base, (), None, assumed, float(beta))
    kw: dict[str, Any] = {"beta": beta, "model": model, "threshold": threshold, "level": level}
    out: list[Remedy] = []
    if model == "central":
        splits = [forecast(budget, assumed, n, query, beta=beta, level=level, eps_share=s, beta_share=b)
                  for s, b in SPLITS]
        best = min(splits, key=_rank)
        s, b = best.options["eps_share"], best.options["beta_share"]
        out.append(Remedy(f"give M more of the budget: Part 1 spends {s:.3g} of E and {b:.3g} of β", best, True,
                          {"eps_share": s, "beta_share": b},
                          f"every record still pays at most E(r): {s:.3g}·2^(i−1)·ε̌ + {1 - s:.3g}·ε_τ"))
        alt = "count" if query == "count" else "extension"
        f_alt = forecast(budget, assumed, n, query, beta=beta, method=alt, level=level)
        out.append(Remedy(f_alt.label, f_alt, True, {"method": alt}))
        f_nv = forecast(budget, assumed, n, query, method="naive", level=level)
        out.append(Remedy(f_nv.label, f_nv, True, {"method": "naive"}))
    else:
        if threshold == "paper":
            f_b = forecast(budget, assumed, n, query, **{**kw, "threshold": "bernstein"})
            out.append(Remedy("tighter thresholds of Algorithm 4 (√(8n·ln(2L/β)))", f_b, True,
                              {"threshold": "bernstein"}))
        f_nv = forecast(budget, assumed, n, query, beta=beta, model="local", method="naive", level=level)
        out.append(Remedy(f_nv.label, f_nv, True, {"method": "naive"}))
    fewer = _fewer_domains(budget, assumed, n, query, kw)
    if fewer is not None:
        out.append(fewer)
    smaller_u = _smaller_bound(budget, assumed, n, query, kw)
    if smaller_u is not None:
        out.append(smaller_u)
    raised = _raised_budgets(budget, assumed, n, query, kw)
    if raised is not None:
        out.append(raised)
    rec = None
    if base.likely_to_fail:
        keep = [r for r in out if r.works and r.keeps_policy]
        change = [r for r in out if r.works and not r.keeps_policy]
        if keep:
            rec = min(keep, key=lambda r: _rank(r.forecast))
        elif change:
            rec = change[0]  # the smaller bound first (no record loses protection), then raised budgets
    return Outlook(base, tuple(out), rec, assumed, float(beta))


def _fewer_domains(budget: BudgetFunction, assumed: AssumedData, n: Any, query: ForecastQuery,
                   kw: dict[str, Any]) -> Remedy | None:
    """The best smaller cap ε̂/2^k (fewer domains, lower thresholds); None when L = 1."""
    best: tuple[Forecast, float] | None = None
    for k in CAP_HALVINGS:
        if budget.domains().L <= 1 or budget.eps_max / 2 ** k < budget.eps_min:
            break
        b2 = budget.with_bounds(eps_min=budget.eps_min, eps_max=budget.eps_max / 2 ** k)
        f = forecast(b2, assumed, n, query, **kw)
        if best is None or _rank(f) < _rank(best[0]):
            best = (f, b2.eps_max)
    if best is None:
        return None
    return Remedy(f"fewer domains: cap the budgets at ε̂ = {best[1]:.4g}", best[0], True, {"eps_max": best[1]},
                  "records asking for more than ε̂ get ε̂: more protection, never less")


def _smaller_bound(budget: BudgetFunction, assumed: AssumedData, n: Any, query: ForecastQuery,
                   kw: dict[str, Any]) -> Remedy | None:
    """Declare a smaller bound U' (the assumed distribution's 1 − 10⁻⁹ quantile, rounded up to a power of
    ten): ε̌ = E(U') rises. None when E does not depend on the measure or U' ≥ U."""
    if budget.value_column is None or not budget.decreasing():
        return None
    top = float(assumed.quantile(np.array([1 - 1e-9]))[0])
    if not (top > 0):
        return None
    u2 = 10.0 ** math.ceil(math.log10(top))
    if u2 >= budget.U:
        return None
    try:
        b2 = budget.with_bounds(eps_max=budget.eps_max, U=u2)
    except PolicyError:
        return None
    f = forecast(b2, assumed, n, query, **kw)
    return Remedy(f"declare a smaller bound U = {u2:.4g} (ε̌ = E(U) = {b2.eps_min:.4g})", f, False, {"U": u2},
                  "a public fact about the measure: records above U would be refused")


def _raised_budgets(budget: BudgetFunction, assumed: AssumedData, n: Any, query: ForecastQuery,
                    kw: dict[str, Any]) -> Remedy | None:
    """The smallest factor c of :data:`BUDGET_FACTORS` for which c·E works (None if none does)."""
    for c in BUDGET_FACTORS:
        f = forecast(budget.scaled(c), assumed, n, query, **kw)
        if f.failure < WARN_AT:
            return Remedy(f"raise every budget ×{c:g} (E' = {c:g}·E)", f, False, {"budget_factor": c},
                          "weaker protection for every record")
    return None
