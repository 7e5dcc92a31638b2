"""SQL engines: every statistic of :class:`~prdp_core.engines.base.Engine` as SQL over a relation.

:class:`SQLEngine` computes profiles, split-count histograms, per-cell aggregates, owner and
realized losses, the PrDP framework's per-domain statistics and the row checks with the SQL of
:mod:`prdp_core.engines.sql` (what differs between engines is the :class:`~.sql.Dialect`), and
collects only their aggregates. A concrete engine says how to run a query and where the relation
lives: :class:`~prdp_core.engines.duckdb_engine.DuckDBEngine` (embedded, out of core) and
:class:`~prdp_core.engines.spark_engine.SparkEngine` (a Spark session: local, a cluster or Spark
Connect). Their hooks: ``_exec`` / ``_frame`` (run a query, fetch its small result),
``_with_table`` (a small driver-side table, e.g. loss per split count, joined in the engine),
``derived`` (a view), ``_materialized`` (an intermediate aggregate kept while it is read twice),
``_order_statistics`` (exact order statistics by rank), ``_row_numbers`` (rows numbered in table
order), ``_budget_raw`` (a budget function's raw values), ``column_kinds`` and ``sample``.

Privacy meaning: as for every engine, the aggregates are computed from confidential records and
are confidential themselves; no noise is drawn here.
"""

from __future__ import annotations

import math
import threading
from abc import abstractmethod
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Literal, Sequence

import numpy as np
import pandas as pd

from ..core.distribution import MAX_EXACT_VALUES, LossDistribution
from ..core.errors import ParameterError, PolicyError
from ..core.loss_profile import owner_losses
from ..core.splitting import Thresholds, as_thresholds
from ..core.workload import Filter
from . import sql as sqlgen
from . import sql_budget
from .base import Aggregate, Bins, CellTable, ColumnKind, DomainStats, Engine, RealizedTerm, SplitHistogram
from .memory import BOUND_STEPS, _binned_edges, bound_bins, bound_edges
from .sql_checks import TableChecks
from .sql_profile import PROFILE_VALUES, ProfileStatistics, profile_of_values

#: Split-count histograms an engine keeps (the latest; each a few rows per split count and key).
KEPT_HISTOGRAMS = 8


