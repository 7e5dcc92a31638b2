"""Cached computations of the Trade-offs page (all analytic; nothing is released)."""

from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np
import pandas as pd
import streamlit as st

import prdp_core
from prdp_core.core.workload import SplittingPolicy
from prdp_core.data.dataset import Dataset
from prdp_core.engines import is_engine_data
from prdp_core.mechanisms import analysis, budget_solver, sweeps

from . import large, memory, options, state
from . import policy_designer as pstate
from .page_state import PageState

TABLE7 = prdp_core.data.samples.CBP_TOPCODE_SCHEMES
TABLE8 = prdp_core.data.samples.CBP_SPLIT_SCHEMES


def split_measures(pol: SplittingPolicy) -> list[str]:
    """Measures summed on split data by the workload (those a threshold sweep moves)."""
    out = []
    for q in pol.workload.queries:
        if q.kind != "count" and q.split and q.measure is not None and q.measure not in out:
            out.append(q.measure)
    return out or list(pol.thresholds.measures)


def default_min_records(ds: Any) -> int:
    return 100 if ds.n >= 50_000 else 10 if ds.n >= 2_000 else 1


def _data(ds: Any) -> Any:
    """What prdp_core.mechanisms.analysis takes: the table in memory, or a dataset held by an engine (its statistics
    are computed there)."""
    return ds if is_engine_data(ds) else ds.table


def _on_large(kind: str, key: Any, label: str, work: Callable[[Callable[[str], None]], Any],
              cached: Callable[..., Any], *args: Any) -> Any:
    """A step of the page: on a large dataset computed once per session with progress (``work(stage)``),
    else through its session-scoped cache ``cached(*args)``."""
    if state.is_large():
        def guarded(stage: Callable[[str], None]) -> Any:
            memory.guard("sweep")  # a large table: the engine's memory limit
            return work(stage)

        return large.stats(kind, key, label, guarded)
    return cached(*args)


def _saying(step: str, work: Callable[[], Any]) -> Callable[[Callable[[str], None]], Any]:
    """The work of a one-step computation for :func:`_on_large`: says ``step``, then runs ``work()``."""
    def run(stage: Callable[[str], None]) -> Any:
        stage(step)
        return work()

    return run


def _sweep_work(ds: Any, pol: SplittingPolicy, pcts: tuple[float, ...], rhos: tuple[float, ...], min_count: int,
                stage: Callable[[str], None] | None = None
                ) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, float]]]:
    say = stage or (lambda _t: None)
    say("thresholds at the percentiles (order statistics) and the workload's per-cell statistics")
    grid = sweeps.percentile_grid(_data(ds), split_measures(pol), pcts)
    labels = [f"p{p:g}" for p in pcts]
    errors, losses = sweeps.sweep(_data(ds), pol, grid, rhos, min_count=min_count, labels=labels,
                                    progress=lambda i, n, lab: say(f"setting {i + 1} of {n} ({lab}): split counts, "
                                                                   f"losses and errors at {len(rhos)} budget(s)"))
    return errors, losses, grid


@st.cache_data(show_spinner="Sweeping thresholds × ρ…", max_entries=8, scope="session")
def _sweep(token: str, pol_json: str, pcts: tuple[float, ...], rhos: tuple[float, ...], min_count: int,
           _ds: Dataset, _pol: SplittingPolicy) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, float]]]:
    memory.guard("sweep", rows=_ds.n, columns=memory.dataset_columns(_ds))
    return _sweep_work(_ds, _pol, pcts, rhos, min_count)


def sweep(token: str, pol_json: str, pcts: tuple[float, ...], rhos: tuple[float, ...], min_count: int,
          ds: Any, pol: SplittingPolicy) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, float]]]:
    """Errors and losses for thresholds at ``pcts`` × base budgets ``rhos`` (Fig. 2)."""
    return _on_large("sweep", [pol_json, pcts, rhos, min_count], "Sweeping thresholds × ρ",
                     lambda stage: _sweep_work(ds, pol, pcts, rhos, min_count, stage),
                     _sweep, token, pol_json, pcts, rhos, min_count, ds, pol)


