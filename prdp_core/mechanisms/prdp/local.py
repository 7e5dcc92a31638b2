"""Per-record local DP (PrLDP, Sec. 7 of the general framework paper).

There is no trusted curator: every party randomises its own record before sending it.
E-PrLDP (Def. 7.2) compares a party's report with the report of a dummy record ⊥ (which
belongs to no domain and has value 0): for every output set y,
e^{−E(r)}·P[M(⊥) ∈ y] ≤ P[M(r) ∈ y] ≤ e^{E(r)}·P[M(⊥) ∈ y].

* :func:`randomise` — Algorithm 3 (PrLDP count, randomiser): a party sends, for every
  domain i = 1..L, 1[r ∈ X_i] + Laplace(1/(2^{i−1}ε̌)). Its report differs from ⊥'s in
  coordinate i(r) only, so the party pays 2^{i−1}ε̌ ≤ E(r) (parallel composition).
* :func:`analyse` — Algorithm 4 (analyser): per-domain totals, thresholds
  T_i = √(8n)·ln(L/β)/(2^{i−1}ε̌), ℓ = first domain reaching its threshold (ℓ = L if none),
  answer = Σ_{i≥ℓ} totals, ε_τ = 2^{ℓ−1}ε̌. ``threshold="bernstein"`` uses the tighter
  √(8n·ln(2L/β))/(2^{i−1}ε̌) with the same guarantee (:func:`local_thresholds`); it is the
  one that reproduces the paper's Appendix B figure.
* :func:`count` — Algorithms 3 + 4 on a whole table.
* :func:`framework` — Algorithm 5 (general PrLDP): round I runs Algorithms 3–4 with E/2 and
  β/2; in round II parties with E(r) ≥ ε_τ run an ε_τ/2-LDP protocol on their record and
  the others answer as ⊥. Built in: ``count`` (1 + Laplace(2/ε_τ)) and ``sum`` (min(v, τ) +
  Laplace(2τ/ε_τ) with τ = sup{v ≤ U : E(v) ≥ ε_τ}, the largest value a kept record can
  have — public once ε_τ is, and never clipping a kept record when E decreases with v).
  A party pays 2^{i−2}ε̌ in round I and ε_τ/2 in round II if kept: ≤ E(r).
* :func:`naive` — every party randomises at the global minimum ε̌.

Secure mode (``secure=True`` or a ``sampler``; :mod:`prdp_core.core.secure`): every party's
randomiser draws exact discrete Laplace noise from OpenDP with the same scales — Algorithm 3's
report is the integer vector 1[r ∈ X_i] + K_i, K_i ~ DLap(1/(2^{i−1}ε̌)) (:func:`secure_randomise`);
round II sends u(min(v, τ)) + DLap calibrated to ⌈τ/g⌉ grid units at ε_τ/2 on the grid g of τ
(counts: 1 + DLap(2/ε_τ)). For integer inputs and a unit change, DLap(t) gives exactly the
ε = 1/t of the continuous Laplace (OpenDP's map certifies each call), so a party pays what it
pays in a seeded run; the analyser adds the integer reports exactly and the answer is on the grid.
Secure runs draw each party's report (n·L draws for Algorithms 3–4: slower than the seeded
sampling of the totals below, but the protocol as deployed).

The analyser only uses the sum of the parties' reports per domain. Runs of the whole
protocol sample these sums directly: a sum of n independent Laplace(b) variables equals
in distribution Gamma(n, b) − Gamma(n, b) (Laplace = difference of two exponentials), so
the totals have exactly the distribution of summing n simulated reports, at O(L) cost.
:func:`randomise` produces the individual reports when they are to be shown.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd

from ...core.domains import DomainPartition
from ...core.errors import ParameterError
from ...core.neighbours import LocalDummy
from ...core.noise_source import Noise, resolve
from ...core.release import Release
from ...core.secure import SecureSampler, exact_cell_sums, grid_for, to_units
from .budget import BudgetFunction
from .plans import CountPlan
from .queries import FrameworkQuery, _query_input, as_query
from .selection import Selection, _check_beta, _check_rng, _entry, _eps_array, _table_of, _truth_cols

ThresholdRule = Literal["paper", "bernstein"]

#: Neighbour notion of every PrLDP release: one party's report against the dummy record ⊥ (Def. 7.2).
LOCAL_NEIGHBOURS = LocalDummy()


def laplace_sum(n: int | np.ndarray, scale: np.ndarray | float, *, rng: np.random.Generator,
                size: tuple[int, ...] | int | None = None) -> np.ndarray:
    """Sum of ``n`` independent Laplace(``scale``) variables, sampled exactly as
    Gamma(n, scale) − Gamma(n, scale)."""
    nn = np.asarray(n, dtype=float)
    sc = np.asarray(scale, dtype=float)
    return rng.gamma(nn, sc, size) - rng.gamma(nn, sc, size)


# ---------------------------------------------------------------------------
# Algorithms 3 and 4
# ---------------------------------------------------------------------------


def randomise(values_eps: Any, *, eps_min: float, eps_max: float, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 3: every party's report, an (n, L) array of 1[r ∈ X_i] + Laplace(1/(2^{i−1}ε̌)).

    ``values_eps`` are the parties' own budgets E(r) (each party knows only its own). A ⊥
    party (no record) sends Laplace noise only.
    """
    rng = _check_rng(rng)
    dp = DomainPartition(float(eps_min), float(eps_max))
    e = _eps_array(values_eps, dp.eps_min, dp.eps_max)
    idx = dp.index(e)
    rep = rng.laplace(0.0, 1.0, size=(e.size, dp.L)) / dp.lo[None, :]
    rep[np.arange(e.size), idx - 1] += 1.0
    return rep