class SQLEngine(ProfileStatistics, TableChecks, Engine):
    """Records in a relation of an SQL engine (a view or table named ``relation``), statistics as
    SQL in the engine's :class:`~prdp_core.engines.sql.Dialect` ``d`` (see the module docstring).

    The relation never changes, so row counts, missing-value counts and distinct values are kept
    once computed. Calls are serialised by a lock shared by the engines derived from one another."""

    def __init__(self, relation: str, dialect: sqlgen.Dialect, *, label: str = "", lock: threading.RLock | None = None
                 ) -> None:
        self.relation = relation
        self.label = label
        self.d = dialect
        self._lock = lock or threading.RLock()
        self._kinds: dict[str, ColumnKind] | None = None
        self._n: int | None = None
        self._nulls: dict[str, int] = {}  # the relation never changes: counts are kept
        self._integral: dict[str, tuple[bool, float]] = {}
        self.finite_integral: dict[str, tuple[bool, float]] = {}
        self._histograms: dict[str, pd.DataFrame] = {}  # split-count histograms by their SQL (several readers)
        self._distinct: dict[tuple, pd.DataFrame] = {}

    # -- what a concrete engine provides ---------------------------------------------------

    @abstractmethod
    def _exec(self, sql: str) -> list[tuple]:
        """The rows of a query's (small) result."""

    @abstractmethod
    def _frame(self, sql: str) -> pd.DataFrame:
        """A query's (small) result as a DataFrame."""

    @abstractmethod
    def _with_table(self, frame: pd.DataFrame, fn: Any) -> Any:
        """Run ``fn(name)`` with the small driver-side ``frame`` known to the engine as ``name``."""

    @abstractmethod
    def derived(self, select_sql: str, *, label: str | None = None) -> "SQLEngine":
        """A new engine of the same kind over a view ``select_sql`` of this one's relation."""

    @abstractmethod
    @contextmanager
    def _materialized(self, select_sql: str) -> Iterator[str]:
        """A name for the result of ``select_sql``, computed once while the block runs."""

    @abstractmethod
    def _row_numbers(self, source: str) -> str:
        """SQL numbering the rows of ``source`` (a relation or subquery) 1, 2, … in table order,
        for a SELECT over ``source``."""

    def _order_statistics(self, v: str, ranks: Sequence[int], n: int, parts: Sequence[str]
                          ) -> tuple[tuple, dict[int, float]]:
        """Exact order statistics of ``v`` (its non-missing values, n of them) at 0-based ``ranks``,
        with the row of the aggregates ``parts`` over the relation, in one pass (``quantile_disc``
        at (r + ½)/n is the element of rank r)."""
        q = self.d.quantiles_disc(v, [(r + 0.5) / n for r in ranks])
        row = self._exec(f"SELECT {', '.join([*parts, q])} FROM {self.relation}")[0]
        return tuple(row[:-1]), dict(zip(ranks, (float(x) for x in row[-1])))

    def _budget_raw(self, budget: Any, kinds: dict[str, ColumnKind]) -> tuple[str, str | None]:
        """SQL of a budget's raw values (before the [ε̌, ε̂] cap) giving numpy's bits, and the
        condition of records no part of a per-group budget covers. This one compiles the formula
        (:func:`~prdp_core.engines.sql_budget.budget_sql`) and refuses formulas the compiled SQL would
        not evaluate exactly; engines override it with their way of running the numpy kernel."""
        b = sql_budget.budget_sql(self.d, budget.shape, kinds)
        if not b.exact:
            raise PolicyError(f"The {self.name} engine cannot evaluate this budget exactly.")
        return b.raw, b.unmatched

    def _budget_categories(self, budget: Any, kinds: dict[str, ColumnKind]) -> sql_budget.BudgetCategories:
        """Each record's standing against a budget (no valid ε, below ε̌, else its domain)."""
        raw, unmatched = self._budget_raw(budget, kinds)
        return sql_budget.budget_categories(self.d, raw, budget, unmatched)

    # -- description -------------------------------------------------------------------

    def n_rows(self) -> int:
        if self._n is None:
            self._n = int(self._exec(f"SELECT count(*) FROM {self.relation}")[0][0])
        return self._n

    def distinct(self, columns: Sequence[str], *, limit: int | None = None) -> pd.DataFrame:
        key = (tuple(columns), limit)
        if key not in self._distinct:
            cols = ", ".join(self.d.ident(c) for c in columns)
            lim = f" LIMIT {int(limit)}" if limit is not None else ""
            frame = self._frame(f"SELECT DISTINCT {cols} FROM {self.relation} ORDER BY {cols} NULLS LAST{lim}")
            if len(frame) > 100_000:
                return frame
            self._distinct[key] = frame
        return self._distinct[key].copy()

    def null_counts(self, columns: Sequence[str]) -> dict[str, int]:
        todo = [c for c in dict.fromkeys(columns) if c not in self._nulls]
        if todo:
            kinds = self.column_kinds()
            parts = []
            for c in todo:
                i = self.d.ident(c)
                cond = f"{i} IS NULL" + (f" OR {self.d.isnan(self.d.as_double(i))}" if kinds.get(c) == "number" else "")
                parts.append(self.d.count_if(cond))
            row = self._exec(f"SELECT {', '.join(parts)} FROM {self.relation}")[0]
            self._nulls.update({c: int(v) for c, v in zip(todo, row)})
        return {c: self._nulls[c] for c in columns}

    def _split_sql(self, thr: Thresholds, per_measure: Sequence[str] = ()) -> sqlgen.SplitColumns:
        kinds = self.column_kinds()
        group = thr.group_col
        thr.check(kinds, None, lambda: [] if group is None else self.distinct([group])[group].tolist())
        if thr.group_col is not None:
            if thr.default() is None:
                nulls = self.null_counts([thr.group_col])[thr.group_col]
                if nulls:
                    raise PolicyError(f"{nulls:,} record(s) have no value in '{thr.group_col}' and there is no "
                                      "default ('*') thresholds row for them.",
                                      hint="Add a default row or fill the values.")
        plain = {a for a in thr.measures if self._exact_division(a, [dict(r)[a] for _, r in thr.rows])}
        return sqlgen.split_columns(self.d, self.relation, thr, kinds, per_measure, plain=plain)

    def _exact_division(self, measure: str, thresholds: Sequence[float]) -> bool:
        """True when ⌈v/T⌉ needs no guard for this column: whole-number values and thresholds with
        max|v|·T < 2^52 — then fl(v/T) is a whole number only when T divides v exactly, and the
        guard of splitting._pieces never changes ⌈fl(v/T)⌉ (counted once per column: kept)."""
        if not all(float(t).is_integer() and 0 < t < 2.0**26 for t in thresholds):
            return False
        if measure not in self._integral:
            v = self.d.as_double(self.d.ident(measure))
            whole, top = self._exec(f"SELECT bool_and({v} = {self.d.floor(v)}), max(abs({v})) FROM {self.relation}")[0]
            self._integral[measure] = (bool(whole), float(top) if top is not None else 0.0)
        whole, top = self._integral[measure]
        return whole and top * max(thresholds) < 2.0**52

    def _key_select(self, thr: Thresholds, measures: Sequence[str], filters: Sequence[Filter],
                    by: Sequence[str], extra: Sequence[str] = ()) -> tuple[str, list[str]]:
        """SELECT of each record's histogram key (and ``extra`` expressions), with the key names."""
        kinds = self.column_kinds()
        sc = self._split_sql(thr, measures)
        cols = [f"{sc.joint} AS {self.d.ident('m')}"] + [f"{sc.per_measure[a]} AS {self.d.ident('m:' + a)}"
                                                         for a in measures]
        cols += [f"{sqlgen.filter_sql(self.d, f, kinds)} AS {self.d.ident(f'in:{i}')}" for i, f in enumerate(filters)]
        for c in by:
            if c not in kinds:
                raise PolicyError(f"Column '{c}' is not in the table.")
            cols.append(f"{self.d.ident(c)} AS {self.d.ident(c)}")
        names = ["m"] + [f"m:{a}" for a in measures] + [f"in:{i}" for i in range(len(filters))] + list(by)
        return f"SELECT {', '.join(list(cols) + list(extra))} FROM ({sc.sql})", names

    def split_histogram(self, thresholds: Any, *, measures: Sequence[str] = (), filters: Sequence[Filter] = (),
                        by: Sequence[str] = ()) -> SplitHistogram:
        thr = as_thresholds(thresholds)
        sel, names = self._key_select(thr, measures, filters, by)
        keys = ", ".join(self.d.ident(n) for n in names)
        sql = f"SELECT {keys}, count(*) AS __n FROM ({sel}) GROUP BY ALL ORDER BY {keys} NULLS LAST"
        with self._lock:  # the release, its report and the owners' losses ask for the same histogram: one scan
            if sql not in self._histograms:
                self._histograms[sql] = self._frame(sql)
                while len(self._histograms) > KEPT_HISTOGRAMS:  # the oldest policy's (a session changes thresholds)
                    self._histograms.pop(next(iter(self._histograms)))
            frame = self._histograms[sql].copy()
        for col in ["m"] + [f"m:{a}" for a in measures]:
            v = frame[col].to_numpy(dtype=float)
            if v.size and not (np.all(np.isfinite(v)) and v.max() <= 2.0**53):
                if not np.all(np.isfinite(v)) or v.min() < 1:
                    raise PolicyError("Some measure has missing, infinite or negative values.",
                                      hint="Prepare the dataset first (drop missing rows, shift negatives).")
                raise ParameterError("A threshold is so small that a record would be cut into more than 2^53 pieces.",
                                     hint="Use larger splitting thresholds.")
            frame[col] = v.astype(np.int64)
        for i in range(len(filters)):
            frame[f"in:{i}"] = frame[f"in:{i}"].astype(bool)
        counts = frame.pop("__n").to_numpy(np.int64)
        return SplitHistogram(frame.reset_index(drop=True), counts, thr, tuple(measures), tuple(filters), tuple(by))

    def cell_aggregates(self, group_by: Sequence[str], aggregates: Sequence[Aggregate],
                        thresholds: Thresholds | None = None) -> CellTable:
        d = self.d
        kinds = self.column_kinds()
        gb = tuple(group_by)
        for c in gb:
            if c not in kinds:
                raise PolicyError(f"Group-by column '{c}' is not in the table.")
        need_m = any(a.kind == "pieces" for a in aggregates)
        if need_m and thresholds is None:
            raise ParameterError("Counting split rows needs the splitting thresholds.")
        source = f"({self._split_sql(as_thresholds(thresholds)).sql})" if need_m else self.relation  # type: ignore[arg-type]  # thresholds is not None when need_m (refused just above)
        parts = []
        for j, a in enumerate(aggregates):
            cond = sqlgen.filter_sql(d, a.filter, kinds) if a.filter is not None else "true"
            if a.kind == "count":
                parts.append(f"{d.count_if(cond)} AS __a{j}")
            elif a.kind == "pieces":
                parts.append(f"COALESCE({d.sum_if('__m', cond)}, 0) AS __a{j}")
            else:
                v = d.as_double(d.ident(a.measure or ""))
                if a.clamp is not None:
                    v = f"least(greatest({v}, {d.double(0.0)}), {d.double(float(a.clamp))})"
                parts.append(f"COALESCE({d.sum_if(v, cond)}, 0) AS __a{j}")
        keys = ", ".join(d.ident(c) for c in gb)
        if gb:
            frame = self._frame(f"SELECT {keys}, {', '.join(parts) or '0 AS __none'} FROM {source} GROUP BY {keys}")
        else:
            frame = self._frame(f"SELECT {', '.join(parts) or '0 AS __none'} FROM {source}")
        keys_frame, order = _sorted_cells(frame, gb)
        values = {a.name: frame[f"__a{j}"].to_numpy()[order] for j, a in enumerate(aggregates)}
        for a in aggregates:
            values[a.name] = values[a.name].astype(np.int64 if a.kind == "count" else np.float64)
        return CellTable(gb, keys_frame, values)

    def _loss_join(self, key: SplitHistogram, losses: np.ndarray, select_extra: Sequence[str]
                   ) -> tuple[Callable[[str], str], Any]:
        """SQL giving each record's loss (``__loss``, joined from the key rows) and ``select_extra``, as a function
        of the name the key rows' table gets (quoted column names may hold braces: never a format template)."""
        sel, names = self._key_select(key.thresholds, key.measures, key.filters, key.by, select_extra)
        tab = key.keys.copy()
        tab.columns = [f"__k{j}" for j in range(len(names))]
        tab["__loss"] = np.asarray(losses, dtype=float)
        on = " AND ".join(f"r.{self.d.ident(n)} IS NOT DISTINCT FROM k.__k{j}" for j, n in enumerate(names))
        hint = self.d.broadcast("k")
        return (lambda name: f"SELECT {hint + ' ' if hint else ''}r.*, k.__loss FROM ({sel}) r "
                             f"JOIN {name} k ON {on}"), tab

    def owner_losses(self, key: SplitHistogram, losses: np.ndarray, owner_col: str,
                     method: Literal["lemma4", "lemma5"] = "lemma4") -> LossDistribution:
        d = self.d
        if owner_col not in self.column_kinds():
            raise PolicyError(f"Owner column '{owner_col}' is not in the table.")
        if self.null_counts([owner_col])[owner_col]:
            raise ParameterError("Owner ids must not be missing.")
        o = d.ident(owner_col)
        join, tab = self._loss_join(key, losses, [f"{o} AS __owner"])
        if method == "lemma4":
            def run(name: str) -> LossDistribution:
                per_owner = (f"SELECT CAST(count(*) AS DOUBLE) * sum(__loss) AS __l FROM ({join(name)}) "
                             "GROUP BY __owner")
                return self._owner_distribution(per_owner, "__l", few=True)
            return self._with_table(tab, run)

        def patterns(name: str) -> pd.DataFrame:
            return self._frame(f"SELECT __p, count(*) AS __n FROM (SELECT {self.d.sorted_desc('__loss')} AS __p "
                               f"FROM ({join(name)}) GROUP BY __owner) GROUP BY __p")

        pats = self._with_table(tab, patterns)
        lens = np.array([len(p) for p in pats["__p"]], dtype=np.int64)
        flat = np.concatenate([np.asarray(p, dtype=float) for p in pats["__p"]]) if len(pats) else np.zeros(0)
        ids = np.repeat(np.arange(len(pats)), lens)
        with np.errstate(over="ignore", invalid="ignore"):
            bound = owner_losses(flat, ids, measure="rho", method="lemma5").to_numpy()
        return LossDistribution.from_counts(bound, pats["__n"].to_numpy(np.int64))

    def realized_losses(self, terms: Sequence[RealizedTerm], thresholds: Thresholds, *, partition_rho: float = 0.0,
                        owner_col: str | None = None, upper: float | None = None
                        ) -> tuple[LossDistribution, LossDistribution | None]:
        d = self.d
        kinds = self.column_kinds()
        thr = as_thresholds(thresholds)
        need_m = partition_rho > 0
        source = f"({self._split_sql(thr).sql})" if need_m else self.relation
        rec_terms = []
        for term in terms:
            inside = self._inside(term, kinds)
            delta = self._delta(term)
            c = _c_sql(d, term, kinds)
            value = f"(({delta} * {delta}) / {c})"
            rec_terms.append(value if inside == "true" else f"(CASE WHEN {inside} THEN {value} ELSE 0 END)")
            if term.extra:
                rec_terms.append(f"(CASE WHEN {inside} THEN {d.double(term.extra)} ELSE 0 END)")
        expr = d.double(0.0)
        for t in rec_terms:
            expr = f"({expr} + {t})"
        if need_m:
            expr = f"({expr} + ({d.double(partition_rho)} * (__m * __m)))"
        records = self._distribution(f"SELECT {expr} AS __r FROM {source}", "__r", upper=upper)
        if owner_col is None:
            return records, None
        return records, self.owner_realized_losses(terms, thr, partition_rho=partition_rho, owner_col=owner_col)

    def owner_realized_losses(self, terms: Sequence[RealizedTerm], thresholds: Thresholds, *,
                              partition_rho: float = 0.0, owner_col: str) -> LossDistribution:
        d = self.d
        kinds = self.column_kinds()
        if owner_col not in kinds:
            raise PolicyError(f"Owner column '{owner_col}' is not in the table.")
        thr = as_thresholds(thresholds)
        need_m = partition_rho > 0
        owner_parts: dict[tuple[str, ...], list[tuple[RealizedTerm, str, str]]] = {}
        for term in terms:
            owner_parts.setdefault(term.group_by, []).append((term, self._inside(term, kinds), self._delta(term)))
        o = d.ident(owner_col)
        # One aggregation per group-by set over (owner, its keys), then one over the owners. Every set's
        # aggregation covers all records, so the split counts' sum per owner (partition selection) rides on the
        # first one (read from the split source) instead of an aggregation over the owners of its own.
        arms = list(owner_parts.items()) or ([((), [])] if need_m else [])

        def per_owner(part: str) -> str:
            """The owners' losses of the owners whose records pass ``part`` (SQL; "true": every owner)."""
            where = "" if part == "true" else f" WHERE {part}"
            unions = []
            for i, (gb, items) in enumerate(arms):
                keys = [d.ident(c) for c in gb]
                sums, adds = [], []
                for j, (term, inside, delta) in enumerate(items):
                    sums.append(f"COALESCE({d.sum_if(delta, inside)}, 0) AS __s{j}")
                    c = _c_sql(d, term, kinds)
                    adds.append(f"((__s{j} * __s{j}) / {c})")
                    if term.extra_sigma is not None:
                        sums.append(f"{d.count_if(inside)} AS __n{j}")
                        ce = d.double(2.0 * np.float64(term.extra_sigma) ** 2)
                        adds.append(f"((CAST(__n{j} AS DOUBLE) * __n{j}) / {ce})")
                with_m = need_m and i == 0
                if with_m:
                    sums.append("sum(__m) AS __sm")
                source = f"({self._split_sql(thr).sql})" if with_m else self.relation
                group = ", ".join([o] + keys)
                unions.append(f"SELECT __o, {' + '.join(adds) or d.double(0.0)} AS __v"
                              f"{', __sm' if with_m else (', 0 AS __sm' if need_m else '')} FROM (SELECT {o} AS __o, "
                              f"{', '.join(keys + sums)} FROM {source}{where} GROUP BY {group})")
            if not unions:  # no query: every owner loses nothing
                unions.append(f"SELECT {o} AS __o, {d.double(0.0)} AS __v FROM {self.relation}{where}")
            if need_m:
                return (f"SELECT sum(__v) + {d.double(partition_rho)} * (CAST(sum(__sm) AS DOUBLE) * sum(__sm)) "
                        f"AS __l FROM ({' UNION ALL '.join(unions)}) GROUP BY __o")
            return f"SELECT sum(__v) AS __l FROM ({' UNION ALL '.join(unions)}) GROUP BY __o"

        # a large table: the owners in parts (by a hash of their id), one statement each, so that no aggregation
        # holds every (owner, cell) pair at once; an owner's records are all in its part
        parts = self._owner_parts()
        selects = ([per_owner("true")] if parts == 1 else
                   [per_owner(self._owner_part(o, parts, k)) for k in range(parts)])
        with self._lock, self._materialized_parts(selects) as name:  # aggregated once, read twice
            return self._distribution(f"SELECT __l FROM {name}", "__l")

    def _owner_parts(self) -> int:
        """In how many parts the owners' realized losses are aggregated (1: all at once)."""
        return 1

    def _owner_part(self, owner: str, parts: int, k: int) -> str:
        """SQL true for the records of the owners of part ``k`` of ``parts``: an engine whose
        :meth:`_owner_parts` can exceed 1 says how it splits them."""
        raise NotImplementedError(f"{type(self).__name__} aggregates the owners in one part")

    @contextmanager
    def _materialized_parts(self, selects: Sequence[str]) -> Iterator[str]:
        """:meth:`_materialized` of the rows of every one of ``selects`` (the same columns); an engine may compute
        them one statement at a time."""
        with self._materialized(" UNION ALL ".join(f"({s})" for s in selects)) as name:
            yield name

    def _inside(self, term: RealizedTerm, kinds: Any) -> str:
        """SQL of a record being in a cell of ``term`` (its query's filter and key list; ``true`` without)."""
        scope = term.scope()
        return " AND ".join(sqlgen.filter_sql(self.d, f, kinds) for f in scope) if scope else "true"

    def _delta(self, term: RealizedTerm) -> str:
        d = self.d
        if term.measure is None:
            return d.double(1.0)
        v = d.as_double(d.ident(term.measure))
        if term.clamp is not None:
            v = f"least(greatest({v}, {d.double(0.0)}), {d.double(float(term.clamp))})"
        return v

    def _owner_distribution(self, per_owner: str, col: str, *, few: bool = False) -> LossDistribution:
        """:meth:`_distribution` of per-owner values, aggregated once (:meth:`_materialized`: the
        aggregation over the owners is the costly part, and the distribution reads it twice).
        ``few``: the values are expected to take few distinct values (an engine may then try one
        pass first)."""
        with self._lock, self._materialized(per_owner) as name:
            return self._distribution(f"SELECT {col} FROM {name}", col)

    def _distribution(self, select: str, col: str, *, upper: float | None = None) -> LossDistribution:
        """The distribution of ``col`` over the rows of ``select``: exact when it takes at most
        :data:`MAX_EXACT_VALUES` distinct values, else on log bins (CASE tree: exact bin counts).
        With ``upper`` (every value ≤ it) and more rows than that limit: in one pass on
        :func:`~prdp_core.engines.memory.bound_edges`."""
        if upper is not None and self.n_rows() > MAX_EXACT_VALUES:
            edges = bound_edges(upper)
            return self._binned(select, col, edges, None, bound=True)
        lo, hi, total, approx = self._exec(f"SELECT min({col}), max({col}), sum({col}), approx_count_distinct({col}) "
                                           f"FROM ({select})")[0]
        if lo is not None and not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
            raise PolicyError("Some losses are too large to compute (they exceed the floating-point range).",
                              hint="Lower the budgets ρ or raise the splitting thresholds.")
        if lo is None:
            return LossDistribution(np.zeros(0), np.zeros(0, dtype=np.int64), total=0.0)
        if approx <= 1.5 * MAX_EXACT_VALUES:  # HyperLogLog's estimate: the exact count decides below
            frame = self._frame(f"SELECT {col} AS __x, count(*) AS __n FROM ({select}) GROUP BY __x ORDER BY __x "
                                f"LIMIT {MAX_EXACT_VALUES + 1}")
            if len(frame) <= MAX_EXACT_VALUES:
                return LossDistribution.from_counts(frame["__x"].to_numpy(dtype=float),
                                                    frame["__n"].to_numpy(dtype=np.int64))
        return self._binned(select, col, _binned_edges(float(lo), float(hi), 400), float(total))

    def _bins(self, col: str, edges: np.ndarray, *, bound: bool, estimate: bool) -> str:
        """Select-list items adding ``__b``, the bin of ``col`` on ``edges``: the bins of
        :func:`~prdp_core.engines.memory.bound_edges` (``bound``: ⌈8·log₂(x/edges[1])⌉, clipped, as
        :func:`~prdp_core.engines.memory.bound_bins`) or of log-spaced edges (searchsorted − 1,
        clipped); −1 where an estimated search missed (see :func:`~prdp_core.engines.sql.bucket_columns`)."""
        d = self.d
        last = edges.size - 2
        if bound:
            if d.exact_log2:
                b = (f"CAST(least(greatest(COALESCE(ceil(log2({col} / {d.double(edges[1])}) * {BOUND_STEPS}), 0), 0), "
                     f"{last}) AS BIGINT)")
                return f"(CASE WHEN {col} > 0 THEN {b} ELSE 0 END) AS __b"
            # the same bins as comparisons with their lower ends (found with the numpy kernel)
            steps = sql_budget.step_edges(lambda x: bound_bins(x, edges), 5e-324, math.inf, range(1, last + 1))
            est: str | None = f"ceil({d.log2(f'{col} / {d.double(edges[1])}')} * {d.double(float(BOUND_STEPS))})"
            n = sqlgen.bucket_columns(d, col, steps, "__bn", side="right", estimate=est if estimate else None)
            return n.select(f"(CASE WHEN {col} > 0 THEN {n.value} ELSE 0 END) AS __b")
        pos = edges[edges > 0]
        off = int(edges.size - pos.size)  # a leading 0 edge
        span = math.log2(float(pos[-1]) / float(pos[0])) or 1.0
        est = (f"{off} + ceil({d.log2(f'{col} / {d.double(float(pos[0]))}')} * {d.double((pos.size - 1) / span)})"
               if estimate else None)
        n = sqlgen.bucket_columns(d, col, edges, "__bn", side="left", estimate=est)
        b = f"least(greatest({n.value} - 1, 0), {last})"
        return n.select(f"(CASE WHEN {n.value} < 0 THEN -1 ELSE {b} END) AS __b" if n.items else f"{b} AS __b")

    def _binned(self, select: str, col: str, edges: np.ndarray, total: float | None, *, bound: bool = False
                ) -> LossDistribution:
        for estimate in (True, False):
            fr = self._frame(f"SELECT __b, count(*) AS __n, sum({col}) AS __s, max({col}) AS __m FROM (SELECT *, "
                             f"{self._bins(col, edges, bound=bound, estimate=estimate)} FROM ({select})) GROUP BY __b")
            if not len(fr) or fr["__b"].min() >= 0:
                break
        if len(fr) and not np.all(np.isfinite(fr["__m"].to_numpy(dtype=float))):
            raise PolicyError("Some losses are too large to compute (they exceed the floating-point range).",
                              hint="Lower the budgets ρ or raise the splitting thresholds.")
        counts = np.zeros(edges.size - 1, dtype=np.int64)
        counts[fr["__b"].to_numpy(np.int64)] = fr["__n"].to_numpy(np.int64)
        return LossDistribution.binned(edges, counts,
                                       total=float(fr["__s"].sum()) if total is None else total)

    def domain_stats(self, budget: Any, *, column: str | None = None, bins: Bins | None = None,
                     distinct: bool = False) -> DomainStats:
        d = self.d
        kinds = self.column_kinds()
        budget.check_columns(list(kinds))
        cats = self._budget_categories(budget, kinds)
        unmatched = cats.unmatched
        # one pass: each record's standing (no budget part: −2, no valid ε: −1, below ε̌: 0, else its
        # domain), counted per standing; then the checks of BudgetFunction.__call__ (strict), in its
        # order and with its counts (each check raises before the next one's records are counted)
        standing = cats.standing
        if standing is None or unmatched is not None:
            standing = (f"CASE {f'WHEN {unmatched} THEN -2 ' if unmatched is not None else ''}WHEN {cats.invalid} "
                        f"THEN -1 WHEN {cats.below} THEN 0 ELSE {cats.index} END")
        tally = {int(k): int(n) for k, n in self._exec(f"SELECT {standing} AS __d, count(*) FROM {self.relation} "
                                                       "GROUP BY __d")}
        if tally.get(-2):
            g = budget.shape.column
            ex = self._exec(f"SELECT DISTINCT {d.ident(g)} FROM {self.relation} WHERE {unmatched} LIMIT 3")
            raise PolicyError(f"No budget is given for {g} = {', '.join(str(r[0]) for r in ex)}.",
                              hint="Add a part for these values or a default budget.")
        if tally.get(-1):
            raise PolicyError(f"The budget formula gives no valid ε (zero, negative or undefined) for {tally[-1]:,} "
                              "record(s).", hint="Guard divisions and logarithms, e.g. 1e4 / max(BALANCE, 1), "
                                                 "and keep values in the domain [0, U].")
        if tally.get(0):
            dom = f" above the domain bound U = {budget.U:g}" if budget.shape.decreasing() else ""
            raise PolicyError(f"{tally[0]:,} record(s) ask for a budget below ε̌ = {budget.eps_min:.4g}; for this "
                              f"budget that means values{dom or ' outside the domain'}.",
                              hint="Raise U (or lower ε̌) so that every record's requirement can be honoured.")
        L = budget.domains().L
        base = f"SELECT *, {cats.index} AS __d FROM {self.relation}"
        counts = np.zeros(L, dtype=np.int64)
        for i, n in tally.items():
            counts[i - 1] = n
        hc = hs = dist = None
        mx = None
        if column is not None and distinct:
            if column not in kinds:
                raise ParameterError(f"Column '{column}' is not in the table.")
            dist = np.zeros(L, dtype=np.int64)
            for dom, n in self._exec(f"SELECT __t, count(*) FROM (SELECT max(__d) AS __t FROM ({base}) GROUP BY "
                                     f"{d.ident(column)}) GROUP BY __t"):
                dist[int(dom) - 1] = int(n)
        elif column is not None:
            v = self._checked_measure(column)
            mx = float(self._exec(f"SELECT COALESCE(max({v}), 0) FROM {self.relation}")[0][0])
            if bins is not None:
                B = bins.size
                hc = np.zeros((L, B), dtype=np.int64)
                hs = np.zeros((L, B))
                for estimate in (True, False):
                    rows = self._exec(f"SELECT __d, __b, count(*), sum({v}) FROM (SELECT *, "
                                      f"{sql_budget.value_bin_columns(d, v, bins, '__b', estimate=estimate)} "
                                      f"FROM ({base})) GROUP BY __d, __b")
                    if all(int(k) >= 0 for _, k, _, _ in rows):
                        break
                for dom, k, n, s in rows:
                    hc[int(dom) - 1, int(k)] = int(n)
                    hs[int(dom) - 1, int(k)] = float(s)
        return DomainStats(counts, hc, hs, dist, mx)

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _c_sql(d: sqlgen.Dialect, term: RealizedTerm, kinds: dict[str, ColumnKind]) -> str:
    """2σ² of a record's cell (one literal, or a CASE over the thresholds' group column)."""
    c = d.double(2.0 * np.float64(term.sigma) ** 2)
    if term.by is None or not term.sigma_by:
        return c
    whens = []
    for g, s in term.sigma_by:
        cond = sqlgen.equals(d, term.by, kinds.get(term.by, "other"), g)
        if cond is not None:
            whens.append(f"WHEN {cond} THEN {d.double(2.0 * np.float64(s) ** 2)}")
    return f"(CASE {' '.join(whens)} ELSE {c} END)" if whens else c


