"""State of the Policy designer: the active per-record zCDP policy, its editors and caches.

Keys in ``st.session_state``:

* ``policy`` – the last valid :class:`~prdp_core.core.workload.SplittingPolicy` (used by the
  Run and Trade-offs pages); kept when an edit is invalid;
* ``policy_token`` – the dataset token the policy was made for (a new dataset resets it);
* ``policy_compare`` – saved policy-loss CDFs overlaid for comparison;
* ``policy_summary`` – the one-line description shown in the sidebar;
* ``policy_thr_sources`` – thresholds the page wrote from the confidential data (the 99th-percentile
  defaults, percentile and loss-cap suggestions, or an imported ``threshold_source``) or from a private
  suggestion: measure → ``{"values": [...], "source": "data: …" or "private: …"}``. A threshold still at
  one of those values keeps that source (labelled computed from the data, or private suggestion); typing
  another value (or confirming it as public) makes it "typed".
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
import streamlit as st

from prdp_core.core.errors import PrdpError
from prdp_core.core.interpret import loss_guidance
from prdp_core.core.loss_profile import LossProfile
from prdp_core.core.provenance import data_source, is_data_derived, is_private, source_detail
from prdp_core.core.splitting import (
    Thresholds,
    as_thresholds,
    percentile_thresholds,
    split_counts,
    thresholds_for_cap,
    thresholds_to_frame,
)
from prdp_core.core.workload import SplittingPolicy, Workload, default_workload, workload_to_frame
from prdp_core.data.dataset import Dataset
from prdp_core.data.samples import CBP_SPLIT_SCHEMES
from prdp_core.engines import is_engine_data
from prdp_core.mechanisms.preview import EnginePolicyPreview, PolicyPreview, preview_policy

from . import memory, options, private_suggest, review, state
from .common import confidential, md_escape, show_error
from .page_state import PageState

#: Table 8 "Conservative" thresholds for the CBP-like sample (the ≈97–99th percentiles).
_CBP_DEFAULT = {m: float(t) for m, t in CBP_SPLIT_SCHEMES["Conservative"].items()}


def _round2(x: float) -> float:
    """Round to two significant digits (friendlier default thresholds)."""
    if x <= 0 or not math.isfinite(x):
        return 1.0
    p = math.floor(math.log10(x)) - 1
    return float(round(x / 10**p) * 10**p)


#: Session key of the thresholds computed from the data (see the module docstring).
SOURCES_KEY = "policy_thr_sources"

#: How the sidebar and the editors name a threshold released by a private suggestion.
PRIVATE_LABEL = "private suggestion, charged to the ledger"

#: Source of the starting thresholds of a table other than the CBP-like sample.
DEFAULT_SOURCE = data_source("p99 (rounded)")


def default_thresholds(ds: Any) -> dict[str, float]:
    """Starting thresholds: Table 8's conservative scheme for CBP-like data (published values), else the
    99th percentiles rounded to two significant digits — computed from the confidential data, so
    :func:`ensure_policy` flags them (:data:`DEFAULT_SOURCE`). A large dataset's percentiles are its
    profile's (computed in the engine)."""
    if all(m in ds.schema.measures for m in _CBP_DEFAULT) and ds.name.startswith("cbp_like"):
        return dict(_CBP_DEFAULT)
    out = {}
    for m in ds.schema.measures:
        if is_engine_data(ds):
            q = float(state.profile().measures[m].p99) if ds.n else 1.0
            if not q > 0:
                q = float(ds.engine.threshold_quantiles(m, [0.99])[0]) if ds.n else 1.0
            out[m] = _round2(q)
            continue
        v = ds.table[m].to_numpy()
        q = float(np.quantile(v, 0.99)) if v.size else 1.0
        if q <= 0:
            pos = v[v > 0]
            q = float(pos.min()) if pos.size else 1.0
        out[m] = _round2(q)
    return out


def _complete_groups(ds: Any) -> list[str]:
    """Group columns with a value for every record (a group-by needs every value)."""
    if is_engine_data(ds):
        nulls = ds.engine.null_counts(list(ds.schema.groups))
        return [g for g in ds.schema.groups if not nulls[g]]
    return [g for g in ds.schema.groups if not ds.table[g].isna().any()]


