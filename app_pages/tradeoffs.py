"""Trade-offs: what accuracy each policy buys, before anything is released (all analytic)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from prdp_core.charts.policy import loss_cdf_figure
from prdp_core.charts.tradeoffs import box_from_quantiles, mse_figure, sweep_figure
from prdp_core.core.errors import PrdpError
from prdp_core.mechanisms import analysis, sweeps
from ui import figures, options, review, state
from ui import policy_designer as pstate
from ui import tradeoffs as T
from ui.common import code_expander, confidential, learn, md_escape, show_error
from ui.reproduce import snippet_code

st.title("Trade-offs")
st.caption("The price of each policy in accuracy — computed in closed form from the data, before any release.")
learn("**ARE and QueryRelErr.** The absolute relative error of an answer is |noisy − true| / |true|. With Gaussian "
      "noise σ its median is 0.674·σ/|true| and the error stays below z·σ/|true| with probability γ "
      "(QueryRelErr). Smaller thresholds mean smaller σ for sums — and more records paying ρ·m(r)².")

ds = state.dataset()
pol = pstate.ensure_policy()
tok, pk = T.token(), T.pol_key(pol)
measures = T.split_measures(pol)
if state.teaching():
    confidential("Errors are computed from the true answers; they guide the designer and are not publishable.")

tab_sweep, tab_top, tab_fit, tab_solve, tab_clip = st.tabs(
    ["Thresholds × ρ", "Splitting vs top-coding", "Fitness for use", "Target → budget", "Why clipping fails"])

with tab_sweep:
    if review.shows_records("sweep errors"):
        c1, c2, c3 = st.columns(3)
        pcts = c1.multiselect("Thresholds at these percentiles (PctScore)", list(options.SWEEP_PCTS),
                              default=[90.0, 97.0, 99.0, 99.9], key="tr_pcts")
        rhos = c2.multiselect("Base loss ρ", list(options.SWEEP_RHOS), default=[0.1, 1.0, 10.0],
                              key="tr_rhos")
        min_rec = c3.number_input("Answers with at least … records", min_value=1, value=T.default_min_records(ds),
                                  key="tr_min", help="The paper evaluates CBP cells with ≥ 100 establishments.")
        if not pcts or not rhos:
            st.info("Choose at least one percentile and one ρ.")
        else:
            try:
                errors, losses, grid = T.sweep(tok, pk, tuple(sorted(pcts)), tuple(sorted(rhos)), int(min_rec), ds, pol)
            except PrdpError as err:
                show_error(err)
            else:
                fams = list(dict.fromkeys(errors["family"])) if not errors.empty else []
                if not fams:
                    st.warning("No answer has that many records: lower the minimum.")
                else:
                    fam = st.selectbox("Query family", fams, index=min(1, len(fams) - 1), key="tr_family")
                    figures.show(sweep_figure(errors, losses, fam), key="tr_sweep_chart")
                    st.caption("Each box: the median ARE of every answer of that family (whiskers: 5th–95th "
                               "percentiles). Dashed lines: 10% (green) and 100% (red) error.")
                    if pol.workload.partition_rho > 0:
                        st.caption("Partition selection is on: a cell it may leave out counts as a 100% error with the "
                                   "probability that it is left out (δ = 1e-6).")
                    show = losses.copy()
                    fmt: dict[str, Any] = {c: "{:.2%}" for c in show.columns if c.startswith(("share", "median"))}
                    st.dataframe(show.style.format(fmt | {"loss_p99": "{:,.4g}", "loss_max": "{:,.4g}"}),
                                 hide_index=True)
                    rho_cdf = st.select_slider("Policy-loss CDFs at base ρ", options=sorted(rhos),
                                               value=sorted(rhos)[0], key="tr_cdf_rho")
                    cdfs = T.sweep_cdfs(tok, pk, T.key({f"p{p:g}": g for p, g in zip(sorted(pcts), grid)}),
                                        float(rho_cdf), ds, pol)
                    figures.show(loss_cdf_figure(cdfs, title=f"Policy-loss CDFs (base ρ = {rho_cdf:g})",
                                                 base=float(rho_cdf), view="zoom"), key="tr_sweep_cdf")
                    for b in sweeps.best_settings(losses, fam):
                        if b["status"] == "none_within_share":
                            st.markdown(f"- At base ρ = {b['base_rho']:g}, every setting swept puts more than 1% of "
                                        "records above the base loss.")
                        elif b["status"] == "undefined":
                            st.markdown(f"- At base ρ = {b['base_rho']:g}, the relative error of {md_escape(fam)} is "
                                        "undefined: every true answer it covers is 0.")
                        else:
                            st.markdown(f"- At base ρ = {b['base_rho']:g}, the best setting keeping at most 1% of "
                                        f"records above the base loss is **{b['setting']}**: median answer error "
                                        f"**{b['median_are']:.1%}** for {md_escape(fam)}, "
                                        f"**{b['share_above_base']:.2%}** of records paying more.")

with tab_top:
    if review.shows_records("scheme errors"):
        st.markdown("Every scheme answers the same workload — COUNT and one SUM per measure at each group-by level "
                    "— with the same base loss. Top-coding clamps values (bias, flat loss); splitting cuts them (no "
                    "bias, ρ·m(r)²).")
        groups = list(ds.schema.groups)
        c1, c2 = st.columns(2)
        geo_default = "COUNTY" if "COUNTY" in groups else None
        geo = c1.selectbox("Geography (added to every level)", [None] + groups,
                           index=([None] + groups).index(geo_default),
                           format_func=lambda g: "(none)" if g is None else g, key="tr_geo")
        lv_default = [g for g in groups if g.startswith("NAICS")] or groups[:1]
        levels = c2.multiselect("Levels", [g for g in groups if g != geo], default=[g for g in lv_default if g != geo],
                                key="tr_levels")
        c3, c4 = st.columns(2)
        base = c3.number_input("Base loss ρ", min_value=0.001, value=1.0, key="tr_top_rho")
        min_top = c4.number_input("Answers with at least … records", min_value=1, value=T.default_min_records(ds),
                                  key="tr_top_min")
        split_s, top_s = T.schemes_for(ds, measures)
        st.caption("Schemes — splitting: "
                   + "; ".join(f"**{k}** " + ", ".join(f"T({md_escape(m)})={v:,.4g}" for m, v in t.items())
                               for k, t in split_s.items())
                   + " — top-coding: "
                   + "; ".join(f"**{k}** " + ", ".join(f"c({md_escape(m)})={v:,.4g}" for m, v in t.items())
                               for k, t in top_s.items()))
        if not levels:
            st.info("Choose at least one level.")
        else:
            lv = tuple(((geo, g) if geo else (g,)) for g in levels)
            try:
                comp = T.compare(tok, T.key([lv, split_s, top_s, base, int(min_top)]), ds, tuple(measures), lv,
                                 split_s, top_s, float(base), int(min_top))
            except PrdpError as err:
                show_error(err)
            else:
                if comp.empty:
                    st.warning("No answer has that many records: lower the minimum.")
                for fam in comp["family"].unique() if not comp.empty else []:
                    stats_ = analysis.summarize_errors(comp[comp["family"] == fam], by=("level", "scheme"))
                    figures.show(box_from_quantiles(stats_, x="level", color="scheme", title=f"{fam}: ARE by level",
                                                    x_label="group-by level",
                                                    lines=((0.05, "5%"), (0.2, "20%"))), key=f"tr_top_{fam}")
                if not comp.empty:
                    med = comp.groupby(["family", "scheme"], observed=True)["median_are"].median().unstack()
                    st.dataframe(med.style.format("{:.2%}"))

with tab_fit:
    if review.shows_records("budgets for goals"):
        c1, c2, c3, c4 = st.columns(4)
        targets = c1.multiselect("Relative-error goals", list(options.FIT_TARGETS), default=[0.05, 0.1, 0.2],
                                 format_func=lambda t: f"{t:.0%}", key="tr_targets")
        gamma = c2.number_input("with probability γ", 0.5, 0.999, 0.95, key="tr_gamma")
        share = c3.number_input("for this share of answers", 0.1, 1.0, 0.95, key="tr_share")
        min_fit = c4.number_input("with at least … records", min_value=1, value=T.default_min_records(ds),
                                  key="tr_fmin")
        if not targets:
            st.info("Choose at least one relative-error goal.")
        else:
            try:
                curves, table = T.fitness(tok, pk, tuple(sorted(targets)), float(gamma), float(share), int(min_fit), ds,
                                          pol)
            except PrdpError as err:
                show_error(err)
            else:
                figures.show(loss_cdf_figure(curves, title="Smallest policy meeting each goal (per record)",
                                             base=pol.workload.total_rho, view="cdf"), key="tr_fit_cdf")
                st.dataframe(table.style.format("{:,.4g}"), hide_index=True)
                st.caption("Fig. 4 of the paper: with the active thresholds, the budgets each query family needs so "
                           f"that {share:.0%} of its answers are within the goal with probability {gamma:.0%}; the "
                           "curves are the per-record losses those budgets imply. The dotted line is the active "
                           "policy's base loss.")

with tab_solve:
    if review.shows_records("solved budgets"):
        c1, c2, c3 = st.columns(3)
        target = c1.number_input("Relative-error goal", 0.001, 10.0, 0.05, format="%.3f", key="tr_solve_t")
        g2 = c2.number_input("Probability γ", 0.5, 0.999, 0.95, key="tr_solve_g")
        s2 = c3.number_input("Share of answers", 0.1, 1.0, 0.95, key="tr_solve_s")
        min_s = st.number_input("Answers with at least … records", min_value=1, value=T.default_min_records(ds),
                                key="tr_solve_min")
        try:
            sol, caps = T.solve(tok, pk, float(target), float(g2), float(s2), int(min_s), ds, pol)
        except PrdpError as err:
            show_error(err)
        else:
            st.success(md_escape(sol.describe()))
            st.warning("These budgets are computed from the **true answers**: publishing them exactly would reveal an "
                       "answer. Adopting them rounds each budget up to two significant digits; for a real release, "
                       "settle budgets on public grounds (or on public or synthetic data).")
            st.button("Use these budgets (rounded up) in the active policy", key="tr_use_budgets",
                      on_click=pstate.adopt_policy, args=(sol.rounded(),))
            if caps:
                st.markdown("At the current budgets, the **largest thresholds** meeting the goal: "
                            + ", ".join(f"T({md_escape(m)}) ≤ {t:,.4g}" for m, t in caps.items()) + ".")

with tab_clip:
    st.markdown("Fig. 1 of the paper: a global ρ-zCDP sum of heavy-tailed Pareto(1, α) values must clip them at Δ. "
                "Small Δ: huge bias; large Δ: huge noise. Even at the best Δ the error dwarfs the sum.")
    c1, c2, c3 = st.columns(3)
    n = c1.number_input("n (records)", min_value=10, value=1000, step=100, key="tr_clip_n")
    alphas = c2.multiselect("Tail index α", list(options.CLIP_ALPHAS), default=[1.2, 1.5, 2.0], key="tr_clip_a")
    rho_c = c3.select_slider("Budget ρ (zCDP) of the sum", options=list(options.CLIP_RHOS), value=1.0,
                             key="tr_clip_rho")
    if not alphas:
        st.info("Choose at least one tail index α.")
    else:
        curves, optima = T.clip_curves(int(n), tuple(alphas), float(rho_c))
        figures.show(mse_figure(curves, optima), key="tr_clip_chart")
    for a in alphas:
        name = f"α = {a:g}"
        ratio = float(analysis.clipped_pareto_mse_ratio(optima[name], n=int(n), alpha=a, rho=float(rho_c)))
        st.markdown(f"- {name}: best Δ = {optima[name]:,.0f}, where MSE / E[sum] = {ratio:,.0f}.")

code_expander(snippet_code("tradeoffs", pol))
