"""Helpers of the Personalized DP page: specification and query from the widgets, cached engine
calls and the release callback."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd
import streamlit as st

from prdp_core.core.errors import ParameterError, PrdpError
from prdp_core.core.noise_source import Noise
from prdp_core.core.provenance import mark_sources
from prdp_core.core.recorder import simulation
from prdp_core.data.dataset import Dataset
from prdp_core.mechanisms import personalized

from . import memory, private_suggest, state
from .page_state import PageState

EACH_RECORD = "(each record is its own user)"

#: Widget keys of the specification and their defaults.
SPEC_DEFAULTS: dict[str, Any] = {"pdp_source": "tiers", "pdp_user": EACH_RECORD, "pdp_fc": 0.54, "pdp_fm": 0.37,
                                 "pdp_ec": 0.01, "pdp_em": 0.2, "pdp_el": 1.0, "pdp_default": 1.0,
                                 "pdp_col": None}

MECHANISM_CHOICES = {
    "Minimum (M)": "M", "Threshold (T)": "T", "Sample (S)": "S", "PE (personalized exponential)": "PE",
    "Stretching (Alag.)": "Alag",
}
T_RULES = {"max Φ (paper's S)": "max", "mean Φ (paper's S-avg)": "mean", "custom": "custom"}


def proxy_bound(query: personalized.PersonalizedQuery, spec: personalized.PrivacySpec) -> float:
    """The sum sensitivity the releases use: max(|lo|, |hi|), times the substitution calibration when
    the roster comes from the table (hi − lo for lo < 0 < hi)."""
    return float(query.bound) * personalized.noise_calibration(query, spec)


def assumed_default(query: personalized.PersonalizedQuery) -> float:
    """A neutral starting guess for the assumed mean and spread of the values: a tenth of the upper bound."""
    return float(query.bound) / 10.0


def set_query_defaults(column: str) -> None:
    """Default public bounds and count cut-off for ``column``, each by its rule of
    :data:`~prdp_core.mechanisms.personalized.DESIGN_DEFAULTS` (hi: the 99th percentile rounded up to 1–2–5 × 10^k;
    cut-off: a fixed 10, or 1 for small values), lo = 0. Design defaults only: they depend on the confidential data,
    so they are remembered (``pdp_data_defaults``) and every release that still uses them says so
    (:func:`data_default_params`)."""
    ss = st.session_state
    p99 = float(state.profile().measures[column].p99)
    for name, rule in personalized.DESIGN_DEFAULTS.items():
        ss[f"pdp_{name}"] = rule.value(p99)
    ss["pdp_lo"] = 0.0
    ss["pdp_data_defaults"] = {"column": column, **{n: ss[f"pdp_{n}"] for n in personalized.DESIGN_DEFAULTS}}


def data_default_text(names: list[str]) -> str:
    """Markdown naming each parameter still at its design default, with its value and where it comes from (the
    same :data:`~prdp_core.mechanisms.personalized.DESIGN_DEFAULTS` rule that set it)."""
    ss = st.session_state
    parts = []
    for n in names:
        d = personalized.DESIGN_DEFAULTS[n]
        parts.append(f"**{d.label.format(float(ss[f'pdp_{n}']))}** is {d.describe()}")
    return "; ".join(parts)


def adopt_private_hi(q: Any) -> str | None:
    """Callback of the private bound (:func:`ui.private_suggest.bound_panel`): hi = the DP percentile drawn
    (a :class:`~prdp_core.mechanisms.dp_quantile.DPQuantile`, charged to the ledger), no longer a data default."""
    st.session_state["pdp_hi"] = float(q.value)
    private_suggest.remember("pdp_hi", q.column, float(q.value), q.source())
    return None  # used as released


def private_params(kind: str | None = None) -> dict[str, str]:
    """The query parameters a private suggestion released (``hi`` of a value query): name → ``"private: …"``."""
    src = private_suggest.private_source("pdp_hi", st.session_state.get("pdp_value"))
    return {"hi": src} if src and kind != "count" else {}


#: Results and editors that belong to one dataset: dropped when the dataset changes.
DATASET_RESULTS = ("pdp_last_release", "pdp_release_error", "pdp_prdp_result", "pdp_cmp_on", "pdp_label_map_df")


def start_on_dataset(ds: Dataset) -> None:
    """On the first run of the page on a new dataset: drop the previous table's release, comparisons and label
    table, and recompute the query's default bounds for the new table (the previous table's bounds and
    cut-off are never shown against it, even when the value column has the same name)."""
    ss = st.session_state
    if not state.first_run_on_dataset("personalized"):
        return
    for k in DATASET_RESULTS:
        ss.pop(k, None)
    if ss.get("pdp_value") in ds.schema.measures:
        set_query_defaults(ss["pdp_value"])


def data_default_params(kind: str | None = None) -> list[str]:
    """The query parameters still at a default computed from the confidential data: ``hi`` (any
    value query and the PrDP comparison's U) and the count ``cutoff`` (``kind`` = count)."""
    ss = st.session_state
    d = ss.get("pdp_data_defaults") or {}
    if d.get("column") != ss.get("pdp_value"):
        return []
    out = []
    if kind != "count" and ss.get("pdp_hi") == d.get("hi"):
        out.append("hi")
    if kind in (None, "count") and ss.get("pdp_cutoff") == d.get("cutoff"):
        out.append("cutoff")
    return out


def on_value_change() -> None:
    """Callback of the value-column select box: new column, new default bounds."""
    col = st.session_state.get("pdp_value")
    if col:
        set_query_defaults(col)


def eps_columns(ds: Dataset) -> list[str]:
    """Columns that can hold the users' ε: measures and group columns (labels are mapped)."""
    return list(ds.schema.measures) + [g for g in ds.schema.groups if g not in ds.schema.measures]


def label_column(ds: Dataset, col: str) -> bool:
    """True when ``col`` holds labels (not numbers) and needs an expert mapping to ε."""
    if col in ds.schema.measures:
        return False
    v = pd.to_numeric(ds.table[col], errors="coerce")
    return bool(v.isna().mean() > 0.5)


@st.cache_data(show_spinner=False, max_entries=16, scope="session")
def _labels(token: str, col: str, _ds: Dataset) -> list[str]:
    return [str(x) for x in pd.unique(_ds.table[col].astype(str))[:50]]


def labels_of(ds: Dataset, col: str) -> list[str]:
    return _labels(state.token(), col, ds)


def default_label_map(labels: list[str]) -> pd.DataFrame:
    eps = np.round(np.linspace(0.1, 1.0, len(labels)), 2) if len(labels) > 1 else np.array([1.0])
    return pd.DataFrame({"label": labels, "ε": eps})


def spec_params() -> dict[str, Any]:
    ss = st.session_state
    p = {k: ss.get(k, v) for k, v in SPEC_DEFAULTS.items()}
    mp = ss.get("pdp_label_map_df")
    p["labels"] = tuple(map(tuple, mp.to_numpy().tolist())) if isinstance(mp, pd.DataFrame) else ()
    p["seed"] = int(ss.get("seed", 0))
    return p


def label_mapping(labels: tuple) -> dict[str, Any]:
    """The label → ε rows of the editor, rows without a label or an ε left out."""
    return {str(k): v for k, v in labels if k is not None and v is not None and not pd.isna(v)}


@st.cache_data(show_spinner="Building the privacy specification…", max_entries=16, scope="session")
def _build_spec(token: str, params: tuple, _ds: Dataset) -> personalized.PrivacySpec:
    p = dict(params)
    user_col = None if p["pdp_user"] in (None, EACH_RECORD) else p["pdp_user"]
    table = _ds.table
    if p["pdp_source"] == "tiers":
        cfg = personalized.TierConfig(f_c=float(p["pdp_fc"]), f_m=float(p["pdp_fm"]), eps_c=float(p["pdp_ec"]),
                           eps_m=float(p["pdp_em"]), eps_l=float(p["pdp_el"]))
        return personalized.generate_tiers_for(table, cfg, rng=np.random.default_rng(p["seed"]), user_col=user_col)
    col = p["pdp_col"]
    if not col or col not in table.columns:
        raise ParameterError("Choose the column that holds each user's ε.")
    if p["labels"]:
        mapping = label_mapping(p["labels"])
        tab = pd.DataFrame({col: table[col].astype(str)})
        if user_col:
            tab[user_col] = table[user_col].to_numpy()
        return personalized.spec_from_labels(tab, col, mapping, user_col=user_col, default_eps=float(p["pdp_default"]))
    return personalized.spec_from_column(table, col, user_col=user_col, default_eps=float(p["pdp_default"]))


def build_spec(ds: Dataset) -> personalized.PrivacySpec:
    p = spec_params()
    return _build_spec(state.token(), tuple(sorted(p.items(), key=lambda kv: kv[0])), ds)


def spec_key() -> tuple:
    return tuple(sorted(spec_params().items(), key=lambda kv: kv[0]))


def query_from_widgets(kind: str) -> personalized.PersonalizedQuery:
    ss = st.session_state
    col = ss.get("pdp_value")
    lo = float(ss.get("pdp_lo", 0.0))
    hi = float(ss.get("pdp_hi", 1.0))
    return personalized.PersonalizedQuery(kind, column=col, cutoff=float(ss.get("pdp_cutoff", 1.0)), lo=lo, hi=hi,
                   median_score=ss.get("pdp_score", "rank"), integer=bool(ss.get("pdp_integer", False)))


def mechanism(short: str, t_rule: str = "max", t_custom: float = 0.5,
              rescale: bool = False) -> personalized.PDPMechanism:
    t: Any = t_custom if t_rule == "custom" else t_rule
    if short == "M":
        return personalized.Minimum()
    if short == "T":
        return personalized.Threshold(t)
    if short == "S":
        return personalized.Sample(t, rescale=rescale)
    if short == "PE":
        return personalized.PE()
    return personalized.Stretching(rescale=rescale)


@st.cache_data(show_spinner="Comparing mechanisms on the data…", max_entries=16, scope="session")
def cached_compare(token: str, skey: tuple, query: personalized.PersonalizedQuery, runs: int, seed: int,
                   teaching: bool, _ds: Dataset, _spec: personalized.PrivacySpec) -> pd.DataFrame:
    """The mechanisms compared on the records: a teaching simulation (SimulationRefused in review mode)."""
    with simulation("Compare mechanisms", teaching=teaching):
        memory.guard("simulation", rows=_ds.n, columns=1)
        return personalized.compare(_ds.table, _spec, query, runs=runs, rng=Noise.teaching(seed).generator())


@st.cache_data(show_spinner="Computing the error curve…", max_entries=16, scope="session")
def cached_curve(token: str, skey: tuple, query: personalized.PersonalizedQuery, ts: tuple[float, ...],
                 which: Literal["sample", "threshold"], runs: int, seed: int, teaching: bool, _ds: Dataset,
                 _spec: personalized.PrivacySpec) -> pd.DataFrame:
    """The oracle error curve on the records: a teaching simulation (SimulationRefused in review mode)."""
    with simulation("The oracle threshold curve", teaching=teaching):
        memory.guard("simulation", rows=_ds.n, columns=1)
        return personalized.threshold_curve(_ds.table, _spec, query, list(ts), mechanism=which, runs=runs,
                                            rng=Noise.teaching(seed).generator())


@st.cache_data(show_spinner="Running the paper's experiment…", max_entries=8, ttl=state.PUBLIC_CACHE_TTL_S)
def cached_experiment(task: Literal["count", "median"], runs: int, score: str, seed: int) -> pd.DataFrame:
    cfg = personalized.ExperimentConfig(median_score=score)
    return personalized.paper_experiment(task, runs=runs, rng=np.random.default_rng(seed), config=cfg)


def fmt(v: Any) -> str:
    """Numbers for tables: thousands separators for large values, 4 significant digits otherwise."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(x):
        return "–"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def compare_display(df: pd.DataFrame) -> pd.io.formats.style.Styler:
    """The comparison table with plain column names."""
    out = df[["mechanism", "rmse", "ci_low", "ci_high", "bias", "method", "neighbours", "users_full_phi"]].rename(
        columns={"rmse": "RMSE", "ci_low": "95% low", "ci_high": "95% high", "bias": "bias (mean error)",
                 "method": "how computed", "users_full_phi": "users given their full Φ"})
    return out.style.format({"RMSE": fmt, "95% low": fmt, "95% high": fmt, "bias (mean error)": fmt,
                             "users given their full Φ": "{:.0%}"})


def delivered_display(df: pd.DataFrame) -> pd.io.formats.style.Styler:
    """The delivered-ε table with plain column names."""
    out = df[["mechanism", "neighbours", "mean_delivered", "mean_requested", "users_full_phi", "users_unused",
              "mean_excess_protection"]].rename(
        columns={"mean_delivered": "mean delivered ε", "mean_requested": "mean requested Φ",
                 "users_full_phi": "users given their full Φ", "users_unused": "users whose data is unused",
                 "mean_excess_protection": "mean extra protection (Φ − delivered)"})
    return out.style.format({"mean delivered ε": "{:.3g}", "mean requested Φ": "{:.3g}",
                             "users given their full Φ": "{:.1%}", "users whose data is unused": "{:.1%}",
                             "mean extra protection (Φ − delivered)": "{:.3g}"})


def pi_thresholds(spec: personalized.PrivacySpec, t: float) -> dict[str, float]:
    """The thresholds whose π curves are drawn: the chosen t, max Φ and mean Φ (near-duplicates dropped)."""
    out: dict[str, float] = {}
    for name, v in ((f"t = {t:g}", t), (f"t = max Φ = {spec.max_eps:.3g}", spec.max_eps),
                    (f"t = mean Φ = {spec.mean_eps:.3g}", spec.mean_eps)):
        if all(abs(v - w) > 0.005 * max(v, w) for w in out.values()):
            out[name] = v
    return out


def t_slider_step(spec: personalized.PrivacySpec) -> float:
    """Step (and smallest value) of the threshold slider: 0.01, or 0.001 when some Φ is below 0.01 (otherwise
    no t at or below those users' choices could be picked)."""
    return 0.001 if spec.min_eps < 0.01 else 0.01


def t_slider_range(spec: personalized.PrivacySpec) -> tuple[float, float, float]:
    """(min, max, start) of the threshold slider: one step to 1.5·max Φ, starting at mean Φ."""
    step = t_slider_step(spec)
    digits = 3 if step < 0.01 else 2
    hi = float(round(max(spec.max_eps * 1.5, 0.05), 2))
    start = float(min(max(round(spec.mean_eps, digits), step), hi))
    return step, hi, start


def t_grid(spec: personalized.PrivacySpec, points: int = 14) -> tuple[float, ...]:
    """Thresholds from min Φ to 1.5·max Φ on a log scale, plus max Φ and mean Φ."""
    lo = max(spec.min_eps, 1e-3)
    hi = spec.max_eps * 1.5
    g = np.geomspace(lo, hi, points)
    return tuple(float(x) for x in np.unique(np.round(np.r_[g, spec.max_eps, spec.mean_eps], 6)))


def prdp_run_key(query: personalized.PersonalizedQuery, c: float, eps_min: float, eps_max: float, seed: int,
                 teaching: bool) -> tuple:
    """What a PDP-vs-PrDP comparison was computed from: a stored table is shown only while all of it is
    unchanged (another dataset, specification, query or mode must not show an old table — in review mode
    never one holding true answers)."""
    return (state.token(), spec_key(), query, float(c), float(eps_min), float(eps_max), int(seed), bool(teaching))


def on_run_release() -> None:
    """Callback of the "Run release" button: run, record in the session ledger, keep the result."""
    ss = st.session_state
    ss.pop("pdp_release_error", None)
    try:
        ds = state.dataset()
        spec = build_spec(ds)
        q = query_from_widgets(ss.get("pdp_rel_kind", "count"))
        m = mechanism(MECHANISM_CHOICES[ss.get("pdp_rel_mech", "Sample (S)")],
                      T_RULES[ss.get("pdp_rel_t", "max Φ (paper's S)")], float(ss.get("pdp_rel_tc", 0.5)),
                      bool(ss.get("pdp_rel_rescale", False)))
        rng, seed = state.rng_and_seed()
        memory.guard("release", rows=ds.n, columns=4)  # values, Φ, requested and delivered ε per tuple
        flagged = data_default_params(q.kind if q.column is not None else "count")
        if ss.get("pdp_secure"):  # exact OpenDP samplers, unseeded (the rng is not used)
            if not state.teaching():  # review mode: bounds computed from the data are refused
                personalized.require_public_bounds(flagged)
            how: dict[str, Any] = {"rng": None, "secure": True}
        else:
            how = {"rng": rng, "seed": seed}
        rel = state.release("personalized", lambda: mark_sources(personalized.flag_design_defaults(
            m.release(ds.table, spec, q, reveal=state.teaching(), **how), flagged), private_params(q.kind)))
        ss["pdp_last_release"] = rel
    except PrdpError as err:
        ss["pdp_release_error"] = err


#: The Personalized DP page's session state (:class:`ui.page_state.PageState`); the specification and query keys
#: (``pdp_*``) make up the study's specification section and its ``personalized`` mechanism.
STATE = PageState(
    page="personalized",
    settings=("pdp_view", "pdp_t", "pdp_tq", "pdp_density", "pdp_assumed_mean", "pdp_assumed_sd", "pdp_curve_runs",
              "pdp_cmp_runs", "pdp_score", "pdp_exp_runs", "pdp_exp_score", "pdp_pe_src", "pdp_pe_kind",
              "pdp_prdp_c", "pdp_prdp_kind", "pdp_prdp_emin", "pdp_prdp_emax"),
    engine=("pdp_source", "pdp_user", "pdp_fc", "pdp_fm", "pdp_ec", "pdp_em", "pdp_el", "pdp_col", "pdp_default",
            "pdp_value", "pdp_cutoff", "pdp_lo", "pdp_hi", "pdp_rel_mech", "pdp_rel_kind", "pdp_rel_t", "pdp_rel_tc",
            "pdp_rel_rescale", "pdp_integer", "pdp_secure"),
    rules={"pdp_t": ("range", 0.001, 1e6, False), "pdp_density": ("range", 0.0, 1.0, False),
           "pdp_assumed_mean": ("range", 0.0, 1e300, False), "pdp_assumed_sd": ("range", 0.0, 1e300, False),
           "pdp_curve_runs": ("range", 10, 2000, True), "pdp_cmp_runs": ("range", 20, 2000, True),
           "pdp_exp_runs": ("range", 20, 5000, True), "pdp_prdp_c": ("range", 0.01, 100.0, False),
           "pdp_prdp_emin": ("range", 1e-6, 1e6, False), "pdp_prdp_emax": ("range", 1e-6, 1e6, False),
           "pdp_tq": ("choice", ("count", "sum", "mean", "median")), "pdp_score": ("choice", ("rank", "changes")),
           "pdp_exp_score": ("choice", ("rank", "changes")), "pdp_pe_src": ("choice", ("paper example", "active data")),
           "pdp_pe_kind": ("choice", ("median", "min", "count")), "pdp_prdp_kind": ("choice", ("count", "sum"))},
    editors=("pdp_label_map_df",),
    results=("pdp_last_release", "pdp_release_error", "pdp_cmp_on", "pdp_exp_on", "pdp_prdp_result",
             "pdp_data_defaults"),
    dataset_defaults=True,
)
