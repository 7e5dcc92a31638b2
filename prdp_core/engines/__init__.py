"""The engine layer: statistics where the data lives, noise on the driver.

Everything prdp_core computes from records can be computed by an :class:`Engine` as small,
mergeable aggregates (see :mod:`.base`): the in-memory :class:`MemoryEngine` (pandas/numpy) and
the out-of-core :class:`DuckDBEngine` (SQL over Parquet/CSV files, folders, globs or DuckDB
tables) and the cluster's :class:`SparkEngine` (the same SQL in Spark: files and ``hdfs://``/``s3a://``
URIs, catalog tables (:class:`CatalogTable`), any ``pyspark.sql.DataFrame``; see docs/cluster.md).
:func:`available_engines` lists the engines the app offers (Spark only when the administrator
enabled it: :func:`spark_enabled`). :func:`open_dataset` connects to a source and prepares it into an
:class:`EngineDataset`, which the mechanisms accept where they accept a :class:`~prdp_core.data.Dataset`::

    from prdp_core import engines
    from prdp_core.mechanisms.unit_splitting import release

    ds = engines.open_dataset("cbp.parquet", engine="duckdb",
                              schema={"id_col": "ESTAB_ID", "measures": ["EMP", "PAYANN"],
                                      "groups": ["STATE"], "owner_col": "FIRM_ID"})
    rel = release(ds, policy, rng=numpy.random.default_rng(0))   # statistics in DuckDB, noise here
    rel.loss_distribution                                          # per-record losses, as counts
"""

from .base import Aggregate, Bins, CellTable, DomainStats, Engine, EngineOptions, RealizedTerm, SplitHistogram
from .dataset import (
    ENGINES,
    EngineDataset,
    as_engine_dataset,
    auto_memory_bytes,
    available_engines,
    choose_engine,
    is_engine_data,
    open_dataset,
    open_engine,
    prepare,
)
from .memory import MemoryEngine


def __getattr__(name: str):  # DuckDB and Spark are imported only when used
    if name in ("DuckDBEngine", "resolve_source", "Source", "default_options"):
        from . import duckdb_engine

        return getattr(duckdb_engine, name)
    if name in ("SparkEngine", "CatalogTable", "spark_enabled", "spark_session"):
        from . import spark_engine

        return getattr(spark_engine, name)
    raise AttributeError(name)


__all__ = ["ENGINES", "Aggregate", "Bins", "CatalogTable", "CellTable", "DomainStats", "DuckDBEngine", "Engine",
           "EngineDataset", "EngineOptions", "MemoryEngine", "RealizedTerm", "SparkEngine", "SplitHistogram",
           "as_engine_dataset", "auto_memory_bytes", "available_engines", "choose_engine", "is_engine_data",
           "open_dataset", "open_engine", "prepare", "spark_enabled", "spark_session"]
