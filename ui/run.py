"""State and cached steps of the Run and Trade-offs pages (unit-splitting releases)."""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from prdp_core.core.errors import PrdpError
from prdp_core.core.release import Release
from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import SplittingPolicy
from prdp_core.data.dataset import Dataset
from prdp_core.mechanisms import analysis
from prdp_core.mechanisms.unit_splitting import QueryStats, owner_realized_distribution, release, workload_stats
from prdp_core.mechanisms.unit_splitting.workload_release import OWNER_TERMS
from prdp_core.study import study_tables

from . import memory, review, state
from . import policy_designer as pstate
from .page_state import PageState


@st.cache_data(show_spinner="Computing the workload's sufficient statistics…", max_entries=8, scope="session")
def cached_stats(token: str, pol_json: str, _ds: Dataset, _pol: SplittingPolicy) -> list[QueryStats]:
    return workload_stats(_ds.table, _pol)


def stats_for(pol: SplittingPolicy) -> list[QueryStats]:
    return cached_stats(state.token(), pstate.cache_key(pol), state.dataset(), pol)


#: Session key of a release of a large dataset asked for by the Run button (made by :func:`run_pending`).
RUN_REQUEST = "run_request"


def on_run(partition_delta_key: str) -> None:
    """Callback of the Run button: release the chosen queries of the active policy's workload once (all of
    them by default), record the release in the ledger. A large dataset's release is made on the page, with
    progress (:func:`run_pending`)."""
    ss = st.session_state
    if state.is_large():
        ss[RUN_REQUEST] = partition_delta_key
        return
    _release(partition_delta_key)


def run_pending() -> None:
    """Make the release the Run button asked for on a large dataset, inside a progress status: per-cell
    statistics and the realized-loss distributions computed in the engine, the noise drawn here."""
    ss = st.session_state
    key = ss.pop(RUN_REQUEST, None)
    if key is None:
        return
    with st.status(f"Releasing the workload on {review.count(state.dataset().n, 'records', hidden='the')}",
                   expanded=True) as box:
        box.write(":material/progress_activity: per-cell counts, split rows and sums of every query: in the engine")
        box.write(":material/progress_activity: partition selection and Gaussian noise: here, from the seed")
        box.write(":material/progress_activity: the records' (and owners') policy and realized losses: in the engine")
        _release(key)
        failed = ss.get("run_error") is not None
        box.update(label="The release stopped" if failed else "Released", state="error" if failed else "complete",
                   expanded=False)


def released_policy(pol: SplittingPolicy) -> SplittingPolicy:
    """The policy the Run button releases: ``pol`` with only the chosen queries (all of them by default)."""
    chosen = st.session_state.get("run_queries")
    if chosen is not None and len(chosen) < len(pol.workload.queries):
        return replace(pol, workload=pol.workload.subset(chosen))
    return pol


def _waiting(text: str) -> None:
    st.write(f":material/hourglass_top: {text[0].upper()}{text[1:]}.")


def _release(partition_delta_key: str) -> None:
    ss = st.session_state
    pol: SplittingPolicy = ss["policy"]
    active_key = pstate.policy_key(pol)
    rng, seed = state.rng_and_seed()
    try:  # secure: exact OpenDP noise, unseeded (the rng is not used)
        pol = released_policy(pol)
        memory.guard("release")  # records × (measures + groups + 3); a large table: the engine's memory limit
        # review mode: a secure release refuses thresholds computed from the data (teaching runs may use them)
        secure = bool(ss.get("run_secure", False))  # a secure release is unseeded
        stats = None if state.is_large() else stats_for(pol)
        # a large table's release is one of the server's heavy steps: it waits (saying so) while others run
        with memory.heavy_step(_waiting) if state.is_large() else nullcontext():
            rel = state.release("run", partial(release, state.dataset(), pol, rng=rng, reveal=True,
                                               seed=None if secure else seed,
                                               partition_delta=float(ss.get(partition_delta_key, 1e-6)),
                                               stats_=stats, secure=secure, allow_data_derived=state.teaching(),
                                               # a large table's owners' realized losses: on demand (owners_switch)
                                               owner_realized=not state.is_large()),
                                keep=pol is ss["policy"])  # only a release of every query is the study's release
    except PrdpError as err:
        fail(err)
        return
    ss.pop("run_error", None)
    ss["run_release"] = rel
    ss["run_token"] = state.token()
    ss["run_policy"] = pol  # the policy released (only the chosen queries)
    ss["run_policy_of"] = active_key  # the active policy it came from


