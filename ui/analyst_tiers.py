"""Helpers of the Analyst tiers page: tiers from the editor, the query from the widgets, cached engine
calls, the release callback, the accuracy and plan sections."""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Callable

import numpy as np
import pandas as pd
import streamlit as st

from prdp_core.charts import multitier as mch
from prdp_core.core.errors import ParameterError, PrdpError
from prdp_core.core.provenance import mark_sources
from prdp_core.core.release import Release
from prdp_core.core.secure import mode_label
from prdp_core.data.dataset import Dataset
from prdp_core.mechanisms import granular
from prdp_core.mechanisms import multitier as mt

from . import figures, memory, private_suggest, state
from .common import confidential, learn, md_escape, mode_notice
from .page_state import PageState

NO_FILTER = "(no filter)"

PRESETS: dict[str, list[tuple[str, float]]] = {
    "Workshop example: public 0.5, researchers 2, agency 8": [("public", 0.5), ("researchers", 2.0),
                                                               ("agency", 8.0)],
    "Paper's grid: ε = 0.4, 0.8, …, 4.0 (10 tiers)": [(f"tier {i}", round(0.4 * i, 2)) for i in range(10, 0, -1)],
    "Two tiers far apart: 5 and 0.1": [("insiders", 5.0), ("open data", 0.1)],
}

#: Widget keys of the page and their defaults.
DEFAULTS: dict[str, Any] = {
    "mt_model": "central", "mt_clip": 100.0, "mt_query": "count", "mt_family": "geometric", "mt_delta": 1e-6,
    "mt_filter_col": NO_FILTER, "mt_filter_op": "==", "mt_d": 16, "mt_scale": "log", "mt_top": mt.DEFAULT_TOP,
    "mt_variant": "subset2", "mt_editor_version": 0,
}

#: Widget keys whose values survive while their widgets are hidden (Streamlit forgets those otherwise).
KEEP = ("mt_query", "mt_family", "mt_delta", "mt_measure", "mt_clip", "mt_local_measure", "mt_d", "mt_scale",
        "mt_top", "mt_variant", "mt_filter_op", "mt_filter_val")

FAMILY_CHOICES = {
    "geometric": "Two-sided geometric (integer noise; optimal for counts)",
    "laplace": "Laplace",
    "gaussian": "Gaussian ((ε, δ); ledger in ρ)",
    "multiscale_geometric": "Multi-scale geometric Σξ·TSG (Δ > 1 construction)",
}


def init(ds: Dataset) -> None:
    """Fill in the page's defaults (once per session; measure defaults when the dataset changes).

    Defaults never come from the data: the clipping bound U of a sum starts at a round public value
    (a bound read off the data's percentiles would be a data-dependent sensitivity)."""
    ss = st.session_state
    for k in KEEP:  # keep settings of widgets that are not on screen (model switch, filter off)
        if k in ss:
            ss[k] = ss[k]
    for k, v in DEFAULTS.items():
        ss.setdefault(k, v)
    ss.setdefault("mt_tiers_base", pd.DataFrame(PRESETS[next(iter(PRESETS))], columns=["name", "eps"]))
    cur = current_table()
    if cur is not None and editor_key() not in ss:
        # back from another page: Streamlit dropped the editor's edits with its widget; start from the table
        # as it was last shown (the editor has no pending edits, so nothing is applied twice)
        ss["mt_tiers_base"] = cur
    measures = list(ds.schema.measures)
    if ss.get("mt_measure") not in measures:
        ss["mt_measure"] = measures[0]
    if ss.get("mt_local_measure") not in measures:
        ss["mt_local_measure"] = measures[0]


def on_preset() -> None:
    """Replace the tier table by the chosen preset (a fresh editor, so old edits do not linger)."""
    ss = st.session_state
    rows = PRESETS.get(ss.get("mt_preset", ""), [])
    if rows:
        ss["mt_tiers_base"] = pd.DataFrame(rows, columns=["name", "eps"])
        ss["mt_editor_version"] = int(ss.get("mt_editor_version", 0)) + 1
        ss.pop("mt_release", None)


