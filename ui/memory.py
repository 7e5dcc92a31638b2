"""The memory guard of the app's heavy steps, and the release of an ended session's memory.

* :func:`guard` is called by a heavy step (in a callback or a cached function, so only on real work)
  before it starts: :func:`prdp_core.data.memory.check` refuses it with a ``ResourceLimitError`` that the
  page shows with its usual error display; nothing in the session changes.
* :func:`track_session` (called on every run by app.py) registers the session with a session-scoped
  resource whose release hook Streamlit calls when the browser disconnects. Streamlit keeps a
  disconnected session for ``server.disconnectedSessionTTL`` seconds (120 by default) so that a
  network blip does not lose it, but when that window passes it only forgets the session: its
  state, uploads and download files stay in memory until the server stops. The hook therefore
  waits out the window and, if the browser has not come back, closes the session through
  Streamlit's runtime (which shuts it down and releases its uploads and download files), clears
  its state (datasets, releases, widget values) and gives the freed heap back to the operating
  system (:func:`prdp_core.data.memory.release_free_memory`). Session-scoped caches (everything
  computed from a session's dataset) are dropped by Streamlit itself at the disconnect.
* :func:`heavy_step` runs an engine step over every record of a large table (its roles' check, its preparation,
  the owners' losses, a release) as one of the server's heavy steps (:mod:`prdp_core.data.heavy_steps`): it
  waits its turn when ``PRDP_HEAVY_STEPS`` steps already run, saying so, and its engine works within the
  step's share of the server's memory (:func:`step_share`, the limit the app opens its DuckDB engines with).
  :func:`operator_note` says, after such a step ran out of memory, what the server's operator can change, with
  the values measured.
* :func:`use_system_heap` (called by app.py before anything else) puts Arrow's allocations (pandas' text
  columns) on the system heap, so that the release above returns them too.
* :func:`freeze_loaded` (called by app.py after every run) keeps Streamlit's garbage collection after each
  run cheap: that full collection (``runner.postScriptGC``) examined every object of the server — the
  imported libraries' hundreds of thousands of them, alive until the server stops — and took most of a
  threshold change's server time (0.15–0.2 s of 0.23 s). After the first run of each page on the server
  (which imports the page's modules), every object alive is moved to the collector's permanent generation
  (``gc.freeze``): later collections examine only what sessions created since. The objects frozen then
  are freed as usual when no longer referenced; only a reference cycle among them is never collected
  (at most the state a session held when it was the first to open a page: cleared at its end, above).
"""

from __future__ import annotations

import gc
import re
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import streamlit as st

from prdp_core.core.errors import PrdpError, ResourceLimitError
from prdp_core.data import heavy_steps, memory

from . import state

#: Seconds before the end of Streamlit's reconnect window at which an ended session is closed (after
#: the window, Streamlit's session storage no longer returns the session, so it could not be shut down).
CLOSE_MARGIN_S = 5.0
#: Seconds between closing a session (done on the server's event loop) and clearing its state and
#: trimming the heap.
TRIM_DELAY_S = 2.0


def dataset_columns(ds: Any) -> int:
    """Columns a step over every record works with: measures, groups, and 3 for id, owner and losses."""
    return len(ds.schema.measures) + len(ds.schema.groups) + 3


def guard(step: str, rows: float | None = None, columns: float | None = None) -> float:
    """Refuse ``step`` (a key of :data:`prdp_core.data.memory.STEPS`) before it starts when its estimated
    memory is over the session budget or the server is short of memory (``ResourceLimitError``).

    ``rows`` and ``columns`` default to the active dataset's records and :func:`dataset_columns`. On a large
    dataset (records held by an engine beyond memory) the step is the engine's: it is modelled by the
    engine's memory limit, never by the records' number (:func:`prdp_core.data.memory.check_engine`).
    Returns the estimate in megabytes."""
    if state.is_large():
        return engine_guard()
    if rows is None or columns is None:
        ds = state.dataset()
        rows = ds.n if rows is None else rows
        columns = dataset_columns(ds) if columns is None else columns
    return memory.check(step, rows, columns)


def step_share() -> heavy_steps.Share:
    """The memory limit of one heavy engine step on this server: ``PRDP_DUCKDB_MEMORY_LIMIT`` (default the
    engine's) at most, and at most its share of the server's limit for ``PRDP_HEAVY_STEPS`` steps at once
    (:func:`prdp_core.data.heavy_steps.step_limit_mb`)."""
    from prdp_core.engines.duckdb_engine import DEFAULT_MEMORY_LIMIT, default_options

    configured = default_options().memory_limit or DEFAULT_MEMORY_LIMIT  # the environment's, as the engine reads it
    return heavy_steps.step_limit_mb(memory.size_bytes(configured) / memory.MB, memory.server_limit_mb(),
                                     heavy_steps.heavy_steps())


def engine_memory_limit() -> str:
    """The DuckDB memory limit the app's engines work within (:func:`step_share`, as DuckDB reads it)."""
    return step_share().duckdb()


def engine_guard() -> float:
    """Refuse engine work when the server has no room for a heavy step's memory limit
    (:func:`prdp_core.data.memory.check_engine` of :func:`engine_memory_limit`); the records' number never
    enters."""
    return memory.check_engine(engine_memory_limit())