def default_policy(ds: Any) -> SplittingPolicy:
    """COUNT + one SUM per measure on split data, grouped by the first group column, base loss 1ρ."""
    complete = _complete_groups(ds)
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
        ss[SOURCES_KEY] = {}
        if not (ds.name.startswith("cbp_like") and pol.thresholds.as_dict()["*"] == _CBP_DEFAULT):
            mark_from_data(pol.thresholds.as_dict()["*"], DEFAULT_SOURCE)
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
    """Make ``pol`` the active policy, its ``threshold_source`` set from the thresholds the page wrote from
    the data (:func:`threshold_sources`)."""
    pol = replace(pol, threshold_source=threshold_sources(pol.thresholds))
    st.session_state["policy"] = pol
    wl = pol.workload
    sources = pol.threshold_sources()
    from_data = [f"T({m})" for m, s in sources.items() if is_data_derived(s)]
    private = [f"T({m}) ({source_detail(s)})" for m, s in sources.items() if is_private(s)]
    st.session_state["policy_summary"] = (
        f"**Unit splitting** (per-record zCDP)  \nbase loss {wl.total_rho:.3g}ρ, "
        f"{wl.split_rho:.3g}ρ·m(r)² on split data  \n{md_escape(pol.thresholds.describe())}"
        + (f"  \n:material/lock: computed from the data: {md_escape(', '.join(from_data))}" if from_data else "")
        + (f"  \n:material/verified: {PRIVATE_LABEL}: {md_escape(', '.join(private))}" if private else ""))


def mark_from_data(values: Mapping[str, float], source: str) -> None:
    """Remember thresholds written into the editors from the confidential data (``source``: how, e.g.
    ``"data: p97.5"``), so the page, the policy and every release say so until a value is retyped."""
    ss = st.session_state
    flags = dict(ss.get(SOURCES_KEY) or {})
    for m, v in values.items():
        flags[str(m)] = {"values": [float(v)], "source": source}
    ss[SOURCES_KEY] = flags


def threshold_sources(thr: Thresholds) -> dict[str, str]:
    """measure → source of the thresholds still at a value the page computed from the data (a threshold
    row of any group at that value flags the measure)."""
    flags = st.session_state.get(SOURCES_KEY) or {}
    out = {}
    for m in thr.measures:
        f = flags.get(m)
        if f and any(dict(row).get(m) in f["values"] for _, row in thr.rows):
            out[m] = f["source"]
    return out


def confirm_public(measures: Iterable[str] | None = None) -> None:
    """Callback: the designer states that these thresholds (default: all) are public values — their flag
    becomes "typed" — and the active policy is updated."""
    ss = st.session_state
    flags = dict(ss.get(SOURCES_KEY) or {})
    for m in list(flags) if measures is None else measures:
        flags.pop(m, None)
    ss[SOURCES_KEY] = flags
    if "policy" in ss:
        set_policy(ss["policy"])


def source_caption(measure: str, value: float) -> str | None:
    """The caption under a threshold editor saying where ``value`` came from: computed from the data, or a private
    suggestion charged to the ledger (the released value itself); None for a typed value."""
    f = (st.session_state.get(SOURCES_KEY) or {}).get(measure)
    if not f or value not in f["values"]:
        return None
    if is_data_derived(f["source"]):
        return f":material/lock: computed from the data ({md_escape(source_detail(f['source']))})"
    if is_private(f["source"]):
        return f":material/verified: {PRIVATE_LABEL} ({md_escape(source_detail(f['source']))})"
    return None


def flagged_thresholds(pol: SplittingPolicy) -> dict[str, str]:
    """The active policy's thresholds computed from the data: measure → how (``"p99 (rounded)"``)."""
    return {m: source_detail(s) for m, s in pol.threshold_sources().items() if is_data_derived(s)}


def flagged_text(pol: SplittingPolicy) -> str:
    """The flagged thresholds as Markdown-safe text: ``T(balance) = 500 (p99 (rounded))`` (no value for
    per-group thresholds)."""
    single = pol.thresholds.as_dict()["*"] if pol.thresholds.group_col is None else {}
    return md_escape(", ".join(f"T({m})" + (f" = {single[m]:,.6g}" if m in single else "") + f" ({how})"
                               for m, how in flagged_thresholds(pol).items()))


def group_keys() -> dict[str, list[Any]]:
    """The active workload's public key lists (set on the Run page, or by an imported study): kept when the
    Policy designer rebuilds the workload from its editors."""
    pol = st.session_state.get("policy")
    return {c: list(v) for c, v in pol.workload.group_keys} if pol is not None else {}


def policy_key(pol: SplittingPolicy) -> str:
    return json.dumps(pol.to_dict(), sort_keys=True, default=str)