def remember_table(edited: pd.DataFrame) -> None:
    """Keep the tier table as shown (edits included) for the editor it came from."""
    st.session_state["mt_tiers_current"] = (int(st.session_state.get("mt_editor_version", 0)), edited)


def current_table() -> pd.DataFrame | None:
    """The tier table as last shown, if it belongs to the current editor (a preset or an import starts a new
    editor, whose base replaces it)."""
    ss = st.session_state
    cur = ss.get("mt_tiers_current")
    if (isinstance(cur, tuple) and len(cur) == 2 and cur[0] == int(ss.get("mt_editor_version", 0))
            and isinstance(cur[1], pd.DataFrame)):
        return cur[1].copy().reset_index(drop=True)
    return None


def editor_key() -> str:
    return f"mt_tiers_editor_{st.session_state.get('mt_editor_version', 0)}"


def tiers_key(tiers: tuple[mt.Tier, ...]) -> tuple[tuple[str, float], ...]:
    return tuple((t.name, float(t.eps)) for t in tiers)


def filter_columns(ds: Dataset) -> list[str]:
    return [NO_FILTER] + [g for g in ds.schema.groups] + [m for m in ds.schema.measures if m not in ds.schema.groups]


def filter_values(col: str) -> list[str] | None:
    """The public categories of a group column (the active sample's documented domain), or None.

    The filter's value box never lists the values present in the data (that list would itself be
    a disclosure): without a documented domain the value is typed in."""
    src = state.source()
    if src.get("kind") != "sample":
        return None
    dom = granular.sample_domains(str(src.get("name"))).get(col)
    return None if dom is None else [str(v) for v in dom]


def record_filter(ds: Dataset) -> mt.RecordFilter | None:
    col = _get("mt_filter_col")
    if col in (None, NO_FILTER) or col not in ds.table.columns:
        return None
    return mt.RecordFilter(col, _get("mt_filter_op"), st.session_state.get("mt_filter_val"))


def _fkey(f: mt.RecordFilter | None) -> tuple | None:
    return None if f is None else (f.column, f.op, str(f.value))


@st.cache_data(show_spinner=False, max_entries=32, scope="session")
def cached_query(token: str, kind: str, measure: str | None, clip: float | None, fkey: tuple | None,
                 integer: bool, _ds: Dataset) -> mt.CentralQuery:
    f = None if fkey is None else mt.RecordFilter(*fkey)
    return mt.central_query(_ds.table, kind, measure=measure, clip=clip, filter=f, integer=integer)


@st.cache_data(show_spinner=False, max_entries=16, scope="session")
def cached_codes(token: str, measure: str, d: int, scale: str, top: float, fkey: tuple | None,
                 _ds: Dataset) -> tuple[np.ndarray, list[str]]:
    """Category of every record for the local model (public bins of the measure; records outside
    the filter report the public category "not matching"), and the category labels."""
    f = None if fkey is None else mt.RecordFilter(*fkey)
    return mt.local_categories(_ds.table, measure, d, scale=scale, top=top, filter=f)


@st.cache_data(show_spinner=False, max_entries=32)
def cached_central_plan(tkey: tuple, family: str, sensitivity: float, delta: float) -> mt.CentralPlan:
    return mt.plan_central(list(tkey), family, sensitivity=sensitivity, delta=delta)


@st.cache_data(show_spinner=False, max_entries=32)
def cached_local_plan(tkey: tuple, d: int, variant: str) -> mt.LocalPlan:
    return mt.plan_local(list(tkey), d, variant=variant)


@st.cache_data(show_spinner="Computing coalition losses…", max_entries=32)
def cached_coalitions(model: str, tkey: tuple, settings: tuple, _plan: mt.CentralPlan | mt.LocalPlan,
                      members: tuple[str, ...]) -> tuple[pd.DataFrame, mt.CoalitionLoss]:
    return mt.coalition_table(_plan), mt.coalition_loss(_plan, list(members))