def secure_randomise(values_eps: Any, *, eps_min: float, eps_max: float, sampler: SecureSampler,
                     share: float = 1.0) -> np.ndarray:
    """Algorithm 3 with exact noise: every party's integer report 1[r ∈ X_i] + DLap(1/(s·2^{i−1}ε̌)),
    an (n, L) int64 array (s = ``share``: ½ in round I of Algorithm 5).

    Coordinate i is a unit-sensitivity integer against ⊥ with discrete Laplace of scale 1/(s·2^{i−1}ε̌):
    s·2^{i−1}ε̌-DP exactly (OpenDP's map certifies it before the draw), so a party of domain i pays
    s·2^{i−1}ε̌ ≤ E(r), as in the seeded randomiser.
    """
    dp = DomainPartition(float(eps_min), float(eps_max))
    e = _eps_array(values_eps, dp.eps_min, dp.eps_max)
    idx = dp.index(e)
    rep = np.empty((e.size, dp.L), dtype=np.int64)
    for i in range(dp.L):  # one scale per domain; each party's coordinate drawn on its own
        member = (idx == i + 1).astype(np.int64)
        rep[:, i] = sampler.laplace_answers(member, 1.0, 1.0, float(share * dp.lo[i])).units
    return rep


def _secure_totals(units: np.ndarray, grid: float, sensitivity: float, eps: float, sampler: SecureSampler) -> float:
    """Σ over the parties of u_r + DLap (ε-DP per party against ⊥ for |u_r| ≤ ⌈Δ/g⌉), added exactly
    in integers and returned in value units (a multiple of the grid)."""
    out = sampler.laplace_answers(units, grid, sensitivity, eps).units
    return float(exact_cell_sums(np.zeros(out.size, dtype=np.int64), out, 1)[0]) * grid


def analyse(reports: np.ndarray, *, eps_min: float, eps_max: float, beta: float,
            threshold: ThresholdRule = "paper") -> dict[str, Any]:
    """Algorithm 4: aggregate the (n, L) reports; returns ε_τ, ℓ, the estimate and the totals."""
    dp = DomainPartition(float(eps_min), float(eps_max))
    r = np.asarray(reports, dtype=float)
    if r.ndim != 2 or r.shape[1] != dp.L:
        raise ParameterError(f"Reports must be an (n, {dp.L}) array, one column per domain.")
    b = _check_beta(beta)
    totals = r.sum(axis=0)
    th = local_thresholds(r.shape[0], dp.lo, b, threshold)
    ok = totals >= th
    ell = int(np.argmax(ok)) + 1 if ok.any() else dp.L
    return {"eps_tau": float(dp.lo[ell - 1]), "ell": ell, "estimate": float(totals[ell - 1:].sum()),
            "totals": totals, "thresholds": th, "passed": bool(ok.any())}


