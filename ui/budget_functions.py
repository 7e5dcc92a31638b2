"""Helpers of the Budget functions page: the editor's state → a budget function, cached engine
calls (domains, runs, scaling study) and the run callback."""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Literal

import numpy as np
import pandas as pd
import streamlit as st

from prdp_core.charts import budget as bch
from prdp_core.core.errors import ParameterError, PrdpError
from prdp_core.core.secure import mode_label
from prdp_core.data.dataset import Dataset
from prdp_core.engines import Aggregate, is_engine_data
from prdp_core.mechanisms import prdp
from prdp_core.mechanisms.prdp import local as prldp
from prdp_core.study.config import data_columns

from . import memory, options, state
from .common import md_escape, seeded_notice, show_error
from .figures import show
from .page_state import PageState

MODES = {"preset": "Preset", "step": "Step table", "groups": "Per group", "expression": "Expression"}
PRESET_LABELS = {k: v[0] for k, v in prdp.PRESETS.items()}
QUERIES = {"count": "Count of records", "sum": "Sum of the measure", "max": "Maximum of the measure",
           "distinct": "Distinct count of a column"}
LOCAL_QUERIES = ("count", "sum")
MODELS = {"central": "Central (trusted curator, PrDP)", "local": "Local (each party randomises, PrLDP)"}
THRESHOLDS = {"paper": "as printed: √(8n)·ln(L/β)", "bernstein": "tighter: √(8n·ln(2L/β))"}

#: Columns of the results table (with their plain reading) that review mode keeps: public outputs of the run.
EPS_TAU = "ε_τ (budget level settled on)"
ELL = "ℓ (first domain answered)"
EPS_M = "ε of M (= ε_τ/2)"
PUBLIC_RESULT_COLUMNS = ("mechanism", "estimate", EPS_TAU, ELL, EPS_M)

#: Widget keys and their defaults.
DEFAULTS: dict[str, Any] = {
    "bf_mode": "preset", "bf_preset": "inverse", "bf_alpha": 1e4, "bf_k": 4.0, "bf_eps": 1.0,
    "bf_expr": "1e4 / max({v}, 1)", "bf_eps_max": 100.0, "bf_eps_min_on": False, "bf_eps_min": 1e-8,
    "bf_model": "central", "bf_query": "sum", "bf_beta": 0.1, "bf_threshold": "paper", "bf_scale_vary": "n",
    "bf_scale_trials": 20,
}
PRESET_ALPHA = {"inverse": 1e4, "log": 500.0, "sqrt": 8.0}

#: Default domain bound U on the bank samples: the paper's bank experiments (balances up to 10¹²).
PAPER_BANK_U = 1e12
#: Default U on every other table: a round placeholder, never read from the data (a bound taken from the
#: largest record would reveal it, and set ε̌ = E(U) from it).
NEUTRAL_U = 1e6

#: Editor state that belongs to one dataset (its measure, group values, bound, last valid budget): dropped
#: when the dataset changes, so the next table starts from its own defaults.
DATASET_KEYS = ("bf_U", "bf_expr", "bf_measure", "bf_group_col", "bf_distinct_col", "bf_steps", "bf_steps_current",
                "bf_groups_base", "bf_groups_base_col", "bf_groups_table", "bf_last_valid")


def default_U(source: dict[str, Any]) -> float:
    """The default domain bound U for a data source: the paper's 10¹² for its bank samples, else 10⁶."""
    bank = source.get("kind") == "sample" and str(source.get("name", "")).startswith("bank_")
    return PAPER_BANK_U if bank else NEUTRAL_U


def default_note(source: dict[str, Any]) -> str | None:
    """What the page says while U and α are at their defaults (None once the designer changed them)."""
    ss = st.session_state
    u = default_U(source)
    if ss.get("bf_U") != u:
        return None
    if u == PAPER_BANK_U:
        return ("Defaults: U = 10¹² and the budget α = 10⁴ are those of the paper's bank experiments (balances in "
                "dollars); declare your own for a real release.")
    return ("Defaults: U = 10⁶ is a round placeholder, not read from the data — declare the largest value a record "
            "could have (a documented range of the measure). The presets' α (10⁴, 500, 8) are the paper's values "
            "for bank balances: choose budgets that fit your measure's units.")


