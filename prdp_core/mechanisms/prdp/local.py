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

The analyser only uses the sum of the parties' reports per domain. Runs of the whole
protocol sample these sums directly: a sum of n independent Laplace(b) variables equals
in distribution Gamma(n, b) − Gamma(n, b) (Laplace = difference of two exponentials), so
the totals have exactly the distribution of summing n simulated reports, at O(L) cost.
:func:`randomise` produces the individual reports when they are to be shown.
"""

from __future__ import annotations

import math
from typing import Any, Literal

ThresholdRule = Literal["paper", "bernstein"]

import numpy as np
import pandas as pd

from ...errors import ParameterError
from ...release import Release
from .budget import BudgetFunction
from .domains import DomainPartition
from .queries import Query, _query_input, as_query
from .selection import Selection, _check_beta, _check_rng, _entry, _eps_array, _table_of, _truth_cols

#: Neighbour notion of every PrLDP release: one party's report against the dummy record ⊥ (Def. 7.2).
LOCAL_NEIGHBOURS = "local: a party's report vs the dummy ⊥ (PrLDP, Def. 7.2)"


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


def count(values_eps: Any, *, eps_min: float, eps_max: float, beta: float, rng: np.random.Generator,
          threshold: ThresholdRule = "paper", reveal: bool = False, seed: int | None = None) -> Release:
    """Algorithms 3 + 4 (PrLDP count): the number of parties with a record, under E-PrLDP.

    ``values_eps``: each party's budget E(r); ``eps_min``/``eps_max``: ε̌, ε̂ (public);
    ``beta``: failure rate (Thm 7.3: with probability ≥ 1 − β, ε_τ ≥ ε_min(D)/2 and the error is
    O(√n·log(log(ε̂/ε̌)/β)/ε_min(D))); ``threshold``: see :func:`local_thresholds`. A party of
    domain i pays 2^{i−1}ε̌ ≤ E(r) whatever the threshold.
    """
    b = _check_beta(beta)
    rng = _check_rng(rng)
    dp = DomainPartition(float(eps_min), float(eps_max))
    e = _eps_array(values_eps, dp.eps_min, dp.eps_max)
    idx = dp.index(e)
    counts = np.bincount(idx, minlength=dp.L + 1)[1:].astype(float)
    sel = _select_local(counts, e.size, dp.lo, b, rng, 1, threshold)
    ell, est = int(sel.ell[0]), float(sel.retained_sum()[0])
    eps_tau = float(dp.lo[ell - 1])
    row: dict[str, Any] = {"query": "count", "estimate": est, "eps_tau": eps_tau, "ell": ell}
    if reveal:
        row.update(_truth_cols(est, float(e.size)))
    loss = dp.lo[idx - 1]
    params = {"eps_min": dp.eps_min, "eps_max": dp.eps_max, "beta": b, "L": dp.L, "model": "local",
              "threshold": threshold}
    extras = {"eps_tau": eps_tau, "ell": ell, "passed": bool(sel.passed[0]), "L": dp.L,
              "noisy_counts": sel.noisy[0].copy(), "thresholds": sel.thresholds,
              "private_dropped": int(counts[: ell - 1].sum()), "private_domain_counts": counts.astype(int)}
    return Release(mechanism="prldp.count", answers=pd.DataFrame([row]), measure="eps", loss=loss,
                   entries=(_entry("PrLDP count (Algorithms 3–4)", "prldp.count", loss,
                                   "PrLDP count: 2^(i−1)·ε̌ for a party of domain i", dp.eps_max, params, seed,
                                   neighbours=LOCAL_NEIGHBOURS),),
                   params=params, seed=seed, requested=np.asarray(values_eps, dtype=float).ravel(),
                   truth_included=reveal, extras=extras)


# ---------------------------------------------------------------------------
# Algorithm 5: the general PrLDP framework
# ---------------------------------------------------------------------------


class _LocalData:
    """Per-party budgets, domains, values (for sums) and counts, computed once."""

    def __init__(self, table: Any, budget: BudgetFunction, query: "str | Query") -> None:
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
            q = Query("sum", col)
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


def framework(table: Any, budget: BudgetFunction, query: "str | Query", *, beta: float,
              rng: np.random.Generator, threshold: ThresholdRule = "paper", reveal: bool = False,
              seed: int | None = None) -> Release:
    """Algorithm 5 (general PrLDP framework) for ``count`` and ``sum`` queries.

    Round I: Algorithms 3–4 with E' = E/2 and β/2 give ε_τ = 2^{ℓ−1}ε̌. Round II: parties with
    E(r) ≥ ε_τ send min(v, τ) + Laplace(2τ/ε_τ) (sum) or 1 + Laplace(2/ε_τ) (count); the others
    send the same for ⊥ (value 0). A party of domain i pays 2^{i−2}ε̌ + (ε_τ/2 if kept) ≤ E(r).
    """
    rng = _check_rng(rng)
    b = _check_beta(beta)
    d = _LocalData(table, budget, query)
    est_a, sel, taus = framework_trials(d, beta=b, rng=rng, threshold=threshold)
    ell, est = int(sel.ell[0]), float(est_a[0])
    eps_tau = float(d.dp.lo[ell - 1])
    kept = d.eps >= eps_tau * (1 - 1e-12)
    loss = d.dp.lo[d.idx - 1] / 2.0 + np.where(kept, eps_tau / 2.0, 0.0)
    row: dict[str, Any] = {"query": d.query.label, "estimate": est, "eps_tau": eps_tau, "ell": ell}
    if reveal:
        row.update(_truth_cols(est, d.truth))
    params = {"query": d.query.label, "beta": b, "budget": budget.to_dict(), "L": d.dp.L, "model": "local",
              "threshold": threshold}
    extras = {"eps_tau": eps_tau, "ell": ell, "eps_M": eps_tau / 2.0, "passed": bool(sel.passed[0]), "L": d.dp.L,
              "noisy_counts": sel.noisy[0].copy(), "thresholds": sel.thresholds, "tau": float(taus[0]),
              "private_dropped": int((~kept).sum()), "private_domain_counts": d.counts.astype(int)}
    name = f"prldp.framework.{d.query.kind}"
    return Release(mechanism=name, answers=pd.DataFrame([row]), measure="eps", loss=loss,
                   entries=(_entry(f"PrLDP framework: {d.query.label}", name, loss,
                                   "PrLDP framework: 2^(i−2)·ε̌ + ε_τ/2 for kept parties", d.dp.eps_max, params,
                                   seed, neighbours=LOCAL_NEIGHBOURS),),
                   params=params, seed=seed, requested=d.eps, truth_included=reveal, extras=extras)


def naive_trials(data: _LocalData, *, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
    """Every party randomises at ε̌: 1 + Laplace(1/ε̌) or min(v, U) + Laplace(U/ε̌)."""
    e = data.budget.eps_min
    if data.v is None:
        return data.n + laplace_sum(data.n, 1.0 / e, rng=rng, size=int(trials))
    U = data.budget.U
    return float(np.minimum(data.v, U).sum()) + laplace_sum(data.n, U / e, rng=rng, size=int(trials))


def naive(table: Any, budget: BudgetFunction, query: "str | Query", *, beta: float, rng: np.random.Generator,
          reveal: bool = False, seed: int | None = None) -> Release:
    """Local baseline at the global minimum ε̌ for every party (E-PrLDP since ε̌ ≤ E(r))."""
    rng = _check_rng(rng)
    b = _check_beta(beta)
    d = _LocalData(table, budget, query)
    est = float(naive_trials(d, rng=rng)[0])
    loss = np.full(d.n, budget.eps_min)
    row: dict[str, Any] = {"query": d.query.label, "estimate": est, "eps_tau": budget.eps_min, "ell": 1}
    if reveal:
        row.update(_truth_cols(est, d.truth))
    params = {"query": d.query.label, "beta": b, "budget": budget.to_dict(), "model": "local"}
    name = f"prldp.naive.{d.query.kind}"
    return Release(mechanism=name, answers=pd.DataFrame([row]), measure="eps", loss=loss,
                   entries=(_entry(f"Local naive ε̌: {d.query.label}", name, loss, "global minimum ε̌ for every party",
                                   budget.eps_min, params, seed, neighbours=LOCAL_NEIGHBOURS),),
                   params=params, seed=seed, requested=d.eps, truth_included=reveal, extras={"eps_M": budget.eps_min})


def simulate(table: Any, budget: BudgetFunction, query: "str | Query", method: Literal["count", "framework", "naive"],
             *, beta: float, trials: int, rng: np.random.Generator, threshold: ThresholdRule = "paper") -> np.ndarray:
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
