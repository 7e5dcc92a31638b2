"""Sweeps of unit-splitting policies: thresholds × ρ grids, their errors and loss distributions, the
comparison of splitting and top-coding schemes, and the best setting per base ρ.

Sweeps reuse the workload's sufficient statistics: the true answers do not depend on the
thresholds (splitting preserves sums, Lemma 8); only the per-cell sensitivity and the split
counts do. Tables held by an engine are swept on the engine's statistics.
"""


from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..core import keysets, limits
from ..core.distribution import LossDistribution
from ..core.errors import ParameterError, PolicyError, ResourceLimitError
from ..core.splitting import _positive_quantile, as_thresholds, split_counts
from ..core.workload import Query, SplittingPolicy, Workload
from ..engines import is_engine_data
from .analysis import (
    Z_MEDIAN,
    _evaluated_cells,
    _family,
    _raw_totals,
    _z,
    are_quantile_with_keep,
    keep_probabilities,
    policy_distribution,
    table_stats,
    workload_errors,
)
from .unit_splitting import (
    QueryStats,
    cell_sensitivity,
    policy_loss_of_histogram,
    selection_cells,
    selection_plan,
)


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
    prepared: list[tuple[QueryStats, np.ndarray, str, np.ndarray | None, tuple[np.ndarray, np.ndarray] | None]] = []
    for s, k in _evaluated_cells(sts, min_count):
        q = s.query
        if q.kind == "sum" and not q.split:
            truth = _raw_totals(table, s)[k]
            prepared.append((s, k, _family(q), None, (s.total[k] - truth, truth)))  # type: ignore[index]  # a sum query's statistics hold its total
        else:
            truth = np.abs(s.true_answer()[k])
            with np.errstate(divide="ignore"):
                prepared.append((s, k, _family(q), np.where(truth > 0, 1.0 / truth, np.inf), None))
    families = list(dict.fromkeys(p[2] for p in prepared))
    # Fast path: a family of unbiased answers whose per-piece sensitivity is one value for all its
    # cells (COUNT: 1; SUM on split data with single-row thresholds: T(a)) has ARE = c·Δ/√(2ρ_q)/|S|
    # with Δ common to the family, so its quantiles are those of the pooled 1/(√(2ρ_q)|S|), rescaled.
    pooled: dict[str, tuple[np.ndarray, float, str | None]] = {}
    sel_sets, sel = selection_plan((s.query.group_by for s in sts), wl.partition_rho, partition_delta,
                                   keysets.listed(wl))
    selecting = sel is not None
    sel_cells = {gb: selection_cells(table, gb) for gb in sel_sets} if selecting and not is_engine_data(table) else {}
    if policy.thresholds.group_col is None and not selecting:
        for fam in families:
            members = [p for p in prepared if p[2] == fam]
            if all(p[4] is None for p in members):
                w = np.concatenate([p[3] / math.sqrt(2.0 * p[0].query.rho) for p in members if p[3] is not None])
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
                    if biased is None:
                        assert inv is not None  # an unbiased answer carries 1/|S|
                        if kp is None or np.all(kp == 1.0):
                            parts_med.append(Z_MEDIAN * sig * inv)
                            parts_qre.append(z_g * sig * inv)
                            continue
                        bias, truth = np.zeros(inv.shape), 1.0 / inv
                    else:
                        bias, truth = biased
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
    own = wl.split_measures()
    filters = tuple(dict.fromkeys(q.filter for q in wl.queries if q.filter is not None))
    hist = table.engine.split_histogram(policy.thresholds, measures=own, filters=filters)
    return hist.pieces(), policy_loss_of_histogram(policy, hist, summed=True), hist.counts


def loss_cdf_for(table: Any, policy: SplittingPolicy, thresholds: Mapping[str, float] | None = None,
                 base_rho: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Policy-loss CDF of the workload under other thresholds and/or a rescaled budget (for sweeps)."""
    pol = policy if thresholds is None else SplittingPolicy(as_thresholds(dict(thresholds)), policy.workload)
    if base_rho is not None:
        pol = SplittingPolicy(pol.thresholds, pol.workload.scaled(base_rho / policy.workload.total_rho))
    from ..core.loss_profile import ecdf

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
                    split_schemes: Mapping[str, Mapping[str, float]],
                    topcode_schemes: Mapping[str, Mapping[str, float]], *, base_rho: float = 1.0,
                    min_count: int = 0) -> pd.DataFrame:
    """Fig. 3: per-answer median ARE of splitting schemes vs top-coding schemes, by group-by level.

    Every scheme answers the same workload (:func:`level_workload`) at the same base loss;
    split schemes pay ρ·m(r)² on their SUMs, top-coded ones a flat ρ with biased sums.
    Returns the per-cell errors with columns ``scheme`` and ``method`` added.
    """
    from .unit_splitting import topcode_policy

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
        item: dict[str, Any] = {"base_rho": float(rho_v)}  # type: ignore[arg-type]  # a float column's key
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
