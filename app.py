"""PrDP Explorer: design, preview and run per-record privacy policies.

Entry point: ``streamlit run app.py`` (or ``make run``). Pages live in pages/ and are
registered here with st.navigation; the sidebar shared by every page shows the
active dataset, the active policy and the mode.
"""

from __future__ import annotations

import streamlit as st

from ui import memory, sidebar, state, study

st.set_page_config(page_title="PrDP Explorer", page_icon=":material/shield_person:", layout="wide")

state.init_state()
memory.track_session()  # an ended session's memory is released after Streamlit's reconnect window
study.keep_settings()  # pages keep their settings while another page is on screen

PAGES = {
    "Prepare": [
        st.Page("pages/data.py", title="Data", icon=":material/table:", default=True),
    ],
    "Policies": [
        st.Page("pages/policy_designer.py", title="Policy designer", icon=":material/tune:"),
        st.Page("pages/budget_functions.py", title="Budget functions", icon=":material/function:"),
        st.Page("pages/personalized.py", title="Personalized DP", icon=":material/groups:"),
    ],
    "Release": [
        st.Page("pages/tradeoffs.py", title="Trade-offs", icon=":material/balance:"),
        st.Page("pages/run.py", title="Run", icon=":material/play_circle:"),
        st.Page("pages/analyst_tiers.py", title="Analyst tiers", icon=":material/stairs:"),
    ],
    "Outputs": [
        st.Page("pages/study.py", title="Study", icon=":material/inventory_2:"),
    ],
    "Learn": [
        st.Page("pages/concepts.py", title="Concepts", icon=":material/school:"),
    ],
}

nav = st.navigation(PAGES)
nav.run()
# after the page, so the sidebar shows what the page just set (e.g. the active policy)
sidebar.render()
