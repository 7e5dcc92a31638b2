"""A Streamlit script whose run takes a known time: the browser tests' check of ``wait_idle``.

A click on "Start" reruns the script, which sleeps :data:`RUN_SECONDS` before it writes
:data:`MARKER`; a wait that returns before the run has ended finds no marker on the page.
"""

from __future__ import annotations

import time

import streamlit as st

#: How long a run started by the button lasts (seconds).
RUN_SECONDS = 4.0
#: The text written once the run has ended.
MARKER = "The slow run has finished."

if st.button("Start"):
    time.sleep(RUN_SECONDS)
    st.write(MARKER)
