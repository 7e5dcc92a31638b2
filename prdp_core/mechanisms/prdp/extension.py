"""The Sec. 5.2 extension of Algorithm 1 to sums: per-domain sums with per-domain Laplace noise.

Per-domain sums with noise Laplace(b_i), b_i = v̄_i / 2^{i−1}ε̌ where v̄_i bounds the values of
domain i (from the budget function, public); ℓ is selected by Algorithm 1's rule. Record r in
domain i pays 2^{i−1}ε̌ ≤ E(r).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ... import engines
from ...errors import PolicyError
from ...release import Release
from .budget import BudgetFunction
from .domains import DomainPartition
from .queries import Query, _query_input
from .selection import Selection, _check_beta, _check_rng, _entry, _table_of, _truth_cols, select_domain

# ---------------------------------------------------------------------------
# Sec. 5.2: the sum extension of Algorithm 1
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ExtensionStats:
    """Per-domain clipped sums and noise scales of the Sec. 5.2 extension."""

    sums: np.ndarray      # Σ min(v, v̄_i) over the records of domain i
    scales: np.ndarray    # b_i = v̄_i / 2^{i−1}ε̌
    v_bar: np.ndarray     # v̄_i: bound on the values of domain i
    loss: np.ndarray      # per record: min(v, v̄_i) / b_i ≤ 2^{i−1}ε̌
    truth: float


def extension_stats(table: Any, budget: BudgetFunction, column: str | None = None) -> ExtensionStats:
    """Statistics of the sum extension: v̄_i = sup{v : E(v) > 2^{i−1}ε̌} (v̄_1 = U); values are
    clipped at v̄_i, so the noise b_i = v̄_i/2^{i−1}ε̌ gives every record ≤ 2^{i−1}ε̌ whatever E."""
    if engines.is_engine_data(table):
        raise PolicyError("The Sec. 5.2 sum extension clips each domain at its own bound: it is not available for "
                          "tables held by an engine yet.", hint="Use the framework (Algorithm 2), or a sample.")
    t = _table_of(table)
    q = Query("sum", column).resolved(budget)
    v = _query_input(t, q)
    eps = budget(t)
    dp = budget.domains()
    idx = dp.index(eps)
    lo = dp.lo
    v_bar = budget.upper_values(lo)
    v_bar[0] = budget.U
    v_bar = np.clip(v_bar, 0.0, budget.U)
    clipped = np.minimum(v, v_bar[idx - 1])
    sums = np.bincount(idx, weights=clipped, minlength=dp.L + 1)[1:]
    scales = v_bar / lo
    with np.errstate(invalid="ignore", divide="ignore"):
        loss = np.where(v_bar[idx - 1] > 0, clipped / np.where(scales[idx - 1] > 0, scales[idx - 1], 1.0), 0.0)
    return ExtensionStats(sums, scales, v_bar, loss, float(v.sum()))


def extension_trials(st: ExtensionStats, dp: DomainPartition, *, beta: float, rng: np.random.Generator,
                     trials: int = 1) -> tuple[np.ndarray, Selection]:
    """The Sec. 5.2 sum repeated ``trials`` times: thresholds b_i·ln(L/β), same rule as Algorithm 1."""
    b = _check_beta(beta)
    sc = np.where(st.scales > 0, st.scales, 1e-300)
    th = np.where(st.scales > 0, st.scales * math.log(dp.L / b), np.inf)  # a domain of zeros never passes
    sel = select_domain(st.sums, sc, th, rng=rng, trials=int(trials))
    return sel.retained_sum(), sel


def sum_extension(table: Any, budget: BudgetFunction, *, beta: float, rng: np.random.Generator,
                  column: str | None = None, reveal: bool = False, seed: int | None = None) -> Release:
    """The Sec. 5.2 extension of Algorithm 1 to sums under E-PrDP (a comparison mechanism).

    Domain i's sum gets Laplace(b_i), b_i = v̄_i/(2^{i−1}ε̌); ℓ = the first domain whose noisy
    sum reaches b_i·ln(L/β). Accurate for E = α/v; for slowly decreasing E (log) v̄_ℓ can be
    ~Max(D)² and the error grows accordingly (Appendix A). Record r pays min(v, v̄_i)/b_i ≤
    2^{i−1}ε̌ ≤ E(r).
    """
    rng = _check_rng(rng)
    b = _check_beta(beta)
    st = extension_stats(table, budget, column)
    dp = budget.domains()
    est_a, sel = extension_trials(st, dp, beta=b, rng=rng)
    ell, est = int(sel.ell[0]), float(est_a[0])
    eps_tau = float(dp.lo[ell - 1])
    t = _table_of(table)
    req = budget(t)
    row: dict[str, Any] = {"query": f"sum({column or budget.value_column})", "estimate": est, "eps_tau": eps_tau,
                           "ell": ell}
    if reveal:
        row.update(_truth_cols(est, st.truth))
    idx = dp.index(req)
    params = {"query": row["query"], "beta": b, "budget": budget.to_dict(), "L": dp.L}
    extras = {"eps_tau": eps_tau, "ell": ell, "passed": bool(sel.passed[0]), "L": dp.L,
              "noisy_sums": sel.noisy[0].copy(), "thresholds": sel.thresholds, "scales": st.scales,
              "value_bounds": st.v_bar, "private_dropped": int(np.sum(idx < ell)),
              "private_domain_sums": st.sums}
    return Release(mechanism="prdp.sum_extension", answers=pd.DataFrame([row]), measure="eps", loss=st.loss,
                   entries=(_entry("PrDP sum (Sec. 5.2 extension)", "prdp.sum_extension", st.loss,
                                   "PrDP sum extension: min(v, v̄_i)/b_i ≤ 2^(i−1)·ε̌", dp.eps_max, params, seed),),
                   params=params, seed=seed, requested=req, truth_included=reveal, extras=extras)
