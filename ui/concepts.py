"""Helpers of the Concepts page: histogram-lab inputs, the cached run, its callback and the lab's tab."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from prdp_core.board.ledgers import data_fingerprint
from prdp_core.charts import concepts as charts
from prdp_core.core import interpret
from prdp_core.core.errors import PrdpError
from prdp_core.core.release import Release
from prdp_core.core.secure import mode_label
from prdp_core.data.dataset import Dataset
from prdp_core.mechanisms import granular

from . import large, memory, state
from .common import confidential, guarded, learn, md_escape, seeded_notice
from .figures import show
from .page_state import PageState

#: Widget keys of the histogram lab and their defaults.
LAB_DEFAULTS: dict[str, Any] = {"hl_source": "generated", "hl_d": 64, "hl_n": 50_000, "hl_patterns": 20,
                                "hl_heavy": 0.5, "hl_eps0": 1.0, "hl_nu": 0.01, "hl_method": "exact",
                                "hl_match": "eps0", "hl_domains": "public", "hl_secure": False}
#: Largest number of documented categories a column may have to be picked by default.
DEFAULT_MAX_CATEGORIES = 60
DOMAIN_CHOICES = {"public": "declared public lists (a release)",
                  "data": "read from the data (exploration only — not DP for the set of categories)"}


def documented_domains() -> dict[str, tuple[str, ...]]:
    """The active sample's documented public categories ({} for an uploaded table)."""
    src = state.source()
    return granular.sample_domains(str(src.get("name"))) if src.get("kind") == "sample" else {}


def attribute_options(ds: Dataset) -> list[str]:
    """Columns usable as attributes: group columns, then measures (as decade size classes)."""
    return list(ds.schema.groups) + list(ds.schema.measures)


def default_columns(ds: Dataset) -> list[str]:
    """Up to two group columns with a short documented domain, plus the first measure (size classes).

    Chosen from the public documentation only — never from the number of values in the data."""
    doc = documented_domains()
    groups = [c for c in ds.schema.groups if 0 < len(doc.get(c, ())) <= DEFAULT_MAX_CATEGORIES][:2]
    return groups + list(ds.schema.measures[:1])


def undeclared_columns(ds: Dataset, columns: list[str] | tuple[str, ...]) -> list[str]:
    """Picked group columns without a documented domain: the page asks for their categories."""
    doc = documented_domains()
    return [c for c in columns if c in ds.schema.groups and c not in doc and c in ds.table.columns]


def releases_base(preset: pd.DataFrame) -> pd.DataFrame:
    """The base table of the attribute accountant's editor: the preset, or — back from another page, where
    Streamlit dropped the editor's edits with its widget — the table as last shown (no edits are pending
    then, so none is applied twice)."""
    ss = st.session_state
    kept = ss.get("pa_releases_current")
    if "pa_releases" not in ss and isinstance(kept, pd.DataFrame):
        ss["pa_releases_base"] = kept.reset_index(drop=True)
    base = ss.get("pa_releases_base")
    return base if isinstance(base, pd.DataFrame) else preset


def declaration_key(col: str) -> str:
    return f"hl_dom_{col}"


def lab_params() -> dict[str, Any]:
    """The lab's parameters as currently set in the widgets (declared domains included)."""
    ss = st.session_state
    p = {k: ss.get(k, v) for k, v in LAB_DEFAULTS.items()}
    p["hl_columns"] = tuple(ss.get("hl_columns") or ())
    src = state.source()
    p["hl_sample"] = str(src.get("name")) if src.get("kind") == "sample" else ""
    # typed categories apply to public domains only (the boxes are shown then; kept while hidden)
    p["hl_declared"] = tuple((c, str(ss.get(declaration_key(c)) or "").strip()) for c in p["hl_columns"]
                             if p.get("hl_domains") == "public" and declaration_key(c) in ss
                             and str(ss.get(declaration_key(c)) or "").strip())
    return p


def lab_domains(params: dict[str, Any]) -> dict[str, Any]:
    """Declared domains of a lab run: the sample's documented ones, then the typed declarations."""
    out: dict[str, Any] = dict(granular.sample_domains(params["hl_sample"])) if params.get("hl_sample") else {}
    out.update(dict(params.get("hl_declared", ())))
    return out


