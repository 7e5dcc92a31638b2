"""Cached computations of the Trade-offs page (all analytic; nothing is released)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

import prdp_core
from prdp_core import analysis
from prdp_core.data import Dataset
from prdp_core.workload import SplittingPolicy

from . import memory, state
from . import policy as pstate

TABLE7 = prdp_core.samples.CBP_TOPCODE_SCHEMES
TABLE8 = prdp_core.samples.CBP_SPLIT_SCHEMES


def split_measures(pol: SplittingPolicy) -> list[str]:
    """Measures summed on split data by the workload (those a threshold sweep moves)."""
    out = []
    for q in pol.workload.queries:
        if q.kind != "count" and q.split and q.measure not in out:
            out.append(q.measure)
    return out or list(pol.thresholds.measures)


def default_min_records(ds: Dataset) -> int:
    return 100 if ds.n >= 50_000 else 10 if ds.n >= 2_000 else 1


@st.cache_data(show_spinner="Sweeping thresholds × ρ…", max_entries=8, scope="session")
def sweep(token: str, pol_json: str, pcts: tuple[float, ...], rhos: tuple[float, ...], min_count: int,
          _ds: Dataset, _pol: SplittingPolicy) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, float]]]:
    memory.guard("sweep", rows=_ds.n, columns=memory.dataset_columns(_ds))
    grid = analysis.percentile_grid(_ds.table, split_measures(_pol), pcts)
    labels = [f"p{p:g}" for p in pcts]
    errors, losses = analysis.sweep(_ds.table, _pol, grid, rhos, min_count=min_count, labels=labels)
    return errors, losses, grid


@st.cache_data(show_spinner=False, max_entries=32, scope="session")
def sweep_cdfs(token: str, pol_json: str, grid_json: str, rho: float, _ds: Dataset, _pol: SplittingPolicy
               ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    grid = json.loads(grid_json)
    return {lab: analysis.loss_cdf_for(_ds.table, _pol, thr, rho) for lab, thr in grid.items()}


@st.cache_data(show_spinner="Comparing splitting with top-coding…", max_entries=8, scope="session")
def compare(token: str, key: str, _ds: Dataset, measures: tuple[str, ...], levels: tuple[tuple[str, ...], ...],
            split: dict[str, dict[str, float]], top: dict[str, dict[str, float]], base_rho: float,
            min_count: int) -> pd.DataFrame:
    memory.guard("sweep", rows=_ds.n, columns=memory.dataset_columns(_ds))
    return analysis.compare_schemes(_ds.table, measures, levels, split, top, base_rho=base_rho, min_count=min_count)


@st.cache_data(show_spinner="Solving for the budgets…", max_entries=16, scope="session")
def fitness(token: str, pol_json: str, targets: tuple[float, ...], gamma: float, share: float, min_count: int,
            _ds: Dataset, _pol: SplittingPolicy) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], pd.DataFrame]:
    from prdp_core.policy import ecdf

    from prdp_core.mechanisms.unit_splitting import workload_stats

    memory.guard("sweep", rows=_ds.n, columns=memory.dataset_columns(_ds))
    curves, rows = {}, []
    sts = workload_stats(_ds.table, _pol)
    for t in targets:
        sol = analysis.solve_budget(_ds.table, _pol, target=t, gamma=gamma, share=share, min_count=min_count,
                                    stats_=sts)
        curves[f"within {t:.0%}"] = ecdf(sol.policy(_ds.table))
        rows.append({"target": t, **{f"ρ {f}": r for f, r in sol.rho_by_family.items()},
                     "base loss": sol.policy.workload.total_rho})
    return curves, pd.DataFrame(rows)


def schemes_for(ds: Dataset, measures: list[str]) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Preset schemes: the paper's Tables 7–8 for CBP-like data, percentile schemes otherwise."""
    if set(measures) <= set(TABLE8["Conservative"]) and ds.name.startswith("cbp_like"):
        return ({k: {m: v[m] for m in measures} for k, v in TABLE8.items()},
                {k: {m: v[m] for m in measures} for k, v in TABLE7.items()})
    split = {f"p{p:g}": t for p, t in zip((99, 80, 50), analysis.percentile_grid(ds.table, measures, (99, 80, 50)))}
    top = {f"p{p:g}": t for p, t in zip((99.9, 99, 97), analysis.percentile_grid(ds.table, measures, (99.9, 99, 97)))}
    return split, top


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


def code(source: dict[str, Any], ds: Dataset, pol: SplittingPolicy) -> str:
    from .policy_code import policy_code

    base = policy_code(source, ds, pol, "lemma4")
    head = "\n".join(ln for ln in base.splitlines() if not ln.startswith(("preview =", "print(preview", "x, share")))
    return f"""{head}
import prdp_core
from prdp_core import analysis

# Fig. 2: thresholds at percentiles × base budgets (analytic: nothing is released)
grid = analysis.percentile_grid(ds.table, {split_measures(pol)!r}, [90, 97, 99, 99.9])
errors, losses = analysis.sweep(ds.table, policy, grid, [0.1, 1.0, 10.0], min_count=100)
print(losses)

# per-answer expected errors of the active policy, and the budget for a goal (Fig. 4)
errs = analysis.workload_errors(ds.table, policy, gamma=0.95, min_count=100)
print(analysis.summarize_errors(errs))
print(analysis.solve_budget(ds.table, policy, target=0.05, gamma=0.95, share=0.95).describe())"""


@st.cache_data(show_spinner=False, max_entries=16, scope="session")
def solve(token: str, pol_json: str, target: float, gamma: float, share: float, min_count: int,
          _ds: Dataset, _pol: SplittingPolicy) -> tuple[analysis.BudgetSolution, dict[str, float]]:
    """The budgets meeting a goal and, for single-row thresholds, the largest thresholds at current budgets."""
    memory.guard("sweep", rows=_ds.n, columns=memory.dataset_columns(_ds))
    sol = analysis.solve_budget(_ds.table, _pol, target=target, gamma=gamma, share=share, min_count=min_count)
    caps = {}
    if _pol.thresholds.group_col is None:
        caps = analysis.largest_thresholds(_ds.table, _pol, target=target, gamma=gamma, share=share,
                                           min_count=min_count)
    return sol, caps
