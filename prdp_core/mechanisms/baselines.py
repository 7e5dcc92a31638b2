"""Baselines: the plain (global) DP releases per-record mechanisms are compared with.

Every record gets the same loss here, whatever its value — which is what the per-record
mechanisms of the other modules improve on.

* :class:`ClippedSum` — Σ clip(v, lower, upper) + Laplace(Δ/ε) (ε-DP) or + N(0, σ²) with
  σ = Δ/√(2ρ) (ρ-zCDP), Δ = max(|lower|, |upper|) under add/remove neighbours (one record
  moves the clipped sum by at most Δ). A COUNT is the clipped sum of ones (Δ = 1).
* :func:`top_coding` — the same with values top-coded at a public clamp c (lower = 0): the
  Table 7 baseline of the per-record zCDP paper, biased when values exceed c.
* :func:`global_minimum` — a clipped sum run at the smallest budget ε̌ of a budget function E
  (the straw man of the general PrDP framework, Sec. 4.1): E-PrDP because ε̌ ≤ E(r) for every
  record; its error scales with 1/ε̌.

:func:`clipped_sum_laplace` and :func:`clipped_sum_gaussian` are the bare primitives on a numpy
array (one pass in fixed-size chunks, so the working memory stays a few MB even for 10⁷
rows); the dataclass wraps them in a :class:`~prdp_core.core.release.Release` with the flat
per-record loss and a ledger entry. With ``secure=True`` the noise is OpenDP's exact discrete
Laplace / Gaussian on the grid of Δ (:mod:`prdp_core.core.secure`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from ..core import noise_source
from ..core.accounting import FlatLoss, LedgerEntry
from ..core.errors import ParameterError
from ..core.release import Release
from ..core.secure import SecureSampler, to_units
from .prdp.budget import BudgetFunction

Noise = Literal["laplace", "gaussian"]

#: Rows processed at a time by the primitives (a 2 MB buffer that stays in cache for the sum).
CHUNK = 1 << 18


def _finite(name: str, value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number (got {value!r}).") from None
    if not math.isfinite(v):
        raise ParameterError(f"{name} must be a finite number (got {value!r}).")
    return v


def _positive(name: str, value: Any) -> float:
    v = _finite(name, value)
    if v <= 0:
        raise ParameterError(f"{name} must be positive (got {value!r}).")
    return v


def _bounds(lower: Any, upper: Any) -> tuple[float, float, float]:
    lo, hi = _finite("The lower clipping bound", lower), _finite("The upper clipping bound", upper)
    if lo > hi:
        raise ParameterError(f"The lower clipping bound ({lo:g}) is above the upper one ({hi:g}).")
    d = max(abs(lo), abs(hi))
    if d == 0:
        raise ParameterError("Clipping bounds of [0, 0] release nothing: widen them.")
    return lo, hi, d


def _values(values: Any) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size and np.isnan(v).any():
        raise ParameterError("The values contain NaN: fix or drop them on the Data page first.")
    return v


def clipped_total(values: np.ndarray, lower: float, upper: float, *, chunk: int = CHUNK) -> float:
    """Σ clip(v, lower, upper) in chunks (±inf are clipped like any value; NaN is refused).

    One pass: a NaN survives clipping and makes the total NaN, which is checked at the end."""
    lo, hi, _ = _bounds(lower, upper)
    return _clipped_total(values, lo, hi, chunk)


def _clipped_total(values: np.ndarray, lo: float, hi: float, chunk: int = CHUNK) -> float:
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size <= chunk:  # one chunk: no separate buffer
        total = float(np.clip(v, lo, hi).sum())
        if math.isnan(total):
            raise ParameterError("The values contain NaN: fix or drop them on the Data page first.")
        return total
    buf = np.empty(chunk)
    total = 0.0
    for s in range(0, v.size, chunk):
        part = v[s:s + chunk]
        out = buf[: part.size]
        np.clip(part, lo, hi, out=out)
        total += float(out.sum())
    if math.isnan(total):
        raise ParameterError("The values contain NaN: fix or drop them on the Data page first.")
    return total


def clipped_sum_laplace(values: np.ndarray, lower: float, upper: float, eps: float, *,
                        rng: np.random.Generator) -> float:
    """Σ clip(v, lower, upper) + Laplace(Δ/ε), Δ = max(|lower|, |upper|): ε-DP (add/remove)."""
    lo, hi, d = _bounds(lower, upper)
    e = _positive("ε", eps)
    return _clipped_total(values, lo, hi) + float(rng.laplace(0.0, d / e))


def clipped_sum_gaussian(values: np.ndarray, lower: float, upper: float, rho: float, *,
                         rng: np.random.Generator) -> float:
    """Σ clip(v, lower, upper) + N(0, σ²), σ = Δ/√(2ρ): ρ-zCDP (add/remove)."""
    lo, hi, d = _bounds(lower, upper)
    r = _positive("ρ", rho)
    return _clipped_total(values, lo, hi) + float(rng.normal(0.0, d / math.sqrt(2.0 * r)))


@dataclass(frozen=True)
class ClippedSum:
    """A clipped sum (or count) of one column with Laplace or Gaussian noise; flat loss for every record.

    ``column``: the measure summed (``None``: count the records, Δ = 1). ``lower``/``upper``:
    public clipping bounds (privacy: they fix the sensitivity Δ = max(|lower|, |upper|); they
    must not be read off the data). ``noise``: ``"laplace"`` (``budget`` = ε, pure DP) or
    ``"gaussian"`` (``budget`` = ρ, zCDP).
    """

    column: str | None
    budget: float
    upper: float = 1.0
    lower: float = 0.0
    noise: Noise = "laplace"
    name: str = "clipped sum"

    def __post_init__(self) -> None:
        if self.noise not in ("laplace", "gaussian"):
            raise ParameterError(f"Unknown noise '{self.noise}'.", hint="Use 'laplace' or 'gaussian'.")
        _positive("ε" if self.noise == "laplace" else "ρ", self.budget)
        _bounds(self.lower, self.upper)

    @property
    def sensitivity(self) -> float:
        return 1.0 if self.column is None else _bounds(self.lower, self.upper)[2]

    @property
    def scale(self) -> float:
        """Laplace scale b = Δ/ε or Gaussian σ = Δ/√(2ρ)."""
        d = self.sensitivity
        return d / self.budget if self.noise == "laplace" else d / math.sqrt(2.0 * self.budget)

    @property
    def measure(self) -> Literal["eps", "rho"]:
        return "eps" if self.noise == "laplace" else "rho"

    #: record_loss (:class:`prdp_core.mechanisms.contract.Plan`) is what the release charges every record.
    exact: ClassVar[bool] = True

    @property
    def loss_kind(self) -> str:
        """The unit of ``budget``: ``"eps"`` (Laplace) or ``"rho"`` (Gaussian)."""
        return self.measure

    def record_loss(self, records: Any) -> np.ndarray:
        """Every record's loss: ``budget``, flat (``records``: the table, or its number of rows)."""
        n = int(records) if isinstance(records, (int, np.integer)) else len(getattr(records, "table", records))
        return np.full(n, float(self.budget))

    def values(self, table: pd.DataFrame) -> np.ndarray:
        if self.column is None:
            return np.ones(len(table))
        if self.column not in table.columns:
            raise ParameterError(f"Column '{self.column}' is not in the table.")
        col = table[self.column]
        if not pd.api.types.is_numeric_dtype(col):
            raise ParameterError(f"Column '{self.column}' must be numeric to be summed.")
        return col.to_numpy(dtype=np.float64)

    def release(self, table: Any, *, rng: np.random.Generator | None = None, reveal: bool = False,
                seed: int | None = None, secure: bool = False, sampler: SecureSampler | None = None,
                label: str | None = None, noise: noise_source.Noise | None = None) -> Release:
        """Release the clipped sum once. Every record pays ``budget`` (FlatLoss). ``noise``: the noise
        source (Noise.teaching(seed) or Noise.secure()); ``rng``/``seed``/``secure``/``sampler`` are its
        legacy spelling."""
        t = getattr(table, "table", table)
        if not isinstance(t, pd.DataFrame):
            raise ParameterError("The data must be a pandas DataFrame (or a prdp_core Dataset).")
        v = self.values(t)
        lo, hi = (0.0, 1.0) if self.column is None else (self.lower, self.upper)
        nz = noise_source.resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler)
        smp, seed = nz.sampler, nz.seed
        extras: dict[str, Any] = {}
        if smp is not None:
            d = self.sensitivity
            g = 1.0 if self.column is None else smp.grid(d)
            units = to_units(np.clip(_values(v), lo, hi), g)
            total = np.array([int(units.sum())])  # exact integer sum of the quantised values
            ans = (smp.laplace_answers(total, g, d, self.budget) if self.noise == "laplace"
                   else smp.gaussian_answers(total, g, d, self.budget))
            est, scale = float(ans.estimate[0]), float(ans.scale[0])
            extras["grid"] = g
        else:
            fn = clipped_sum_laplace if self.noise == "laplace" else clipped_sum_gaussian
            est, scale = fn(v, lo, hi, self.budget, rng=nz.generator()), self.scale
        sd = scale * math.sqrt(2.0) if self.noise == "laplace" else scale
        # 95% interval: Laplace quantile b·ln(1/0.05), Gaussian 1.96σ
        half = scale * math.log(20.0) if self.noise == "laplace" else 1.959963984540054 * scale
        row: dict[str, Any] = {"query": label or (f"SUM({self.column})" if self.column else "COUNT(*)"),
                               "estimate": est, "scale" if self.noise == "laplace" else "sigma": scale,
                               "sd": sd, "ci_low": est - half, "ci_high": est + half}
        if reveal:
            true = clipped_total(v, lo, hi) if self.column is not None else float(len(v))
            err = est - true
            row.update({"true": true, "error": err, "abs_error": abs(err),
                        "rel_error": abs(err) / abs(true) if true else math.inf})
            raw = float(np.nansum(v))
            extras["private_clipping_bias"] = true - raw
        loss_fn = FlatLoss(float(self.budget), measure=self.measure)
        params: dict[str, Any] = {"column": self.column, "lower": lo, "upper": hi, "noise": self.noise,
                                  "budget": float(self.budget), "sensitivity": self.sensitivity}
        if smp is not None:
            params["secure"] = smp.describe()
        mech = f"baselines.{self.name.replace(' ', '_')}.{self.noise}"
        entry = LedgerEntry(label=label or f"Baseline {self.name}: {row['query']}", mechanism=mech, loss=loss_fn,
                            params=params, seed=seed, secure=smp is not None)
        return Release(mechanism=mech, answers=pd.DataFrame([row]), measure=self.measure,
                       loss=np.full(len(v), float(self.budget)), entries=(entry,), params=params, seed=seed,
                       secure=smp is not None, truth_included=reveal, extras=extras)