@st.cache_data(show_spinner=False, max_entries=2)
def table1_examples() -> dict[str, Any]:
    """The paper's non-existence counterexamples, computed by the validity check (Remark 4.1, App. F)."""
    dg = mt.check_residual("discrete_gaussian", 1.0, 1.0, params=(1.0, 1.1))
    sc = mt.check_residual("staircase", 2.8, 1.0, points=(0.0, 5 * math.pi))
    r5 = float(mt.residual_ratio("staircase", 2.8, 1.0, np.array([5 * math.pi]))[0])
    t = np.linspace(0.01, 6 * math.pi, 1500)
    ratios = {"discrete Gaussian σ 1 → 1.1": mt.residual_ratio("discrete_gaussian", 1, 1, t, params=(1.0, 1.1)),
              "staircase ε 2.8 → 1": mt.residual_ratio("staircase", 2.8, 1.0, t),
              "two-sided geometric ε 2.8 → 1 (valid)": mt.residual_ratio("geometric", 2.8, 1.0, t)}
    return {"dg": dg, "sc": sc, "r5pi": r5, "t": t, "ratios": ratios}


def _get(key: str) -> Any:
    """A widget value, or its default when the widget is not on screen (Streamlit forgets those)."""
    v = st.session_state.get(key)
    return DEFAULTS.get(key) if v is None else v


def settings() -> dict[str, Any]:
    """The page settings that determine a release (for caching and for the release's validity)."""
    keys = ["mt_model", "mt_filter_col"]
    if _get("mt_filter_col") != NO_FILTER:
        keys += ["mt_filter_op", "mt_filter_val"]
    if _get("mt_model") == "central":
        keys += ["mt_query", "mt_family"]
        if _get("mt_query") == "sum":
            keys += ["mt_measure", "mt_clip"]
        if _get("mt_family") == "gaussian":
            keys += ["mt_delta"]
    else:
        keys += ["mt_local_measure", "mt_d", "mt_scale", "mt_top", "mt_variant"]
    return {k: _get(k) for k in keys}


def settings_key(tiers: tuple[mt.Tier, ...]) -> tuple:
    return (state.token(), tiers_key(tiers), tuple(sorted((k, str(v)) for k, v in settings().items())))


def current_plan_and_data(ds: Dataset, tiers: tuple[mt.Tier, ...]) -> dict[str, Any]:
    """Everything the page shows for the current widgets: query/codes and the plan (raises PrdpError)."""
    f = record_filter(ds)
    if _get("mt_model") == "central":
        family = _get("mt_family")
        integer = family in ("geometric", "multiscale_geometric")
        kind = _get("mt_query")
        q = cached_query(state.token(), kind, _get("mt_measure") if kind == "sum" else None,
                         float(_get("mt_clip")) if kind == "sum" else None, _fkey(f), integer, ds)
        plan = cached_central_plan(tiers_key(tiers), family, float(q.sensitivity), float(_get("mt_delta")))
        return {"model": "central", "query": q, "plan": plan, "filter": f}
    d = int(_get("mt_d"))
    codes, labels = cached_codes(state.token(), _get("mt_local_measure"), d, _get("mt_scale"), float(_get("mt_top")),
                                 _fkey(f), ds)
    if codes.size == 0:
        raise ParameterError("The table has no records: the local model needs at least one user.")
    local_plan = cached_local_plan(tiers_key(tiers), len(labels), _get("mt_variant"))
    return {"model": "local", "codes": codes, "labels": labels, "plan": local_plan, "filter": f}


