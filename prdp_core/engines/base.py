"""The engine interface: statistics computed where the data lives, noise drawn on the driver.

An :class:`Engine` holds a table of records — a pandas DataFrame (:mod:`.memory`), a Parquet or
CSV file, folder or glob, or a table of a DuckDB database (:mod:`.duckdb_engine`) — and answers
the questions prdp_core asks about its records with **small, mergeable aggregates**: counts, sums
and order statistics per value, per cell or per domain. No method returns one number per record of
the whole table (:meth:`Engine.sample` returns the N rows asked for). Mechanisms take these
aggregates and draw their noise on the driver, so a release of a 10⁸-row file moves a few
kilobytes into Python.

Every aggregate is a function of the records that would give the same numbers if the table were
cut into parts, computed part by part and merged (counts and sums add; the split-count histogram
of two parts is the sum of theirs) — the property a cluster engine needs. Counts, split counts,
histograms and domain indices are exact and equal across engines; sums agree to rounding (the
order of additions differs).

Privacy meaning: every aggregate here is computed from confidential records. Engines draw no
noise; they are the "where the data lives" side of the rule, and their outputs are treated like
the records themselves (shown to the data holder, never released without a mechanism).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from ..core.distribution import LossDistribution
from ..core.errors import ParameterError, PolicyError
from ..core.splitting import Thresholds
from ..core.workload import Filter, SplittingPolicy
from ..data.dataset import Schema, TableCheck
from ..data.profile import DatasetProfile

ColumnKind = Literal["number", "text", "bool", "other"]


# ---------------------------------------------------------------------------
# Aggregates (engine outputs)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitHistogram:
    """Records counted by their split counts — the sufficient statistic of the policy loss.

    ``keys`` has one row per distinct combination of: ``m`` (joint split count, max over every
    thresholded measure), ``m:<measure>`` (that measure's own count, for per-measure splitting),
    ``in:<i>`` (True when the record passes ``filters[i]``) and the ``by`` columns; ``counts`` the
    records of each row. P(r) of a unit-splitting policy depends on a record only through these, so
    the records' loss distribution follows exactly (:func:`prdp_core.engines.losses.policy_loss_table`).
    """

    keys: pd.DataFrame
    counts: np.ndarray
    thresholds: Thresholds
    measures: tuple[str, ...] = ()
    filters: tuple[Filter, ...] = ()
    by: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def column(self, name: str) -> np.ndarray:
        """One key column as an array (``m``, ``m:<measure>``, ``in:<i>`` or a ``by`` column)."""
        return self.keys[name].to_numpy()

    def pieces(self, measure: str | None = None) -> np.ndarray:
        """Split counts of each row: joint (``measure`` None) or of one measure (float64)."""
        return self.keys["m" if measure is None else f"m:{measure}"].to_numpy(dtype="float64")

    def mask(self, f: Filter) -> np.ndarray:
        """Whether the records of each row pass filter ``f``."""
        return self.keys[f"in:{self.filters.index(f)}"].to_numpy(dtype=bool)

    def merge(self, other: "SplitHistogram") -> "SplitHistogram":
        """The histogram of both parts' records (a part of the table each)."""
        keys = pd.concat([self.keys.assign(_c=self.counts), other.keys.assign(_c=other.counts)], ignore_index=True)
        g = keys.groupby(list(self.keys.columns), sort=True, dropna=False)["_c"].sum().reset_index()
        return SplitHistogram(g.drop(columns="_c"), g["_c"].to_numpy(np.int64), self.thresholds, self.measures,
                              self.filters, self.by)


@dataclass(frozen=True)
class Aggregate:
    """One per-cell aggregate of a workload: ``count`` (records), ``pieces`` (Σ m(r), the split
    rows) or ``sum`` (Σ of ``measure``, clamped to [0, ``clamp``] when given), over the records
    passing ``filter``."""

    name: str
    kind: Literal["count", "pieces", "sum"]
    measure: str | None = None
    clamp: float | None = None
    filter: Filter | None = None


@dataclass(frozen=True)
class CellTable:
    """Aggregates per cell of one group-by, over the cells present among **all** records.

    ``keys`` are sorted as the in-memory release sorts them (each column's distinct values in
    pandas' sort order, then lexicographically), so noise drawn cell by cell lines up with it."""

    group_by: tuple[str, ...]
    keys: pd.DataFrame
    values: dict[str, np.ndarray]

    @property
    def n_cells(self) -> int:
        return len(self.keys)


@dataclass(frozen=True)
class RealizedTerm:
    """One query's part of the realized loss of a record (Sec. 6.1, exact for Gaussian answers).

    A record inside the query's scope (``filter``) adds Δ(r)²/(2σ²), where Δ(r) is 1 (COUNT) or its
    value of ``measure`` (clamped to [0, ``clamp``] for a top-coded sum) and σ the noise of its
    cell: ``sigma`` for every cell, or per value of the thresholds' group column ``by``
    (``sigma_by``, a group-by key of the query). An AVG adds ``extra`` (its count part's ρ) for a
    record and, for an owner, (records of the owner in the cell)²/(2·``extra_sigma``²). Owners sum
    Δ within each cell of ``group_by`` before squaring. ``keys``: the filters of a public key list (one per
    column, :func:`prdp_core.core.workload.filters`) — a record outside a listed cell is in no cell and adds 0."""

    group_by: tuple[str, ...]
    filter: Filter | None
    measure: str | None
    clamp: float | None
    sigma: float
    by: str | None = None
    sigma_by: tuple[tuple[Any, float], ...] = ()
    extra: float = 0.0
    extra_sigma: float | None = None
    keys: tuple[Filter, ...] = ()

    def scope(self) -> tuple[Filter, ...]:
        """Every filter a record must pass to be in a cell of the term: its query's and its key list's."""
        return ((self.filter,) if self.filter is not None else ()) + tuple(self.keys)


@dataclass(frozen=True)
class DomainStats:
    """Per-domain statistics of the general PrDP framework (``prdp.prepare``), for one budget.

    ``counts[i]``: records of domain i + 1. With ``bins``: ``hist_counts[i, b]`` and
    ``hist_sums[i, b]`` count and sum the query column's values of domain i + 1 falling in bin b
    (powers of two for the clipped sum, the log grid for the max). ``distinct[i]``: distinct values
    of the column whose largest domain is i + 1. ``max``: the column's largest value."""

    counts: np.ndarray
    hist_counts: np.ndarray | None = None
    hist_sums: np.ndarray | None = None
    distinct: np.ndarray | None = None
    max: float | None = None


@dataclass(frozen=True)
class Bins:
    """How :meth:`Engine.domain_stats` bins the query column: ``pow2`` — j − j0 for the smallest
    j ∈ [j0, J] with v ≤ 2^j (J + 1 − j0 above 2^J; exact, from the IEEE bits); ``loggrid`` — the
    candidate index of :class:`prdp_core.mechanisms.prdp.RankMax` (0 for v ≤ 0, ⌈(log₂ v − j0)·steps⌉
    + 1 clipped to [1, m − 1], m above U)."""

    kind: Literal["pow2", "loggrid"]
    j0: int
    J: int = 0
    steps: int = 0
    m: int = 0
    U: float = 0.0

    @property
    def size(self) -> int:
        return self.J - self.j0 + 2 if self.kind == "pow2" else self.m + 1


# ---------------------------------------------------------------------------
# The interface
# ---------------------------------------------------------------------------


class Engine(ABC):
    """Where the records live, and the statistics prdp_core computes there (see the module docstring).

    Implementations: :class:`~prdp_core.engines.memory.MemoryEngine` (numpy/pandas) and
    :class:`~prdp_core.engines.duckdb_engine.DuckDBEngine` (SQL, out of core). An engine answers
    on the table as it is; :func:`prdp_core.engines.prepare` first checks it and applies the
    dataset's fixes (dropped rows, public shifts), as :func:`prdp_core.data.prepare_dataset` does.
    """

    name: ClassVar[str] = "abstract"

    # -- description -------------------------------------------------------------------

    @abstractmethod
    def column_kinds(self) -> dict[str, ColumnKind]:
        """Each column's kind: ``number``, ``text``, ``bool`` or ``other``, in table order."""

    @abstractmethod
    def n_rows(self) -> int:
        """Number of records."""

    @abstractmethod
    def distinct(self, columns: Sequence[str], *, limit: int | None = None) -> pd.DataFrame:
        """Distinct combinations of ``columns`` present (missing values included), sorted; at most
        ``limit`` rows (more: the first ``limit``)."""

    @abstractmethod
    def null_counts(self, columns: Sequence[str]) -> dict[str, int]:
        """Missing values (null, NaN) per column."""

    @abstractmethod
    def check(self, schema: Schema) -> TableCheck:
        """Row-level checks of :func:`prdp_core.data.check_table`: counts and a few examples."""

    @abstractmethod
    def sample(self, n: int, seed: int) -> pd.DataFrame:
        """A uniform random sample of ``n`` rows without replacement (all rows when fewer), the same
        rows for the same seed in every engine: positions drawn by
        ``numpy.random.default_rng(seed).choice(n_rows, n, replace=False)``, in table order."""

    # -- statistics ----------------------------------------------------------------------

    @abstractmethod
    def profile(self, measures: Sequence[str], *, bins: int = 40, lorenz_points: int = 201) -> DatasetProfile:
        """Profiles of measure columns (count, exact quantiles, top-1% share, skewness), their log
        histograms and Lorenz curves (:mod:`prdp_core.data.profile`)."""

    @abstractmethod
    def split_histogram(self, thresholds: Thresholds, *, measures: Sequence[str] = (),
                        filters: Sequence[Filter] = (), by: Sequence[str] = ()) -> SplitHistogram:
        """Records counted by joint split count m(r), each of ``measures``' own count, whether they
        pass each filter, and ``by`` values (see :class:`SplitHistogram`)."""

    @abstractmethod
    def cell_aggregates(self, group_by: Sequence[str], aggregates: Sequence[Aggregate],
                        thresholds: Thresholds | None = None) -> CellTable:
        """Per-cell aggregates of one group-by (``pieces`` needs ``thresholds``)."""

    def unit_losses(self, key: SplitHistogram, losses: np.ndarray, *, owner_col: str | None = None,
                    method: Literal["records", "lemma4", "lemma5"] = "records") -> LossDistribution:
        """Distribution of losses given per row of ``key.keys`` (a record's loss is its row's): over
        records (exact, from the histogram's counts), or over owners (:meth:`owner_losses`)."""
        if method == "records":
            return LossDistribution.from_counts(np.asarray(losses, dtype=float), key.counts)
        if owner_col is None:
            raise PolicyError("Owner losses need an owner column.")
        return self.owner_losses(key, losses, owner_col, method)

    @abstractmethod
    def owner_losses(self, key: SplitHistogram, losses: np.ndarray, owner_col: str,
                     method: Literal["lemma4", "lemma5"] = "lemma4") -> LossDistribution:
        """Distribution over owners of J·Σ_j P(r_j) (Lemma 4) or the Lemma 5 bound
        (:func:`prdp_core.core.loss_profile.owner_losses`), a record's P(r) being its row's in ``losses``."""

    @abstractmethod
    def realized_losses(self, terms: Sequence[RealizedTerm], thresholds: Thresholds, *, partition_rho: float = 0.0,
                        owner_col: str | None = None, upper: float | None = None
                        ) -> tuple[LossDistribution, LossDistribution | None]:
        """Distributions of the records' (and owners') realized losses of a release whose queries
        are ``terms`` (see :class:`RealizedTerm`), plus ρ_ps·m(r)² (owners: ρ_ps·(Σ m)²).
        ``upper`` bounds every record's realized loss (its policy loss): with more records than
        :data:`~prdp_core.core.distribution.MAX_EXACT_VALUES` their distribution is binned on
        :func:`~prdp_core.engines.memory.bound_edges` in one pass."""

    def owner_realized_losses(self, terms: Sequence[RealizedTerm], thresholds: Thresholds, *,
                              partition_rho: float = 0.0, owner_col: str) -> LossDistribution:
        """The owners' distribution of :meth:`realized_losses` alone, the records' not computed: for a release
        that left it out (``owner_realized=False``: summing every owner's losses is the costly part on a large
        table) and is asked for it later, from the release's own terms — the same numbers."""
        own = self.realized_losses(terms, thresholds, partition_rho=partition_rho, owner_col=owner_col)[1]
        if own is None:  # pragma: no cover - an engine returns the owners' distribution when given an owner
            raise PolicyError("Owner losses need an owner column.")
        return own

    @abstractmethod
    def domain_stats(self, budget: Any, *, column: str | None = None, bins: Bins | None = None,
                     distinct: bool = False) -> DomainStats:
        """Per-domain statistics of a budget function E (``prdp.prepare``): records per domain and,
        for the query column, the binned histogram or the distinct values' largest domain. Raises
        the :class:`~prdp_core.core.errors.PolicyError` of :meth:`BudgetFunction.__call__` (with its
        counts) when some record's budget is invalid or below ε̌."""

    @abstractmethod
    def count_above(self, column: str, values: Sequence[float]) -> np.ndarray:
        """Records with ``column`` > each value (rank errors of a released maximum)."""

    @abstractmethod
    def order_statistics(self, column: str, ranks: Sequence[int]) -> np.ndarray:
        """The values of a measure at 0-based ``ranks`` of its sorted values (exact; each rank in
        [0, records − 1])."""

    # -- read-outs built on the statistics ---------------------------------------------------

    def quantiles(self, column: str, qs: Sequence[float]) -> np.ndarray:
        """Quantiles of a measure by numpy's default (linear) rule: the two order statistics around
        q·(n − 1), interpolated by ``numpy.quantile`` itself (the bits of the in-memory array's)."""
        q = np.asarray(qs, dtype=float)
        if np.any(~np.isfinite(q) | (q < 0) | (q > 1)):
            raise ParameterError("Quantiles must be between 0 and 1.")
        n = self.n_rows()
        if n == 0 or not q.size:
            return np.full(q.shape, np.nan)
        pos = q * (n - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        ranks = sorted(set(lo.tolist()) | set(hi.tolist()))
        at = dict(zip(ranks, self.order_statistics(column, ranks).tolist()))
        return np.array([float(np.quantile(np.array([at[a], at[b]]), f))
                         for a, b, f in zip(lo.tolist(), hi.tolist(), (pos - lo).tolist())])

    def threshold_quantiles(self, column: str, qs: Sequence[float]) -> np.ndarray:
        """Splitting thresholds at quantiles of a measure (the PctScore of Table 8): each quantile,
        or — where it is 0 — the smallest positive value (1 when every value is 0), as
        :func:`prdp_core.core.splitting.percentile_thresholds` computes on a table in memory."""
        t = self.quantiles(column, qs)
        if np.any(t <= 0):
            n = self.n_rows()
            positive = int(self.count_above(column, [0.0])[0])
            smallest = float(self.order_statistics(column, [n - positive])[0]) if positive else 1.0
            t = np.where(t <= 0, smallest, t)
        return t

    # -- shared checks -------------------------------------------------------------------

    @property
    def columns(self) -> list[str]:
        return list(self.column_kinds())

    def validate_policy(self, policy: SplittingPolicy, measures: Sequence[str] | None = None) -> None:
        """The checks of :meth:`SplittingPolicy.validate`, with the same messages, computed with
        counts in the engine (never by loading the table)."""
        policy.check(self.columns, None if measures is None else tuple(measures),
                     lambda col: self.distinct([col])[col].tolist(), self.null_counts)

    def describe(self) -> str:
        return f"{self.name} engine"


@dataclass(frozen=True)
class EngineOptions:
    """Settings of an engine. DuckDB: ``memory_limit`` (e.g. ``"3GB"``: beyond it DuckDB spills to
    ``temp_directory``), ``threads`` (None: one per core); ``extra["allowed_directories"]``: the only
    folders the connection may read (with its spill folder; e.g. the app's data folder, so a view
    stored in a database file cannot read a file elsewhere). Spark: ``master`` (``local[*]``,
    ``spark://host:7077``, ``yarn``, …) or ``remote`` (a Spark Connect server, ``sc://host:15002``),
    and ``conf`` (Spark settings, e.g. ``{"spark.executor.memory": "8g"}``) for the session the
    engine starts when none is running (see :mod:`prdp_core.engines.spark_engine`)."""

    memory_limit: str | None = None
    temp_directory: str | None = None
    threads: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    master: str | None = None
    remote: str | None = None
    conf: Mapping[str, Any] = field(default_factory=dict)


__all__ = ["Aggregate", "Bins", "CellTable", "ColumnKind", "DomainStats", "Engine", "EngineOptions", "RealizedTerm",
           "SplitHistogram"]
