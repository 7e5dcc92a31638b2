"""Data-source actions of the Data page, run as widget callbacks.

Callbacks run before the page script, so every chart of the rerun already shows the
new dataset. Each action either replaces the active dataset or leaves it untouched and
stores a message (``st.session_state["data_msg"]``, :func:`ui.data_tabs.keep_message`) for the page to show.
The page's tabs are :mod:`ui.data_tabs`' (``TABS``, ``TAB_KEY``, the labels), named here too.
"""

from __future__ import annotations

import uuid
from typing import Any

import streamlit as st

import prdp_core
from prdp_core.core.errors import PrdpError
from prdp_core.data import memory
from prdp_core.data.dataset import (
    Schema,
    TableCheck,
    check_table,
    prepare_dataset,
    require_shifts,
    shift_text,
    validate_schema,
)

from . import state
from .common import md_escape
from .data_read import read_file
from .data_tabs import DATASET, PROFILE_TAB, ROLES_TAB, TAB_KEY, TABS, error_text, keep_message
from .page_state import PageState


def message(where: str) -> None:
    """Show the pending message addressed to one part of the page."""
    m = st.session_state.get("data_msg")
    if m and m["where"] == where:
        text = m["text"]
        if DATASET in text:
            text = text.replace(DATASET, md_escape(describe(state.active_dataset())))
        if m["kind"] == "error":
            st.error(text)
            st.caption(f"The active dataset is still **{md_escape(state.active_dataset().name)}**.")
        elif m["kind"] == "info":
            st.info(text)
        else:
            st.success(text)


def raw_from_sample(name: str, n: int | None, seed: int) -> None:
    """Put the raw table (with its documented schema) of the active sample — admitted by the memory guard when
    it became active — behind the role editor."""
    st.session_state["raw"] = {
        "df": state.sample_frame(name, n, seed, admitted=True), "name": name,
        "schema": prdp_core.data.samples.info(name).schema,
        "source": {"kind": "sample", "name": name, "n": n, "seed": seed}, "id": uuid.uuid4().hex[:8],
    }


def sample_size_arg(name: str, n: int) -> int | None:
    """The ``n`` to pass to prdp_core.data.samples.load for the size typed in the widget."""
    meta = prdp_core.data.samples.info(name)
    if meta.max_n is not None and meta.default_n == meta.max_n:
        return None  # fixed-size sample
    if meta.kind == "real" and n == 0:
        return None  # all rows
    return int(n)


def on_load_sample() -> None:
    """Callback of *Load sample*: a sample (documented roles, no guess) becomes active at once."""
    ss = st.session_state
    name = ss["sample_name"]
    n_arg = sample_size_arg(name, int(ss.get(f"sample_n_{name}", 0) or 0))
    seed = int(ss.get("sample_seed", 0))
    try:
        ds = state.sample_dataset(name, n_arg, seed)  # asks the memory guard first
    except PrdpError as err:
        keep_message("error", error_text(err), "samples")
        return
    state.set_dataset(ds, {"kind": "sample", "name": name, "n": n_arg, "seed": seed})
    raw_from_sample(name, n_arg, seed)
    keep_message("success", f"Loaded {DATASET}.", "samples")


def on_upload() -> None:
    """Callback of the file uploader: read the file and open the Column roles view with the guessed roles.

    Nothing becomes active here, however clean the file: guessed roles (a row-number column taken for a
    measure, an id taken for a group) are shown for confirmation, and the previous dataset stays active
    until *Use this table* (:func:`on_apply`)."""
    up = st.session_state.get("upload")
    if up is None:
        return
    read_file(up, up.name, up.size, {"kind": "file", "filename": up.name}, "upload", file=up)


def schema_from_widgets(rid: str) -> Schema:
    ss = st.session_state
    return Schema(id_col=ss.get(f"map_id_{rid}"), measures=tuple(ss.get(f"map_measures_{rid}") or ()),
                  groups=tuple(ss.get(f"map_groups_{rid}") or ()), owner_col=ss.get(f"map_owner_{rid}"))


def shift_key(rid: str, measure: str) -> str:
    """Session key of the public constant typed for ``measure`` of the raw table ``rid``."""
    return f"fix_shift_{rid}_{measure}"


