"""The personalized DP paper's synthetic experiments (Sec. V-A, Table I): count and median RMSE over runs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Literal

import numpy as np
import pandas as pd

from ...core.errors import ParameterError
from .mechanisms import PDPMechanism, paper_mechanisms
from .query import PersonalizedQuery
from .spec import TierConfig, generate_tiers


@dataclass(frozen=True)
class ExperimentConfig:
    """Table I defaults: count on n = 1,000 bits of density δ = 0.15; median on n = 1,001
    values ~ N(μ = 500, σ = 200) rounded and clipped to [1, 1000]; tiers f_C = 0.54,
    f_M = 0.37, ε_C = 0.01, ε_M = 0.2, ε_L = 1. Each run draws a new dataset and a new
    specification (bits are i.i.d. Bernoulli(δ): the paper does not say whether the
    fraction is exact)."""

    n_count: int = 1000
    n_median: int = 1001
    density: float = 0.15
    mu: float = 500.0
    sigma: float = 200.0
    lo: int = 1
    hi: int = 1000
    tiers: TierConfig = field(default_factory=TierConfig)
    median_score: str = "rank"


def _paper_run(task: str, cfg: ExperimentConfig, mechs: dict[str, PDPMechanism],
               rng: np.random.Generator) -> dict[str, float]:
    if task == "count":
        n = cfg.n_count
        vals = (rng.random(n) < cfg.density).astype(float)
        query = PersonalizedQuery("count")
        truth = float(vals.sum())
    else:
        n = cfg.n_median
        vals = np.clip(np.rint(rng.normal(cfg.mu, cfg.sigma, n)), cfg.lo, cfg.hi)
        query = PersonalizedQuery("median", column="x", lo=cfg.lo, hi=cfg.hi, median_score=cfg.median_score,
                                  integer=True)
        truth = float(np.sort(vals)[n // 2])
    spec = generate_tiers(n, cfg.tiers, rng=rng)
    out = {}
    for name, m in mechs.items():
        out[name] = m.answer(vals, spec.eps, query, spec, rng=rng).estimate - truth
    return out


def paper_experiment(task: Literal["count", "median"], *, runs: int = 1000, rng: np.random.Generator,
                     config: ExperimentConfig | None = None,
                     progress: Callable[[float], None] | None = None) -> pd.DataFrame:
    """RMSE of M, T, S, S-avg, PE (and Alag for count) over ``runs`` runs (Sec. V-A protocol).

    Returns one row per mechanism with RMSE, a 95% interval (delta method on the MSE),
    the mean error (bias) and the neighbour notion.
    """
    if task not in ("count", "median"):
        raise ParameterError("The paper's synthetic experiments are 'count' and 'median'.")
    cfg = config or ExperimentConfig()
    mechs = paper_mechanisms(task)
    errs: dict[str, list[float]] = {k: [] for k in mechs}
    for i in range(int(runs)):
        for k, e in _paper_run(task, cfg, mechs, rng).items():
            errs[k].append(e)
        if progress is not None and (i + 1) % max(1, runs // 50) == 0:
            progress((i + 1) / runs)
    rows = []
    for k, errs_k in errs.items():
        a = np.asarray(errs_k)
        sq = a ** 2
        mse = float(sq.mean())
        half = 1.96 * float(sq.std(ddof=1)) / math.sqrt(a.size) if a.size > 1 else float("nan")
        rows.append({"mechanism": k, "rmse": math.sqrt(mse), "ci_low": math.sqrt(max(mse - half, 0.0)),
                     "ci_high": math.sqrt(mse + half), "bias": float(a.mean()),
                     "neighbours": mechs[k].neighbours.name, "runs": a.size})
    return pd.DataFrame(rows)
