"""The Spark engine: the statistics of the engine layer computed by Spark, where the table lives.

A :class:`SparkEngine` holds a Spark DataFrame — Parquet or CSV files (a path, a folder or a
glob; ``hdfs://``, ``s3a://`` and other URIs are passed to Spark untouched), a table of the
Spark catalog (:class:`CatalogTable`) or any ``pyspark.sql.DataFrame`` — as a temporary view,
and computes every statistic of :class:`~prdp_core.engines.base.Engine` with the SQL of
:class:`~prdp_core.engines.sql_engine.SQLEngine` in Spark's dialect
(:class:`~prdp_core.engines.sql.SparkDialect`): group-bys, the split-count histogram, per-owner
sums, per-domain statistics of a budget function, exact counts. Only aggregates come back to the
driver (as Arrow tables; :attr:`SparkEngine.collected` counts their bytes), where the noise is
drawn — a cluster computes the sufficient statistics, the driver holds the seed and the samplers,
so a release on 10⁹ rows moves kilobytes and its noise is the same as on a table in memory.

Exactness: IEEE arithmetic (+ − × ÷, sqrt, comparisons) gives numpy's bits in the JVM too, so
split counts, filters and cells are computed in SQL. Java's ``log``/``exp``/``pow`` may differ from
numpy's in the last bit, so no statistic depends on them: log bins, the realized-loss grid and the
domains of a monotone budget function (the presets α/(ln v)^k, α/v, α/√v) are comparisons with
thresholds found on the driver by the numpy kernel itself (:func:`~prdp_core.engines.sql_budget.step_edges`);
other budget expressions with ``log``, ``exp`` or ``**`` run the numpy kernel in a vectorised
pandas (Arrow) UDF — measured in benchmarks/README.md; on a cluster the executors then need
prdp-explorer installed. Exact order statistics (profiles of measures with many distinct values)
are found by selection: ``percentile_approx`` brackets each rank, exact counts place it in a
bracket and the bracket's few distinct values are fetched.

Sessions: the engine uses the running Spark session, or starts one from
:class:`~prdp_core.engines.base.EngineOptions` (``master``, ``conf``; or ``remote`` for Spark
Connect), else from the administrator's environment (``PRDP_SPARK_MASTER``,
``PRDP_SPARK_REMOTE``), else ``local[*]``. PySpark is an optional extra (``pip install
prdp-explorer[spark]``) and classic Spark needs Java 17: without them :func:`spark_session` raises
an :class:`~prdp_core.core.errors.EngineError` in one sentence saying what to install.

Row order (generated ids, seeded samples) is Spark's partition order: stable for files and
catalog tables; a DataFrame built with shuffles has no stable order — give it an id column.
"""

from __future__ import annotations

import math
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np
import pandas as pd

from ..core.distribution import LossDistribution
from ..core.errors import DataError, PolicyError, ResourceLimitError
from . import sql as sqlgen
from . import sql_budget, sql_engine
from .base import ColumnKind, EngineOptions
from .memory import sample_positions
from .spark_session import (
    DEFAULT_MASTER,
    ENV_MASTER,
    ENV_REMOTE,
    JAVA_PACKAGE,
    PYSPARK_INSTALL,
    CatalogTable,
    _counter,
    _kind_of_field,
    _quiet,
    _run,
    _spark_errors,
    _translate,
    env_options,
    file_uri_path,
    is_spark_dataframe,
    is_uri,
    java_executable,
    read_source,
    require_spark,
    spark_enabled,
    spark_session,
)
from .sql_engine import SQLEngine, _normalise_frame, _short

#: Distinct values fetched at most to settle exact order statistics (else a ResourceLimitError).
MAX_SELECTION_VALUES = 5_000_000
#: :meth:`SparkEngine.count_above` places a value among sorted thresholds by a CASE tree over every
#: COUNT_BLOCK-th threshold, then COUNT_BLOCK comparisons within the block.
COUNT_BLOCK = 16


# ---------------------------------------------------------------------------
# The engine
# ---------------------------------------------------------------------------