def local_thresholds(n: int, lo: np.ndarray, beta: float, rule: ThresholdRule = "paper") -> np.ndarray:
    """Thresholds of Algorithm 4 for n parties and domain budgets ``lo``.

    ``"paper"``: T_i = √(8n)·ln(L/β)/lo_i as printed (Sec. 7.2). ``"bernstein"``: T_i =
    √(8n·ln(2L/β))/lo_i — the sub-exponential tail of a sum of n Laplace(b) variables,
    P(|S| ≥ t) ≤ 2·exp(−t²/(8nb²)) for t ≤ 2√2·n·b, gives the same 1 − β guarantee with a
    smaller threshold (used where that condition holds; the paper's value otherwise).
    """
    L = lo.size
    nn = max(int(n), 1)
    paper = math.sqrt(8 * nn) * math.log(L / beta) / lo
    if rule == "paper":
        return paper
    if rule != "bernstein":
        raise ParameterError(f"Unknown threshold rule '{rule}'.", hint="Use 'paper' or 'bernstein'.")
    t = math.sqrt(8 * nn * math.log(2 * L / beta))
    return np.where(t <= 2 * math.sqrt(2) * nn, t / lo, paper)


def _select_local(true: np.ndarray, n: int, lo: np.ndarray, beta: float, rng: np.random.Generator,
                  trials: int, rule: ThresholdRule = "paper") -> Selection:
    """Algorithm 4's rule on totals sampled exactly (n parties' Laplace(1/lo) noise per domain)."""
    L = lo.size
    noise = laplace_sum(n, 1.0 / lo, rng=rng, size=(trials, L))
    totals = true[None, :] + noise
    th = local_thresholds(n, lo, beta, rule)
    ok = totals >= th[None, :]
    passed = ok.any(axis=1)
    ell = np.where(passed, np.argmax(ok, axis=1) + 1, L)
    return Selection(totals, th, ell.astype(int), passed)


def _secure_select(values_eps: Any, n: int, dp: DomainPartition, beta: float, rule: ThresholdRule,
                   sampler: SecureSampler, share: float = 1.0) -> Selection:
    """Algorithm 4's rule on the exact sum of the parties' secure reports (:func:`secure_randomise`)."""
    rep = secure_randomise(values_eps, eps_min=dp.eps_min, eps_max=dp.eps_max, sampler=sampler, share=share)
    totals = exact_cell_sums(np.tile(np.arange(dp.L), rep.shape[0]), rep.ravel(), dp.L).astype(float)
    th = local_thresholds(n, dp.lo * share, beta, rule)
    ok = totals >= th
    passed = bool(ok.any())
    ell = int(np.argmax(ok)) + 1 if passed else dp.L
    return Selection(totals[None, :], th, np.array([ell]), np.array([passed]))


def count(values_eps: Any, *, eps_min: float, eps_max: float, beta: float, rng: np.random.Generator | None = None,
          threshold: ThresholdRule = "paper", reveal: bool = False, seed: int | None = None, secure: bool = False,
          sampler: SecureSampler | None = None, noise: Noise | None = None) -> Release:
    """Algorithms 3 + 4 (PrLDP count): the number of parties with a record, under E-PrLDP.

    ``values_eps``: each party's budget E(r); ``eps_min``/``eps_max``: ε̌, ε̂ (public);
    ``beta``: failure rate (Thm 7.3: with probability ≥ 1 − β, ε_τ ≥ ε_min(D)/2 and the error is
    O(√n·log(log(ε̂/ε̌)/β)/ε_min(D))); ``threshold``: see :func:`local_thresholds`. A party of
    domain i pays 2^{i−1}ε̌ ≤ E(r) whatever the threshold. ``secure``, ``sampler``: every party's
    report drawn with exact discrete Laplace noise (:func:`secure_randomise`), no seed.
    ``noise``: the noise source (``Noise.teaching(seed)`` or ``Noise.secure()``), of which ``rng``/``seed``/
    ``secure``/``sampler`` are the legacy spelling.
    """
    plan = CountPlan(eps_min, eps_max, beta, "local")  # the public parameters: each party's loss before any noise
    b = plan.beta
    smp, rng, seed = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler).parts()
    dp = plan.domains
    e = _eps_array(values_eps, dp.eps_min, dp.eps_max)
    idx = dp.index(e)  # = plan.domain_index(values_eps)
    counts = np.bincount(idx, minlength=dp.L + 1)[1:].astype(float)
    if smp is None:
        sel = _select_local(counts, e.size, dp.lo, b, rng, 1, threshold)  # type: ignore[arg-type]  # rng is set when there is no exact sampler (NoiseSource.parts)
    else:
        sel = _secure_select(e, e.size, dp, b, threshold, smp)
    ell, est = int(sel.ell[0]), float(sel.retained_sum()[0])
    eps_tau = float(dp.lo[ell - 1])
    row: dict[str, Any] = {"query": "count", "estimate": est, "eps_tau": eps_tau, "ell": ell}
    if reveal:
        row.update(_truth_cols(est, float(e.size)))
    loss = plan.domain_loss(idx)
    params: dict[str, Any] = {"eps_min": dp.eps_min, "eps_max": dp.eps_max, "beta": b, "L": dp.L,
                              "model": "local", "threshold": threshold}
    if smp is not None:
        params["secure"] = smp.describe()
    extras = {"eps_tau": eps_tau, "ell": ell, "passed": bool(sel.passed[0]), "L": dp.L,
              "noisy_counts": sel.noisy[0].copy(), "thresholds": sel.thresholds,
              "private_dropped": int(counts[: ell - 1].sum()), "private_domain_counts": counts.astype(int)}
    sec = smp is not None
    return Release(mechanism="prldp.count", answers=pd.DataFrame([row]), measure="eps", loss=loss,
                   entries=(_entry("PrLDP count (Algorithms 3–4)", "prldp.count", loss,
                                   "PrLDP count: 2^(i−1)·ε̌ for a party of domain i", dp.eps_max, params, seed,
                                   sec, neighbours=LOCAL_NEIGHBOURS),),
                   params=params, seed=seed, secure=sec, requested=np.asarray(values_eps, dtype=float).ravel(),
                   truth_included=reveal, extras=extras)


