"""Where a workshop server keeps its things, and the workshop dataset everyone works on.

Environment (set by ``prdp app`` from its options, or by hand):

==========================  ==================================================================
``PRDP_WORKSHOP_DIR``       the workshop folder (default ``./workshop``)
``PRDP_BOARD_URL``          the board's database (default: SQLite ``<workshop folder>/board.sqlite``)
``PRDP_DATA_DIR``           the data folder whose files the facilitator may pin
                            (default ``<workshop folder>/data``)
``PRDP_FACILITATOR_KEY``    the facilitator's passphrase; unset: no facilitator actions
``PRDP_UPLOAD_DIR``         where durable sessions keep uploaded tables, once per content
                            (default ``<data folder>/uploads``; :mod:`.sessions`)
``PRDP_UPLOAD_RETENTION_DAYS``, ``PRDP_UPLOAD_MAX_GB``
                            how long and how much of them is kept (default 30 days, 10 GB)
``PRDP_LEDGER_KEY``         the key that seals stored ledgers (default: the file ``ledger.key``
                            beside a SQLite database, or in the workshop folder; :mod:`.ledger_chain`)
==========================  ==================================================================

The pinned workshop dataset is a sample (``{"sample": name, "n": …, "seed": …}``) or a file
of the data folder (``{"file": name}``, with the column roles ``schema`` and the fixes ``prepare`` the facilitator
chose — a public shift of a measure with negative values —, both in the form of a study config's ``data``
section and checked by its parser, :func:`normal_pin`), read by the engine from that folder only
(:func:`prdp_core.study.config.safe_data_path`: no absolute paths, ``..`` or links leading out).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..core.errors import DataError, PrdpError, StoreError
from ..data import memory
from ..data.dataset import SUPPORTED_EXTENSIONS, Dataset, Schema, guess_schema, load_table, prepare_dataset
from ..data.statfiles import STAT_EXTENSIONS
from ..study.config import parse_config, safe_data_path
from ..study.config.data_source import prepare_section

ENV_WORKSHOP_DIR = "PRDP_WORKSHOP_DIR"
ENV_BOARD_URL = "PRDP_BOARD_URL"
ENV_DATA_DIR = "PRDP_DATA_DIR"
ENV_FACILITATOR_KEY = "PRDP_FACILITATOR_KEY"
ENV_UPLOAD_DIR = "PRDP_UPLOAD_DIR"
DEFAULT_WORKSHOP_DIR = "workshop"


def workshop_dir(env: Mapping[str, str] | None = None) -> Path:
    """The workshop folder (``PRDP_WORKSHOP_DIR``, default ``./workshop``), absolute."""
    env = os.environ if env is None else env
    return Path(env.get(ENV_WORKSHOP_DIR) or DEFAULT_WORKSHOP_DIR).expanduser().resolve()


def board_url(env: Mapping[str, str] | None = None) -> str:
    """The board's database URL: ``PRDP_BOARD_URL``, else SQLite ``<workshop folder>/board.sqlite``."""
    env = os.environ if env is None else env
    return env.get(ENV_BOARD_URL) or f"sqlite:///{workshop_dir(env) / 'board.sqlite'}"


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The data folder (``PRDP_DATA_DIR``, default ``<workshop folder>/data``), absolute."""
    env = os.environ if env is None else env
    d = env.get(ENV_DATA_DIR)
    return Path(d).expanduser().resolve() if d else workshop_dir(env) / "data"


def upload_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where uploaded tables of durable sessions are kept (``PRDP_UPLOAD_DIR``, default
    ``<data folder>/uploads``), absolute. Tables there are not offered as data-folder tables."""
    env = os.environ if env is None else env
    d = env.get(ENV_UPLOAD_DIR)
    return Path(d).expanduser().resolve() if d else data_dir(env) / "uploads"


def facilitator_key(env: Mapping[str, str] | None = None) -> str | None:
    """The facilitator's passphrase, or None (facilitator actions off)."""
    env = os.environ if env is None else env
    return env.get(ENV_FACILITATOR_KEY) or None


