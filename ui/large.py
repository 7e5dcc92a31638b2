"""The *Large dataset* source: a table of the server's data folder, read in place by an engine.

A file, folder or glob of Parquet/CSV files, or a table of a DuckDB database, that lies in the data
folder (``PRDP_DATA_DIR``, :func:`prdp_core.board.workshop.data_dir`; nothing outside it can be named:
:func:`prdp_core.board.workshop.data_source`) is connected without uploading. Its records stay in the
engine (DuckDB): the session keeps an :class:`~prdp_core.engines.EngineDataset` — a handle — and the
statistics computed from it, never the table.

* SAS, Stata and SPSS files of the data folder are listed too, but DuckDB cannot read them in place: *Connect*
  reads such a file whole with the loader, under the memory guard and the upload limits
  (:func:`ui.large_roles.read_stat_file`; a larger file is refused with a message saying to save it as Parquet),
  and it becomes an in-memory table, kept by the server as an upload is.
* Connecting, the one check of the roles chosen and *Use this table* (the fixes applied in the engine,
  :func:`prdp_core.engines.prepare`, and the measures profiled) are :mod:`ui.large_roles`' flow.
* Caches: the engine over a file and the prepared dataset are server resources (``st.cache_resource``,
  keyed by the files' paths, sizes and modification times, the memory limit, the roles and the fixes: a
  data-folder file is shared by every session, and sessions with other roles get their own dataset); the
  engine's query results are kept by its result cache (:mod:`prdp_core.engines.result_cache`). Statistics of
  the active dataset are kept per session, keyed by its dataset token (:func:`stats`).
* Memory: a DuckDB engine works within a heavy step's share of the server's memory, and the steps over every
  record (profile, check, preparation, owners' losses, release) run as the server's heavy steps, at most
  ``PRDP_HEAVY_STEPS`` at once (:func:`ui.memory.heavy_step`).
* Progress: every step on the engine runs inside ``st.status`` naming its stage (:func:`stats`).
* Pages whose mechanisms need the records themselves offer a labelled uniform sample of N rows
  (:func:`records_needed`, :func:`sample_dataset`); the pages, the ledger and the exports say so.

The active source is a plain dict (``ui.state.source()``): ``{"kind": "large", "path": <spec relative to the
data folder>, "engine": "duckdb", "schema": {...}, "options": {...}, "version": [[file, size, mtime], …]}``,
from which :func:`open_source` rebuilds the dataset (a durable session or a study import).
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, TypeVar

import streamlit as st

from prdp_core import engines
from prdp_core.board import workshop as W
from prdp_core.core.errors import DataError, PrdpError
from prdp_core.data.dataset import Dataset, Schema
from prdp_core.engines import EngineDataset
from prdp_core.study.config import safe_data_path

from . import memory as umem
from . import state
from .common import md_escape

T = TypeVar("T")

#: The Large dataset source's kind in the session's source dict.
KIND = "large"
#: Rows read (a uniform sample) to guess the column roles of a large table.
GUESS_ROWS = engines.dataset.GUESS_ROWS
#: Session key of the statistics computed on the active large dataset (:func:`stats`).
STATS_KEY = "large_stats"
#: Statistics kept per session and dataset token (the oldest are dropped), and tokens kept.
MAX_STATS = 24
MAX_TOKENS = 3
#: Session key: page → (rows, seed) of the sample a page works on (:func:`records_needed`).
SAMPLES_KEY = "large_samples"
#: Default size of the sample offered to pages that need the records.
DEFAULT_SAMPLE_ROWS = 100_000


# ---------------------------------------------------------------------------
# The data folder and its engines
# ---------------------------------------------------------------------------


def folder() -> Path:
    """The server's data folder (``PRDP_DATA_DIR``, shared with the workshop board)."""
    return W.data_dir()


def engine_names() -> list[str]:
    """Engines a large table can be read by: those the engine layer says are available (a cluster engine
    when the server is configured for one), else DuckDB."""
    available = getattr(engines, "available_engines", None)
    names = [e for e in (available() if callable(available) else ("duckdb",)) if e not in ("memory", "auto")]
    return names or ["duckdb"]