def adopt_private_clip(q: Any) -> str | None:
    """Callback of the private clipping bound (:func:`ui.private_suggest.bound_panel`): U = the DP percentile
    drawn (a :class:`~prdp_core.mechanisms.dp_quantile.DPQuantile`, charged to the ledger), rounded up to an
    integer of at least 1 (the integer noise families need one; the input's floor) — shown as rounded, the
    released value beside it, in the message and in the source the release and the ledger carry. Returns that note
    (None: used as is)."""
    released = float(q.value)
    clip = float(max(1, math.ceil(released)))  # post-processing of the released value: it costs nothing
    st.session_state["mt_clip"] = clip
    rounded = "" if clip == released else f" (released {released:,.6g}, rounded up to {clip:,.0f})"
    private_suggest.remember("mt_clip", q.column, clip, q.source() + rounded)
    return f"U = {clip:,.0f} (rounded up: the integer noise families need an integer bound)" if rounded else None


def private_params() -> dict[str, str]:
    """The release's parameters a private suggestion released (the clipping bound of a sum): name → source."""
    ss = st.session_state
    if ss.get("mt_model", "central") != "central" or ss.get("mt_query") != "sum":
        return {}
    src = private_suggest.private_source("mt_clip", ss.get("mt_measure"))
    return {"clip": src} if src else {}


def _marked(central: Callable[[], Release]) -> Release:
    """A central release with its private clipping bound's source in its params and ledger entries."""
    return mark_sources(central(), private_params())


def on_release(tier_rows: tuple[tuple[str, float], ...]) -> None:
    """Release every tier (seeded, or secure when the page's toggle is on; true values only in teaching mode): store
    the result and add it to the session ledger."""
    ss = st.session_state
    ss.pop("mt_release_error", None)
    try:
        ds = state.dataset()
        tiers = mt.tiers_from(list(tier_rows))
        cur = current_plan_and_data(ds, tiers)
        # model: users × (tiers + 10) in the local model (every user's reports), records × 4 in the central one
        memory.guard("release", rows=ds.n, columns=len(tiers) + 10 if cur["model"] == "local" else 4)
        rng, seed = state.rng_and_seed()
        teaching = state.teaching()  # review mode: no true values are computed, only the noisy answers shown
        secure = bool(ss.get("mt_secure", False))  # exact OpenDP samplers, unseeded (the rng is not used)
        mode: dict[str, Any] = {"rng": None, "secure": True} if secure else {"rng": rng, "seed": seed}
        if cur["model"] == "central":
            q = cur["query"]
            if secure:
                mode["contributions"] = q.contributions
            make = partial(_marked, partial(mt.release_central, cur["plan"], q.value, reveal=teaching,
                                            records=q.mask, query=q.label, **mode))
        else:
            make = partial(mt.release_local, cur["plan"], cur["codes"], reveal=teaching, labels=cur["labels"], **mode)
        rel = state.release("analyst_tiers", make)
        ss["mt_release"] = {"key": settings_key(tiers), "release": rel}
    except PrdpError as err:
        ss["mt_release_error"] = err


