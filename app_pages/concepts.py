"""Concepts page: calculators that translate privacy numbers into meaning, the per-attribute
(granular) explorer, the histogram lab and what the guarantees do not promise."""

from __future__ import annotations

from typing import Literal

import streamlit as st

from prdp_core.charts import concepts as charts
from prdp_core.core import accounting, interpret
from prdp_core.core.errors import PrdpError
from prdp_core.mechanisms import granular
from ui import concepts as lab
from ui import exercises, worked_example
from ui.common import code_expander, guarded, learn, show_error
from ui.figures import show
from ui.reproduce import snippet_code

ss = st.session_state
for key, value in {"cc_eps": 1.0, "cc_prior": 1.0, "cc_rho": 2.63, "cc_delta": 1e-6, "cc_eps_target": 10.0,
                   "cc_rec_measure": "rho", "cc_rec_value": 0.5, "pa_d": 20, "pa_k": 2, "pa_eps0": 0.2,
                   "pa_kind": "cdp", **lab.LAB_DEFAULTS}.items():
    ss.setdefault(key, value)

st.title("Concepts")
st.caption("Translate privacy parameters into plain language, see what a per-attribute guarantee costs for a "
           "whole record, compare the paper's heavy-hitter histogram with the standard one, and check what the "
           "guarantees do not promise.")
learn("**Three granularities.** Standard DP bounds what changes when one *record* is added, removed or replaced "
      "(ε, or ρ in zCDP). Per-record DP lets that bound depend on the record, P(r). Per-attribute (partial) DP "
      "bounds the change of *one attribute* of one record, ε0 — a finer statement that supplements, never "
      "replaces, the whole-record one.")

calc_tab, we_tab, ex_tab, attr_tab, lab_tab, lim_tab = st.tabs([
    ":material/calculate: Calculators", ":material/person_search: Worked example", ":material/quiz: Exercises",
    ":material/view_column: Per-attribute explorer", ":material/bar_chart: Histogram lab",
    ":material/checklist: Limitations"])

DELTAS = [1e-5, 1e-6, 1e-8, 1e-10]