def engine_help() -> str:
    """What each engine offered on the Large dataset tab does with the files."""
    text = "DuckDB reads the files out of core (beyond its memory limit it spills to disk)."
    if "spark" in engine_names():
        text += (" Spark (enabled on this server) reads Parquet and CSV files with the server's Spark session or "
                 "cluster: every statistic is a Spark job, only aggregates come back.")
    return text


def sources() -> list[str]:
    """The large-dataset sources of the data folder (files, folders of files, DuckDB databases)."""
    return W.data_files(folder(), large=True)


@st.cache_data(show_spinner=False, max_entries=16, ttl=state.PUBLIC_CACHE_TTL_S)
def _tables(path: str, mtime: int, name: str) -> list[str]:
    return W.database_tables(folder(), name)


def database_tables(name: str) -> list[str]:
    """Tables of a DuckDB database of the data folder (listed once per version of the file)."""
    p = safe_data_path(name, folder(), key="Large dataset", where="the data folder")
    return _tables(str(p), int(p.stat().st_mtime_ns), name)


def file_version(spec: str) -> list[list[Any]]:
    """The files ``spec`` names in the data folder, with their sizes and modification times (DataError
    for a path outside the folder or a missing file)."""
    return [[f, size, mtime] for f, size, mtime in W.data_source_stamp(W.data_source(spec, folder()))]


@st.cache_resource(show_spinner=False, max_entries=4)
def _engine(spec: str, version_json: str, engine: str, memory_limit: str) -> Any:
    if engine not in engine_names():  # Spark only while the administrator enables it
        raise DataError(f"The {engine} engine is not available on this server.", hint="Choose another engine.")
    if engine != "duckdb":
        return W.open_data_source(spec, folder(), engine=engine)
    from dataclasses import replace

    from prdp_core.engines.duckdb_engine import default_options

    opts = replace(default_options(), memory_limit=memory_limit)  # a heavy step's share (ui.memory.step_share)
    return W.open_data_source(spec, folder(), opts, engine=engine)


def engine_for(spec: str, version_json: str, engine: str) -> Any:
    """The server's engine over the files of ``spec`` as they are (``version_json``): one per file version and
    memory limit, shared by every session; a DuckDB engine works within a heavy step's share of the server's
    memory (:func:`ui.memory.engine_memory_limit`)."""
    return _engine(spec, version_json, engine, umem.engine_memory_limit() if engine == "duckdb" else "")


@st.cache_resource(show_spinner=False, max_entries=8)
def _prepared(spec: str, version_json: str, engine: str, schema_json: str, options_json: str) -> EngineDataset:
    eng = engine_for(spec, version_json, engine)
    return engines.prepare(eng, Schema.from_dict(json.loads(schema_json)), name=label(spec),
                           **json.loads(options_json))


def count(n: int, noun: str) -> str:
    """``n`` of ``noun`` as the mode shows it (hidden in review mode: :func:`ui.review.count`)."""
    from . import review

    return review.count(n, noun)


def label(spec: str) -> str:
    """The name a large dataset is shown under: its path in the data folder."""
    return str(spec).strip()


def stable_json(obj: Any) -> str:
    """``obj`` as JSON with sorted keys: a cache key."""
    return json.dumps(obj, sort_keys=True, default=str)


def source_dict(spec: str, engine: str, schema: Schema | dict[str, Any], options: dict[str, Any],
                version: list[list[Any]]) -> dict[str, Any]:
    """The session's source dict of a large dataset (plain JSON values: see the module docstring)."""
    s = schema.to_dict() if isinstance(schema, Schema) else dict(schema)
    return {"kind": KIND, "path": label(spec), "engine": engine, "schema": s, "options": dict(options),
            "version": [list(v) for v in version]}


def open_source(source: dict[str, Any]) -> tuple[EngineDataset, dict[str, Any]]:
    """The prepared dataset of a large source dict (its roles and fixes applied in the engine) and the
    source dict for the files as they are now. Raises PrdpError (a file that left the folder, bad roles)."""
    spec = str(source["path"])
    version = file_version(spec)
    engine = str(source.get("engine") or "duckdb")
    schema = Schema.from_dict(dict(source["schema"]))
    opts = dict(source.get("options") or {})
    ds = _prepared(spec, stable_json(version), engine, stable_json(schema.to_dict()), stable_json(opts))
    return ds, source_dict(spec, engine, schema, opts, version)


