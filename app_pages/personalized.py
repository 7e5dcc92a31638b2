"""Personalized DP page: per-user ε specifications and the PDP mechanisms of Jorgensen, Yu and Cormode."""

from __future__ import annotations

import streamlit as st

from prdp_core.charts import personalized as pch
from prdp_core.core.errors import PrdpError
from prdp_core.mechanisms import personalized
from ui import large, private_suggest, review, state
from ui import personalized as upd
from ui import personalized_views as upv
from ui.common import code_expander, confidential, learn, md_escape, scale_step, show_error
from ui.figures import show
from ui.reproduce import snippet_code

st.title("Personalized DP")
st.caption("Each user publicly chooses an ε (Φ). See what each mechanism of *Conservative or Liberal? Personalized "
           "Differential Privacy* (Jorgensen, Yu and Cormode, ICDE 2015) delivers to each user, and what accuracy "
           "it buys.")
learn("**Personalized DP (PDP).** Instead of one ε for everybody, every user u picks Φᵘ (smaller = stronger "
      "privacy). A mechanism is Φ-PDP when adding or removing one user's tuple changes the probability of any "
      "output by at most a factor e^Φᵘ of *that* user. The choices are **public**, like ε in standard DP — so a "
      "choice must not depend on the user's sensitive values.")

large.records_needed("personalized", "Personalized DP's mechanisms (each user's ε and the released answers)")
ds = state.dataset()
ss = st.session_state
for k, v in upd.SPEC_DEFAULTS.items():
    ss.setdefault(k, v)
upd.start_on_dataset(ds)

# ---------------------------------------------------------------------------
# 1. The privacy specification
# ---------------------------------------------------------------------------
st.subheader("1 · Privacy specification Φ")
c1, c2 = st.columns([2, 2])
c1.radio("Where do the users' ε come from?", ["tiers", "column"], key="pdp_source", horizontal=True,
         format_func={"tiers": "Generated tiers (paper Sec. V)", "column": "A column of the data"}.get)
owners = [upd.EACH_RECORD] + ([ds.schema.owner_col] if ds.schema.owner_col else [])
c2.selectbox("Who owns each tuple (the user)?", owners, key="pdp_user",
             help="PDP protects single tuples: a user owning k tuples is protected at about k·Φ (group privacy).")

if ss["pdp_source"] == "tiers":
    t1, t2, t3, t4, t5 = st.columns(5)
    t1.number_input("Conservative share f_C", 0.0, 1.0, step=0.01, key="pdp_fc")
    t2.number_input("Moderate share f_M", 0.0, 1.0, step=0.01, key="pdp_fm")
    t3.number_input("ε_C (lowest)", 0.001, 100.0, step=0.01, key="pdp_ec", format="%.3f")
    t4.number_input("ε_M", 0.001, 100.0, step=0.05, key="pdp_em", format="%.3f")
    t5.number_input("ε_L (liberal)", 0.001, 100.0, step=0.1, key="pdp_el", format="%.3f")
    st.caption("Conservative users draw Φ uniformly from [ε_C, ε_M], moderate users from [ε_M, ε_L] (rounded to "
               "0.01), liberal users get ε_L. The draw uses the session seed and never the values; the users it is "
               "drawn for are the table's rows (or owners). Defaults: Table I of the paper.")
else:
    cols = upd.eps_columns(ds)
    if ss.get("pdp_col") not in cols:
        ss["pdp_col"] = cols[0] if cols else None
    e1, e2 = st.columns([2, 1])
    e1.selectbox("Column holding each user's ε", cols, key="pdp_col")
    e2.number_input("Default ε for missing choices (ε_def)", 0.001, 100.0, step=0.1, key="pdp_default")
    if ss.get("pdp_col") and upd.label_column(ds, ss["pdp_col"]):
        st.markdown("The column holds labels: map each label to an ε (an expert table, paper Sec. III).")
        st.caption(":material/lock: The labels listed are the values present in the column — **computed from the "
                   "data**. A real specification maps a public list of choices (the menu users were offered).")
        labels = upd.labels_of(ds, ss["pdp_col"])
        base = ss.get("pdp_label_map_df")
        if base is None or list(base["label"]) != labels:
            base = upd.default_label_map(labels)
        edited = st.data_editor(base, key=f"pdp_label_editor_{ss['pdp_col']}", hide_index=True,
                                disabled=["label"], num_rows="fixed")
        ss["pdp_label_map_df"] = edited
    else:
        ss["pdp_label_map_df"] = None
    st.warning("Under PDP this column becomes **public**: everybody may learn each user's choice. If the choices "
               "themselves are sensitive, compare with PrDP below (section *PDP vs PrDP*), which keeps them private.",
               icon=":material/visibility:")

spec = None
try:
    spec = upd.build_spec(ds)
except PrdpError as err:
    show_error(err)

if spec is None:
    st.stop()

records_shown = review.shows_records("users per epsilon", note=False)
m1, m2, m3, m4 = st.columns(4)
m1.metric("Users (roster U)", f"{spec.n_users:,}" if records_shown else "hidden (review mode)")
m2.metric("min Φ (Minimum's α)", f"{spec.min_eps:.3g}")
m3.metric("mean Φ (S-avg's t)", f"{spec.mean_eps:.3g}")
m4.metric("max Φ (S's and T's t)", f"{spec.max_eps:.3g}")
for note in spec.notes if records_shown else ():
    st.caption(f":material/info: {md_escape(note)}")