# ---------------------------------------------------------------------------
with calc_tab:
    st.subheader("ε → what a worst-case adversary can infer")
    c1, c2 = st.columns(2)
    eps = c1.number_input("ε (pure DP)", min_value=0.0, max_value=100.0, step=0.5, key="cc_eps",
                          help="The privacy loss bound of one record (or one attribute, for per-attribute DP).")
    prior_pct = c2.number_input("Prior belief in a sensitive fact (%)", min_value=0.01, max_value=99.99, step=1.0,
                                key="cc_prior")
    with guarded():
        acc = interpret.inference_accuracy(eps)
        post = interpret.posterior_bound(eps, prior_pct / 100)
        rb1 = interpret.laplace_round_back_eps(eps)
        rb2 = interpret.laplace_round_back_eps(eps, sensitivity=2.0)
        m1, m2, m3 = st.columns(3)
        m1.metric("Best guess of one yes/no fact", interpret.percent(acc))
        m2.metric(f"Posterior from a {prior_pct:g}% prior", interpret.percent(post))
        m3.metric("Laplace count rounds back exactly", interpret.percent(rb1))
        st.markdown(
            f"- At ε = {eps:g}, someone who knows everything except one yes/no fact about a person guesses it "
            f"correctly with probability at most **{interpret.percent(acc)}** (a coin flip is 50%).\n"
            f"- A suspicion held with {prior_pct:g}% certainty can grow to at most **{interpret.percent(post)}**.\n"
            f"- A count published with Laplace noise of scale 1/ε rounds back to the exact count with probability "
            f"**{interpret.percent(rb1)}**; a histogram cell under replacement neighbours (scale 2/ε) with "
            f"**{interpret.percent(rb2)}**. In a sparse histogram that reveals whether a cell holds 0 or 1 person.")
        learn("**Why ε = 10 is weak in the worst case.** Randomized response at ε answers truthfully with "
              "probability e^ε/(1+e^ε); no ε-DP release can let a guesser do better on one bit. At ε = 10 that is "
              "99.995%. Real adversaries rarely reach the worst case, but the guarantee does not promise more.")
        show(charts.accuracy_figure(interpret.accuracy_curve(eps_max=max(20.0, eps)), eps),
             key="cc_accuracy_chart")

    st.subheader("zCDP ↔ (ε, δ)")
    c1, c2, c3 = st.columns(3)
    rho = c1.number_input("ρ (zCDP)", min_value=0.0, max_value=1000.0, step=0.1, key="cc_rho", format="%.3f")
    delta = c2.selectbox("δ", DELTAS, key="cc_delta", format_func=lambda x: f"{x:.0e}")
    eps_target = c3.number_input("ε target (for the reverse question)", min_value=0.01, max_value=1000.0, step=0.5,
                                 key="cc_eps_target")
    with guarded():
        conv = interpret.zcdp_side_by_side(rho, delta)
        m1, m2, m3 = st.columns(3)
        m1.metric("ε by Canonne–Kamath–Steinke", f"{conv.eps_cks:.4g}")
        m2.metric("ε by the textbook bound", f"{conv.eps_textbook:.4g}", delta=f"{conv.saving:+.3g} looser",
                  delta_color="off")
        m3.metric("zCDP's own ε = √(2ρ)", f"{conv.eps_zcdp:.4g}")
        st.caption(lab.zcdp_eps_note(conv))
        r_cks = interpret.rho_for_approx_dp(eps_target, delta)
        r_tb = interpret.rho_for_approx_dp(eps_target, delta, method="textbook")
        st.markdown(
            f"- ρ = {rho:g} zCDP is ({conv.eps_cks:.4g}, {delta:.0e})-DP by the Canonne–Kamath–Steinke "
            f"conversion; "
            f"the textbook bound ρ + 2√(ρ ln(1/δ)) only certifies ε = {conv.eps_textbook:.4g}. Same mechanism, "
            f"same privacy — the conversion is just tighter.\n"
            f"- To promise ({eps_target:g}, {delta:.0e})-DP you may spend up to ρ = **{r_cks:.4g}** (CKS) or "
            f"{r_tb:.4g} (textbook).")
        c26 = interpret.zcdp_side_by_side(2.63, 1e-6)
        c102 = interpret.zcdp_side_by_side(1.02, 1e-6)
        st.caption(f"The 2020 US Census redistricting data is 2.63-zCDP per person: ({c26.eps_cks:.2f}, 1e-6)-DP "
                   f"by CKS vs ({c26.eps_textbook:.2f}, 1e-6) by the textbook bound; for a change of race and "
                   f"ethnicity only, 1.02-zCDP: ({c102.eps_cks:.2f}, 1e-6) vs ({c102.eps_textbook:.2f}, 1e-6).")
        show(charts.conversion_figure(interpret.conversion_table(None, delta, rho_max=max(5.0, rho)),
                                      delta, rho), key="cc_conversion_chart")

    st.subheader("A record with P(r) = x has these guarantees")
    c1, c2 = st.columns(2)
    rec_measures: list[Literal["rho", "eps"]] = ["rho", "eps"]
    measure = c1.radio("Per-record loss measured in", rec_measures, key="cc_rec_measure", horizontal=True,
                       format_func={"rho": "ρ (zCDP, P(r))", "eps": "ε (pure DP, E(r))"}.get)
    x = c2.number_input("x (the record's loss)", min_value=0.0, max_value=1000.0, step=0.1, key="cc_rec_value")
    with guarded():
        g = interpret.record_guarantee(x, measure, delta=delta, prior=prior_pct / 100)
        st.markdown("\n".join(f"- {s}" for s in g.sentences()))
        if measure == "rho":
            st.caption(lab.two_ceilings_note(g))
        ref = interpret.record_guarantee_table([0.01, 0.1, 0.5, 1.0, 2.0, 5.0], measure, delta=delta,
                                               prior=prior_pct / 100)
        sym = "ρ" if measure == "rho" else "ε"
        if measure == "rho":
            ref = ref.drop(columns=["rho"])
        st.dataframe(ref.rename(columns={"loss": f"P(r) in {sym}", "rho": "ρ", "eps_cks": "ε (CKS)",
                                         "eps_textbook": "ε (textbook)", "accuracy": "best guess of a bit",
                                         "posterior": f"posterior from {prior_pct:g}%"}).style.format(
            {"ρ": "{:.4g}", "ε (CKS)": "{:.4g}", "ε (textbook)": "{:.4g}", "best guess of a bit": "{:.2%}",
             f"posterior from {prior_pct:g}%": "{:.2%}", f"P(r) in {sym}": "{:g}"}), hide_index=True,
            key="cc_record_table")
        learn("**Per-record read-out.** Under a per-record policy each record has its own loss P(r). The record "
              "with the largest loss has the release's standard DP guarantee; smaller records are protected "
              "better. The same calculators apply to each record's own number.")