def is_large(source: dict[str, Any] | None = None) -> bool:
    """Whether the active data source (or ``source``) is a large dataset."""
    return (state.source() if source is None else source).get("kind") == KIND


# ---------------------------------------------------------------------------
# Statistics with progress
# ---------------------------------------------------------------------------


def stats(kind: str, key: Any, label_: str, work: Callable[[Callable[[str], None]], T], *,
          token: str | None = None, heavy: bool = False) -> T:
    """A statistic of a large dataset, computed once per session and dataset token.

    The first call runs ``work(stage)`` inside ``st.status(label_)`` (``stage(text)`` names the stage
    being run, shown in the status and its list as plain text: it may name columns) and keeps the result;
    later calls return it at once. ``label_`` is Markdown: user text in it goes through ``md_escape``.
    Results belong to a dataset token (``token``, default the active dataset's; a table being connected
    uses its own): the results of the :data:`MAX_TOKENS` most recent tokens are kept.
    A heavy step (``heavy``: every record read, e.g. the roles' check or the owners' losses) runs as one of the
    server's heavy steps (:func:`ui.memory.heavy_step`): it waits, saying so in the status, while
    ``PRDP_HEAVY_STEPS`` others run. A PrdpError leaves the status in its error state and propagates (nothing is
    kept)."""
    items = _store(state.active_token() if token is None else token)
    k = (kind, stable_json(key))
    if k in items:
        items.move_to_end(k)
        return items[k]
    start = time.monotonic()
    with st.status(label_, expanded=False) as box:
        def stage(text: str) -> None:
            text = md_escape(text)
            box.update(label=f"{label_} — {text}")
            box.write(f":material/progress_activity: {text}")

        try:
            if heavy:
                with umem.heavy_step(stage):
                    out = work(stage)
            else:
                out = work(stage)
        except PrdpError:
            box.update(label=f"{label_}: stopped", state="error")
            raise
        box.update(label=f"{label_}: done in {time.monotonic() - start:.1f} s", state="complete")
    items[k] = out
    while len(items) > MAX_STATS:
        items.popitem(last=False)
    return out


def keep_profile(token: str, profile_: Any) -> None:
    """Keep the profile of the dataset of ``token``, computed while it was prepared (:func:`profile` returns it)."""
    _store(token)[("profile", stable_json(()))] = profile_


def kept(kind: str, key: Any, token: str) -> Any:
    """The statistic :func:`stats` keeps for ``(kind, key)`` under ``token``, or None when none was computed
    (nothing is computed here)."""
    items = (st.session_state.get(STATS_KEY) or {}).get(token)
    return None if items is None else items.get((kind, stable_json(key)))


def _store(token: str) -> OrderedDict:
    """The session's statistics of one dataset token (the :data:`MAX_TOKENS` most recent are kept: the
    active dataset's, a table being connected and the previous one)."""
    ss = st.session_state
    stores = ss.get(STATS_KEY)
    if not isinstance(stores, OrderedDict):
        stores = ss[STATS_KEY] = OrderedDict()
    items: OrderedDict = stores.setdefault(token, OrderedDict())
    stores.move_to_end(token)
    while len(stores) > MAX_TOKENS:
        stores.popitem(last=False)
    return items


def profile() -> Any:
    """The profile of the active large dataset's measures (computed in the engine)."""
    ds = state.active_dataset()

    def work(stage: Callable[[str], None]) -> Any:
        from prdp_core.data.profile import profile_dataset

        stage(f"order statistics, histograms and Lorenz curves of {len(ds.schema.measures)} measure(s), "
              "in the engine")
        return profile_dataset(ds)

    return stats("profile", (), f"Profiling the measures of {md_escape(ds.name)}", work, token=state.active_token(),
                 heavy=True)


# ---------------------------------------------------------------------------
# Pages that need the records: a labelled uniform sample
# ---------------------------------------------------------------------------


@st.cache_resource(show_spinner=False, max_entries=4, ttl=state.PUBLIC_CACHE_TTL_S)
def _sample(token: str, rows: int, seed: int, _ds: EngineDataset) -> Dataset:
    return _ds.sample(rows, seed)