def cache_key(pol: SplittingPolicy) -> str:
    """Key of the caches of what a policy computes (previews, statistics): thresholds and workload, not
    where the thresholds came from (confirming a value as public recomputes nothing)."""
    return policy_key(replace(pol, threshold_source=()))


@st.cache_data(show_spinner=False, max_entries=32, scope="session")
def cached_pieces(token: str, thr_json: str, _ds: Dataset, _thr: Thresholds) -> np.ndarray:
    """Split counts of the dataset for one set of thresholds (the expensive, reusable part)."""
    return split_counts(_ds.table, _thr)


@st.cache_resource(show_spinner="Evaluating the policy on every record…", max_entries=16, scope="session")
def cached_preview(token: str, pol_json: str, owner_method: str, _ds: Dataset,
                   _pol: SplittingPolicy) -> PolicyPreview | EnginePolicyPreview:
    """Policy preview, computed once per (dataset, policy, owner bound).

    A resource cache, not a data cache: the preview refers to the dataset, and pickling a copy of
    a million-row table on every threshold change took most of the page's rerun. The preview is
    never mutated by its readers (its lazily computed profiles are the same for every reader).
    """
    memory.guard("preview", rows=_ds.n, columns=memory.dataset_columns(_ds))
    thr_json = json.dumps(_pol.thresholds.to_dict(), sort_keys=True, default=str)
    pieces = cached_pieces(token, thr_json, _ds, _pol.thresholds)
    return preview_policy(_ds, _pol, owner_method=owner_method, pieces=pieces)  # type: ignore[arg-type]  # the page offers lemma4/lemma5


def preview(pol: SplittingPolicy, owner_method: str = "lemma4") -> PolicyPreview | EnginePolicyPreview:
    """The policy's preview on the page's dataset. On a large dataset: the records' losses from the
    engine's split-count histogram, computed once with progress; owners' losses when first read
    (:func:`owner_profile`)."""
    if state.is_large():
        from . import large

        def work(stage: Any) -> EnginePolicyPreview:
            memory.engine_guard()
            stage(f"counting {review.count(state.dataset().n, 'records', hidden='the')} by split count m(r), in the "
                  "engine")
            prev = preview_policy(state.dataset(), pol, owner_method=owner_method)  # type: ignore[arg-type]  # owner_method comes from the page's radio of lemma4 or lemma5
            stage("the records' policy-loss distribution (exact)")
            prev.records  # noqa: B018 - computed here, inside the status
            return prev  # type: ignore[return-value]  # a dataset held by an engine gives an EnginePolicyPreview

        return large.stats("preview", [cache_key(pol), owner_method], "Evaluating the policy on every record", work)
    return cached_preview(state.token(), cache_key(pol), owner_method, state.dataset(), pol)


def owner_profile(prev: PolicyPreview | EnginePolicyPreview) -> Any:
    """The owners' losses of a preview (None without an owner column); on a large dataset summed per owner in
    the engine, once, with progress."""
    if not isinstance(prev, EnginePolicyPreview) or "owners" in prev.__dict__ or not prev.dataset.schema.owner_col:
        return prev.owners
    from . import large

    def work(stage: Any) -> Any:
        stage(f"summing each {prev.dataset.schema.owner_col}'s losses over its records, in the engine")
        return prev.owners

    return large.stats("owners", [cache_key(prev.policy), prev.owner_method],
                       "Computing the owners' losses", work, heavy=True)  # queued with the server's heavy steps


def preview_summary(prev: PolicyPreview | EnginePolicyPreview, owners: bool = True) -> dict[str, float]:
    """The preview's summary; ``owners=False`` leaves the owners out (not computed on a large dataset)."""
    if owners:
        owner_profile(prev)
        return prev.summary()
    s = prev.records.summary()
    m = prev.histogram.column("m") if isinstance(prev, EnginePolicyPreview) else prev.pieces
    s.update({"base_loss": prev.policy.workload.total_rho, "share_split": prev.share_split,
              "max_pieces": int(m.max()) if m.size else 0})
    return s


def loss_readout(prev: PolicyPreview | EnginePolicyPreview, summ: dict[str, float]) -> None:
    """The records' losses in one sentence, and a plain-language note when the largest is extreme
    (:func:`prdp_core.core.interpret.loss_guidance`: what it means, what to change)."""
    st.markdown(f"- {prev.records.plain_language()}")
    note = loss_guidance(float(summ["max"]), pieces=int(summ["max_pieces"]))
    if note:
        st.caption(f":material/info: {note}")