def init(ds: Dataset) -> None:
    """Defaults of the editor (the expression names the active measure; U follows :func:`default_U`). A new
    dataset drops the editor state of the previous one (:data:`DATASET_KEYS`)."""
    ss = st.session_state
    if state.first_run_on_dataset("budget_functions"):
        for k in [*DATASET_KEYS, *(k for k in ss if isinstance(k, str) and k.startswith(("bf_groups_edit_",
                                                                                        "bf_steps_edit")))]:
            ss.pop(k, None)
    ss.setdefault("bf_U", default_U(state.source()))
    measures = list(ds.schema.measures)
    if ss.get("bf_measure") not in measures:
        ss["bf_measure"] = measures[0] if measures else None
    for k, v in DEFAULTS.items():
        if k == "bf_expr":
            col = ss["bf_measure"] or "v"
            ss.setdefault(k, v.format(v=col if col.isidentifier() else f"`{col}`"))
        else:
            ss.setdefault(k, v)
    if "bf_steps" not in ss:
        ss["bf_steps"] = pd.DataFrame({"up to value": [1e3, 1e5, None], "ε": [1.0, 0.1, 0.01]})
    groups = list(ds.schema.groups)
    if ss.get("bf_group_col") not in groups:
        ss["bf_group_col"] = groups[0] if groups else None


def on_preset_change() -> None:
    """A new preset starts from the paper's α for it."""
    ss = st.session_state
    if ss.get("bf_preset") in PRESET_ALPHA:
        ss["bf_alpha"] = PRESET_ALPHA[ss["bf_preset"]]


def group_values(ds: Any, col: str, limit: int = 12) -> list[str]:
    """The column's most frequent values (counted by the engine for a large dataset)."""
    if is_engine_data(ds):
        cells = ds.engine.cell_aggregates((col,), [Aggregate("n", "count")])
        vc = pd.Series(cells.values["n"], index=cells.keys[col].astype(str).to_numpy()).sort_values(
            ascending=False, kind="stable")
        return list(vc.index[:limit])
    vc = ds.table[col].astype(str).value_counts()
    return list(vc.index[:limit])


def default_group_table(ds: Any, col: str, measure: str) -> pd.DataFrame:
    vals = group_values(ds, col, 3)
    m = measure if measure.isidentifier() else f"`{measure}`"
    return pd.DataFrame({"group": vals + ["*"],
                         "budget": [f"1e4 / max({m}, 1)", "0.5", f"8 / sqrt(max({m}, 1))", f"1e4 / max({m}, 1)"]})


def build_budget(ds: Any) -> prdp.BudgetFunction:
    """The budget function described by the editor's widgets (raises PrdpError when invalid)."""
    ss = st.session_state
    v = ss.get("bf_measure")
    if not v:
        raise ParameterError("The dataset has no measure column.", hint="Mark a numeric column as a measure on the "
                                                                       "Data page.")
    eps_max = float(ss["bf_eps_max"])
    U = float(ss["bf_U"])
    eps_min = float(ss["bf_eps_min"]) if ss.get("bf_eps_min_on") else None
    mode = ss["bf_mode"]
    if mode == "preset":
        kind = ss["bf_preset"]
        params = {"eps": float(ss["bf_eps"])} if kind == "constant" else \
            {"alpha": float(ss["bf_alpha"]), **({"k": float(ss["bf_k"])} if kind == "log" else {})}
        if kind == "constant":
            return prdp.constant(params["eps"], U=U)
        return prdp.preset(kind, v, eps_min=eps_min, eps_max=eps_max, U=U, **params)
    if mode == "step":
        rows = pd.DataFrame(ss.get("bf_steps_current", ss["bf_steps"])).dropna(how="all")
        if rows.empty:
            raise ParameterError("The step table is empty: add at least one band.")
        eps = pd.to_numeric(rows["ε"], errors="coerce")
        bounds = pd.to_numeric(rows["up to value"], errors="coerce")
        if eps.isna().any():
            raise ParameterError("Every band of the step table needs an ε.")
        uppers = bounds.iloc[:-1]
        if uppers.isna().any():
            raise ParameterError("Every band but the last needs an upper value (the last band is open).")
        return prdp.step_table(v, uppers.tolist(), eps.tolist(), eps_min=eps_min, eps_max=eps_max, U=U)
    if mode == "groups":
        col = ss.get("bf_group_col")
        if not col:
            raise ParameterError("The dataset has no group column to split the budget by.")
        tbl = ss.get("bf_groups_table")
        if tbl is None:
            tbl = default_group_table(ds, col, v)
        tbl = pd.DataFrame(tbl).dropna(how="all")
        parts: dict[Any, str] = {}
        default = None
        for g, text in zip(tbl["group"].astype(str), tbl["budget"].astype(str)):
            if g.strip() == "*":
                default = text
            elif g.strip():
                parts[g.strip()] = text
        return prdp.per_group(col, parts, default=default, eps_min=eps_min, eps_max=eps_max, U=U)
    b = prdp.parse_budget(str(ss["bf_expr"]), eps_min=eps_min, eps_max=eps_max, U=U)
    b.check_columns(data_columns(ds))
    return b


