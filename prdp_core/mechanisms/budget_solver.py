"""Budget solvers (per-record zCDP paper, Fig. 4): what does a fitness-for-use goal cost?

The smallest budget ρ_q per query family such that a share of the queries meets a relative-error
target with probability γ, and the per-record policy that implies; or, at fixed ρ, the largest
thresholds that do. Under partition selection the goal counts a suppressed cell as an ARE of 100%,
as the closed-form errors do (:func:`goal_quantile_levels`).
"""


from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..core import keysets
from ..core.errors import ParameterError, PolicyError
from ..core.splitting import as_thresholds, split_counts
from ..core.workload import SplittingPolicy, Workload
from ..engines import is_engine_data
from .analysis import _evaluated_cells, _family, _min_records, _raw_totals, _z, keep_probabilities, table_stats
from .unit_splitting import (
    QueryStats,
    selection_cells,
    selection_plan,
)


@dataclass(frozen=True)
class BudgetSolution:
    """Budgets per query family meeting a relative-error goal, and the policy they imply."""

    target: float
    gamma: float
    share: float
    rho_by_family: dict[str, float]
    policy: SplittingPolicy

    def rounded(self, digits: int = 2) -> SplittingPolicy:
        """The solved policy with every budget rounded UP to ``digits`` significant digits.

        The exact solution is a function of true answers (ρ = ½(z·T/(t·|S|))² at a quantile cell),
        so publishing it would reveal that answer; rounding coarsens what it reveals and keeps the
        goal met. Budgets tuned on confidential data remain a design aid, not public facts.
        """
        def up(x: float) -> float:
            if x <= 0 or not math.isfinite(x):
                return x
            p = math.floor(math.log10(x)) - digits + 1
            return float(math.ceil(x / 10**p - 1e-9) * 10**p)

        wl = self.policy.workload
        qs = tuple(replace(q, rho=up(q.rho), rho_count=up(q.rho_count)) for q in wl.queries)
        return replace(self.policy, workload=Workload(qs, wl.partition_rho, wl.joint, wl.group_keys))

    def describe(self) -> str:
        fams = ", ".join(f"{f}: ρ = {r:.4g}" for f, r in self.rho_by_family.items())
        out = (f"For {self.share:.0%} of the queries within {self.target:.0%} relative error with probability "
               f"{self.gamma:.0%}: {fams}; base loss {self.policy.workload.total_rho:.4g}ρ.")
        if any(math.isinf(r) for r in self.rho_by_family.values()):
            out += (" ρ = inf: no budget meets the goal for that family (a top-coding bias beyond the goal, a true "
                    "answer of 0, or cells that partition selection suppresses more often than 1 − γ — a suppressed "
                    "cell counts as a 100% error; a larger partition-selection budget keeps more cells); its queries "
                    "keep their budgets.")
        return out