def sample_choice(page: str) -> tuple[int, int] | None:
    """(rows, seed) of the sample ``page`` works on, or None."""
    got = (st.session_state.get(SAMPLES_KEY) or {}).get(page)
    return (int(got[0]), int(got[1])) if got else None


def sample_dataset(page: str) -> Dataset | None:
    """The labelled uniform sample of the active large dataset that ``page`` works on (None: none chosen).
    Drawn once per server for each (dataset, rows, seed), inside a progress status."""
    choice = sample_choice(page)
    if choice is None or not is_large():
        return None
    ds = state.active_dataset()
    rows, seed = choice

    def work(stage: Callable[[str], None]) -> Dataset:
        stage(f"drawing {rows:,} of the {count(ds.n, 'rows')} uniformly at random (seed {seed}) in the engine")
        return _sample(state.active_token(), rows, seed, ds)

    return stats("sample", [rows, seed], f"Taking a uniform sample of {rows:,} rows", work,
                 token=state.active_token())


def _on_sample(page: str) -> None:
    ss = st.session_state
    chosen = dict(ss.get(SAMPLES_KEY) or {})
    chosen[page] = (int(ss.get(f"large_sample_rows_{page}") or DEFAULT_SAMPLE_ROWS),
                    int(ss.get(f"large_sample_seed_{page}") or 0))
    ss[SAMPLES_KEY] = chosen


def _off_sample(page: str) -> None:
    chosen = dict(st.session_state.get(SAMPLES_KEY) or {})
    chosen.pop(page, None)
    st.session_state[SAMPLES_KEY] = chosen


def sample_offer(page: str, what: str) -> Dataset | None:
    """On a large dataset: say that ``what`` needs the records themselves and offer a labelled uniform
    sample of N rows; return the sample chosen for ``page`` (None until one is chosen). Draws the notice
    and the form in the page where it is called."""
    if not is_large():
        return None
    ds = state.active_dataset()
    smp = sample_dataset(page)
    if smp is not None:
        _, seed = sample_choice(page)  # type: ignore[misc]  # sample_choice is set once sample_dataset gave a sample
        st.warning(f":material/science: **Working on a sample.** {md_escape(what)} need the records themselves, "
                   f"so this works on a **uniform random sample of {count(len(smp.table), 'rows')} of "
                   f"{md_escape(ds.name)}** (seed {seed}), held in memory — not on the whole table. Its statistics, "
                   "answers and losses are those of the sample; the ledger and exports say so.",
                   icon=":material/science:")
        st.button("Stop using the sample", key=f"large_sample_off_{page}", on_click=_off_sample, args=(page,))
        return smp
    st.info(f"**{md_escape(ds.name)}** is a large dataset: its records stay in the engine, and {md_escape(what)} "
            "need the records themselves. They can run on a **uniform random sample** of the table, held in memory "
            "and labelled as a sample on this page, in the ledger and in the exports.", icon=":material/info:")
    c1, c2, c3 = st.columns([1, 1, 2])
    c1.number_input("Rows in the sample", min_value=1_000, max_value=1_000_000, step=10_000,
                    value=DEFAULT_SAMPLE_ROWS, key=f"large_sample_rows_{page}")
    c2.number_input("Seed of the sample", min_value=0, value=0, step=1, key=f"large_sample_seed_{page}")
    c3.button("Work on this sample", type="primary", key=f"large_sample_on_{page}", on_click=_on_sample,
              args=(page,))
    return None


def records_needed(page: str, what: str) -> None:
    """For pages whose mechanisms all need the records: on a large dataset, offer the sample
    (:func:`sample_offer`) and stop the page until one is chosen; once chosen, ``ui.state.dataset()``
    returns the sample on this page (and in its callbacks) — the rest of the app keeps the whole table."""
    if not is_large():
        return
    smp = sample_offer(page, what)
    if smp is None:
        from . import sidebar

        sidebar.render()
        st.stop()
    rows, seed = sample_choice(page)  # type: ignore[misc]  # sample_choice is set for a page whose sample was offered above
    state.use_sample(smp, page, rows, seed)


state.register("large_profile", profile)
