"""Helpers of the Budget functions page: the editor's state → a budget function, cached engine
calls (domains, runs, scaling study), the run callback and the reproduce-in-Python code."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from prdp_core import budget as B
from prdp_core.data import Dataset
from prdp_core.errors import ParameterError, PrdpError
from prdp_core.mechanisms import prdp as P
from prdp_core.mechanisms import prldp as LP

from . import memory, state
from .datasource import load_code

MODES = {"preset": "Preset", "step": "Step table", "groups": "Per group", "expression": "Expression"}
PRESET_LABELS = {k: v[0] for k, v in B.PRESETS.items()}
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


def group_values(ds: Dataset, col: str, limit: int = 12) -> list[str]:
    vc = ds.table[col].astype(str).value_counts()
    return list(vc.index[:limit])


def default_group_table(ds: Dataset, col: str, measure: str) -> pd.DataFrame:
    vals = group_values(ds, col, 3)
    m = measure if measure.isidentifier() else f"`{measure}`"
    return pd.DataFrame({"group": vals + ["*"],
                         "budget": [f"1e4 / max({m}, 1)", "0.5", f"8 / sqrt(max({m}, 1))", f"1e4 / max({m}, 1)"]})


def build_budget(ds: Dataset) -> B.BudgetFunction:
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
            return B.constant(params["eps"], U=U)
        return B.preset(kind, v, eps_min=eps_min, eps_max=eps_max, U=U, **params)
    if mode == "step":
        rows = pd.DataFrame(ss.get("bf_steps_current", ss["bf_steps"])).dropna(how="all")
        if rows.empty:
            raise ParameterError("The step table is empty: add at least one band.")
        eps = pd.to_numeric(rows["ε"], errors="coerce")
        bounds = pd.to_numeric(rows["up to value"], errors="coerce")
        if eps.isna().any():
            raise ParameterError("Every band of the step table needs an ε.")
        b = bounds.iloc[:-1]
        if b.isna().any():
            raise ParameterError("Every band but the last needs an upper value (the last band is open).")
        return B.step_table(v, b.tolist(), eps.tolist(), eps_min=eps_min, eps_max=eps_max, U=U)
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
        return B.per_group(col, parts, default=default, eps_min=eps_min, eps_max=eps_max, U=U)
    b = B.parse_budget(str(ss["bf_expr"]), eps_min=eps_min, eps_max=eps_max, U=U)
    b.check_columns(ds.table.columns)
    return b


def current_budget(ds: Dataset) -> tuple[B.BudgetFunction | None, PrdpError | None]:
    """The editor's budget, or the last valid one (with the error) when the current input is invalid."""
    ss = st.session_state
    try:
        b = build_budget(ds)
        b(ds.table)  # every record must get a valid budget
    except PrdpError as err:
        last = ss.get("bf_last_valid")
        if last is not None:
            try:
                last.check_columns(ds.table.columns)
                last(ds.table)
            except PrdpError:
                last = None
        return last, err
    ss["bf_last_valid"] = b
    return b, None


def budget_key(b: B.BudgetFunction) -> str:
    return json.dumps(b.to_dict(), sort_keys=True, default=str)


@st.cache_data(show_spinner=False, max_entries=32, scope="session")
def domain_table(token: str, key: str, beta: float, _ds: Dataset, _b: B.BudgetFunction) -> pd.DataFrame:
    return _b.domain_table(_ds.table, beta=beta)


@st.cache_data(show_spinner="Simulating…", max_entries=16, ttl=state.PUBLIC_CACHE_TTL_S)
def scaling(vary: str, trials: int, seed: int) -> pd.DataFrame:
    memory.guard("scaling", rows=max(P.SCALING_DEFAULTS["n"]), columns=1)  # the largest simulated data set
    return P.scaling_study(vary, trials=trials, seed=seed)


def measure_values(ds: Dataset, measure: str) -> np.ndarray:
    return ds.table[measure].to_numpy(dtype=float)