st.caption(f"Source: {md_escape(spec.source)}. The thresholds above are computed over the whole roster U, never "
           "over the users whose tuples happen to be in one query — otherwise adding one conservative user would "
           "change everybody's noise and break the guarantee.")
if spec.roster == "table":
    st.info("**The roster U comes from the table.** The users and their Φ are read from the data being released "
            "(generated tiers are drawn for its rows or owners), so α, the thresholds and Sample's π would move if a "
            "user joined or left. Every release below is therefore stated under **substitution neighbours**: n, the "
            "users and their Φ are public, and one tuple's value changes. A roster fixed in advance (in Python: "
            "`personalized.generate_tiers(user_ids, ...)` or `personalized.spec_from_values(...)` over a declared "
            "universe) keeps the paper's add/remove statements.", icon=":material/group:")
    learn("**Why not add/remove?** With the roster taken from the table, adding one user who chose Φ = 0.01 moves "
          "Minimum's α from, say, 1 to 0.01: the noise scale itself reveals that the user is present, whatever their "
          "Φ. Substitution neighbours keep the roster fixed, so α, t and π are public constants. For counts the "
          "per-user loss is the same number; sums with lo < 0 < hi and the rank-score median cost up to twice as "
          "much (the change-count median does not).")
sc1, sc2 = st.columns([3, 2])
with sc1:
    if review.shows_records("users per epsilon"):
        show(pch.spec_figure(spec.eps, spec.tiers), key="pdp_spec_chart")
with sc2:
    tiers_shown = spec.tier_table() if records_shown else spec.tier_table().drop(columns=["users"])
    st.dataframe(tiers_shown.style.format({"share": "{:.1%}", "min": "{:.3g}", "mean": "{:.3g}", "max": "{:.3g}",
                                           **({"users": "{:,}"} if records_shown else {})}), hide_index=True)
    if ss["pdp_source"] == "column" and records_shown:
        confidential("Φ is public under PDP, but this table also describes real records.")

# ---------------------------------------------------------------------------
# 2. The query
# ---------------------------------------------------------------------------
st.subheader("2 · Query")
measures = list(ds.schema.measures)
if ss.get("pdp_value") not in measures:
    ss["pdp_value"] = measures[0]
    upd.set_query_defaults(measures[0])
q1, q2, q3, q4 = st.columns(4)
q1.selectbox("Value column", measures, key="pdp_value", on_change=upd.on_value_change)
q2.number_input("Count: tuples with value ≥", step=scale_step(ss.get("pdp_cutoff")), key="pdp_cutoff")
q3.number_input("Public lower bound lo", step=scale_step(ss.get("pdp_hi")), key="pdp_lo")
q4.number_input("Public upper bound hi", step=scale_step(ss.get("pdp_hi")), key="pdp_hi",
                help="Values are clipped to [lo, hi]. hi sets the sensitivity of sums and the output range of "
                     "median and min. In a real release choose it without looking at the data.")
st.checkbox("The values are whole numbers (declared, public): median and min answer on the integers of [lo, hi]",
            key="pdp_integer",
            help="A public fact about the column (e.g. a number of employees), never read from the values: if the "
                 "output range followed the data, changing one value from 4 to 4.5 would switch every answer from "
                 "integers to non-integers. Values are rounded to the nearest integer before the mechanism.")
from_data = upd.data_default_params()
if from_data:
    st.warning(f"Design defaults, not public values: {upd.data_default_text(from_data)}. A real release must set "
               "its bounds from public knowledge. Releases run with them are marked in their parameters and in the "
               "ledger.", icon=":material/lock:")
else:
    st.caption("Bounds and cut-off as set by you: keep them independent of the data for a real release.")
with st.expander("Suggest hi privately (a DP percentile, charged to your ledger)", icon=":material/lock:"):
    private_suggest.bound_panel("pdp_psugg", ss["pdp_value"], upd.adopt_private_hi)

if spec.roster == "table":
    st.caption(":material/compare_arrows: **Neighbour notions.** With the roster read from the table, every "
               f"mechanism is stated under {personalized.NEIGHBOUR_TEXT['substitution']}, with the users and their Φ "
               "public.")
else:
    st.caption(":material/compare_arrows: **Neighbour notions.** Minimum, Threshold, Sample and Stretching are "
               f"proved under {personalized.NEIGHBOUR_TEXT['add/remove']}; PE only under "
               f"{personalized.NEIGHBOUR_TEXT['substitution']}, a guarantee about twice as weak for the same ε.")

mechs_all = {"M": personalized.Minimum(), "T": personalized.Threshold("max"), "S": personalized.Sample("max"),
             "S-avg": personalized.Sample("mean"), "PE": personalized.PE(), "Alag": personalized.Stretching()}

# ---------------------------------------------------------------------------
# 3. Views
# ---------------------------------------------------------------------------
VIEWS = list(upv.VIEWS)
st.radio("View", VIEWS, key="pdp_view", horizontal=True, label_visibility="collapsed")
view = ss.get("pdp_view", VIEWS[0])
teaching = state.teaching()
rng, seed = state.rng_and_seed()
upv.VIEWS.get(view, upv.view_experiments)(upv.View(ds, spec, mechs_all, rng, seed, teaching))

code_expander(snippet_code("personalized"))
