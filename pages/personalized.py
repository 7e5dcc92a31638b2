"""Personalized DP page: per-user ε specifications and the PDP mechanisms of Jorgensen, Yu and Cormode."""

from __future__ import annotations

import streamlit as st

from prdp_core.charts import personalized as pch
from prdp_core.errors import PrdpError
from prdp_core.mechanisms import personalized
from ui import personalized as upd
from ui import large, private_suggest, review, state
from ui.common import code_expander, confidential, learn, md_escape, seeded_notice, show_error

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

records_shown = review.shows_records("the number of users, how many chose each ε (histogram, users per tier) "
                                     "and the notes that count them", note=False)
m1, m2, m3, m4 = st.columns(4)
m1.metric("Users (roster U)", f"{spec.n_users:,}" if records_shown else "hidden (review mode)")
m2.metric("min Φ (Minimum's α)", f"{spec.min_eps:.3g}")
m3.metric("mean Φ (S-avg's t)", f"{spec.mean_eps:.3g}")
m4.metric("max Φ (S's and T's t)", f"{spec.max_eps:.3g}")
for note in spec.notes if records_shown else ():
    st.caption(f":material/info: {md_escape(note)}")
st.caption(f"Source: {md_escape(spec.source)}. The thresholds above are computed over the whole roster U, never over the users "
           "whose tuples happen to be in one query — otherwise adding one conservative user would change everybody's "
           "noise and break the guarantee.")
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
    if review.shows_records("the number of users, how many chose each ε (histogram, users per tier) and the "
                            "notes that count them"):
        st.plotly_chart(pch.spec_figure(spec.eps, spec.tiers), key="pdp_spec_chart")
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
q2.number_input("Count: tuples with value ≥", step=1.0, key="pdp_cutoff")
q3.number_input("Public lower bound lo", step=1.0, key="pdp_lo")
q4.number_input("Public upper bound hi", step=1.0, key="pdp_hi",
                help="Values are clipped to [lo, hi]. hi sets the sensitivity of sums and the output range of "
                     "median and min. In a real release choose it without looking at the data.")
st.checkbox("The values are whole numbers (declared, public): median and min answer on the integers of [lo, hi]",
            key="pdp_integer",
            help="A public fact about the column (e.g. a number of employees), never read from the values: if the "
                 "output range followed the data, changing one value from 4 to 4.5 would switch every answer from "
                 "integers to non-integers. Values are rounded to the nearest integer before the mechanism.")
from_data = upd.data_default_params()
if from_data:
    what = " and ".join({"hi": f"the upper bound hi = {ss['pdp_hi']:g}",
                         "cutoff": f"the count cut-off {ss['pdp_cutoff']:g}"}[n] for n in from_data)
    st.warning(f"**{what[0].upper() + what[1:]} {'was' if len(from_data) == 1 else 'were'} computed from the "
               "confidential data** (the column's 99th percentile, rounded up): a design default, not a public "
               "value. A real release must set its bounds from public knowledge. Releases run with it are marked "
               "in their parameters and in the ledger.", icon=":material/lock:")
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
VIEWS = ["Delivered ε", "Threshold explorer", "Compare mechanisms", "Run a release", "PE scores", "PDP vs PrDP",
         "Paper experiments"]
st.radio("View", VIEWS, key="pdp_view", horizontal=True, label_visibility="collapsed")
view = ss.get("pdp_view", VIEWS[0])
teaching = state.teaching()
rng, seed = state.rng_and_seed()

