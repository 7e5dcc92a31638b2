"""The server's board database, opened once for every session: the Board page's board (:mod:`ui.board`) and the
store of durable sessions (:mod:`ui.durable`), which keeps its tables in the same database."""

from __future__ import annotations

import streamlit as st

from prdp_core.board import workshop as W
from prdp_core.board.store import BoardStore


@st.cache_resource(show_spinner=False, max_entries=4)
def _store(url: str, key: str | None) -> BoardStore:
    return BoardStore(url, facilitator_key=key)


def store() -> BoardStore:
    """The server's board (``PRDP_BOARD_URL`` or the workshop folder's SQLite file); StoreError
    when it cannot be opened (not cached: the next run tries again)."""
    return _store(W.board_url(), W.facilitator_key())