def fix_options(rid: str, schema: Schema | None = None) -> dict[str, Any]:
    """The :func:`~prdp_core.data.prepare_dataset` options chosen on the Column roles view. A shift adds,
    to each measure of ``schema``, exactly the public constant typed for it (``shift_by``); a measure
    without one is left to :func:`on_apply` to refuse."""
    ss = st.session_state
    opts: dict[str, Any] = {}
    if ss.get(f"fix_nonnum_{rid}"):
        opts["non_numeric"] = "missing"
    if ss.get(f"fix_missing_{rid}"):
        opts["missing"] = "drop"
    if ss.get(f"fix_neg_{rid}") == "shift":
        opts["negative"] = "shift"
        measures = schema.measures if schema is not None else ()
        shifts = {m: float(ss[shift_key(rid, m)]) for m in measures if ss.get(shift_key(rid, m)) is not None}
        if shifts:
            opts["shift_by"] = shifts
    if ss.get(f"fix_missgroup_{rid}"):
        opts["missing_groups"] = "label"
    if ss.get(f"fix_dup_{rid}"):
        opts["duplicate_ids"] = "regenerate"
    return opts


def check_raw(raw: dict[str, Any], schema: Schema) -> TableCheck | None:
    """The row checks of the table behind the role editor: counted on the table in memory; for a large
    dataset, those the engine counted over every row when *Check and use this table* was pressed with these
    roles (None until then: :func:`ui.large_roles.checked`)."""
    if raw.get("large"):
        from . import large_roles

        return large_roles.checked(raw, schema)
    return check_table(raw["df"], schema)


def on_apply(rid: str) -> None:
    """Callback of *Use this table*: build the dataset from the raw table with the roles and fixes chosen;
    it becomes active (with its starting policy) only if it is valid, and the page opens its profile. A large
    dataset's roles are checked once in its engine, then it is prepared there, with progress
    (:func:`ui.large_roles.request`)."""
    ss = st.session_state
    raw = ss.get("raw")
    if raw is None or raw["id"] != rid:
        return
    schema = schema_from_widgets(rid)
    opts = fix_options(rid, schema)
    try:
        if not raw.get("large"):
            memory.guard_table(rows=len(raw["df"]), columns=raw["df"].shape[1])
        chk = check_raw(raw, schema)
        if opts.get("negative") == "shift" and chk is not None:
            require_shifts(chk.negative, opts.get("shift_by", {}))
        if raw.get("large"):
            from . import large_roles

            validate_schema(raw["df"].head(0), schema)  # roles on column names (the engine checks the rows)
            large_roles.request(raw, schema, opts)
            return
        ds = prepare_dataset(raw["df"], schema, name=raw["name"], **opts)
    except PrdpError as err:
        keep_message("error", error_text(err), "roles")
        return
    if raw.get("file") is not None and not raw["source"].get("shared"):  # the server keeps the table (ui.durable)
        from . import durable

        raw["upload"] = durable.keep_upload(raw.pop("file"), raw["name"]).get("upload")
    kept = {"upload": raw["upload"]} if raw.get("upload") else {}
    state.set_dataset(ds, {**raw["source"], "schema": schema.to_dict(), "options": opts, **kept})
    raw["pending"] = False
    ss[TAB_KEY] = PROFILE_TAB
    keep_message("success", f"Active dataset: {DATASET}.", "profile")


def describe(ds: Any) -> str:
    """The dataset in one line, without its record count in review mode."""
    return ds.describe() if state.teaching() else f"{ds.name}, measures {', '.join(ds.schema.measures)}"


def shift_lines(ds: Any, source: dict[str, Any]) -> list[str]:
    """One line per shifted measure, as the profile shows it: ``"SALES shifted by +1,000 (public
    constant)"`` for a constant typed on the Data page (or declared in a config), else the shift −min the
    engine took from the smallest record — its size hidden in review mode, where it is a record's value."""
    declared = (source.get("options") or {}).get("shift_by") or {}
    out = []
    for m, c in ds.shifts.items():
        if m in declared:
            out.append(shift_text(m, c))
        elif state.teaching():
            out.append(shift_text(m, c, public=False))
        else:
            out.append(f"{m} shifted by a constant taken from its smallest record (hidden in review mode)")
    return out


#: The Data page's session state (:class:`ui.page_state.PageState`): the role editor's table (``raw``), cleared by
#: a study import that loads other data; the data source itself is the study's data section.
STATE = PageState(page="data", editors=("raw",))

__all__ = ["DATASET", "PROFILE_TAB", "ROLES_TAB", "STATE", "TABS", "TAB_KEY", "check_raw", "describe", "fix_options",
           "message", "on_apply", "on_load_sample", "on_upload", "raw_from_sample", "sample_size_arg",
           "schema_from_widgets", "shift_key", "shift_lines"]