def data_files(folder: str | os.PathLike, *, large: bool = False) -> list[str]:
    """Names of the tables directly in the data folder (CSV, TSV, Parquet, Excel, SAS, Stata, SPSS), sorted;
    files whose link leads out of the folder are left out.

    ``large``: the sources of the app's *Large dataset* source instead — those the DuckDB engine reads in
    place (Parquet and CSV/TSV files, DuckDB database files (``name.duckdb``: name a table as
    ``name.duckdb#table``, see :func:`database_tables`) and sub-folders holding Parquet or CSV files: one
    table written in several files), and SAS, Stata and SPSS files, which DuckDB cannot read: the app reads
    them whole with the loader, under the upload limits (:func:`is_stat_file`); a folder or link leading out
    of the data folder is left out."""
    base = Path(folder)
    if not base.is_dir():
        return []
    names = []
    for p in sorted(base.iterdir()):
        if p.name.startswith("."):
            continue
        try:
            target = safe_data_path(p.name, base, key="data file", where="the data folder")
        except PrdpError:  # a link leading out of the folder: not offered
            continue
        if large:
            if target.is_dir():
                if any(f.is_file() and f.suffix.lower() in LARGE_EXTENSIONS[:-1] for f in target.iterdir()):
                    names.append(p.name)
            elif target.is_file() and p.suffix.lower() in (*LARGE_EXTENSIONS, *STAT_EXTENSIONS):
                names.append(p.name)
        elif p.suffix.lower() in SUPPORTED_EXTENSIONS and target.is_file():
            names.append(p.name)
    return names


#: File types of the *Large dataset* source (the DuckDB engine): data files, then DuckDB databases.
LARGE_EXTENSIONS = (".parquet", ".pq", ".csv", ".tsv", ".tab", ".txt", ".duckdb")


def is_stat_file(spec: str) -> bool:
    """Whether a *Large dataset* spec names one SAS, Stata or SPSS file (no glob, no table): DuckDB cannot
    read those in place, so the app reads them whole with the loader (:func:`load_table`, the upload limits)."""
    text = str(spec).strip()
    return Path(text).suffix.lower() in STAT_EXTENSIONS and not any(ch in text for ch in "*?[#")


def data_source(spec: str, folder: str | os.PathLike) -> Any:
    """The files a *Large dataset* spec names in the data folder — a file, a folder, a glob
    (``parts/*.parquet``) or ``name.duckdb#table`` — as the DuckDB engine's
    :class:`~prdp_core.engines.duckdb_engine.Source`.

    Nothing outside the folder can be named: absolute paths, ``~``, any ``..`` and symbolic links
    leading out (of the path itself or of any file it matches) are refused with a DataError, as
    are missing files and folders without data files."""
    from ..engines.duckdb_engine import resolve_source

    text = str(spec).strip()
    head = text.rsplit("#", 1)[0] if "#" in text else text
    try:
        safe_data_path(head, folder, key="Large dataset", where="the data folder")
    except PrdpError as err:
        raise DataError(err.message, hint=f"Name a file, folder or glob inside the data folder ({Path(folder)}).") \
            from None
    try:
        return resolve_source(text, base_dir=folder, confine=True)
    except DataError as err:
        raise DataError(err.message.replace("(looked in", "(the data folder:"),
                        hint=err.hint or "Check the name.") from None


def open_data_source(spec: str, folder: str | os.PathLike, options: Any = None, *, engine: str = "duckdb") -> Any:
    """An engine over a *Large dataset* spec of the data folder (:func:`data_source`: nothing outside
    the folder), with the engine's settings from the environment unless ``options`` are given.

    ``duckdb``: the connection itself may read the data folder (and its spill folder) only: a view
    stored in a database file of the folder cannot read a file elsewhere. ``spark`` (offered when the
    administrator enabled Spark: ``PRDP_SPARK_MASTER`` or ``PRDP_SPARK_REMOTE``): the files the spec
    names, after the same checks, read by the Spark session of those settings — Parquet and CSV only
    (a DuckDB database is refused with a message)."""
    from dataclasses import replace

    if engine == "spark":
        from ..engines.spark_engine import SparkEngine, env_options

        data_source(spec, folder)  # the checks: absolute paths, '..', links leading out, missing files
        return SparkEngine.open(str(spec).strip(), options=options or env_options(), base_dir=folder, confine=True)
    if engine != "duckdb":
        raise DataError(f"The {engine} engine cannot read files of the data folder.", hint="Use duckdb or spark.")
    from ..engines.duckdb_engine import DuckDBEngine, default_options

    opts = options or default_options()
    opts = replace(opts, extra={**dict(opts.extra), "allowed_directories": [str(Path(folder).resolve())]})
    return DuckDBEngine.open(data_source(spec, folder), options=opts)


