"""Per-record DP in the central model: Algorithms 1 and 2 of the general PrDP framework, and the naive baseline.

Every mechanism here honours a budget function E (:mod:`prdp_core.mechanisms.prdp.budget`): for
every record r, adding or removing r changes the probability of any output by at most a factor
e^{E(r)} (E-PrDP, Def. 3.7, pure ε). Each :class:`~prdp_core.core.release.Release` carries,
per input row, the *requested* budget E(r) and the *delivered* loss (an upper bound on the
record's actual privacy loss); ``release.check_delivered_within_requested()`` holds for
every mechanism (tested).

Mechanisms
----------
* :func:`count` — Algorithm 1 (PrDP Count, Sec. 5.1): noisy counts of the L
  privacy-specified domains, Laplace(1/(2^{i−1}ε̌)) each; ℓ = the first domain whose noisy
  count reaches T_i = ln(L/β)/(2^{i−1}ε̌); answer = Σ_{i≥ℓ} noisy counts; ε_τ = 2^{ℓ−1}ε̌.
  Record r in domain i pays 2^{i−1}ε̌ ≤ E(r) (parallel composition, Lemma 3.11).
* :func:`framework` — Algorithm 2 (Sec. 6): Part 1 runs Algorithm 1 with E' = E/2 and β/2
  to pick ℓ (ε_τ = 2^{ℓ−1}ε̌); Part 2 runs a standard ε_τ/2-DP mechanism M
  (:mod:`.answers`) on D_ℓ, the records of domains ℓ..L (records of domains below ℓ are
  *dropped*, not clipped). Record r in domain i pays 2^{i−2}ε̌ (Part 1) + ε_τ/2 if i ≥ ℓ
  (Part 2) ≤ E(r).
  Option: ``eps_share`` = s gives Part 1 E' = s·E and M (1 − s)·ε_τ (record r pays
  s·2^{i−1}ε̌ + (1 − s)·ε_τ·[i ≥ ℓ] ≤ 2^{i−1}ε̌ ≤ E(r), since ε_τ ≤ 2^{i−1}ε̌ for i ≥ ℓ), and
  ``beta_share`` = Part 1's share of β; the paper's halves are the defaults
  (:mod:`prdp_core.mechanisms.prdp.forecast` predicts when another split is better).
* :func:`naive` — the straw man of Sec. 4.1: M on the whole data at the global minimum ε̌ (secure
  mode: the same exact M as the framework's Part 2, on every record at ε̌).
* The Sec. 5.2 extension to sums is in :mod:`.extension`.

When no domain passes its threshold (too few records for these budgets) the algorithms
keep the paper's initialisation ℓ = L (Algorithm 1, line 1): the answer uses only the last
domain, ε_τ = 2^{L−1}ε̌, and ``extras["passed"]`` is False. The privacy guarantee is
unchanged; the app says the data set is too small to be answered reliably.

Release contents (``extras``): ``eps_tau``, ``ell``, ``passed``, ``L``, ``noisy_counts``
and ``thresholds`` (Part 1, public), ``eps_M`` (the budget of M), M's public details
(``tau`` …); confidential, stripped by ``for_review``: ``private_dropped`` (true number
of records excluded), ``private_domain_counts`` (true counts per domain),
``private_rank_error`` (max).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from ... import engines
from ...core.distribution import LossDistribution
from ...core.domains import DomainPartition
from ...core.errors import ParameterError, PolicyError
from ...core.limits import MAX_ROWS
from ...core.noise_source import Noise, resolve
from ...core.release import Release
from ...core.secure import SecureSampler, to_units
from .answers import AdaptiveClippedSum, DistinctCount, LaplaceCount, RankMax
from .budget import BudgetFunction
from .plans import CountPlan
from .queries import FrameworkQuery, Prepared, _query_input, prepare
from .selection import (
    Selection,
    _check_beta,
    _entry,
    _table_of,
    _truth_cols,
    secure_select_domain,
    select_domain,
)

# ---------------------------------------------------------------------------
# Algorithm 1: PrDP count
# ---------------------------------------------------------------------------


def count(values_eps: Any, *, eps_min: float, eps_max: float, beta: float, rng: np.random.Generator | None = None,
          reveal: bool = False, seed: int | None = None, secure: bool = False,
          sampler: SecureSampler | None = None, noise: Noise | None = None) -> Release:
    """Algorithm 1 (PrDP Count, Sec. 5.1): count the records under E-PrDP.

    Parameters
    ----------
    values_eps: each record's budget E(r) (confidential; from ``budget(table)``).
    eps_min, eps_max: ε̌ and ε̂, the public bounds of E; they fix the L domains.
    beta: failure rate β: with probability ≥ 1 − β, ε_τ ≥ ε_min(D)/2 and the error is
        O(log(log(ε̂/ε̌)/β)/ε_min(D)) (Thm 5.1).
    rng: noise generator of a seeded (teaching/review) run.
    reveal: attach the true count and errors (teaching mode).
    secure, sampler: secure mode — exact discrete Laplace noise from OpenDP on the integer
        counts (same scales 1/(2^{i−1}ε̌), so the same per-record loss), no seed
        (:mod:`prdp_core.core.secure`).
    noise: the noise source (``Noise.teaching(seed)`` or ``Noise.secure()``); ``rng``, ``seed``,
        ``secure`` and ``sampler`` are its legacy spelling.

    Returns a Release whose ``extras`` hold ``eps_tau`` = 2^{ℓ−1}ε̌ and ``ell``. Record r in
    domain i is charged 2^{i−1}ε̌ ≤ E(r).
    """
    plan = CountPlan(eps_min, eps_max, beta)  # the public parameters: each record's loss before any noise
    smp, rng, seed = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler).parts()
    dp = plan.domains
    idx = plan.domain_index(values_eps)
    counts = np.bincount(idx, minlength=dp.L + 1)[1:].astype(float)
    return _count_release(dp, counts, plan.beta, rng, smp, seed, reveal, plan.domain_loss(idx),
                          np.asarray(values_eps, dtype=float).ravel())


def count_of(data: Any, budget: BudgetFunction, *, beta: float, rng: np.random.Generator | None = None,
             reveal: bool = False, seed: int | None = None, secure: bool = False,
             sampler: SecureSampler | None = None, noise: Noise | None = None) -> Release:
    """Algorithm 1 on a table (DataFrame, Dataset, or a dataset held by an engine, whose per-domain
    counts are computed there): :func:`count` of E(r) with E's ε̌ and ε̂ (``noise`` as there)."""
    if not engines.is_engine_data(data):
        return count(budget(_table_of(data)), eps_min=budget.eps_min, eps_max=budget.eps_max, beta=beta, rng=rng,
                     reveal=reveal, seed=seed, secure=secure, sampler=sampler, noise=noise)
    b = _check_beta(beta)
    smp, rng, seed = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler).parts()
    counts = data.engine.domain_stats(budget).counts.astype(float)
    return _count_release(budget.domains(), counts, b, rng, smp, None if smp is not None else seed, reveal, None,
                          None)


