"""Queries on a table for multi-tier release: record filters, the central query, local categories.

The central model answers one count or sum (:func:`central_query`, its sensitivity from the
declared bounds); the local model has every user report one category of a measure binned at
public cut points (:func:`bin_edges`, never read from the data), records outside the filter
reporting the public category :data:`NOT_MATCHING`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ...core.errors import ParameterError
from .subset import MAX_DOMAIN

# ---------------------------------------------------------------------------
# Queries on a table
# ---------------------------------------------------------------------------

_OPS = {"==": "equals", "!=": "differs from", ">=": "at least", "<=": "at most", ">": "above", "<": "below"}


@dataclass(frozen=True)
class RecordFilter:
    """Keep records whose ``column`` compares to ``value`` with ``op`` (==, !=, >=, <=, >, <)."""

    column: str
    op: str = "=="
    value: Any = None

    def mask(self, table: pd.DataFrame) -> np.ndarray:
        if self.column not in table.columns:
            raise ParameterError(f"The filter column '{self.column}' is not in the table.")
        if self.op not in _OPS:
            raise ParameterError(f"Unknown comparison '{self.op}'.", hint=f"Use one of {', '.join(_OPS)}.")
        col = table[self.column]
        if self.op in ("==", "!="):
            m = col.astype(str) == str(self.value)
            return (m if self.op == "==" else ~m).to_numpy()
        try:
            v = float(self.value)
        except (TypeError, ValueError):
            raise ParameterError(f"'{self.value}' is not a number to compare '{self.column}' with.") from None
        x = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            out = {">=": x >= v, "<=": x <= v, ">": x > v, "<": x < v}[self.op]
        return np.nan_to_num(out, nan=False).astype(bool)

    def describe(self) -> str:
        return f"{self.column} {_OPS[self.op]} {self.value}"


@dataclass(frozen=True)
class CentralQuery:
    """A count or clipped sum on a table: its true value, sensitivity and which records it reads."""

    kind: str
    value: float
    sensitivity: float
    mask: np.ndarray = field(repr=False)
    label: str
    integer: bool
    #: Each matching record's contribution (1 for a count, the clipped value for a sum): what a secure
    #: release quantises record by record (confidential, like the records).
    contributions: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    @property
    def n_matching(self) -> int:
        return int(self.mask.sum())


def central_query(table: pd.DataFrame, kind: str = "count", *, measure: str | None = None,
                  clip: float | None = None, filter: RecordFilter | None = None,
                  integer: bool = False) -> CentralQuery:
    """Evaluate a count or a clipped sum on ``table`` (add/remove neighbours).

    * ``count`` — number of (filtered) records; sensitivity 1.
    * ``sum`` — Σ min(max(v, 0), U) of ``measure`` over (filtered) records, U = ``clip``;
      sensitivity U. With ``integer`` the clipped values are rounded to integers first and
      U must be an integer (needed by the geometric families).

    The result's ``mask`` marks the records the query reads: only they incur privacy loss.
    """
    mask = np.ones(len(table), dtype=bool) if filter is None else filter.mask(table)
    where = "" if filter is None else f" where {filter.describe()}"
    if kind == "count":
        return CentralQuery("count", float(mask.sum()), 1.0, mask, f"count of records{where}", True,
                            np.ones(int(mask.sum())))
    if kind != "sum":
        raise ParameterError(f"Unknown query '{kind}'.", hint="Use 'count' or 'sum'.")
    if measure is None or measure not in table.columns:
        raise ParameterError(f"Choose a measure column for the sum (got {measure!r}).")
    if clip is None:
        raise ParameterError("A sum needs a clipping bound U (the largest value one record may contribute).")
    U = float(clip)
    if not math.isfinite(U) or U <= 0:
        raise ParameterError(f"The clipping bound U must be a positive number (got {clip!r}).")
    if integer and U != int(U):
        raise ParameterError(f"Integer noise needs an integer clipping bound (got U = {clip!r}).",
                             hint="Round U, or use the Laplace or Gaussian family.")
    v = pd.to_numeric(table[measure], errors="coerce").to_numpy(dtype=float)
    v = np.clip(np.nan_to_num(v, nan=0.0), 0.0, U)
    if integer:
        v = np.round(v)
    total = float(v[mask].sum())
    return CentralQuery("sum", total, U, mask, f"sum of {measure} clipped to [0, {U:g}]{where}", integer, v[mask])


#: Default public top U of a measure's range for the local model's categories: a round number declared
#: in advance, never read from the data (declare your own with ``top=`` or explicit ``edges=``).
DEFAULT_TOP = 1_000_000.0
#: Label of the public category reported by users whose record does not match the filter (local model).
NOT_MATCHING = "(not matching the filter)"
BIN_SCALES: dict[str, str] = {"log": "equal width on log(1+v) from 0 to the public top U",
                              "linear": "equal width from 0 to the public top U"}


def bin_edges(d: int, *, scale: str = "log", top: float = DEFAULT_TOP) -> np.ndarray:
    """The d − 1 public cut points of d categories of a non-negative measure (local model).

    ``log``: equal-width bins of log(1 + v) on [0, log(1 + U)]; ``linear``: equal-width bins of v
    on [0, U]. U = ``top`` is the public top of the range, declared without looking at the data;
    values at or above the last cut point (including those above U) fall in the top category.
    The cut points depend on (d, scale, U) only — never on the data — so one user's value moves
    no other user's category (§5: each user's report must be a function of that user alone).
    """
    d = int(d)
    if d < 2 or d > MAX_DOMAIN:
        raise ParameterError(f"The number of categories d must be between 2 and {MAX_DOMAIN}.")
    if scale not in BIN_SCALES:
        raise ParameterError(f"Unknown bin scale '{scale}'.", hint=f"Use one of {', '.join(BIN_SCALES)}.")
    try:
        U = float(top)
    except (TypeError, ValueError):
        raise ParameterError(f"The top of the range U must be a number (got {top!r}).") from None
    if not math.isfinite(U) or U <= 0 or U > 1e300:
        raise ParameterError(f"The top of the range U must be a positive number (got {top!r}).",
                             hint="Declare it from public knowledge (e.g. a legal or survey limit), not from the data.")
    if scale == "log":
        cuts = np.expm1(np.linspace(0.0, math.log1p(U), d + 1)[1:-1])
    else:
        cuts = np.linspace(0.0, U, d + 1)[1:-1]
    if not np.all(np.diff(cuts) > 0) or cuts[0] <= 0:
        raise ParameterError(f"{d} categories up to U = {U:g} are too narrow to tell apart.",
                             hint="Use fewer categories or a larger top U.")
    return cuts


def _check_edges(edges: Sequence[float] | np.ndarray) -> np.ndarray:
    try:
        cuts = np.asarray(edges, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ParameterError("The bin edges must be numbers.") from None
    if cuts.size < 1 or cuts.size + 1 > MAX_DOMAIN:
        raise ParameterError(f"Give between 1 and {MAX_DOMAIN - 1} cut points (d − 1 for d categories).")
    if not np.all(np.isfinite(cuts)) or not np.all(np.diff(cuts) > 0):
        raise ParameterError("The bin edges must be finite and strictly increasing.")
    return cuts


def bin_labels(cuts: Sequence[float] | np.ndarray) -> list[str]:
    """Readable labels of the categories cut at the public points ``cuts`` ("a–b", top "≥ c")."""
    c = np.asarray(cuts, dtype=float)
    for digits in range(3, 18):
        lo = ["< " + f"{c[0]:.{digits}g}"] + [f"{c[i]:.{digits}g}–{c[i + 1]:.{digits}g}" for i in range(c.size - 1)]
        labels = lo + ["≥ " + f"{c[-1]:.{digits}g}"]
        if len(set(labels)) == len(labels):
            return labels
    return labels


def bin_measure(values: np.ndarray | pd.Series, d: int | None = None, *, scale: str = "log",
                top: float | None = None, edges: Sequence[float] | None = None) -> tuple[np.ndarray, list[str]]:
    """Categories 0…d−1 of a measure for the local model (one category per user), from public edges.

    The cut points are public: explicit ``edges`` (d − 1 increasing cut points, declared in
    advance), or :func:`bin_edges` from (d, ``scale``, ``top`` — the public top U of the range,
    :data:`DEFAULT_TOP` if not given). They never depend on the data, so a user's category is a
    function of that user's own value only and the labels publish nothing about other users.
    Missing and negative values fall in the first category. Returns the codes and the labels.
    """
    if edges is not None:
        cuts = _check_edges(edges)
        if d is not None and int(d) != cuts.size + 1:
            raise ParameterError(f"{cuts.size} cut points make {cuts.size + 1} categories, not d = {d}.")
    else:
        if d is None:
            raise ParameterError("Give the number of categories d or the public bin edges.")
        cuts = bin_edges(int(d), scale=scale, top=DEFAULT_TOP if top is None else top)
    v = np.nan_to_num(pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float), nan=-np.inf)
    codes = np.searchsorted(cuts, v, side="right")
    return codes.astype(np.int64), bin_labels(cuts)


def local_categories(table: pd.DataFrame, measure: str, d: int | None = 16, *, scale: str = "log",
                     top: float | None = None, edges: Sequence[float] | None = None,
                     filter: RecordFilter | None = None) -> tuple[np.ndarray, list[str]]:
    """Every record's category for the local model: its measure's public bin, or "not matching".

    Every record's owner reports (the roster size n is public in the local model). Without a
    filter there are d categories (:func:`bin_measure`). With a ``filter`` the domain gets one
    more public category, :data:`NOT_MATCHING`, reported by the owners of records that do not
    match: dropping them instead would make who reports — and, through the estimates summing
    to n, the exact number of matching records — depend on the data. Build the plan with
    ``d = len(labels)``.
    """
    if measure not in table.columns:
        raise ParameterError(f"The measure '{measure}' is not a column of the table.")
    codes, labels = bin_measure(table[measure].to_numpy(), d, scale=scale, top=top, edges=edges)
    if filter is not None:
        if len(labels) + 1 > MAX_DOMAIN:
            raise ParameterError(f"With a filter the domain has d + 1 categories; d must be below {MAX_DOMAIN}.")
        codes = np.where(filter.mask(table), codes, len(labels)).astype(np.int64)
        labels = labels + [NOT_MATCHING]
    return codes, labels