def top_coding(column: str, clamp: float, budget: float, noise: Noise = "gaussian") -> ClippedSum:
    """A sum with values top-coded at the public clamp c (Δ = c): the per-record zCDP paper's Table 7
    baseline. Every record pays ``budget``; values above c are cut (bias)."""
    c = _positive("The top-coding clamp", clamp)
    return ClippedSum(column, budget, upper=c, lower=0.0, noise=noise, name="top-coded sum")


def global_minimum(budget: BudgetFunction, column: str | None = None, *, upper: float | None = None
                   ) -> ClippedSum:
    """The global-minimum baseline of a budget function E: a Laplace clipped sum (or count) at ε̌.

    It is E-PrDP (every record's E(r) ≥ ε̌) and ignores every larger budget. ``upper`` defaults
    to the budget's domain bound U (values live in [0, U])."""
    if not isinstance(budget, BudgetFunction):
        raise ParameterError("budget must be a BudgetFunction (see prdp_core.mechanisms.prdp.parse_budget).")
    u = float(budget.U) if upper is None else _positive("The upper clipping bound", upper)
    return ClippedSum(column, float(budget.eps_min), upper=u, lower=0.0, noise="laplace", name="global minimum")


__all__ = ["CHUNK", "ClippedSum", "clipped_sum_gaussian", "clipped_sum_laplace", "clipped_total", "global_minimum",
           "top_coding"]