if view == "Delivered ε":
    st.subheader("What each mechanism delivers to each user")
    lo_t, hi_t, start_t = upd.t_slider_range(spec)
    ss.setdefault("pdp_t", start_t)
    if not lo_t <= ss["pdp_t"] <= hi_t:
        ss["pdp_t"] = start_t
    st.slider("Threshold t for T(t) and S(t)", min_value=lo_t, max_value=hi_t, step=upd.t_slider_step(spec),
              key="pdp_t")
    t = float(ss["pdp_t"])
    shown = {"Minimum": personalized.Minimum(), f"Threshold t={t:g}": personalized.Threshold(t),
             f"Sample t={t:g}": personalized.Sample(t), "Sample t=max Φ": personalized.Sample("max"),
             "PE": personalized.PE(), "Stretching": personalized.Stretching()}
    st.plotly_chart(pch.delivered_cdf_figure(spec.eps, personalized.delivered_by_mechanism(spec, shown)), key="pdp_cdf")
    table = personalized.delivered_table(spec, shown)
    st.dataframe(upd.delivered_display(table), hide_index=True)
    row = table.set_index("mechanism").loc[f"Sample t={t:g}"]
    unused = table.set_index("mechanism").loc[f"Threshold t={t:g}"].users_unused
    st.markdown(f"- **Sample(t = {t:g})** gives {row.users_full_phi:.0%} of users exactly their Φ; the others "
                f"(Φ > t) get t — more protection than they asked for. Each user gets min(Φ, t).\n"
                f"- **Threshold(t = {t:g})** does not use the data of {unused:.0%} of users (Φ < t).\n"
                f"- **Minimum** gives everybody α = {spec.min_eps:.3g}, the most conservative choice.")
    learn("**Reading the CDFs.** A curve to the left of *requested Φ* means users are protected more than they "
          "asked (their data is used less, or with more noise). PDP only requires delivered ≤ requested; "
          "everything between costs accuracy.")
    grid, curves = personalized.pi_curves(upd.pi_thresholds(spec, t), upto=spec.max_eps)
    st.plotly_chart(pch.pi_curve_figure(grid, curves), key="pdp_pi")
    st.markdown("**Neighbour notion of each guarantee** (for a count)")
    st.dataframe(personalized.neighbour_table(mechs_all, spec), hide_index=True)
    if spec.roster == "table":
        st.caption("The roster comes from the table, so every guarantee is a substitution guarantee (n, the users and "
                   "their Φ public). The curves above are the per-user ε of a count; a sum with lo < 0 < hi and the "
                   "rank-score median cost up to twice as much under substitution (each release states its own).")
    else:
        st.caption("PE is proved only for substitution neighbours (n public); a substitution-ε is roughly twice as "
                   "weak as an add/remove-ε, so PE's numbers are not directly comparable with the others.")

elif view == "Threshold explorer":
    st.subheader("Error against the threshold t (Sample and Threshold)")
    kind = st.selectbox("Query", ["count", "sum", "mean", "median"], key="pdp_tq")
    modes = ["proxy", "oracle"] if teaching else ["proxy"]
    if kind in ("mean", "median"):
        modes = ["oracle"] if teaching else []
    if not modes:
        st.info("Review mode hides curves computed on the private data, and this query has no data-free proxy. "
                "Switch to teaching mode (sidebar) to see the oracle curve.")
    else:
        mode = st.radio("Curve computed from", modes, key=f"pdp_mode_{kind}", horizontal=True,
                        format_func={"proxy": "assumed data (safe to tune on)",
                                     "oracle": "the private data (oracle: design only)"}.get)
        markers = {"max Φ": spec.max_eps, "mean Φ": spec.mean_eps}
        ts = upd.t_grid(spec)
        try:
            q = upd.query_from_widgets(kind)
            unit = "tuples" if kind == "count" else ss["pdp_value"]
            if mode == "proxy":
                if kind == "count":
                    dens = st.slider("Assumed share of tuples that count (δ)", 0.0, 1.0, 0.15, 0.01, key="pdp_density")
                    curve = personalized.count_mse_proxy(spec.eps, ts, density=dens)
                else:
                    a1, a2 = st.columns(2)
                    guess = upd.assumed_default(q)
                    mean_v = a1.number_input("Assumed mean value (e.g. from old data)", min_value=0.0, value=guess,
                                             key="pdp_assumed_mean")
                    sd_v = a2.number_input("Assumed standard deviation", min_value=0.0, value=guess,
                                           key="pdp_assumed_sd")
                    curve = personalized.sum_mse_proxy(spec.eps, ts, mean=mean_v, sd=sd_v,
                                                       bound=upd.proxy_bound(q, spec))
                st.caption("Closed form from the public specification and the assumed data only: choosing t from "
                           "this curve costs no privacy (paper Sec. IV-B: use old or public data).")
                st.plotly_chart(pch.threshold_curve_figure({"Sample (assumed data)": curve}, markers, unit=unit),
                                key="pdp_curve_proxy")
                best = curve.loc[curve["rmse"].idxmin()]
            else:
                st.warning("**Oracle curve — uses the private data.** Picking t from this curve tunes the mechanism "
                           "on the very data it protects and leaks information about it (paper Sec. IV-B); the "
                           "release would then not be Φ-PDP as stated. Use it to learn and to design, then fix t "
                           "from public or old data, or use the heuristics max Φ / mean Φ.",
                           icon=":material/warning:")
                runs = st.number_input("Simulation runs per t (mean, median)", 10, 2000, 50, 10, key="pdp_curve_runs")
                curves = {"Sample": upd.cached_curve(state.token(), upd.spec_key(), q, ts, "sample", int(runs), seed,
                                                     ds, spec),
                          "Threshold": upd.cached_curve(state.token(), upd.spec_key(), q, ts, "threshold", int(runs),
                                                        seed, ds, spec)}
                st.plotly_chart(pch.threshold_curve_figure(curves, markers, unit=unit), key="pdp_curve_oracle")
                curve = curves["Sample"]
                best = curve.loc[curve["rmse"].idxmin()]
                confidential("Errors computed against the true answer.")
            at_max = curve.loc[(curve["t"] - spec.max_eps).abs().idxmin()]
            st.markdown(f"Lowest RMSE on this grid at **t ≈ {best.t:.3g}** ({upd.fmt(best.rmse)} {unit}); at t = max Φ "
                        f"the RMSE is {upd.fmt(at_max.rmse)}. Small t keeps more tuples but adds more noise; large t the "
                        f"reverse. Method: {best.method}.")
        except PrdpError as err:
            show_error(err)