def _mechanisms(model: str, query: str) -> list[tuple[str, Any]]:
    """(label, run function) of the mechanisms compared side by side."""
    if model == "local":
        out = []
        if query == "count":
            out.append(("PrLDP count (Alg. 3–4)", lambda t, b, q, rng, th, rv, sd: LP.count(
                b(t), eps_min=b.eps_min, eps_max=b.eps_max, beta=st.session_state["bf_beta"], rng=rng,
                threshold=th, reveal=rv, seed=sd)))
        out.append(("PrLDP framework (Alg. 5)", lambda t, b, q, rng, th, rv, sd: LP.framework(
            t, b, q, beta=st.session_state["bf_beta"], rng=rng, threshold=th, reveal=rv, seed=sd)))
        out.append(("naive ε̌ (local)", lambda t, b, q, rng, th, rv, sd: LP.naive(
            t, b, q, beta=st.session_state["bf_beta"], rng=rng, reveal=rv, seed=sd)))
        return out
    out = [("PrDP framework (Alg. 2)", lambda t, b, q, rng, th, rv, sd: P.framework(
        t, b, q, beta=st.session_state["bf_beta"], rng=rng, reveal=rv, seed=sd))]
    if query == "count":
        out.insert(0, ("PrDP count (Alg. 1)", lambda t, b, q, rng, th, rv, sd: P.count(
            b(t), eps_min=b.eps_min, eps_max=b.eps_max, beta=st.session_state["bf_beta"], rng=rng, reveal=rv,
            seed=sd)))
    if query.startswith("sum"):
        out.append(("PrDP extension (Sec. 5.2)", lambda t, b, q, rng, th, rv, sd: P.sum_extension(
            t, b, column=q.split(":", 1)[1], beta=st.session_state["bf_beta"], rng=rng, reveal=rv, seed=sd)))
    out.append(("naive ε̌", lambda t, b, q, rng, th, rv, sd: P.naive(
        t, b, q, beta=st.session_state["bf_beta"], rng=rng, reveal=rv, seed=sd)))
    return out


def query_string() -> str:
    ss = st.session_state
    q = ss["bf_query"]
    if q in ("sum", "max"):
        return f"{q}:{ss['bf_measure']}"
    if q == "distinct":
        return f"distinct:{ss.get('bf_distinct_col')}"
    return "count"


def on_run() -> None:
    """Run the mechanisms side by side (callback: results are ready for the rerun)."""
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
    teaching = state.teaching()
    rows, releases = [], []
    try:
        mechanisms = _mechanisms(model, ss["bf_query"])
        # model: records × (the requested and delivered loss of each mechanism, and the value read)
        memory.guard("release", rows=ds.n, columns=2 * len(mechanisms) + 1)
        for label, fn in mechanisms:
            rel = fn(ds.table, b, q, rng, ss.get("bf_threshold", "paper"), teaching, seed)
            releases.append((label, rel))
            state.record_release(rel)
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
    ss["bf_result"] = {"rows": pd.DataFrame(rows), "releases": releases, "seed": seed, "query": q, "model": model,
                       "teaching": teaching, "budget": b.describe(), "token": state.token()}


def code(b: B.BudgetFunction | None, source: dict[str, Any], ds: Dataset) -> str:
    """prdp_core code reproducing the page on the active dataset (the expression, column and file
    names are written as literals, ``repr``, never as code)."""
    ss = st.session_state
    expr = b.expression() if b is not None else "1e4 / max(BALANCE, 1)"
    lines = [
        "import numpy as np",
        "import prdp_core",
        "from prdp_core import budget as B",
        "from prdp_core.mechanisms import prdp, prldp",
        "",
        load_code(source, ds),
        f"E = B.parse_budget({expr!r}, eps_min={b.eps_min if b else None!r}, eps_max={b.eps_max if b else 100.0!r},"
        f" U={b.U if b else 1e12!r})",
        "print(E.describe())",
        f"print(E.domain_table(ds.table, beta={ss.get('bf_beta', 0.1)!r}))  # domains, value ranges, thresholds",
        f"rng = np.random.default_rng({int(ss.get('seed', 0))})",
    ]
    q = query_string()
    if ss.get("bf_model") == "local":
        lines += [f"rel = prldp.framework(ds.table, E, {q!r}, beta={ss.get('bf_beta', 0.1)!r}, rng=rng, "
                  f"threshold={ss.get('bf_threshold', 'paper')!r}, reveal=True)"]
    else:
        lines += [f"rel = prdp.framework(ds.table, E, {q!r}, beta={ss.get('bf_beta', 0.1)!r}, rng=rng, reveal=True)",
                  f"base = prdp.naive(ds.table, E, {q!r}, beta={ss.get('bf_beta', 0.1)!r}, rng=rng, reveal=True)"]
    lines += ["print(rel.answers, rel.extras['eps_tau'])",
              "assert rel.check_delivered_within_requested()  # every record gets at most E(r)",
              "",
              "# the scaling study (the paper's Figs. 3-5)",
              f"study = prdp.scaling_study({ss.get('bf_scale_vary', 'n')!r}, "
              f"trials={int(ss.get('bf_scale_trials', 20))})"]
    return "\n".join(lines)
