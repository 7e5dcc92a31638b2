"""Policy designer: splitting thresholds and workload budgets → per-record (and per-owner) losses."""

from __future__ import annotations

import streamlit as st

from prdp_core.charts.policy import loss_cdf_figure, public_function_figure
from prdp_core.core.accounting import conversion_table
from prdp_core.core.errors import PrdpError
from prdp_core.core.loss_profile import format_loss
from prdp_core.core.splitting import DEFAULT_KEY, as_thresholds, threshold_percentiles, thresholds_from_frame
from prdp_core.core.wording import ordinal
from prdp_core.core.workload import SplittingPolicy, Workload, workload_from_frame
from prdp_core.mechanisms.preview import public_levels
from prdp_core.study.config import group_values
from ui import options, review, state
from ui import policy_designer as pstate
from ui.common import code_expander, confidential, learn, md_escape, scale_step, show_error
from ui.figures import chart, show
from ui.reproduce import snippet_code

st.title("Policy designer")
st.caption("Set splitting thresholds and budgets; see at once what every record — and every owner — would lose.")
learn("**Unit splitting.** A record larger than the threshold T(a) of a measure is "
      "cut into m(r) = max_a ⌈r(a)/T(a)⌉ pieces of at most T(a). Sums over split data need noise for T(a) only, "
      "but a record cut into m pieces pays m² times the budget: P(r) = Σ flat ρ + Σ split ρ·m(r)². The *form* "
      "of P is public; the loss of a real record is confidential.")

ds = state.dataset()
active = pstate.ensure_policy()
measures = list(ds.schema.measures)
groups = list(ds.schema.groups)

left, right = st.columns([1, 1], gap="large")
with left:
    st.subheader("Splitting thresholds")
    per_group = st.toggle("Different thresholds per group", key="policy_per_group", disabled=not groups,
                          help="Each group is split with its own thresholds; by parallel composition (Lemma 3) "
                               "the policy is piecewise.")
    if not per_group:
        cols = st.columns(min(3, len(measures)))
        for i, m in enumerate(measures):
            col = cols[i % len(cols)]
            col.number_input(f"T({md_escape(m)})", min_value=0.0, step=scale_step(st.session_state[f"thr_{m}"]),
                             format="%g", key=f"thr_{m}",
                             help=f"Largest piece a record's {md_escape(m)} is cut into.")
            how = pstate.source_caption(m, st.session_state[f"thr_{m}"])
            if how:
                col.caption(how)
        thr_make = lambda: as_thresholds({m: st.session_state[f"thr_{m}"] for m in measures})  # noqa: E731
    else:
        gcol = st.selectbox("Group column", groups, key="policy_group_col")
        st.caption("One row per group value; the `*` row is the default for every other group.")
        base = st.session_state.get("thr_group_base")
        if base is None or list(base.columns) != ["group", *measures]:
            base = pstate.thresholds_frame_for_editor(ds)
            st.session_state["thr_group_base"] = base
        edited = st.data_editor(base, num_rows="dynamic", key="thr_table", hide_index=True,
                                column_config={"group": st.column_config.TextColumn("group value", required=True)})
        thr_make = lambda: thresholds_from_frame(edited, group_col=gcol, table=group_values(ds, gcol))  # noqa: E731
    with st.expander("Suggest thresholds", icon=":material/auto_fix_high:"):
        pstate.suggestions_panel(measures, per_group)