def check_records(ds: Any, b: prdp.BudgetFunction) -> Any:
    """Every record must get a valid budget (PolicyError with the counts otherwise). A large dataset's
    records are checked in the engine, once per budget, with progress, and its per-domain statistics
    returned (for :func:`domain_table`); None in memory."""
    if not is_engine_data(ds):
        b(ds.table)
        return None
    from . import large

    def work(stage: Any) -> Any:
        memory.guard("release")  # a large table: the engine's memory limit
        stage("every record's budget E(r) and its privacy-specified domain, in the engine")
        return ds.engine.domain_stats(b)

    return large.stats("domains", budget_key(b), "Checking every record's budget", work)


def current_budget(ds: Any) -> tuple[prdp.BudgetFunction | None, PrdpError | None]:
    """The editor's budget, or the last valid one (with the error) when the current input is invalid."""
    ss = st.session_state
    try:
        b = build_budget(ds)
        check_records(ds, b)  # every record must get a valid budget
    except PrdpError as err:
        last = ss.get("bf_last_valid")
        if last is not None:
            try:
                last.check_columns(data_columns(ds))
                check_records(ds, last)
            except PrdpError:
                last = None
        return last, err
    ss["bf_last_valid"] = b
    return b, None


def budget_key(b: prdp.BudgetFunction) -> str:
    return json.dumps(b.to_dict(), sort_keys=True, default=str)


@st.cache_data(show_spinner=False, max_entries=32, scope="session")
def _domain_table(token: str, key: str, beta: float, _ds: Dataset, _b: prdp.BudgetFunction) -> pd.DataFrame:
    return _b.domain_table(_ds.table, beta=beta)


def domain_table(token: str, key: str, beta: float, ds: Any, b: prdp.BudgetFunction) -> pd.DataFrame:
    """The privacy-specified domains with their thresholds and record counts (a large dataset's counted in
    the engine by :func:`check_records`)."""
    if is_engine_data(ds):
        counts = check_records(ds, b).counts
        df = b.domain_table(None, beta=beta)
        df["records"] = counts
        return df
    return _domain_table(token, key, beta, ds, b)


@st.cache_data(show_spinner="Simulating…", max_entries=16, ttl=state.PUBLIC_CACHE_TTL_S)
def scaling(vary: Literal["n", "U", "sigma"], trials: int, seed: int) -> pd.DataFrame:
    memory.guard("scaling", rows=max(prdp.SCALING_DEFAULTS["n"]), columns=1)  # the largest simulated data set
    return prdp.scaling_study(vary, trials=trials, seed=seed)


#: Records drawn to mark a large dataset's values on the budget curve.
CURVE_SAMPLE_ROWS = 2_000


