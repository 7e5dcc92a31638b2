"""Budget functions page: state each record's required ε as a function E(r), see its domains and run
the general PrDP framework (central and local) against the naive global-minimum baseline."""

from __future__ import annotations

import streamlit as st

from prdp_core.charts import budget as bch
from prdp_core.charts.policy import loss_cdf_figure
from prdp_core.core.errors import PrdpError
from prdp_core.mechanisms.prdp import BudgetFunction
from prdp_core.study.config import data_columns
from ui import budget_functions as ubf
from ui import figures, large, reproduce, review, state
from ui.common import code_expander, confidential, learn, md_escape, scale_step, show_error

st.title("Budget functions")
st.caption("State each record's privacy requirement as a function of its values, E(r), and run mechanisms that "
           "honour it with error driven by the smallest budget actually present — not the global minimum "
           "(*A General Framework for Per-record Differential Privacy*, Chen, Sun, Xu and Dong, SIGMOD 2025).")
learn("**Per-record DP (PrDP).** A budget function E gives every possible record a pure-ε budget: adding or "
      "removing record r may change the probability of any output by at most a factor e^E(r). Unlike personalized "
      "DP, the budgets stay private — they depend on the record's own values (e.g. E = 10⁴ / balance protects "
      "large balances more). ε̌ is the strongest requirement any record could have (E at the domain bound U), ε̂ "
      "the weakest.")

ds = state.dataset()
ss = st.session_state
ubf.init(ds)
teaching = state.teaching()
measures = list(ds.schema.measures)


def editor() -> BudgetFunction | None:
    """Section 1: the editor. Returns the budget (or the last valid one), showing any error."""
    st.subheader("1 · Budget function E(r)")
    st.radio("Define E by", list(ubf.MODES), format_func=ubf.MODES.get, key="bf_mode", horizontal=True)
    mode = ss["bf_mode"]
    if mode == "preset":
        p1, p2, p3 = st.columns(3)
        p1.selectbox("Preset", list(ubf.PRESET_LABELS), format_func=lambda k: ubf.PRESET_LABELS[k], key="bf_preset",
                     on_change=ubf.on_preset_change)
        if ss["bf_preset"] == "constant":
            p2.number_input("ε for every record", min_value=1e-6, max_value=1e3, key="bf_eps", format="%.4g")
        else:
            p2.number_input("α", min_value=1e-9, max_value=1e15, key="bf_alpha", format="%.6g",
                            help="The paper's experiments use 10⁴ (inverse), 500 (log, k = 4) and 8 (sqrt).")
            if ss["bf_preset"] == "log":
                p3.number_input("k (power of the logarithm)", min_value=0.1, max_value=16.0, key="bf_k", step=0.5)
    elif mode == "step":
        st.caption(f"Bands of **{md_escape(measure)}**: a record gets the ε of the first band whose upper value it "
                   "does not exceed; leave the last band's upper value empty (it is open).")
        ss["bf_steps_current"] = st.data_editor(ss["bf_steps"], key="bf_steps_edit", num_rows="dynamic",
                                                hide_index=True)
    elif mode == "groups":
        groups = list(ds.schema.groups)
        if not groups:
            st.info("The dataset has no group column: mark one on the Data page to split the budget by group.")
        else:
            st.selectbox("Group column", groups, key="bf_group_col")
            st.caption("One budget expression per group value; the row `*` covers every other group. "
                       ":material/lock: The group values it starts with are the column's most frequent values — "
                       "**computed from the data**: a real release lists its groups from public knowledge.")
            base = ss.get("bf_groups_base")
            if base is None or ss.get("bf_groups_base_col") != ss["bf_group_col"]:
                base = ubf.default_group_table(ds, ss["bf_group_col"], measure)
                ss["bf_groups_base"], ss["bf_groups_base_col"] = base, ss["bf_group_col"]
            ss["bf_groups_table"] = st.data_editor(base, key=f"bf_groups_edit_{ss['bf_group_col']}",
                                                   num_rows="dynamic", hide_index=True)
    else:
        st.text_input("E(r) =", key="bf_expr", help="Numbers, column names (in `backticks` if they contain spaces), "
                      "+ − × ÷ **, comparisons and min, max, log, log2, log10, sqrt, exp, abs, where(cond, a, b). "
                      "Example: 1e4 / max(BALANCE, 1)")
    b1, b2, b3, b4 = st.columns(4)
    b1.number_input("ε̂ (cap: the weakest requirement)", min_value=1e-9, max_value=1e6, key="bf_eps_max", format="%.4g")
    b2.number_input(f"U (largest possible {md_escape(measure)})", min_value=1e-6, max_value=1e18, key="bf_U",
                    format="%.4g", step=scale_step(ss.get("bf_U")))
    b3.checkbox("Set ε̌ myself", key="bf_eps_min_on", help="By default ε̌ = E(U), the budget of a record at the "
                "domain bound.")
    if ss["bf_eps_min_on"]:
        b4.number_input("ε̌ (the strongest requirement)", min_value=1e-15, max_value=1e6, key="bf_eps_min",
                        format="%.4g")
    note = ubf.default_note(state.source())
    if note:
        st.caption(f":material/info: {note}")

    budget, err = ubf.current_budget(ds)
    if err is not None:
        show_error(err)
        if budget is not None:
            st.caption(f":material/history: Keeping the last valid budget: {md_escape(budget.describe())}")
    return budget