def data() -> Any:
    """What prdp_core's functions take as the page's data: the table in memory, or the dataset held by an
    engine (they compute its statistics there)."""
    ds = state.dataset()
    return ds if is_engine_data(ds) else ds.table


def observed_values(measure: str) -> tuple[Any, float]:
    """The records' values of ``measure`` to mark on the public function (confidential) and the largest one:
    the column in memory, or a large dataset's median / p90 / p99 and maximum from its profile."""
    ds = state.dataset()
    if is_engine_data(ds):
        p = state.profile().measures[measure]
        return {"median": p.median, "p90": p.p90, "p99": p.p99}, float(p.max) if p.count else 1.0
    vals = ds.table[measure].to_numpy()
    return vals, float(vals.max()) if vals.size else 1.0


def by_group(prev: PolicyPreview | EnginePolicyPreview, col: str) -> pd.DataFrame:
    """Per-group summaries of the record losses (a large dataset's: counted by the engine, with progress)."""
    if not isinstance(prev, EnginePolicyPreview):
        return prev.by_group(col)
    from . import large

    def work(stage: Any) -> pd.DataFrame:
        stage(f"counting the records by split count and {col}, in the engine")
        return prev.by_group(col)

    return large.stats("by_group", [cache_key(prev.policy), col], f"Losses by {md_escape(col)}", work)


def top_losses(prev: EnginePolicyPreview, k: int = 10) -> pd.DataFrame:
    """The ``k`` largest distinct record losses of a large dataset and how many records pay each (its
    records stay in the engine: no record is listed)."""
    d = prev.records
    keep = d.counts > 0
    return pd.DataFrame({"loss (ρ)": d.values[keep][::-1][:k], "records": d.counts[keep][::-1][:k]})


def validate(pol: SplittingPolicy) -> None:
    """The policy's checks against the page's dataset (counted by the engine for a large one)."""
    ds = state.dataset()
    if is_engine_data(ds):
        ds.engine.validate_policy(pol, ds.schema.measures)
    else:
        pol.validate(ds.table, ds.schema.measures)


def save_comparison(label: str, prev: PolicyPreview | EnginePolicyPreview) -> None:
    """Keep this policy's CDFs to overlay on the charts (the owners' when computed)."""
    entry: dict[str, Any] = {"label": label, "records": prev.record_cdf()}
    owners = prev.owners if not isinstance(prev, EnginePolicyPreview) else prev.__dict__.get("owners")
    if owners is not None:
        entry["owners"] = owners.ecdf()
    st.session_state.setdefault("policy_compare", []).append(entry)


def _round_up(x: float, digits: int = 3) -> float:
    """Round up to ``digits`` significant digits (never below x, so a loss cap still holds)."""
    if x <= 0 or not math.isfinite(x):
        return x
    p = math.floor(math.log10(x)) - digits + 1
    return float(math.ceil(x / 10**p - 1e-9) * 10**p)


def apply_suggestion(thr: Thresholds, source: str) -> None:
    """Callback target: write suggested (single-row) thresholds into the editors, flagged with ``source``. One
    computed from the data (``"data: p97.5"``) is rounded up to three significant digits; a private one
    (``"private: …"``) is written as released — the value the ledger entry records — never rounded."""
    ss = st.session_state
    vals = {m: float(t) if is_private(source) else _round_up(float(t)) for m, t in thr.as_dict()["*"].items()}
    for m, t in vals.items():
        ss[f"thr_{m}"] = t
    mark_from_data(vals, source)


def thresholds_frame_for_editor(ds: Any) -> pd.DataFrame:
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
    preview_summary(prev, owners=not state.is_large())  # a large table's owners: when shown


def profile_for_chart(prev: PolicyPreview, which: str) -> LossProfile | None:
    return prev.records if which == "records" else prev.owners


# after a new dataset's private suggestions are dropped (ui.private_suggest, imported above, registered first)
state.register("new_dataset", ensure_policy)

__all__ = ["Workload", "apply_suggestion", "cached_preview", "default_policy", "ensure_policy", "preview",
           "save_comparison", "set_policy", "try_policy"]


#: In review mode the public policy function is drawn up to this many thresholds (a range fixed by the
#: public thresholds; teaching mode draws it up to the largest record).
PUBLIC_RANGE_PIECES = 50


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