def release_view(rel: Any, model: str, rng_seed: int, teaching: bool) -> None:
    """Section 6's result: the mode, the answers of every tier (with true values and errors in teaching mode
    only, marked confidential) and the ledger entry added."""
    mode_notice(rel.secure, rel.seed if rel.seed is not None else rng_seed,
                f"every tier's loss is certified before the answers are shown "
                f"({md_escape(rel.params.get('certified_note', ''))})")
    st.caption(f"Mode: **{mode_label(rel.secure)}**")
    ans = rel.answers if teaching else rel.for_review().answers  # review mode: never a true value or error
    truth = teaching and "true" in ans.columns
    if truth:
        confidential("The true values are computed from the real records.")
    fmt = {"eps": "{:g}", "eps_used": "{:.4g}", "estimate": "{:.6g}", "sd": "{:.4g}", "ci_low": "{:.6g}",
           "ci_high": "{:.6g}", "true": "{:.6g}", "error": "{:+.4g}", "abs_error": "{:.4g}"}
    if model == "central":
        figures.show(mch.release_central_figure(ans, truth=truth), key="mt_release_fig")
        st.dataframe(ans.drop(columns=["query"]).style.format({k: v for k, v in fmt.items() if k in ans.columns}),
                     hide_index=True)
    else:
        figures.show(mch.release_local_figure(ans, truth=truth), key="mt_release_fig")
        if truth:
            per = ans.groupby("tier", sort=False).apply(lambda g: float((g["error"] ** 2).sum()),
                                                        include_groups=False)
            st.markdown("Squared error of each tier's estimated counts in this run: " + ", ".join(
                f"**{md_escape(t)}** {v:,.0f}" for t, v in per.items()) + ".")
        with st.expander("Estimated counts per category"):
            fmt.update(estimate="{:.1f}", sd="{:.1f}", true="{:.0f}", error="{:+.1f}", abs_error="{:.1f}")
            st.dataframe(ans.style.format({k: v for k, v in fmt.items() if k in ans.columns}), hide_index=True)
    added = rel.entries[0].label if len(rel.entries) == 1 else f"{len(rel.entries)} entries"
    st.caption(f"Added to the session ledger: {md_escape(added)} ({md_escape(rel.entries[0].loss.describe())}).")


def central_display(table: pd.DataFrame, param_name: str) -> pd.io.formats.style.Styler:
    show = table.rename(columns={"eps": "ε", param_name: f"noise {param_name}", "mse_multitier": "MSE multi-tier",
                                 "mse_independent": "MSE independent (= ideal)", "mse_gradual": "MSE gradual",
                                 "ratio_gradual": "gradual ÷ ideal", "halfwidth_95": "± (95%)"})
    show = show.drop(columns=["mse_ideal", "ratio_multitier"])
    return show.style.format({"ε": "{:g}", f"noise {param_name}": "{:.4g}", "MSE multi-tier": "{:.4g}",
                              "MSE independent (= ideal)": "{:.4g}", "MSE gradual": "{:.4g}",
                              "gradual ÷ ideal": "{:.2f}×", "± (95%)": "{:.4g}"})


def local_display(table: pd.DataFrame, n: int, *, per_user: bool = False) -> pd.io.formats.style.Styler:
    """The local plan's table; errors of the count vector (× n) or per user."""
    t = table.copy()
    for c in ("var_multitier", "var_ideal", "var_grr", "var_brr", "var_gradual"):
        t[c] = t[c] * n
    err = "V per user" if per_user else "MSE"
    show = t.rename(columns={"eps": "ε", "eps_template": "ε used (template)", "k": "subset size k",
                             "unused_eps": "ε left unused", "var_multitier": f"{err} multi-tier",
                             "k_ideal": "ideal k*", "var_ideal": f"{err} ideal",
                             "ratio_multitier": "multi-tier ÷ ideal", "var_grr": f"{err} GRR", "var_brr": f"{err} BRR",
                             "var_gradual": f"{err} gradual"})
    show = show.drop(columns=["template"])
    fmt: dict[str, Any] = {f"{err} {c}": "{:.4g}" for c in ("multi-tier", "ideal", "GRR", "BRR", "gradual")}
    fmt.update({"ε": "{:g}", "ε used (template)": "{:.4g}", "ε left unused": "{:.3g}", "multi-tier ÷ ideal": "{:.2f}×"})
    return show.style.format(fmt)