def describe(budget: BudgetFunction) -> None:
    """Section 1 continued: bounds, notes and the curve of E."""
    st.markdown(f"**{md_escape(budget.describe())}**")
    for note in budget.notes:
        st.caption(f":material/info: {md_escape(note)}")
    dp = budget.domains()
    st.markdown(f"Records may require anything from **ε̌ = {budget.eps_min:.4g}** (strongest) to **ε̂ = "
                f"{budget.eps_max:.4g}**: the ratio ε̂/ε̌ = {budget.eps_max / budget.eps_min:,.4g} gives "
                f"**L = {dp.L}** privacy-specified domains (bands of budgets, each twice the one below it).")
    if budget.value_column is not None or ss["bf_mode"] == "groups":
        vmax = max(budget.U, 1.0)
        values = ubf.measure_values(ds, measure) if teaching else None
        fig = bch.budget_curve_figure(budget, measure=measure, values=values, vmax=vmax, seed=int(ss.get("seed", 0)))
        figures.show(fig, key="bf_curve")
        if teaching:
            confidential("The orange points are a sample of the dataset's records at their required budgets"
                         + (f" (a uniform sample of {ubf.CURVE_SAMPLE_ROWS:,} records, drawn in the engine)."
                            if state.is_large() else "."))
    elif state.is_large():
        st.caption("On a large dataset each record's budget stays in the engine: the domain counts below are exact.")
    elif review.shows_records("budget histogram"):
        figures.show(bch.budget_histogram_figure(budget(ds.table), budget), key="bf_hist")
        confidential()
    learn("**Reading the curve.** Each dotted horizontal line is a domain boundary 2^(i−1)·ε̌. A record whose "
          "budget lies between two lines belongs to that domain and is charged the lower line's budget — never more "
          "than it asked for, at most half of it.")


def domains(budget: BudgetFunction) -> bool:
    """Section 2: the privacy-specified domains. False when they cannot be shown."""
    dp = budget.domains()
    st.subheader("2 · Privacy-specified domains")
    st.slider("Failure rate β", 0.01, 0.5, key="bf_beta", step=0.01,
              help="With probability at least 1 − β the budget level ε_τ the framework settles on is at least half "
                   "the smallest budget present "
                   "(Theorem 5.1). The paper uses β = 0.1.")
    beta = float(ss["bf_beta"])
    try:
        dtab = ubf.domain_table(state.token(), ubf.budget_key(budget), beta, ds, budget)
    except PrdpError as e:
        show_error(e)
        return False
    shown = dtab.rename(columns={"eps_low": "ε from (excl.)", "eps_high": "ε up to", "charged": "charged ε",
                                 "threshold": "threshold T_i (noisy count needed)", "value_from": f"{measure} from",
                                 "value_to": f"{measure} to", "records": "records"})
    if not teaching:
        shown = shown.drop(columns=["records"], errors="ignore")
    figures.show(bch.domain_figure(dtab, show_counts=teaching), key="bf_domains")
    with st.expander(f"Table of the {dp.L} domains", expanded=False):
        st.dataframe(shown, hide_index=True, width="stretch")
    if teaching:
        confidential("Record counts per domain are true counts.")
        present = dtab[dtab["records"] > 0]
        if not present.empty:
            first = int(present["domain"].iloc[0])
            st.markdown(f"The smallest budget present falls in **domain {first}**; Algorithm 1 settles on a budget "
                        f"level ε_τ near {dp.lo[first - 1]:.4g} if that domain holds enough records to beat its "
                        f"threshold ({dtab['threshold'].iloc[first - 1]:,.4g}), else on a later domain — the records "
                        "of the domains before the one it settles on (ℓ) are dropped.")
    learn("**Algorithm 1.** Each domain's count gets Laplace noise of scale 1/(2^(i−1)·ε̌). The first domain whose "
          "noisy count reaches T_i = ln(L/β)/(2^(i−1)·ε̌) fixes ℓ and ε_τ = 2^(ℓ−1)·ε̌; the answer sums the noisy "
          "counts from ℓ on. Records in lighter domains before ℓ are dropped: there are few of them, w.h.p.")

    return True


