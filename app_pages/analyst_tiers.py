"""Analyst tiers page: one query, several analysts with different budgets, bounded total loss."""

from __future__ import annotations

import streamlit as st

from prdp_core.charts import multitier as mch
from prdp_core.core.errors import PrdpError
from prdp_core.mechanisms import multitier as mt
from ui import analyst_tiers as umt
from ui import large, private_suggest, state
from ui.common import code_expander, learn, md_escape, show_error
from ui.figures import show
from ui.reproduce import snippet_code

st.title("Analyst tiers")
st.caption("The public gets ε = 0.5, trusted researchers ε = 2, the agency ε = 8: what does that cost in total, "
           "and what accuracy does each tier get? Multi-tier release of *Multi-tier Differential Private Query "
           "Release* (Wang et al.): every lower tier is derived from a higher one without looking at the data again.")
learn("**Multi-tier release.** Several analysts ask the *same* question with different budgets. Answering each "
      "one independently costs the **sum** of the budgets if they share their answers. The multi-tier release "
      "answers the most trusted tier once and obtains every lower tier by adding more noise to that answer — so "
      "any group of analysts together learns no more than its most trusted member, while each tier still gets "
      "(almost) the accuracy of a release made just for it.")

large.records_needed("analyst_tiers", "The tiers' releases (they record the loss of every record the query reads)")
ds = state.dataset()
ss = st.session_state
umt.init(ds)

# ---------------------------------------------------------------------------
# 1. Tiers
# ---------------------------------------------------------------------------
st.subheader("1 · Tiers")
p1, p2 = st.columns([3, 1])
p1.selectbox("Start from a preset", list(umt.PRESETS), key="mt_preset", label_visibility="collapsed")
p2.button("Use this preset", key="mt_preset_apply", on_click=umt.on_preset, width="stretch")
edited = st.data_editor(
    ss["mt_tiers_base"], key=umt.editor_key(), num_rows="dynamic", hide_index=True, width="stretch",
    column_config={
        "name": st.column_config.TextColumn("Tier (analyst)", required=True, max_chars=40),
        "eps": st.column_config.NumberColumn("Budget ε", min_value=mt.MIN_EPS, max_value=mt.MAX_EPS, step=0.1,
                                             format="%.4g", help="Smaller ε = stronger privacy for the data subjects."),
    })
umt.remember_table(edited)  # the table as shown (edits included): kept while another page is open
try:
    tiers = mt.tiers_from(edited)
except PrdpError as err:
    show_error(err)
    st.stop()
tier_rows = umt.tiers_key(tiers)
st.caption("Tiers are ordered from the largest budget (most trusted) to the smallest. "
           + " · ".join(f"**{md_escape(t.name)}** ε = {t.eps:g}" for t in tiers))

# ---------------------------------------------------------------------------
# 2. Query and model
# ---------------------------------------------------------------------------
st.subheader("2 · Query and model")
st.radio("Model", ["central", "local"], key="mt_model", horizontal=True,
         format_func={"central": "Central: a curator adds noise to the exact answer",
                      "local": "Local: every record's owner randomizes its own category"}.get)
measures = list(ds.schema.measures)
fcols = umt.filter_columns(ds)
if ss.get("mt_filter_col") not in fcols:
    ss["mt_filter_col"] = umt.NO_FILTER
f1, f2, f3 = st.columns([2, 1, 2])
f1.selectbox("Optional filter: only records whose", fcols, key="mt_filter_col")
fcol = ss["mt_filter_col"]
if fcol != umt.NO_FILTER:
    is_group = fcol in ds.schema.groups
    ops = ["==", "!="] if is_group else [">=", "<=", ">", "<"]
    if ss.get("mt_filter_op") not in ops:
        ss["mt_filter_op"] = ops[0]
    f2.selectbox("is", ops, key="mt_filter_op")
    if is_group:
        vals = umt.filter_values(fcol)
        if vals is not None:
            if ss.get("mt_filter_val") not in vals:
                ss["mt_filter_val"] = vals[0] if vals else ""
            f3.selectbox("value (the sample's documented categories)", vals, key="mt_filter_val")
        else:
            if not isinstance(ss.get("mt_filter_val"), str):
                ss["mt_filter_val"] = ""
            f3.text_input("value", key="mt_filter_val",
                          help="Type the category: the app does not list the values present in the data.")
    else:
        if not isinstance(ss.get("mt_filter_val"), (int, float)):
            ss["mt_filter_val"] = 0.0
        f3.number_input("value", key="mt_filter_val", step=1.0)

