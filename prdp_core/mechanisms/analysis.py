"""Error analysis of unit-splitting releases: closed forms, Monte Carlo, sweeps and budget solvers.

Per-record zCDP paper, Sec. 6. For Gaussian answers everything is analytic:

* ARE = |M(D) − S(D)| / |S(D)|; for an unbiased Gaussian answer its median is
  z_{0.75}·σ/|S| ≈ 0.674·σ/|S| and its mean √(2/π)·σ/|S|;
* QueryRelErr(γ) — the smallest v with P(ARE ≥ v) ≤ 1 − γ — is z_{(1+γ)/2}·σ/|S|;
* a top-coded sum has bias b = Σ min(r, c) − Σ r, so its error is b + σZ and its ARE
  quantiles are those of a folded normal (solved by vectorised bisection).

AVG answers (ratio of two Gaussians) are not Gaussian: they are handled by vectorised Monte
Carlo (:func:`monte_carlo_are`). Under partition selection a cell is published only with
probability p = Φ̄((τ − pieces)/σ_ps) (:func:`keep_probabilities`); a suppressed cell reads as 0,
i.e. an ARE of 100%, so an answer's ARE is the mixture "Gaussian ARE with probability p, 1
otherwise", whose quantiles are exact (:func:`are_quantile_with_keep`) and whose AVG part is
simulated together with the keep draws.

Sweeps over thresholds × ρ are in :mod:`prdp_core.mechanisms.sweeps` and the budget solvers in
:mod:`prdp_core.mechanisms.budget_solver`.

Every function taking ``table`` also takes a dataset held by an engine
(:class:`~prdp_core.engines.EngineDataset`): the per-cell statistics, split-count histograms and
quantiles are then computed by the engine (:func:`table_stats`), never as per-record arrays, and the
errors are the same numbers.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..core import keysets
from ..core.distribution import LossDistribution
from ..core.errors import ParameterError, PolicyError
from ..core.splitting import split_counts
from ..core.workload import Query, SplittingPolicy
from ..engines import Aggregate, is_engine_data
from .unit_splitting import (
    QueryStats,
    engine_workload_stats,
    policy_loss_of_histogram,
    selection_cells,
    selection_plan,
    workload_stats,
)
from .unit_splitting.stats import on_cells

Z_MEDIAN = float(stats.norm.ppf(0.75))


def _z(gamma: float) -> float:
    if not (0 < gamma < 1):
        raise ParameterError("γ (the probability the error bound must hold with) must be in (0, 1).")
    return float(stats.norm.ppf((1.0 + gamma) / 2.0))


def table_stats(table: Any, policy: SplittingPolicy) -> list[QueryStats]:
    """Per-cell statistics of the workload (:func:`~prdp_core.mechanisms.unit_splitting.workload_stats`),
    computed by the engine for a dataset it holds (no per-record cell map: ``cell_of`` is None)."""
    if is_engine_data(table):
        return engine_workload_stats(table, policy)[0]
    return workload_stats(table, policy)


def _selection_pieces(table: Any, policy: SplittingPolicy, sets: Iterable[tuple[str, ...]],
                      pieces: np.ndarray | None,
                      cells: Mapping[tuple[str, ...], tuple[pd.DataFrame, np.ndarray]] | None
                      ) -> dict[tuple[str, ...], np.ndarray]:
    """Split rows of every candidate cell of each selection set (over all records)."""
    if is_engine_data(table):
        agg = [Aggregate("pieces", "pieces")]
        return {gb: table.engine.cell_aggregates(gb, agg, policy.thresholds).values["pieces"] for gb in sets}
    m = (split_counts(table, policy.thresholds) if pieces is None else np.asarray(pieces)).astype("float64")
    out = {}
    for gb in sets:
        keys, cell_of = cells[gb] if cells is not None and gb in cells else selection_cells(table, gb)
        out[gb] = np.bincount(cell_of, weights=m, minlength=len(keys))
    return out


def policy_distribution(table: Any, policy: SplittingPolicy) -> LossDistribution:
    """The records' policy losses P(r) as a distribution: from the per-record losses in memory, or from
    the engine's split-count histogram (exact: the same values and counts)."""
    if not is_engine_data(table):
        return LossDistribution.from_values(policy(table), "rho", base=policy.workload.total_rho)
    wl = policy.workload
    own = wl.split_measures()
    filters = tuple(dict.fromkeys(q.filter for q in wl.queries if q.filter is not None))
    hist = table.engine.split_histogram(policy.thresholds, measures=own, filters=filters)
    return LossDistribution.from_counts(policy_loss_of_histogram(policy, hist, summed=True), hist.counts, "rho",
                                        base=wl.total_rho)


