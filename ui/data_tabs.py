"""The Data page's tabs and its pending message, which the Data page's actions (:mod:`ui.data`) and those of large
datasets (:mod:`ui.large`) both set: the tab on screen (``st.session_state[TAB_KEY]``) and the message the page
shows next (``st.session_state["data_msg"]``, shown by :func:`ui.data.message`)."""

from __future__ import annotations

import streamlit as st

from prdp_core.core.errors import PrdpError

from .common import md_escape

#: The Data page's tabs (labels) and the session key of the one on screen: an upload opens the Column
#: roles view, *Use this table* the profile.
PROFILE_TAB = ":material/insights: Profile"
SAMPLES_TAB = ":material/dataset: Samples"
UPLOAD_TAB = ":material/upload_file: Upload a file"
LARGE_TAB = ":material/database: Large dataset"
ROLES_TAB = ":material/view_column: Column roles"
TABS = (PROFILE_TAB, SAMPLES_TAB, UPLOAD_TAB, LARGE_TAB, ROLES_TAB)
TAB_KEY = "data_tab"


#: Where a message names the active dataset: filled in when the message is shown, in the mode of that moment
#: (a message written in teaching mode and shown after a switch to review holds no record count).
DATASET = "\x00dataset\x00"


def keep_message(kind: str, text: str, where: str) -> None:
    """Keep ``text`` for the page to show (``DATASET`` in it stands for the active dataset's description) in one
    part of the page (``where``)."""
    st.session_state["data_msg"] = {"kind": kind, "text": text, "where": where}


def error_text(err: PrdpError) -> str:
    """A refusal as the Data page shows it: its title, then its message."""
    return f"**{err.title}.** {md_escape(err)}"
