"""Helpers of the Concepts page: histogram-lab inputs, the cached run, its callback and the
reproduce-in-Python code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from prdp_core.data import Dataset
from prdp_core.errors import PrdpError
from prdp_core.mechanisms import granular
from prdp_core.release import Release

from . import memory, state
from .common import md_escape

#: Widget keys of the histogram lab and their defaults.
LAB_DEFAULTS: dict[str, Any] = {"hl_source": "generated", "hl_d": 64, "hl_n": 50_000, "hl_patterns": 20,
                                "hl_heavy": 0.5, "hl_eps0": 1.0, "hl_nu": 0.01, "hl_method": "exact",
                                "hl_match": "eps0", "hl_domains": "public"}
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


@st.cache_data(show_spinner="Running both histograms…", max_entries=8, scope="session")
def run_lab(token: str, params_items: tuple[tuple[str, Any], ...], seed: int, teaching: bool,
            _ds: Dataset) -> LabResult:
    """Run the heavy-hitter and the standard histogram (cached by dataset token, parameters, seed, mode)."""
    params = dict(params_items)
    if params["hl_source"] == "dataset":
        memory.guard("histogram", rows=_ds.n, columns=len(params["hl_columns"]) + 64)
    else:
        memory.guard("histogram", rows=int(params["hl_n"]), columns=int(params["hl_d"]) + 64)
    rng = np.random.default_rng(seed)
    data = _data(params, _ds, rng)
    hh = granular.heavy_hitter_histogram(data, eps0=float(params["hl_eps0"]), nu=float(params["hl_nu"]),
                                        method=params["hl_method"], rng=rng, seed=seed, reveal=teaching)
    eps_std = float(params["hl_eps0"]) if params["hl_match"] == "eps0" else float(hh.extras["whole_record"])
    std = granular.standard_histogram(data, eps=eps_std, rng=rng, seed=seed, reveal=teaching)
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
    try:
        return run_lab(state.token(), params, seed, teaching, state.dataset())
    except PrdpError:
        return None


def on_run() -> None:
    """Run-button callback: run both histograms once, record them in the session ledger."""
    params = lab_params()
    st.session_state.pop("hl_error", None)
    if params["hl_source"] == "dataset" and not params["hl_columns"]:
        st.session_state["hl_error"] = "Pick at least one column of the active dataset as an attribute."
        return
    _, seed = state.rng_and_seed()
    teaching = state.teaching()
    try:
        res = run_lab(state.token(), _items(params), seed, teaching, state.dataset())
    except PrdpError as err:
        st.session_state["hl_error"] = f"**{err.title}.** {md_escape(err)}"
        st.session_state.pop("hl_ran", None)
        return
    state.record_release(res.heavy)
    state.record_release(res.standard)
    st.session_state["hl_ran"] = (_items(params), seed, teaching, _data_key(params))


def _data_key(params: dict[str, Any]) -> str | None:
    """The dataset a lab run read (None for generated records): a run on one dataset is never shown — or
    silently re-run outside the ledger — once another dataset is active."""
    return state.token() if params.get("hl_source") == "dataset" else None


def reproduce_code(calc: dict[str, Any], explorer: dict[str, Any], params: dict[str, Any], seed: int,
                   teaching: bool, source_code: str) -> str:
    """prdp_core code reproducing the calculators, the explorer and the histogram lab."""
    if params["hl_source"] == "dataset":
        typed = dict(params.get("hl_declared", ()))
        doms = (f"granular.sample_domains({params['hl_sample']!r})" if params.get("hl_sample") else "{}")
        if typed:
            doms = f"{{**{doms}, **{typed!r}}}"
        from_data = (", from_data=True)  # exploration only: not DP for the set of categories"
                     if params["hl_domains"] == "data" else ")")
        data = (f"{source_code}\n# public categories (declared; other values go to \"(other)\"; numbers: size classes)\n"
                f"domains = {doms}\n"
                f"data = granular.encode_attributes(ds.table, {list(params['hl_columns'])!r}, domains{from_data}")
    else:
        data = (f"data = granular.synthetic_attribute_data({int(params['hl_n'])}, {int(params['hl_d'])}, "
                f"patterns={int(params['hl_patterns'])}, heavy_share={float(params['hl_heavy'])}, rng=rng)")
    std_eps = repr(float(params["hl_eps0"])) if params["hl_match"] == "eps0" else 'hh.extras["whole_record"]'
    return f"""import numpy as np
import prdp_core
from prdp_core import accounting, interpret
from prdp_core.mechanisms import granular

# calculators
interpret.inference_accuracy({calc['eps']!r})             # best guess of one bit
interpret.posterior_bound({calc['eps']!r}, {calc['prior']!r})
interpret.laplace_round_back_eps({calc['eps']!r})         # count + Lap(1/ε) rounds back
interpret.zcdp_side_by_side({calc['rho']!r}, {calc['delta']!r})  # CKS vs textbook
interpret.record_guarantee({calc['record']!r}, {calc['record_measure']!r}, delta={calc['delta']!r}).sentences()

# per-attribute explorer
granular.record_cost_table({explorer['d']}, {explorer['eps0']!r}, k={explorer['k']}, delta={calc['delta']!r})
granular.granularity_table({explorer['d']}, {explorer['eps0']!r}, k={explorer['k']}, kind={explorer['kind']!r})
releases = granular.census_2020_illustrative()
accounting.attribute_subset_rho(releases, ["race", "ethnicity"])  # 1.02
accounting.attribute_rho_table(releases, delta={calc['delta']!r})

# histogram lab (seeded: for teaching and review, not a real release)
rng = np.random.default_rng({seed})
{data}
hh = granular.heavy_hitter_histogram(data, eps0={float(params['hl_eps0'])!r}, nu={float(params['hl_nu'])!r},
                                    method={params['hl_method']!r}, rng=rng, seed={seed}, reveal={teaching})
std = granular.standard_histogram(data, eps={std_eps}, rng=rng, seed={seed}, reveal={teaching})
print(hh.extras["calibration"])
print(hh.answers.head(20))
"""