@contextmanager
def heavy_step(say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Run the block as one of the server's heavy engine steps (see the module doc): wait for a free slot —
    ``say(text)`` tells the user how many steps run ahead — then check the server's memory
    (:func:`engine_guard`) and run. Re-entrant: a heavy step inside another one takes no second slot."""
    def waiting(n: int) -> None:
        if say is not None:
            cap = heavy_steps.heavy_steps()
            say(f"waiting for {n} other heavy step{'s' if n != 1 else ''} on this server to finish (at most {cap} "
                f"run at once, {heavy_steps.STEPS_ENV}); then this step runs")

    with heavy_steps.QUEUE.slot(waiting):
        engine_guard()
        yield


_ASKED = re.compile(r"of size ([\d.]+ ?[KMGTP]?i?B) \(([\d.]+ ?[KMGTP]?i?B)/([\d.]+ ?[KMGTP]?i?B) used\)")


def _mib(mb: float) -> str:
    return f"{mb / 1024:.1f} GiB" if mb >= 1024 else f"{mb:,.0f} MiB"


def operator_note(err: PrdpError) -> str:
    """After an engine step failed: what the server's operator can change, with the values measured (the limit
    the step ran with and where it comes from, what the step asked for when DuckDB said so). Empty for a
    failure that is not about memory."""
    if not isinstance(err, ResourceLimitError) or "ran out of memory" not in err.message:
        return ""
    share = step_share()
    parts = [f"The step ran with a DuckDB memory limit of {_mib(share.limit_mb)}"]
    asked = _ASKED.search(str(err))
    if asked:
        parts[0] += f" and asked for {asked.group(1)} more with {asked.group(2)} of {asked.group(3)} in use"
    if share.capped:
        parts.append(f"that limit is its share of the server's {_mib(share.server_mb)} (PRDP_SERVER_MEMORY_MB) for "
                     f"{share.steps} heavy step(s) at once ({heavy_steps.STEPS_ENV}); PRDP_DUCKDB_MEMORY_LIMIT asks "
                     f"{_mib(share.configured_mb)}. The operator can allow fewer steps at once "
                     f"({heavy_steps.STEPS_ENV}=1 gives {_mib(min(share.configured_mb, share.share_mb * share.steps))})"
                     " or a larger server limit")
    else:
        more = 2 * share.limit_mb
        parts.append(f"the server's operator can raise it with PRDP_DUCKDB_MEMORY_LIMIT (e.g. "
                     f"PRDP_DUCKDB_MEMORY_LIMIT={int(more)}MiB; each of the {share.steps} heavy step(s) at once "
                     f"gets at most {_mib(share.share_mb)} of the server's {_mib(share.server_mb)})")
    return "; ".join(parts) + "."


def use_system_heap() -> None:
    """Before the run's first table (called by app.py on every run; only the first changes anything): Arrow
    allocates on the system heap, whose freed pages an ended session's release returns
    (:func:`prdp_core.data.memory.arrow_on_system_heap`)."""
    memory.arrow_on_system_heap()


class _SessionHandle:
    """What the session-end hook needs of a session: its id and its state (which the session holds
    anyway while it lives; after a disconnect the handle lives only until the hook has run)."""

    def __init__(self, session_id: str, session_state: Any) -> None:
        self.session_id = session_id
        self._state = session_state

    def clear_state(self) -> None:
        """Drop everything the ended (shut down) session's state holds.

        The runtime may keep the session object a while after closing it (its main loop holds the
        last session it served until another one connects), and with it the state: the session
        keys (datasets, releases, the ledger) and the widgets' metadata, whose callbacks and format
        functions hold the page scripts' globals (the dataset, the uploaded table, the last release)."""
        self._state.clear()
        self._state._new_widget_state.widget_metadata.clear()


def _close_if_gone(handle: _SessionHandle) -> None:
    """Close a session whose browser has not come back within the reconnect window."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return
    rt = Runtime.instance()
    if rt.is_active_session(handle.session_id):
        return  # the browser reconnected: the session goes on (and is tracked again by its next run)
    # Thread-safe: marks the stored session as not resumable and shuts it down on the event loop,
    # which drops it from the runtime with its uploaded files and its download files.
    rt.clear_user_info_for_session(handle.session_id)

    def release() -> None:
        if not rt.is_active_session(handle.session_id):
            handle.clear_state()
        memory.release_free_memory()

    timer = threading.Timer(TRIM_DELAY_S, release)
    timer.daemon = True
    timer.start()


def _on_disconnect(handle: _SessionHandle) -> None:
    """Release hook of the session marker: the session's browser disconnected."""
    window = float(st.get_option("server.disconnectedSessionTTL"))
    timer = threading.Timer(max(window - CLOSE_MARGIN_S, 0.0), _close_if_gone, args=(handle,))
    timer.daemon = True
    timer.start()


@st.cache_resource(scope="session", on_release=_on_disconnect, show_spinner=False)
def _session_marker(session_id: str, _session_state: Any) -> _SessionHandle:
    return _SessionHandle(session_id, _session_state)


def track_session() -> None:
    """Register this session so that its memory is released after it ends (see the module doc)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is not None:
        # the session's SessionState (the per-run SafeSessionState wrapper does not outlive the run)
        _session_marker(ctx.session_id, ctx.session_state._state)


@st.cache_resource(show_spinner=False, max_entries=64)
def _frozen_after(page: str) -> bool:
    """Once per page and server: collect the garbage, then freeze every object alive (see the module doc)."""
    gc.collect()
    gc.freeze()
    return True


def freeze_loaded(page: str) -> None:
    """After a run of ``page`` (its url path): on the page's first run on this server, move the objects alive —
    the modules it imported above all — out of the reach of later garbage collections (see the module doc)."""
    _frozen_after(page)