@dataclass
class Collected:
    """What the engine fetched to the driver: queries run, rows and bytes (Arrow buffers) of their
    results. Shared by the engines derived from one another."""

    queries: int = 0
    rows: int = 0
    bytes: int = 0
    largest: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, table: Any) -> None:
        with self._lock:
            self.queries += 1
            self.rows += int(table.num_rows)
            self.bytes += int(table.nbytes)
            self.largest = max(self.largest, int(table.nbytes))

    def reset(self) -> None:
        with self._lock:
            self.queries = self.rows = self.bytes = self.largest = 0


class SparkEngine(SQLEngine):
    """Records in a Spark temporary view; see the module docstring. Build one with :meth:`open`
    (files, URIs, catalog tables) or :meth:`from_dataframe`."""

    name = "spark"

    def __init__(self, spark: Any, relation: str, *, label: str = "", lock: threading.RLock | None = None,
                 options: EngineOptions | None = None, collected: Collected | None = None) -> None:
        super().__init__(relation, sqlgen.SPARK, label=label, lock=lock)
        self.spark = spark
        self.options = options or EngineOptions()
        self.collected = collected or Collected()

    # -- construction ----------------------------------------------------------------

    @classmethod
    def open(cls, source: Any, *, options: EngineOptions | None = None, base_dir: str | os.PathLike | None = None,
             confine: bool = False) -> "SparkEngine":
        """An engine over ``source``: a ``pyspark.sql.DataFrame``, a :class:`CatalogTable`, a URI or a
        local path spec (see :func:`read_source`), in :func:`spark_session`'s session."""
        if is_spark_dataframe(source):
            return cls.from_dataframe(source, options=options)
        spark = spark_session(options)
        df, label = read_source(spark, source, base_dir=base_dir, confine=confine)
        return cls.from_dataframe(df, label=label, options=options)

    @classmethod
    def from_dataframe(cls, df: Any, *, label: str = "Spark DataFrame", options: EngineOptions | None = None
                       ) -> "SparkEngine":
        """An engine over a ``pyspark.sql.DataFrame`` (its session is the engine's)."""
        require_spark()
        name = _view_name("src")
        try:
            with _quiet():
                df.createOrReplaceTempView(name)
        except _spark_errors() as exc:
            raise DataError(f"Spark cannot use this table: {_short(exc)}.") from None
        eng = cls(df.sparkSession, name, label=label, options=options)
        if not eng.column_kinds():
            raise DataError(f"{label} has no columns.")
        return eng

    def derived(self, select_sql: str, *, label: str | None = None) -> "SparkEngine":
        name = _view_name("view")
        self._df(select_sql, "define a view of the table").createOrReplaceTempView(name)
        return SparkEngine(self.spark, name, label=label or self.label, lock=self._lock, options=self.options,
                           collected=self.collected)

    # -- plumbing --------------------------------------------------------------------------

    def _df(self, sql: str, what: str = "compute this statistic") -> Any:
        try:
            with _quiet():
                return self.spark.sql(sql)
        except _spark_errors() as exc:
            raise _translate(exc, what) from None

    def _arrow(self, sql: str, what: str = "compute this statistic") -> Any:
        """A query's result as an Arrow table (counted in :attr:`collected`)."""
        with self._lock:
            try:
                with _quiet():
                    table = self.spark.sql(sql).toArrow()
            except _spark_errors() as exc:
                raise _translate(exc, what) from None
        self.collected.add(table)
        return table

    def _exec(self, sql: str) -> list[tuple]:
        table = self._arrow(sql)
        cols = [c.to_pylist() for c in table.columns]
        return list(zip(*cols)) if cols else [() for _ in range(table.num_rows)]

    def _frame(self, sql: str) -> pd.DataFrame:
        return self._arrow(sql).to_pandas()

    def _with_table(self, frame: pd.DataFrame, fn: Any) -> Any:
        import pyarrow as pa

        name = _view_name("tab")
        with self._lock:
            with _quiet():
                self.spark.createDataFrame(pa.Table.from_pandas(frame, preserve_index=False)
                                           ).createOrReplaceTempView(name)
            try:
                return fn(name)
            finally:
                self.spark.catalog.dropTempView(name)

    @contextmanager
    def _materialized(self, select_sql: str) -> Iterator[str]:
        """The result cached by Spark (memory, then disk) while the block reads it."""
        from pyspark.storagelevel import StorageLevel

        name = _view_name("tmp")
        df = self._df(select_sql).persist(StorageLevel.MEMORY_AND_DISK)
        df.createOrReplaceTempView(name)
        try:
            yield name
        finally:
            self.spark.catalog.dropTempView(name)
            df.unpersist()

    def _row_numbers(self, source: str) -> str:
        """Rows numbered in partition order: the rows of each partition counted first (one small
        aggregate), then offset of the partition + position in it (``monotonically_increasing_id``
        is the partition index · 2³³ + the position)."""
        pid = "spark_partition_id()"
        counts = self._exec(f"SELECT __p, count(*) FROM (SELECT {pid} AS __p FROM {source}) GROUP BY __p")
        per = np.zeros(max((int(p) for p, _ in counts), default=-1) + 1, dtype=np.int64)
        for p, c in counts:
            per[int(p)] = int(c)
        offsets = np.concatenate(([0], np.cumsum(per)[:-1])) if per.size else np.zeros(0, dtype=np.int64)
        base = (f"element_at(CAST(array({', '.join(str(int(o)) for o in offsets)}) AS ARRAY<BIGINT>), {pid} + 1)"
                if offsets.size else "CAST(0 AS BIGINT)")
        return f"({base} + (monotonically_increasing_id() - shiftleft(CAST({pid} AS BIGINT), 33)) + 1)"

    # -- description -------------------------------------------------------------------

    def column_kinds(self) -> dict[str, ColumnKind]:
        if self._kinds is None:
            with _quiet():
                fields = self.spark.table(self.relation).schema.fields
            self._kinds = {str(f.name): _kind_of_field(f.dataType) for f in fields}
        return dict(self._kinds)

    def describe(self) -> str:
        return f"spark engine ({self.label})"

    def sample(self, n: int, seed: int) -> pd.DataFrame:
        pos = sample_positions(self.n_rows(), n, seed)
        frame = pd.DataFrame({"__pos": pos.astype(np.int64) + 1})
        rn = self._row_numbers(self.relation)

        def run(tab: str) -> pd.DataFrame:
            df = self._df(f"SELECT {self.d.broadcast('k')} r.* FROM (SELECT *, {rn} AS __rn FROM {self.relation}) r "
                          f"JOIN {tab} k ON r.__rn = k.__pos ORDER BY r.__rn").drop("__rn")
            with self._lock:
                try:
                    with _quiet():
                        table = df.toArrow()
                except _spark_errors() as exc:
                    raise _translate(exc, "draw the sample") from None
            self.collected.add(table)
            return table.to_pandas()

        return _normalise_frame(self._with_table(frame, run))

    # -- statistics Spark computes its own way -----------------------------------------

    def count_above(self, column: str, values: Sequence[float]) -> np.ndarray:
        """#{v > x} for each x, from one GROUP BY of each value's position among the sorted x's
        (a count per position; the counts above follow on the driver). One ``count_if`` per x would
        make a plan of hundreds of aggregates, which Spark compiles for seconds; the position is
        found in two steps — a CASE tree over every :data:`COUNT_BLOCK`-th x, then comparisons with
        the x's of that block — comparisons only, so exact."""
        v = self._checked_measure(column)
        x = np.asarray([float(a) for a in values], dtype=float)
        out = np.zeros(x.size, dtype=np.int64)
        ok = ~np.isnan(x)
        if not ok.any():
            return out
        xs = np.unique(x[ok])
        d = self.d
        block = COUNT_BLOCK
        lasts = xs[block - 1::block]  # the last x of each full block
        arr = f"array({', '.join(d.double(e) for e in xs)})"
        within = " + ".join(f"(CASE WHEN try_element_at(__E, __c * {block} + {j + 1}) < __v THEN 1 ELSE 0 END)"
                            for j in range(block))
        rows = self._exec(f"SELECT __c * {block} + {within} AS __p, count(*) FROM (SELECT {v} AS __v, {arr} AS __E, "
                          f"{sqlgen.bucket_sql(d, '__v', lasts, side='left')} AS __c FROM {self.relation}) "
                          "GROUP BY __p")
        at = np.zeros(xs.size + 1, dtype=np.int64)  # at[p]: values with exactly p of the x's below them
        for p, n in rows:
            at[int(p)] = int(n)
        above = at[::-1].cumsum()[::-1]  # above[p]: values with at least p x's below them
        out[ok] = above[np.searchsorted(xs, x[ok]) + 1]  # v > x_j ⟺ at least j + 1 x's are below v
        return out

    def _order_statistics(self, v: str, ranks: Sequence[int], n: int, parts: Sequence[str]
                          ) -> tuple[tuple, dict[int, float]]:
        """Exact order statistics by selection: ``percentile_approx`` (rank error ≤ n/accuracy)
        gives values bracketing each rank; one GROUP BY counts the values between consecutive
        bracket values exactly; the distinct values of the brackets that hold a wanted rank are
        fetched with their counts, and the rank is read off them. Exact whatever the
        approximation: it only decides how many values are fetched (about 6n/accuracy per rank)."""
        d = self.d
        row = tuple(self._exec(f"SELECT {', '.join(parts)} FROM {self.relation}")[0]) if parts else ()
        src = f"(SELECT {v} AS __v FROM {self.relation} WHERE {v} IS NOT NULL)"
        acc = int(min(10_000_000, max(10_000, n // 100)))
        r = np.asarray(ranks, dtype=np.int64)
        p = (r + 0.5) / n
        fracs = np.unique(np.clip(np.concatenate((p - 3.0 / acc, p, p + 3.0 / acc)), 0.0, 1.0))
        approx = self._exec(f"SELECT percentile_approx(__v, array({', '.join(d.double(f) for f in fracs)}), {acc}) "
                            f"FROM {src}")[0][0]
        edges = np.unique(np.asarray(approx, dtype=float))
        counts = np.zeros(edges.size + 1, dtype=np.int64)  # bucket b: (edges[b−1], edges[b]]
        for b, c in self._exec(f"SELECT {sqlgen.bucket_sql(d, '__v', edges, side='left')} AS __b, count(*) FROM {src} "
                               "GROUP BY __b"):
            counts[int(b)] = int(c)
        ends = np.cumsum(counts)
        bucket = np.searchsorted(ends, r, side="right")  # the bucket holding each rank
        need = np.unique(bucket)

        def inside(b: int) -> str:
            lo = f"__v > {d.double(edges[b - 1])}" if b > 0 else "true"
            hi = f"__v <= {d.double(edges[b])}" if b < edges.size else "true"
            return f"({lo} AND {hi})"

        fr = self._frame(f"SELECT __v, count(*) AS __n FROM {src} WHERE {' OR '.join(inside(int(b)) for b in need)} "
                         f"GROUP BY __v ORDER BY __v LIMIT {MAX_SELECTION_VALUES + 1}")
        if len(fr) > MAX_SELECTION_VALUES:
            raise ResourceLimitError(f"Exact order statistics of this measure need more than {MAX_SELECTION_VALUES:,} "
                                     "of its values on the driver.", hint="Profile a uniform sample of the table.")
        u = fr["__v"].to_numpy(dtype=float)
        c = fr["__n"].to_numpy(dtype=np.int64)
        cb = np.searchsorted(edges, u, side="left")  # each fetched value's bucket
        order: dict[int, float] = {}
        for rank, b in zip(r.tolist(), bucket.tolist()):
            sel = cb == b
            k = rank - (int(ends[b - 1]) if b > 0 else 0)  # rank within the bucket
            cum = np.cumsum(c[sel])
            order[rank] = float(u[sel][int(np.searchsorted(cum, k, side="right"))])
        return row, order

    def _owner_distribution(self, per_owner: str, col: str, *, few: bool = False) -> LossDistribution:
        """With ``few`` (Lemma 4's owner losses: sums over a few split-count keys), one pass: the
        distinct values with their counts and, in the same aggregation (GROUPING SETS), the minimum,
        maximum — no cached intermediate. More than ``MAX_EXACT_VALUES`` distinct values:
        :class:`SQLEngine`'s way (cached, then binned)."""
        if not few:
            return super()._owner_distribution(per_owner, col)
        limit = sql_engine.MAX_EXACT_VALUES
        fr = self._frame(f"SELECT grouping_id() AS __g, {col} AS __x, count(*) AS __n, min({col}) AS __lo, "
                         f"max({col}) AS __hi FROM ({per_owner}) GROUP BY GROUPING SETS (({col}), ()) "
                         f"ORDER BY __g DESC, __x LIMIT {limit + 2}")
        total, values = fr.iloc[0], fr.iloc[1:]
        if len(values) > limit:
            return super()._owner_distribution(per_owner, col)
        if not int(total["__n"]):
            return LossDistribution(np.zeros(0), np.zeros(0, dtype=np.int64), total=0.0)
        if not (math.isfinite(float(total["__lo"])) and math.isfinite(float(total["__hi"]))):
            raise PolicyError("Some losses are too large to compute (they exceed the floating-point range).",
                              hint="Lower the budgets ρ or raise the splitting thresholds.")
        return LossDistribution.from_counts(values["__x"].to_numpy(dtype=float), values["__n"].to_numpy(dtype=np.int64))

    def _budget_raw(self, budget: Any, kinds: dict[str, ColumnKind]) -> tuple[str, str | None]:
        """The compiled formula when its SQL is exact, else the numpy kernel in an Arrow UDF."""
        b = sql_budget.budget_sql(self.d, budget.shape, kinds)
        if b.exact:
            return b.raw, b.unmatched
        return self._budget_udf(budget, kinds), b.unmatched

    def _budget_categories(self, budget: Any, kinds: dict[str, ColumnKind]) -> sql_budget.BudgetCategories:
        """Exact SQL, or comparisons with thresholds for a monotone one-column budget, or the
        numpy kernel in an Arrow UDF (in that order of preference)."""
        if not sql_budget.budget_sql(self.d, budget.shape, kinds).exact:
            cats = sql_budget.monotone_budget_categories(self.d, budget, kinds)
            if cats is not None:
                return cats
        return super()._budget_categories(budget, kinds)

    def _budget_udf(self, budget: Any, kinds: dict[str, ColumnKind]) -> str:
        """The numpy kernel of ``budget.shape`` as a vectorised Arrow UDF over a struct of its columns: the
        same bits as the memory engine, record batch by record batch. An Arrow UDF, not a pandas one: PySpark
        warns that it does not yet fully support pandas 3 whenever a pandas UDF is made (docs/cluster.md)."""
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark.sql.pandas.functions import arrow_udf

        shape = budget.shape
        cols = list(shape.columns)
        if not cols:
            return self.d.double(float(shape.raw({}, 1)[0]))
        text = {c for c in cols if c in shape.text_columns or kinds.get(c) == "text"}

        def kernel(s: Any) -> Any:
            data: dict[str, Any] = {}
            for j, c in enumerate(cols):
                x = s.field(f"c{j}")
                data[c] = x.to_pandas() if c in text else pc.cast(x, pa.float64()).to_numpy(zero_copy_only=False)
            with np.errstate(all="ignore"):
                return pa.array(np.asarray(shape.raw(data, len(s)), dtype=float), type=pa.float64())

        name = _view_name("budget")
        kernel.__annotations__ = {"s": pa.Array, "return": pa.Array}  # a scalar Arrow UDF, told by its type hints
        udf = arrow_udf(kernel, "double")  # type: ignore[call-overload]  # the stubs lack a DDL return type string
        self.spark.udf.register(name, udf)  # no pandas conversion: PySpark warns nothing
        args = ", ".join(f"'c{j}', " + (self.d.as_text(self.d.ident(c)) if c in text else
                                        self.d.as_double(self.d.ident(c))) for j, c in enumerate(cols))
        return f"{name}(named_struct({args}))"


def _view_name(kind: str) -> str:
    return f"prdp_{kind}_{_run}_{next(_counter)}"


__all__ = ["DEFAULT_MASTER", "ENV_MASTER", "ENV_REMOTE", "JAVA_PACKAGE", "PYSPARK_INSTALL", "CatalogTable", "Collected",
           "SparkEngine", "env_options", "file_uri_path", "is_spark_dataframe", "is_uri", "java_executable",
           "read_source", "require_spark", "spark_enabled", "spark_session"]
