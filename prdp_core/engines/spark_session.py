"""Spark for the engine layer: whether it is available (PySpark, Java, the administrator's switch),
its sessions (the running one, options, ``PRDP_SPARK_MASTER`` / ``PRDP_SPARK_REMOTE``, Spark Connect),
its errors in one sentence, and its sources (files, folders, globs, URIs passed untouched, catalog
tables, DataFrames) read into a DataFrame. The engine itself is :mod:`prdp_core.engines.spark_engine`.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import sys
import uuid
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence
from urllib.parse import unquote, urlparse

from ..core.errors import DataError, EngineError, PrdpError, ResourceLimitError
from .base import ColumnKind, EngineOptions
from .spark_settings import ENV_MASTER, ENV_REMOTE, admin_conf
from .sql_engine import _short

#: What to install when PySpark is missing (the package's optional extra).
PYSPARK_INSTALL = "pip install prdp-explorer[spark]"
#: Debian's package of the Java runtime Spark needs.
JAVA_PACKAGE = "openjdk-17-jre-headless"
#: Master of a session started without one (options, then ``PRDP_SPARK_MASTER``, then spark-submit's
#: ``--master``): PySpark's own default.
DEFAULT_MASTER = "local[*]"

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_counter = itertools.count()
_run = uuid.uuid4().hex[:8]


# ---------------------------------------------------------------------------
# Availability and sessions
# ---------------------------------------------------------------------------


def spark_enabled() -> bool:
    """True when the administrator enabled Spark for the app (``PRDP_SPARK_MASTER`` or
    ``PRDP_SPARK_REMOTE`` set): the app then offers a Spark source, otherwise it shows none."""
    return bool(os.environ.get(ENV_MASTER, "").strip() or os.environ.get(ENV_REMOTE, "").strip())


def env_options() -> EngineOptions:
    """The administrator's Spark settings from the environment (``PRDP_SPARK_REMOTE`` wins)."""
    remote = os.environ.get(ENV_REMOTE, "").strip() or None
    master = None if remote else (os.environ.get(ENV_MASTER, "").strip() or None)
    return EngineOptions(master=master, remote=remote)


def java_executable() -> str | None:
    """The ``java`` PySpark would start (``$JAVA_HOME/bin/java``, else ``java`` on the PATH), or None."""
    home = os.environ.get("JAVA_HOME", "").strip()
    if home:
        java = Path(home) / "bin" / "java"
        return str(java) if java.is_file() and os.access(java, os.X_OK) else None
    return shutil.which("java")