def _count_release(dp: DomainPartition, counts: np.ndarray, b: float, rng: Any, smp: SecureSampler | None,
                   seed: int | None, reveal: bool, loss: np.ndarray | None, requested: np.ndarray | None) -> Release:
    """Algorithm 1 from the true per-domain counts; per-record losses from ``loss`` (records in
    memory) or as a distribution over the domains (``loss`` None: a table held by an engine)."""
    L, lo = dp.L, dp.lo
    th = dp.thresholds(b)
    if smp is not None:
        sel = secure_select_domain(counts, lo, th, smp)
    else:
        sel = select_domain(counts, 1.0 / lo, th, rng=rng)
    ell = int(sel.ell[0])
    est = float(sel.retained_sum()[0])
    eps_tau = float(lo[ell - 1])
    row: dict[str, Any] = {"query": "count", "estimate": est, "eps_tau": eps_tau, "ell": ell}
    if reveal:
        row.update(_truth_cols(est, float(counts.sum()) if loss is None else float(loss.size)))
    params: dict[str, Any] = {"eps_min": dp.eps_min, "eps_max": dp.eps_max, "beta": b, "L": L}
    if smp is not None:
        params["secure"] = smp.describe()
    extras: dict[str, Any] = {"eps_tau": eps_tau, "ell": ell, "passed": bool(sel.passed[0]), "L": L,
                              "noisy_counts": sel.noisy[0].copy(), "thresholds": th, "scales": 1.0 / lo,
                              "private_dropped": int(counts[: ell - 1].sum()),
                              "private_domain_counts": counts.astype(int)}
    sec = smp is not None
    delivered: np.ndarray | LossDistribution = loss if loss is not None else _domain_distribution(lo, counts)
    if loss is None:
        extras["private_requested_distribution"] = _requested_distribution(dp, counts)
    return Release(mechanism="prdp.count", answers=pd.DataFrame([row]), measure="eps", loss=loss,
                   entries=(_entry("PrDP count (Algorithm 1)", "prdp.count", delivered,
                                   "PrDP count: 2^(i−1)·ε̌ for a record of domain i", dp.eps_max, params, seed,
                                   sec),),
                   params=params, seed=seed, secure=sec, requested=requested, truth_included=reveal, extras=extras,
                   loss_distribution=None if loss is not None else delivered)  # type: ignore[arg-type]  # delivered is a LossDistribution when loss is None (the engine's path)


