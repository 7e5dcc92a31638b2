"""The views of the Personalized DP page (one function per view of its *View* radio): layout only, every
number from :mod:`prdp_core.mechanisms.personalized` through the helpers of :mod:`ui.personalized`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import numpy as np
import streamlit as st

from prdp_core.charts import personalized as pch
from prdp_core.core.errors import PrdpError
from prdp_core.core.provenance import is_data_derived, is_private, source_detail
from prdp_core.core.secure import mode_label
from prdp_core.data.dataset import Dataset
from prdp_core.mechanisms import personalized

from . import state
from .common import confidential, learn, md_escape, mode_notice, seeded_notice, show_error
from .figures import show
from .personalized import (
    MECHANISM_CHOICES,
    T_RULES,
    assumed_default,
    cached_compare,
    cached_curve,
    cached_experiment,
    compare_display,
    data_default_params,
    data_default_text,
    delivered_display,
    fmt,
    on_run_release,
    pi_thresholds,
    prdp_run_key,
    proxy_bound,
    query_from_widgets,
    spec_key,
    t_grid,
    t_slider_range,
    t_slider_step,
)


@dataclass(frozen=True)
class View:
    """What every view reads: the active dataset and specification, the mechanisms of the comparison, the session's
    noise source (``rng``, ``seed``) and the mode (``teaching``: statistics of the records may be shown)."""

    ds: Dataset
    spec: personalized.PrivacySpec
    mechs: dict[str, Any]
    rng: np.random.Generator
    seed: int
    teaching: bool


def view_delivered(v: View) -> None:
    """What each mechanism delivers to each user: the CDFs of delivered ε, the π curves and the neighbour notions."""
    ss, spec, mechs_all = st.session_state, v.spec, v.mechs
    st.subheader("What each mechanism delivers to each user")
    lo_t, hi_t, start_t = t_slider_range(spec)
    ss.setdefault("pdp_t", start_t)
    if not lo_t <= ss["pdp_t"] <= hi_t:
        ss["pdp_t"] = start_t
    st.slider("Threshold t for T(t) and S(t)", min_value=lo_t, max_value=hi_t, step=t_slider_step(spec),
              key="pdp_t")
    t = float(ss["pdp_t"])
    shown = {"Minimum": personalized.Minimum(), f"Threshold t={t:g}": personalized.Threshold(t),
             f"Sample t={t:g}": personalized.Sample(t), "Sample t=max Φ": personalized.Sample("max"),
             "PE": personalized.PE(), "Stretching": personalized.Stretching()}
    show(pch.delivered_cdf_figure(spec.eps, personalized.delivered_by_mechanism(spec, shown)), key="pdp_cdf")
    table = personalized.delivered_table(spec, shown)
    st.dataframe(delivered_display(table), hide_index=True)
    row = table.set_index("mechanism").loc[f"Sample t={t:g}"]
    unused = table.set_index("mechanism").loc[f"Threshold t={t:g}"].users_unused
    st.markdown(f"- **Sample(t = {t:g})** gives {row.users_full_phi:.0%} of users exactly their Φ; the others "
                f"(Φ > t) get t — more protection than they asked for. Each user gets min(Φ, t).\n"
                f"- **Threshold(t = {t:g})** does not use the data of {unused:.0%} of users (Φ < t).\n"
                f"- **Minimum** gives everybody α = {spec.min_eps:.3g}, the most conservative choice.")
    learn("**Reading the CDFs.** A curve to the left of *requested Φ* means users are protected more than they "
          "asked (their data is used less, or with more noise). PDP only requires delivered ≤ requested; "
          "everything between costs accuracy.")
    grid, curves = personalized.pi_curves(pi_thresholds(spec, t), upto=spec.max_eps)
    show(pch.pi_curve_figure(grid, curves), key="pdp_pi")
    st.markdown("**Neighbour notion of each guarantee** (for a count)")
    st.dataframe(personalized.neighbour_table(mechs_all, spec), hide_index=True)
    if spec.roster == "table":
        st.caption("The roster comes from the table, so every guarantee is a substitution guarantee (n, the users and "
                   "their Φ public). The curves above are the per-user ε of a count; a sum with lo < 0 < hi and the "
                   "rank-score median cost up to twice as much under substitution (each release states its own).")
    else:
        st.caption("PE is proved only for substitution neighbours (n public); a substitution-ε is roughly twice as "
                   "weak as an add/remove-ε, so PE's numbers are not directly comparable with the others.")


def view_threshold_explorer(v: View) -> None:
    """Error against the threshold t of Sample and Threshold: a data-free proxy curve, or (teaching mode) the
    oracle curve on the private data."""
    ss, ds, spec, seed, teaching = st.session_state, v.ds, v.spec, v.seed, v.teaching
    st.subheader("Error against the threshold t (Sample and Threshold)")
    kind = st.selectbox("Query", ["count", "sum", "mean", "median"], key="pdp_tq")
    modes = ["proxy", "oracle"] if teaching else ["proxy"]
    if kind in ("mean", "median"):
        modes = ["oracle"] if teaching else []
    if not modes:
        st.info("Review mode hides curves computed on the private data, and this query has no data-free proxy. "
                "Switch to teaching mode (sidebar) to see the oracle curve.")
    else:
        if not teaching:
            st.info("Review mode: the oracle curve, a simulation of the mechanisms on the private data, is offered in "
                    "teaching mode only.")
        mode = st.radio("Curve computed from", modes, key=f"pdp_mode_{kind}", horizontal=True,
                        format_func={"proxy": "assumed data (safe to tune on)",
                                     "oracle": "the private data (oracle: design only)"}.get)
        markers = {"max Φ": spec.max_eps, "mean Φ": spec.mean_eps}
        ts = t_grid(spec)
        try:
            q = query_from_widgets(kind)
            unit = "tuples" if kind == "count" else ss["pdp_value"]
            if mode == "proxy":
                if kind == "count":
                    dens = st.slider("Assumed share of tuples that count (δ)", 0.0, 1.0, 0.15, 0.01, key="pdp_density")
                    curve = personalized.count_mse_proxy(spec.eps, ts, density=dens)
                else:
                    a1, a2 = st.columns(2)
                    guess = assumed_default(q)
                    mean_v = a1.number_input("Assumed mean value (e.g. from old data)", min_value=0.0, value=guess,
                                             key="pdp_assumed_mean")
                    sd_v = a2.number_input("Assumed standard deviation", min_value=0.0, value=guess,
                                           key="pdp_assumed_sd")
                    curve = personalized.sum_mse_proxy(spec.eps, ts, mean=mean_v, sd=sd_v, bound=proxy_bound(q, spec))
                st.caption("Closed form from the public specification and the assumed data only: choosing t from "
                           "this curve costs no privacy (paper Sec. IV-B: use old or public data).")
                show(pch.threshold_curve_figure({"Sample (assumed data)": curve}, markers, unit=unit),
                     key="pdp_curve_proxy")
                best = curve.loc[curve["rmse"].idxmin()]  # type: ignore[call-overload]  # idxmin gives a row label
            else:
                st.warning("**Oracle curve — uses the private data.** Picking t from this curve tunes the mechanism "
                           "on the very data it protects and leaks information about it (paper Sec. IV-B); the "
                           "release would then not be Φ-PDP as stated. Use it to learn and to design, then fix t "
                           "from public or old data, or use the heuristics max Φ / mean Φ.",
                           icon=":material/warning:")
                runs = st.number_input("Simulation runs per t (mean, median)", 10, 2000, 50, 10, key="pdp_curve_runs")
                curves = {"Sample": cached_curve(state.token(), spec_key(), q, ts, "sample", int(runs), seed, teaching,
                                                 ds, spec),
                          "Threshold": cached_curve(state.token(), spec_key(), q, ts, "threshold", int(runs), seed,
                                                    teaching, ds, spec)}
                show(pch.threshold_curve_figure(curves, markers, unit=unit), key="pdp_curve_oracle")
                curve = curves["Sample"]
                best = curve.loc[curve["rmse"].idxmin()]  # type: ignore[call-overload]  # idxmin gives a row label
                confidential("Errors computed against the true answer.")
            at_max = curve.loc[(curve["t"] - spec.max_eps).abs().idxmin()]  # type: ignore[call-overload]  # idxmin gives a row label
            st.markdown(f"Lowest RMSE on this grid at **t ≈ {best.t:.3g}** ({fmt(best.rmse)} {unit}); at t = max Φ "
                        f"the RMSE is {fmt(at_max.rmse)}. Small t keeps more tuples but adds more noise; large t the "
                        f"reverse. Method: {best.method}.")
        except PrdpError as err:
            show_error(err)


def view_compare(v: View) -> None:
    """All mechanisms on count, median and sum against the true answers (teaching mode only)."""
    ss, ds, spec, seed, teaching = st.session_state, v.ds, v.spec, v.seed, v.teaching
    st.subheader("All mechanisms on count, median and sum")
    if not teaching:
        st.info("Review mode hides errors computed against the true answers. Switch to teaching mode (sidebar).")
    else:
        st.caption("Errors are computed on the active dataset against its true answers (design and teaching only). "
                   "Exact where the output law is known (closed forms, exact pmfs), simulated otherwise.")
        runs = st.number_input("Simulation runs (where no closed form exists)", 20, 2000, 100, 20, key="pdp_cmp_runs")
        st.selectbox("Black-box median score (M, T, S)", ["rank", "changes"], key="pdp_score",
                     format_func=lambda s: {"rank": "rank score, sensitivity ½ (tighter)",
                                            "changes": "change-count score of Eq. 3 (the paper's)"}[s])
        if st.button("Compare mechanisms", key="pdp_cmp_go", type="primary"):
            ss["pdp_cmp_on"] = True
        if ss.get("pdp_cmp_on"):
            for kind in ("count", "median", "sum"):
                try:
                    q = query_from_widgets(kind)
                    df = cached_compare(state.token(), spec_key(), q, int(runs), seed, teaching, ds, spec)
                    unit = "tuples" if kind == "count" else ss["pdp_value"]
                    show(pch.comparison_figure(df, unit=unit, title=f"RMSE of {q.describe()}"),
                         key=f"pdp_cmp_{kind}")
                    best = df.loc[df["rmse"].idxmin()]  # type: ignore[call-overload]  # idxmin gives a row label
                    st.markdown(f"**{md_escape(q.describe())}** (true answer {fmt(df['truth'].iloc[0])}): lowest RMSE "
                                f"**{best.mechanism}** ({fmt(best.rmse)}, {best.neighbours} neighbours).")
                    st.dataframe(compare_display(df), hide_index=True)
                except PrdpError as err:
                    show_error(err)
            confidential("True answers and errors describe the real records.")
            if spec.roster == "table":
                st.caption("The roster comes from the table: every row is a substitution guarantee (red).")
            else:
                st.caption("PE (red) is proved under substitution neighbours, the others (blue) under add/remove: its "
                           "guarantee is about twice as weak for the same Φ.")


def view_run_release(v: View) -> None:
    """One release of the chosen mechanism, added to the session ledger."""
    ss, seed, teaching = st.session_state, v.seed, v.teaching
    st.subheader("Run one release and add it to the session ledger")
    r1, r2, r3 = st.columns(3)
    r1.selectbox("Mechanism", list(MECHANISM_CHOICES), key="pdp_rel_mech", index=2)
    r2.selectbox("Query", personalized.QUERY_KINDS, key="pdp_rel_kind")
    r3.selectbox("Threshold t (T and S)", list(T_RULES), key="pdp_rel_t")
    if T_RULES[ss.get("pdp_rel_t", "max Φ (paper's S)")] == "custom":
        st.number_input("Custom t", 0.001, 100.0, 0.5, 0.01, key="pdp_rel_tc")
        st.caption(":material/warning: A custom t must be fixed without looking at the private data (not from the "
                   "oracle curve), or the guarantee no longer holds.")
    st.checkbox("Rescale count/sum by public quantities (mean π or mean Φ/ε_ref over U; not in the paper)",
                key="pdp_rel_rescale")
    b1, b2 = st.columns([1, 2])
    b2.toggle("Secure release", key="pdp_secure",
              help="Exact noise and coins from OpenDP and the system random source, answers on a documented grid, "
                   "each user's loss certified; unseeded, so not reproducible. Off: a seeded teaching run.")
    b1.button("Run release", key="pdp_run", type="primary", on_click=on_run_release)
    if ss.get("pdp_release_error") is not None:
        show_error(ss["pdp_release_error"])
    rel = ss.get("pdp_last_release")
    if rel is not None:
        ans = rel.answers.iloc[0]
        st.markdown(f"**{md_escape(ans['query'])}** by {md_escape(rel.params['mechanism'])}: **{ans['estimate']:,.4g}**"
                    f" — {mode_label(rel.secure)}")
        if teaching and rel.truth_included and "true" in rel.answers.columns:
            st.markdown(f"True answer {ans['true']:,.4g} (error {ans['error']:+,.4g}).")
            confidential()
        if rel.extras.get("bias"):
            st.warning(rel.extras["bias"], icon=":material/trending_down:")
        st.markdown(f"Promise: {md_escape(rel.extras['promise'])}. "
                    f"Neighbours: {personalized.NEIGHBOUR_TEXT[rel.params['neighbours']]}.")
        st.caption(f"Roster: {md_escape(rel.extras.get('roster', ''))}.")
        flagged = [k[:-len('_source')] for k, v in rel.params.items()
                   if k.endswith("_source") and k != "spec_source" and is_data_derived(v)]
        private = [f"{k[:-len('_source')]} ({md_escape(source_detail(v))})" for k, v in rel.params.items()
                   if k.endswith("_source") and is_private(v)]
        if private:
            st.caption(f":material/verified: {', '.join(private)}: released by a private suggestion, charged to "
                       "the ledger.")
        if flagged:
            verb = "is a design default" if len(flagged) == 1 else "are design defaults"
            origins = "; ".join(f"{n}: {personalized.DESIGN_DEFAULTS[n].origin}" for n in flagged
                                if n in personalized.DESIGN_DEFAULTS)
            st.caption(f":material/lock: {' and '.join(flagged)} of this release {verb}, depending on the "
                       f"confidential data ({origins}) — marked as such in the ledger.")
        if teaching and rel.loss is not None:
            prof = rel.loss_profile("delivered ε")
            st.markdown(f"Delivered ε: median {prof.quantile(0.5):.3g}, largest {rel.loss.max():.3g}; "
                        f"every user within their request: **{rel.check_delivered_within_requested()}**.")
        mode_notice(rel.secure, rel.seed if rel.seed is not None else seed,
                    f"exact OpenDP samplers, the loss OpenDP certifies is at most "
                    f"{rel.params.get('certified_ratio', 1.0):.6g} × each user's promised ε")
        st.caption(f"The session ledger holds {len(state.ledger())} release(s).")


def view_pe_scores(v: View) -> None:
    """PE's personalized score d(D, r, Φ) on the paper's example or (teaching mode) the active data."""
    ds, spec, teaching = v.ds, v.spec, v.teaching
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
            q = query_from_widgets(kind)
            raw = q.raw(ds.table)
            prof = personalized.pe_profile(kind, q.prepare(raw), spec.phi_for(ds.table), lo=q.lo, hi=q.hi,
                                integer=q.on_integers)
            truth = q.truth(raw)
            confidential("The score depends on the real records.")
        show(pch.pe_score_figure(prof["r"].to_numpy(), prof["d"].to_numpy(), prof["probability"].to_numpy(),
                                 truth=truth), key="pdp_pe_fig")
        st.caption("Neighbours: substitution (one tuple's value changes, n public).")
    except PrdpError as err:
        show_error(err)


def view_prdp(v: View) -> None:
    """The same users under PrDP (E(r) = c·v_bud, public ε̌ and ε̂) beside PDP."""
    ss, ds, spec, seed, teaching, rng = st.session_state, v.ds, v.spec, v.seed, v.teaching, v.rng
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
        q = query_from_widgets(kind)
        if data_default_params(kind):
            st.caption(f":material/lock: Still at a design default (U = hi for PrDP): "
                       f"{data_default_text(data_default_params(kind))}.")
        run_key = prdp_run_key(q, c_val, e_lo, e_hi, seed, teaching)
        if st.button("Run PDP and PrDP side by side", key="pdp_prdp_go", type="primary"):
            made: list[Any] = []  # every release of the comparison: each is charged to the session ledger
            out = state.release("personalized_compare", partial(
                personalized.compare_with_prdp, ds.table, spec, q, c=c_val, rng=rng, reveal=teaching, eps_min=e_lo,
                eps_max=e_hi, made=made), entries=lambda _: [e for r in made for e in r.entries], keep=False)
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


def view_experiments(v: View) -> None:
    """The paper's count and median experiments on synthetic data (Sec. V-A)."""
    ss, seed = st.session_state, v.seed
    st.subheader("The paper's count and median experiments (Sec. V-A, Table I defaults)")
    st.markdown("Synthetic data: count on 1,000 bits with density 0.15; median on 1,001 values ~ N(500, 200²) in "
                "1..1000. Every run draws a new dataset and a new three-tier specification.")
    e1, e2 = st.columns(2)
    runs = e1.number_input("Runs (the paper: 1,000)", 20, 5000, 200, 20, key="pdp_exp_runs")
    score = e2.selectbox("Black-box median score", ["changes", "rank"], key="pdp_exp_score",
                         format_func=lambda s: {"rank": "rank score (tighter)",
                                                "changes": "change-count (the paper's)"}[s])
    if st.button("Run the experiments", key="pdp_exp_go", type="primary"):
        ss["pdp_exp_on"] = True
    if ss.get("pdp_exp_on"):
        for task in ("count", "median"):
            df = cached_experiment(task, int(runs), score or "changes", seed)
            show(pch.experiment_figure(df, title=f"{task.capitalize()}: RMSE over {int(runs)} runs",
                                       unit="tuples" if task == "count" else "value, 1..1000"),
                 key=f"pdp_exp_{task}")
            order = " < ".join(df.sort_values("rmse")["mechanism"])
            st.markdown(f"**{task}**: {order} (lower is better). The paper: "
                        + ("PE < S-avg < S < M, Alag slightly below S." if task == "count"
                           else "S-avg < S < PE ≈ T ≪ M."))
        seeded_notice(seed)
        st.caption("Full reproduction with 1,000 runs: `benchmarks/repro_pdp_experiments.py` "
                   "(numbers in docs/reproductions/personalized-dp.md).")


#: The page's views, in the order of its *View* radio.
VIEWS: dict[str, Callable[[View], None]] = {"Delivered ε": view_delivered,
                                            "Threshold explorer": view_threshold_explorer,
                                            "Compare mechanisms": view_compare, "Run a release": view_run_release,
                                            "PE scores": view_pe_scores, "PDP vs PrDP": view_prdp,
                                            "Paper experiments": view_experiments}
