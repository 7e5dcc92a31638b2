"""Data-source actions of the Data page, run as widget callbacks.

Callbacks run before the page script, so every chart of the rerun already shows the
new dataset. Each action either replaces the active dataset or leaves it untouched and
stores a message (``st.session_state["data_msg"]``) for the page to show.
"""

from __future__ import annotations

import uuid
from typing import Any

import pandas as pd
import streamlit as st

import prdp_core
from prdp_core.data import (Dataset, Schema, check_table, guess_schema, load_table, numeric_columns,
                            prepare_dataset)
from prdp_core.errors import PrdpError

from . import memory, state


@st.cache_data(show_spinner=False, max_entries=4, ttl=state.PUBLIC_CACHE_TTL_S)
def _sample_frame(name: str, n: int | None, seed: int) -> pd.DataFrame:
    return prdp_core.samples.load(name, n=n, seed=seed)


def _msg(kind: str, text: str, where: str) -> None:
    st.session_state["data_msg"] = {"kind": kind, "text": text, "where": where}


def message(where: str) -> None:
    """Show the pending message addressed to one part of the page."""
    m = st.session_state.get("data_msg")
    if m and m["where"] == where:
        if m["kind"] == "error":
            st.error(m["text"])
            st.caption(f"The active dataset is still **{state.dataset().name}**.")
        elif m["kind"] == "info":
            st.info(m["text"])
        else:
            st.success(m["text"])


def _error_text(err: PrdpError) -> str:
    return f"**{err.title}.** {err}"


def raw_from_sample(name: str, n: int | None, seed: int) -> None:
    """Put a sample's raw table (with its documented schema) behind the role editor."""
    st.session_state["raw"] = {
        "df": _sample_frame(name, n, seed), "name": name, "schema": prdp_core.samples.info(name).schema,
        "source": {"kind": "sample", "name": name, "n": n, "seed": seed}, "id": uuid.uuid4().hex[:8],
    }


def sample_size_arg(name: str, n: int) -> int | None:
    """The ``n`` to pass to prdp_core.samples.load for the size typed in the widget."""
    meta = prdp_core.samples.info(name)
    if meta.max_n is not None and meta.default_n == meta.max_n:
        return None  # fixed-size sample
    if meta.kind == "real" and n == 0:
        return None  # all rows
    return int(n)


def on_load_sample() -> None:
    ss = st.session_state
    name = ss["sample_name"]
    n_arg = sample_size_arg(name, int(ss.get(f"sample_n_{name}", 0) or 0))
    seed = int(ss.get("sample_seed", 0))
    try:
        meta = prdp_core.samples.info(name)
        # model: records × columns of the sample (a real sample of all rows: its size is not known before reading)
        memory.guard("sample", rows=n_arg or meta.default_n or 0,
                     columns=len(meta.schema.measures) + len(meta.schema.groups) + 2)
        ds = state.cached_sample(name, n_arg, seed)
    except PrdpError as err:
        _msg("error", _error_text(err), "samples")
        return
    state.set_dataset(ds, {"kind": "sample", "name": name, "n": n_arg, "seed": seed})
    raw_from_sample(name, n_arg, seed)
    _msg("success", f"Loaded {ds.describe()}.", "samples")


def on_upload() -> None:
    up = st.session_state.get("upload")
    if up is None:
        return
    try:
        memory.guard("load", rows=up.size, columns=1)  # model: bytes of the file
        df = load_table(up, filename=up.name)
        memory.guard("prepare", rows=len(df), columns=df.shape[1])
    except PrdpError as err:
        _msg("error", _error_text(err), "upload")
        return
    schema = guess_schema(df)
    st.session_state["raw"] = {"df": df, "name": up.name, "schema": schema,
                               "source": {"kind": "file", "filename": up.name}, "id": uuid.uuid4().hex[:8]}
    # Apply at once when the guessed roles need no decision; otherwise ask for one.
    try:
        if not check_table(df, schema).ok:
            raise PrdpError("needs attention")
        ds = prepare_dataset(df, schema, name=up.name)
    except PrdpError as err:
        if not schema.measures and not numeric_columns(df):
            _msg("error", _error_text(err), "upload")  # nothing to decide: no column can be a measure
            return
        _msg("info", f"Loaded **{up.name}** ({len(df):,} rows), but it needs your decision before it can be used: "
                     "open the **Column roles** tab.", "upload")
        return
    state.set_dataset(ds, {"kind": "file", "filename": up.name, "schema": schema.to_dict(), "options": {}})
    _msg("success", f"Active dataset: {ds.describe()}. Column roles were guessed from the data: check them in the "
                    "**Column roles** tab.", "upload")