def measure_values(ds: Any, measure: str) -> np.ndarray:
    """The measure's values to mark on the budget curve: all of them in memory; for a large dataset a
    uniform sample of :data:`CURVE_SAMPLE_ROWS` records drawn in the engine (the chart samples its points
    anyway)."""
    if not is_engine_data(ds):
        return ds.table[measure].to_numpy(dtype=float)
    from . import large

    def work(stage: Any) -> np.ndarray:
        stage(f"drawing {CURVE_SAMPLE_ROWS:,} records uniformly at random, in the engine")
        return ds.sample(CURVE_SAMPLE_ROWS, int(st.session_state.get("seed", 0))).table[measure].to_numpy(float)

    return large.stats("curve_values", measure, "Marking a sample of the records on the curve", work)


def _mechanisms(model: str, query: str) -> list[tuple[str, Any, bool]]:
    """(label, run function, whether it needs the records themselves) of the mechanisms compared side by
    side. The central count, framework and naive baseline run on per-domain statistics (an engine computes
    them for a large dataset); the local model and the Sec. 5.2 extension need the records. A run function
    takes (table, budget, query, how, threshold rule, reveal); ``how`` is {"rng", "seed"} for a seeded run or
    {"secure": True} for a secure one (exact OpenDP samplers, unseeded)."""
    beta = st.session_state["bf_beta"]
    if model == "local":
        out = []
        if query == "count":
            out.append(("PrLDP count (Alg. 3–4)", lambda t, b, q, how, th, rv: prldp.count(
                b(t), eps_min=b.eps_min, eps_max=b.eps_max, beta=beta, threshold=th, reveal=rv, **how), True))
        out.append(("PrLDP framework (Alg. 5)", lambda t, b, q, how, th, rv: prldp.framework(
            t, b, q, beta=beta, threshold=th, reveal=rv, **how), True))
        out.append(("naive ε̌ (local)", lambda t, b, q, how, th, rv: prldp.naive(
            t, b, q, beta=beta, reveal=rv, **how), True))
        return out
    out = [("PrDP framework (Alg. 2)", lambda t, b, q, how, th, rv: prdp.framework(
        t, b, q, beta=beta, reveal=rv, **how), False)]
    if query == "count":
        out.insert(0, ("PrDP count (Alg. 1)", lambda t, b, q, how, th, rv: prdp.count_of(
            t, b, beta=beta, reveal=rv, **how), False))
    if query.startswith("sum"):
        out.append(("PrDP extension (Sec. 5.2)", lambda t, b, q, how, th, rv: prdp.sum_extension(
            t, b, column=q.split(":", 1)[1], beta=beta, reveal=rv, **how), True))
    out.append(("naive ε̌", lambda t, b, q, how, th, rv: prdp.naive(t, b, q, beta=beta, reveal=rv, **how), False))
    return out


#: What the sample offer of the Budget functions page says needs the records.
RECORD_MECHANISMS = "The local model (PrLDP) and the Sec. 5.2 sum extension"


def needs_records(model: str, query: str) -> bool:
    """Whether some mechanism run for this model and query needs the records themselves."""
    return any(r for _, _, r in _mechanisms(model, query))


def query_string() -> str:
    ss = st.session_state
    q = ss["bf_query"]
    if q in ("sum", "max"):
        return f"{q}:{ss['bf_measure']}"
    if q == "distinct":
        return f"distinct:{ss.get('bf_distinct_col')}"
    return "count"


def run_controls() -> None:
    """Section 3's Run button and its secure toggle (secure: exact OpenDP samplers, unseeded)."""
    b1, b2 = st.columns([1, 3])
    b1.button("Run", type="primary", key="bf_run", on_click=on_run)
    b2.toggle("Secure release", key="bf_secure",
              help="Exact noise from OpenDP's samplers with a system random source, answers on a documented grid, "
                   "no seed: for numbers that may be published. Off: a seeded run, reproducible, for teaching "
                   "and review.")


def mode_notice(res: dict[str, Any]) -> None:
    """Which mode produced the answers shown: secure (unseeded) or a seeded teaching run."""
    st.caption(f"Mode: **{mode_label(bool(res.get('secure')))}**")
    if res.get("secure"):
        st.caption(f":material/lock: {mode_label(True)}: exact discrete noise from OpenDP; counts are integers, "
                   "sums lie on a grid of powers of two (docs/security.md). Every run differs.")
    else:
        seeded_notice(res["seed"])