def _sorted_cells(frame: pd.DataFrame, gb: tuple[str, ...]) -> tuple[pd.DataFrame, np.ndarray]:
    """Cell keys in the in-memory release's order (each column's values sorted by pandas, then
    lexicographically), as categoricals like it; and the row order that gives it."""
    if not gb:
        return pd.DataFrame(index=[0]), np.arange(len(frame))
    codes = []
    cats = []
    for c in gb:
        k, u = pd.factorize(frame[c].to_numpy(dtype=object) if frame[c].dtype == object else frame[c], sort=True)
        codes.append(k)
        cats.append(pd.Index(u))
    order = np.lexsort(tuple(reversed(codes))) if len(frame) else np.arange(0)
    keys = pd.DataFrame({c: pd.Categorical.from_codes(k[order], categories=u) for c, k, u in zip(gb, codes, cats)})
    return keys, order


def _normalise_frame(df: pd.DataFrame) -> pd.DataFrame:
    """DuckDB's pandas output with text columns as pandas' own text dtype."""
    for c in df.columns:
        if df[c].dtype == object and df[c].map(lambda x: x is None or isinstance(x, str)).all():
            df[c] = df[c].astype("str")
    return df


def _short(exc: BaseException, limit: int = 240) -> str:
    s = str(exc).strip().split("\n")[0] or type(exc).__name__
    return s[:limit]



__all__ = ["PROFILE_VALUES", "SQLEngine", "profile_of_values"]  # the last two from sql_profile