with right:
    st.subheader("Workload and budgets")
    st.caption("One row per query. *split*: answered on split data (costs ρ·m(r)²); otherwise COUNTs use COUNT "
               "DISTINCT and SUM/AVG are top-coded at *clamp* (flat ρ). Separate several group-by columns with "
               "commas; filter values with `;`.")
    wl_frame = st.data_editor(
        st.session_state["wl_frame"], num_rows="dynamic", key="wl_table", hide_index=True,
        column_config={
            "kind": st.column_config.SelectboxColumn("query", options=["count", "sum", "avg"], required=True),
            "measure": st.column_config.SelectboxColumn("measure", options=[""] + measures),
            "group_by": st.column_config.TextColumn("group by",
                                                    help=f"Columns: {md_escape(', '.join(groups)) or 'none'}"),
            "rho": st.column_config.NumberColumn("ρ", min_value=0.0, format="%.4g",
                                                help="The query's budget (zCDP): every record it reads loses ρ, "
                                                     "or ρ·m(r)² when answered on split data."),
            "split": st.column_config.CheckboxColumn("split"),
            "clamp": st.column_config.NumberColumn("clamp", min_value=0.0, format="%g"),
            "rho_count": st.column_config.NumberColumn("ρ count (AVG)", min_value=0.0, format="%.4g"),
            "filter_column": st.column_config.SelectboxColumn("filter on", options=[""] + groups),
            "filter_values": st.column_config.TextColumn("filter values"),
        })
    c1, c2 = st.columns(2)
    c1.number_input("Partition selection ρ (0 = keys known)", min_value=0.0, format="%.4g",
                    key="policy_partition_rho",
                    help="Finding unknown group keys on split data costs ρ·m(r)² (Sec. 5.4).")
    c2.checkbox("One split table for all sums (Algorithm 1)", key="policy_joint",
                help="Off: each SUM is split on its own measure only, which never costs more.")


def _make_policy() -> SplittingPolicy:
    wl = workload_from_frame(wl_frame)
    wl = Workload(wl.queries, partition_rho=float(st.session_state["policy_partition_rho"]),
                  joint=bool(st.session_state["policy_joint"]), group_keys=pstate.group_keys())
    thr = thr_make()
    pol = SplittingPolicy(thr, wl, threshold_source=pstate.threshold_sources(thr))
    pstate.validate(pol)
    pstate.check_preview(pol)
    return pol


candidate, err = pstate.try_policy(_make_policy)
if err is not None:
    show_error(err)
    st.caption("The charts below show the **last valid policy**; fix the input above to update them.")
elif candidate is not None:
    pstate.set_policy(candidate)
pol = st.session_state["policy"]
from_data = pstate.flagged_thresholds(pol)
if from_data:
    with left:
        st.warning("**Computed from the confidential data:** " + pstate.flagged_text(pol)
                   + ". A design aid, not a public value: releases made with it say so in the ledger and every "
                     "export, and a secure release in review mode refuses it. Type public values in (edit the "
                     "number), or confirm that these values are public knowledge.", icon=":material/lock:")
        st.button("These thresholds are public values", key="policy_confirm_public", on_click=pstate.confirm_public,
                  help="Say that the values shown are known independently of the records (published, agreed in "
                       "advance): their flag becomes *typed*.")

st.divider()
st.subheader("What each record loses")
OWNER_BOUND_LABELS = {
    "lemma4": "bound for any order: its number of records × the sum of their losses (Lemma 4, J·ΣP)",
    "lemma5": "tighter when its records' losses differ (Lemma 5, optimistic)"}