def _domain_distribution(per_domain: np.ndarray, counts: np.ndarray) -> LossDistribution:
    """The delivered losses of a release charging each record of domain i ``per_domain[i−1]``."""
    return LossDistribution.from_counts(per_domain, np.asarray(counts).astype(np.int64), "eps")


def _requested_distribution(dp: DomainPartition, counts: np.ndarray) -> LossDistribution:
    """The records' requested budgets E(r), binned by domain (domain i: 2^{i−1}ε̌ < E(r) ≤ min(2^iε̌, ε̂))."""
    edges = np.concatenate(([dp.eps_min], dp.hi))
    if edges.size > 1 and not np.all(np.diff(edges) > 0):  # a single domain [ε̌, ε̂] with ε̂ = ε̌
        edges = np.array([dp.eps_min, np.nextafter(dp.eps_min, np.inf)])
    return LossDistribution.binned(edges, np.asarray(counts).astype(np.int64), "eps")


# ---------------------------------------------------------------------------
# Algorithm 2: the general framework (and its vectorised simulation)
# ---------------------------------------------------------------------------


def _run_m(p: Prepared, ell: np.ndarray, eps_m: np.ndarray, beta: float, rng: np.random.Generator
           ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    q = p.query
    if q.kind != "custom":
        return q.mechanism.run(p.stats, ell, eps_m, beta, rng)
    assert p.table is not None
    out = np.empty(ell.size)
    for k, (l, e) in enumerate(zip(ell, eps_m)):
        sub = p.table.loc[p.idx >= l]
        try:
            out[k] = float(q.mechanism(sub, float(e), beta, rng))
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"The custom mechanism '{q.label}' failed: {exc}") from None
    return out, {}


#: Algorithm 2's split between Part 1 (domain selection) and M: the paper's halves of E and of β (Thm 6.1).
PAPER_SHARE = 0.5


def check_share(name: str, share: Any) -> float:
    """A share of the budget or of β given to Part 1 of Algorithm 2: a number in [0.01, 0.99]."""
    try:
        s = float(share)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number (got {share!r}).") from None
    if not 0.01 <= s <= 0.99:
        raise ParameterError(f"{name} must be between 0.01 and 0.99 (got {share!r}).",
                             hint="The paper gives Part 1 half (0.5).")
    return s