def on_run() -> None:
    """Run the mechanisms side by side (callback: results are ready for the rerun). On a large dataset the
    mechanisms that need the records run on the page's labelled sample when one was chosen (and are left
    out otherwise); the others on the whole table, in its engine."""
    ss = st.session_state
    ss["bf_run_error"] = None
    ds = state.dataset()
    b, err = current_budget(ds)
    if b is None:
        ss["bf_run_error"] = str(err) if err else "No valid budget function."
        ss["bf_result"] = None
        return
    model, q = ss["bf_model"], query_string()
    rng, seed = state.rng_and_seed()
    secure = bool(ss.get("bf_secure", False))
    how: dict[str, Any] = {"secure": True} if secure else {"rng": rng, "seed": seed}
    teaching = state.teaching()
    large_ds = is_engine_data(ds)
    smp = _sample() if large_ds else None
    rows, skipped = [], []
    releases: list[tuple[str, Any]] = []
    try:
        mechanisms = _mechanisms(model, ss["bf_query"])
        # model: records × (the requested and delivered loss of each mechanism, and the value read); a large
        # table: the engine's memory limit (its sample: the sample's records)
        memory.guard("release", rows=ds.n, columns=2 * len(mechanisms) + 1)
        if smp is not None:
            from prdp_core.data import memory as M

            M.check("release", len(smp.table), 2 * len(mechanisms) + 1)
        for label, fn, records in mechanisms:
            if large_ds and records and smp is None:
                skipped.append(label)
                continue
            data = smp.table if (large_ds and records) else (ds if large_ds else ds.table)  # type: ignore[union-attr]  # smp is not None when a large dataset's records are read (skipped above)
            if large_ds and records:
                label = f"{label} [sample of {_sample_choice()[0]:,} rows asked]"  # type: ignore[index]  # _sample_choice is set whenever a sample was drawn (smp above)
            rel = state.release("budget_functions", partial(fn, data, b, q, how, ss.get("bf_threshold", "paper"),
                                                            teaching), label=label, add=bool(releases),
                                sample=_sample_note(smp) if (large_ds and records) else None)
            releases.append((label, rel))
    except PrdpError as e:
        ss["bf_run_error"] = str(e)
        ss["bf_result"] = None
        return
    for label, rel in releases:
        a = rel.answers.iloc[0]
        row = {"mechanism": label, "estimate": float(a["estimate"]), EPS_TAU: float(a["eps_tau"]),
               ELL: int(a["ell"]), EPS_M: rel.extras.get("eps_M", np.nan)}
        if teaching:
            row.update({"true": float(a["true"]), "error": float(a["error"]),
                        "relative error": float(a["rel_error"]),
                        "records dropped": rel.extras.get("private_dropped", 0)})
            if "private_rank_error" in rel.extras:
                row["records above the answer"] = rel.extras["private_rank_error"]
        rows.append(row)
    ss["bf_result"] = {"rows": pd.DataFrame(rows), "releases": releases, "seed": None if secure else seed,
                       "secure": secure, "query": q, "model": model,
                       "teaching": teaching, "budget": b.describe(), "token": state.token(), "skipped": skipped}


def _sample() -> Dataset | None:
    from . import large

    return large.sample_dataset("budget_functions")


def _sample_choice() -> tuple[int, int] | None:
    from . import large

    return large.sample_choice("budget_functions")


def _sample_note(smp: Dataset | None) -> dict[str, Any] | None:
    """How a release made on the page's sample is labelled in the ledger."""
    if smp is None:
        return None
    from . import large

    rows, seed = large.sample_choice("budget_functions")  # type: ignore[misc]  # sample_choice is set once sample_dataset gave a sample
    return {"rows": rows, "of": state.active_dataset().name, "seed": seed}


def loss_series(releases: list[tuple[str, Any]]) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], Any]:
    """Delivered-loss CDFs of releases whose losses are distributions (a large dataset's), and the
    records' requested budgets E(r) binned by domain."""
    series = {label: rel.distribution().ecdf() for label, rel in releases}
    req = next((rel.extras.get("private_requested_distribution") for _, rel in releases
                if rel.extras.get("private_requested_distribution") is not None), None)
    if req is not None:
        series = {"requested E(r) (by domain, upper edges)": req.ecdf(), **series}
    return series, req