def accuracy_section(cur: dict[str, Any], plan: Any, teaching: bool) -> None:
    """Section 3 of the page: the accuracy of each tier's answer (central: MSE and 95% half-widths, with gradual
    release for comparison; local: the template serving each tier and its error against the ideal release)."""
    ss = st.session_state
    if cur["model"] == "central":
        q = cur["query"]
        table = plan.table()
        over = f" over {q.n_matching:,} matching records" if teaching else ""
        st.caption(f"Query: **{md_escape(q.label)}**{over}; sensitivity Δ = {q.sensitivity:g} (add/remove one record). "
                   f"Noise: {plan.family.label}.")
        if teaching and cur["filter"] is not None:
            confidential("The number of matching records is the count query's true answer.")
        st.dataframe(central_display(table, plan.family.param_name()), hide_index=True)
        figures.show(mch.mse_by_tier_figure(table, {"multi-tier (= ideal, = independent)": "mse_multitier",
                                                    "gradual (budget split)": "mse_gradual"},
                                            title="Mean squared error of each tier's answer",
                                            y_label="MSE (squared units of the answer), log scale"),
                     key="mt_mse_central")
        lines = []
        for _, r in table.iterrows():
            hw = ("is exactly right at least 95% of the time" if r["halfwidth_95"] == 0
                  else f"is within ±{r['halfwidth_95']:.4g} of the truth 95% of the time")
            grad = (f"budget splitting would make its error {r['ratio_gradual']:.2f}× larger"
                    if r["ratio_gradual"] > 1.005 else "budget splitting gives the lowest tier the same error")
            lines.append(f"- **{md_escape(r['tier'])}** (ε = {r['eps']:g}): the answer {hw} — exactly as good as a "
                         f"release made for this tier alone; {grad}.")
        st.markdown("\n".join(lines))
        learn("**Gradual release** (budget splitting) gives tier j the pieces ε_j − ε_{j+1}, …, ε_m and averages them: "
              "collusion is also bounded, but the top tiers lose a lot of accuracy. Independent releases are as "
              "accurate as multi-tier ones but cost the sum of the budgets (section 4).")
    else:
        n = int(cur["codes"].size) if teaching else 1  # review mode: errors per user (they do not reveal n)
        table = plan.table()
        cats = (f"d = {plan.d} categories: {plan.d - 1} public bins of *{md_escape(ss['mt_local_measure'])}* and "
                f"\"{mt.NOT_MATCHING}\"" if cur["filter"] is not None
                else f"d = {plan.d} public bins of *{md_escape(ss['mt_local_measure'])}*")
        if teaching:
            st.caption(f"{n:,} records (users), each in one of {cats}. "
                       "Errors are the mean squared error of the estimated count vector (n·V).")
        else:
            st.caption(f"Each record's owner (user) is in one of {cats}. "
                       "Errors are per user (V); n users give n·V for the count vector.")
        st.caption("Category edges: " + ", ".join(cur["labels"][:8]) + (" …" if len(cur["labels"]) > 8 else "")
                   + f" — fixed by d, the bins and the public top U = {float(ss['mt_top']):g}, never by the data.")
        st.dataframe(local_display(table, n, per_user=not teaching), hide_index=True)
        tt = table.copy()
        for c in ("var_multitier", "var_ideal", "var_grr", "var_brr", "var_gradual"):
            tt[c] = tt[c] * n
        figures.show(mch.mse_by_tier_figure(tt, {"multi-tier Subset": "var_multitier",
                                                 "ideal (independent)": "var_ideal",
                                                 "multi-tier GRR": "var_grr", "multi-tier BRR": "var_brr",
                                                 "gradual": "var_gradual"},
                                            title="Mean squared error of each tier's estimated counts",
                                            y_label=("MSE (users²), log scale" if teaching
                                                     else "MSE per user, log scale")),
                     key="mt_mse_local")
        lines = []
        for _, r in table.iterrows():
            unused = (f"; ε = {r['unused_eps']:.3g} of its budget is left unused" if r["unused_eps"] > 1e-9
                      else "; its whole budget is used")
            lines.append(f"- **{md_escape(r['tier'])}** (ε = {r['eps']:g}) is served by a template with "
                         f"k = {int(r['k'])} at ε = {r['eps_template']:.4g}{unused}. Its error is "
                         f"{r['ratio_multitier']:.2f}× that of the ideal release made only for it "
                         f"(k* = {int(r['k_ideal'])}).")
        st.markdown("\n".join(lines))
        learn("**Why not exactly ideal?** The best subset size k depends on ε, and the operations that lower ε can "
              "only grow k one step at a time, so lower tiers are matched to prepared *templates* at or below their "
              "budget. The real privacy of a tier is its template's level; the rest of its budget stays unused.")