@dataclass(frozen=True)
class LabResult:
    """Both histograms of one lab run, and what the page shows about them."""

    heavy: Release
    standard: Release
    d: int
    n: int
    notes: tuple[str, ...]
    compare: pd.DataFrame
    accuracy: dict[str, dict[str, Any]] | None


def _data(params: dict[str, Any], ds: Dataset, rng: np.random.Generator) -> granular.AttributeData:
    if params["hl_source"] == "dataset":
        return granular.encode_attributes(ds.table, list(params["hl_columns"]), lab_domains(params),
                                         from_data=params["hl_domains"] == "data")
    return granular.synthetic_attribute_data(int(params["hl_n"]), int(params["hl_d"]),
                                            patterns=int(params["hl_patterns"]),
                                            heavy_share=float(params["hl_heavy"]), rng=rng)


def run_lab(token: str, params_items: tuple[tuple[str, Any], ...], seed: int, teaching: bool,
            _ds: Dataset) -> LabResult:
    """Run the heavy-hitter and the standard histogram: a release, drawn afresh on every click (never served from a
    cache) and recorded by the caller; its result is kept in the session to be shown."""
    params = dict(params_items)
    if params["hl_source"] == "dataset":
        memory.guard("histogram", rows=_ds.n, columns=len(params["hl_columns"]) + 64)
    else:
        memory.guard("histogram", rows=int(params["hl_n"]), columns=int(params["hl_d"]) + 64)
    rng = np.random.default_rng(seed)
    data = _data(params, _ds, rng)  # generated records are synthetic: their generator is not the noise
    # secure: exact discrete Laplace from OpenDP, unseeded (declared categories; dense standard histograms)
    how: dict[str, Any] = {"secure": True} if params.get("hl_secure") else {"rng": rng, "seed": seed}
    hh = granular.heavy_hitter_histogram(data, eps0=float(params["hl_eps0"]), nu=float(params["hl_nu"]),
                                        method=params["hl_method"], reveal=teaching, **how)
    eps_std = float(params["hl_eps0"]) if params["hl_match"] == "eps0" else float(hh.extras["whole_record"])
    std = granular.standard_histogram(data, eps=eps_std, reveal=teaching, **how)
    names = {"heavy-hitter (per attribute)": hh, "standard Laplace": std}
    compare = granular.compare_cells(data, names, top=20, truth=teaching)
    acc = None
    if teaching:
        acc = {k: granular.histogram_accuracy(data, r, float(params["hl_nu"])) for k, r in names.items()}
    return LabResult(hh, std, data.d, data.n, data.notes, compare, acc)


def accuracy_table(res: LabResult) -> pd.DataFrame:
    """One row per histogram: published, heavy and small cells, largest error (teaching mode only)."""
    cols = ["released", "heavy", "heavy_found", "released_empty", "released_small", "linf_error"]
    return pd.DataFrame(res.accuracy or {}).T.reindex(columns=cols)


def _items(params: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(params.items()))


def current_result() -> LabResult | None:
    """The result of the last run, if its parameters are still those of the widgets."""
    ran = st.session_state.get("hl_ran")
    if not ran or len(ran) != 4:
        return None
    params, seed, teaching, data = ran
    if (params != _items(lab_params()) or seed != state.rng_and_seed()[1] or teaching != state.teaching()
            or data != _data_key(dict(params))):
        return None
    return st.session_state.get("hl_result")  # the recorded release: never drawn again to be shown


def on_run() -> None:
    """Run-button callback: run both histograms once, record them in the session ledger."""
    params = lab_params()
    st.session_state.pop("hl_error", None)
    if params["hl_source"] == "dataset" and not params["hl_columns"]:
        st.session_state["hl_error"] = "Pick at least one column of the active dataset as an attribute."
        return
    _, seed = state.rng_and_seed()
    teaching = state.teaching()
    data = generated_data(params, seed)
    try:
        res = state.release("concepts", partial(run_lab, state.token(), _items(params), seed, teaching,
                                                state.dataset()),
                            data=data, entries=lambda r: (*r.heavy.entries, *r.standard.entries))
    except PrdpError as err:
        st.session_state["hl_error"] = f"**{err.title}.** {md_escape(err)}"
        st.session_state.pop("hl_ran", None)
        return
    st.session_state["hl_result"] = res
    st.session_state["hl_ran"] = (_items(params), seed, teaching, _data_key(params))