if ss["mt_model"] == "central":
    c1, c2, c3 = st.columns(3)
    c1.radio("Query", ["count", "sum"], key="mt_query", horizontal=True,
             format_func={"count": "count of records", "sum": "sum of a measure"}.get)
    if ss["mt_query"] == "sum":
        c2.selectbox("Measure", measures, key="mt_measure")
        c3.number_input("Clipping bound U (one record adds at most U)", min_value=1.0, step=1.0, key="mt_clip",
                        help="Sensitivity of the sum: each record's value is clipped at U. Choose it from public "
                             "knowledge, without looking at the data; the default 100 is a round placeholder, not "
                             "read from the data.")
        with st.expander("Private suggestion of U (a DP percentile, charged to your ledger)"):
            private_suggest.bound_panel("mt_psugg", ss["mt_measure"], umt.adopt_private_clip)
    fams = list(umt.FAMILY_CHOICES)
    if ss["mt_query"] == "count":
        fams.remove("multiscale_geometric")
    if ss.get("mt_family") not in fams:
        ss["mt_family"] = fams[0]
    g1, g2 = st.columns([3, 1])
    g1.selectbox("Noise", fams, key="mt_family", format_func=lambda f: umt.FAMILY_CHOICES[f])
    if ss["mt_family"] == "gaussian":
        g2.number_input("δ (every tier)", min_value=1e-12, max_value=0.1, format="%.1e", key="mt_delta")
    learn("**Which noise?** The two-sided geometric noise is *exactly* optimal for counts, and its multi-tier "
          "version loses nothing: every tier's answer has the same distribution as a release made only for it. "
          "Laplace and Gaussian noise also have exact multi-tier versions. Some families have none (discrete "
          "Gaussian, staircase): see section 5.")
else:
    l1, l2, l3, l4, l5 = st.columns(5)
    l1.selectbox("Measure to categorize", measures, key="mt_local_measure")
    l2.number_input("Categories d", min_value=2, max_value=256, step=1, key="mt_d")
    l3.selectbox("Bins", list(mt.BIN_SCALES), key="mt_scale",
                 format_func=lambda s: {"log": "equal width on log(1+v)", "linear": "equal width"}[s])
    l4.number_input("Top of the range U (public)", min_value=1.0, max_value=1e15, step=1000.0, format="%g",
                    key="mt_top", help="Declare it from public knowledge, never from the data: the category edges "
                                       "depend on d, the bins and U only. Larger values fall in the top category.")
    l5.selectbox("Templates", list(mt.VARIANTS), key="mt_variant", format_func=lambda v: mt.VARIANTS[v])
    learn("**Local model.** Each record's owner reports a random *subset* of the d categories that contains its "
          "own category more often than the others (the Subset mechanism). Lower tiers are obtained by two "
          "operations on the report itself — add a random category (*Expansion*) or replace the report by a "
          "random one with some probability (*Rescale*) — so no owner is ever asked twice.")
    learn("**Public categories.** A user's report may depend on that user's own value only: the category edges "
          "are fixed in advance from d, the bin scale and the public top U (never from the largest value in the "
          "data), and with a filter *every* user still reports — those whose record does not match report the "
          "public category \"not matching the filter\", so the release does not disclose how many records match.")

try:
    cur = umt.current_plan_and_data(ds, tiers)
except PrdpError as err:
    show_error(err)
    st.stop()

plan = cur["plan"]
teaching = state.teaching()

# ---------------------------------------------------------------------------
# 3. Accuracy per tier
# ---------------------------------------------------------------------------
st.subheader("3 · Accuracy of each tier")
umt.accuracy_section(cur, plan, teaching)