def data_source_stamp(source: Any) -> tuple[tuple[str, int, int], ...]:
    """(path, size, modification time) of every file of a source: a cache key that changes when any
    of them does."""
    out = []
    for f in source.files:
        st = Path(f).stat()
        out.append((str(f), int(st.st_size), int(st.st_mtime_ns)))
    return tuple(out)


def database_tables(folder: str | os.PathLike, name: str) -> list[str]:
    """The tables and views of the DuckDB database ``name`` of the data folder (opened read-only)."""
    p = safe_data_path(name, folder, key="data file", where="the data folder")
    import duckdb

    try:
        con = duckdb.connect(str(p), read_only=True)
    except Exception as exc:  # noqa: BLE001 - duckdb raises several types: all mean "not readable"
        raise DataError(f"Cannot open the database {name}: {str(exc)[:200]}.") from None
    try:
        rows = con.execute("SELECT table_name FROM information_schema.tables ORDER BY table_name").fetchall()
    finally:
        con.close()
    return [str(r[0]) for r in rows]


#: The keys of a pinned sample and of a pinned data-folder file.
SAMPLE_PIN_KEYS = frozenset({"sample", "n", "seed"})
FILE_PIN_KEYS = frozenset({"file", "schema", "prepare"})


def normal_pin(pin: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A pin as stored: a sample (name, size, seed) or a data-folder file with, optionally, its column roles
    (``schema``: id, measures, groups, owner) and fixes (``prepare``: e.g. ``negative: shift`` with ``shift_by``,
    the public constant of each measure), read by the study config's parser (unknown keys, wrong types and
    negative shifts refused with its message). None unpins. StoreError or ConfigError otherwise."""
    if pin is None:
        return None
    ok = isinstance(pin, Mapping) and (("sample" in pin) != ("file" in pin))
    if not ok or not set(pin) <= (SAMPLE_PIN_KEYS if "sample" in pin else FILE_PIN_KEYS):
        raise StoreError("A pinned dataset is a sample (sample, n, seed) or a file of the data folder (file, with "
                         "its roles and fixes).")
    if "sample" in pin:
        return dict(pin)
    if not isinstance(pin["file"], str) or not pin["file"]:
        raise StoreError("A pinned file is named by its name in the data folder.")
    extra = {k: pin[k] for k in ("schema", "prepare") if pin.get(k)}
    data = parse_config({"version": 1, "data": {"path": pin["file"], **extra}}).data.to_dict()
    return {"file": pin["file"], **{k: data[k] for k in ("schema", "prepare") if data.get(k)}}


def file_pin(name: str, schema: Schema, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The pin of the data-folder file ``name`` with the column roles ``schema`` and the options of
    :func:`~prdp_core.data.prepare_dataset` ``options`` (checked by :func:`normal_pin`)."""
    roles = {"id": schema.id_col, "measures": list(schema.measures), "groups": list(schema.groups),
             "owner": schema.owner_col}
    pin = normal_pin({"file": name, "schema": roles, "prepare": prepare_section(options or {})})
    assert pin is not None
    return pin


def pin_roles(pin: Mapping[str, Any]) -> tuple[Schema | None, dict[str, Any]]:
    """The column roles and the options of :func:`~prdp_core.data.prepare_dataset` a file pin (or a study
    config's data section) names: (None, {}) for the guessed roles without fixes."""
    s = pin.get("schema")
    schema = None if not s else Schema(id_col=s.get("id"), measures=tuple(s.get("measures") or ()),
                                       groups=tuple(s.get("groups") or ()), owner_col=s.get("owner"))
    return schema, dict(pin.get("prepare") or {})


def describe_pin(pin: Mapping[str, Any] | None) -> str | None:
    """A pinned workshop dataset in words ("sample 'cbp_like', n = 5,000, seed 1")."""
    if not pin:
        return None
    if "file" in pin:
        shifts = (pin.get("prepare") or {}).get("shift_by") or {}
        how = "".join(f", {m} shifted by +{c:,.15g} (public)" for m, c in shifts.items())
        return f"file '{pin['file']}' of the data folder{how}"
    size = f", n = {int(pin['n']):,}" if pin.get("n") else ""
    return f"sample '{pin['sample']}'{size}, seed {int(pin.get('seed', 0) or 0)}"


