"""Datasets held by an engine: a handle, the column roles and the fixes applied — never the table.

:func:`open_dataset` connects to a source (a DataFrame, a file, a folder or glob of files,
``database.duckdb#table``; for Spark also a URI, a catalog table or a Spark DataFrame) with the
chosen engine and :func:`prepare` checks it and applies the
dataset's fixes where the data lives, with the decisions and messages of
:func:`prdp_core.data.prepare_dataset` (:class:`prdp_core.data.Preparation`): rows with a missing
measure counted and dropped in SQL, public shifts added in SQL, ids regenerated from row numbers.
The result, an :class:`EngineDataset`, is what the app's session keeps for a large table (a small
handle and cached statistics): mechanisms accept it wherever they accept a
:class:`~prdp_core.data.Dataset` (:func:`prdp_core.mechanisms.unit_splitting.release`,
:func:`prdp_core.mechanisms.preview.preview_policy`, :func:`prdp_core.mechanisms.prdp.framework`, …) and
compute their statistics in the engine. Pages that need the records themselves take
:meth:`EngineDataset.sample`, a labelled uniform sample.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any, Literal, TypeGuard

import pandas as pd

from ..core import limits
from ..core.errors import DataError, ParameterError
from ..data.dataset import (
    GENERATED_ID,
    MISSING_GROUP,
    Dataset,
    Preparation,
    Schema,
    guess_schema,
    load_table,
    prepare_dataset,
    validate_roles,
)
from ..data.statfiles import STAT_EXTENSIONS
from .base import Engine, EngineOptions
from .memory import MemoryEngine

EngineName = Literal["memory", "duckdb", "spark", "auto"]
ENGINES: tuple[str, ...] = ("memory", "duckdb", "spark", "auto")

#: ``engine="auto"`` keeps a single file of at most this many bytes in memory (the upload limit,
#: :func:`prdp_core.core.limits.max_upload_bytes`); larger files, folders, globs and database tables go
#: to DuckDB.
def auto_memory_bytes() -> int:
    return limits.max_upload_bytes()


#: Rows read to guess column roles of a table held by an engine when no schema is given.
GUESS_ROWS = 10_000


@dataclass(frozen=True, eq=False)
class EngineDataset:
    """A checked table held by an engine (see the module docstring).

    Attributes mirror :class:`~prdp_core.data.Dataset`: ``name``, ``schema`` (the id column is
    the generated one when the source had none), ``notes`` (every fix applied, with counts) and
    ``shifts``; ``engine`` answers the statistics; ``source`` describes where the records are."""

    name: str
    engine: Engine
    schema: Schema
    notes: tuple[str, ...] = ()
    shifts: dict[str, float] = field(default_factory=dict)
    source: str = ""

    @cached_property
    def n(self) -> int:
        return self.engine.n_rows()

    @property
    def columns(self) -> list[str]:
        return self.engine.columns

    @property
    def table(self) -> pd.DataFrame:
        """The records, for the memory engine only; an engine beyond memory never loads them."""
        if isinstance(self.engine, MemoryEngine):
            return self.engine.table
        raise DataError(f"'{self.name}' is held by the {self.engine.name} engine ({self.n:,} records): its records "
                        "are not loaded into memory.",
                        hint="Work on its statistics, or take a labelled uniform sample (dataset.sample(n)).")

    def measure(self, name: str) -> Any:
        return self.table[name].to_numpy()

    def sample(self, n: int = 100_000, seed: int = 0) -> Dataset:
        """A uniform sample of ``n`` records (all when fewer) as an in-memory Dataset, labelled as such."""
        rows = self.engine.sample(int(n), int(seed))
        k = len(rows)
        note = (f"Uniform random sample of {k:,} of the {self.n:,} records (seed {seed}); statistics of the sample "
                "are not those of the whole table.")
        return Dataset(name=f"{self.name} (sample of {k:,})", table=rows, schema=self.schema,
                       notes=self.notes + (note,), shifts=dict(self.shifts))

    def describe(self) -> str:
        return (f"{self.name}: {self.n:,} records held by the {self.engine.name} engine, measures "
                f"{', '.join(self.schema.measures)}")


def as_engine_dataset(ds: Dataset | EngineDataset) -> EngineDataset:
    """A prepared in-memory dataset as an engine dataset (its table in a :class:`MemoryEngine`)."""
    if isinstance(ds, EngineDataset):
        return ds
    return EngineDataset(ds.name, MemoryEngine(ds.table), ds.schema, ds.notes, dict(ds.shifts), "memory")


def is_engine_data(data: Any) -> TypeGuard[EngineDataset]:
    return isinstance(data, EngineDataset)


# ---------------------------------------------------------------------------
# Opening and preparing
# ---------------------------------------------------------------------------


def available_engines() -> tuple[str, ...]:
    """The engines the app offers for a large table: memory and DuckDB always, Spark when the
    administrator enabled it (``PRDP_SPARK_MASTER`` or ``PRDP_SPARK_REMOTE``,
    :func:`~prdp_core.engines.spark_engine.spark_enabled`)."""
    from .spark_engine import spark_enabled

    return ("memory", "duckdb", "spark") if spark_enabled() else ("memory", "duckdb")


def choose_engine(source: Any, engine: EngineName = "auto", *, base_dir: str | os.PathLike | None = None) -> str:
    """The engine ``auto`` picks for ``source``: memory for a DataFrame and for one loader-readable
    file of at most :func:`auto_memory_bytes` and for a SAS, Stata or SPSS file (which only the loader reads,
    under its limits); DuckDB for larger files, folders, globs and
    database tables; Spark for a Spark DataFrame, a catalog table or a URI (``hdfs://…``)."""
    from .spark_engine import CatalogTable, file_uri_path, is_spark_dataframe, is_uri

    if engine not in ENGINES:
        raise ParameterError(f"Unknown engine '{engine}'.", hint=f"Use one of: {', '.join(ENGINES)}.")
    if is_spark_dataframe(source) or isinstance(source, CatalogTable):
        if engine not in ("spark", "auto"):
            raise ParameterError("A Spark DataFrame or catalog table is held by Spark: use the spark engine.")
        return "spark"
    if engine != "auto":
        return engine
    if isinstance(source, (pd.DataFrame, Dataset)):
        return "memory"
    if is_uri(source) and file_uri_path(str(source)) is None:
        return "spark"
    text = str(source)
    if "#" in text or any(ch in text for ch in "*?["):
        return "duckdb"
    p = Path(text)
    full = p if (p.is_absolute() or base_dir is None) else Path(base_dir) / p
    if full.is_file() and (full.stat().st_size <= auto_memory_bytes() or p.suffix.lower() in STAT_EXTENSIONS):
        return "memory"  # a SAS, Stata or SPSS file: only the loader reads it (whole, under its limits)
    return "duckdb"


def open_engine(source: Any, engine: EngineName = "auto", *, base_dir: str | os.PathLike | None = None,
                confine: bool = False, options: EngineOptions | None = None) -> Engine:
    """An engine over ``source``: a DataFrame (memory), or a path spec (file, folder, glob,
    ``database.duckdb#table``) read by the engine ``engine`` picks (:func:`choose_engine`).

    ``confine``: every file must lie inside ``base_dir`` (study configs)."""
    kind = choose_engine(source, engine, base_dir=base_dir)
    if isinstance(source, Dataset):
        return MemoryEngine(source.table)
    if kind == "spark":
        from .spark_engine import SparkEngine

        if isinstance(source, pd.DataFrame):  # a table in memory handed to Spark (examples, tests)
            import pyarrow as pa

            from .spark_engine import spark_session

            df = spark_session(options).createDataFrame(pa.Table.from_pandas(source, preserve_index=False))
            return SparkEngine.from_dataframe(df, label="DataFrame", options=options)
        return SparkEngine.open(source, options=options, base_dir=base_dir, confine=confine)
    if isinstance(source, pd.DataFrame):
        if kind != "memory":
            raise ParameterError("A DataFrame is held in memory: use the memory engine.")
        return MemoryEngine(source, cache=False)
    from .duckdb_engine import DuckDBEngine, resolve_source
    from .spark_engine import is_uri

    if is_uri(source):
        raise DataError(f"'{source}' is a URI: only the spark engine reads URIs.", hint="Use engine spark, or a local "
                                                                                       "path.")

    src = resolve_source(source, base_dir=base_dir, confine=confine)
    if kind == "memory":
        if len(src.files) != 1 or src.kind == "duckdb":
            raise DataError("The memory engine reads one file.", hint="Use engine duckdb for folders, globs and "
                                                                      "database tables.")
        return MemoryEngine(load_table(src.files[0]))
    return DuckDBEngine.open(src, options=options)


def open_dataset(source: Any, *, schema: Schema | dict[str, Any] | None = None, engine: EngineName = "auto",
                 name: str | None = None, base_dir: str | os.PathLike | None = None, confine: bool = False,
                 options: EngineOptions | None = None, **prepare_options: Any) -> EngineDataset:
    """Open ``source`` with an engine and prepare it (:func:`prepare`).

    ``schema``: the column roles (a :class:`~prdp_core.data.Schema` or its dict); guessed from
    :data:`GUESS_ROWS` rows when omitted. ``prepare_options``: those of
    :func:`prdp_core.data.prepare_dataset` (``missing="drop"``, ``negative="shift"``, ``shift_by``, …).
    """
    eng = open_engine(source, engine, base_dir=base_dir, confine=confine, options=options)
    label = name or _label(source, eng)
    if schema is None:
        sample = eng.table if isinstance(eng, MemoryEngine) else eng.sample(GUESS_ROWS, 0)
        sch = guess_schema(sample)
    else:
        sch = schema if isinstance(schema, Schema) else Schema.from_dict(dict(schema))
    return prepare(eng, sch, name=label, **prepare_options)


def _label(source: Any, eng: Engine) -> str:
    """A dataset's default name: the file's name, the table's, or the engine's label."""
    if isinstance(source, (pd.DataFrame, Dataset)):
        return "dataset"
    from .spark_engine import CatalogTable, is_spark_dataframe

    if is_spark_dataframe(source) or isinstance(source, CatalogTable):
        return str(getattr(eng, "label", "") or "table")
    return Path(str(source).rstrip("/")).name or str(source)


def prepare(engine: Engine, schema: Schema, *, name: str = "dataset", non_numeric: str = "error",
            missing: str = "error", negative: str = "error", duplicate_ids: str = "error",
            shift_by: dict[str, float] | None = None, missing_groups: str = "keep") -> EngineDataset:
    """Check the engine's table against ``schema`` and apply the fixes the options allow
    (the rules, notes and refusals of :func:`prdp_core.data.prepare_dataset`)."""
    opts = dict(non_numeric=non_numeric, missing=missing, negative=negative, duplicate_ids=duplicate_ids,
                shift_by=shift_by, missing_groups=missing_groups)
    if isinstance(engine, MemoryEngine):
        ds = prepare_dataset(engine.table, schema, name=name, **opts)  # type: ignore[arg-type]  # opts mixes the str options and shift_by: each value has its keyword's type
        return EngineDataset(ds.name, MemoryEngine(ds.table), ds.schema, ds.notes, dict(ds.shifts), "memory")
    from .sql_engine import SQLEngine

    if not isinstance(engine, SQLEngine):
        raise ParameterError(f"Cannot prepare a table of the {engine.name} engine.")
    return _prepare_sql(engine, schema, name, Preparation(**opts))  # type: ignore[arg-type]  # opts mixes the str options and shift_by: each value has its keyword's type


def _prepare_sql(eng: Any, schema: Schema, name: str, fix: Preparation) -> EngineDataset:
    d = eng.d
    kinds = eng.column_kinds()
    validate_roles(kinds, schema, lambda: any(k == "number" for k in kinds.values()))
    chk = eng.check(schema)
    fix.check_non_numeric(chk)
    for issue in chk.measures:
        if issue.non_numeric:
            fix.treated_missing(issue.column, issue.non_numeric)
    n_bad = chk.rows_with_bad
    fix.drop_rows(n_bad, chk.n_rows)
    nums = {m: eng._measure_parts(m, kinds)[0] for m in schema.measures}
    keep = " AND ".join(f"COALESCE({d.isfinite(v)}, false)" for v in nums.values()) if n_bad else "true"
    kept = f"(SELECT * FROM {eng.relation} WHERE {keep})"
    if n_bad:  # some rows are dropped: the kept rows' minimum and negatives are counted again
        stats = eng._exec("SELECT " + ", ".join(f"min({v}), {d.count_if(f'{v} < 0')}" for v in nums.values())
                          + f" FROM {kept}")[0]
    else:  # every row is kept and finite: the check counted them already (no second scan of the measures)
        stats = tuple(x for issue in chk.measures for x in (issue.minimum, issue.negative))
    shifts: dict[str, float] = {}
    for j, m in enumerate(schema.measures):
        mn, neg = stats[2 * j], stats[2 * j + 1]
        shifts[m] = fix.shift(m, float(mn), partial(int, neg))

    def bad_ids() -> tuple[int, tuple[str, ...]]:
        i = d.ident(schema.id_col)
        n, nonnull = eng._exec(f"SELECT count(*), count({i}) FROM {kept}")[0]
        nulls = n - nonnull
        surplus, examples = eng.duplicate_values(schema.id_col, kept)
        n_dup = surplus + max(nulls - 1, 0) + nulls
        return (int(n_dup), examples) if n_dup else (0, ())

    id_col = fix.id_column(schema, kinds, chk, bad_ids)
    cols = [f"CAST({eng._row_numbers(kept)} AS BIGINT) AS {d.ident(id_col)}" if fix.generate_ids
            else d.ident(id_col)]
    if schema.owner_col:
        cols.append(d.ident(schema.owner_col))
    label_counts = {}
    if fix.missing_groups == "label" and schema.groups:
        row = eng._exec("SELECT " + ", ".join(d.count_if(eng._missing_cell(g, kinds)) for g in schema.groups)
                        + f" FROM {kept}")[0]
        label_counts = dict(zip(schema.groups, (int(x) for x in row)))
    for g in schema.groups:
        if g in (id_col, schema.owner_col):
            continue
        if label_counts.get(g):
            cols.append(f"{_labelled(d, g, kinds[g], eng._missing_cell(g, kinds))} AS {d.ident(g)}")
            fix.labelled(g, label_counts[g])
        else:
            cols.append(d.ident(g))
    for m in schema.measures:
        v = nums[m]
        c = shifts.get(m) or 0.0
        cols.append(f"({v} + {d.double(c)}) AS {d.ident(m)}" if c else f"{v} AS {d.ident(m)}")
    view = eng.derived(f"SELECT {', '.join(cols)} FROM {kept}", label=eng.label)
    if not n_bad:
        view._n = chk.n_rows  # every row is kept
    for m in schema.measures:  # unshifted values: the check's whole-number test holds for the kept ones
        if not shifts.get(m) and m in eng.finite_integral:
            view._integral.setdefault(m, eng.finite_integral[m])
    final = Schema(id_col=id_col, measures=schema.measures, groups=schema.groups, owner_col=schema.owner_col)
    return EngineDataset(name, view, final, tuple(fix.notes), dict(fix.shifts), eng.label)


def _labelled(d: Any, g: str, kind: str, missing: str) -> str:
    """A group column with missing values labelled (numbers as text: "2009", not "2009.0")."""
    i = d.ident(g)
    if kind == "number":
        x = d.as_double(i)
        text = (f"(CASE WHEN {x} = round({x}) AND abs({x}) < 1e15 THEN {d.as_text(f'CAST({x} AS BIGINT)')} "
                f"ELSE {d.as_text(x)} END)")
    else:
        text = d.as_text(i)
    return f"(CASE WHEN {missing} THEN {d.string(MISSING_GROUP)} ELSE {text} END)"


__all__ = ["ENGINES", "EngineDataset", "GENERATED_ID", "GUESS_ROWS", "as_engine_dataset", "auto_memory_bytes",
           "available_engines", "choose_engine", "is_engine_data", "open_dataset", "open_engine", "prepare"]
