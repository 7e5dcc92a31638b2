"""Connecting a large table of the data folder and making it the active dataset, its roles checked once.

* *Connect* (:func:`on_connect`) opens the engine over the file, counts the rows and reads a uniform sample of
  :data:`ui.large.GUESS_ROWS` rows (once per file version on the server: a second session connects the unchanged
  file at once) to guess the column roles (:func:`prdp_core.data.guess_schema`): a column of unique whole numbers
  named like an id (EID, PID, …) is the record id, and is never offered as a measure (:func:`id_like`).
* Role edits compute nothing. *Check and use this table* (:func:`request`) runs **one** check of the chosen roles
  over every row (missing, non-numeric and negative values, duplicate ids: counted by the engine) as one of the
  server's heavy steps (:func:`ui.memory.heavy_step`: queued, with the stage it is at). Its queries' results are
  kept by the engine's result cache (:mod:`prdp_core.engines.result_cache`, ``PRDP_CACHE_DIR``, the same as
  ``prdp run``'s): an unchanged file is answered from it, also in a new session or after a restart. A clean table
  — or one whose issues the fixes chosen cover — is then prepared and profiled (the preparation's own check is
  answered from the cache) and becomes active; otherwise the view shows the rows to fix, and *Use this table*
  applies the fixes chosen without a second check.
* While a step runs nothing of the flow can be pressed: the Data page is drawn first with every action of the
  flow disabled (:func:`busy`), the step runs at the end of the page (:func:`run_pending`, into a box at the top
  of its view) and the page is drawn again after it — no button of an earlier run stays clickable.
* A failed step (out of memory, an unreadable file, …) keeps the roles chosen, says what the server's operator
  can change with the values measured (:func:`ui.memory.operator_note`) and offers a way on (:func:`way_on`):
  try again, or generate the record ids from row numbers.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from typing import Any, Callable

import pandas as pd
import streamlit as st

from prdp_core.board import workshop as W
from prdp_core.core import limits
from prdp_core.core.errors import DataError, PrdpError
from prdp_core.data.dataset import Schema, TableCheck, guess_schema
from prdp_core.data.schema import id_like_columns
from prdp_core.engines import EngineDataset

from . import large, state
from . import memory as umem
from .common import md_escape
from .data_read import read_file
from .data_tabs import DATASET, PROFILE_TAB, ROLES_TAB, TAB_KEY, error_text, keep_message

#: Session keys of the steps a callback leaves for the end of the Data page (connect, check, use this table),
#: of the tab the next run opens, and of the last failed step (its request, for *Try again*).
CONNECT_KEY = "large_connect"
CHECK_KEY = "large_check"
APPLY_KEY = "large_apply"
NEXT_TAB_KEY = "large_next_tab"
FAILED_KEY = "large_failed"
#: What the Column roles view says of roles not checked yet.
UNCHECKED = ("The roles are not checked yet: changing them computes nothing. **Check and use this table** counts "
             "missing, non-numeric and negative values and duplicate ids over every row, once, in the engine "
             "(an unchanged file is answered from the result cache), then makes the table active if it needs no fix.")


# ---------------------------------------------------------------------------
# Requests (widget callbacks) and the state of the flow
# ---------------------------------------------------------------------------


def spec_from_widgets() -> str:
    """The source named on the Large dataset tab: the typed path, else the file (and table) chosen."""
    ss = st.session_state
    typed = str(ss.get("large_path") or "").strip()
    if typed:
        return typed
    name = ss.get("large_file")
    if not name:
        raise DataError("Choose a file of the data folder, or type a path, folder or glob inside it.",
                        hint=f"The data folder is {large.folder()}.")
    if str(name).lower().endswith(".duckdb"):
        table = ss.get("large_table")
        if not table:
            raise DataError(f"Choose a table of the database {name}.")
        return f"{name}#{table}"
    return str(name)


def busy() -> bool:
    """Whether a step of the flow (connect, check, use this table) runs in this page run: its buttons are
    drawn disabled."""
    ss = st.session_state
    return any(k in ss for k in (CONNECT_KEY, CHECK_KEY, APPLY_KEY))


def switch_tab() -> None:
    """Open the tab a finished step asked for (called before the Data page draws its tabs)."""
    tab = st.session_state.pop(NEXT_TAB_KEY, None)
    if tab is not None:
        st.session_state[TAB_KEY] = tab


def on_connect() -> None:
    """Callback of *Connect*: check the name (nothing outside the data folder), then leave the connection to
    the end of the page run (:func:`run_pending`), on the Column roles view."""
    ss = st.session_state
    try:
        spec = spec_from_widgets()
        if W.is_stat_file(spec):
            read_stat_file(spec)
            return
        large.file_version(spec)  # the path checks: absolute, '..', links leading out, missing files
    except PrdpError as err:
        keep_message("error", error_text(err), "large")
        return
    ss[CONNECT_KEY] = {"spec": spec, "engine": str(ss.get("large_engine") or "duckdb")}
    ss[TAB_KEY] = ROLES_TAB
    ss.pop("data_msg", None)
    ss.pop(FAILED_KEY, None)


#: Said with what happens to a SAS, Stata or SPSS file of the data folder (and with a refusal of one).
STAT_NOTE = ("DuckDB cannot read SAS, Stata or SPSS files in place: such a file is read whole into memory, under the "
             "upload limits. Save a larger table as Parquet in the data folder to read it in place.")


def read_stat_file(spec: str) -> None:
    """*Connect* on a SAS, Stata or SPSS file of the data folder: the loader reads it whole (nothing outside the
    folder can be named), under the memory guard and the upload limits, as an upload is read
    (:func:`ui.data_read.read_file`); the table waits on the Column roles view for *Use this table*, and the server
    then keeps a copy of it as it keeps an upload (:mod:`ui.durable`: a restored session finds it there even when
    its roles needed fixes, which a data folder's shared file may not)."""
    path, size, data = W.data_file_bytes(spec, large.folder(), limit=limits.max_upload_bytes())
    if data is None:  # the loader refuses it from its size, without reading it
        read_file(path, path.name, size, {}, "large", note=STAT_NOTE)
        return
    read_file(data, path.name, size, {"kind": "file", "filename": path.name}, "large", file=data, note=STAT_NOTE)


def checked(raw: dict[str, Any], schema: Schema) -> TableCheck | None:
    """The check of a connected large table under ``schema`` if this session ran it (None: not checked)."""
    return large.kept("check", schema.to_dict(), raw["id"])


def covered(chk: TableCheck, opts: dict[str, Any]) -> bool:
    """Whether the fixes chosen (``opts``, :func:`ui.data.fix_options`) cover every issue the check found."""
    shifts = opts.get("shift_by") or {}
    return ((not chk.non_numeric or opts.get("non_numeric") == "missing")
            and (not (chk.rows_with_bad if opts.get("non_numeric") else chk.rows_with_missing)
                 or opts.get("missing") == "drop")
            and (not chk.negative or (opts.get("negative") == "shift" and all(c in shifts for c in chk.negative)))
            and (not (chk.duplicate_ids or chk.missing_ids) or opts.get("duplicate_ids") == "regenerate"))


def request(raw: dict[str, Any], schema: Schema, opts: dict[str, Any]) -> None:
    """*Check and use this table* / *Use this table* on a connected large table (callback): the check of these
    roles first when this session has not run it (then the table is used if it needs no other fix), else the
    preparation with the fixes chosen."""
    ss = st.session_state
    req = {"id": raw["id"], "schema": schema.to_dict(), "options": opts}
    ss.pop("data_msg", None)
    ss.pop(FAILED_KEY, None)
    if checked(raw, schema) is None:
        ss[CHECK_KEY] = req
        return
    ss[APPLY_KEY] = req
    ss[TAB_KEY] = PROFILE_TAB


def _fail(step: str, err: PrdpError, req: dict[str, Any]) -> None:
    """Keep a failed step's message — what went wrong, what the operator can change — and its request for
    *Try again*; the Column roles view opens with the roles chosen."""
    note = umem.operator_note(err)
    keep_message("error", error_text(err) + (f" {md_escape(note)}" if note else ""), "roles")
    st.session_state[FAILED_KEY] = {"step": step, "req": req}
    st.session_state[NEXT_TAB_KEY] = ROLES_TAB


def _on_retry(rid: str, use: Callable[[str], None]) -> None:
    """*Try again*: the failed connection, or ``use(rid)`` — *Check and use this table* — with the roles now chosen
    (kept since the failure)."""
    failed = st.session_state.pop(FAILED_KEY, None)
    if not failed:
        return
    st.session_state.pop("data_msg", None)
    if failed["step"] == "connect":
        st.session_state[CONNECT_KEY] = failed["req"]
        return
    use(rid)


def _on_generated_id(rid: str, use: Callable[[str], None]) -> None:
    """*Generate the record ids from row numbers instead*: the roles chosen with a generated id, checked and
    used."""
    st.session_state[f"map_id_{rid}"] = None
    _on_retry(rid, use)


def way_on(raw: dict[str, Any], use: Callable[[str], None]) -> None:
    """After a failed step of the flow (its message is shown above): the ways on — try again, or (a record id
    chosen) generate the ids from row numbers; both call ``use(rid)``, the *Check and use this table* callback
    (:func:`ui.data.on_apply`). Disabled while a step runs."""
    failed = st.session_state.get(FAILED_KEY)
    if not failed or (failed["step"] != "connect" and failed["req"].get("id") != raw.get("id")):
        return
    c1, c2 = st.columns(2)
    c1.button("Try again", key="large_retry", icon=":material/refresh:", on_click=_on_retry, args=(raw["id"], use),
              disabled=busy())
    if failed["step"] != "connect" and failed["req"]["schema"].get("id_col"):
        c2.button("Generate the record ids from row numbers instead", key="large_generated_id",
                  icon=":material/format_list_numbered:", on_click=_on_generated_id, args=(raw["id"], use),
                  disabled=busy(), help="Skips the duplicate-id check of the id column (its heaviest part).")


def id_like(raw: dict[str, Any]) -> list[str]:
    """Columns of a connected table that identify rows (never offered as measures)."""
    return list(raw.get("id_like") or ())


# ---------------------------------------------------------------------------
# The steps, run at the end of the page
# ---------------------------------------------------------------------------


def run_pending(profile_box: Any, roles_box: Any) -> None:
    """Run the step a callback asked for — connect or check (into ``roles_box``), prepare (``profile_box``) —
    after the page was drawn with the flow's buttons disabled, then draw the page again."""
    ss = st.session_state
    if CONNECT_KEY in ss:
        with roles_box:
            _connect(ss.pop(CONNECT_KEY))
    elif CHECK_KEY in ss:
        with roles_box:
            _check(ss.pop(CHECK_KEY))
    elif APPLY_KEY in ss:
        with profile_box:
            _apply(ss.pop(APPLY_KEY))
    else:
        return
    st.rerun()


#: The samples the roles were guessed from, by file version (kept by the server, the most recent first).
_SAMPLES: OrderedDict[tuple[str, str, str], pd.DataFrame] = OrderedDict()
_SAMPLES_LOCK = threading.Lock()
MAX_SAMPLES = 8


def _guess_sample(spec: str, version_json: str, engine: str, stage: Callable[[str], None]) -> pd.DataFrame:
    """The uniform sample the roles are guessed from, read once per file version on the server (a heavy step:
    every row is numbered); a second session connecting the unchanged file takes it at once."""
    key = (spec, version_json, engine)
    with _SAMPLES_LOCK:
        if key in _SAMPLES:
            _SAMPLES.move_to_end(key)
            return _SAMPLES[key]
    eng = large.engine_for(spec, version_json, engine)
    with umem.heavy_step(stage):
        stage(f"reading a uniform sample of up to {large.GUESS_ROWS:,} rows to guess the column roles")
        df = eng.sample(large.GUESS_ROWS, 0)
    with _SAMPLES_LOCK:
        _SAMPLES[key] = df
        while len(_SAMPLES) > MAX_SAMPLES:
            _SAMPLES.popitem(last=False)
    return df


def raw_engine(raw: dict[str, Any]) -> Any:
    """The engine over a connected (not yet prepared) large table."""
    return large.engine_for(raw["spec"], large.stable_json(raw["version"]), raw["engine"])


def raw_table(spec: str, engine: str, version: list[list[Any]], *, name: str, pending: bool,
              stage: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """The Column roles view's table of a large source: its sample, guessed roles, id-like columns, row count."""
    eng = large.engine_for(spec, large.stable_json(version), engine)
    stage("counting the rows")
    n = eng.n_rows()
    if n == 0:
        raise DataError(f"{spec} has no rows.", hint="Name a table with records.")
    df = _guess_sample(spec, large.stable_json(version), engine, stage)
    return {"df": df, "name": name, "schema": guess_schema(df), "id_like": id_like_columns(df),
            "id": uuid.uuid4().hex[:8], "pending": pending, "large": True, "n": n, "spec": spec, "engine": engine,
            "version": version, "source": {"kind": large.KIND, "path": large.label(spec), "engine": engine}}


def _connect(req: dict[str, Any]) -> None:
    """Open the engine, count the rows, read the sample and guess the roles; the table waits on the Column roles
    view for *Check and use this table*."""
    spec, engine = req["spec"], req["engine"]
    rid = uuid.uuid4().hex[:8]

    def work(stage: Callable[[str], None]) -> dict[str, Any]:
        stage("checking the path: only files inside the data folder")
        version = large.file_version(spec)
        stage(f"opening {len(version)} file(s) with {engine}")
        return raw_table(spec, engine, version, name=large.label(spec), pending=True, stage=stage)

    try:
        raw = large.stats("connect", rid, f"Connecting {md_escape(spec)} (nothing is uploaded)", work, token=rid)
    except PrdpError as err:
        _fail("connect", err, req)
        return
    st.session_state["raw"] = raw
    keep_message("info", f"Connected **{md_escape(spec)}** ({large.count(raw['n'], 'rows')}, read in place by "
                 f"{engine}). The roles below were guessed from a uniform sample of up to {large.GUESS_ROWS:,} rows: "
                 "check them and press **Check and use this table**. Until then the active dataset stays "
                 f"**{md_escape(state.dataset().name)}**.", "roles")


def check(raw: dict[str, Any], schema: Schema) -> TableCheck:
    """The row checks of a connected large table under ``schema``, counted by the engine as a heavy step (once
    per roles and session; the engine's result cache answers an unchanged file)."""
    def work(stage: Callable[[str], None]) -> TableCheck:
        stage(f"counting missing, non-numeric and negative values and duplicate ids over "
              f"{large.count(raw['n'], 'rows')}")
        return raw_engine(raw).check(schema)

    return large.stats("check", schema.to_dict(), f"Checking every row of {md_escape(raw['name'])} in the engine",
                       work, token=raw["id"], heavy=True)


def _current(req: dict[str, Any]) -> dict[str, Any] | None:
    raw = st.session_state.get("raw")
    return raw if raw is not None and raw.get("id") == req["id"] and raw.get("large") else None


def _check(req: dict[str, Any]) -> None:
    """The one check of the roles chosen; a table it finds clean (or whose issues the fixes chosen cover) goes
    on to be prepared."""
    raw = _current(req)
    if raw is None:
        return
    try:
        chk = check(raw, Schema.from_dict(req["schema"]))
    except PrdpError as err:
        _fail("check", err, req)
        return
    if covered(chk, req["options"]):
        st.session_state[APPLY_KEY] = req
        st.session_state[NEXT_TAB_KEY] = PROFILE_TAB
        return
    keep_message("info", "The check of every row found rows to fix (below): choose the fixes, then press **Use "
                 "this table** — the table is not checked again.", "roles")


def _apply(req: dict[str, Any]) -> None:
    """Make a connected large table the active dataset: prepare it in the engine (the fixes chosen), profile its
    measures and give it its starting policy. On error the previous dataset stays active, the roles stay, and
    the Column roles view says what to do."""
    raw = _current(req)
    if raw is None:
        return
    source = large.source_dict(raw["spec"], raw["engine"], req["schema"], req["options"], raw["version"])

    def work(stage: Callable[[str], None]) -> tuple[EngineDataset, dict[str, Any]]:
        stage("applying the roles and fixes in the engine (rows dropped, public shifts added, ids)")
        ds, src = large.open_source(source)
        stage(f"counting the records kept ({large.count(ds.n, 'records')})")
        stage(f"profiling {len(ds.schema.measures)} measure(s) for the starting thresholds")
        from prdp_core.data.profile import profile_dataset

        return ds, {**src, "profile": profile_dataset(ds)}

    try:
        ds, src = large.stats("apply", req, f"Preparing {md_escape(raw['name'])}", work, token=raw["id"], heavy=True)
    except PrdpError as err:
        _fail("apply", err, req)
        return
    src = dict(src)
    prof = src.pop("profile")
    large.keep_profile(state.dataset_token(ds, src), prof)
    state.set_dataset(ds, src)
    raw["pending"] = False
    keep_message("success", f"Active dataset: {DATASET}. Its records stay in the file; every page computes "
                 "its statistics in the engine.", "profile")


def raw_from_source(source: dict[str, Any]) -> None:
    """The Column roles view of the active large dataset (after a study import or a restored session): its
    sample and roles, not pending."""
    spec, engine = str(source["path"]), str(source.get("engine") or "duckdb")
    raw = raw_table(spec, engine, source.get("version") or large.file_version(spec),
                    name=state.active_dataset().name, pending=False)
    st.session_state["raw"] = {**raw, "schema": Schema.from_dict(dict(source["schema"]))}


__all__ = ["APPLY_KEY", "CHECK_KEY", "CONNECT_KEY", "FAILED_KEY", "NEXT_TAB_KEY", "UNCHECKED", "busy", "check",
           "checked", "covered", "id_like", "on_connect", "raw_engine", "raw_from_source", "raw_table", "request",
           "run_pending", "spec_from_widgets", "switch_tab", "way_on"]