@dataclass(frozen=True)
class Split:
    """Algorithm 2's budgets for a share s of E and a share of β spent by Part 1.

    ``part1[i−1]`` = s·2^{i−1}ε̌ is what a record of domain i pays in Part 1 (Algorithm 1 on
    E' = s·E, thresholds ln(L/β₁)/part1); ``eps_m(ℓ)`` = (1 − s)·ε_τ, rounded down so that
    part1[ℓ−1] + eps_m(ℓ) ≤ 2^{ℓ−1}ε̌ holds in floating point too. The halves give the paper's
    2^{i−2}ε̌ and ε_τ/2 exactly.
    """

    domains: DomainPartition
    beta: float
    eps_share: float = PAPER_SHARE
    beta_share: float = PAPER_SHARE

    @property
    def part1(self) -> np.ndarray:
        return self.domains.lo * self.eps_share

    @property
    def beta1(self) -> float:
        """Part 1's failure rate (β/2 by default)."""
        return self.beta * self.beta_share

    @property
    def beta_m(self) -> float:
        """M's failure rate (β/2 by default)."""
        return self.beta * (1.0 - self.beta_share)

    def thresholds(self) -> np.ndarray:
        return math.log(self.domains.L / self.beta1) / self.part1

    def eps_m(self, ell: np.ndarray) -> np.ndarray:
        """M's budget (1 − s)·ε_τ for each selected ℓ (1-based)."""
        lo = self.domains.lo[np.asarray(ell) - 1]
        p1 = self.part1[np.asarray(ell) - 1]
        em = lo - p1
        return np.where(p1 + em > lo, np.nextafter(em, 0.0), em)

    def per_domain(self, ell: int) -> np.ndarray:
        """Delivered loss of a record of each domain i = 1..L when ℓ was selected."""
        out = self.part1.copy()
        out[ell - 1:] += float(self.eps_m(np.array([ell]))[0])
        return out

    @property
    def is_paper(self) -> bool:
        return self.eps_share == PAPER_SHARE and self.beta_share == PAPER_SHARE


def framework_trials(p: Prepared, *, beta: float, rng: np.random.Generator, trials: int = 1,
                     eps_share: float = PAPER_SHARE, beta_share: float = PAPER_SHARE
                     ) -> tuple[np.ndarray, Selection, np.ndarray, dict[str, np.ndarray]]:
    """Algorithm 2 repeated ``trials`` times on prepared data (vectorised over trials).

    ``eps_share``, ``beta_share``: Part 1's share of E and of β (:class:`Split`; the paper's ½).
    Returns (estimates, Part-1 selection, ε_M per trial, M's details).
    """
    b = _check_beta(beta)
    sp = Split(p.domains, b, check_share("Part 1's share of the budget", eps_share),
               check_share("Part 1's share of β", beta_share))
    part1 = sp.part1                                      # E' = s·E (s = ½: domain i charged 2^{i−2}ε̌)
    sel = select_domain(p.counts, 1.0 / part1, sp.thresholds(), rng=rng, trials=int(trials))
    eps_m = sp.eps_m(sel.ell)                             # (1 − s)·ε_τ (ε_τ/2 by default)
    est, det = _run_m(p, sel.ell, eps_m, sp.beta_m, rng)
    return est, sel, eps_m, det



def _finish_row(row: dict[str, Any], extras: dict[str, Any], det: dict[str, np.ndarray], p: Any, est: float,
                est_a: np.ndarray, reveal: bool) -> None:
    """Shared tail of a single release: details, a declined answer, truth and rank errors (teaching)."""
    for k, v in det.items():
        extras[k] = float(v[0])
    if math.isnan(est):
        extras["declined"] = True  # e.g. a maximum needing more records than any table can have
    if reveal:
        row.update(_truth_cols(est, p.truth()))
        if p.query.kind == "max" and not math.isnan(est):
            extras["private_rank_error"] = int(RankMax.rank_error(p.stats, est_a)[0])
            extras["private_max_error"] = float(RankMax.relative_error(p.stats, est_a)[0])


