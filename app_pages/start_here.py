"""Start here: the guided path for first-time users and classes — Data, Policy, Preview, Run, Review — on the
active dataset (the default sample in a fresh session), one short step at a time with a "Next" at each."""

from __future__ import annotations

import streamlit as st

from ui import start_here as guide

st.title("Start here")
st.caption("Five short steps from the data to a report, on the default sample. Press **Next** at each step; the "
           "details are behind *Learn more*, and every step links to its full page.")
guide.render_step(guide.step())
