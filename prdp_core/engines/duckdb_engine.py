"""The DuckDB engine: statistics as SQL over files that need not fit in memory.

A :class:`DuckDBEngine` reads a Parquet or CSV file, a folder or glob of them (one schema: files
whose columns differ are named and refused, never silently aligned), or a table of a DuckDB
database file, and computes every statistic of :class:`~prdp_core.engines.base.Engine` as SQL
(:class:`~prdp_core.engines.sql_engine.SQLEngine`, :mod:`prdp_core.engines.sql`). DuckDB works out of core:
beyond ``memory_limit`` it spills to ``temp_directory``; both are set explicitly on every connection (defaults:
:data:`DEFAULT_MEMORY_LIMIT`, a private ``prdp-duckdb-<uid>`` folder under the system's temporary folder,
:func:`spill_folder`; environment ``PRDP_DUCKDB_MEMORY_LIMIT``, ``PRDP_DUCKDB_TEMP_DIR``,
``PRDP_DUCKDB_THREADS``).

Budget functions whose SQL would not give numpy's bits (``log``, ``exp``, ``**``) are evaluated by
the numpy kernel of :mod:`prdp_core.mechanisms.prdp.budget` itself, inside DuckDB, batch by batch (a vectorised
Arrow function): the records still never leave the engine and the domains equal the memory
engine's.
"""

from __future__ import annotations

import glob as _glob
import itertools
import math
import os
import re
import stat
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal, Sequence

import numpy as np
import pandas as pd

from ..core.errors import DataError, ParameterError, ResourceLimitError, StoreError
from ..data.statfiles import STAT_EXTENSIONS
from ..io.private_files import DIR_MODE, private_dir, tighten
from . import result_cache, sql_budget
from . import sql as sqlgen
from .base import ColumnKind, EngineOptions
from .memory import sample_positions
from .sql_engine import SQLEngine, _normalise_frame, _short

#: DuckDB's memory limit when none is configured (the process stays within about 4 GB).
DEFAULT_MEMORY_LIMIT = "2GB"
#: Records per part of the owners' realized losses (:meth:`DuckDBEngine._owner_parts`).
OWNER_PART_ROWS = 25_000_000

PARQUET_EXT = (".parquet", ".pq")
CSV_EXT = (".csv", ".tsv", ".tab", ".txt")
DB_EXT = (".duckdb", ".db")
_counter = itertools.count()