def require_spark(*, remote: bool = False) -> None:
    """Raise :class:`EngineError` naming what to install when PySpark (or, for a classic session,
    Java; for Spark Connect, its client libraries) is missing."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise EngineError(f"The spark engine needs PySpark, which is not installed: run `{PYSPARK_INSTALL}`.") \
            from None
    if remote:
        try:
            import grpc  # noqa: F401
        except ImportError:
            raise EngineError("Spark Connect needs its client libraries, which are not installed: run "
                              "`pip install 'pyspark[connect]'`.") from None
    elif java_executable() is None:
        raise EngineError(f"The spark engine needs Java 17, which was not found: install Debian's {JAVA_PACKAGE} "
                          "(or set JAVA_HOME to a Java 17 installation).")


def spark_session(options: EngineOptions | None = None) -> Any:
    """The Spark session the engine works in: a Spark Connect session for ``options.remote``; the
    running session when ``options`` names no master; else one started with ``options.master``
    (or the environment's, or ``local[*]``) and the administrator's settings (``PRDP_SPARK_CONF``:
    :func:`~prdp_core.engines.spark_settings.admin_conf`) with ``options.conf`` over them. ``options``
    are the caller's own: a study's pass :func:`~prdp_core.engines.spark_settings.study_options`
    first. Raises :class:`EngineError` when
    Spark cannot be started, with what to install or check."""
    opts = options or EngineOptions()
    env = env_options()
    remote = opts.remote or (None if opts.master else env.remote)
    require_spark(remote=bool(remote))
    from pyspark.sql import SparkSession

    if not remote and not opts.master:
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
    master = opts.master or env.master
    builder = SparkSession.builder.appName("prdp")
    if remote:
        builder = builder.remote(remote)
    elif master:  # else spark-submit's --master, or PySpark's own default (local[*])
        builder = builder.master(master)
    master = master or DEFAULT_MASTER
    conf = {"spark.ui.showConsoleProgress": "false", **admin_conf()}  # the administrator's, under the caller's
    if not remote and master.startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
        # Python workers (the Arrow UDF) run this interpreter: PySpark reads the variable, not the setting
        os.environ["PYSPARK_PYTHON"] = sys.executable
    conf.update({str(k): str(v) for k, v in dict(opts.conf).items()})
    for k, v in conf.items():
        builder = builder.config(k, v)
    try:
        with _quiet():
            spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - PySpark raises several types; all mean "no session"
        where = f"the Spark Connect server {remote}" if remote else f"Spark (master {master})"
        raise EngineError(f"Could not start {where}: {_short(exc)}.",
                          hint="Check the master or server address, and that Java 17 is installed.") from None
    if not remote:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def _quiet() -> Iterator[None]:
    """PySpark's warnings about its pandas support (it converts nothing through pandas here)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark\..*")
        warnings.filterwarnings("ignore", category=UserWarning, module=r"pyspark\..*")
        yield


def _spark_errors() -> tuple[type[BaseException], ...]:
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return (PySparkException, Py4JError)


def _translate(exc: BaseException, what: str) -> PrdpError:
    text = str(exc)
    if "OutOfMemory" in text or "SparkOutOfMemoryError" in text:
        return ResourceLimitError(f"Spark ran out of memory {what}: {_short(exc)}.",
                                  hint="Give Spark more memory (data.spark.conf: spark.driver.memory, "
                                       "spark.executor.memory).")
    return DataError(f"Spark could not {what}: {_short(exc)}.")


# ---------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CatalogTable:
    """A table of the Spark catalog (``db.table``), as a source of :func:`prdp_core.engines.open_dataset`
    (the config's ``data.table``)."""

    name: str

    def __str__(self) -> str:
        return self.name


def is_uri(spec: Any) -> bool:
    """True for ``scheme://…`` (``hdfs://``, ``s3a://``, ``file://``, …)."""
    return isinstance(spec, str) and bool(_URI.match(spec))


def file_uri_path(spec: str) -> str | None:
    """The local path of a ``file://`` URI (``file:///data/x.parquet`` → ``/data/x.parquet``), else None."""
    if not is_uri(spec) or not spec.lower().startswith("file:"):
        return None
    u = urlparse(spec)
    if u.netloc not in ("", "localhost"):
        raise DataError(f"'{spec}' names another machine.", hint="A file:// URI names a file of this machine.")
    return unquote(u.path)


def is_spark_dataframe(obj: Any) -> bool:
    """True for a ``pyspark.sql.DataFrame`` (classic or Spark Connect), without importing PySpark."""
    return type(obj).__module__.startswith("pyspark.") and hasattr(obj, "sparkSession") and hasattr(obj, "schema")


def _kind_of_field(dtype: Any) -> ColumnKind:
    from pyspark.sql import types as spark_types

    if isinstance(dtype, spark_types.BooleanType):
        return "bool"
    if isinstance(dtype, spark_types.NumericType):
        return "number"
    if isinstance(dtype, (spark_types.StringType, spark_types.VarcharType, spark_types.CharType)):
        return "text"
    return "other"


def _reader(spark: Any, kind: str, paths: Sequence[str]) -> Any:
    if kind == "csv":
        sep = "\t" if all(p.lower().endswith((".tsv", ".tab")) for p in paths) else ","
        return spark.read.options(header=True, inferSchema=True, sep=sep).csv(list(paths))
    return spark.read.parquet(*paths)


def read_source(spark: Any, source: Any, *, base_dir: str | os.PathLike | None = None,
                confine: bool = False) -> tuple[Any, str]:
    """A DataFrame over ``source`` and a label: a :class:`CatalogTable`; a URI read as it is
    (Parquet unless it ends in .csv/.tsv); or a local path spec — a file, a folder or a glob, or a
    ``file://`` URI — resolved like the DuckDB engine's (:func:`~prdp_core.engines.duckdb_engine.resolve_source`:
    relative to ``base_dir``, confined to it when ``confine``, files of one type whose columns agree)
    and given to Spark as ``file://`` URIs."""
    from .duckdb_engine import _check_schemas, resolve_source

    errors = _spark_errors()
    if isinstance(source, CatalogTable):
        try:
            with _quiet():
                return spark.table(source.name), source.name
        except errors as exc:
            raise DataError(f"No table '{source.name}' in the Spark catalog: {_short(exc)}.",
                            hint="Check the table name (database.table).") from None
    spec = str(source)
    local = file_uri_path(spec)
    if is_uri(spec) and local is None:
        kind = "csv" if spec.lower().rstrip("/").endswith((".csv", ".tsv", ".tab", ".txt")) else "parquet"
        try:
            with _quiet():
                return _reader(spark, kind, [spec]), spec.rstrip("/").rsplit("/", 1)[-1] or spec
        except errors as exc:
            raise DataError(f"Spark cannot read '{spec}': {_short(exc)}.",
                            hint="Check the URI, and that the cluster can read its file system (e.g. hadoop-aws "
                                 "for s3a://).") from None
    src = resolve_source(local if local is not None else spec, base_dir=base_dir, confine=confine)
    if src.kind == "duckdb":
        raise DataError(f"'{spec}' is a DuckDB database: the spark engine reads Parquet and CSV files.",
                        hint="Use engine duckdb for a DuckDB table.")
    import duckdb

    _check_schemas(duckdb.connect(), src)
    try:
        with _quiet():
            return _reader(spark, src.kind, [Path(f).resolve().as_uri() for f in src.files]), src.label
    except errors as exc:
        raise DataError(f"Spark cannot read {src.label}: {_short(exc)}.",
                        hint="Check that it is a valid Parquet or CSV file.") from None
