"""PrDP Explorer: design, preview and run per-record privacy policies.

Entry point: ``streamlit run app.py`` (or ``make run``). Pages live in app_pages/ and are
registered here with st.navigation; the sidebar shared by every page shows the
active dataset, the active policy and the mode. The URL carries the page (its path), the
session's design (the ``policy`` parameter, ui/links.py) and the session key (``s``, ui/durable.py),
through which a server restart loses no one's work.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui import accessibility, durable, glossary, links, memory, session_design, sidebar, state, study

# A local file, not a :material/…: icon: Streamlit's frontend fetches a Material favicon from a public font
# host, and the app must reach nothing outside its server (docs/security.md, "Offline").
FAVICON = Path(__file__).resolve().parent / "assets" / "favicon.svg"

st.set_page_config(page_title="PrDP Explorer", page_icon=str(FAVICON), layout="wide")

memory.use_system_heap()  # Arrow's memory (pandas' text columns) is returned when a session ends
state.init_state()
durable.start(session_design.restore_design, links.PARAMS)  # the URL's key restores its saved session
links.restore()  # a session opened from a shared link starts with the link's design
memory.track_session()  # an ended session's memory is released after Streamlit's reconnect window
study.keep_settings()  # pages keep their settings while another page is on screen

PAGES = {
    "Start": [
        st.Page("app_pages/start_here.py", title="Start here", icon=":material/flag:"),
    ],
    "Prepare": [
        st.Page("app_pages/data.py", title="Data", icon=":material/table:", default=True),
    ],
    "Policies": [
        st.Page("app_pages/policy_designer.py", title="Policy designer", icon=":material/tune:"),
        st.Page("app_pages/budget_functions.py", title="Budget functions", icon=":material/function:"),
        st.Page("app_pages/personalized.py", title="Personalized DP", icon=":material/groups:"),
    ],
    "Release": [
        st.Page("app_pages/tradeoffs.py", title="Trade-offs", icon=":material/balance:"),
        st.Page("app_pages/run.py", title="Run", icon=":material/play_circle:"),
        st.Page("app_pages/analyst_tiers.py", title="Analyst tiers", icon=":material/stairs:"),
    ],
    "Outputs": [
        st.Page("app_pages/study.py", title="Study", icon=":material/inventory_2:"),
        st.Page("app_pages/board.py", title="Board", icon=":material/dashboard:"),
    ],
    "Learn": [
        st.Page("app_pages/concepts.py", title="Concepts", icon=":material/school:"),
        st.Page("app_pages/glossary.py", title="Glossary", icon=":material/menu_book:"),
    ],
}

nav = st.navigation(PAGES)
accessibility.apply(nav.url_path)  # readable captions, focus on the page's heading, named charts
durable.show_message(nav.url_path)
links.show_message(nav.url_path)
nav.run()
config = links.sync()  # the URL carries the design as the page left it
durable.save(config)  # the store keeps the data source, design and ledger: a restart loses none of them
# after the page, so the sidebar shows what the page just set (e.g. the active policy)
sidebar.render()
glossary.page_terms(nav.url_path or "data")  # the page's terms, linked to the Glossary page
memory.freeze_loaded(nav.url_path)  # the code a page loaded is out of the per-run garbage collection's way