def plan_section(cur: dict[str, Any], plan: Any) -> None:
    """Section 5 of the page: the residual noise between tiers (central, with the cases where none exists) or the
    template plan (local)."""
    if cur["model"] == "central":
        st.subheader("5 · The residual noise between tiers")
        if plan.checks:
            for c in plan.checks:
                st.markdown(f"- {c.sentence()}")
        else:
            st.markdown("Only one distinct budget: no residual is needed.")
        st.caption("Each residual's characteristic function is the ratio of the two tiers' noise characteristic "
                   "functions (Algorithm 1); its existence is decided from the budgets alone, before any data is used.")
        with st.expander("When no multi-tier version exists (discrete Gaussian, staircase)", icon=":material/block:"):
            ex = table1_examples()
            dg, sc = ex["dg"], ex["sc"]
            st.markdown(f"- **Discrete Gaussian**, σ = 1 → 1.1: {dg.detail} The Bochner matrix at t ∈ {{0, π/2, π, "
                        f"3π/2}} has smallest eigenvalue **{dg.min_eigenvalue:.7f}** < 0.\n"
                        f"- **Staircase**, ε = 2.8 → 1: R(5π) = {ex['r5pi']:.5f}; the Bochner matrix at t ∈ {{0, 5π}} "
                        f"has eigenvalue **{sc.min_eigenvalue:.5f}** < 0.")
            figures.show(mch.residual_ratio_figure(ex["t"], ex["ratios"],
                                                   title="Ratio of characteristic functions R(t): a valid residual "
                                                         "never leaves [−1, 1]"), key="mt_ratio_fig")
            learn("**Bochner's theorem.** A function is the characteristic function of some noise only if every matrix "
                  "[R(t_a − t_b)] is positive semi-definite. One negative eigenvalue proves that no noise, however "
                  "clever, turns one tier's answer into the other's.")
    else:
        st.subheader("5 · Template plan")
        ttab = plan.template_table()
        figures.show(mch.template_plan_figure(ttab, plan.names, list(plan.eps), list(plan.served)), key="mt_plan")
        unused = plan.eps - plan.served_eps
        st.markdown(f"{len(ttab)} templates; {len(set(plan.served))} of them serve a tier. "
                    f"Unused budget: "
                    + ", ".join(f"**{md_escape(nm)}** {u:.3g}" for nm, u in zip(plan.names, unused)) + ".")
        with st.expander("All templates (operator, subset size, level, keep probability)"):
            st.dataframe(ttab.style.format({"eps": "{:.4g}", "keep_probability": "{:.4g}"}, na_rep="—"),
                         hide_index=True)
            st.caption("Rescale keeps the report with the *keep probability* "
                       "β = (e^ε′−1)(k e^ε+d−k) / ((e^ε−1)(k e^ε′+d−k)). "
                       "The paper prints (e^ε′−1)(k e^ε+d−k) / (d(e^ε−e^ε′)), which is β/(1−β): it can exceed 1 and "
                       "otherwise misses the target level. The corrected form is verified by exact enumeration.")


#: The Analyst tiers page's session state (:class:`ui.page_state.PageState`); the tier table and the query keys
#: (``mt_*``) make up the study's tiers section and its ``multitier`` mechanism.
STATE = PageState(
    page="analyst_tiers",
    settings=("mt_preset", "mt_coalition"),
    engine=("mt_model", "mt_query", "mt_measure", "mt_clip", "mt_family", "mt_delta", "mt_filter_col", "mt_filter_op",
            "mt_filter_val", "mt_local_measure", "mt_d", "mt_scale", "mt_variant", "mt_secure"),
    editors=("mt_tiers_base", "mt_tiers_current"),
    results=("mt_release", "mt_release_error"),
)