elif view == "Compare mechanisms":
    st.subheader("All mechanisms on count, median and sum")
    if not teaching:
        st.info("Review mode hides errors computed against the true answers. Switch to teaching mode (sidebar).")
    else:
        st.caption("Errors are computed on the active dataset against its true answers (design and teaching only). "
                   "Exact where the output law is known (closed forms, exact pmfs), simulated otherwise.")
        runs = st.number_input("Simulation runs (where no closed form exists)", 20, 2000, 100, 20, key="pdp_cmp_runs")
        st.selectbox("Black-box median score (M, T, S)", ["rank", "changes"], key="pdp_score",
                     format_func={"rank": "rank score, sensitivity ½ (tighter)",
                                  "changes": "change-count score of Eq. 3 (the paper's)"}.get)
        if st.button("Compare mechanisms", key="pdp_cmp_go", type="primary"):
            ss["pdp_cmp_on"] = True
        if ss.get("pdp_cmp_on"):
            for kind in ("count", "median", "sum"):
                try:
                    q = upd.query_from_widgets(kind)
                    df = upd.cached_compare(state.token(), upd.spec_key(), q, int(runs), seed, ds, spec)
                    unit = "tuples" if kind == "count" else ss["pdp_value"]
                    st.plotly_chart(pch.comparison_figure(df, unit=unit, title=f"RMSE of {q.describe()}"),
                                    key=f"pdp_cmp_{kind}")
                    best = df.loc[df["rmse"].idxmin()]
                    st.markdown(f"**{md_escape(q.describe())}** (true answer {upd.fmt(df['truth'].iloc[0])}): lowest RMSE "
                                f"**{best.mechanism}** ({upd.fmt(best.rmse)}, {best.neighbours} neighbours).")
                    st.dataframe(upd.compare_display(df), hide_index=True)
                except PrdpError as err:
                    show_error(err)
            confidential("True answers and errors describe the real records.")
            if spec.roster == "table":
                st.caption("The roster comes from the table: every row is a substitution guarantee (red).")
            else:
                st.caption("PE (red) is proved under substitution neighbours, the others (blue) under add/remove: its "
                           "guarantee is about twice as weak for the same Φ.")