def generated_data(params: dict[str, Any], seed: int) -> dict[str, Any] | None:
    """The fingerprint of a lab run's generated records (:func:`prdp_core.board.ledgers.data_fingerprint`: their
    generator's settings and seed), whose ledger its releases are charged to — never the active table's; None
    for a run on the active dataset."""
    if params.get("hl_source") != "generated":
        return None
    ident = {"generated": "histogram lab", "n": int(params["hl_n"]), "d": int(params["hl_d"]),
             "patterns": int(params["hl_patterns"]), "heavy_share": float(params["hl_heavy"]), "seed": int(seed)}
    return data_fingerprint(ident, name=f"generated records of the histogram lab (n = {ident['n']:,}, "
                                        f"d = {ident['d']}, seed {ident['seed']})")


def _data_key(params: dict[str, Any]) -> str | None:
    """The dataset a lab run read (None for generated records): a run on one dataset is never shown — or
    silently re-run outside the ledger — once another dataset is active."""
    return state.token() if params.get("hl_source") == "dataset" else None


def histogram_lab_tab() -> None:
    """The Histogram lab tab of the Concepts page: the heavy-hitter histogram per attribute (Algorithm 2) beside
    the standard histogram, on generated data or the active dataset; layout only, the numbers from
    :mod:`prdp_core.mechanisms.granular` through this module's cached run."""
    ss = st.session_state
    st.subheader("Histogram lab: heavy hitters per attribute vs the standard histogram")
    learn("**The paper's histogram (Algorithm 2, Theorem 15).** The standard ε-DP histogram adds Laplace noise "
          "to every cell; at large ε small cells round back exactly. The heavy-hitter histogram builds a tree "
          "over the attributes and keeps only attribute combinations whose noisy count passes a rising "
          "threshold, so it never publishes small cells, and each attribute is charged once per tree level: its "
          "*per-attribute* ε0 stays small however many attributes there are. Its whole-record loss is up to "
          "about d·ε0/2 + ε0/2. The standard histogram's public threshold grows with d (about (2/ε)·d·ln 2), the "
          "heavy-hitter tree's with log d: try d = 512 with n = 50,000.")
    ds = state.dataset()
    st.radio("Records", ["generated", "dataset"], key="hl_source", horizontal=True,
             format_func={"generated": "Generated binary records",
                          "dataset": f"Active dataset ({md_escape(ds.name)})"}.get)
    lab_blocked = False  # a large dataset without a sample: its records stay in the engine
    if ss["hl_source"] == "dataset" and large.is_large():
        smp = large.sample_offer("concepts", "The histogram lab's histograms")
        if smp is not None:
            state.use_sample(smp, "concepts", *large.sample_choice("concepts"))  # type: ignore[misc]  # sample_choice is set once sample_offer gave a sample
            ds = state.dataset()
        lab_blocked = smp is None
    d_lab = 1
    if ss["hl_source"] == "generated":
        c1, c2, c3, c4 = st.columns(4)
        c1.slider("Binary attributes d", 2, 512, key="hl_d")
        c2.number_input("Records n", min_value=1_000, max_value=500_000, step=10_000, key="hl_n")
        c3.slider("Frequent patterns", 0, 100, key="hl_patterns")
        c4.slider("Share of records in them", 0.0, 1.0, step=0.05, key="hl_heavy")
        d_lab = int(ss["hl_d"])
    elif not lab_blocked:
        options = attribute_options(ds)
        if "hl_columns" not in ss:
            ss["hl_columns"] = default_columns(ds)
        ss["hl_columns"] = [c for c in ss["hl_columns"] if c in options]
        st.multiselect("Attributes (group columns keep their public categories; measures become decade size "
                       "classes)", options, key="hl_columns")
        d_lab = max(1, len(ss["hl_columns"]))
        st.radio("Categories of group columns", list(DOMAIN_CHOICES), key="hl_domains",
                 format_func=DOMAIN_CHOICES.get)
        documented = [c for c in ss["hl_columns"] if c in documented_domains()]
        if documented:
            st.caption("Documented public categories of this sample: " + ", ".join(
                f"**{md_escape(c)}** ({len(documented_domains()[c])})" for c in documented)
                + ". Values outside a list are counted in the public category \"(other)\".")
        undeclared = undeclared_columns(ds, ss["hl_columns"])
        if undeclared and ss["hl_domains"] == "public":
            for c in undeclared:
                st.text_input(f"Public categories of {md_escape(c)} (comma-separated)", key=declaration_key(c),
                              placeholder="e.g. from a code list or the questionnaire — not from the data",
                              help="Every other value goes to \"(other)\". Leave empty for a numeric column to use "
                                   "decade size classes.")
        if ss["hl_domains"] == "data":
            st.warning("Exploration only: categories read from the data are not protected — one record with a new "
                       "value adds a category, changes the number of cells and the threshold, and is listed. The "
                       "releases are marked teaching-only in the ledger.", icon=":material/warning:")
        learn("**Public domains.** A histogram's cells — and so its threshold and, for one attribute, the list of "
              "published cells — must be fixed before looking at the data: sample columns use their documented "
              "categories (fixed by the generator or by a public code list), measures use decade size classes, "
              "other columns need a declared list.")
    c1, c2, c3, c4 = st.columns(4)
    c1.slider("Per-attribute ε0", 0.1, 10.0, step=0.1, key="hl_eps0")
    c2.select_slider("Error target ν (share of n)", [0.002, 0.005, 0.01, 0.02, 0.05, 0.1], key="hl_nu")
    c3.radio("Calibration", ["exact", "lemma28"], key="hl_method",
             format_func={"exact": "exact accountant",
                          "lemma28": "Lemma 28 (conservative: a looser bound, more noise)"}.get)
    c4.radio("Standard histogram at", ["eps0", "record"], key="hl_match",
             format_func={"eps0": "ε = ε0 (same number)", "record": "the same whole-record ε"}.get)
    with guarded():
        cal_table = granular.calibration_table(float(ss["hl_eps0"]), float(ss["hl_nu"]), d_lab)
        paper = cal_table.set_index("method").loc["paper"]
        st.dataframe(cal_table.drop(columns=["method", "claimed"]).rename(columns={
            "lambda": "λ", "mu": "µ", "count_scale": "count noise b", "eps_lists": "ε0 lists (exact)",
            "eps_lists_lemma28": "ε0 lists (Lemma 28)", "eps_counts": "ε0 counts", "eps_composed": "ε0 composed",
            "eps_exact": "ε0 delivered (exact)", "meets_claim": f"≤ ε0 = {float(ss['hl_eps0']):g}?"}).style.format(
            {"λ": "{:.3f}", "µ": "{:.2f}", "count noise b": "{:.3f}", "ε0 lists (exact)": "{:.4f}",
             "ε0 lists (Lemma 28)": "{:.4f}", "ε0 counts": "{:.4f}", "ε0 composed": "{:.4f}",
             "ε0 delivered (exact)": "{:.4f}"}, na_rep="—"), hide_index=True, key="hl_cal_table")
        if d_lab > 1:
            st.caption(f"As printed, the proof of Theorem 15 (λ = 3/ε, Lap(2/ε) counts) delivers ε0 = "
                       f"{paper['eps_exact']:.3f} per attribute, not {float(ss['hl_eps0']):g}: the list stage costs "
                       f"{paper['eps_lists']:.3f} instead of half, and the counts the full ε0 (a changed attribute "
                       f"moves a record between two listed cells). The corrected calibrations above deliver at most "
                       f"ε0; the exact one was checked by enumerating every output on small domains.")
    b1, b2 = st.columns([1, 2])
    b1.button("Run both histograms", type="primary", key="hl_run", on_click=on_run, disabled=lab_blocked)
    b2.toggle("Secure release", key="hl_secure",
              help="Exact discrete Laplace from OpenDP, unseeded, for numbers that may be published: declared "
                   "categories, the heavy-hitter histogram calibrated by the accountant of its discrete noise, the "
                   "standard one on at most 2^20 cells. Off: a seeded run, for teaching and review.")
    if ss.get("hl_error"):
        st.error(ss["hl_error"])
    res = current_result()
    if res is None:
        st.info("Set the parameters and press **Run both histograms**. Runs are seeded (teaching and review).",
                icon=":material/play_circle:")
    else:
        _, seed = state.rng_and_seed()
        st.caption(f"Mode: **{mode_label(res.heavy.secure)}**")
        if not res.heavy.secure:
            seeded_notice(seed)
        for note in res.notes:
            st.caption(f":material/info: {md_escape(note)}")
        if res.heavy.extras.get("teaching_only"):
            st.warning("Teaching only: some categories were read from the data, so these histograms are not "
                       "differentially private for the set of categories.", icon=":material/warning:")
        hh, std = res.heavy, res.standard
        cal = hh.extras["calibration"]
        st.markdown(
            f"- **Heavy-hitter histogram**: ε0 = **{hh.extras['eps0_delivered']:.3g}** per attribute; a whole "
            f"record ({res.d} attributes) at most ε = **{hh.extras['whole_record']:.3g}**. Published "
            f"{len(hh.answers):,} cells in {hh.extras['seconds']:.2f} s.\n"
            f"- **Standard Laplace histogram**: ε = **{std.params['eps']:.3g}** for a whole record *and* per "
            f"attribute (no granular gain). Published {len(std.answers):,} cells above the public threshold "
            f"{std.extras['threshold']:.1f} in {std.extras['seconds']:.2f} s.")
        if res.accuracy is not None:
            if ss["hl_source"] == "dataset":
                confidential("True counts and errors of cells are shown in teaching mode only.")
            a_h = res.accuracy["heavy-hitter (per attribute)"]
            a_s = res.accuracy["standard Laplace"]
            nu_n = float(ss["hl_nu"]) * res.n
            st.markdown(
                f"- Heavy cells (at least νn = {nu_n:,.0f} records): **{a_h['heavy']}**. Found by the heavy-hitter "
                f"histogram: **{a_h['heavy_found']}**; by the standard one: **{a_s['heavy_found']}**.\n"
                f"- Largest error over *all* cells (unpublished cells count as 0): heavy-hitter "
                f"**{a_h['linf_error']:,.1f}**, standard **{a_s['linf_error']:,.1f}** (target νn = {nu_n:,.0f}).\n"
                f"- Published cells holding only 1–2 records: heavy-hitter {a_h['released_small']}, standard "
                f"{a_s['released_small']}; published empty cells: {a_h['released_empty']} vs "
                f"{a_s['released_empty']}. Of {a_h['occupied_cells']:,} occupied cells, {a_h['singletons']:,} hold "
                f"a single record.")
            st.dataframe(accuracy_table(res).rename(columns={"released": "published cells", "heavy": "heavy cells",
                                                "heavy_found": "heavy found", "released_empty": "empty published",
                                                "released_small": "1–2-record cells published",
                                                "linf_error": "max error (all cells)"}), key="hl_accuracy_table")
        methods = ["heavy-hitter (per attribute)", "standard Laplace"]
        show(charts.histogram_comparison_figure(res.compare, methods, truth=res.accuracy is not None),
             key="hl_compare_chart")
        c1, c2 = st.columns(2)
        with c1:
            show(charts.level_sizes_figure(hh.extras["level_sizes"]), key="hl_levels_chart")
        with c2:
            st.markdown(f"**Noise.** Heavy-hitter lists: Laplace λ = {cal.lam:.3g} with threshold step "
                        f"µ = {cal.mu:.3g} and base threshold τ = {hh.params['tau']:,.1f} (rising by µ per level); "
                        f"counts: Laplace b = {cal.count_scale:.3g}. Standard: Laplace b = {std.extras['scale']:.3g} "
                        f"on every one of the ~10^{std.params['cells_log10']:.1f} cells.")
            st.caption("τ only trades recall against list size; privacy depends on λ and µ alone.")
        with st.expander("Published cells", icon=":material/table:"):
            show_h = hh if state.teaching() else hh.for_review()
            show_s = std if state.teaching() else std.for_review()
            st.markdown("**Heavy-hitter histogram**")
            st.dataframe(show_h.answers.head(500), hide_index=True, key="hl_hh_table")
            st.markdown("**Standard histogram**")
            st.dataframe(show_s.answers.head(500), hide_index=True, key="hl_std_table")