# ---------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """What a DuckDB engine reads: ``files`` of one ``kind`` (parquet, csv), or ``table`` of the
    DuckDB database ``files[0]``. ``label`` names it for messages and reports."""

    kind: Literal["parquet", "csv", "duckdb"]
    files: tuple[str, ...]
    table: str | None = None
    label: str = ""


def _kind_of(name: str) -> str | None:
    low = name.lower()
    if low.endswith(PARQUET_EXT):
        return "parquet"
    if low.endswith(CSV_EXT):
        return "csv"
    if low.endswith(DB_EXT):
        return "duckdb"
    return None


def resolve_source(spec: str | os.PathLike, *, base_dir: str | os.PathLike | None = None,
                   confine: bool = False) -> Source:
    """The files named by ``spec``: a file, a folder (its Parquet or CSV files), a glob
    (``part-*.parquet``) or ``database.duckdb#table``; relative to ``base_dir``.

    ``confine`` (study configs): every file must lie inside ``base_dir`` once symbolic links are
    resolved (the static rules — relative, no ``..`` — are checked by the config). Raises
    :class:`DataError` for a missing file, an empty folder or glob, or files of mixed types."""
    text = str(spec)
    base = Path(base_dir).resolve() if base_dir is not None else None
    table = None
    if "#" in text and _kind_of(text.rsplit("#", 1)[0]) == "duckdb":
        text, table = text.rsplit("#", 1)
        if not table.strip():
            raise DataError(f"'{spec}' names no table after '#'.", hint="Write database.duckdb#table.")
    p = Path(text)
    full = p if (p.is_absolute() or base is None) else base / p
    if any(ch in text for ch in "*?["):
        files = sorted(_glob.glob(str(full)))
        if not files:
            raise DataError(f"No file matches '{text}'.", hint="Check the pattern.")
    elif full.is_dir():
        files = sorted(str(f) for f in full.iterdir() if f.is_file() and _kind_of(f.name) in ("parquet", "csv"))
        if not files:
            raise DataError(f"The folder '{text}' holds no Parquet or CSV file.", hint="Name a file or a folder of "
                                                                                    "data files.")
    elif full.is_file():
        files = [str(full)]
    else:
        raise DataError(f"No data file at '{text}'" + (f" (looked in {base})." if base is not None else "."),
                        hint="Check the path.")
    if confine and base is not None:
        for f in files:
            try:
                Path(f).resolve().relative_to(base)
            except ValueError:
                raise DataError(f"'{f}' resolves outside the data folder (a symbolic link?).",
                                hint="Copy the data into the folder.") from None
    kinds = {_kind_of(Path(f).name) for f in files}
    if table is not None:
        if kinds != {"duckdb"} or len(files) != 1:
            raise DataError(f"'{spec}': a table is named after '#' in a DuckDB database file only.")
        return Source("duckdb", tuple(files), table.strip(), f"{Path(files[0]).name}#{table.strip()}")
    if None in kinds:
        bad = next(f for f in files if _kind_of(Path(f).name) is None)
        if Path(bad).suffix.lower() in STAT_EXTENSIONS:
            raise DataError(f"'{Path(bad).name}' is a {STAT_EXTENSIONS[Path(bad).suffix.lower()]} file, which the "
                            "DuckDB engine cannot read in place.",
                            hint="Read it in memory (engine memory or auto: the loader reads it whole, under the "
                                 "upload limits), or save the table as Parquet to read it in place.")
        raise DataError(f"'{Path(bad).name}' is not a Parquet or CSV file.",
                        hint="The engine reads Parquet (.parquet), CSV/TSV files, or database.duckdb#table.")
    if kinds == {"duckdb"}:
        raise DataError(f"'{text}' is a DuckDB database: name its table as '{text}#table'.")
    if len(kinds) > 1:
        raise DataError(f"'{text}' mixes Parquet and CSV files.", hint="Keep one file type per folder.")
    kind = kinds.pop()
    label = Path(files[0]).name if len(files) == 1 else f"{text} ({len(files)} files)"
    return Source(kind, tuple(files), None, label)  # type: ignore[arg-type]  # kinds holds one of parquet or csv here (None and duckdb were refused above)


def default_options() -> EngineOptions:
    """DuckDB settings from the environment (``PRDP_DUCKDB_MEMORY_LIMIT``, ``PRDP_DUCKDB_TEMP_DIR``,
    ``PRDP_DUCKDB_THREADS``) or the defaults (no temporary folder: :func:`spill_folder` when opened)."""
    threads = os.environ.get("PRDP_DUCKDB_THREADS")
    return EngineOptions(memory_limit=os.environ.get("PRDP_DUCKDB_MEMORY_LIMIT") or DEFAULT_MEMORY_LIMIT,
                         temp_directory=os.environ.get("PRDP_DUCKDB_TEMP_DIR") or None,
                         threads=int(threads) if threads else None)


def spill_folder(chosen: str | os.PathLike | None = None) -> str:
    """The folder DuckDB spills records to, private to this user (0700): ``chosen`` (the administrator's
    ``PRDP_DUCKDB_TEMP_DIR``) created so or tightened, unless it is a shared folder (writable by others, or
    sticky like ``/tmp``), which is never changed; then — and by default, in the system's temporary folder —
    ``prdp-duckdb-<uid>`` inside it, which must be a folder of this user (not a symbolic link, not someone
    else's planted folder). ParameterError otherwise (spilled records would be readable by another user)."""
    try:
        if chosen and not _shared(Path(chosen)):
            return str(private_dir(chosen))
        uid = os.getuid() if hasattr(os, "getuid") else None
        path = Path(chosen or tempfile.gettempdir()) / ("prdp-duckdb" if uid is None else f"prdp-duckdb-{uid}")
        try:
            path.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
        info = os.lstat(path)  # checked before anything follows the name: a planted link is never tightened or used
        if not stat.S_ISDIR(info.st_mode) or (uid is not None and info.st_uid != uid):
            raise ParameterError(f"The DuckDB engine's temporary folder {path} is a symbolic link, a file or another "
                                 "user's folder: prdp does not spill records there.",
                                 hint="Remove it, or set PRDP_DUCKDB_TEMP_DIR to a folder only you can read.")
        tighten(path, DIR_MODE)
    except (StoreError, OSError) as err:
        text = err.message if isinstance(err, StoreError) else f"{err.strerror or err}."
        raise ParameterError(f"DuckDB's temporary folder: {text}", hint="Set PRDP_DUCKDB_TEMP_DIR to a folder only "
                             "this user can read.") from None
    return str(path)


def _shared(folder: Path) -> bool:
    """Whether an existing ``folder`` is shared with other users (writable by them, or sticky like ``/tmp``)."""
    try:
        mode = folder.stat().st_mode
    except OSError:
        return False
    return bool(mode & (stat.S_ISVTX | stat.S_IWOTH))


def _kind_of_type(t: str) -> ColumnKind:
    u = t.upper()
    if u == "BOOLEAN":
        return "bool"
    if any(u.startswith(x) for x in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                                     "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "REAL")):
        return "number"
    if u.startswith(("VARCHAR", "STRING", "TEXT")):
        return "text"
    return "other"


# ---------------------------------------------------------------------------
# The engine
# ---------------------------------------------------------------------------


class DuckDBEngine(SQLEngine):
    """Records in a DuckDB relation (a view over files, or a database table); see the module docstring.

    Build one with :meth:`open`. Engines derived from one another (a prepared view) share the
    connection; calls are serialised by a lock, so one engine can serve several threads."""

    name = "duckdb"

    def __init__(self, con: Any, relation: str, *, label: str = "", lock: threading.RLock | None = None,
                 options: EngineOptions | None = None, content_key: str | None = None) -> None:
        super().__init__(relation, sqlgen.DUCKDB, label=label, lock=lock)
        self.con = con
        self.options = options or EngineOptions()
        #: What the relation holds (:mod:`~prdp_core.engines.result_cache`): its results are kept under it.
        self.content_key = content_key

    # -- construction ----------------------------------------------------------------

    @classmethod
    def open(cls, source: Source | str | os.PathLike, *, options: EngineOptions | None = None,
             base_dir: str | os.PathLike | None = None) -> "DuckDBEngine":
        """An engine over ``source`` (a :class:`Source` or a path spec for :func:`resolve_source`)."""
        try:
            import duckdb
        except ImportError:  # pragma: no cover - duckdb is a dependency
            raise DataError("The DuckDB engine needs the duckdb package.", hint="pip install duckdb") from None
        src = source if isinstance(source, Source) else resolve_source(source, base_dir=base_dir)
        opts = options or default_options()
        config: dict[str, Any] = {"memory_limit": opts.memory_limit or DEFAULT_MEMORY_LIMIT}
        temp = spill_folder(opts.temp_directory or default_options().temp_directory)  # spilled rows are the data
        config["temp_directory"] = temp
        if opts.threads:
            config["threads"] = int(opts.threads)
        try:
            con = duckdb.connect(config=config)
            con.execute("SET enable_progress_bar = false")
            confine = [str(Path(x).resolve()) for x in opts.extra.get("allowed_directories") or ()]
            if confine:  # nothing but these folders (and the spill folder) can be read, for the connection's life
                d = sqlgen.DUCKDB
                dirs = ", ".join(d.string(x.rstrip("/") + "/") for x in [*confine, str(Path(temp).resolve())])
                con.execute(f"SET allowed_directories = [{dirs}]")
                con.execute("SET enable_external_access = false")
        except duckdb.Error as exc:
            raise ParameterError(f"DuckDB refused its settings: {_short(exc)}.",
                                 hint="Check memory_limit (e.g. '3GB') and the temporary folder.") from None
        rel = f"prdp_src_{next(_counter)}"
        _check_schemas(con, src)
        d = sqlgen.DUCKDB
        if src.kind == "duckdb":
            try:
                con.execute(f"ATTACH {d.string(src.files[0])} AS prdp_db (READ_ONLY)")
                con.execute(f"CREATE VIEW {rel} AS SELECT * FROM prdp_db.{d.ident(src.table or '')}")
            except duckdb.Error as exc:
                raise DataError(f"Cannot read the table '{src.table}' of {Path(src.files[0]).name}: {_short(exc)}.",
                                hint="Check the database file and the table name.") from None
        else:
            files = "[" + ", ".join(d.string(f) for f in src.files) + "]"
            reader = "read_parquet" if src.kind == "parquet" else "read_csv"
            extra = ", union_by_name = false" if len(src.files) > 1 else ""
            try:
                con.execute(f"CREATE VIEW {rel} AS SELECT * FROM {reader}({files}{extra})")
            except duckdb.Error as exc:
                raise DataError(f"Cannot read {src.label}: {_short(exc)}.",
                                hint="Check that it is a valid Parquet or CSV file.") from None
        eng = cls(con, rel, label=src.label, options=opts,
                  content_key=result_cache.source_key(src.kind, src.files, src.table))
        if not eng.column_kinds():
            raise DataError(f"{src.label} has no columns.")
        return eng

    def derived(self, select_sql: str, *, label: str | None = None) -> "DuckDBEngine":
        """A new engine over a view ``select_sql`` of this one's relation (same connection)."""
        rel = f"prdp_view_{next(_counter)}"
        self._exec(f"CREATE VIEW {rel} AS {select_sql}")
        return DuckDBEngine(self.con, rel, label=label or self.label, lock=self._lock, options=self.options,
                            content_key=result_cache.derived_key(self.content_key, self.relation, select_sql))

    # -- plumbing --------------------------------------------------------------------------

    def _exec(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple]:
        import duckdb

        key = result_cache.statement_key(self.content_key, self.relation, sql, params, duckdb.__version__)
        kept = result_cache.get(key)
        if kept is not None:
            return kept
        rows = self._run(sql, params)
        result_cache.put(key, rows)
        return rows

    def _run(self, sql: str, params: Sequence[Any] | None) -> list[tuple]:
        import duckdb

        def run() -> list[tuple]:
            cur = self.con.execute(sql, params) if params is not None else self.con.execute(sql)
            return cur.fetchall()

        with self._lock:
            try:
                return self._within_memory(run)
            except duckdb.OutOfMemoryException as exc:
                raise self._out_of_memory(exc) from None
            except duckdb.Error as exc:
                raise DataError(f"The engine could not compute this statistic: {_short(exc)}.") from None

    def _within_memory(self, run: Any) -> Any:
        """``run()`` (one statement); when DuckDB runs out of memory with several threads, once more on one thread.

        Each thread of a large aggregation (e.g. 10⁸ records into 9·10⁷ (owner, cell) groups) builds its own
        partitions before they are merged and spilled, so the memory a statement needs at once grows with the
        threads: a statement that fails under the limit on two threads completes on one (slower, but within the
        limit; a failed statement leaves nothing behind). The thread count is restored afterwards. A statement
        that fails on one thread too raises the error (:meth:`_out_of_memory` says what to set)."""
        import duckdb

        try:
            return run()
        except duckdb.OutOfMemoryException:
            threads = int(self.con.execute("SELECT current_setting('threads')").fetchall()[0][0])
            if threads <= 1:
                raise
        self.con.execute("SET threads = 1")
        try:
            return run()
        finally:
            self.con.execute(f"SET threads = {threads}")

    def _out_of_memory(self, exc: Exception) -> ResourceLimitError:
        """What to change when DuckDB ran out of memory: the limit in use and where it is set, the limit the failed
        statement needed at least (:func:`needed_limit`, from the sizes DuckDB reports) and the disk left for
        spilling, as measured now."""
        import shutil

        limit = self.options.memory_limit or DEFAULT_MEMORY_LIMIT
        temp = self.options.temp_directory or default_options().temp_directory or tempfile.gettempdir()
        try:
            free = f"{shutil.disk_usage(temp).free / 1e9:.1f} GB free"
        except OSError:
            free = "its free space unknown"
        need = needed_limit(str(exc), limit)
        example = "8GB" if need is None else f"{need}"
        measured = "" if need is None else (f" This statement had to hold more than {need} at once (what DuckDB "
                                            f"held plus what it asked for when it failed).")
        return ResourceLimitError(
            f"DuckDB ran out of memory within its limit of {limit}: {_short(exc)}.{measured}",
            hint=f"Raise the limit: PRDP_DUCKDB_MEMORY_LIMIT in the environment of the app or the CLI (e.g. "
                 f"PRDP_DUCKDB_MEMORY_LIMIT={example}), or data.duckdb.memory_limit in a study; fewer threads "
                 f"(PRDP_DUCKDB_THREADS) need less memory at once. Rows beyond the limit spill to {temp} ({free}).")

    def _frame(self, sql: str) -> pd.DataFrame:
        import duckdb

        with self._lock:
            try:
                return self._within_memory(lambda: self.con.execute(sql).df())
            except duckdb.OutOfMemoryException as exc:
                raise self._out_of_memory(exc) from None
            except duckdb.Error as exc:
                raise DataError(f"The engine could not compute this statistic: {_short(exc)}.") from None

    def _with_table(self, frame: pd.DataFrame, fn: Any) -> Any:
        """Run ``fn(name)`` with ``frame`` registered as a small relation ``name``."""
        name = f"prdp_tab_{next(_counter)}"
        with self._lock:
            self.con.register(name, frame)
            try:
                return fn(name)
            finally:
                self.con.unregister(name)

    # -- description -------------------------------------------------------------------

    def column_kinds(self) -> dict[str, ColumnKind]:
        if self._kinds is None:
            rows = self._exec(f"DESCRIBE SELECT * FROM {self.relation}")
            self._kinds = {str(r[0]): _kind_of_type(str(r[1])) for r in rows}
        return dict(self._kinds)

    def sample(self, n: int, seed: int) -> pd.DataFrame:
        pos = sample_positions(self.n_rows(), n, seed)
        frame = pd.DataFrame({"__pos": pos.astype(np.int64)})

        def run(tab: str) -> pd.DataFrame:
            return self._frame(f"SELECT * EXCLUDE (__pos) FROM (SELECT *, {self._row_numbers(self.relation)} - 1 AS "
                               f"__pos FROM {self.relation}) WHERE __pos IN (SELECT __pos FROM {tab}) ORDER BY __pos")

        out = self._with_table(frame, run)
        return _normalise_frame(out)

    def _row_numbers(self, source: str) -> str:
        return "row_number() OVER ()"

    def _owner_parts(self) -> int:
        """:data:`OWNER_PART_ROWS` records per part: at 10⁸ records and 3·10⁷ owners, one aggregation of every
        (owner, cell) pair (9·10⁷ of them) ran out of DuckDB's default limit now and then; a quarter of them at a
        time never did, at about the same speed."""
        return max(1, math.ceil(self.n_rows() / OWNER_PART_ROWS))

    def _owner_part(self, owner: str, parts: int, k: int) -> str:
        return f"hash({owner}) % {parts} = {k}"

    @contextmanager
    def _materialized_parts(self, selects: Sequence[str]) -> Iterator[str]:
        """One temporary table filled by one statement per part (each aggregation within the memory limit)."""
        with self._lock, self._materialized(selects[0]) as name:
            for sql in selects[1:]:
                self._exec(f"INSERT INTO {name} {sql}")
            yield name

    @contextmanager
    def _materialized(self, select_sql: str) -> Iterator[str]:
        """A temporary table (DuckDB spills it if it must)."""
        name = f"prdp_tmp_{next(_counter)}"
        with self._lock:
            self._exec(f"CREATE TEMP TABLE {name} AS {select_sql}")
            try:
                yield name
            finally:
                self._exec(f"DROP TABLE IF EXISTS {name}")

    # -- budget functions ------------------------------------------------------------------

    def _budget_raw(self, budget: Any, kinds: dict[str, ColumnKind]) -> tuple[str, str | None]:
        """SQL of the raw budget: compiled when exact, else the numpy kernel as a DuckDB function."""
        b = sql_budget.budget_sql(self.d, budget.shape, kinds)
        if b.exact:
            return b.raw, b.unmatched
        return self._budget_function(budget, kinds), b.unmatched

    def _budget_function(self, budget: Any, kinds: dict[str, ColumnKind]) -> str:
        """The numpy kernel of ``budget.shape`` as a DuckDB Arrow function of one struct holding its
        columns (any number of them), batch by batch."""
        import duckdb
        import pyarrow as pa

        shape = budget.shape
        cols = list(shape.columns)
        if not cols:
            return self.d.double(float(shape.raw({}, 1)[0]))
        name = f"prdp_budget_{next(_counter)}"
        text = {c for c in cols if c in shape.text_columns or kinds.get(c) == "text"}

        def fn(packed: Any) -> Any:
            s = packed.combine_chunks() if isinstance(packed, pa.ChunkedArray) else packed
            data = {}
            for j, c in enumerate(cols):
                arr = s.field(f"c{j}").to_numpy(zero_copy_only=False)
                data[c] = arr if c in text else np.asarray(arr, dtype=float)
            with np.errstate(all="ignore"):
                out = np.asarray(shape.raw(data, len(s)), dtype=float)
            return pa.array(out, type=pa.float64())

        fields = {f"c{j}": duckdb.sqltype("VARCHAR" if c in text else "DOUBLE") for j, c in enumerate(cols)}
        args = ", ".join(f"c{j} := " + (self.d.as_text(self.d.ident(c)) if c in text
                                        else self.d.as_double(self.d.ident(c)))
                         for j, c in enumerate(cols))
        with self._lock:
            self.con.create_function(name, fn, [duckdb.struct_type(fields)], duckdb.sqltype("DOUBLE"), type="arrow",
                                     null_handling="special")
        return f"{name}(struct_pack({args}))"




_OOM_SIZES = re.compile(r"(?:of size|block of size)\s+([\d.]+)\s*([KMGT]i?B)\s*\(([\d.]+)\s*([KMGT]i?B)\s*/")


def needed_limit(message: str, limit: str | None = None) -> str | None:
    """The memory limit a statement that ran out of memory needed at least, from DuckDB's message ("failed to
    allocate data of size 512.0 MiB (1.5 GiB/1.8 GiB used)"): what it held plus what it asked for — and, DuckDB's
    sizes being rounded, at least ``limit`` (the limit it ran within) plus what it asked for when that sum does not
    exceed it — rounded up to whole megabytes or, above 1 GB, to tenths of a gigabyte (a DuckDB size, e.g.
    ``"2.2GB"``); None when the message does not say."""
    from ..data.memory import size_bytes

    m = _OOM_SIZES.search(message)
    if m is None:
        return None
    asked = size_bytes(f"{m.group(1)}{m.group(2)}")
    need = asked + size_bytes(f"{m.group(3)}{m.group(4)}")
    if limit is not None and need <= size_bytes(limit):
        need = size_bytes(limit) + asked
    if need >= 1e9:
        return f"{math.ceil(need / 1e8) / 10:g}GB"
    return f"{math.ceil(need / 1e6):d}MB"


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _check_schemas(con: Any, src: Source) -> None:
    """Refuse a folder or glob whose files do not have the same columns (named, in order)."""
    if len(src.files) < 2:
        return
    d = sqlgen.DUCKDB
    reader = "read_parquet" if src.kind == "parquet" else "read_csv"
    first: list[tuple[str, ColumnKind]] | None = None
    for f in src.files:
        try:
            cols = [(str(r[0]), _kind_of_type(str(r[1])))
                    for r in con.execute(f"DESCRIBE SELECT * FROM {reader}({d.string(f)})").fetchall()]
        except Exception as exc:  # duckdb raises several types; all mean "this file cannot be read"
            raise DataError(f"Cannot read {Path(f).name}: {_short(exc)}.") from None
        if first is None:
            first = cols
            first_name = Path(f).name
            continue
        if [c for c, _ in cols] != [c for c, _ in first]:
            a, b = {c for c, _ in first}, {c for c, _ in cols}
            extra, lack = sorted(b - a), sorted(a - b)
            what = "; ".join(x for x in (f"it has {', '.join(extra)}" if extra else "",
                                         f"it lacks {', '.join(lack)}" if lack else "",
                                         "its columns are in another order" if not extra and not lack else "") if x)
            raise DataError(f"The files do not all have the same columns: {Path(f).name} differs from {first_name} "
                            f"({what}).", hint="Give every file the same columns in the same order, or name one "
                                               "file.")
        kinds_a, kinds_b = dict(first), dict(cols)
        diff = [c for c in kinds_a if kinds_a[c] != kinds_b[c]]
        if diff:
            raise DataError(f"The files do not all have the same column types: in {Path(f).name}, "
                            f"{', '.join(f'{c} is {kinds_b[c]} (not {kinds_a[c]})' for c in diff[:3])}.",
                            hint="Write the files with the same types.")





__all__ = ["DEFAULT_MEMORY_LIMIT", "DuckDBEngine", "Source", "default_options", "needed_limit", "resolve_source"]