#: Session key of what the Run page's error was about (:func:`settings_key`).
ERROR_FOR = "run_error_for"


def settings_key() -> str:
    """What a release depends on besides the data: the active policy, the queries chosen, secure or not."""
    ss = st.session_state
    pol = ss.get("policy")
    return jsonable([None if pol is None else pstate.policy_key(pol), ss.get("run_queries"),
                     bool(ss.get("run_secure", False))])


def fail(err: PrdpError) -> None:
    """Keep ``err`` as the Run page's error, with the settings it is about."""
    st.session_state["run_error"] = err
    st.session_state[ERROR_FOR] = settings_key()


def run_error() -> PrdpError | None:
    """The Run page's error while it is still about the current settings; dropped once the policy, the
    queries chosen or the secure toggle changed (a partition-selection ρ set, key lists given)."""
    ss = st.session_state
    if ss.get("run_error") is not None and ss.get(ERROR_FOR) != settings_key():
        ss.pop("run_error", None)
        ss.pop(ERROR_FOR, None)
    return ss.get("run_error")


def on_type_public(measures: list[str]) -> None:
    """Callback of the Run page's typed-in route: make the values typed in ``run_pub_<measure>`` the
    thresholds of the active policy, as public values (their flag becomes "typed")."""
    ss = st.session_state
    pol: SplittingPolicy = ss["policy"]
    try:
        vals = {m: float(ss[f"run_pub_{m}"]) for m in measures}
        thr = as_thresholds({**pol.thresholds.as_dict()["*"], **vals})
        new = SplittingPolicy(thr, pol.workload)
        pstate.validate(new)
        pstate.check_preview(new)
    except PrdpError as err:
        fail(err)
        return
    pstate.confirm_public(measures)
    pstate.adopt_policy(new)
    ss.pop("run_error", None)


def answers_export(rel: Release, teaching: bool) -> pd.DataFrame:
    """The answers download: the table as shown plus the app mode, secure marker, seed and data-derived
    parameters (:func:`prdp_core.study.study_tables.answers_export`; the page's download goes through the review
    boundary, output ``answers.csv``)."""
    return study_tables.answers_export(rel, teaching)


def current_release() -> Release | None:
    ss = st.session_state
    if ss.get("run_token") != state.token():
        return None
    return ss.get("run_release")


def release_policy(active: SplittingPolicy) -> tuple[SplittingPolicy, bool]:
    """The policy the shown release was made with, and whether it is still the active policy."""
    ss = st.session_state
    released = ss.get("run_policy") or active
    return released, ss.get("run_policy_of") == pstate.policy_key(active)


def answers_for_display(rel: Release, teaching: bool) -> pd.DataFrame:
    """The answers table as shown: truth columns only in teaching mode; a readable label column
    (:func:`prdp_core.study.study_tables.labelled_answers`)."""
    return study_tables.labelled_answers(rel, teaching)


def error_summary(rel: Release, min_records: int) -> pd.DataFrame:
    """Per query: answers, median and 90th-percentile ARE, share within 5% / 20% (teaching only)."""
    a = rel.answers
    a = a[a["n_records"] >= min_records]
    g = a.groupby("query", observed=True)["rel_error"]
    out = pd.DataFrame({"answers": g.size(), "median ARE": g.median(), "90th pct ARE": g.quantile(0.9),
                        "within 5%": g.apply(lambda s: float(np.mean(s <= 0.05))),
                        "within 20%": g.apply(lambda s: float(np.mean(s <= 0.20)))})
    return out.reset_index()


