"""Loss distributions: the per-record (or per-owner) losses of a table, without one number per record.

An engine that keeps the records where they live (:mod:`prdp_core.engines`) returns how many
records pay each loss instead of an array with one loss per record. A :class:`LossDistribution`
is that answer, in one of two forms:

* **exact** — the sorted distinct losses and how many units (records or owners) pay each. Losses
  of unit splitting are ρ·m(r)² with m(r) a whole number, so they take few distinct values and
  the distribution is exact: its CDF, quantiles and shares are those of the per-record array.
* **binned** — counts over stated bin edges (``edges[i] < loss ≤ edges[i+1]``, the first bin also
  holding ``edges[0]``), for continuous losses with too many distinct values (realized losses,
  owners' sums). Read-outs are then bounds: a quantile is the upper edge of its bin, and
  ``share_above`` counts a bin as above a level when its upper edge is above it (never less than
  the true share).

Like :class:`~prdp_core.core.loss_profile.LossProfile`, the losses of real records are **confidential**: the
app shows them to the designer only and review exports cut the tail (:meth:`tail_cut`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ParameterError
from .loss_profile import MEASURE_SYMBOL, Measure, plain_language

#: Largest number of distinct losses an engine returns exactly (more are binned).
MAX_EXACT_VALUES: int = 1_000_000


@dataclass(frozen=True)
class LossDistribution:
    """Losses of ``n`` units (records or owners) as counts per value (exact) or per bin.

    Attributes
    ----------
    values:
        Exact form: the distinct losses, ascending. Binned form: the upper edge of each bin.
    counts:
        Units per value (or per bin), int64, same length as ``values``.
    measure:
        ``"rho"`` (zCDP) or ``"eps"`` (pure DP).
    edges:
        Binned form only: the ``len(values) + 1`` bin edges; None for the exact form.
    total:
        Sum of the losses (for the mean), when known exactly or to rounding.
    label, base:
        Legend label, and the loss of the smallest units (PolicyMin) a share-above is
        measured against (default: the smallest loss present).
    """

    values: np.ndarray
    counts: np.ndarray
    measure: Measure = "rho"
    edges: np.ndarray | None = None
    total: float | None = None
    label: str = ""
    base: float | None = None

    def __post_init__(self) -> None:
        if self.measure not in MEASURE_SYMBOL:
            raise ParameterError(f"Unknown loss measure '{self.measure}'.", hint="Use 'rho' or 'eps'.")
        v = np.asarray(self.values, dtype=float)
        c = np.asarray(self.counts, dtype=np.int64)
        if v.ndim != 1 or v.shape != c.shape:
            raise ParameterError("A loss distribution needs one count per value.")
        if c.size and (c.min() < 0 or not np.all(np.isfinite(v))):
            raise ParameterError("Loss counts must be non-negative and losses finite.")
        if v.size > 1 and not np.all(np.diff(v) > 0):
            raise ParameterError("The losses of a distribution must be distinct and ascending.")
        object.__setattr__(self, "values", v)
        object.__setattr__(self, "counts", c)
        if self.edges is not None:
            e = np.asarray(self.edges, dtype=float)
            if e.shape != (v.size + 1,) or not np.array_equal(e[1:], v):
                raise ParameterError("The bins of a loss distribution need one more edge than counts.")
            object.__setattr__(self, "edges", e)

    # -- construction -----------------------------------------------------------------

    @classmethod
    def from_values(cls, values: Any, measure: Measure = "rho", *, label: str = "", base: float | None = None
                    ) -> "LossDistribution":
        """The exact distribution of an array of losses."""
        v = np.asarray(values, dtype=float).ravel()
        u, c = np.unique(v, return_counts=True)
        return cls(u, c, measure, total=float(v.sum()) if v.size else 0.0, label=label, base=base)

    @classmethod
    def from_counts(cls, values: Any, counts: Any, measure: Measure = "rho", *, label: str = "",
                    base: float | None = None, total: float | None = None) -> "LossDistribution":
        """The exact distribution of losses given with their counts (values may repeat, in any order;
        zero counts are dropped)."""
        v = np.asarray(values, dtype=float).ravel()
        c = np.asarray(counts, dtype=np.int64).ravel()
        if v.shape != c.shape:
            raise ParameterError("A loss distribution needs one count per value.")
        keep = c > 0
        v, c = v[keep], c[keep]
        u, inv = np.unique(v, return_inverse=True)
        cc = np.bincount(inv, weights=c, minlength=u.size).astype(np.int64) if v.size else np.zeros(0, np.int64)
        if total is None:
            total = float(np.dot(v, c.astype(float))) if v.size else 0.0
        return cls(u, cc, measure, total=total, label=label, base=base)

    @classmethod
    def binned(cls, edges: Any, counts: Any, measure: Measure = "rho", *, total: float | None = None,
               label: str = "", base: float | None = None) -> "LossDistribution":
        """A binned distribution: ``counts[i]`` units with ``edges[i] < loss ≤ edges[i+1]``."""
        e = np.asarray(edges, dtype=float)
        return cls(e[1:], np.asarray(counts, dtype=np.int64), measure, edges=e, total=total, label=label, base=base)

    def with_label(self, label: str, base: float | None = None) -> "LossDistribution":
        return LossDistribution(self.values, self.counts, self.measure, self.edges, self.total, label,
                                self.base if base is None else base)

    def merge(self, other: "LossDistribution") -> "LossDistribution":
        """The distribution of both sets of units (exact forms only)."""
        if not (self.exact and other.exact) or self.measure != other.measure:
            raise ParameterError("Only exact distributions in the same measure can be merged.")
        tot = None if self.total is None or other.total is None else self.total + other.total
        return LossDistribution.from_counts(np.concatenate((self.values, other.values)),
                                            np.concatenate((self.counts, other.counts)), self.measure,
                                            label=self.label, base=self.base, total=tot)

    # -- read-outs --------------------------------------------------------------------

    @property
    def exact(self) -> bool:
        return self.edges is None

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def base_loss(self) -> float:
        if self.base is not None:
            return float(self.base)
        return self.min

    @property
    def min(self) -> float:
        nz = np.flatnonzero(self.counts)
        if not nz.size:
            return 0.0
        return float(self.values[nz[0]] if self.exact else self.edges[nz[0]])  # type: ignore[index]  # edges is set for a binned distribution (not exact)

    @property
    def max(self) -> float:
        nz = np.flatnonzero(self.counts)
        return float(self.values[nz[-1]]) if nz.size else 0.0

    @property
    def mean(self) -> float:
        if not self.n:
            return float("nan")
        if self.total is not None:
            return self.total / self.n
        return float(np.dot(self.values, self.counts.astype(float)) / self.n)

    def ecdf(self, max_points: int = 4000) -> tuple[np.ndarray, np.ndarray]:
        """CDF step points (loss ascending, share of units at or below it), thinned like
        :func:`prdp_core.core.loss_profile.ecdf` when there are more than ``max_points`` values."""
        keep = self.counts > 0
        u, c = self.values[keep], self.counts[keep]
        if not u.size:
            return np.array([]), np.array([])
        y = np.cumsum(c) / c.sum()
        if u.size > max_points:
            idx = np.unique(np.concatenate((np.linspace(0, u.size - 1, max_points).astype(int), [u.size - 1])))
            u, y = u[idx], y[idx]
        return u, y

    def _at_rank(self, r: np.ndarray) -> np.ndarray:
        """The loss of the unit at each 0-based rank (the sorted array's element)."""
        cum = np.cumsum(self.counts)
        return self.values[np.searchsorted(cum, np.asarray(r) + 1, side="left")]

    def quantile(self, q: float | np.ndarray) -> float | np.ndarray:
        """Quantiles by numpy's default (linear) rule — those of the per-record array for an exact
        distribution; for a binned one the upper edge of the bin holding that rank (an upper bound)."""
        qa = np.asarray(q, dtype=float)
        if np.any((qa < 0) | (qa > 1)):
            raise ParameterError("Quantiles must be between 0 and 1.")
        n = self.n
        if n == 0:
            raise ParameterError("The distribution is empty.")
        pos = qa * (n - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        a, b = self._at_rank(lo), self._at_rank(hi)
        if not self.exact:
            out = b
        else:
            frac = pos - lo
            # numpy's interpolation, applied to the two order statistics
            out = np.array([float(np.quantile(np.array([x, y]), f)) for x, y, f in
                            zip(np.atleast_1d(a), np.atleast_1d(b), np.atleast_1d(frac))])
        return float(out.reshape(-1)[0]) if np.ndim(q) == 0 else out.reshape(np.shape(q))

    def count_above(self, level: float | None = None) -> int:
        lv = self.base_loss if level is None else float(level)
        return int(self.counts[self.values > lv * (1 + 1e-12)].sum())

    def share_above(self, level: float | None = None) -> float:
        """Share of units paying more than ``level`` (default: the base loss)."""
        n = self.n
        return self.count_above(level) / n if n else 0.0

    def summary(self) -> dict[str, float]:
        if not self.n:
            return {"records": 0}
        med, p90, p99 = (float(x) for x in np.atleast_1d(self.quantile(np.array([0.5, 0.9, 0.99]))))
        return {"records": self.n, "min": self.min, "median": med, "p90": p90, "p99": p99, "max": self.max,
                "mean": self.mean, "share_above_base": self.share_above()}

    def plain_language(self, level: float | None = None, noun: str = "records") -> str:
        """A read-out such as "1 in 100 records pays more than 4ρ" (the same words as
        :meth:`prdp_core.core.loss_profile.LossProfile.plain_language`)."""
        lv = self.base_loss if level is None else float(level)
        return plain_language(self.share_above(lv), self.n, lv, self.max, self.measure, noun,
                              "" if self.exact else " (binned: an upper bound)")

    def levels(self, base: float) -> dict[str, float]:
        """Named loss levels for (ε, δ) tables: base, median, p90, p99 and max of the units."""
        med, p90, p99 = (float(x) for x in np.atleast_1d(self.quantile(np.array([0.5, 0.9, 0.99]))))
        return {"base loss (unsplit records)": base, "median record": med, "90th percentile": p90,
                "99th percentile": p99, "largest record": self.max}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (never the values: they are confidential)."""
        d: dict[str, Any] = {"form": "exact" if self.exact else "binned", "measure": self.measure, "n": self.n}
        if self.n:
            d.update({"min": self.min, "max": self.max})
        return d


def log_edges(lo: float, hi: float, bins: int = 200) -> np.ndarray:
    """``bins`` + 1 log-spaced edges from ``lo`` to ``hi`` (both positive), the ends exact."""
    if not (lo > 0 and hi > 0 and math.isfinite(lo) and math.isfinite(hi)):
        raise ParameterError("Log bins need positive, finite ends.")
    if hi <= lo:
        hi = lo * 2.0
    e = np.geomspace(lo, hi, int(bins) + 1)
    e[0], e[-1] = lo, hi
    return e


__all__ = ["LossDistribution", "MAX_EXACT_VALUES", "log_edges"]