#: Prefix of the histogram lab's typed public categories of a column (``hl_dom_<column>``).
DECLARED_PREFIX = "hl_dom_"
#: How the typed categories appear in a config's ``app.concepts``: columns and their texts, in order.
DECLARED_SETTINGS = ("hl_declared_columns", "hl_declared_categories")

#: The Concepts page's session state (:class:`ui.page_state.PageState`): view settings only.
STATE = PageState(
    page="concepts",
    settings=("cc_eps", "cc_prior", "cc_rho", "cc_delta", "cc_eps_target", "cc_rec_measure", "cc_rec_value",
              "pa_d", "pa_k", "pa_eps0", "pa_kind", "pa_subset", "hl_source", "hl_d", "hl_n", "hl_patterns",
              "hl_heavy", "hl_columns", "hl_domains", "hl_eps0", "hl_nu", "hl_method", "hl_match", "hl_secure"),
    rules={"cc_eps": ("range", 0.0, 100.0, False), "cc_prior": ("range", 0.01, 99.99, False),
           "cc_rho": ("range", 0.0, 1000.0, False), "cc_delta": ("choice", (1e-5, 1e-6, 1e-8, 1e-10)),
           "cc_eps_target": ("range", 0.01, 1000.0, False), "cc_rec_value": ("range", 0.0, 1000.0, False),
           "cc_rec_measure": ("choice", ("rho", "eps")), "pa_d": ("range", 2, 100, True),
           "pa_k": ("range", 1, 100, True), "pa_eps0": ("range", 0.01, 2.0, False),
           "pa_kind": ("choice", ("cdp", "pure")), "hl_source": ("choice", ("generated", "dataset")),
           "hl_d": ("range", 2, 512, True), "hl_n": ("range", 1000, 500_000, True),
           "hl_patterns": ("range", 0, 100, True), "hl_heavy": ("range", 0.0, 1.0, False),
           "hl_eps0": ("range", 0.1, 10.0, False), "hl_nu": ("choice", (0.002, 0.005, 0.01, 0.02, 0.05, 0.1)),
           "hl_method": ("choice", ("exact", "lemma28")), "hl_match": ("choice", ("eps0", "record")),
           "hl_domains": ("choice", ("public", "data"))},
    editors=("pa_releases_current", "pa_releases_base"),
    prefixes=(DECLARED_PREFIX,),
)