def matches_pin(data: Mapping[str, Any], pin: Mapping[str, Any] | None) -> bool:
    """Whether a study config's ``data`` section reads the pinned dataset (a file by its name; a
    sample by name, size and seed). Without a pin, every dataset does."""
    if not pin:
        return True
    if "file" in pin:  # the same file, with the same fixes (a shift changes every value of its measure)
        return (data.get("path") is not None and Path(str(data["path"])).name == pin["file"]
                and dict(data.get("prepare") or {}) == dict(pin.get("prepare") or {}))
    return (data.get("sample") == pin.get("sample") and data.get("n") == pin.get("n")
            and int(data.get("seed", 0) or 0) == int(pin.get("seed", 0) or 0))


def pin_of_source(source: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pin that names the app's active data source (a sample, or a file of the data folder)."""
    if source.get("kind") == "sample":
        return {"sample": source["name"], "n": source.get("n"), "seed": int(source.get("seed", 0) or 0)}
    if not source.get("shared"):
        return None
    prepare = prepare_section(source.get("options") or {})
    return {"file": source["filename"], **({"prepare": prepare} if prepare else {})}


@dataclass(frozen=True)
class WorkshopFile:
    """A table of the data folder, loaded and checked once: the raw table (for the Data page's
    role editor), the prepared dataset and the app's source record (with the content hash, so
    every session shares its cached results)."""

    name: str
    raw: pd.DataFrame = field(repr=False)
    dataset: Dataset = field(repr=False)
    sha256: str
    options: Mapping[str, Any] = field(default_factory=dict)  # the fixes it was prepared with

    @property
    def source(self) -> dict[str, Any]:
        return {"kind": "file", "filename": self.name, "schema": self.dataset.schema.to_dict(),
                "options": dict(self.options), "shared": self.sha256}


def file_stamp(folder: str | os.PathLike, name: str) -> tuple[str, int, int]:
    """(resolved path, size, modification time) of a data-folder file: a cache key that changes
    when the file does. DataError when it is not there."""
    p = safe_data_path(name, folder, key="the pinned file")
    if not p.is_file():
        raise DataError(f"The pinned file '{name}' is not in the data folder ({Path(folder)}).",
                        hint="Put it there, or pin another dataset.")
    st = p.stat()
    return str(p), int(st.st_size), int(st.st_mtime_ns)


def data_file_bytes(spec: str, folder: str | os.PathLike, *, limit: float) -> tuple[Path, int, bytes | None]:
    """A data-folder file named on the Large dataset tab (nothing outside the folder can be named): its path, its
    size and its bytes — None above ``limit`` bytes, which the loader then refuses from the size alone."""
    path = safe_data_path(spec, folder, key="Large dataset", where="the data folder")
    if not path.is_file():
        raise DataError(f"No data file at '{spec}' (the data folder: {Path(folder)}).", hint="Check the path.")
    size = int(path.stat().st_size)
    return path, size, (path.read_bytes() if size <= limit else None)


def read_file(folder: str | os.PathLike, name: str) -> tuple[pd.DataFrame, str]:
    """A data-folder table as read (before roles and fixes) and its content hash."""
    path, size, _ = file_stamp(folder, name)
    memory.guard_table(file_bytes=size)  # the memory guard of every route into a table
    df = load_table(path, filename=name, guard=memory.guard_table)  # the limits of an upload
    memory.guard_table(rows=len(df), columns=df.shape[1])
    return df, sha256_file(path)


def load_file(folder: str | os.PathLike, name: str, schema: Schema | None = None,
              options: Mapping[str, Any] | None = None, *, raw: tuple[pd.DataFrame, str] | None = None
              ) -> WorkshopFile:
    """Load a data-folder table with the column roles ``schema`` (default: guessed) and the fixes ``options``
    of :func:`~prdp_core.data.prepare_dataset` (default: none; ``raw``: the table already read by
    :func:`read_file`). A table that needs a decision the options do not make (missing or negative values,
    duplicate ids) is refused with the checker's message, so the facilitator chooses a fix — a public shift —
    or fixes the file before pinning it."""
    df, sha = raw if raw is not None else read_file(folder, name)
    ds = prepare_dataset(df, schema if schema is not None else guess_schema(df), name=name, **dict(options or {}))
    return WorkshopFile(name=name, raw=df, dataset=ds, sha256=sha, options=dict(options or {}))


def sha256_file(path: str | os.PathLike) -> str:
    """SHA-256 (hex) of a file's bytes, read in 1 MB blocks: a table's content hash."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
