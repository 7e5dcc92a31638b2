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

Sweeps over thresholds × ρ reuse the workload's sufficient statistics: the true answers do
not depend on the thresholds (splitting preserves sums, Lemma 8); only the per-cell
sensitivity and the split counts do.

Every function taking ``table`` also takes a dataset held by an engine
(:class:`~prdp_core.engines.EngineDataset`): the per-cell statistics, split-count histograms and
quantiles are then computed by the engine (:func:`table_stats`), never as per-record arrays, and the
errors are the same numbers.

Budget solvers answer "what does a fitness-for-use goal cost?" (Fig. 4): the smallest
budget ρ_q per query family such that a share of the queries meets a relative-error target
with probability γ, and the per-record policy that implies; or, at fixed ρ, the largest
thresholds that do. Under partition selection the goal counts a suppressed cell as an ARE of
100%, as the closed-form errors do (:func:`goal_quantile_levels`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from . import limits
from .distribution import LossDistribution
from .engines import Aggregate, is_engine_data
from .errors import ParameterError, PolicyError, ResourceLimitError
from .mechanisms.unit_splitting import (QueryStats, cell_sensitivity, engine_workload_stats,
                                        policy_loss_of_histogram, selection_cells, selection_plan, workload_stats)
from .splitting import _positive_quantile, as_thresholds, split_counts
from .workload import Query, SplittingPolicy, Workload

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
    own = () if wl.joint else tuple(dict.fromkeys(q.measure for q in wl.queries  # type: ignore[misc]
                                                  if q.split and q.kind != "count"))
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
                       scale: float = 1.0, cells: Mapping[tuple[str, ...], tuple[pd.DataFrame, np.ndarray]] | None = None
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
    sets, ps = selection_plan((s.query.group_by for s in sts), wl.partition_rho * scale, partition_delta)
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
        return table.engine.cell_aggregates(q.group_by, [agg]).values["raw"]
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
    tot = s.total[keep]  # type: ignore[index]
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
    out = g.quantile([0.05, 0.25, 0.5, 0.75, 0.95]).unstack()
    out.columns = ["q05", "q25", "median", "q75", "q95"]
    out["cells"] = g.size()
    return out.reset_index()


# ---------------------------------------------------------------------------
# Sweeps
# ---------------------------------------------------------------------------


def percentile_grid(table: Any, measures: Sequence[str], pcts: Iterable[float]) -> list[dict[str, float]]:
    """Single-row thresholds at each percentile (PctScore) of every measure (the smallest positive
    value where a percentile is 0)."""
    pcts = list(pcts)
    for p in pcts:
        if not (0 < p <= 100):
            raise ParameterError("Percentiles must be in (0, 100].")
    if is_engine_data(table):
        cols = {m: table.engine.threshold_quantiles(m, [p / 100.0 for p in pcts]) for m in measures}
        return [{m: float(cols[m][i]) for m in measures} for i in range(len(pcts))]
    out = []
    for p in pcts:
        out.append({m: _positive_quantile(table[m].to_numpy(dtype="float64"), p / 100.0) for m in measures})
    return out


_BOX_Q = np.array([0.05, 0.25, 0.5, 0.75, 0.95])


def sweep(table: Any, policy: SplittingPolicy, thresholds: Sequence[Mapping[str, float]],
          base_rhos: Sequence[float], *, min_count: int = 0, gamma: float = 0.95,
          labels: Sequence[str] | None = None, stats_: list[QueryStats] | None = None,
          partition_delta: float = 1e-6, progress: Callable[[int, int, str], None] | None = None
          ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Analytic errors and policy losses for every (thresholds, base ρ) pair.

    The workload's budgets are scaled so that its base loss (what an unsplit record pays)
    equals each base ρ. Returns ``(boxes, losses)``:

    * ``boxes`` — per (setting, base ρ, family): the 5/25/50/75/95th percentiles of the
      answers' median ARE (``q05`` … ``q95``), the median QueryRelErr(γ) and the number of answers;
    * ``losses`` — per pair: share of records split, share above the base loss, loss p99 and
      max, and the median of the answers' median ARE per family.

    Unbiased Gaussian answers scale exactly with Δ/√ρ, so their quantiles are computed once
    per family and rescaled; top-coded sums (biased) are solved per cell. AVG cells are left
    out (their error needs simulation). With partition selection each cell's ARE is the mixture
    of :func:`are_quantile_with_keep`, with keep probabilities recomputed for every pair (the
    split counts change with the thresholds, σ_ps with ρ). ``progress(i, total, label)`` is called
    before each threshold setting.
    """
    n_pairs = len(thresholds) * len(base_rhos)
    if n_pairs == 0:
        raise ParameterError("Give at least one threshold setting and one ρ.")
    if n_pairs > limits.MAX_SWEEP_POINTS:
        raise ResourceLimitError(f"{n_pairs:,} sweep points exceed the limit of {limits.MAX_SWEEP_POINTS:,}.")
    if any(not (math.isfinite(r) and r > 0) for r in base_rhos):
        raise ParameterError("Every ρ of the sweep must be positive.")
    labels = list(labels) if labels is not None else [
        ", ".join(f"T({m})={t:,.4g}" for m, t in th.items()) for th in thresholds]
    base_total = policy.workload.total_rho
    if base_total <= 0:
        raise PolicyError("The workload spends no budget.")
    wl = policy.workload
    sts = table_stats(table, policy) if stats_ is None else stats_
    z_g = _z(gamma)
    # per query: kept cells, 1/|S| (unbiased) or (bias, |S|) (top-coded)
    prepared = []
    for s, k in _evaluated_cells(sts, min_count):
        q = s.query
        if q.kind == "sum" and not q.split:
            truth = _raw_totals(table, s)[k]
            prepared.append((s, k, _family(q), None, (s.total[k] - truth, truth)))  # type: ignore[index]
        else:
            truth = np.abs(s.true_answer()[k])
            with np.errstate(divide="ignore"):
                inv = np.where(truth > 0, 1.0 / truth, np.inf)
            prepared.append((s, k, _family(q), inv, None))
    families = list(dict.fromkeys(p[2] for p in prepared))
    # Fast path: a family of unbiased answers whose per-piece sensitivity is one value for all its
    # cells (COUNT: 1; SUM on split data with single-row thresholds: T(a)) has ARE = c·Δ/√(2ρ_q)/|S|
    # with Δ common to the family, so its quantiles are those of the pooled 1/(√(2ρ_q)|S|), rescaled.
    pooled: dict[str, tuple[np.ndarray, float, str | None]] = {}
    sel_sets, sel = selection_plan((s.query.group_by for s in sts), wl.partition_rho, partition_delta)
    selecting = sel is not None
    sel_cells = {gb: selection_cells(table, gb) for gb in sel_sets} if selecting and not is_engine_data(table) else {}
    if policy.thresholds.group_col is None and not selecting:
        for fam in families:
            members = [p for p in prepared if p[2] == fam]
            if all(p[4] is None for p in members):
                w = np.concatenate([p[3] / math.sqrt(2.0 * p[0].query.rho) for p in members])
                wf = w[np.isfinite(w)]
                q0 = members[0][0].query
                measure = None if q0.kind == "count" else q0.measure
                pooled[fam] = (np.quantile(wf, _BOX_Q) if wf.size else np.full(5, np.nan),
                               float(np.median(w)), measure)
    has_filter = any(q.filter is not None for q in wl.queries)
    box_rows, loss_rows = [], []
    for i, (th, lab) in enumerate(zip(thresholds, labels)):
        if progress is not None:
            progress(i, len(labels), lab)
        pol_t = SplittingPolicy(as_thresholds(dict(th)), wl)
        m, unscaled, weights = _sweep_losses(table, pol_t, has_filter)
        # each query's (per-cell) scale factor Δ/√(2ρ_q) at base scale 1
        sens = {id(p[0]): cell_sensitivity(p[0].query, pol_t, p[0].keys)[p[1]] for p in prepared}
        for rho in base_rhos:
            scale = rho / base_total
            keep_of: dict[int, np.ndarray] = {}
            if selecting:
                ks = keep_probabilities(table, pol_t, sts, partition_delta=partition_delta,
                                        pieces=m if weights is None else None, scale=scale, cells=sel_cells)
                keep_of = {id(st_): kp for st_, kp in zip(sts, ks)}
            losses = unscaled * scale
            if weights is None:
                row = {"setting": lab, "base_rho": rho, "share_split": float(np.mean(m > 1)),
                       "share_above_base": float(np.mean(losses > rho * (1 + 1e-12))),
                       "loss_p99": float(np.quantile(losses, 0.99)), "loss_max": float(losses.max())}
            else:  # an engine's histogram: losses of its rows, ``weights`` records each
                dist = LossDistribution.from_counts(losses, weights)
                n_rec = max(dist.n, 1)
                row = {"setting": lab, "base_rho": rho, "share_split": float(weights[m > 1].sum() / n_rec),
                       "share_above_base": float(weights[losses > rho * (1 + 1e-12)].sum() / n_rec),
                       "loss_p99": float(dist.quantile(0.99)), "loss_max": dist.max}
            for fam in families:
                if fam in pooled:
                    qw, med_w, measure = pooled[fam]
                    delta = 1.0 if measure is None else float(dict(th)[measure])
                    factor = delta / math.sqrt(scale)
                    qs = Z_MEDIAN * factor * qw
                    n_ans = sum(int(p[1].sum()) for p in prepared if p[2] == fam)
                    box_rows.append({"setting": lab, "base_rho": rho, "family": fam, "q05": qs[0], "q25": qs[1],
                                     "median": qs[2], "q75": qs[3], "q95": qs[4],
                                     "median_query_rel_err": z_g * factor * med_w, "answers": n_ans})
                    row[f"median ARE {fam}"] = float(qs[2])
                    continue
                parts_med, parts_qre = [], []
                for s, k, f, inv, biased in prepared:
                    if f != fam:
                        continue
                    sig = sens[id(s)] / math.sqrt(2.0 * s.query.rho * scale)
                    kp = keep_of[id(s)][k] if id(s) in keep_of else None
                    if biased is None and (kp is None or np.all(kp == 1.0)):
                        parts_med.append(Z_MEDIAN * sig * inv)
                        parts_qre.append(z_g * sig * inv)
                    else:
                        bias, truth = biased if biased is not None else (0.0, 1.0 / inv)
                        kp = np.ones(truth.shape) if kp is None else kp
                        parts_med.append(are_quantile_with_keep(bias, sig, truth, kp, 0.5))
                        parts_qre.append(are_quantile_with_keep(bias, sig, truth, kp, gamma))
                med = np.concatenate(parts_med)
                med_f = med[np.isfinite(med)]
                qs = np.quantile(med_f, _BOX_Q) if med_f.size else np.full(5, np.nan)
                qre = np.concatenate(parts_qre)
                box_rows.append({"setting": lab, "base_rho": rho, "family": fam, "q05": qs[0], "q25": qs[1],
                                 "median": qs[2], "q75": qs[3], "q95": qs[4],
                                 "median_query_rel_err": float(np.median(qre)), "answers": int(med.size)})
                row[f"median ARE {fam}"] = float(qs[2])
            loss_rows.append(row)
    return pd.DataFrame(box_rows), pd.DataFrame(loss_rows)


def _sweep_losses(table: Any, policy: SplittingPolicy, has_filter: bool
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Split counts and base-scale policy losses of a sweep point: per record (weights None), or per
    row of an engine's split-count histogram with its record counts as weights — the same values."""
    wl = policy.workload
    if not is_engine_data(table):
        m = split_counts(table, policy.thresholds).astype("float64")
        return m, ((wl.flat_rho + wl.split_rho * (m * m)) if not has_filter else policy(table)), None
    if not has_filter:
        hist = table.engine.split_histogram(policy.thresholds)
        m = hist.pieces()
        return m, wl.flat_rho + wl.split_rho * (m * m), hist.counts
    own = () if wl.joint else tuple(dict.fromkeys(q.measure for q in wl.queries  # type: ignore[misc]
                                                  if q.split and q.kind != "count"))
    filters = tuple(dict.fromkeys(q.filter for q in wl.queries if q.filter is not None))
    hist = table.engine.split_histogram(policy.thresholds, measures=own, filters=filters)
    return hist.pieces(), policy_loss_of_histogram(policy, hist, summed=True), hist.counts


def loss_cdf_for(table: Any, policy: SplittingPolicy, thresholds: Mapping[str, float] | None = None,
                 base_rho: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Policy-loss CDF of the workload under other thresholds and/or a rescaled budget (for sweeps)."""
    pol = policy if thresholds is None else SplittingPolicy(as_thresholds(dict(thresholds)), policy.workload)
    if base_rho is not None:
        pol = SplittingPolicy(pol.thresholds, pol.workload.scaled(base_rho / policy.workload.total_rho))
    from .policy import ecdf

    wl = pol.workload
    if is_engine_data(table):
        return policy_distribution(table, pol).ecdf()
    if wl.joint and not any(q.filter is not None for q in wl.queries):
        m = split_counts(table, pol.thresholds)
        counts = np.bincount(m)
        k = np.flatnonzero(counts)
        return wl.flat_rho + wl.split_rho * k.astype(float) ** 2, np.cumsum(counts[k]) / m.size
    return ecdf(pol(table))


def level_workload(measures: Sequence[str], levels: Sequence[tuple[str, ...]], base_rho: float) -> Workload:
    """COUNT plus one SUM per measure at every group-by level, the budget split evenly (base loss = base_rho)."""
    if not levels:
        raise ParameterError("Choose at least one group-by level.")
    per = base_rho / (len(levels) * (1 + len(measures)))
    qs = []
    for lv in levels:
        qs.append(Query("count", rho=per, group_by=tuple(lv)))
        qs += [Query("sum", a, rho=per, group_by=tuple(lv)) for a in measures]
    return Workload(tuple(qs))


def compare_schemes(table: Any, measures: Sequence[str], levels: Sequence[tuple[str, ...]],
                    split_schemes: Mapping[str, Mapping[str, float]], topcode_schemes: Mapping[str, Mapping[str, float]],
                    *, base_rho: float = 1.0, min_count: int = 0) -> pd.DataFrame:
    """Fig. 3: per-answer median ARE of splitting schemes vs top-coding schemes, by group-by level.

    Every scheme answers the same workload (:func:`level_workload`) at the same base loss;
    split schemes pay ρ·m(r)² on their SUMs, top-coded ones a flat ρ with biased sums.
    Returns the per-cell errors with columns ``scheme`` and ``method`` added.
    """
    from .mechanisms.unit_splitting import topcode_policy

    wl = level_workload(measures, levels, base_rho)
    frames = []
    any_thr = next(iter(split_schemes.values()), None) or next(iter(topcode_schemes.values()), None)
    if any_thr is None:
        raise ParameterError("Give at least one scheme.")
    for name, thr in split_schemes.items():
        e = workload_errors(table, SplittingPolicy(as_thresholds(dict(thr)), wl), min_count=min_count)
        frames.append(e.assign(scheme=f"split: {name}", method="unit splitting"))
    for name, clamp in topcode_schemes.items():
        pol = topcode_policy(SplittingPolicy(as_thresholds(dict(any_thr)), wl), clamp)
        e = workload_errors(table, pol, min_count=min_count)
        frames.append(e.assign(scheme=f"top-code: {name}", method="top-coding"))
    return pd.concat(frames, ignore_index=True)


# ---------------------------------------------------------------------------
# Budget solvers (Fig. 4)
# ---------------------------------------------------------------------------


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
        return replace(self.policy, workload=Workload(qs, wl.partition_rho, wl.joint))

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
        truth = np.abs(s.true_answer()[k]) if not (q.kind == "sum" and not q.split) else np.abs(_raw_totals(table, s)[k])
        sens = s.sens[k]
        z = _goal_z(goal_quantile_levels(keeps[id(s)][k], gamma, target))
        margin = target * truth
        if q.kind == "sum" and not q.split:
            margin = target * truth - np.abs(s.total[k] - truth)  # type: ignore[index]
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
    pol = replace(policy, workload=Workload(tuple(new_q), policy.workload.partition_rho, policy.workload.joint))
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
        cells.setdefault(q.measure, []).append((s, k, np.abs(s.true_answer()[k])))  # type: ignore[arg-type]

    def caps_of(items: list[tuple[QueryStats, np.ndarray, np.ndarray]], zs: list[np.ndarray] | None) -> np.ndarray:
        """T ≤ t·|S|·√(2ρ)/z per cell (z per cell with suppression counted, else the blind z)."""
        zz = zs if zs is not None else [np.full(truth.shape, z) for _, _, truth in items]
        return np.concatenate([target * truth * math.sqrt(2.0 * s.query.rho) / zc
                               for (s, _, truth), zc in zip(items, zz)])

    blind = {a: float(np.quantile(caps_of(v, None), 1.0 - share, method="lower")) for a, v in cells.items() if v}
    wl = policy.workload
    if selection_plan((s.query.group_by for s in sts), wl.partition_rho, partition_delta)[1] is None:
        return blind
    sel_sets, _ = selection_plan((s.query.group_by for s in sts), wl.partition_rho, partition_delta)
    engine = is_engine_data(table)  # an engine counts each candidate's pieces itself
    sel_cells = None if engine else {gb: selection_cells(table, gb) for gb in sel_sets}
    current = {**dict(policy.thresholds.rows[0][1]), **blind}

    def share_met(a: str, th: dict[str, float]) -> float:
        pol_t = SplittingPolicy(as_thresholds(dict(th)), wl)
        keeps = _keeps_by_query(table, pol_t, sts, partition_delta, pieces=None if engine else split_counts(table, pol_t.thresholds),
                                cells=sel_cells)
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


def best_settings(losses: pd.DataFrame, family: str, *, max_share: float = 0.01) -> list[dict[str, Any]]:
    """Per base ρ of a :func:`sweep`'s ``losses``: the setting with the smallest median ARE of
    ``family`` among those keeping at most ``max_share`` of records above the base loss.

    Each item has ``base_rho`` and ``status``: ``"best"`` (with ``setting``, ``median_are`` and
    ``share_above_base``), ``"none_within_share"`` (every setting puts more records above the base)
    or ``"undefined"`` (no answer of the family has a relative error: every true answer is 0).
    """
    col = f"median ARE {family}"
    out: list[dict[str, Any]] = []
    if losses.empty or col not in losses.columns:
        return out
    for rho_v, grp in losses.groupby("base_rho", sort=True):
        item: dict[str, Any] = {"base_rho": float(rho_v)}
        ok = grp[grp["share_above_base"] <= max_share]
        finite = ok[np.isfinite(ok[col].to_numpy(dtype="float64"))]
        if ok.empty:
            item["status"] = "none_within_share"
        elif finite.empty:
            item["status"] = "undefined"
        else:
            r = finite.loc[finite[col].idxmin()]
            item.update(status="best", setting=r["setting"], median_are=float(r[col]),
                        share_above_base=float(r["share_above_base"]))
        out.append(item)
    return out