def zcdp_eps_note(conv: interpret.ZcdpConversion) -> str:
    """Why zCDP's own ε = √(2ρ) is shown beside the (ε, δ) conversions, in plain words."""
    return (f"zCDP's own ε = √(2ρ) = {conv.eps_zcdp:.3g} is the number in zCDP's definition (ρ = ½ε²), used to put "
            "ρ on the scale of a per-attribute ε0. It is **not** an (ε, δ) promise to the people in the data: for "
            f"that, use the CKS ε = {conv.eps_cks:.4g}.")


def two_ceilings_note(g: interpret.RecordGuarantee) -> str:
    """Why a record's best guess of one bit and its posterior from a small prior hold together (85.36% at 1ρ beside
    95.97% from a 1% prior), in plain words, with the record's own numbers."""
    even = interpret.posterior_bound(g.eps_cks, 0.5)
    return (f"**Why both numbers hold.** Each is a ceiling for a different question. The best guess "
            f"({interpret.percent(g.accuracy)}) is for a 50/50 fact and uses the tightest bound zCDP gives for it. "
            f"The posterior ({interpret.percent(g.posterior)}) starts from a {g.prior:.0%} suspicion and uses the "
            f"(ε, δ) view, ε = {g.eps_cks:.3g}: rare outputs may multiply the odds by up to e^ε. That view is looser — "
            f"for a 50/50 fact it would allow {interpret.percent(even)} — so each question shows its tightest known "
            "ceiling, and neither is a promise that an attacker reaches it.")
