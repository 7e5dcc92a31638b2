"""Memory budget of heavy steps: estimate before starting, refuse instead of swapping.

A shared server holds a whole room (about 30 sessions on 24 GB). Each heavy step — reading an
upload, preparing a table, previewing a policy over every record, a release, a sweep, a
simulation, a report — first estimates the memory it will need with a simple model

    estimate = rows × columns × bytes per cell × factor of the step

(:data:`STEPS`; each factor is about twice the measured peak of the step over the size of its
input, see ``benchmarks/bench_memory.py``) and :func:`check` refuses it with a
:class:`~prdp_core.core.errors.ResourceLimitError` when

* the estimate is over the **per-session budget** — ``PRDP_SESSION_MEMORY_MB``, default
  :data:`DEFAULT_SESSION_MB` (2,000 MB): one participant cannot take what thirty need; or
* the server's resident memory (``/proc/self/statm``) plus the estimate is over the **server limit**
  — ``PRDP_SERVER_MEMORY_MB``, default 75% of the machine's physical memory: new heavy work is
  refused with a message before the server reaches swap or the kernel's out-of-memory killer.

Privacy: nothing here is released. A refusal depends on the size of the input (rows, columns, file
bytes, runs) and on the server's load, never on the records' values.

**One guard for every route into a table.** :func:`guard_table` is asked before a sample is generated, a
file is read or a table read is prepared, by every route that brings a table into the app or the CLI: the
Data page, a study import, a share link, the board's *Load this policy* and *Use the workshop dataset*, a
session restore, ``prdp run``/``validate``/``suggest``/``board summarise`` (through
:func:`prdp_core.study.config.load_data`) and the data folder's tables. A sample's size is
:func:`sample_size` (records × columns, the model of the ``sample`` step), a file's its bytes (``load``),
a table's its rows × columns (``prepare``); a refusal is a :class:`~prdp_core.core.errors.ResourceLimitError`
raised before anything is generated or read, so nothing changes.

:func:`release_free_memory` returns freed heap pages to the operating system (glibc's
``malloc_trim`` and Arrow's memory pool) after large objects are dropped, e.g. when a session has ended.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import math
import os
import re
import sys
from dataclasses import dataclass
from typing import Callable

from ..core.errors import ConfigError, ResourceLimitError

MB = 2**20

#: Environment variable of the per-session budget of one heavy step, in megabytes.
SESSION_ENV = "PRDP_SESSION_MEMORY_MB"
#: Environment variable of the server's resident-memory limit, in megabytes.
SERVER_ENV = "PRDP_SERVER_MEMORY_MB"
#: Default per-session budget: 24 GB machine, 30 participants, a step's peak well above a session's
#: resting size (about 100 MB for a 200,000-row upload).
DEFAULT_SESSION_MB = 2_000.0
#: Default server limit as a share of physical memory (the rest: the OS, browsers, other services).
DEFAULT_SERVER_SHARE = 0.75

@dataclass(frozen=True)
class StepModel:
    """Memory model of one heavy step: peak ≈ rows × columns × ``cell_bytes`` × ``factor``.

    ``what`` names the step in messages; ``units`` says what rows and columns count for it (and where
    the factor comes from); ``hint`` says how to stay under a limit."""

    what: str
    cell_bytes: float
    factor: float
    units: str
    hint: str


#: The heavy steps of the app and their models. Each factor is about twice the peak measured on a
#: 200,000-row firms-like table (Python and numpy allocations; ``benchmarks/bench_memory.py``).
STEPS: dict[str, StepModel] = {
    "load": StepModel(
        "Reading the uploaded file", 1.0, 10.0,
        "rows = bytes of the file, columns = 1 (parsing peaks at about 5× the file, text or numbers)",
        "Upload a smaller file (fewer rows or columns)."),
    "prepare": StepModel(
        "Checking and preparing the table", 8.0, 6.0,
        "rows × columns of the table (checks and the prepared copy: about 2–3× the cells' 8 bytes)",
        "Keep only the id, measure and grouping columns, or sample the rows."),
    "sample": StepModel(
        "Generating the sample", 8.0, 8.0,
        "records × columns of the sample (generation and the prepared dataset: about 4×)",
        "Ask for fewer records."),
    "preview": StepModel(
        "Evaluating the policy on every record", 8.0, 3.0,
        "records × (measures + groups + 3) (split counts, per-record and per-owner losses: about 1×)",
        "Use a smaller table (sample the records) or fewer measures."),
    "release": StepModel(
        "The release", 8.0, 4.0,
        "records × (columns the release reads + 3), or users × (tiers + 10) for a local multi-tier release "
        "(statistics, answers, per-record policy and realized losses: about 2×)",
        "Release fewer queries at once or use a smaller table."),
    "sweep": StepModel(
        "The sweep", 8.0, 3.0,
        "records × (measures + groups + 3) (per-cell statistics and one loss CDF at a time: about 1.6–1.8× "
        "for 25 to 250 points)",
        "Sweep fewer thresholds or budgets, or use a smaller table."),
    "simulation": StepModel(
        "The simulation", 8.0, 64.0,
        "users × 1 (runs are drawn in batches and do not add memory: about 31× a user's 8 bytes)",
        "Use a smaller table (sample the records)."),
    "scaling": StepModel(
        "The scaling study", 8.0, 8.0,
        "records of the largest simulated data set × 1 (about 5.5×; 42 MB for 10⁶ records)",
        "Use fewer runs per point."),
    "histogram": StepModel(
        "Running both histograms", 1.0, 3.0,
        "records × (attributes + 64) bytes (encoded attributes, cell counts, accuracy: about 1.1–1.8×)",
        "Use fewer attributes or records."),
    "engine": StepModel(
        "The engine's work on a large table", 1.0, 1.0,
        "rows = the DuckDB engine's memory limit in bytes, columns = 1 (beyond its limit DuckDB spills to disk; "
        "the driver keeps only aggregates, so the records' number does not enter the model)",
        "Lower the engine's memory limit (PRDP_DUCKDB_MEMORY_LIMIT) or try again when other work has finished."),
    "report": StepModel(
        "Building the report", 8.0, 8.0,
        "records × (measures + groups + 3) × mechanisms (each release, its losses and the HTML: about 4×)",
        "Run fewer mechanisms or use a smaller table."),
}


def estimate_mb(step: str, rows: float, columns: float = 1) -> float:
    """Estimated peak memory of ``step`` (a key of :data:`STEPS`) in megabytes."""
    model = STEPS[step]
    return max(float(rows), 0.0) * max(float(columns), 1.0) * model.cell_bytes * model.factor / MB


def _env_mb(name: str) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw.replace("_", "").replace(",", ""))
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{name}: must be a positive number of megabytes (got {raw[:40]!r}).",
                          hint="Fix the server's environment and restart it.")
    return value


def physical_memory_mb() -> float:
    """The machine's physical memory in megabytes (inf when the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / MB
    except (ValueError, OSError, AttributeError):
        return math.inf


