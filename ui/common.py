"""Small widgets every page uses: errors, learn notes, confidentiality notes, code expander."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import streamlit as st

from prdp_core.errors import PrdpError


def show_error(err: PrdpError) -> None:
    """Show an engine error as a message the user can act on (never a traceback)."""
    st.error(f"**{err.title}.** {err}")


@contextmanager
def guarded(what: str = "") -> Iterator[None]:
    """Run a block; show :class:`PrdpError` as a message and keep the rest of the page."""
    try:
        yield
    except PrdpError as err:
        show_error(err)


def learn(text: str) -> None:
    """A short explanation shown when the sidebar's "learn" toggle is on."""
    if st.session_state.get("learn"):
        st.info(text, icon=":material/school:")


def confidential(text: str = "") -> None:
    """Mark numbers that describe real records (confidential; for the designer only)."""
    st.caption(":material/lock: **Confidential:** these values describe real records. They are shown to the "
               "policy designer only and are left out of review-mode exports." + (f" {text}" if text else ""))


def download_button(label: str, data: bytes | str, *, where: Any = None, **kwargs: Any) -> None:
    """A download button (in ``where``, default the page) whose click does not rerun the app.

    Streamlit serves the payload from its media file store, and a click that reruns the session
    first drops the session's references to its files; when other sessions finish two runs before
    the browser's request arrives (a busy server), the file is deleted and the browser cancels the
    download. With ``on_click="ignore"`` the click only downloads: the file stays referenced."""
    (where if where is not None else st).download_button(label, data, on_click="ignore", **kwargs)


def code_expander(code: str, label: str = "Reproduce in Python") -> None:
    """The prdp_core code that reproduces what the page shows."""
    with st.expander(label, icon=":material/code:"):
        st.code(code.strip() + "\n", language="python")


def seeded_notice(seed: int) -> None:
    """Say that a run is seeded: reproducible, for teaching and review, never a real release."""
    st.caption(f":material/science: Seeded run (seed {seed}): reproducible and meant for teaching and review, "
               "not for a real release.")


def readable(x: float) -> str:
    """A number for tables: thousands separators for large values, 4 significant digits otherwise."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if v != v:
        return "–"
    if abs(v) >= 1e4:
        return f"{v:,.0f}"
    return f"{v:.4g}"