# ---------------------------------------------------------------------------
# Algorithm 5: the general PrLDP framework
# ---------------------------------------------------------------------------


class _LocalData:
    """Per-party budgets, domains, values (for sums) and counts, computed once."""

    def __init__(self, table: Any, budget: BudgetFunction, query: "str | FrameworkQuery") -> None:
        if not isinstance(budget, BudgetFunction):
            raise ParameterError("budget must be a BudgetFunction (see prdp_core.mechanisms.prdp.parse_budget).")
        t = _table_of(table)
        q = as_query(query)
        if q.kind not in ("count", "sum"):
            raise ParameterError(f"The local model answers count and sum queries (not {q.kind}).",
                                 hint="No LDP protocol for this query is built in (Sec. 7.3).")
        if q.kind == "sum" and q.column is None:
            col = budget.value_column
            if col is None:
                raise ParameterError("Say which column to sum: the budget does not name one measure.")
            q = FrameworkQuery("sum", col)
        self.budget, self.query = budget, q
        self.eps = budget(t)
        self.dp = budget.domains()
        self.idx = self.dp.index(self.eps)
        self.n = self.eps.size
        self.counts = np.bincount(self.idx, minlength=self.dp.L + 1)[1:].astype(float)
        self.v = _query_input(t, q) if q.kind == "sum" else None
        self.truth = float(self.v.sum()) if self.v is not None else float(self.n)

    def clip_bound(self, eps_tau: float) -> float:
        """τ = sup{v ≤ U : E(v) ≥ ε_τ} (U when unknown)."""
        up = float(self.budget.upper_values(np.array([eps_tau * (1 - 1e-12)]))[0])
        return self.budget.U if not math.isfinite(up) or up <= 0 else min(up, self.budget.U)

    def secure_round_two(self, eps_tau: float, sampler: SecureSampler) -> tuple[float, float]:
        """Round II with exact noise: each party sends u_r + DLap at ε_τ/2 for |u_r| ≤ ⌈τ/g⌉ — u_r =
        round(min(v, τ)/g) on the grid g of τ (sum) or 1 (count) if kept, 0 for ⊥. Returns (answer, τ)."""
        kept = self.eps >= eps_tau * (1 - 1e-12)
        if self.v is None:
            return _secure_totals(kept.astype(np.int64), 1.0, 1.0, eps_tau / 2.0, sampler), 1.0
        tau = self.clip_bound(eps_tau)
        g = grid_for(tau, sampler.bits)
        units = np.where(kept, to_units(np.minimum(self.v, tau), g), 0)
        return _secure_totals(units, g, tau, eps_tau / 2.0, sampler), tau

    def round_two(self, eps_tau: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Round II for each trial: kept parties (E(r) ≥ ε_τ) send their clipped value, others ⊥."""
        out = np.empty(eps_tau.size)
        taus = np.empty(eps_tau.size)
        order = np.sort(self.eps)
        for et in np.unique(eps_tau):
            rows = np.flatnonzero(eps_tau == et)
            keep_n = order.size - np.searchsorted(order, et * (1 - 1e-12), side="left")
            if self.v is None:
                tau, total = 1.0, float(keep_n)
            else:
                tau = self.clip_bound(float(et))
                kept = self.eps >= et * (1 - 1e-12)
                total = float(np.minimum(self.v[kept], tau).sum())
            noise = laplace_sum(self.n, 2.0 * tau / et, rng=rng, size=rows.size)
            out[rows] = total + noise
            taus[rows] = tau
        return out, taus


def framework_trials(data: _LocalData, *, beta: float, rng: np.random.Generator, trials: int = 1,
                     threshold: ThresholdRule = "paper") -> tuple[np.ndarray, Selection, np.ndarray]:
    """Algorithm 5 repeated ``trials`` times (vectorised). Returns (estimates, round-I selection, τ)."""
    b = _check_beta(beta)
    lo_half = data.dp.lo / 2.0
    sel = _select_local(data.counts, data.n, lo_half, b / 2.0, rng, int(trials), threshold)
    eps_tau = data.dp.lo[sel.ell - 1]
    est, taus = data.round_two(eps_tau, rng)
    return est, sel, taus


def framework(table: Any, budget: BudgetFunction, query: "str | FrameworkQuery", *, beta: float,
              rng: np.random.Generator | None = None, threshold: ThresholdRule = "paper", reveal: bool = False,
              seed: int | None = None, secure: bool = False, sampler: SecureSampler | None = None,
              noise: Noise | None = None) -> Release:
    """Algorithm 5 (general PrLDP framework) for ``count`` and ``sum`` queries.

    Round I: Algorithms 3–4 with E' = E/2 and β/2 give ε_τ = 2^{ℓ−1}ε̌. Round II: parties with
    E(r) ≥ ε_τ send min(v, τ) + Laplace(2τ/ε_τ) (sum) or 1 + Laplace(2/ε_τ) (count); the others
    send the same for ⊥ (value 0). A party of domain i pays 2^{i−2}ε̌ + (ε_τ/2 if kept) ≤ E(r).
    ``secure``, ``sampler``: both rounds with exact discrete Laplace (:func:`secure_randomise`,
    :meth:`_LocalData.secure_round_two`), same per-party losses, no seed.
    ``noise``: the noise source (``Noise.teaching(seed)`` or ``Noise.secure()``), of which ``rng``/``seed``/
    ``secure``/``sampler`` are the legacy spelling.
    """
    smp, rng, seed = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler).parts()
    b = _check_beta(beta)
    d = _LocalData(table, budget, query)
    if smp is None:
        est_a, sel, taus = framework_trials(d, beta=b, rng=rng, threshold=threshold)  # type: ignore[arg-type]  # rng is set when there is no exact sampler (NoiseSource.parts)
    else:
        sel = _secure_select(d.eps, d.n, d.dp, b / 2.0, threshold, smp, share=0.5)
        est1, tau1 = d.secure_round_two(float(d.dp.lo[int(sel.ell[0]) - 1]), smp)
        est_a, taus = np.array([est1]), np.array([tau1])
    ell, est = int(sel.ell[0]), float(est_a[0])
    eps_tau = float(d.dp.lo[ell - 1])
    kept = d.eps >= eps_tau * (1 - 1e-12)
    loss = d.dp.lo[d.idx - 1] / 2.0 + np.where(kept, eps_tau / 2.0, 0.0)
    row: dict[str, Any] = {"query": d.query.label, "estimate": est, "eps_tau": eps_tau, "ell": ell}
    if reveal:
        row.update(_truth_cols(est, d.truth))
    params: dict[str, Any] = {"query": d.query.label, "beta": b, "budget": budget.to_dict(), "L": d.dp.L,
                              "model": "local", "threshold": threshold}
    if smp is not None:
        params["secure"] = smp.describe()
    extras = {"eps_tau": eps_tau, "ell": ell, "eps_M": eps_tau / 2.0, "passed": bool(sel.passed[0]), "L": d.dp.L,
              "noisy_counts": sel.noisy[0].copy(), "thresholds": sel.thresholds, "tau": float(taus[0]),
              "private_dropped": int((~kept).sum()), "private_domain_counts": d.counts.astype(int)}
    name = f"prldp.framework.{d.query.kind}"
    return Release(mechanism=name, answers=pd.DataFrame([row]), measure="eps", loss=loss,
                   entries=(_entry(f"PrLDP framework: {d.query.label}", name, loss,
                                   "PrLDP framework: 2^(i−2)·ε̌ + ε_τ/2 for kept parties", d.dp.eps_max, params,
                                   seed, smp is not None, neighbours=LOCAL_NEIGHBOURS),),
                   params=params, seed=seed, secure=smp is not None, requested=d.eps, truth_included=reveal,
                   extras=extras)


def naive_trials(data: _LocalData, *, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
    """Every party randomises at ε̌: 1 + Laplace(1/ε̌) or min(v, U) + Laplace(U/ε̌)."""
    e = data.budget.eps_min
    if data.v is None:
        return data.n + laplace_sum(data.n, 1.0 / e, rng=rng, size=int(trials))
    U = data.budget.U
    return float(np.minimum(data.v, U).sum()) + laplace_sum(data.n, U / e, rng=rng, size=int(trials))


def secure_naive(data: _LocalData, sampler: SecureSampler) -> float:
    """Every party sends 1 + DLap(1/ε̌), or u(min(v, U)) + DLap at ε̌ on the grid of U (exact, summed exactly)."""
    e = float(data.budget.eps_min)
    if data.v is None:
        return _secure_totals(np.ones(data.n, dtype=np.int64), 1.0, 1.0, e, sampler)
    U = float(data.budget.U)
    g = grid_for(U, sampler.bits)
    return _secure_totals(to_units(np.minimum(data.v, U), g), g, U, e, sampler)


def naive(table: Any, budget: BudgetFunction, query: "str | FrameworkQuery", *, beta: float,
          rng: np.random.Generator | None = None, reveal: bool = False, seed: int | None = None,
          secure: bool = False, sampler: SecureSampler | None = None, noise: Noise | None = None) -> Release:
    """Local baseline at the global minimum ε̌ for every party (E-PrLDP since ε̌ ≤ E(r)).
    ``secure``, ``sampler``: exact discrete Laplace reports (:func:`secure_naive`), no seed.
    ``noise``: the noise source (``Noise.teaching(seed)`` or ``Noise.secure()``), of which ``rng``/``seed``/
    ``secure``/``sampler`` are the legacy spelling."""
    smp, rng, seed = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler).parts()
    b = _check_beta(beta)
    d = _LocalData(table, budget, query)
    est = float(naive_trials(d, rng=rng)[0]) if smp is None else secure_naive(d, smp)  # type: ignore[arg-type]  # rng is set when there is no exact sampler (NoiseSource.parts)
    loss = np.full(d.n, budget.eps_min)
    row: dict[str, Any] = {"query": d.query.label, "estimate": est, "eps_tau": budget.eps_min, "ell": 1}
    if reveal:
        row.update(_truth_cols(est, d.truth))
    params: dict[str, Any] = {"query": d.query.label, "beta": b, "budget": budget.to_dict(), "model": "local"}
    if smp is not None:
        params["secure"] = smp.describe()
    name = f"prldp.naive.{d.query.kind}"
    return Release(mechanism=name, answers=pd.DataFrame([row]), measure="eps", loss=loss,
                   entries=(_entry(f"Local naive ε̌: {d.query.label}", name, loss, "global minimum ε̌ for every party",
                                   budget.eps_min, params, seed, smp is not None, neighbours=LOCAL_NEIGHBOURS),),
                   params=params, seed=seed, secure=smp is not None, requested=d.eps, truth_included=reveal,
                   extras={"eps_M": budget.eps_min})


def simulate(table: Any, budget: BudgetFunction, query: "str | FrameworkQuery",
             method: Literal["count", "framework", "naive"], *, beta: float, trials: int, rng: np.random.Generator,
             threshold: ThresholdRule = "paper") -> np.ndarray:
    """Relative errors of ``trials`` runs of a local mechanism (vectorised)."""
    rng = _check_rng(rng)
    b = _check_beta(beta)
    d = _LocalData(table, budget, query)
    if method == "count":
        if d.query.kind != "count":
            raise ParameterError("Algorithms 3–4 answer counts only.")
        est = _select_local(d.counts, d.n, d.dp.lo, b, rng, int(trials), threshold).retained_sum()
    elif method == "framework":
        est = framework_trials(d, beta=b, rng=rng, trials=trials, threshold=threshold)[0]
    elif method == "naive":
        est = naive_trials(d, rng=rng, trials=trials)
    else:
        raise ParameterError(f"Unknown method '{method}'.", hint="Use count, framework or naive.")
    return np.abs(est - d.truth) / abs(d.truth) if d.truth != 0 else np.abs(est - d.truth)