# ---------------------------------------------------------------------------
with we_tab:
    st.subheader("Follow one record through the active policy")
    worked_example.render("cc")

with ex_tab:
    exercises.render()

# ---------------------------------------------------------------------------
with attr_tab:
    st.subheader("Per-attribute vs whole-record cost")
    c1, c2, c3, c4 = st.columns(4)
    d = c1.slider("Attributes per record (d)", 2, 100, key="pa_d")
    if ss["pa_k"] > d:
        ss["pa_k"] = d
    k = c2.slider("Attributes of interest / marginal order (k)", 1, d, key="pa_k")
    eps0 = c3.slider("Per-attribute ε0", 0.01, 2.0, step=0.01, key="pa_eps0")
    kinds: list[Literal["cdp", "pure"]] = ["cdp", "pure"]
    kind = c4.radio("Guarantee", kinds, key="pa_kind",
                    format_func={"cdp": "zCDP (ε0 in √(2ρ) units)", "pure": "pure DP"}.get)
    learn("**Per-attribute DP (partial DP).** ε0 bounds what changes when *one attribute* of one person changes "
          "(e.g. their income, but not their age). Group privacy turns it into a whole-record guarantee: d·ε0 in "
          "pure DP, ρ = ½(d·ε0)² in zCDP (Prop. 8). Releases on disjoint attributes add up for the whole record "
          "but not per attribute (Lemma 10). Gaussian k-way marginals calibrated to ε0 per attribute cost "
          "ε0·√(d/k) for the whole record (Thm 11).")
    with guarded():
        cost = granular.record_cost_table(d, eps0, k=k, delta=delta)
        rows = cost.set_index("statement")
        one, kk, whole, disj, work = (rows.iloc[i] for i in range(5))
        if kind == "pure":
            st.markdown(
                f"- Changing **one attribute** of a person costs ε0 = **{eps0:g}**.\n"
                f"- Changing **{k} attributes** costs at most **{kk['pure']:.3g}** (group privacy).\n"
                f"- Changing the **whole record** ({d} attributes) costs at most **ε = {whole['pure']:.3g}** — "
                f"a worst-case guesser reaches {interpret.percent(interpret.inference_accuracy(whole['pure']))} "
                f"on one bit.\n"
                f"- {d} separate ε0-DP releases, one per attribute, also cost ε = {disj['pure']:.3g} per record.")
        else:
            st.markdown(
                f"- Changing **one attribute** costs ρ = ½ε0² = **{one['rho']:.4g}**.\n"
                f"- Changing **{k} attributes** costs ρ ≤ **{kk['rho']:.4g}** (group privacy: quadratic in k).\n"
                f"- The **whole record** ({d} attributes) by group privacy: ρ ≤ **{whole['rho']:.4g}**, i.e. "
                f"({whole['eps_cks']:.3g}, {delta:.0e})-DP.\n"
                f"- {d} separate releases, one per attribute, each ρ = {one['rho']:.4g}: the whole record pays "
                f"ρ = {disj['rho']:.4g} (they add), i.e. ({disj['eps_cks']:.3g}, {delta:.0e})-DP.\n"
                f"- Gaussian {k}-way marginal tables calibrated to ε0 per attribute: the whole record pays only "
                f"ρ = {work['rho']:.4g} (ε/ε0 = √(d/k) = {granular.workload_ratio('marginals', d, k):.3g}), i.e. "
                f"({work['eps_cks']:.3g}, {delta:.0e})-DP.")
        st.dataframe(cost.rename(columns={"pure": "ε (pure)", "rho": "ρ (zCDP)",
                                          "eps_cks": f"ε at δ = {delta:.0e}"})
                     .style.format({"ε (pure)": "{:.4g}", "ρ (zCDP)": "{:.4g}", f"ε at δ = {delta:.0e}": "{:.4g}"},
                                   na_rep="—"), hide_index=True, key="pa_cost_table")
        c1, c2 = st.columns(2)
        with c1:
            show(charts.granularity_figure(granular.granularity_table(d, eps0, k=k, kind=kind),
                                           kind=kind, k=k), key="pa_granularity_chart")
        with c2:
            show(charts.record_ratio_figure(granular.record_ratio_table(100, k=k), k=k),
                 key="pa_ratio_chart")
        st.caption("No free lunch: at the *same whole-record* ε, a standard mechanism is at least as accurate. "
                   "The per-attribute number is an extra, finer statement about the same release.")

    st.subheader("Attribute-subset accountant (2020 Census style)")
    st.markdown("Each release reads some attributes and spends ρ. A change confined to a set S of attributes moves "
                "only the releases that read one of them: **ρ(S) = Σ ρ_r over releases r touching S**. Edit the "
                "table; the preset is an *illustrative* split chosen to match the paper's totals (2.63 per person, "
                "1.02 for race and ethnicity) — the Bureau's own allocation tables are not in the paper.")
    preset = lab.releases_base(granular.releases_table(granular.census_2020_illustrative()))
    edited = st.data_editor(preset, key="pa_releases", num_rows="dynamic", hide_index=True,
                            column_config={"rho": st.column_config.NumberColumn("ρ (zCDP)", min_value=0.0,
                                                                                format="%.3f")})
    ss["pa_releases_current"] = edited  # kept while another page is open (Streamlit drops editor edits)
    try:
        releases = granular.releases_from_table(edited)
    except PrdpError as err:
        show_error(err)
        releases = []
    if releases:
        attrs = sorted(set().union(*(r.attributes for r in releases)))
        ss["pa_subset"] = [a for a in ss.get("pa_subset", ["race", "ethnicity"]) if a in attrs]
        subset = st.multiselect("Attributes that change", attrs, key="pa_subset")
        with guarded():
            table = accounting.attribute_rho_table(releases, delta)
            total = float(table["rho"].iloc[-1])
            rho_s = accounting.attribute_subset_rho(releases, subset)
            conv_s = interpret.zcdp_side_by_side(rho_s, delta) if rho_s > 0 else None
            conv_t = interpret.zcdp_side_by_side(total, delta)
            what = ", ".join(subset) if subset else "nothing"
            st.markdown(
                f"- Changing **{what}**: ρ(S) = **{rho_s:.4g}**"
                + (f" ⇒ ({conv_s.eps_cks:.3g}, {delta:.0e})-DP (textbook: {conv_s.eps_textbook:.3g})." if conv_s
                   else " — no release reads these attributes.")
                + f"\n- Changing the **whole record**: ρ = **{total:.4g}** ⇒ ({conv_t.eps_cks:.3g}, {delta:.0e})-DP "
                f"(textbook: {conv_t.eps_textbook:.3g}).")
            show(charts.attribute_rho_figure(table, rho_s if subset else None), key="pa_attr_chart")

# ---------------------------------------------------------------------------
with lab_tab:
    lab.histogram_lab_tab()


# ---------------------------------------------------------------------------
with lim_tab:
    st.subheader("What the guarantees do not promise")
    st.markdown("Tick each question once it is answered for your release. The checklist is for the review "
                "discussion; nothing is stored.")
    for scope, title in (("per-attribute", "Per-attribute (granular) guarantees"),
                         ("per-record", "Per-record guarantees"), ("both", "Both")):
        st.markdown(f"**{title}**")
        for i, item in enumerate(interpret.LIMITATIONS):
            if item.applies_to != scope:
                continue
            st.checkbox(f"{item.title} — {item.question}", key=f"lim_{i}")
            st.caption(item.explanation)

code_expander(snippet_code("granular"))