def _cdfs_work(ds: Any, pol: SplittingPolicy, grid_json: str, rho: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    grid = json.loads(grid_json)
    return {lab: sweeps.loss_cdf_for(_data(ds), pol, thr, rho) for lab, thr in grid.items()}


@st.cache_data(show_spinner=False, max_entries=32, scope="session")
def _sweep_cdfs(token: str, pol_json: str, grid_json: str, rho: float, _ds: Dataset, _pol: SplittingPolicy
                ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return _cdfs_work(_ds, _pol, grid_json, rho)


def sweep_cdfs(token: str, pol_json: str, grid_json: str, rho: float, ds: Any, pol: SplittingPolicy
               ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The policy-loss CDFs of the sweep's threshold settings at base budget ``rho``."""
    return _on_large("sweep_cdfs", [pol_json, grid_json, rho], "Policy-loss CDFs of the settings",
                     _saying("one split-count histogram per setting, in the engine",
                             lambda: _cdfs_work(ds, pol, grid_json, rho)),
                     _sweep_cdfs, token, pol_json, grid_json, rho, ds, pol)


@st.cache_data(show_spinner="Comparing splitting with top-coding…", max_entries=8, scope="session")
def _compare(token: str, key: str, _ds: Dataset, measures: tuple[str, ...], levels: tuple[tuple[str, ...], ...],
             split: dict[str, dict[str, float]], top: dict[str, dict[str, float]], base_rho: float,
             min_count: int) -> pd.DataFrame:
    memory.guard("sweep", rows=_ds.n, columns=memory.dataset_columns(_ds))
    return sweeps.compare_schemes(_ds.table, measures, levels, split, top, base_rho=base_rho, min_count=min_count)


def compare(token: str, key: str, ds: Any, measures: tuple[str, ...], levels: tuple[tuple[str, ...], ...],
            split: dict[str, dict[str, float]], top: dict[str, dict[str, float]], base_rho: float,
            min_count: int) -> pd.DataFrame:
    """Fig. 3: splitting schemes against top-coding schemes, by group-by level."""
    return _on_large("compare", key, "Comparing splitting with top-coding",
                     _saying(f"per-cell statistics of {len(split) + len(top)} scheme(s) at {len(levels)} level(s), "
                             "in the engine",
                             lambda: sweeps.compare_schemes(ds, measures, levels, split, top, base_rho=base_rho,
                                                            min_count=min_count)),
                     _compare, token, key, ds, measures, levels, split, top, base_rho, min_count)


def _fitness_work(ds: Any, pol: SplittingPolicy, targets: tuple[float, ...], gamma: float, share: float,
                  min_count: int) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], pd.DataFrame]:
    curves, rows = {}, []
    sts = analysis.table_stats(_data(ds), pol)
    for t in targets:
        sol = budget_solver.solve_budget(_data(ds), pol, target=t, gamma=gamma, share=share, min_count=min_count,
                                    stats_=sts)
        curves[f"within {t:.0%}"] = analysis.policy_distribution(_data(ds), sol.policy).ecdf()
        rows.append({"target": t, **{f"ρ {f}": r for f, r in sol.rho_by_family.items()},
                     "base loss": sol.policy.workload.total_rho})
    return curves, pd.DataFrame(rows)


@st.cache_data(show_spinner="Solving for the budgets…", max_entries=16, scope="session")
def _fitness(token: str, pol_json: str, targets: tuple[float, ...], gamma: float, share: float, min_count: int,
             _ds: Dataset, _pol: SplittingPolicy) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], pd.DataFrame]:
    memory.guard("sweep", rows=_ds.n, columns=memory.dataset_columns(_ds))
    return _fitness_work(_ds, _pol, targets, gamma, share, min_count)


def fitness(token: str, pol_json: str, targets: tuple[float, ...], gamma: float, share: float, min_count: int,
            ds: Any, pol: SplittingPolicy) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], pd.DataFrame]:
    """Fig. 4: the smallest budgets meeting each goal and the records' losses under them."""
    return _on_large("fitness", [pol_json, targets, gamma, share, min_count], "Solving for the budgets",
                     _saying("per-cell statistics and one split-count histogram per goal, in the engine",
                             lambda: _fitness_work(ds, pol, targets, gamma, share, min_count)),
                     _fitness, token, pol_json, targets, gamma, share, min_count, ds, pol)