def _secure_m(p: Prepared, table: Any, ell: int, eps_m: float, beta: float, sampler: SecureSampler
              ) -> tuple[float, dict[str, float]]:
    """Part 2 of Algorithm 2 with exact noise (OpenDP), on D_ℓ = records of domains ≥ ℓ.

    count / distinct: integer count + discrete Laplace(1/ε_M). sum (:class:`AdaptiveClippedSum`): the
    threshold τ = 2^j is chosen by OpenDP's report-noisy-max over the same monotone scores
    −#{v > 2^j} and preference weights (ε_sel), then Σ min(v, τ) is quantised record by record on
    the grid of τ, summed exactly, and gets discrete Laplace calibrated to τ (ε_sum). max
    (:class:`RankMax`): report-noisy-max over the rank scores −|#{v > x} − t| (not monotone).
    """
    q = p.query
    mech = q.mechanism
    if q.kind == "custom" or not isinstance(mech, (LaplaceCount, DistinctCount, AdaptiveClippedSum, RankMax)):
        raise ParameterError("Secure mode runs the built-in count, sum, max and distinct mechanisms only.",
                             hint="Run a custom mechanism as a seeded teaching run.")
    st = p.stats
    if isinstance(mech, (LaplaceCount, DistinctCount)):
        n_kept = int(round(float(st["cnt"][ell - 1:].sum())))
        return float(sampler.laplace_answers(np.array([n_kept]), 1.0, 1.0, eps_m).estimate[0]), {}
    if isinstance(mech, AdaptiveClippedSum):
        cnt = st["cnt"][ell - 1:].sum(axis=0)             # records of D_ℓ per power-of-two bin
        above = np.cumsum(cnt[::-1])[::-1][1:]             # #{v > 2^j}, j = j0..J
        e_sel = mech.split * eps_m
        j, _ = sampler.select(-above, e_sel, monotonic=True, log_weights=-mech.decay * np.arange(above.size))
        tau = math.ldexp(1.0, st["j0"] + j)
        if p.idx is None:
            raise PolicyError("A secure clipped sum quantises every record: tables held by an engine are not "
                              "available for it yet.", hint="Run the secure sum on a table in memory.")
        v = _query_input(_table_of(table), q)[p.idx >= ell]
        g = sampler.grid(tau)
        total = int(to_units(np.minimum(v, tau), g).sum())  # exact integer sum
        est = float(sampler.laplace_answers(np.array([total]), g, tau, eps_m - e_sel).estimate[0])
        return est, {"tau": tau}
    g = st["grid"]
    m = g.size
    cnt = st["cnt"][ell - 1:].sum(axis=0)
    above = np.cumsum(cnt[::-1])[::-1][1:]
    t = float(mech.target(np.array([eps_m]), beta, m)[0])
    k, _ = sampler.select(-np.abs(above - t), eps_m, monotonic=False, log_weights=mech.log_weights(m))
    return (math.nan if t > MAX_ROWS else float(g[k])), {"target_rank": t}