elif view == "Run a release":
    st.subheader("Run one release and add it to the session ledger")
    r1, r2, r3 = st.columns(3)
    r1.selectbox("Mechanism", list(upd.MECHANISM_CHOICES), key="pdp_rel_mech", index=2)
    r2.selectbox("Query", personalized.QUERY_KINDS, key="pdp_rel_kind")
    r3.selectbox("Threshold t (T and S)", list(upd.T_RULES), key="pdp_rel_t")
    if upd.T_RULES[ss.get("pdp_rel_t", "max Φ (paper's S)")] == "custom":
        st.number_input("Custom t", 0.001, 100.0, 0.5, 0.01, key="pdp_rel_tc")
        st.caption(":material/warning: A custom t must be fixed without looking at the private data (not from the "
                   "oracle curve), or the guarantee no longer holds.")
    st.checkbox("Rescale count/sum by public quantities (mean π or mean Φ/ε_ref over U; not in the paper)",
                key="pdp_rel_rescale")
    st.button("Run release", key="pdp_run", type="primary", on_click=upd.on_run_release)
    if ss.get("pdp_release_error") is not None:
        show_error(ss["pdp_release_error"])
    rel = ss.get("pdp_last_release")
    if rel is not None:
        ans = rel.answers.iloc[0]
        st.markdown(f"**{md_escape(ans['query'])}** by {md_escape(rel.params['mechanism'])}: **{ans['estimate']:,.4g}**")
        if teaching and rel.truth_included and "true" in rel.answers.columns:
            st.markdown(f"True answer {ans['true']:,.4g} (error {ans['error']:+,.4g}).")
            confidential()
        st.markdown(f"Promise: {md_escape(rel.extras['promise'])}. "
                    f"Neighbours: {personalized.NEIGHBOUR_TEXT[rel.params['neighbours']]}.")
        st.caption(f"Roster: {md_escape(rel.extras.get('roster', ''))}.")
        flagged = [k[:-len('_source')] for k in rel.params if k.endswith("_source") and k != "spec_source"]
        if flagged:
            verb = "is a design default" if len(flagged) == 1 else "are design defaults"
            st.caption(f":material/lock: {' and '.join(flagged)} of this release {verb} computed from the "
                       "confidential data — marked as such in the ledger.")
        if teaching and rel.loss is not None:
            prof = rel.loss_profile("delivered ε")
            st.markdown(f"Delivered ε: median {prof.quantile(0.5):.3g}, largest {rel.loss.max():.3g}; "
                        f"every user within their request: **{rel.check_delivered_within_requested()}**.")
        seeded_notice(rel.seed if rel.seed is not None else seed)
        st.caption(f"The session ledger holds {len(state.ledger())} release(s).")

elif view == "PE scores":
    st.subheader("PE: the personalized score d(D, r, Φ)")
    learn("**PE** prices every possible answer r by the cheapest total ε of the tuples that would have to change "
          "for r to be the true answer, and outputs r with probability ∝ exp(d/2).")
    options = ["paper example"] + (["active data"] if teaching else [])
    src = st.radio("Data", options, key="pdp_pe_src", horizontal=True,
                   format_func={"paper example": "Sec. IV-C example D = ⟨3, 5, 6, 9, 11⟩, Φ = ⟨0.1, 1, 1, 0.5, 1⟩",
                                "active data": "the active dataset and specification"}.get)
    kind = st.selectbox("Query", ["median", "min", "count"], key="pdp_pe_kind")
    try:
        if src == "paper example":
            vals, phi = personalized.PE_EXAMPLE
            q = personalized.PersonalizedQuery(kind, column="x", cutoff=6, lo=1, hi=12, integer=True)
            prof = personalized.pe_profile(kind, q.prepare(vals), phi, lo=1, hi=12, integer=q.on_integers)
            truth = q.truth(vals)
        else:
            q = upd.query_from_widgets(kind)
            raw = q.raw(ds.table)
            prof = personalized.pe_profile(kind, q.prepare(raw), spec.phi_for(ds.table), lo=q.lo, hi=q.hi,
                                integer=q.on_integers)
            truth = q.truth(raw)
            confidential("The score depends on the real records.")
        st.plotly_chart(pch.pe_score_figure(prof["r"], prof["d"], prof["probability"], truth=truth), key="pdp_pe_fig")
        st.caption("Neighbours: substitution (one tuple's value changes, n public).")
    except PrdpError as err:
        show_error(err)

