"""The data of a study: its path resolved and confined, and the table loaded (in memory or held by
an engine)."""


from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import ConfigError, DataError
from .data_source import _is_uri, safe_data_path
from .fields import _fmt, _name
from .keys import DATA_ENGINES

if TYPE_CHECKING:
    from .study import Study


def resolve_data_path(study: Study) -> Path:
    """The data file of a study (``data.path`` under the config's folder); DataError if missing.

    With an engine beyond memory the path may name a folder, a glob or ``database.duckdb#table``;
    every file it names must exist and lie inside the config's folder."""
    if study.data.table is not None:
        raise ConfigError("data.table: this study reads a table of the Spark catalog, not a file.")
    if study.data.path is None:
        raise ConfigError("data.path: this study reads a sample, not a file.")
    if _is_uri(study.data.path):
        raise ConfigError(f"data.path: {_name(study.data.path)} is a URI read by Spark, not a file of this machine.")
    if study.base_dir is None:
        raise DataError(f"data.path: the study reads '{_name(study.data.path)}', but it was not loaded from a file, so "
                        "the data's folder is unknown.", hint="Supply the data file (--data FILE, or upload it).")
    p = safe_data_path(study.data.path, study.base_dir)
    if study.data.engine != "memory" and not p.is_file():
        from ...engines.duckdb_engine import resolve_source

        try:
            resolve_source(study.data.path, base_dir=study.base_dir, confine=True)
        except DataError as err:
            raise DataError(f"data.path: {err.message}", hint=err.hint or "Pass --data to use another source.") \
                from None
        return p
    if not p.is_file():
        raise DataError(f"data.path: no data file '{_name(study.data.path)}' next to the config (looked for {p}).",
                        hint="Copy the file there, or pass --data FILE.")
    return p


def load_data(study: Study, data: str | os.PathLike | None = None, *, engine: str | None = None) -> Any:
    """The study's :class:`~prdp_core.data.Dataset`: its sample, its file, or ``data`` (overrides).

    Column roles come from ``data.schema`` (or the sample's documented roles, or a guess for
    an override file without a schema); ``data.prepare`` says how bad input is fixed.
    ``engine`` (default: ``data.engine``) other than ``memory`` gives an
    :class:`~prdp_core.engines.EngineDataset` when the source goes to DuckDB (``auto``: beyond
    the upload size, or a folder, glob or database table): the records stay in the engine.
    Raises DataError / SchemaError for data problems, and ResourceLimitError (before the sample is generated or
    the file read) when :func:`prdp_core.data.memory.guard_table` refuses it.
    """
    from ...data import memory, samples
    from ...data.dataset import Schema, guess_schema, load_table, prepare_dataset

    src = study.data
    opts = dict(src.prepare)
    kind = engine or src.engine
    if kind not in DATA_ENGINES:
        raise ConfigError(f"data.engine: must be one of {', '.join(DATA_ENGINES)} (got {_fmt(kind)}).")
    if kind != "memory" and (data is not None or src.path is not None or src.table is not None):
        ds = _engine_data(study, data, kind, opts)
        if ds is not None:
            return ds
    if data is not None or src.path is not None:
        path = Path(data) if data is not None else resolve_data_path(study)
        if path.is_dir():
            raise DataError(f"{path} is a folder, not a data file.",
                            hint="Name the table file itself (CSV, TSV, Parquet, Excel, SAS, Stata or SPSS).")
        if not path.is_file():
            raise DataError(f"No data file at {path}.", hint="Check the path.")
        memory.guard_table(file_bytes=path.stat().st_size)  # the memory guard of every route into a table
        df = load_table(path, guard=memory.guard_table)
        memory.guard_table(rows=len(df), columns=df.shape[1])
        if src.schema is not None:
            schema = Schema.from_dict(src.schema)
        elif src.sample is not None:
            schema = samples.info(src.sample).schema
        else:
            schema = guess_schema(df)
        return prepare_dataset(df, schema, name=path.name, **opts)
    memory.guard_table(sample=src.sample or "", n=src.n)
    if src.schema is None and not opts:
        return samples.load_dataset(src.sample or "", n=src.n, seed=src.sample_seed)
    df = samples.load(src.sample or "", n=src.n, seed=src.sample_seed)
    schema = Schema.from_dict(src.schema) if src.schema is not None else samples.info(src.sample or "").schema
    return prepare_dataset(df, schema, name=src.sample or "sample", **opts)


def _engine_data(study: Study, data: str | os.PathLike | None, kind: str, opts: dict[str, Any]) -> Any:
    """The study's data held by DuckDB, or None when ``auto`` keeps it in memory. A config's path is
    confined to the config's folder; ``--data`` is the caller's own (resolved from the working folder)."""
    from ... import engines
    from ...data import samples
    from ...data.dataset import Schema
    from ...engines.duckdb_engine import default_options

    src = study.data
    spec: Any
    if data is not None:
        spec, base, confine = str(data), None, False
    elif src.table is not None:
        spec, base, confine = engines.CatalogTable(src.table), None, False
    elif _is_uri(str(src.path)):
        spec, base, confine = _spark_uri(study), study.base_dir, True
    else:
        resolve_data_path(study)
        spec, base, confine = str(src.path), study.base_dir, True
    chosen = engines.choose_engine(spec, kind, base_dir=base)  # type: ignore[arg-type]  # the engine name is a str checked against the engine names when the config is parsed
    if chosen == "memory":
        return None
    schema = (Schema.from_dict(src.schema) if src.schema is not None else
              samples.info(src.sample).schema if src.sample is not None else None)
    if chosen == "spark":
        from ...engines.spark_settings import study_options

        return engines.open_dataset(spec, schema=schema, engine="spark", base_dir=base, confine=confine,
                                    options=study_options(src.spark), **opts)
    d = default_options()
    options = engines.EngineOptions(memory_limit=src.duckdb.get("memory_limit") or d.memory_limit,
                                    temp_directory=d.temp_directory, threads=src.duckdb.get("threads") or d.threads)
    return engines.open_dataset(spec, schema=schema, engine="duckdb", name=Path(spec).name, base_dir=base,
                                confine=confine, options=options, **opts)


def _spark_uri(study: Study) -> str:
    """``data.path`` as Spark reads it: a cluster URI untouched; a ``file://`` URI as the path of
    its file relative to the config's folder, which it must lie in (DataError otherwise)."""
    from ...engines.spark_engine import file_uri_path

    spec = str(study.data.path)
    local = file_uri_path(spec)
    if local is None:
        return spec
    base = Path(study.base_dir or ".").resolve()
    try:
        return str(Path(os.path.normpath(local)).relative_to(base))
    except ValueError:
        raise DataError(f"data.path: {_name(spec)} lies outside the config's folder.",
                        hint="Name a file in the config's folder, or a cluster URI (hdfs://, s3a://).") from None


def data_columns(ds: Any) -> list[str]:
    """Column names of a dataset (in memory, or held by an engine)."""
    if getattr(ds, "engine", None) is not None:
        return [str(c) for c in ds.columns]
    return [str(c) for c in ds.table.columns]


def group_values(ds: Any, column: str | None) -> Any:
    """A small table of a dataset's values of ``column`` (for matching group values typed as text):
    the table itself in memory, the distinct values for a dataset held by an engine."""
    if getattr(ds, "engine", None) is None:
        return ds.table
    return None if column is None else ds.engine.distinct([column])
