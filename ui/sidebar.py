"""The shared sidebar: active dataset, active policy, mode and the learn toggle."""

from __future__ import annotations

import streamlit as st

from . import state
from .common import md_escape


def render() -> None:
    ds = state.dataset()
    with st.sidebar:
        st.markdown("### Active dataset")
        st.markdown(f"**{md_escape(ds.name)}**  \n{ds.n:,} records  \nMeasures: {md_escape(', '.join(ds.schema.measures))}")
        if ds.schema.owner_col:
            st.caption(f"Owner: {md_escape(ds.schema.owner_col)}")
        policy = st.session_state.get("policy_summary")
        st.markdown("### Active policy")
        st.markdown(policy if policy else "_none yet: design one on the Policy designer page_")
        st.markdown("### Mode")
        st.radio("Mode", list(state.MODES), format_func=state.MODES.get, key="mode", label_visibility="collapsed",
                 help="Teaching: runs are seeded and show true values and errors — for teaching and review only, "
                      "never for a real release. Review: true values and per-record losses are hidden.")
        if st.session_state["mode"] == "teaching":
            st.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key="seed",
                            help="Seeded runs are reproducible; they are for teaching and review only.")
        st.toggle("Learn: explain each concept", key="learn")