#: Assumed distributions of the measure the forecast offers (a public assumption, never read from the data).
#: The forecast's starting n in review mode (typed over by the designer; never the dataset's count there).
REVIEW_N = 10_000
FORECAST_KINDS: dict[str, str] = {"normal": "Normal (negative values redrawn)", "lognormal": "log-normal"}


@st.cache_data(show_spinner=False, max_entries=32, scope="session")
def _outlook(key: str, assumed: str, n: int, query: str, beta: float, model: str, threshold: str,
             _b: prdp.BudgetFunction) -> prdp.Outlook:
    return prdp.outlook(_b, prdp.AssumedData(**json.loads(assumed)), n, query, beta=beta, model=model,  # type: ignore[arg-type]  # query and model come from the page's radios (count or sum; central or local)
                     threshold=threshold)  # type: ignore[arg-type]  # threshold comes from the page's radio (paper or bernstein)


def forecast_panel(budget: prdp.BudgetFunction, ds: Dataset) -> None:
    """Before the Run button: the framework's predicted failure for n records of an assumed distribution
    of the measure (public inputs only — no record is read), a warning when failure is likely, and the
    remedies evaluated with their predicted errors (:func:`prdp_core.mechanisms.prdp_forecast.outlook`)."""
    ss = st.session_state
    start = min(5e4, float(budget.U) / 20)
    for k, v in (("bf_fc_kind", "normal"), ("bf_fc_a", start), ("bf_fc_b", start), ("bf_fc_logsd", 1.0)):
        ss.setdefault(k, v)
    # n: the dataset's count in teaching mode; in review mode a typed value (a record count is not shown there)
    teaching = state.teaching()
    if ("bf_fc_n" not in ss or ss.get("bf_fc_n_for") != state.token()
            or (not teaching and ss.get("bf_fc_n_src") == "data")):  # a widget's key is gone after another page ran
        ss["bf_fc_n"] = int(ds.n) if teaching else REVIEW_N
        ss["bf_fc_n_for"], ss["bf_fc_n_src"] = state.token(), "data" if teaching else "default"
    query, model = ss.get("bf_query"), ss.get("bf_model", "central")
    normal = ss["bf_fc_kind"] == "normal"
    spread = float(ss["bf_fc_b"] if normal else ss["bf_fc_logsd"])
    o = None
    if query not in ("count", "sum"):
        st.caption(":material/insights: No forecast for this query (counts and sums only).")
    else:
        try:
            assumed = prdp.AssumedData(ss["bf_fc_kind"], float(ss["bf_fc_a"]), spread)
            o = _outlook(budget_key(budget), json.dumps(assumed.to_dict()), int(ss["bf_fc_n"]), query,
                         float(ss["bf_beta"]), model, ss.get("bf_threshold", "paper"), budget)
        except PrdpError as err:
            st.caption(f":material/insights: No forecast: {md_escape(err)}")
    if o is not None:
        f = o.forecast
        if o.likely_to_fail:
            st.warning(md_escape(o.warning()), icon=":material/warning:")
        else:
            st.caption(f":material/insights: Forecast for n = {f.n:,} records of the assumed data: relative error "
                       f"≥ {f.level:.0%} with probability {f.failure:.1%}, median {100 * f.median_re:.3g}%.")
    with st.expander("Forecast before the run (assumed data: no record is read)", expanded=False):
        c1, c2, c3, c4 = st.columns(4)
        c1.selectbox("Assumed distribution of the measure", list(FORECAST_KINDS),
                     format_func=lambda k: FORECAST_KINDS[k], key="bf_fc_kind")
        c2.number_input("Mean" if normal else "Median", min_value=0.0, max_value=1e18,
                        key="bf_fc_a", format="%.6g")
        if normal:
            c3.number_input("Standard deviation", min_value=1e-12, max_value=1e18, key="bf_fc_b", format="%.6g")
        else:
            c3.number_input("Spread (sd of ln v)", min_value=1e-3, max_value=20.0, key="bf_fc_logsd", format="%.3g")
        c4.number_input("Records n (public or noisy)", min_value=1, max_value=10**12, step=1000, key="bf_fc_n",
                        on_change=lambda: ss.__setitem__("bf_fc_n_src", "typed"),
                        help="The dataset's count in teaching mode; type the public (or a noisy) count in review "
                             "mode, which shows no record count.")
        st.caption("A public assumption about the measure and a public (or noisy) number of records: the forecast "
                   "computes the probability that domain selection settles on each domain and the error that "
                   "follows in closed form (see *prdp_core.mechanisms.prdp_forecast*). Nothing here reads the "
                   "records, so it holds in review mode too.")
        if o is not None:
            tab = o.table()
            shown = tab.assign(**{c: tab[c].map(lambda x: "∞" if not np.isfinite(x) else f"{100 * x:.3g}%")
                                  for c in tab.columns if "RE" in c})
            st.dataframe(shown, hide_index=True, width="stretch")
            top = np.argsort(o.forecast.ell_probability)[::-1][:3]
            if o.forecast.ell_probability.size:
                st.caption("Domain selection settles on " + ", ".join(
                    f"domain {i + 1} with probability {o.forecast.ell_probability[i]:.1%}" for i in top
                    if o.forecast.ell_probability[i] >= 0.001) + f"; no domain passes with probability "
                    f"{o.forecast.no_pass:.1%}.")


