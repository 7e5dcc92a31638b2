"""The personalized DP query: what is asked of the data (count, sum, mean, median or min of a column).

:class:`PersonalizedQuery` declares its public parameters — the count's cut-off, the value
bounds lo and hi (sensitivity and output range), the declared value type, the median's score
and an optional :class:`~prdp_core.mechanisms.personalized.blackbox.BlackBox` — and prepares
the per-tuple inputs of the mechanisms and the true answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ...core.errors import ParameterError
from .blackbox import BlackBox
from .ranges import _integer_bounds, _on_grid

QueryKind = Literal["count", "sum", "mean", "median", "min"]
QUERY_KINDS: tuple[str, ...] = ("count", "sum", "mean", "median", "min")
MEDIAN_SCORES = ("rank", "changes")


@dataclass(frozen=True)
class PersonalizedQuery:
    """What is asked of the data.

    kind:
        ``count`` (tuples with value ≥ ``cutoff``; every tuple when ``column`` is None),
        ``sum``, ``mean``, ``median`` or ``min`` of ``column``.
    column:
        The value column.
    cutoff:
        For count: a tuple counts when its value is ≥ ``cutoff`` (1 for a 0/1 column —
        the paper's setting).
    median_score:
        Score of the black-box ε-DP median used by Minimum, Threshold and Sample:
        ``"rank"`` (default; −(max(L, G) − n/2)⁺, add/remove sensitivity ½, so weights
        exp(ε·s)) or ``"changes"`` (the change-count score of Eq. 3, sensitivity 1, weights
        exp(ε·s/2) — twice as flat; what the paper's uniform-Φ PE reduces to). Both are
        ε-DP under add/remove neighbours (brute-force checked in the tests).
    lo, hi:
        Public bounds of the values for sum, mean, median and min: values are clipped
        to [lo, hi] (a per-tuple step, no privacy cost). They set the sensitivity of
        sums (max(|lo|, |hi|)) and the output range R of median and min. Choose them
        without looking at the data in a real release.
    integer:
        Declared value type of ``column`` (**public**, like lo and hi): ``True`` when the
        values are whole numbers by definition (counts of employees, ages in years…).
        Median and min then answer on the integers of [lo, hi] (lo and hi must be whole
        numbers) and every value is rounded to the nearest integer before the mechanism
        (a per-tuple step, no privacy cost). ``False`` (default): the continuum [lo, hi].
        The output range is never inferred from the values: if it were, changing one
        tuple from 4 to 4.5 would switch every answer from integers to non-integers and
        the two output laws would have disjoint supports (unbounded loss).
    black_box:
        Optional :class:`BlackBox`: the ε-DP mechanism that Minimum, Threshold and Sample run
        on the prepared values instead of the built-in one for ``kind`` (``kind`` still says
        how values are prepared and what the true answer is). It must be ε-DP under
        add/remove neighbours; PE and Stretching have their own mechanisms and refuse it.
    """

    kind: str = "count"
    column: str | None = None
    cutoff: float = 1.0
    lo: float = 0.0
    hi: float | None = None
    median_score: str = "rank"
    integer: bool = False
    black_box: BlackBox | None = None

    def __post_init__(self) -> None:
        if self.black_box is not None and not isinstance(self.black_box, BlackBox):
            raise ParameterError("The query's black box must be a BlackBox(name, fn, substitution).")
        if self.median_score not in MEDIAN_SCORES:
            raise ParameterError(f"Unknown median score '{self.median_score}'.",
                                 hint="Use 'rank' (sensitivity ½) or 'changes' (the paper's Eq. 3, sensitivity 1).")
        if self.kind not in QUERY_KINDS:
            raise ParameterError(f"Unknown query '{self.kind}'.", hint=f"Use one of: {', '.join(QUERY_KINDS)}.")
        if self.kind != "count":
            if self.column is None:
                raise ParameterError(f"A {self.kind} needs a value column.")
            if self.hi is None or not math.isfinite(float(self.hi)) or not math.isfinite(float(self.lo)):
                raise ParameterError(f"A {self.kind} needs finite public bounds lo and hi for the values.")
            if float(self.hi) <= float(self.lo):
                raise ParameterError(f"The value bounds must satisfy lo < hi (got {self.lo:g} and {self.hi:g}).")
        elif not math.isfinite(float(self.cutoff)):
            raise ParameterError("The count cut-off must be a finite number.")
        if not isinstance(self.integer, (bool, np.bool_)):
            raise ParameterError("The declared value type 'integer' must be True or False.")
        if self.integer and self.kind in ("median", "min"):
            _integer_bounds(float(self.lo), self.hi_bound)

    @property
    def hi_bound(self) -> float:
        """``hi`` as a number: the public upper value bound of a sum, mean, median or min (set and finite,
        checked when the query is built); a count has none."""
        if self.hi is None:
            raise ParameterError(f"A {self.kind} query has no upper value bound.")
        return float(self.hi)

    @property
    def bound(self) -> float:
        """Add/remove sensitivity of a sum of clipped values: max(|lo|, |hi|) (1 for count)."""
        if self.kind == "count":
            return 1.0
        return float(max(abs(self.lo), abs(self.hi or 0.0)))

    def describe(self) -> str:
        if self.kind == "count":
            base = "count of tuples" if self.column is None else f"count of {self.column} ≥ {self.cutoff:g}"
            return base + self._via()
        grid = " (integers)" if self.integer and self.kind in ("median", "min") else ""
        return f"{self.kind} of {self.column} in [{self.lo:g}, {self.hi:g}]{grid}{self._via()}"

    def _via(self) -> str:
        return f" via {self.black_box.name}" if self.black_box is not None else ""

    def raw(self, table: pd.DataFrame) -> np.ndarray:
        """The column as numbers (for true answers)."""
        if self.column is None:
            return np.ones(len(table))
        if self.column not in table.columns:
            raise ParameterError(f"'{self.column}' is not a column of the table.")
        v = pd.to_numeric(table[self.column], errors="coerce").to_numpy(dtype=float)
        if np.isnan(v).any():
            raise ParameterError(f"'{self.column}' has {int(np.isnan(v).sum()):,} missing or non-numeric value(s).",
                                 hint="Choose a measure column (the Data page cleans measures).")
        return v

    def prepare(self, raw: np.ndarray) -> np.ndarray:
        """Per-tuple inputs of the mechanisms: 0/1 bits for count, clipped values otherwise
        (rounded to the nearest integer first for a median or min of declared integers)."""
        v = np.asarray(raw, dtype=float)
        if self.kind == "count":
            return (v >= self.cutoff).astype(float) if self.column is not None else np.ones(v.size)
        return _on_grid(v, float(self.lo), self.hi_bound, self.on_integers)

    @property
    def on_integers(self) -> bool:
        """Whether median and min answer on the integers of [lo, hi] (the declared value type; public)."""
        return bool(self.integer) and self.kind in ("median", "min")

    def truth(self, raw: np.ndarray) -> float:
        """True answer on the unclipped values (so errors include any clipping bias)."""
        v = np.asarray(raw, dtype=float)
        if self.kind == "count":
            return float(self.prepare(v).sum())
        if v.size == 0:
            return float("nan")
        if self.kind == "sum":
            return float(v.sum())
        if self.kind == "mean":
            return float(v.mean())
        if self.kind == "median":
            return float(np.sort(v)[v.size // 2])  # upper median, as the mechanisms (0-indexed rank ⌊n/2⌋)
        return float(v.min())