owner_bound = str(st.session_state.get("policy_owner_bound", "lemma4"))
if review.shows_records("policy losses"):
    c1, c2, c3 = st.columns(3)
    owner_bound = c1.radio("An owner's loss (e.g. a firm's)", list(options.OWNER_BOUNDS), key="policy_owner_bound",
                           format_func=OWNER_BOUND_LABELS.get, disabled=not ds.schema.owner_col,
                           help="An owner of several records loses at most their number times the sum of their "
                                "losses, whatever the order of the records (Lemma 4); Lemma 5 is tighter when the "
                                "losses differ and is shown as an optimistic view.")
    log_x = c2.toggle("Log-scale loss axis", value=True, key="policy_logx")
    view = c3.radio("View", list(options.POLICY_VIEWS), horizontal=True, key="policy_view",
                    format_func={"zoom": "CDF, zoomed", "cdf": "CDF", "tail": "share above (log)"}.get,
                    help="Zoomed: the y-axis starts just below the share of records paying the base loss.")
    # a large table's owner losses are summed per owner in the engine: on demand (a threshold change
    # then recomputes the records' histogram only)
    show_owners = bool(ds.schema.owner_col) and (not state.is_large() or c1.toggle(
        "Compute the owners' losses (in the engine)", key="policy_large_owners",
        help="On a large table each owner's losses are summed in the engine: slower than the records' CDF."))
    try:
        prev = pstate.preview(pol, owner_bound)
        owners = pstate.owner_profile(prev) if show_owners else None
        summ = pstate.preview_summary(prev, owners=owners is not None)
    except PrdpError as err:  # e.g. a memory limit: the policy and the session stay as they were
        show_error(err)
        st.stop()
    confidential("Per-record and per-owner losses are computed from the records' confidential values.")
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Base loss (unsplit records)", format_loss(pol.workload.total_rho))
    m2.metric("Records split", f"{summ['share_split']:.2%}", help="Share of records cut into more than one piece.")
    m3.metric("99th percentile loss", format_loss(summ["p99"]))
    m4.metric("Largest record loss", format_loss(summ["max"]), help=f"{summ['max_pieces']:,} pieces")
    pstate.loss_readout(prev, summ)
    if owners is not None:
        st.markdown(f"- Owners ({md_escape(ds.schema.owner_col)}): {owners.plain_language(noun='owners')}")
    thr_pct = threshold_percentiles(pstate.data(), pol.thresholds) if pol.thresholds.group_col is None else {}
    if thr_pct:
        st.markdown("- Thresholds sit at the " + ", ".join(f"**{ordinal(p)}** percentile of {md_escape(m)}" for m, p in
                                                          thr_pct.items()) + " (PctScore).")

    series_rec = {c["label"]: c["records"] for c in st.session_state.get("policy_compare", [])}
    series_rec["current policy"] = prev.record_cdf()
    ch1, ch2 = st.columns(2)
    show(chart(loss_cdf_figure, series_rec, title="Policy-loss CDF over records",
               base=pol.workload.total_rho, log_x=log_x, view=view), key="cdf_records", where=ch1)
    if owners is not None:
        series_own = {c["label"]: c["owners"] for c in st.session_state.get("policy_compare", []) if "owners" in c}
        series_own["current policy"] = owners.ecdf()
        label = "Lemma 5, optimistic" if owner_bound == "lemma5" else "Lemma 4: records × sum of their losses"
        show(chart(loss_cdf_figure, series_own, title=f"Policy-loss CDF over owners ({label})",
                   base=pol.workload.total_rho, log_x=log_x, view=view), key="cdf_owners", where=ch2)
    elif ds.schema.owner_col:
        ch2.info("Turn on *Compute the owners' losses* above to see owner-level losses of this large table.")
    else:
        ch2.info("Map an owner column on the Data page (e.g. a firm id) to see owner-level losses.")
    b1, b2, _ = st.columns([1, 1, 2])
    cmp_label = b1.text_input("Name", value=f"policy {len(st.session_state.get('policy_compare', [])) + 1}",
                              key="policy_cmp_label", label_visibility="collapsed")
    b2.button("Keep for comparison", key="policy_keep", on_click=lambda: pstate.save_comparison(
        st.session_state["policy_cmp_label"], prev))
    if st.session_state.get("policy_compare"):
        st.button("Clear comparisons", key="policy_clear",
                  on_click=lambda: st.session_state.update(policy_compare=[]))
    learn("**Reading the CDF.** A point (x, y) says that y% of records lose at most x. The curve jumps at the base "
          "loss (every unsplit record) and then climbs in steps ρ·m² as records are cut into more pieces. Owners "
          "(firms) lose at least what their establishments lose together.")