def run(budget: BudgetFunction) -> None:
    """Section 3: the mechanisms side by side."""
    st.subheader("3 · Run the mechanisms side by side")
    local = ss["bf_model"] == "local"
    qopts = list(ubf.LOCAL_QUERIES) if local else list(ubf.QUERIES)
    if ss.get("bf_query") not in qopts:
        ss["bf_query"] = "sum"
    r1, r2 = st.columns(2)
    r1.selectbox("Query", qopts, format_func=lambda q: ubf.QUERIES[q], key="bf_query")
    if ss["bf_query"] == "distinct":
        cols = [c for c in data_columns(ds) if c != ds.schema.id_col]
        if ss.get("bf_distinct_col") not in cols:
            ss["bf_distinct_col"] = (list(ds.schema.groups) or cols)[0]
        r2.selectbox("Distinct values of", cols, key="bf_distinct_col")
    if local:
        r2.radio("Thresholds of Algorithm 4", list(ubf.THRESHOLDS), format_func=ubf.THRESHOLDS.get,
                 key="bf_threshold", help="Both give the same guarantee; the tighter one reproduces the paper's "
                                          "Appendix B figures.")
        st.caption("The local model answers counts and sums (no local protocol for max or distinct count is built in).")
    ubf.forecast_panel(budget, ds)
    if state.is_large() and ubf.needs_records(ss["bf_model"], ss["bf_query"]):
        large.sample_offer("budget_functions", ubf.RECORD_MECHANISMS)
    ubf.run_controls()
    if ss.get("bf_run_error"):
        st.error(f"**Run failed.** {md_escape(ss['bf_run_error'])}")
    res = ss.get("bf_result")
    if res and res.get("token") == state.token():
        rows = res["rows"]
        if not teaching:
            rows = rows[[c for c in rows.columns if c in ubf.PUBLIC_RESULT_COLUMNS]]
        st.markdown(f"**{md_escape(res['query'])}** ({ubf.MODELS[res['model']]}), budget {md_escape(res['budget'])}")
        if res.get("skipped"):
            st.caption(f":material/info: Not run (they need the records; choose a sample above): "
                       f"{md_escape(', '.join(res['skipped']))}.")
        st.dataframe(rows, hide_index=True, width="stretch")
        ubf.mode_notice(res)
        fw = [r for label, r in res["releases"] if "framework" in label]
        if fw:
            x = fw[0].extras
            msg = (f"The framework released ε_τ = {x['eps_tau']:.4g} — the budget level it settled on: records "
                   f"asking for less (domains below ℓ = {x['ell']} of {x['L']}) are left out, every other record is "
                   f"answered by the standard mechanism at half that level, ε_τ/2 = {x['eps_M']:.4g}")
            if not x.get("passed", True):
                msg += ". No domain reached its threshold: the data set is too small for these budgets, so only the " \
                       "last domain was used (the guarantee still holds)"
            st.markdown(msg + ".")
        truth = float(res["rows"]["true"].iloc[0]) if res["teaching"] and teaching and "true" in res["rows"] else None
        figures.show(bch.comparison_figure(res["rows"], truth=truth, title="Released answers"), key="bf_compare")
        if res["teaching"] and teaching:
            confidential("True answers, errors, dropped records and per-record losses describe the real records.")
            rel0 = res["releases"][0][1]
            if all(r.loss is not None for _, r in res["releases"]):
                figures.show(bch.loss_figure(rel0.requested, {label: r.loss for label, r in res["releases"]}),
                             key="bf_losses")
                ok = all(r.check_delivered_within_requested() for _, r in res["releases"])
                st.markdown(("Every record's delivered loss is at most its requirement E(r)." if ok else
                             "Some record received more than its requirement!") + " The runs were added to the "
                            "session ledger (their budgets add up per record).")
            else:  # a large dataset: delivered losses as distributions over the domains, computed in the engine
                series, _ = ubf.loss_series(res["releases"])
                figures.show(loss_cdf_figure(series, title="Delivered loss per record (and the requested E(r))",
                                             unit="ε", view="cdf"), key="bf_losses")
                st.markdown("A record of domain i is charged at most 2^(i−1)·ε̌ < E(r) — its requirement, by "
                            "construction of the domains; the records stay in the engine, so the chart shows the "
                            "distributions. The runs were added to the session ledger (their budgets add up per "
                            "record).")
    learn("**Algorithm 2.** Part 1 runs Algorithm 1 with half the budgets (E/2) to find ε_τ; Part 2 drops the "
          "records of domains below ℓ and runs any standard ε_τ/2-DP mechanism on the rest — a clipped sum with a "
          "private threshold, a rank-based maximum, a distinct count. The naive baseline runs the same mechanism at ε̌ "
          "for everyone: its noise is far too large.")


if not measures:
    st.info("The active dataset has no measure. Mark a numeric, non-negative column as a measure on the Data page.")
    code_expander(reproduce.snippet_code("data"))
else:
    c1, c2 = st.columns([3, 2])
    c1.radio("Model", list(ubf.MODELS), format_func=ubf.MODELS.get, key="bf_model", horizontal=True,
             help="Central: a trusted curator holds the data (PrDP). Local: every party randomises its own record "
                  "before sending it (PrLDP, Sec. 7).")
    c2.selectbox("Measure v (the value the budget depends on)", measures, key="bf_measure")
    measure = ss["bf_measure"]

    budget = editor()
    if budget is not None:
        describe(budget)
        if domains(budget):
            run(budget)
    ubf.scaling_section()
    code_expander(reproduce.snippet_code("budget"))