def suggestions_panel(measures: list[str], per_group: bool) -> None:
    """The *Suggest thresholds* expander: percentile (PctScore) and loss-cap suggestions, computed on the
    confidential records (hidden in review mode); a suggestion becomes the thresholds, flagged as data-derived.
    Then the private suggestion (:mod:`ui.private_suggest`), offered in both modes and charged to the ledger."""
    if review.shows_records("threshold suggestions"):
        st.caption("Suggestions are computed on the confidential data: they guide the designer and are not "
                   "public facts.")
        st.slider("At this percentile of each measure (PctScore)", 50.0, 100.0, 97.0, 0.5, key="sugg_pct")
        st.button("Use percentile thresholds", key="sugg_pct_apply", on_click=lambda: apply_suggestion(
            percentile_thresholds(data(), measures, st.session_state["sugg_pct"]),
            data_source(f"p{st.session_state['sugg_pct']:g}")), disabled=per_group)
        c1, c2 = st.columns(2)
        c1.number_input("Loss cap (ρ)", min_value=0.0, value=10.0, key="sugg_cap")
        c2.number_input("Share of records allowed above the cap (%)", 0.0, 99.0, 0.0, key="sugg_share")

        def _apply_cap() -> None:
            wl = st.session_state["policy"].workload
            try:
                share = st.session_state["sugg_share"]
                apply_suggestion(thresholds_for_cap(
                    data(), measures, cap=st.session_state["sugg_cap"], flat=wl.flat_rho, split=wl.split_rho,
                    share=share / 100.0), data_source(f"loss cap {st.session_state['sugg_cap']:g}ρ"
                                                      + (f", {share:g}% above" if share else "")))
                st.session_state.pop("sugg_error", None)
            except Exception as err:  # PrdpError: shown below
                st.session_state["sugg_error"] = err

        st.button("Smallest thresholds meeting the cap", key="sugg_cap_apply", on_click=_apply_cap,
                  disabled=per_group)
        if st.session_state.get("sugg_error") is not None:
            show_error(st.session_state["sugg_error"])
    private_suggest.thresholds_panel(measures, apply_suggestion, disabled=per_group)


def losses_by_group_panel(ds: Dataset, pol: SplittingPolicy, owner_bound: str, opened: bool = True) -> None:
    """The *Losses by group* expander (teaching mode): losses per group value and the records with the largest losses.
    ``opened=False`` (the expander is collapsed) computes nothing: the tables are computed when it is opened, not on
    every threshold change."""
    measures, groups = list(ds.schema.measures), list(ds.schema.groups)
    if review.shows_records("losses by group") and opened:
        prev = preview(pol, owner_bound)
        if groups:
            gsel = st.selectbox("Group column", groups, key="policy_group_summary")
            confidential()
            st.dataframe(by_group(prev, gsel).sort_values(
                "max", ascending=False).head(200), hide_index=True)
        # the records stay in the engine: the largest losses and how many records pay them
        if isinstance(prev, EnginePolicyPreview):
            st.markdown("**The largest record losses** (teaching mode only)")
            confidential()
            st.dataframe(top_losses(prev), hide_index=True)
        else:
            idx, top = prev.records.top_k(10)
            st.markdown("**The ten largest record losses** (teaching mode only)")
            confidential()
            st.dataframe(ds.table.iloc[idx][[ds.schema.id_col, *measures]].assign(loss=top), hide_index=True)


#: The page's session state (:class:`ui.page_state.PageState`); the thresholds ``thr_<measure>`` and the policy
#: itself (``policy``) are exported as the study's policy section by :mod:`ui.study_export`.
STATE = PageState(
    page="policy_designer",
    settings=("policy_owner_bound", "policy_logx", "policy_view", "policy_fn_measure", "policy_fn_marks",
              "policy_delta", "policy_group_summary", "policy_cmp_label", "sugg_pct", "sugg_cap", "sugg_share"),
    engine=("policy_per_group", "policy_group_col", "policy_partition_rho", "policy_joint"),
    rules={"sugg_pct": ("range", 50.0, 100.0, False), "sugg_cap": ("range", 0.0, 1e300, False),
           "sugg_share": ("range", 0.0, 99.0, False), "policy_view": ("choice", options.POLICY_VIEWS),
           "policy_delta": ("choice", options.DELTAS), "policy_owner_bound": ("choice", options.OWNER_BOUNDS),
           "policy_logx": ("choice", (True, False)), "policy_fn_marks": ("choice", (True, False))},
    editors=("thr_group_base", "wl_frame", "policy_compare", SOURCES_KEY),
    results=("sugg_error",),
)
