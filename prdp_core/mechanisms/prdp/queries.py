"""Queries of the PrDP framework and their prepared data: requested budgets, domains, M's sufficient statistics.

A :class:`FrameworkQuery` names the statistic (count, sum, max, distinct or a custom ε-DP mechanism M);
:func:`prepare` evaluates E on every record, assigns the privacy-specified domains and collects
M's per-domain sufficient statistics — in memory, or by the engine that holds the table (only
aggregates reach the driver).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np
import pandas as pd

from ... import engines
from ...core.domains import DomainPartition
from ...core.errors import ParameterError, PolicyError
from ...engines import memory as memory_engine
from .answers import BUILTIN, AdaptiveClippedSum, RankMax
from .budget import BudgetFunction
from .selection import _table_of

QueryKind = Literal["count", "sum", "max", "distinct", "custom"]
CustomMechanism = Callable[[pd.DataFrame, float, float, np.random.Generator], float]


# ---------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FrameworkQuery:
    """What to answer and with which standard DP mechanism M.

    ``kind``: ``count``, ``sum`` (of ``column``), ``max`` (of ``column``), ``distinct`` (values
    of ``column``) or ``custom``. ``mechanism``: a built-in M (:class:`AdaptiveClippedSum`,
    :class:`RankMax`, …) or, for ``custom``, ``fn(table, eps, beta, rng) -> float`` (ε-DP).
    ``truth``: for ``custom``, the exact answer on a table (teaching mode).
    """

    kind: QueryKind
    column: str | None = None
    mechanism: Any = None
    truth: Callable[[pd.DataFrame], float] | None = None
    name: str = ""

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        return self.kind if self.column is None or self.kind == "count" else f"{self.kind}({self.column})"

    @staticmethod
    def count() -> "FrameworkQuery":
        return FrameworkQuery("count")

    @staticmethod
    def sum(column: str, mechanism: AdaptiveClippedSum | None = None) -> "FrameworkQuery":
        return FrameworkQuery("sum", column, mechanism)

    @staticmethod
    def max(column: str, mechanism: RankMax | None = None) -> "FrameworkQuery":
        return FrameworkQuery("max", column, mechanism)

    @staticmethod
    def distinct(column: str) -> "FrameworkQuery":
        return FrameworkQuery("distinct", column)

    @staticmethod
    def custom(name: str, fn: CustomMechanism,
               truth: Callable[[pd.DataFrame], float] | None = None) -> "FrameworkQuery":
        return FrameworkQuery("custom", None, fn, truth, name)

    def resolved(self, budget: BudgetFunction) -> "FrameworkQuery":
        """Fill in the column (default: the budget's measure) and the built-in mechanism."""
        if self.kind not in ("count", "sum", "max", "distinct", "custom"):
            raise ParameterError(f"Unknown query '{self.kind}'.", hint="Use count, sum, max, distinct or custom.")
        if self.kind == "custom":
            if not callable(self.mechanism):
                raise ParameterError("A custom query needs a mechanism fn(table, eps, beta, rng) -> float.")
            return self
        col = self.column
        if col is None and self.kind in ("sum", "max", "distinct"):
            col = budget.value_column
            if col is None:
                raise ParameterError(f"Say which column to {self.kind}: the budget does not name one measure.")
        mech = self.mechanism if self.mechanism is not None else BUILTIN[self.kind]
        return FrameworkQuery(self.kind, col, mech, self.truth, self.name)


def as_query(query: "str | FrameworkQuery") -> FrameworkQuery:
    """``"count"``, ``"sum"``, ``"sum:BALANCE"``, ``"max:BALANCE"``, ``"distinct:BRANCH"`` or a FrameworkQuery."""
    if isinstance(query, FrameworkQuery):
        return query
    if not isinstance(query, str):
        raise ParameterError("A query is a name such as 'sum' or 'sum:BALANCE', or a FrameworkQuery object.")
    kind, _, col = query.partition(":")
    kind = kind.strip().lower()
    if kind not in ("count", "sum", "max", "distinct"):
        raise ParameterError(f"Unknown query '{query}'.",
                             hint="Use count, sum, max or distinct (optionally ':column').")
    return FrameworkQuery(kind, col.strip() or None)  # type: ignore[arg-type]  # kind is one of count, sum, max or distinct (checked just above)


def _query_input(table: pd.DataFrame, q: FrameworkQuery) -> np.ndarray:
    if q.kind in ("sum", "max"):
        return memory_engine.measure_values(table, q.column)  # type: ignore[arg-type]  # a sum or max query names its column (checked when parsed)
    if q.kind == "distinct":
        if q.column not in table.columns:
            raise ParameterError(f"Column '{q.column}' is not in the table.")
        codes, _ = pd.factorize(table[q.column], use_na_sentinel=False)
        return codes.astype(np.int64)
    return np.zeros(len(table))


# ---------------------------------------------------------------------------
# Prepared data: requested budgets, domains and M's sufficient statistics
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """Everything the PrDP mechanisms need from a table, computed once (for runs and simulations)."""

    budget: BudgetFunction
    query: FrameworkQuery
    eps: np.ndarray | None    # requested E(r), aligned with the table (None: a table held by an engine)
    idx: np.ndarray | None    # domain 1..L of each record (None: a table held by an engine)
    counts: np.ndarray        # true records per domain (L,)
    stats: dict[str, Any] = field(repr=False)
    table: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return int(self.eps.size) if self.eps is not None else int(round(float(self.counts.sum())))

    @property
    def domains(self) -> DomainPartition:
        return self.budget.domains()

    def truth(self) -> float:
        q = self.query
        if q.kind == "custom":
            if q.truth is None or self.table is None:
                return math.nan
            return float(q.truth(self.table))
        return float(q.mechanism.truth(self.stats))


def prepare(table: Any, budget: BudgetFunction, query: "str | FrameworkQuery") -> Prepared:
    """Evaluate E on the table, assign domains and compute M's per-domain statistics."""
    if not isinstance(budget, BudgetFunction):
        raise ParameterError("budget must be a BudgetFunction (see prdp_core.mechanisms.prdp.parse_budget).")
    if engines.is_engine_data(table):
        return _prepare_on_engine(table, budget, query)
    t = _table_of(table)
    q = as_query(query).resolved(budget)
    eps = budget(t)
    dp = budget.domains()
    idx = dp.index(eps)
    stats: dict[str, Any] = {}
    if q.kind != "custom":
        stats = q.mechanism.stats(_query_input(t, q), idx, dp.L, budget.U)
    cnt = stats.get("cnt")
    if q.kind in ("sum", "max", "count") and cnt is not None:  # records per domain from M's histogram
        counts = cnt.sum(axis=1) if cnt.ndim == 2 else cnt.copy()
    else:
        counts = np.bincount(idx, minlength=dp.L + 1)[1:].astype(float)
    return Prepared(budget, q, eps, idx, counts, stats, t if q.kind == "custom" else None)


def _prepare_on_engine(data: Any, budget: BudgetFunction, query: "str | FrameworkQuery") -> Prepared:
    """:func:`prepare` with the per-domain statistics computed by the dataset's engine (the same
    numbers as on the records in memory; no per-record array)."""
    q = as_query(query).resolved(budget)
    if q.kind == "custom":
        raise PolicyError("A custom mechanism runs on the records: tables held by an engine take the built-in "
                          "count, sum, max and distinct.", hint="Run it on a sample (dataset.sample(n)).")
    mech = q.mechanism
    bins = mech.bins(budget.U) if hasattr(mech, "bins") else None
    eng = data.engine
    st = eng.domain_stats(budget, column=q.column if q.kind != "count" else None, bins=bins,
                          distinct=q.kind == "distinct")
    stats = mech.stats_from(st, budget.U)
    if q.kind == "max":
        stats["above"] = lambda x, col=q.column: eng.count_above(col, x)
    cnt = stats.get("cnt")
    if q.kind in ("sum", "max", "count") and cnt is not None:
        counts = cnt.sum(axis=1) if cnt.ndim == 2 else cnt.copy()
    else:
        counts = st.counts.astype(float)
    return Prepared(budget, q, None, None, counts, stats, None)