def framework(table: Any, budget: BudgetFunction, query: "str | FrameworkQuery", *, beta: float,
              rng: np.random.Generator | None = None, reveal: bool = False, seed: int | None = None,
              secure: bool = False, sampler: SecureSampler | None = None, noise: Noise | None = None,
              eps_share: float = PAPER_SHARE, beta_share: float = PAPER_SHARE) -> Release:
    """Algorithm 2 (general PrDP framework, Sec. 6): answer ``query`` under E-PrDP.

    Parameters
    ----------
    table: the records (DataFrame or Dataset).
    budget: the budget function E (its ε̌, ε̂ fix the domains; its U bounds values for sum/max).
    query: ``"count"``, ``"sum"``, ``"max"``, ``"distinct:COLUMN"`` … or a :class:`FrameworkQuery`
        (sum/max default to the budget's measure).
    beta: failure rate β (Part 1 and M each get β/2; Thm 6.1).
    rng: noise generator of a seeded run. reveal: attach true answers and errors (teaching mode).
    secure, sampler: secure mode — Part 1 and M draw exact noise and selections from OpenDP
        (:func:`secure_select_domain`, :func:`_secure_m`) with the same budgets, so the same
        per-record losses; no seed. Built-in mechanisms only.
    noise: the noise source (``Noise.teaching(seed)`` or ``Noise.secure()``); ``rng``, ``seed``,
        ``secure`` and ``sampler`` are its legacy spelling.
    eps_share, beta_share: Part 1's share s of E and of β (default ½ each, the paper's split).
        M then runs at (1 − s)·ε_τ with the rest of β. A smaller s gives M more budget and makes
        Part 1's thresholds higher (:mod:`prdp_core.mechanisms.prdp.forecast` predicts which
        split works at a given n).

    Privacy: record r of domain i pays s·2^{i−1}ε̌ in Part 1 and, if i ≥ ℓ, (1 − s)·ε_τ in Part 2
    (2^{i−2}ε̌ and ε_τ/2 by default); since ε_τ = 2^{ℓ−1}ε̌ ≤ 2^{i−1}ε̌ ≤ E(r) for i ≥ ℓ the sum is
    ≤ E(r), so the release is E-PrDP (sequential composition, Lemma 3.10).
    """
    smp, rng, seed = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler).parts()
    b = _check_beta(beta)
    p = prepare(table, budget, query)
    sp = Split(p.domains, b, check_share("Part 1's share of the budget", eps_share),
               check_share("Part 1's share of β", beta_share))
    if smp is None:
        est_a, sel, eps_m_a, det = framework_trials(p, beta=b, rng=rng, trials=1, eps_share=sp.eps_share,  # type: ignore[arg-type]  # rng is set when there is no exact sampler (NoiseSource.parts)
                                                    beta_share=sp.beta_share)
    else:
        sel = secure_select_domain(p.counts, sp.part1, sp.thresholds(), smp)
        eps_m_a = sp.eps_m(sel.ell)
        est1, det1 = _secure_m(p, table, int(sel.ell[0]), float(eps_m_a[0]), sp.beta_m, smp)
        est_a, det = np.array([est1]), {k: np.array([v]) for k, v in det1.items()}
    dp = p.domains
    ell, est, eps_m = int(sel.ell[0]), float(est_a[0]), float(eps_m_a[0])
    eps_tau = float(dp.lo[ell - 1])
    # Part 1: s·2^{i−1}ε̌ (2^{i−2}ε̌, exact, by default); Part 2: (1 − s)·ε_τ for kept domains i ≥ ℓ
    per_domain = np.concatenate(([0.0], sp.per_domain(ell)))  # index i = domain
    delivered = _delivered(p, per_domain[1:], lambda idx: per_domain.take(idx))  # one gather, O(n)
    row: dict[str, Any] = {"query": p.query.label, "estimate": est, "eps_tau": eps_tau, "ell": ell}
    extras: dict[str, Any] = {"eps_tau": eps_tau, "ell": ell, "eps_M": eps_m, "passed": bool(sel.passed[0]),
                              "L": dp.L, "noisy_counts": sel.noisy[0].copy(), "thresholds": sel.thresholds,
                              "mechanism_M": getattr(p.query.mechanism, "name", p.query.label),
                              "private_dropped": int(p.counts[: ell - 1].sum()),
                              "private_domain_counts": p.counts.astype(int)}
    _finish_row(row, extras, det, p, est, est_a, reveal)
    params: dict[str, Any] = {"query": p.query.label, "beta": b, "budget": budget.to_dict(), "L": dp.L}
    note = "PrDP framework: 2^(i−2)·ε̌ + ε_τ/2 for kept records (ε_τ data-dependent)"
    if not sp.is_paper:
        params.update(eps_share=sp.eps_share, beta_share=sp.beta_share)
        note = (f"PrDP framework: {sp.eps_share:g}·2^(i−1)·ε̌ + {1 - sp.eps_share:g}·ε_τ for kept records "
                "(ε_τ data-dependent)")
    if smp is not None:
        params["secure"] = smp.describe()
    name = f"prdp.framework.{p.query.kind}"
    sec = smp is not None
    return _prdp_release(p, name, row, delivered, f"PrDP framework: {p.query.label}", note, dp.eps_max,
                         params, seed, sec, reveal, extras)


def _delivered(p: Prepared, per_domain: np.ndarray, per_record: Callable[[np.ndarray], np.ndarray]
               ) -> np.ndarray | LossDistribution:
    """Delivered losses of a release charging each record of domain i ``per_domain[i−1]``: one per
    record (``per_record`` of the records' domains), or as a distribution over the domains for a table
    held by an engine."""
    return _domain_distribution(per_domain, p.counts) if p.idx is None else per_record(p.idx)


