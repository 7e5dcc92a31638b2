"""Error analysis of unit-splitting releases: closed forms, Monte Carlo, sweeps and budget solvers.

Per-record zCDP paper, Sec. 6. For Gaussian answers everything is analytic:

* ARE = |M(D) − S(D)| / |S(D)|; for an unbiased Gaussian answer its median is
  z_{0.75}·σ/|S| ≈ 0.674·σ/|S| and its mean √(2/π)·σ/|S|;
* QueryRelErr(γ) — the smallest v with P(ARE ≥ v) ≤ 1 − γ — is z_{(1+γ)/2}·σ/|S|;
* a top-coded sum has bias b = Σ min(r, c) − Σ r, so its error is b + σZ and its ARE
  quantiles are those of a folded normal (solved by vectorised bisection).

AVG answers (ratio of two Gaussians) and partition selection are not Gaussian: they are
handled by vectorised Monte Carlo (:func:`monte_carlo_are`).

Sweeps over thresholds × ρ reuse the workload's sufficient statistics: the true answers do
not depend on the thresholds (splitting preserves sums, Lemma 8); only the per-cell
sensitivity and the split counts do.

Budget solvers answer "what does a fitness-for-use goal cost?" (Fig. 4): the smallest
budget ρ_q per query family such that a share of the queries meets a relative-error target
with probability γ, and the per-record policy that implies; or, at fixed ρ, the largest
thresholds that do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from . import limits
from .errors import ParameterError, PolicyError, ResourceLimitError
from .mechanisms.unit_splitting import QueryStats, _cell_sensitivity, workload_stats
from .splitting import as_thresholds, split_counts
from .workload import Query, SplittingPolicy, Workload

Z_MEDIAN = float(stats.norm.ppf(0.75))


def _z(gamma: float) -> float:
    if not (0 < gamma < 1):
        raise ParameterError("γ (the probability the error bound must hold with) must be in (0, 1).")
    return float(stats.norm.ppf((1.0 + gamma) / 2.0))


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


def folded_normal_quantile(bias: np.ndarray, sigma: np.ndarray, q: float, iters: int = 60) -> np.ndarray:
    """q-quantile of |b + σZ| for each (b, σ) pair (vectorised bisection)."""
    b = np.abs(np.asarray(bias, dtype=float))
    s = np.asarray(sigma, dtype=float)
    b, s = np.broadcast_arrays(b, s)
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


# ---------------------------------------------------------------------------
# Per-cell errors of a workload
# ---------------------------------------------------------------------------


def _family(q: Query) -> str:
    return "COUNT" if q.kind == "count" else f"{q.kind.upper()}({q.measure})"


def workload_errors(table: pd.DataFrame, policy: SplittingPolicy, *, gamma: float = 0.95, min_count: int = 0,
                    stats_: list[QueryStats] | None = None, true_sums: pd.DataFrame | None = None,
                    mc_trials: int = 400, rng: np.random.Generator | None = None) -> pd.DataFrame:
    """Expected errors of every answer (cell) of the workload, before any release.

    One row per cell with ≥ ``min_count`` records: query, family (COUNT, SUM(EMP), …),
    level (the group-by), true answer, records, σ, bias (top-coding), median ARE and
    QueryRelErr(γ). Gaussian answers are exact; AVG cells use ``mc_trials`` Monte Carlo draws.
    Computed from confidential values: the designer's view, not a publishable table.
    """
    sts = workload_stats(table, policy) if stats_ is None else stats_
    rows = []
    for i, s in enumerate(sts):
        q = s.query
        keep = s.count >= max(int(min_count), 1)
        if not keep.any():
            continue
        sig = s.sens[keep] / math.sqrt(2.0 * q.rho) if q.rho > 0 else np.full(keep.sum(), np.inf)
        true = s.true_answer()[keep]
        if q.kind == "sum" and not q.split:
            raw = _raw_totals(table, s)[keep]
            bias = true - raw
            true = raw
            med = are_quantile(bias, sig, true, 0.5)
            qre = are_quantile(bias, sig, true, gamma)
        elif q.kind == "avg":
            med, qre, true, bias = _avg_errors(table, s, keep, sig, gamma, mc_trials, rng)
        else:
            bias = np.zeros_like(true)
            med = median_are(sig, true)
            qre = query_rel_err(sig, true, gamma)
        frame = pd.DataFrame({"query": f"{i + 1}. {q.name()}", "family": _family(q),
                              "level": ", ".join(q.group_by) or "all", "true": true, "n_records": s.count[keep],
                              "sigma": sig, "bias": bias, "median_are": med, "query_rel_err": qre})
        rows.append(frame)
    if not rows:
        return pd.DataFrame(columns=["query", "family", "level", "true", "n_records", "sigma", "bias",
                                     "median_are", "query_rel_err"])
    return pd.concat(rows, ignore_index=True)


def _raw_totals(table: pd.DataFrame, s: QueryStats) -> np.ndarray:
    inside = s.cell_of >= 0
    v = table[s.query.measure].to_numpy(dtype="float64")[inside]
    return np.bincount(s.cell_of[inside], weights=v, minlength=s.n_cells)


def _avg_errors(table: pd.DataFrame, s: QueryStats, keep: np.ndarray, sig: np.ndarray, gamma: float, trials: int,
                rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    q = s.query
    raw_total = _raw_totals(table, s)[keep]
    cnt = s.count[keep].astype(float)
    true_avg = raw_total / cnt
    tot = s.total[keep]  # type: ignore[index]
    sig_c = 1.0 / math.sqrt(2.0 * q.rho_count)
    are = monte_carlo_are(lambda z1, z2: (tot + sig * z1) / np.maximum(cnt + sig_c * z2, 1.0), true_avg,
                          trials=trials, rng=rng)
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


def percentile_grid(table: pd.DataFrame, measures: Sequence[str], pcts: Iterable[float]) -> list[dict[str, float]]:
    """Single-row thresholds at each percentile (PctScore) of every measure."""
    out = []
    for p in pcts:
        if not (0 < p <= 100):
            raise ParameterError("Percentiles must be in (0, 100].")
        row = {}
        for m in measures:
            v = table[m].to_numpy(dtype="float64")
            t = float(np.percentile(v, p))
            if t <= 0:
                pos = v[v > 0]
                t = float(pos.min()) if pos.size else 1.0
            row[m] = t
        out.append(row)
    return out


def sweep(table: pd.DataFrame, policy: SplittingPolicy, thresholds: Sequence[Mapping[str, float]],
          base_rhos: Sequence[float], *, min_count: int = 0, gamma: float = 0.95,
          labels: Sequence[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Analytic errors and policy losses for every (thresholds, base ρ) pair.

    The workload's budgets are scaled so that its base loss (what an unsplit record pays)
    equals each base ρ. Returns ``(errors, losses)``: per-cell median ARE and QueryRelErr with
    columns ``setting``, ``base_rho`` added; and one row per pair with the share of records
    split, the share above the base loss, loss quantiles and the median ARE per family.
    AVG cells are left out of sweeps (their error needs simulation).
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
    sts = workload_stats(table, policy)
    raw = {id(s): (_raw_totals(table, s) if s.query.kind == "sum" and not s.query.split else None) for s in sts}
    keep = {id(s): s.count >= max(int(min_count), 1) for s in sts}
    err_frames, loss_rows = [], []
    for th, lab in zip(thresholds, labels):
        pol_t = SplittingPolicy(as_thresholds(dict(th)), policy.workload)
        m = split_counts(table, pol_t.thresholds).astype("float64")
        m2 = m * m
        wl = policy.workload
        for rho in base_rhos:
            scale = rho / base_total
            losses = (wl.flat_rho + wl.split_rho * m2) * scale if not any(
                q.filter is not None for q in wl.queries) else pol_t(table) * scale
            fam_med: dict[str, list[np.ndarray]] = {}
            for i, s in enumerate(sts):
                q = s.query
                if q.kind == "avg":
                    continue
                k = keep[id(s)]
                if not k.any():
                    continue
                sens = _cell_sensitivity(q, pol_t, s.keys)[k]
                sig = sens / math.sqrt(2.0 * q.rho * scale)
                if q.kind == "sum" and not q.split:
                    truth = raw[id(s)][k]
                    bias = s.total[k] - truth  # type: ignore[index]
                    med = are_quantile(bias, sig, truth, 0.5)
                    qre = are_quantile(bias, sig, truth, gamma)
                else:
                    truth = s.true_answer()[k]
                    med = median_are(sig, truth)
                    qre = query_rel_err(sig, truth, gamma)
                fam = _family(q)
                fam_med.setdefault(fam, []).append(med)
                err_frames.append(pd.DataFrame({"setting": lab, "base_rho": rho, "query": f"{i + 1}. {q.name()}",
                                                "family": fam, "level": ", ".join(q.group_by) or "all",
                                                "median_are": med, "query_rel_err": qre}))
            row = {"setting": lab, "base_rho": rho, "share_split": float(np.mean(m > 1)),
                   "share_above_base": float(np.mean(losses > rho * (1 + 1e-12))),
                   "loss_p99": float(np.quantile(losses, 0.99)), "loss_max": float(losses.max())}
            for fam, meds in fam_med.items():
                row[f"median ARE {fam}"] = float(np.median(np.concatenate(meds)))
            loss_rows.append(row)
    errors = pd.concat(err_frames, ignore_index=True) if err_frames else pd.DataFrame()
    return errors, pd.DataFrame(loss_rows)


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

    def describe(self) -> str:
        fams = ", ".join(f"{f}: ρ = {r:.4g}" for f, r in self.rho_by_family.items())
        return (f"For {self.share:.0%} of the queries within {self.target:.0%} relative error with probability "
                f"{self.gamma:.0%}: {fams}; base loss {self.policy.workload.total_rho:.4g}ρ.")


def solve_budget(table: pd.DataFrame, policy: SplittingPolicy, *, target: float, gamma: float = 0.95,
                 share: float = 0.95, min_count: int = 0, stats_: list[QueryStats] | None = None) -> BudgetSolution:
    """Smallest per-query budgets so that a ``share`` of each family's cells has QueryRelErr(γ) ≤ ``target``.

    For an unbiased Gaussian answer QueryRelErr(γ) = z·Δ/(√(2ρ)·|S|) ≤ t ⇔ ρ ≥ (z·Δ/(t·|S|))²/2;
    the family's budget is the ``share``-quantile of its cells' requirements, and every query of
    the family gets it (each query must meet the goal on its own cells). Top-coded sums are biased: their
    requirement is infinite where the bias alone exceeds the target (reported as such).
    Returns the implied policy (the same thresholds and workload with the new budgets).
    """
    if not (target > 0):
        raise ParameterError("The relative-error target must be positive.")
    if not (0 < share <= 1):
        raise ParameterError("The share of queries must be in (0, 1].")
    z = _z(gamma)
    sts = workload_stats(table, policy) if stats_ is None else stats_
    need: dict[str, list[np.ndarray]] = {}
    for s in sts:
        q = s.query
        if q.kind == "avg":
            continue
        k = s.count >= max(int(min_count), 1)
        if not k.any():
            continue
        truth = np.abs(s.true_answer()[k]) if not (q.kind == "sum" and not q.split) else np.abs(_raw_totals(table, s)[k])
        sens = s.sens[k]
        with np.errstate(divide="ignore"):
            r = np.where(truth > 0, 0.5 * (z * sens / (target * truth)) ** 2, np.inf)
        if q.kind == "sum" and not q.split:
            bias = np.abs(s.total[k] - truth)  # type: ignore[index]
            r = np.where(bias >= target * truth, np.inf, 0.5 * (z * sens / np.maximum(target * truth - bias, 1e-300)) ** 2)
        need.setdefault(_family(q), []).append(r)
    rho_fam = {f: float(np.quantile(np.concatenate(v), share, method="higher")) for f, v in need.items()}
    new_q = []
    for q in policy.workload.queries:
        f = _family(q)
        if f in rho_fam and math.isfinite(rho_fam[f]):
            # every query of the family must meet the goal by itself: give each the family's need
            new_q.append(replace(q, rho=rho_fam[f]))
        else:
            new_q.append(q)
    pol = SplittingPolicy(policy.thresholds, Workload(tuple(new_q), policy.workload.partition_rho,
                                                      policy.workload.joint))
    return BudgetSolution(target, gamma, share, rho_fam, pol)


def largest_thresholds(table: pd.DataFrame, policy: SplittingPolicy, *, target: float, gamma: float = 0.95,
                       share: float = 0.95, min_count: int = 0) -> dict[str, float]:
    """At the workload's current budgets, the largest threshold T(a) per measure such that a ``share``
    of the SUM cells on split data meets QueryRelErr(γ) ≤ ``target``: T ≤ t·|S|·√(2ρ)/z."""
    if policy.thresholds.group_col is not None:
        raise PolicyError("Largest thresholds are solved for a single row of thresholds.")
    z = _z(gamma)
    sts = workload_stats(table, policy)
    caps: dict[str, list[np.ndarray]] = {}
    for s in sts:
        q = s.query
        if q.kind != "sum" or not q.split:
            continue
        k = s.count >= max(int(min_count), 1)
        truth = np.abs(s.true_answer()[k])
        caps.setdefault(q.measure, []).append(target * truth * math.sqrt(2.0 * q.rho) / z)  # type: ignore[arg-type]
    return {a: float(np.quantile(np.concatenate(v), 1.0 - share, method="lower")) for a, v in caps.items() if v}


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
