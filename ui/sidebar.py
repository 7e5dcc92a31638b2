"""The shared sidebar: active dataset, active policy, mode and the learn toggle."""

from __future__ import annotations

import streamlit as st

from . import durable, mode, review, state
from .common import md_escape


def render() -> None:
    ds = state.active_dataset()
    with st.sidebar:
        st.markdown("### Active dataset")
        size = f"{ds.n:,} records  \n" if review.shows_records("record count", note=False) else ""
        st.markdown(f"**{md_escape(ds.name)}**  \n{size}Measures: {md_escape(', '.join(ds.schema.measures))}")
        if ds.schema.owner_col:
            st.caption(f"Owner: {md_escape(ds.schema.owner_col)}")
        if state.source().get("kind") == "large":
            st.caption(":material/database: Large dataset: its records stay in the engine "
                       f"({md_escape(state.source().get('engine', 'duckdb'))}); statistics are computed there.")
        smp = state.page_sample()
        if smp:
            st.caption(f":material/science: This page works on a uniform sample of {review.count(smp['rows'], 'rows')} "
                       f"(seed {smp['seed']}).")
        # the policy made for this dataset only (a dataset change replaces it at once: ui.state.set_dataset)
        made_for_it = st.session_state.get("policy_token") == state.active_token()
        policy = st.session_state.get("policy_summary") if made_for_it else None
        st.markdown("### Active policy")
        st.markdown(policy if policy else "_none yet: design one on the Policy designer page_")
        st.markdown("### Mode")
        st.radio("Mode", list(state.MODES), format_func=state.MODES.get, key=mode.KEY, label_visibility="collapsed",
                 on_change=mode.on_choice,
                 help="Teaching: runs are seeded and show true values and errors — for teaching and review only, "
                      "never for a real release. Review: every statistic of the records is hidden (per-record "
                      "losses, true answers, errors, record counts, profiles, rows); the public policy "
                      "function, budgets and noisy answers stay. Leaving review mode asks for a confirmation; "
                      "loading a study, a link or a board entry never leaves it.")
        mode.confirmation()
        if st.session_state["mode"] == "teaching":
            st.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key="seed",
                            help="Seeded runs are reproducible; they are for teaching and review only.")
        st.toggle("Learn: explain each concept", key="learn")
        durable.sidebar_note()