def session_budget_mb() -> float:
    """The per-session budget of one heavy step: ``PRDP_SESSION_MEMORY_MB`` or 2,000 MB."""
    value = _env_mb(SESSION_ENV)
    return DEFAULT_SESSION_MB if value is None else value


def server_limit_mb() -> float:
    """The server's resident-memory limit: ``PRDP_SERVER_MEMORY_MB`` or 75% of physical memory."""
    value = _env_mb(SERVER_ENV)
    return DEFAULT_SERVER_SHARE * physical_memory_mb() if value is None else value


def server_rss_mb() -> float:
    """This process's resident memory now, in megabytes (``/proc/self/statm``; elsewhere the peak
    from ``resource``, which only overstates it; 0 when neither is available)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / MB if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KB elsewhere
    except (ImportError, OSError):
        return 0.0


def _mb(x: float) -> str:
    return f"{x:,.0f} MB" if x >= 10 else f"{x:.2g} MB"


def check(step: str, rows: float, columns: float = 1, *,
          rss_reader: Callable[[], float] = server_rss_mb, session: bool = True) -> float:
    """Refuse ``step`` before it starts when it would not fit; return its estimate in megabytes.

    Raises :class:`~prdp_core.core.errors.ResourceLimitError` naming the limit (and the variable that sets
    it) when the estimate is over the per-session budget (unless ``session`` is False: a step whose memory
    the server bounds, :func:`check_engine`), or when the server's resident memory (``rss_reader()``, in
    MB) plus the estimate is over the server limit."""
    model = STEPS[step]
    est = estimate_mb(step, rows, columns)
    budget = session_budget_mb()
    if session and est > budget:
        raise ResourceLimitError(
            f"{model.what} would need about {_mb(est)}, over the per-session memory budget of "
            f"{_mb(budget)} ({SESSION_ENV}).", hint=model.hint)
    limit = server_limit_mb()
    rss = float(rss_reader())
    if rss + est > limit:
        raise ResourceLimitError(
            f"The server is short of memory: it holds {_mb(rss)} and {model.what.lower()} would need "
            f"about {_mb(est)} more, over its limit of {_mb(limit)} ({SERVER_ENV}).",
            hint="Nothing was changed. Try again in a few minutes, when other sessions have ended, or use a "
                 "smaller table.")
    return est


def sample_size(name: str, n: int | None) -> tuple[int, int]:
    """(records, columns) of sample ``name`` of ``n`` records as the guard models it: ``n`` or the sample's
    default size (0 for a real sample read whole: its shipped file is modelled instead), × its measures,
    groups, id and owner. Raises :class:`~prdp_core.core.errors.ParameterError` for an unknown sample."""
    from . import samples

    meta = samples.info(name)
    rows = n if n is not None else meta.default_n
    columns = len(meta.schema.measures) + len(meta.schema.groups) + 2
    return max(int(rows or 0), 0), columns


def guard_table(*, sample: str | None = None, n: int | None = None, file_bytes: float | None = None,
                rows: float | None = None, columns: float = 1,
                rss_reader: Callable[[], float] = server_rss_mb) -> float:
    """The one memory and size guard of every route into a table (see the module doc); returns the estimate
    in megabytes, or raises :class:`~prdp_core.core.errors.ResourceLimitError` before anything is done.

    Exactly one of: ``sample`` (with ``n``: None for its default size) before a sample is generated (the
    ``sample`` step over :func:`sample_size`; a real sample read whole: the ``load`` step over its file);
    ``file_bytes`` before a file of that size is read (``load``); ``rows`` × ``columns`` before a table read
    from a file is checked and prepared (``prepare``)."""
    if (sample is not None) + (file_bytes is not None) + (rows is not None) != 1:
        raise TypeError("guard_table: give exactly one of sample, file_bytes or rows")
    if sample is not None:
        records, cols = sample_size(sample, n)
        if records == 0:
            from . import samples

            meta = samples.info(sample)
            path = samples.sample_dir() / (meta.filename or "")
            return check("load", path.stat().st_size if path.is_file() else 0, 1, rss_reader=rss_reader)
        return check("sample", records, cols, rss_reader=rss_reader)
    if file_bytes is not None:
        return check("load", file_bytes, 1, rss_reader=rss_reader)
    return check("prepare", float(rows or 0), columns, rss_reader=rss_reader)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def size_bytes(text: str) -> float:
    """Bytes of a size written as DuckDB reads it (``"2GB"`` = 2·10⁹ bytes, ``"2GiB"`` = 2·2³⁰)."""
    m = _SIZE.match(str(text))
    if m is None:
        raise ConfigError(f"'{str(text)[:40]}' is not a size such as 3GB or 500MB.")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


def check_engine(memory_limit: str, *, rss_reader: Callable[[], float] = server_rss_mb) -> float:
    """Refuse engine work (statistics computed by DuckDB on a large table) when the server's resident
    memory plus the engine's memory limit is over the server limit; return the estimate in megabytes.

    The records' number does not enter: DuckDB keeps its memory under ``memory_limit`` (spilling to
    disk beyond it) and only aggregates reach the driver. The per-session budget does not apply
    either: the limit is the server's setting, not a session's choice. A row-count model
    (:func:`check`) would refuse exactly the tables the engine exists for."""
    est = size_bytes(memory_limit) / MB
    return check("engine", est * MB, 1, rss_reader=rss_reader, session=False)


def _libc_malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (e.g. musl)
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def arrow_on_system_heap() -> bool:
    """Make Arrow's default memory pool the system allocator (glibc's ``malloc``) in this process; returns
    whether it was changed (once: afterwards it is the system's already).

    pandas' text columns are Arrow arrays. Arrow's own allocator (mimalloc or jemalloc) keeps the pages a
    session's tables freed in per-thread heaps that a server's many threads do not give back: after ten
    sessions of 10⁶-record samples had ended, the server held 1.6 GB more than at its start, 87 MB with the
    system allocator, whose freed pages :func:`release_free_memory` returns (``benchmarks/bench_route_guard.py``).
    A long-running server (the app) calls this before it loads a table."""
    import pyarrow as pa

    if pa.default_memory_pool().backend_name == "system":
        return False
    pa.set_memory_pool(pa.system_memory_pool())
    return True


def _release_arrow_pool() -> None:
    """Return the memory Arrow's pool keeps after its buffers were freed (pandas' text columns are Arrow
    arrays; the pool's allocator, mimalloc or jemalloc, keeps freed pages for reuse). Nothing when pyarrow
    was never imported."""
    pa = sys.modules.get("pyarrow")
    pool = getattr(pa, "default_memory_pool", None)
    if pool is None:
        return
    release = getattr(pool(), "release_unused", None)
    if release is not None:
        release()


def release_free_memory() -> bool:
    """Collect garbage and give freed heap pages back to the operating system.

    glibc keeps freed memory in its arenas and Arrow's memory pool keeps freed buffers' pages; without
    ``malloc_trim(0)`` and the pool's ``release_unused()`` a server that has dropped a session's tables keeps
    most of their pages resident (measured: of four dropped 10⁶-record CBP-like samples, 650 MB after
    ``malloc_trim`` alone, 105 MB with the pool's release; ``benchmarks/bench_route_guard.py``). Returns
    whether glibc's heap was trimmed (False where ``malloc_trim`` is not available)."""
    gc.collect()
    _release_arrow_pool()
    trim = _libc_malloc_trim()
    if trim is None:
        return False
    return bool(trim(0))