# ---------------------------------------------------------------------------
# 4. Privacy: total and coalitions
# ---------------------------------------------------------------------------
st.subheader("4 · Total privacy loss and colluding tiers")
summary = plan.loss_summary()
unit = "ε" if cur["model"] == "local" else plan.unit
m1, m2, m3 = st.columns(3)
m1.metric("All tiers together: multi-tier", f"{unit} = {summary['multitier']:.4g}")
m2.metric("Independent releases", f"{unit} = {summary['independent']:.4g}",
          delta=f"{summary['independent'] - summary['multitier']:+.4g} vs multi-tier", delta_color="inverse")
m3.metric("Gradual (budget split)", f"{unit} = {summary['gradual']:.4g}")
st.multiselect("Which tiers share their answers?", plan.names, default=plan.names, key="mt_coalition")
members = tuple(m for m in ss.get("mt_coalition", plan.names) if m in plan.names)
if not members:
    st.info("No tier is selected: the figures below are for all tiers together. Pick the tiers that share their "
            "answers.", icon=":material/group_off:")
    members = tuple(plan.names)
settings = (cur["model"], getattr(plan, "d", None), getattr(getattr(plan, "family", None), "name", None),
            tuple(getattr(plan, "params", ())), getattr(plan, "variant", None))
try:
    ctable, cl = umt.cached_coalitions(cur["model"], tier_rows, settings, plan, members)
except PrdpError as err:
    show_error(err)
    st.stop()
st.markdown(f"Together, **{md_escape(' + '.join(cl.members))}** learn **{unit} = {cl.multitier:.4g}** about any single "
            f"{'record' if cur['model'] == 'central' else 'user'} with the multi-tier release — the largest budget "
            f"among them is {cl.bound:.4g}. With independent releases they would learn {unit} = "
            f"{cl.independent:.4g} (sum of budgets {cl.naive:.4g}).")
if cl.eps_at_delta:
    st.caption(f"In (ε, δ = {cl.eps_at_delta['delta']:.1e}): multi-tier ε = {cl.eps_at_delta['multitier']:.4g}, "
               f"independent ε = {cl.eps_at_delta['independent']:.4g} (exact for Gaussian outputs).")
st.caption(f":material/calculate: Computed from {cl.method}, not assumed.")
show(mch.coalition_figure(ctable, unit=unit), key="mt_coalitions")
learn("**Why is the total bounded?** Only the top tier's answer touches the data; every other answer is that "
      "answer plus extra randomness that does not depend on the data. Whatever several tiers compute together "
      "could have been computed from their most trusted member's answer alone.")

# ---------------------------------------------------------------------------
# 5. Residual noise (central) / template plan (local)
# ---------------------------------------------------------------------------
umt.plan_section(cur, plan)


# ---------------------------------------------------------------------------
# 6. Release
# ---------------------------------------------------------------------------
st.subheader("6 · Release every tier")
rng_seed = int(ss.get("seed", 0))
if not teaching:
    st.caption("Review mode: the release shows the noisy answers only (no true value, no error). Turn **Secure "
               "release** on for numbers that may be published.")
b1, b2 = st.columns([1, 2])
b2.toggle("Secure release", key="mt_secure",
          help="Exact noise from OpenDP (discrete Laplace or Gaussian on a documented grid; exact coins for the "
               "local model) with a system random source; unseeded, so not reproducible. Off: a seeded "
               "teaching run (numpy's generator).")
b1.button("Release every tier", key="mt_release_btn", type="primary", on_click=umt.on_release, args=(tier_rows,))
release_err = ss.get("mt_release_error")
if release_err is not None:
    show_error(release_err)
stored = ss.get("mt_release")
if stored is not None and stored["key"] == umt.settings_key(tiers):
    umt.release_view(stored["release"], cur["model"], rng_seed, teaching)
elif stored is not None:
    st.caption("The settings changed since the last release: press the button to release again.")

code_expander(snippet_code("multitier"))
