"""The data source of a study: described from the session for an export, loaded for an import.

:func:`data_section` writes the active data source as a study's ``data`` section (a sample, a file,
or a table of the server's data folder read in place by an engine); :func:`dataset_for` loads the
dataset a study names — through the memory guard, before the session is touched — unless it is the
active one; :func:`set_raw` gives the Data page's role editor the imported source.
"""

from __future__ import annotations

from typing import Any, Mapping

import streamlit as st

import prdp_core
from prdp_core.core.errors import ConfigError, DataError, PrdpError
from prdp_core.data import Dataset, Schema, load_table, memory, prepare_dataset
from prdp_core.study.config import Study, prepare_section

from . import state


def data_section() -> dict[str, Any]:
    """The study's ``data`` section for the active data source (sample, file or a table of the data folder)."""
    src = state.source()
    d: dict[str, Any]
    if src.get("kind") == "large":  # a table of the data folder, read in place (the path is relative to it)
        d = {"path": str(src["path"]), "engine": str(src.get("engine") or "duckdb")}
    elif src.get("kind") == "sample":
        d = {"sample": src["name"], "seed": int(src.get("seed", 0) or 0)}
        if src.get("n") is not None:
            d["n"] = int(src["n"])
    else:
        d = {"path": str(src.get("filename") or "data.csv")}
    if src.get("schema") is not None:
        s = src["schema"]
        d["schema"] = {"id": s.get("id_col"), "measures": list(s.get("measures") or ()),
                       "groups": list(s.get("groups") or ()), "owner": s.get("owner_col")}
    if src.get("options"):
        d["prepare"] = prepare_section(src["options"])
    return d


def _same_source(src: Mapping[str, Any], cfg_data: Mapping[str, Any]) -> bool:
    cur = data_section() if src else {}
    want = dict(cfg_data)
    return {k: v for k, v in cur.items() if v not in (None, {}, [])} == \
        {k: v for k, v in want.items() if v not in (None, {}, [])}


def dataset_for(study: Study, data_bytes: bytes | None, data_name: str | None
                 ) -> tuple[Any, dict[str, Any] | None]:
    """The dataset the study needs and its source dict; (None, None) when the active one fits. A study
    held by an engine (``data.engine``: duckdb or auto) reads its path in the server's data folder, in
    place (:func:`ui.large.open_source`)."""
    src = study.data
    if _same_source(state.source(), src.to_dict()) and data_bytes is None:
        return None, None
    opts = dict(src.prepare)
    if src.path is not None and src.engine != "memory" and data_bytes is None:
        from . import large

        if src.schema is None:
            raise ConfigError("data.schema: a study of a large dataset names its column roles (they are not guessed "
                              "from the whole table).", hint="Add data.schema (id, measures, groups, owner).")
        try:
            return large.open_source({"path": src.path, "engine": "duckdb", "schema": src.schema, "options": opts})
        except PrdpError as err:
            raise type(err)(f"data.path: {err.message}", hint=err.hint or "Put the table in the server's data "
                                                                             f"folder ({large.folder()}).") from None
    if src.sample is not None:  # the sample (or its table) comes through the memory guard
        source: dict[str, Any] = {"kind": "sample", "name": src.sample, "n": src.n, "seed": src.sample_seed}
        if src.schema is None and not opts:
            return state.sample_dataset(src.sample, src.n, src.sample_seed), source
        df = state.sample_frame(src.sample, src.n, src.sample_seed)
        schema = Schema.from_dict(src.schema) if src.schema else prdp_core.data.samples.info(src.sample).schema
        ds = prepare_dataset(df, schema, name=src.sample, **opts)
        return ds, {**source, "schema": schema.to_dict(), "options": opts}
    if data_bytes is None:
        raise DataError(f"data.path: this study reads the file '{src.path}'. Upload it with the config, or make it "
                        "the active dataset on the Data page first.", hint="The current session is unchanged.")
    name = data_name or src.path or "data.csv"
    memory.guard_table(file_bytes=len(data_bytes))
    df = load_table(data_bytes, filename=name, guard=memory.guard_table)
    memory.guard_table(rows=len(df), columns=df.shape[1])
    schema = Schema.from_dict(src.schema) if src.schema else prdp_core.guess_schema(df)
    ds = prepare_dataset(df, schema, name=name, **opts)
    return ds, {"kind": "file", "filename": name, "schema": schema.to_dict(), "options": opts}


def set_raw(ds: Dataset, source: Mapping[str, Any], data_bytes: bytes | None, data_name: str | None) -> None:
    """The Data page's role editor for an imported data source (the table before preparation)."""
    import uuid

    from . import data as udata

    if source.get("kind") == "large":
        st.session_state.pop("raw", None)  # the Column roles view reconnects the table when opened
        return
    if source.get("kind") == "sample":
        udata.raw_from_sample(source["name"], source.get("n"), int(source.get("seed", 0)))
        if source.get("schema"):
            raw = st.session_state["raw"]
            raw["schema"] = Schema.from_dict(source["schema"])
            raw["source"] = {k: v for k, v in source.items() if k not in ("schema", "options")}
        return
    df = load_table(data_bytes or b"", filename=data_name or source.get("filename"), guard=memory.guard_table)
    st.session_state["raw"] = {"df": df, "name": source.get("filename"), "schema": Schema.from_dict(source["schema"]),
                               "source": {"kind": "file", "filename": source.get("filename")},
                               "id": uuid.uuid4().hex[:8], "upload": source.get("upload")}