elif view == "PDP vs PrDP":
    st.subheader("The same users under PrDP: E(r) = c·v_bud")
    st.markdown("PrDP treats each user's ε as a private attribute v_bud of their record and publishes only the budget "
                "function E(r) = c·v_bud (general framework paper, Sec. 3.4). PDP publishes every user's ε.")
    pc1, pc2, pc3 = st.columns(3)
    pc1.number_input("c", 0.01, 100.0, 1.0, 0.1, key="pdp_prdp_c")
    (menu_lo, menu_hi), menu_src = personalized.public_choice_range(spec)
    c_val = float(ss["pdp_prdp_c"])
    pc2.number_input("ε̌ (smallest budget, public)", 1e-6, 1e6, value=min(max(c_val * menu_lo, 1e-6), 1e6),
                     format="%.4g", key="pdp_prdp_emin",
                     help="Published with E: the smallest choice offered to users, times c.")
    pc3.number_input("ε̂ (largest budget, public)", 1e-6, 1e6, value=min(max(c_val * menu_hi, 1e-6), 1e6),
                     format="%.4g", key="pdp_prdp_emax",
                     help="Published with E: the largest choice offered to users, times c.")
    st.caption(f"Default ε̌ and ε̂: c × {menu_src} ({menu_lo:g} to {menu_hi:g}). They are published with the "
               "budget function, so they come from the public menu of choices — never from the smallest and largest "
               "Φ in the table, which PrDP keeps private.")
    try:
        e_lo, e_hi = float(ss["pdp_prdp_emin"]), float(ss["pdp_prdp_emax"])
        red = personalized.to_prdp(ds.table, spec, c=c_val, eps_min=e_lo, eps_max=e_hi)
        st.markdown(f"Budget function: `E(r) = {red.expression}`, ε̌ = {red.eps_min:.3g}, ε̂ = {red.eps_max:.3g}.")
        kind = st.selectbox("Query", ["count", "sum"], key="pdp_prdp_kind")
        q = upd.query_from_widgets(kind)
        if "hi" in upd.data_default_params(kind) or "cutoff" in upd.data_default_params(kind):
            st.caption(":material/lock: The query's domain bound U = hi (or the cut-off) is still the design default "
                       "computed from the confidential data.")
        run_key = upd.prdp_run_key(q, c_val, e_lo, e_hi, seed, teaching)
        if st.button("Run PDP and PrDP side by side", key="pdp_prdp_go", type="primary"):
            out = personalized.compare_with_prdp(ds.table, spec, q, c=c_val, rng=rng, reveal=teaching, eps_min=e_lo,
                                      eps_max=e_hi)
            ss["pdp_prdp_result"] = {"key": run_key, "table": out}
        stored = ss.get("pdp_prdp_result")
        if isinstance(stored, dict) and stored.get("key") == run_key:
            # the largest delivered ε is a statistic of the records (PrDP's depends on their budgets)
            st.dataframe(stored["table"] if teaching else stored["table"].drop(columns=["largest delivered ε"],
                                                                                 errors="ignore"), hide_index=True)
            if teaching:
                confidential()
            seeded_notice(seed)
        elif stored is not None:
            st.caption("The data, the specification, the query or the mode changed since the last comparison: "
                       "press the button to run it again.")
    except PrdpError as err:
        show_error(err)

else:  # Paper experiments
    st.subheader("The paper's count and median experiments (Sec. V-A, Table I defaults)")
    st.markdown("Synthetic data: count on 1,000 bits with density 0.15; median on 1,001 values ~ N(500, 200²) in "
                "1..1000. Every run draws a new dataset and a new three-tier specification.")
    e1, e2 = st.columns(2)
    runs = e1.number_input("Runs (the paper: 1,000)", 20, 5000, 200, 20, key="pdp_exp_runs")
    score = e2.selectbox("Black-box median score", ["changes", "rank"], key="pdp_exp_score",
                         format_func={"rank": "rank score (tighter)", "changes": "change-count (the paper's)"}.get)
    if st.button("Run the experiments", key="pdp_exp_go", type="primary"):
        ss["pdp_exp_on"] = True
    if ss.get("pdp_exp_on"):
        for task in ("count", "median"):
            df = upd.cached_experiment(task, int(runs), score, seed)
            st.plotly_chart(pch.experiment_figure(df, title=f"{task.capitalize()}: RMSE over {int(runs)} runs",
                                                  unit="tuples" if task == "count" else "value, 1..1000"),
                            key=f"pdp_exp_{task}")
            order = " < ".join(df.sort_values("rmse")["mechanism"])
            st.markdown(f"**{task}**: {order} (lower is better). The paper: "
                        + ("PE < S-avg < S < M, Alag slightly below S." if task == "count"
                           else "S-avg < S < PE ≈ T ≪ M."))
        seeded_notice(seed)
        st.caption("Full reproduction with 1,000 runs: `benchmarks/repro_pdp_experiments.py` "
                   "(numbers in docs/reproductions/personalized-dp.md).")

code_expander(upd.reproduce_code(state.source(), ds, upd.spec_params(), upd.query_from_widgets("count"), seed))