def schemes_for(ds: Any, measures: list[str]) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Preset schemes: the paper's Tables 7–8 for CBP-like data, percentile schemes otherwise."""
    if set(measures) <= set(TABLE8["Conservative"]) and ds.name.startswith("cbp_like"):
        return ({k: {m: v[m] for m in measures} for k, v in TABLE8.items()},
                {k: {m: v[m] for m in measures} for k, v in TABLE7.items()})

    def grids(stage: Callable[[str], None] | None = None
              ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
        if stage is not None:
            stage("order statistics of the measures, in the engine")
        split = {f"p{p:g}": t for p, t in zip((99, 80, 50), sweeps.percentile_grid(_data(ds), measures, (99, 80, 50)))}
        top = {f"p{p:g}": t for p, t in zip((99.9, 99, 97), sweeps.percentile_grid(_data(ds), measures,
                                                                                   (99.9, 99, 97)))}
        return split, top

    if state.is_large():
        return large.stats("schemes", list(measures), "Percentile schemes", grids)
    return grids()


def key(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


def pol_key(pol: SplittingPolicy) -> str:
    return pstate.policy_key(pol)


def token() -> str:
    return state.token()


def clip_curves(n: int, alphas: tuple[float, ...], rho: float
                ) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict[str, float]]:
    """Fig. 1 curves and optimal clipping bounds."""
    grid = np.logspace(0, 7, 400)
    curves, optima = {}, {}
    for a in alphas:
        name = f"α = {a:g}"
        curves[name] = (grid, analysis.clipped_pareto_mse_ratio(grid, n=n, alpha=a, rho=rho))
        optima[name] = analysis.optimal_clip(n=n, alpha=a, rho=rho)
    return curves, optima


def _solve_work(ds: Any, pol: SplittingPolicy, target: float, gamma: float, share: float, min_count: int
                ) -> tuple[budget_solver.BudgetSolution, dict[str, float]]:
    sol = budget_solver.solve_budget(_data(ds), pol, target=target, gamma=gamma, share=share, min_count=min_count)
    caps = {}
    if pol.thresholds.group_col is None:
        caps = budget_solver.largest_thresholds(_data(ds), pol, target=target, gamma=gamma, share=share,
                                                min_count=min_count)
    return sol, caps


@st.cache_data(show_spinner=False, max_entries=16, scope="session")
def _solve(token: str, pol_json: str, target: float, gamma: float, share: float, min_count: int,
           _ds: Dataset, _pol: SplittingPolicy) -> tuple[budget_solver.BudgetSolution, dict[str, float]]:
    memory.guard("sweep", rows=_ds.n, columns=memory.dataset_columns(_ds))
    return _solve_work(_ds, _pol, target, gamma, share, min_count)


def solve(token: str, pol_json: str, target: float, gamma: float, share: float, min_count: int,
          ds: Any, pol: SplittingPolicy) -> tuple[budget_solver.BudgetSolution, dict[str, float]]:
    """The budgets meeting a goal and, for single-row thresholds, the largest thresholds at current budgets."""
    return _on_large("solve", [pol_json, target, gamma, share, min_count], "Solving for the budgets",
                     _saying("the workload's per-cell statistics, in the engine",
                             lambda: _solve_work(ds, pol, target, gamma, share, min_count)),
                     _solve, token, pol_json, target, gamma, share, min_count, ds, pol)


#: The Trade-offs page's session state (:class:`ui.page_state.PageState`): view settings only.
STATE = PageState(
    page="tradeoffs",
    settings=("tr_pcts", "tr_rhos", "tr_min", "tr_family", "tr_cdf_rho", "tr_geo", "tr_levels", "tr_top_rho",
              "tr_top_min", "tr_targets", "tr_gamma", "tr_share", "tr_fmin", "tr_solve_t", "tr_solve_g",
              "tr_solve_s", "tr_solve_min", "tr_clip_n", "tr_clip_a", "tr_clip_rho"),
    rules={"tr_pcts": ("subset", options.SWEEP_PCTS), "tr_rhos": ("subset", options.SWEEP_RHOS),
           "tr_targets": ("subset", options.FIT_TARGETS), "tr_clip_a": ("subset", options.CLIP_ALPHAS),
           "tr_clip_rho": ("choice", options.CLIP_RHOS),
           "tr_min": ("range", 1, 10**12, True), "tr_top_min": ("range", 1, 10**12, True),
           "tr_fmin": ("range", 1, 10**12, True), "tr_solve_min": ("range", 1, 10**12, True),
           "tr_gamma": ("range", 0.5, 0.999, False), "tr_share": ("range", 0.1, 1.0, False),
           "tr_solve_t": ("range", 0.001, 10.0, False), "tr_solve_g": ("range", 0.5, 0.999, False),
           "tr_solve_s": ("range", 0.1, 1.0, False), "tr_top_rho": ("range", 0.001, 1e300, False),
           "tr_clip_n": ("range", 10, 10**12, True)},
)
