"""The Sec. 5.2 extension of Algorithm 1 to sums: per-domain sums with per-domain Laplace noise.

Per-domain sums with noise Laplace(b_i), b_i = v̄_i / 2^{i−1}ε̌ where v̄_i bounds the values of
domain i (from the budget function, public); ℓ is selected by Algorithm 1's rule. Record r in
domain i pays 2^{i−1}ε̌ ≤ E(r).

Secure mode (:func:`secure_extension_selection`): domain i's clipped values are quantised record by
record on the grid g_i of v̄_i (:mod:`prdp_core.core.secure`), summed exactly, and get discrete Laplace
noise calibrated to ⌈v̄_i/g_i⌉ grid units at 2^{i−1}ε̌ (OpenDP's map certifies it); a record
pays u(v)/t_i ≤ 2^{i−1}ε̌, with u(v) its grid units and t_i the noise scale in grid units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ... import engines
from ...core.domains import DomainPartition
from ...core.errors import PolicyError
from ...core.noise_source import Noise, resolve
from ...core.release import Release
from ...core.secure import SecureSampler, exact_cell_sums, to_units
from .budget import BudgetFunction
from .queries import FrameworkQuery, _query_input
from .selection import Selection, _check_beta, _entry, _table_of, _truth_cols, select_domain

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
    idx: np.ndarray       # domain 1..L of each record
    clipped: np.ndarray   # min(v, v̄_i) per record (confidential)


def extension_stats(table: Any, budget: BudgetFunction, column: str | None = None) -> ExtensionStats:
    """Statistics of the sum extension: v̄_i = sup{v : E(v) > 2^{i−1}ε̌} (v̄_1 = U); values are
    clipped at v̄_i, so the noise b_i = v̄_i/2^{i−1}ε̌ gives every record ≤ 2^{i−1}ε̌ whatever E."""
    if engines.is_engine_data(table):
        raise PolicyError("The Sec. 5.2 sum extension clips each domain at its own bound: it is not available for "
                          "tables held by an engine yet.", hint="Use the framework (Algorithm 2), or a sample.")
    t = _table_of(table)
    q = FrameworkQuery("sum", column).resolved(budget)
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
    return ExtensionStats(sums, scales, v_bar, loss, float(v.sum()), idx, clipped)


def extension_trials(st: ExtensionStats, dp: DomainPartition, *, beta: float, rng: np.random.Generator,
                     trials: int = 1) -> tuple[np.ndarray, Selection]:
    """The Sec. 5.2 sum repeated ``trials`` times: thresholds b_i·ln(L/β), same rule as Algorithm 1."""
    b = _check_beta(beta)
    sc = np.where(st.scales > 0, st.scales, 1e-300)
    th = np.where(st.scales > 0, st.scales * math.log(dp.L / b), np.inf)  # a domain of zeros never passes
    sel = select_domain(st.sums, sc, th, rng=rng, trials=int(trials))
    return sel.retained_sum(), sel


def secure_extension_selection(st: ExtensionStats, dp: DomainPartition, beta: float, sampler: SecureSampler
                               ) -> tuple[Selection, np.ndarray, np.ndarray, np.ndarray]:
    """The Sec. 5.2 sum with exact noise: returns (selection, effective scales b_i in value units,
    grid steps g_i, per-record delivered loss).

    Domain i: units u(v) = round(min(v, v̄_i)/g_i) with g_i the grid of v̄_i, summed exactly, plus
    discrete Laplace at 2^{i−1}ε̌ for the integer sensitivity ⌈v̄_i/g_i⌉ (OpenDP certifies it). A
    domain whose bound v̄_i is 0 holds only zeros after clipping: its answer is 0 without noise
    (data-independent) and its threshold infinite, as in a seeded run. Thresholds b_i·ln(L/β) use
    the effective scales (at most 2^(−bits) above v̄_i/2^{i−1}ε̌).
    """
    L = dp.L
    g = np.ones(L)
    live = st.v_bar > 0
    for i in np.flatnonzero(live):
        g[i] = sampler.grid(float(st.v_bar[i]))
    units = to_units(st.clipped, g[st.idx - 1])  # each record on its own domain's grid
    totals = exact_cell_sums(st.idx - 1, units, L)
    noisy, scales, t_units = np.zeros(L), np.zeros(L), np.ones(L)
    for i in np.flatnonzero(live):
        a = sampler.laplace_answers(totals[i:i + 1], float(g[i]), float(st.v_bar[i]), float(dp.lo[i]))
        noisy[i], scales[i] = float(a.estimate[0]), float(a.scale[0])
        t_units[i] = scales[i] / g[i]
    th = np.where(live, scales * math.log(L / beta), np.inf)
    ok = noisy >= th
    passed = bool(ok.any())
    ell = int(np.argmax(ok)) + 1 if passed else L
    loss = np.where(live[st.idx - 1], np.abs(units) / t_units[st.idx - 1], 0.0)
    return Selection(noisy[None, :], th, np.array([ell]), np.array([passed])), scales, g, loss


def sum_extension(table: Any, budget: BudgetFunction, *, beta: float, rng: np.random.Generator | None = None,
                  column: str | None = None, reveal: bool = False, seed: int | None = None, secure: bool = False,
                  sampler: SecureSampler | None = None, noise: Noise | None = None) -> Release:
    """The Sec. 5.2 extension of Algorithm 1 to sums under E-PrDP (a comparison mechanism).

    Domain i's sum gets Laplace(b_i), b_i = v̄_i/(2^{i−1}ε̌); ℓ = the first domain whose noisy
    sum reaches b_i·ln(L/β). Accurate for E = α/v; for slowly decreasing E (log) v̄_ℓ can be
    ~Max(D)² and the error grows accordingly (Appendix A). Record r pays min(v, v̄_i)/b_i ≤
    2^{i−1}ε̌ ≤ E(r).

    ``secure``, ``sampler``: secure mode — exact discrete Laplace per domain on the grid of v̄_i
    (:func:`secure_extension_selection`), no seed; the estimate is a sum of grid multiples and each
    record's delivered loss u(v)/t_i ≤ 2^{i−1}ε̌ is read from the certified noise scale.
    ``noise``: the noise source (``Noise.teaching(seed)`` or ``Noise.secure()``), of which ``rng``/``seed``/
    ``secure``/``sampler`` are the legacy spelling.
    """
    smp, rng, seed = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler).parts()
    b = _check_beta(beta)
    st = extension_stats(table, budget, column)
    dp = budget.domains()
    scales, loss, grids = st.scales, st.loss, None
    if smp is None:
        est_a, sel = extension_trials(st, dp, beta=b, rng=rng)  # type: ignore[arg-type]  # rng is set when there is no exact sampler (NoiseSource.parts)
    else:
        sel, scales, grids, loss = secure_extension_selection(st, dp, b, smp)
        est_a = sel.retained_sum()
    ell, est = int(sel.ell[0]), float(est_a[0])
    eps_tau = float(dp.lo[ell - 1])
    t = _table_of(table)
    req = budget(t)
    row: dict[str, Any] = {"query": f"sum({column or budget.value_column})", "estimate": est, "eps_tau": eps_tau,
                           "ell": ell}
    if reveal:
        row.update(_truth_cols(est, st.truth))
    idx = dp.index(req)
    params: dict[str, Any] = {"query": row["query"], "beta": b, "budget": budget.to_dict(), "L": dp.L}
    extras: dict[str, Any] = {"eps_tau": eps_tau, "ell": ell, "passed": bool(sel.passed[0]), "L": dp.L,
                              "noisy_sums": sel.noisy[0].copy(), "thresholds": sel.thresholds, "scales": scales,
                              "value_bounds": st.v_bar, "private_dropped": int(np.sum(idx < ell)),
                              "private_domain_sums": st.sums}
    sec = smp is not None
    if sec:
        params["secure"] = smp.describe()
        extras["grids"] = grids
    return Release(mechanism="prdp.sum_extension", answers=pd.DataFrame([row]), measure="eps", loss=loss,
                   entries=(_entry("PrDP sum (Sec. 5.2 extension)", "prdp.sum_extension", loss,
                                   "PrDP sum extension: min(v, v̄_i)/b_i ≤ 2^(i−1)·ε̌", dp.eps_max, params, seed,
                                   sec),),
                   params=params, seed=seed, secure=sec, requested=req, truth_included=reveal, extras=extras)