def _prdp_release(p: Prepared, name: str, row: dict[str, Any], delivered: np.ndarray | LossDistribution,
                  label: str, note: str, bound: float, params: dict[str, Any], seed: int | None, sec: bool,
                  reveal: bool, extras: dict[str, Any]) -> Release:
    """The Release of a framework or naive run (per-record arrays, or distributions for an engine's table)."""
    on_engine = isinstance(delivered, LossDistribution)
    if on_engine:
        extras["private_requested_distribution"] = _requested_distribution(p.domains, p.counts)
    return Release(mechanism=name, answers=pd.DataFrame([row]), measure="eps",
                   loss=None if on_engine else delivered,  # type: ignore[arg-type]  # delivered is an array off the engine, a LossDistribution on it (on_engine)
                   entries=(_entry(label, name, delivered, note, bound, params, seed, sec),), params=params,
                   seed=seed, secure=sec, requested=p.eps, truth_included=reveal, extras=extras,
                   loss_distribution=delivered if on_engine else None)  # type: ignore[arg-type]  # delivered is an array off the engine, a LossDistribution on it (on_engine)


# ---------------------------------------------------------------------------
# Sec. 4.1: the naive global-minimum baseline
# ---------------------------------------------------------------------------


def naive_trials(p: Prepared, *, beta: float, rng: np.random.Generator, trials: int = 1
                 ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """M on the whole data at ε̌, ``trials`` times."""
    ell = np.ones(int(trials), dtype=int)
    return _run_m(p, ell, np.full(int(trials), p.budget.eps_min), _check_beta(beta), rng)


def naive(table: Any, budget: BudgetFunction, query: "str | FrameworkQuery", *, beta: float,
          rng: np.random.Generator | None = None, reveal: bool = False, seed: int | None = None,
          secure: bool = False, sampler: SecureSampler | None = None, noise: Noise | None = None) -> Release:
    """The straw man of Sec. 4.1: run M on all records at the global minimum ε̌ (E-PrDP, since
    ε̌ ≤ E(r) for every record). Its error scales with 1/ε̌ — usually useless.

    ``secure``, ``sampler``: secure mode — M runs with exact noise and selections from OpenDP
    (:func:`_secure_m` on all records, ℓ = 1) at the same ε̌, so every record pays ε̌; no seed.
    ``noise``: the noise source (``Noise.teaching(seed)`` or ``Noise.secure()``); ``rng``/``seed``/``secure``/
    ``sampler`` are its legacy spelling.
    """
    smp, rng, seed = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler).parts()
    b = _check_beta(beta)
    p = prepare(table, budget, query)
    if smp is None:
        est_a, det = naive_trials(p, beta=b, rng=rng)  # type: ignore[arg-type]  # rng is set when there is no exact sampler (NoiseSource.parts)
    else:
        est1, det1 = _secure_m(p, table, 1, float(budget.eps_min), b, smp)
        est_a, det = np.array([est1]), {k: np.array([v]) for k, v in det1.items()}
    est = float(est_a[0])
    delivered = _delivered(p, np.full(p.domains.L, budget.eps_min), lambda idx: np.full(p.n, budget.eps_min))
    row: dict[str, Any] = {"query": p.query.label, "estimate": est, "eps_tau": budget.eps_min, "ell": 1}
    extras: dict[str, Any] = {"eps_M": budget.eps_min, "mechanism_M": getattr(p.query.mechanism, "name", "")}
    _finish_row(row, extras, det, p, est, est_a, reveal)
    params: dict[str, Any] = {"query": p.query.label, "beta": b, "budget": budget.to_dict()}
    if smp is not None:
        params["secure"] = smp.describe()
    name = f"prdp.naive.{p.query.kind}"
    return _prdp_release(p, name, row, delivered, f"Naive ε̌: {p.query.label}", "global minimum ε̌ for every record",
                         budget.eps_min, params, seed, smp is not None, reveal, extras)