def schema_from_widgets(rid: str) -> Schema:
    ss = st.session_state
    return Schema(id_col=ss.get(f"map_id_{rid}"), measures=tuple(ss.get(f"map_measures_{rid}") or ()),
                  groups=tuple(ss.get(f"map_groups_{rid}") or ()), owner_col=ss.get(f"map_owner_{rid}"))


def fix_options(rid: str) -> dict[str, Any]:
    ss = st.session_state
    opts: dict[str, Any] = {}
    if ss.get(f"fix_nonnum_{rid}"):
        opts["non_numeric"] = "missing"
    if ss.get(f"fix_missing_{rid}"):
        opts["missing"] = "drop"
    if ss.get(f"fix_neg_{rid}") == "shift":
        opts["negative"] = "shift"
        shifts = {k[len(f"fix_shift_{rid}_"):]: float(v) for k, v in ss.items()
                  if isinstance(k, str) and k.startswith(f"fix_shift_{rid}_") and v is not None}
        if shifts:
            opts["shift_by"] = shifts
    if ss.get(f"fix_missgroup_{rid}"):
        opts["missing_groups"] = "label"
    if ss.get(f"fix_dup_{rid}"):
        opts["duplicate_ids"] = "regenerate"
    return opts


def on_apply(rid: str) -> None:
    raw = st.session_state.get("raw")
    if raw is None or raw["id"] != rid:
        return
    schema = schema_from_widgets(rid)
    opts = fix_options(rid)
    try:
        memory.guard("prepare", rows=len(raw["df"]), columns=raw["df"].shape[1])
        ds = prepare_dataset(raw["df"], schema, name=raw["name"], **opts)
    except PrdpError as err:
        _msg("error", _error_text(err), "roles")
        return
    state.set_dataset(ds, {**raw["source"], "schema": schema.to_dict(), "options": opts})
    _msg("success", f"Active dataset: {ds.describe()}.", "roles")


def reproduce_code(source: dict[str, Any], ds: Dataset) -> str:
    """prdp_core code that rebuilds the active dataset and its profile."""
    if source.get("kind") == "sample" and "schema" not in source:
        n = source.get("n")
        load = (f'ds = prdp_core.samples.load_dataset({source["name"]!r}'
                + (f", n={n}" if n is not None else "") + f', seed={source.get("seed", 0)})')
    else:
        if source.get("kind") == "sample":
            n = source.get("n")
            read = (f'df = prdp_core.samples.load({source["name"]!r}' + (f", n={n}" if n is not None else "")
                    + f', seed={source.get("seed", 0)})')
        else:
            read = f'df = prdp_core.load_table({source.get("filename", "data.csv")!r})'
        raw_schema = source.get("schema", ds.schema.to_dict())
        opts = "".join(f", {k}={v!r}" for k, v in (source.get("options") or {}).items())
        load = (f"{read}\nschema = prdp_core.Schema(id_col={raw_schema['id_col']!r}, "
                f"measures={tuple(raw_schema['measures'])!r},\n"
                f"                         groups={tuple(raw_schema['groups'])!r}, "
                f"owner_col={raw_schema['owner_col']!r})\n"
                f"ds = prdp_core.prepare_dataset(df, schema, name={ds.name!r}{opts})")
    return f"""import prdp_core

{load}
profile = prdp_core.profile.profile_dataset(ds)
print(profile.table())"""


def public_shift_default(minimum: float) -> float:
    """A round public-looking shift covering ``minimum`` (the next power of ten above −minimum)."""
    import math

    need = -float(minimum)
    return float(10 ** math.ceil(math.log10(need))) if need > 0 else 0.0