def goal_quantile_levels(keep: np.ndarray, gamma: float, target: float) -> np.ndarray:
    """Per cell, the probability the *published* answer's error must stay within the goal so that the
    cell meets QueryRelErr(γ) ≤ ``target`` with partition selection's suppression counted.

    A cell is published with probability p (``keep``) and otherwise reads as 0, an ARE of exactly
    100%. Its ARE is at most t with probability (1 − p)·1[t ≥ 1] + p·G(t), G the published answer's
    error CDF; the goal P(ARE ≤ t) ≥ γ holds iff G(t) ≥ γ/p (t < 1) or G(t) ≥ (γ − 1 + p)/p (t ≥ 1).
    Returns that level: ≥ 1 (unreachable: too many suppressions) gives an infinite budget, ≤ 0
    (the suppressions alone meet the goal) needs no budget; p = 1 gives γ.
    """
    p = np.clip(np.asarray(keep, dtype=float), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lv = np.where(p > 0, (gamma if target < 1 else gamma - 1.0 + p) / p, np.inf)
    return np.where(p >= 1.0, gamma, lv)


def _goal_z(level: np.ndarray) -> np.ndarray:
    """Two-sided normal quantile z with P(|Z| ≤ z) = level (0 for level ≤ 0, inf for level ≥ 1)."""
    lv = np.asarray(level, dtype=float)
    inner = np.clip(lv, 0.0, 1.0)
    z = stats.norm.ppf((1.0 + inner) / 2.0)
    return np.where(lv >= 1.0, np.inf, np.where(lv <= 0.0, 0.0, z))


def _keeps_by_query(table: pd.DataFrame, policy: SplittingPolicy, sts: list[QueryStats], partition_delta: float,
                    **kw: Any) -> dict[int, np.ndarray]:
    """Keep probability of each cell, by query statistics (all 1 without partition selection)."""
    return {id(s): k for s, k in zip(sts, keep_probabilities(table, policy, sts, partition_delta=partition_delta,
                                                             **kw))}


def solve_budget(table: Any, policy: SplittingPolicy, *, target: float, gamma: float = 0.95,
                 share: float = 0.95, min_count: int = 0, stats_: list[QueryStats] | None = None,
                 partition_delta: float = 1e-6) -> BudgetSolution:
    """Smallest per-query budgets so that a ``share`` of each family's cells has QueryRelErr(γ) ≤ ``target``.

    For an unbiased Gaussian answer QueryRelErr(γ) = z·Δ/(√(2ρ)·|S|) ≤ t ⇔ ρ ≥ (z·Δ/(t·|S|))²/2;
    the family's budget is the ``share``-quantile of its cells' requirements, and every query of
    the family gets it (each query must meet the goal on its own cells). Top-coded sums are biased: their
    requirement is infinite where the bias alone exceeds the target (reported as such), else
    ρ ≥ (z·Δ/(t·|S| − |b|))²/2 (conservative).
    Partition selection's suppression is counted (with δ = ``partition_delta``): a cell published
    with probability p reads as 0 otherwise — an ARE of 100% — so z becomes the two-sided quantile
    of :func:`goal_quantile_levels` (γ/p for a goal below 100%), and a cell suppressed more often
    than 1 − γ needs an infinite budget (no ρ_q helps: only a larger partition-selection budget,
    which the solve leaves unchanged). Returns the implied policy (the same thresholds and
    workload with the new budgets).
    """
    if not (target > 0):
        raise ParameterError("The relative-error target must be positive.")
    if not (0 < share <= 1):
        raise ParameterError("The share of queries must be in (0, 1].")
    _z(gamma)
    sts = table_stats(table, policy) if stats_ is None else stats_
    keeps = _keeps_by_query(table, policy, sts, partition_delta)
    need: dict[str, list[np.ndarray]] = {}
    for s, k in _evaluated_cells(sts, min_count):
        q = s.query
        truth = (np.abs(s.true_answer()[k]) if not (q.kind == "sum" and not q.split)
                 else np.abs(_raw_totals(table, s)[k]))
        sens = s.sens[k]
        z = _goal_z(goal_quantile_levels(keeps[id(s)][k], gamma, target))
        margin = target * truth
        if q.kind == "sum" and not q.split:
            margin = target * truth - np.abs(s.total[k] - truth)  # type: ignore[index]  # a sum query's statistics hold its total
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(z == 0, 0.0, 0.5 * (z * sens / np.maximum(margin, 1e-300)) ** 2)
        r = np.where((margin <= 0) & (z > 0), np.inf, r)
        need.setdefault(_family(q), []).append(r)
    rho_fam = {f: float(np.quantile(np.concatenate(v), share, method="higher")) for f, v in need.items()}
    new_q = []
    for q in policy.workload.queries:
        f = _family(q)
        if f in rho_fam and math.isfinite(rho_fam[f]) and rho_fam[f] > 0:
            # every query of the family must meet the goal by itself: give each the family's need
            new_q.append(replace(q, rho=rho_fam[f]))
        else:
            new_q.append(q)
    pol = replace(policy, workload=replace(policy.workload, queries=tuple(new_q)))
    return BudgetSolution(target, gamma, share, rho_fam, pol)


def largest_thresholds(table: Any, policy: SplittingPolicy, *, target: float, gamma: float = 0.95,
                       share: float = 0.95, min_count: int = 0, partition_delta: float = 1e-6) -> dict[str, float]:
    """At the workload's current budgets, the largest threshold T(a) per measure such that a ``share``
    of the SUM cells on split data meets QueryRelErr(γ) ≤ ``target``: T ≤ t·|S|·√(2ρ)/z.

    Under partition selection a suppressed cell counts as a 100% error (z from
    :func:`goal_quantile_levels`); the keep probabilities depend on every measure's threshold (split
    rows), and a smaller threshold only raises them. So each measure in turn gets the largest
    T(a) at most its suppression-blind value at which its share holds, found by bisection with
    the thresholds already lowered (a later measure's lowering keeps the earlier goals met). 0 when
    no positive threshold meets the goal (cells suppressed too often at any split).
    """
    if policy.thresholds.group_col is not None:
        raise PolicyError("Largest thresholds are solved for a single row of thresholds.")
    z = _z(gamma)
    sts = table_stats(table, policy)
    cells: dict[str, list[tuple[QueryStats, np.ndarray, np.ndarray]]] = {}
    for s in sts:
        q = s.query
        if q.kind != "sum" or not q.split:
            continue
        k = s.count >= _min_records(min_count)
        cells.setdefault(q.measure, []).append((s, k, np.abs(s.true_answer()[k])))  # type: ignore[arg-type]  # a sum query names its measure (Query checks it)

    def caps_of(items: list[tuple[QueryStats, np.ndarray, np.ndarray]], zs: list[np.ndarray] | None) -> np.ndarray:
        """T ≤ t·|S|·√(2ρ)/z per cell (z per cell with suppression counted, else the blind z)."""
        zz = zs if zs is not None else [np.full(truth.shape, z) for _, _, truth in items]
        return np.concatenate([target * truth * math.sqrt(2.0 * s.query.rho) / zc
                               for (s, _, truth), zc in zip(items, zz)])

    blind = {a: float(np.quantile(caps_of(v, None), 1.0 - share, method="lower")) for a, v in cells.items() if v}
    wl = policy.workload
    listed = keysets.listed(wl)
    if selection_plan((s.query.group_by for s in sts), wl.partition_rho, partition_delta, listed)[1] is None:
        return blind
    sel_sets, _ = selection_plan((s.query.group_by for s in sts), wl.partition_rho, partition_delta, listed)
    engine = is_engine_data(table)  # an engine counts each candidate's pieces itself
    sel_cells = None if engine else {gb: selection_cells(table, gb) for gb in sel_sets}
    current = {**dict(policy.thresholds.rows[0][1]), **blind}

    def share_met(a: str, th: dict[str, float]) -> float:
        pol_t = SplittingPolicy(as_thresholds(dict(th)), wl)
        keeps = _keeps_by_query(table, pol_t, sts, partition_delta,
                                pieces=None if engine else split_counts(table, pol_t.thresholds), cells=sel_cells)
        items = cells[a]
        zs = [_goal_z(goal_quantile_levels(keeps[id(s)][k], gamma, target)) for s, k, _ in items]
        with np.errstate(divide="ignore"):
            return float(np.mean(caps_of(items, zs) >= th[a] * (1 - 1e-12)))

    out: dict[str, float] = {}
    for a in blind:
        hi = blind[a]
        if share_met(a, {**current, a: hi}) >= share:
            out[a] = hi
            continue
        lo = hi * 1e-9
        if share_met(a, {**current, a: lo}) < share:
            out[a] = 0.0  # the other measures are solved with T(a) left at its blind value
            continue
        for _ in range(60):  # geometric bisection: share_met is non-increasing in T(a)
            mid = math.sqrt(lo * hi)
            if share_met(a, {**current, a: mid}) >= share:
                lo = mid
            else:
                hi = mid
        out[a] = current[a] = lo
    return out


def minimum_policy(table: pd.DataFrame, policy: SplittingPolicy, *, target: float, gamma: float = 0.95,
                   share: float = 0.95, min_count: int = 0) -> np.ndarray:
    """Per-record loss of the cheapest budgets meeting the goal (Fig. 4): P under :func:`solve_budget`."""
    return solve_budget(table, policy, target=target, gamma=gamma, share=share, min_count=min_count).policy(table)