def scaling_section() -> None:
    """Section 4 of the page: the scaling study (synthetic data, Figs. 3–5)."""
    ss = st.session_state
    st.subheader("4 · Scaling: sum error vs n, U and skew")
    st.caption("Simulated Normal(μ = 50k, σ) balances and the paper's three budget functions (10⁴/v, 500/ln⁴v, 8/√v; "
               "ε̂ = 100), central model, as in Figs. 3–5. Synthetic data only: nothing here describes your records.")
    s1, s2, s3 = st.columns([2, 1, 1])
    s1.radio("Vary", list(options.SCALE_VARY), key="bf_scale_vary", horizontal=True,
             format_func={"n": "records n (Fig. 3)", "U": "domain bound U (Fig. 4)", "sigma": "skew σ (Fig. 5)"}.get)
    s2.number_input("Runs per point", min_value=5, max_value=200, step=5, key="bf_scale_trials")
    if s3.button("Simulate", key="bf_scale_go"):
        ss["bf_scale_shown"] = (ss["bf_scale_vary"], int(ss["bf_scale_trials"]))
    shown_scale = ss.get("bf_scale_shown")
    if shown_scale:
        try:
            study = scaling(shown_scale[0], shown_scale[1], int(ss.get("seed", 0)))
            show(bch.scaling_figure(study, shown_scale[0]), key="bf_scaling")
            st.caption("Solid: 10⁴/v, dashed: 500/ln⁴v, dotted: 8/√v. The extension is best for 10⁴/v; for the slowly "
                       "decreasing log budget the framework wins (Appendix A).")
        except PrdpError as e:
            show_error(e)


#: The Budget functions page's session state (:class:`ui.page_state.PageState`); the editor's keys (``bf_*``)
#: make up the study's budget section and its ``prdp`` / ``prldp`` mechanism.
STATE = PageState(
    page="budget_functions",
    settings=("bf_scale_vary", "bf_scale_trials"),
    engine=("bf_mode", "bf_preset", "bf_alpha", "bf_k", "bf_eps", "bf_expr", "bf_eps_max", "bf_U", "bf_eps_min_on",
            "bf_eps_min", "bf_measure", "bf_group_col", "bf_model", "bf_query", "bf_distinct_col", "bf_beta",
            "bf_threshold", "bf_secure"),
    rules={"bf_scale_vary": ("choice", options.SCALE_VARY), "bf_scale_trials": ("range", 5, 200, True)},
    editors=("bf_steps", "bf_steps_current", "bf_groups_base", "bf_groups_base_col", "bf_groups_table"),
    results=("bf_result", "bf_run_error", "bf_last_valid", "bf_scale_shown"),
    dataset_defaults=True,
)