else:
    st.metric("Base loss (unsplit records)", format_loss(pol.workload.total_rho))
    st.markdown("From the public policy function (no record looked at): "
                + "; ".join(f"{name} loses **{format_loss(v)}**" for name, v in public_levels(pol).items()
                            if name.startswith("a record cut"))
                + ". An owner of k records loses at most k × the sum of their losses (Lemma 4).")

st.subheader("The public policy function")
pc1, pc2 = st.columns([1, 3])
fm = pc1.selectbox("As a function of", [m for m in measures if m in pol.thresholds.measures], key="policy_fn_measure")
fm_threshold = min(dict(r)[fm] for _, r in pol.thresholds.rows)
if review.shows_records("values on the policy chart", note=False):
    show_data = pc1.checkbox("Mark the data's median / p90 / p99", value=False, key="policy_fn_marks",
                             help="Confidential: quantiles of the real records.")
    vals, top = pstate.observed_values(fm)
    grid = pstate.value_grid(top, fm_threshold)
else:  # a range from the public thresholds, not from the largest record
    show_data, vals = False, None
    grid = pstate.value_grid(pstate.PUBLIC_RANGE_PIECES * fm_threshold, fm_threshold)
curves = {}
for g, _row in pol.thresholds.rows[:8]:
    lab = "every record" if pol.thresholds.group_col is None else (
        "other groups (*)" if g == DEFAULT_KEY else f"{pol.thresholds.group_col} = {g}")
    curves[lab] = pol.public_function(fm, grid, group=g)
show(chart(public_function_figure, grid, curves, measure=fm, observed=vals if show_data else None),
     key="public_fn", where=pc2)
st.caption("This function — not any record's value — is what an agency can publish: anyone who knows a record's "
           f"{md_escape(fm)} can read off its loss (other measures at most their thresholds, record passing every "
           "filter).")

st.subheader("In (ε, δ) terms")
d1, d2 = st.columns([1, 3])
delta = d1.select_slider("δ", options=list(options.DELTAS), value=1e-6, key="policy_delta",
                         format_func=lambda d: f"{d:.0e}",
                         help="The small probability with which an (ε, δ) guarantee may fail; each ρ is read as "
                              "the ε it guarantees at this δ.")
if review.shows_records("loss levels", note=False):
    levels = pstate.preview(pol, owner_bound).levels()
    with d1:
        confidential("Every row but the base loss is the loss of real records.")
else:
    levels = public_levels(pol)
    d1.caption("Loss levels of the public policy function: hypothetical records cut into m pieces.")
d2.dataframe(conversion_table(levels, delta).style.format(
    {"ρ (zCDP)": "{:,.6g}", "ε at δ (CKS)": "{:,.3f}", "ε at δ (textbook)": "{:,.3f}"}), hide_index=True)
if pol.workload.partition_rho > 0:
    st.warning("Partition selection adds an approximate term on top of these: a record alone in its cell makes "
               "the cell appear with probability δ(r). For a record in " + ", ".join(
                   f"{k} piece{'s' if k > 1 else ''}: δ(r) = {d:.2g}" for k, d in pstate.partition_deltas(pol))
               + ". Large records (about τ pieces or more) make their cells appear almost surely.")
learn("**Conversions.** ρ-zCDP implies (ε, δ)-DP for every δ. The Canonne–Kamath–Steinke bound is tight; the "
      "textbook ρ + 2√(ρ ln 1/δ) is simpler and larger. Each row applies to records losing that much.")

by_group_box = st.expander("Losses by group", icon=":material/table_chart:", key="policy_by_group_open",
                           on_change="rerun")  # computed when open only
with by_group_box:
    pstate.losses_by_group_panel(ds, pol, owner_bound, opened=bool(by_group_box.open))

code_expander(snippet_code("policy", pol, owner_bound))
