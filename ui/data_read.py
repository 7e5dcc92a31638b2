"""Reading a file's table for the Data page's Column roles view: an upload (:func:`ui.data.on_upload`) or a SAS,
Stata or SPSS file of the server's data folder (:func:`ui.large.read_stat_file`) — read by the loader under the memory
guard and the upload limits, its roles guessed, pending until *Use this table*."""

from __future__ import annotations

import uuid
from typing import Any

import streamlit as st

from prdp_core.core.errors import PrdpError
from prdp_core.data import memory
from prdp_core.data.dataset import guess_schema, load_table, numeric_columns, validate_schema

from . import review, state
from .common import md_escape
from .data_tabs import ROLES_TAB, TAB_KEY, error_text, keep_message


def read_file(content: Any, name: str, size: int, source: dict[str, Any], where: str, *, file: Any = None,
              note: str = "") -> None:
    """Read a file's table (``content``: an upload, bytes or a path, of ``size`` bytes) with the loader, under the
    memory guard and the upload limits, and open the Column roles view with the guessed roles, pending; a refusal
    is shown in the part of the page ``where`` (followed by ``note``). ``file``: the upload (or bytes) the server
    keeps once the table is used (:mod:`ui.durable`)."""
    ss = st.session_state
    try:
        memory.guard_table(file_bytes=size)
        df = load_table(content, filename=name, guard=memory.guard_table)
        memory.guard_table(rows=len(df), columns=df.shape[1])
        schema = guess_schema(df)  # refuses columns that can play no role (lists, records, binary)
        if not schema.measures and not numeric_columns(df):
            validate_schema(df, schema)  # no column can be a measure: refused with that message
    except PrdpError as err:
        keep_message("error", error_text(err) + (f" {note}" if note else ""), where)
        return
    ss["raw"] = {"df": df, "name": name, "schema": schema, "source": source, "id": uuid.uuid4().hex[:8],
                 "pending": True, **({"file": file} if file is not None else {})}
    ss[TAB_KEY] = ROLES_TAB
    size_text = review.count(len(df), "rows")
    keep_message("info", f"Read **{md_escape(name)}** ({size_text}). The roles below were guessed from the data: "
                 "check them and press **Use this table**. Until then the active dataset stays "
                 f"**{md_escape(state.dataset().name)}**." + (f" {note}" if note else ""), "roles")
