"""State of the Policy designer: the active per-record zCDP policy, its editors and caches.

Keys in ``st.session_state``:

* ``policy`` – the last valid :class:`~prdp_core.workload.SplittingPolicy` (used by the
  Run and Trade-offs pages); kept when an edit is invalid;
* ``policy_token`` – the dataset token the policy was made for (a new dataset resets it);
* ``policy_compare`` – saved policy-loss CDFs overlaid for comparison;
* ``policy_summary`` – the one-line description shown in the sidebar.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from prdp_core.data import Dataset
from prdp_core.errors import PrdpError
from prdp_core.policy import LossProfile
from prdp_core.preview import PolicyPreview, preview_policy
from prdp_core.samples import CBP_SPLIT_SCHEMES
from prdp_core.splitting import Thresholds, as_thresholds, split_counts, thresholds_to_frame
from prdp_core.workload import SplittingPolicy, Workload, default_workload, workload_to_frame

from . import memory, state

#: Table 8 "Conservative" thresholds for the CBP-like sample (the ≈97–99th percentiles).
_CBP_DEFAULT = {m: float(t) for m, t in CBP_SPLIT_SCHEMES["Conservative"].items()}


def _round2(x: float) -> float:
    """Round to two significant digits (friendlier default thresholds)."""
    if x <= 0 or not math.isfinite(x):
        return 1.0
    p = math.floor(math.log10(x)) - 1
    return float(round(x / 10**p) * 10**p)


def default_thresholds(ds: Dataset) -> dict[str, float]:
    """Starting thresholds: Table 8's conservative scheme for CBP-like data, else the 99th percentiles."""
    if all(m in ds.schema.measures for m in _CBP_DEFAULT) and ds.name.startswith("cbp_like"):
        return dict(_CBP_DEFAULT)
    out = {}
    for m in ds.schema.measures:
        v = ds.table[m].to_numpy()
        q = float(np.quantile(v, 0.99)) if v.size else 1.0
        if q <= 0:
            pos = v[v > 0]
            q = float(pos.min()) if pos.size else 1.0
        out[m] = _round2(q)
    return out


def default_policy(ds: Dataset) -> SplittingPolicy:
    """COUNT + one SUM per measure on split data, grouped by the first group column, base loss 1ρ."""
    complete = [g for g in ds.schema.groups if not ds.table[g].isna().any()]  # a group-by needs every value
    group = (ds.schema.groups[1],) if ds.name.startswith("cbp_like") and len(complete) > 1 else \
        tuple(complete[:1])
    k = len(ds.schema.measures)
    wl = default_workload(ds.schema.measures, group, rho_count=0.25 if k >= 3 else 0.5,
                          rho_sum=(0.75 if k >= 3 else 0.5) / k)
    return SplittingPolicy(as_thresholds(default_thresholds(ds)), wl)


def ensure_policy() -> SplittingPolicy:
    """The active policy, (re)initialised when the dataset changed."""
    ss = st.session_state
    if ss.get("policy_token") != state.token() or "policy" not in ss:
        ds = state.dataset()
        pol = default_policy(ds)
        set_policy(pol)
        ss["policy_token"] = state.token()
        ss["policy_compare"] = []
        ss["thr_frame"] = thresholds_to_frame(pol.thresholds)
        ss["wl_frame"] = workload_to_frame(pol.workload)
        ss["thr_editor_version"] = ss.get("thr_editor_version", 0) + 1
        for m, t in pol.thresholds.as_dict()["*"].items():
            ss[f"thr_{m}"] = float(t)
        ss["policy_partition_rho"] = 0.0
        ss["policy_joint"] = True
        ss["policy_per_group"] = False
    return ss["policy"]


def set_policy(pol: SplittingPolicy) -> None:
    st.session_state["policy"] = pol
    wl = pol.workload
    st.session_state["policy_summary"] = (
        f"**Unit splitting** (per-record zCDP)  \nbase loss {wl.total_rho:.3g}ρ, "
        f"{wl.split_rho:.3g}ρ·m(r)² on split data  \n{pol.thresholds.describe()}")


def policy_key(pol: SplittingPolicy) -> str:
    return json.dumps(pol.to_dict(), sort_keys=True, default=str)


@st.cache_data(show_spinner=False, max_entries=32, scope="session")
def cached_pieces(token: str, thr_json: str, _ds: Dataset, _thr: Thresholds) -> np.ndarray:
    """Split counts of the dataset for one set of thresholds (the expensive, reusable part)."""
    return split_counts(_ds.table, _thr)