def query_rel_err(sigma: np.ndarray | float, true: np.ndarray | float, gamma: float = 0.95) -> np.ndarray:
    """QueryRelErr(γ) of an unbiased Gaussian answer: z_{(1+γ)/2}·σ/|S| (inf where S = 0)."""
    s = np.abs(np.asarray(true, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s > 0, _z(gamma) * np.asarray(sigma, dtype=float) / s, np.inf)


def median_are(sigma: np.ndarray | float, true: np.ndarray | float) -> np.ndarray:
    """Median ARE of an unbiased Gaussian answer: z_{0.75}·σ/|S|."""
    s = np.abs(np.asarray(true, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s > 0, Z_MEDIAN * np.asarray(sigma, dtype=float) / s, np.inf)


def folded_normal_quantile(bias: np.ndarray, sigma: np.ndarray, q: float | np.ndarray,
                           iters: int = 60) -> np.ndarray:
    """q-quantile of |b + σZ| for each (b, σ) pair (vectorised bisection; q may be one level per pair)."""
    b = np.abs(np.asarray(bias, dtype=float))
    s = np.asarray(sigma, dtype=float)
    b, s, q = np.broadcast_arrays(b, s, np.asarray(q, dtype=float))
    lo = np.zeros(b.shape)
    hi = b + 10.0 * s + 1e-300
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        cdf = stats.norm.cdf((mid - b) / s) - stats.norm.cdf((-mid - b) / s)
        below = cdf < q
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def are_quantile(bias: np.ndarray, sigma: np.ndarray, true: np.ndarray, q: float) -> np.ndarray:
    """q-quantile of the ARE of an answer with error b + σZ."""
    s = np.abs(np.asarray(true, dtype=float))
    v = folded_normal_quantile(bias, sigma, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s > 0, v / s, np.inf)


def are_quantile_with_keep(bias: np.ndarray, sigma: np.ndarray, true: np.ndarray, keep: np.ndarray,
                           q: float) -> np.ndarray:
    """q-quantile of the ARE of an answer published with probability ``keep`` (error b + σZ) and
    suppressed otherwise (read as 0: ARE = 1), exactly.

    With G(v) = P(|b + σZ| ≤ v·|S|) the ARE's CDF is keep·G(v) + (1 − keep)·1[v ≥ 1]; its
    q-quantile is G⁻¹(q/keep) when that is ≤ 1, else 1 while keep·G(1) + 1 − keep ≥ q, else
    G⁻¹((q − 1 + keep)/keep).
    """
    b = np.abs(np.asarray(bias, dtype=float))
    sig = np.asarray(sigma, dtype=float)
    t = np.abs(np.asarray(true, dtype=float))
    p = np.clip(np.asarray(keep, dtype=float), 0.0, 1.0)
    b, sig, t, p = np.broadcast_arrays(b, sig, t, p)
    g1 = stats.norm.cdf((t - b) / sig) - stats.norm.cdf((-t - b) / sig)
    below_one = (p * g1 >= q) & (q < p)
    at_one = ~below_one & (p * g1 + 1.0 - p >= q)
    with np.errstate(divide="ignore", invalid="ignore"):
        level = np.where(below_one, q / p, (q - 1.0 + p) / p)
    level = np.where(below_one | ~at_one, np.clip(level, 0.0, 1.0 - 1e-16), 0.5)
    if np.any(b > 0):
        v = folded_normal_quantile(b, sig, level)
    else:
        v = sig * stats.norm.ppf((1.0 + level) / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(t > 0, v / t, np.inf)
    out = np.where(below_one, np.minimum(out, 1.0), out)
    return np.where(at_one & (t > 0), 1.0, out)


def keep_probabilities(table: Any, policy: SplittingPolicy, sts: list[QueryStats], *,
                       partition_delta: float = 1e-6, pieces: np.ndarray | None = None,
                       scale: float = 1.0,
                       cells: Mapping[tuple[str, ...], tuple[pd.DataFrame, np.ndarray]] | None = None
                       ) -> list[np.ndarray]:
    """Probability that each cell of each query is published (one array per query of ``sts``).

    Without partition selection (``workload.partition_rho = 0``) or without a group-by every cell
    is published (1). Otherwise the release's rule (:func:`~prdp_core.mechanisms.unit_splitting.selection_plan`):
    ρ_ps (times ``scale``, for sweeps) split evenly over the workload's distinct group-by sets; a cell
    is kept when its split rows (over all records, whatever a query's filter) plus N(0, σ_ps²) exceed
    τ = 1 + σ_ps·Φ⁻¹(1 − δ_ps). ``cells`` may hold each set's :func:`selection_cells` (they do not
    depend on thresholds or ρ, so a sweep computes them once). Computed from the confidential piece
    counts: a design aid.
    """
    wl = policy.workload
    sets, ps = selection_plan((s.query.group_by for s in sts), wl.partition_rho * scale, partition_delta,
                             keysets.listed(wl))
    if ps is None:
        return [np.ones(s.n_cells) for s in sts]
    keep = {gb: ps.keep_probability(p) for gb, p in _selection_pieces(table, policy, sets, pieces, cells).items()}
    out = []
    for s in sts:
        if not s.query.group_by:
            out.append(np.ones(s.n_cells))
            continue
        p = keep[s.query.group_by]
        if p.size != s.n_cells:
            raise PolicyError("The cells of partition selection do not match the query's cells.")
        out.append(p)
    return out


# ---------------------------------------------------------------------------
# Per-cell errors of a workload
# ---------------------------------------------------------------------------


def _family(q: Query) -> str:
    return "COUNT" if q.kind == "count" else f"{q.kind.upper()}({q.measure})"


def _min_records(min_count: int | float) -> int:
    """The smallest record count of an evaluated cell (at least 1); NaN or ±inf is refused."""
    if isinstance(min_count, bool):
        raise ParameterError(f"The minimum number of records must be a whole number (got {min_count!r}).")
    try:
        v = float(min_count)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(f"The minimum number of records must be a whole number (got {min_count!r}).") from None
    if not math.isfinite(v):
        raise ParameterError(f"The minimum number of records must be a finite whole number (got {min_count!r}).")
    return max(int(min_count), 1)


def workload_errors(table: Any, policy: SplittingPolicy, *, gamma: float = 0.95, min_count: int = 0,
                    stats_: list[QueryStats] | None = None, true_sums: pd.DataFrame | None = None,
                    mc_trials: int = 400, rng: np.random.Generator | None = None,
                    partition_delta: float = 1e-6) -> pd.DataFrame:
    """Expected errors of every answer (cell) of the workload, before any release.

    One row per cell with ≥ ``min_count`` records: query, family (COUNT, SUM(EMP), …),
    level (the group-by), true answer, records, σ, bias (top-coding), the probability the cell
    is published (``keep_prob``: 1 unless the workload finds its keys by partition selection with
    δ = ``partition_delta``), median ARE and QueryRelErr(γ). A suppressed cell counts as an ARE of
    100%. Gaussian answers are exact; AVG cells use ``mc_trials`` Monte Carlo draws.
    Computed from confidential values: the designer's view, not a publishable table.
    """
    sts = table_stats(table, policy) if stats_ is None else stats_
    keeps = keep_probabilities(table, policy, sts, partition_delta=partition_delta)
    rows = []
    for i, s in enumerate(sts):
        q = s.query
        keep = s.count >= _min_records(min_count)
        if not keep.any():
            continue
        p = keeps[i][keep]
        sig = s.sens[keep] / math.sqrt(2.0 * q.rho) if q.rho > 0 else np.full(keep.sum(), np.inf)
        true = s.true_answer()[keep]
        if q.kind == "sum" and not q.split:
            raw = _raw_totals(table, s)[keep]
            bias = true - raw
            true = raw
            med = are_quantile_with_keep(bias, sig, true, p, 0.5)
            qre = are_quantile_with_keep(bias, sig, true, p, gamma)
        elif q.kind == "avg":
            med, qre, true, bias = _avg_errors(table, s, keep, sig, gamma, mc_trials, rng, p)
        else:
            bias = np.zeros_like(true)
            if np.all(p == 1.0):
                med = median_are(sig, true)
                qre = query_rel_err(sig, true, gamma)
            else:
                med = are_quantile_with_keep(bias, sig, true, p, 0.5)
                qre = are_quantile_with_keep(bias, sig, true, p, gamma)
        frame = pd.DataFrame({"query": f"{i + 1}. {q.name()}", "family": _family(q),
                              "level": ", ".join(q.group_by) or "all", "true": true, "n_records": s.count[keep],
                              "sigma": sig, "bias": bias, "keep_prob": p, "median_are": med, "query_rel_err": qre})
        rows.append(frame)
    if not rows:
        return pd.DataFrame(columns=["query", "family", "level", "true", "n_records", "sigma", "bias", "keep_prob",
                                     "median_are", "query_rel_err"])
    return pd.concat(rows, ignore_index=True)


def _evaluated_cells(sts: list[QueryStats], min_count: int) -> Iterable[tuple[QueryStats, np.ndarray]]:
    """Queries with a closed-form error (not AVG) and the mask of their cells with ≥ min_count records."""
    for s in sts:
        if s.query.kind == "avg":
            continue
        k = s.count >= _min_records(min_count)
        if k.any():
            yield s, k


def _raw_totals(table: Any, s: QueryStats) -> np.ndarray:
    """Per-cell sums of the query's measure, not clamped (the true answer of a top-coded sum)."""
    if s.cell_of is None:  # statistics of an engine: the sums are computed there, over the same cells
        q = s.query
        agg = Aggregate("raw", "sum", q.measure, None, q.filter)
        t = table.engine.cell_aggregates(q.group_by, [agg])
        if len(t.keys) != s.n_cells or not t.keys.equals(s.keys):  # a public key list: its cells
            t = on_cells(t, s.keys, table.engine.column_kinds())
        return t.values["raw"]
    inside = s.cell_of >= 0
    v = table[s.query.measure].to_numpy(dtype="float64")[inside]
    return np.bincount(s.cell_of[inside], weights=v, minlength=s.n_cells)


def _avg_errors(table: Any, s: QueryStats, keep: np.ndarray, sig: np.ndarray, gamma: float, trials: int,
                rng: np.random.Generator | None, published: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    q = s.query
    raw_total = _raw_totals(table, s)[keep]
    cnt = s.count[keep].astype(float)
    true_avg = raw_total / cnt
    tot = s.total[keep]  # type: ignore[index]  # an avg query's statistics hold its total
    sig_c = 1.0 / math.sqrt(2.0 * q.rho_count)
    g = rng if rng is not None else np.random.default_rng(0)
    are = monte_carlo_are(lambda z1, z2: (tot + sig * z1) / np.maximum(cnt + sig_c * z2, 1.0), true_avg,
                          trials=trials, rng=g)
    if published is not None and np.any(published < 1.0):
        # partition selection: a suppressed cell reads as 0 (ARE 1), drawn independently of the answer's noise
        dropped = g.random(are.shape) >= published
        are = np.where(dropped & np.isfinite(are), 1.0, are)
    return (np.quantile(are, 0.5, axis=0), np.quantile(are, gamma, axis=0), true_avg,
            tot / cnt - true_avg)


def monte_carlo_are(estimator, true: np.ndarray, *, trials: int = 400,
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """ARE of ``estimator(z1, z2)`` (two standard-normal draws per cell) over ``trials`` draws.

    Returns a (trials × cells) array, vectorised over both.
    """
    g = rng if rng is not None else np.random.default_rng(0)
    t = np.asarray(true, dtype=float)
    z1 = g.standard_normal((trials, t.size))
    z2 = g.standard_normal((trials, t.size))
    est = estimator(z1, z2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(t) > 0, np.abs(est - t) / np.abs(t), np.inf)


def summarize_errors(errors: pd.DataFrame, by: Sequence[str] = ("family",), col: str = "median_are") -> pd.DataFrame:
    """Box-plot statistics of an error column over the workload's cells, per group."""
    if errors.empty:
        return pd.DataFrame()
    g = errors.groupby(list(by), sort=False, observed=True)[col]
    out = g.quantile([0.05, 0.25, 0.5, 0.75, 0.95]).unstack()  # type: ignore[arg-type]  # a list of levels
    out.columns = ["q05", "q25", "median", "q75", "q95"]
    out["cells"] = g.size()
    return out.reset_index()


# ---------------------------------------------------------------------------
# Figure 1: clipped Gaussian sums of Pareto data
# ---------------------------------------------------------------------------


def clipped_pareto_mse_ratio(delta: np.ndarray | float, *, n: int, alpha: float, rho: float) -> np.ndarray:
    """Theoretical MSE / E[sum] of a ρ-zCDP Gaussian sum of n Pareto(1, α) values clipped at Δ.

    MSE = bias² + noise variance, with bias = n·E[(X − Δ)⁺] = n·Δ^{1−α}/(α − 1) (Δ ≥ 1) and noise
    variance Δ²/(2ρ); E[sum] = n·α/(α − 1). (Sampling variability of the data is not part of the
    error of the release, as in Fig. 1.)
    """
    if not (alpha > 1):
        raise ParameterError("The tail index α must exceed 1 (finite mean).")
    if n < 1 or rho <= 0:
        raise ParameterError("n must be ≥ 1 and ρ > 0.")
    d = np.maximum(np.asarray(delta, dtype=float), 1.0)
    bias = n * d ** (1.0 - alpha) / (alpha - 1.0)
    mse = bias**2 + d**2 / (2.0 * rho)
    return mse / (n * alpha / (alpha - 1.0))


def optimal_clip(*, n: int, alpha: float, rho: float) -> float:
    """The Δ minimising :func:`clipped_pareto_mse_ratio`: Δ* = (2n²ρ/(α − 1))^{1/(2α)}."""
    if not (alpha > 1) or rho <= 0 or n < 1:
        raise ParameterError("Need α > 1, ρ > 0, n ≥ 1.")
    return max(1.0, (2.0 * n * n * rho / (alpha - 1.0)) ** (1.0 / (2.0 * alpha)))