def owners_switch(rel: Release, ds: Any, where: Any) -> bool:
    """Whether the owners' losses of the shown release are to be drawn. A large table's release leaves its
    owners' realized losses for later (summing every owner's losses in the engine costs more than the release):
    a toggle in ``where`` asks for them; otherwise they come with the release."""
    if not ds.schema.owner_col:
        return False
    if rel.extras.get(OWNER_TERMS) is None:
        return True
    return bool(where.toggle("Compute the owners' realized losses (in the engine)", key="run_large_owners",
                             help="Sums each owner's losses over its records in the engine, as the Policy "
                                  "designer's owners' CDF does: slower than the release itself."))


def owner_realized(rel: Release) -> Any:
    """The owners' realized losses of a release (:func:`~prdp_core.mechanisms.unit_splitting.
    owner_realized_distribution`): a large table's summed in the engine once per session and release terms,
    as one of the server's heavy steps, with progress."""
    later = rel.extras.get(OWNER_TERMS)
    if later is None:
        return owner_realized_distribution(state.dataset(), rel)
    from . import large

    def work(stage: Any) -> Any:
        stage(f"summing each {later.owner_col}'s realized losses over its records and cells, in the engine")
        return owner_realized_distribution(state.dataset(), rel)

    return large.stats("owners_realized", repr(later),  # the terms, thresholds, ρ and owner column decide it
                       "Computing the owners' realized losses", work, heavy=True)


def loss_cdfs(rel: Release, ds: Any, pol: SplittingPolicy | None = None, *, owners: bool = True
              ) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Fig. 5: policy-loss and realized-loss CDFs, for records and (when available and ``owners``) owners. A
    large dataset's release carries the records' as distributions computed in the engine; the owners' policy
    losses of the released policy ``pol`` and their realized losses are summed there too, with progress."""
    from prdp_core.core.loss_profile import ecdf, owner_losses

    if rel.loss is None:
        out = {"records": {"policy loss": rel.loss_distribution.ecdf(),  # type: ignore[union-attr]  # a release without per-record losses has their distribution (made on an engine)
                           "realized loss": rel.extras["private_realized_distribution"].ecdf()}}
        if owners and ds.schema.owner_col and pol is not None:
            own_real = owner_realized(rel)
        else:
            own_real = None
        if own_real is not None and pol is not None:
            own = pstate.owner_profile(pstate.preview(pol, "lemma4"))
            out["owners"] = {"policy loss (Lemma 4: its records × the sum of their losses)": own.ecdf(),
                             "realized loss": own_real.ecdf()}
        return out
    out = {"records": {"policy loss": ecdf(rel.loss), "realized loss": ecdf(rel.extras["private_realized"])}}
    own = rel.extras.get("private_owner_realized")
    if own is not None and owners and ds.schema.owner_col:
        pol_own = owner_losses(rel.loss, ds.table[ds.schema.owner_col])
        out["owners"] = {"policy loss (Lemma 4: its records × the sum of their losses)": ecdf(pol_own.to_numpy()),
                         "realized loss": ecdf(own.to_numpy())}
    return out


def jsonable(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


__all__ = ["analysis", "answers_export", "answers_for_display", "cached_stats", "current_release", "error_summary",
           "fail", "loss_cdfs", "on_run", "on_type_public", "owner_realized", "owners_switch", "run_error",
           "run_pending", "settings_key", "stats_for"]


#: The Run page's session state (:class:`ui.page_state.PageState`).
STATE = PageState(
    page="run",
    settings=("run_min_records", "run_query"),
    engine=("run_ps_delta", "run_secure"),
    rules={"run_min_records": ("range", 1, 10**12, True)},
    results=("run_release", "run_token", "run_error", ERROR_FOR),
)