@st.cache_resource(show_spinner="Evaluating the policy on every record…", max_entries=16, scope="session")
def cached_preview(token: str, pol_json: str, owner_method: str, _ds: Dataset,
                   _pol: SplittingPolicy) -> PolicyPreview:
    """Policy preview, computed once per (dataset, policy, owner bound).

    A resource cache, not a data cache: the preview refers to the dataset, and pickling a copy of
    a million-row table on every threshold change took most of the page's rerun. The preview is
    never mutated by its readers (its lazily computed profiles are the same for every reader).
    """
    memory.guard("preview", rows=_ds.n, columns=memory.dataset_columns(_ds))
    thr_json = json.dumps(_pol.thresholds.to_dict(), sort_keys=True, default=str)
    pieces = cached_pieces(token, thr_json, _ds, _pol.thresholds)
    return preview_policy(_ds, _pol, owner_method=owner_method, pieces=pieces)  # type: ignore[arg-type]


def preview(pol: SplittingPolicy, owner_method: str = "lemma4") -> PolicyPreview:
    return cached_preview(state.token(), policy_key(pol), owner_method, state.dataset(), pol)


def save_comparison(label: str, prev: PolicyPreview) -> None:
    """Keep this policy's CDFs to overlay on the charts."""
    entry: dict[str, Any] = {"label": label, "records": prev.record_cdf()}
    if prev.owners is not None:
        entry["owners"] = prev.owners.ecdf()
    st.session_state.setdefault("policy_compare", []).append(entry)


def _round_up(x: float, digits: int = 3) -> float:
    """Round up to ``digits`` significant digits (never below x, so a loss cap still holds)."""
    if x <= 0 or not math.isfinite(x):
        return x
    p = math.floor(math.log10(x)) - digits + 1
    return float(math.ceil(x / 10**p - 1e-9) * 10**p)


def apply_suggestion(thr: Thresholds) -> None:
    """Callback target: write suggested (single-row) thresholds into the editors, rounded up."""
    ss = st.session_state
    for m, t in thr.as_dict()["*"].items():
        ss[f"thr_{m}"] = _round_up(float(t))


def thresholds_frame_for_editor(ds: Dataset) -> pd.DataFrame:
    """The per-group editor's starting table: the current single-row thresholds as the default row."""
    cur = {m: float(st.session_state.get(f"thr_{m}", 1.0)) for m in ds.schema.measures}
    return pd.DataFrame([{"group": "*", **cur}])


def try_policy(make: Any) -> tuple[SplittingPolicy | None, PrdpError | None]:
    """Build a policy with ``make()``; return it or the error (the caller keeps the last valid one)."""
    try:
        return make(), None
    except PrdpError as err:
        return None, err


def check_preview(pol: SplittingPolicy) -> None:
    """Evaluate ``pol`` on the active dataset as the page will show it (records and owners), so a
    policy whose losses cannot be computed (e.g. a threshold cutting records into more than 2^53
    pieces, or budgets that overflow) is refused like any other invalid input (raises PrdpError)."""
    prev = preview(pol, str(st.session_state.get("policy_owner_bound", "lemma4")))
    prev.summary()


def profile_for_chart(prev: PolicyPreview, which: str) -> LossProfile | None:
    return prev.records if which == "records" else prev.owners


__all__ = ["Workload", "apply_suggestion", "cached_preview", "default_policy", "ensure_policy", "preview",
           "save_comparison", "set_policy", "try_policy"]


def value_grid(hi: float, threshold: float, points: int = 3000) -> np.ndarray:
    """Grid of hypothetical values (log-spaced, plus every jump point k·T up to 200 pieces) for
    plotting the public policy function on log axes."""
    top = max(float(hi), 3.0 * threshold, 1.0) * 1.05
    lo = min(threshold / 10.0, 1.0)
    grid = np.logspace(np.log10(lo), np.log10(top), points)
    jumps = threshold * np.arange(1, 201)
    jumps = np.concatenate((jumps, jumps * (1 + 1e-9)))
    return np.unique(np.concatenate((grid, jumps[jumps <= top])))


def workload_frame(pol: SplittingPolicy) -> pd.DataFrame:
    """The workload as a read-only table."""
    return workload_to_frame(pol.workload)


def adopt_policy(pol: SplittingPolicy) -> None:
    """Make ``pol`` the active policy and load it into the Policy designer's editors."""
    ss = st.session_state
    set_policy(pol)
    ss["wl_frame"] = workload_to_frame(pol.workload)
    ss.pop("wl_table", None)
    if pol.thresholds.group_col is None:
        for m, t in pol.thresholds.as_dict()["*"].items():
            ss[f"thr_{m}"] = float(t)
    ss["policy_partition_rho"] = float(pol.workload.partition_rho)
    ss["policy_joint"] = bool(pol.workload.joint)


def partition_deltas(pol: SplittingPolicy, pieces: tuple[int, ...] = (1, 2, 5, 10, 20, 50)
                     ) -> list[tuple[int, float]]:
    """δ(r) of partition selection for records cut into a few piece counts (default δ = 1e-6)."""
    from prdp_core.mechanisms.unit_splitting import partition_record_delta

    d = partition_record_delta(pol, np.array(pieces, dtype=float),
                               float(st.session_state.get("run_ps_delta", 1e-6)))
    return list(zip(pieces, d.tolist()))
