"""Per-record DP in the central model: the general PrDP framework (Secs. 4–6 of the paper).

Every mechanism here honours a budget function E (:mod:`prdp_core.budget`): for every
record r, adding or removing r changes the probability of any output by at most a factor
e^{E(r)} (E-PrDP, Def. 3.7, pure ε). Each :class:`~prdp_core.release.Release` carries,
per input row, the *requested* budget E(r) and the *delivered* loss (an upper bound on the
record's actual privacy loss); ``release.check_delivered_within_requested()`` holds for
every mechanism (tested).

Mechanisms
----------
* :func:`count` — Algorithm 1 (PrDP Count, Sec. 5.1): noisy counts of the L
  privacy-specified domains, Laplace(1/(2^{i−1}ε̌)) each; ℓ = the first domain whose noisy
  count reaches T_i = ln(L/β)/(2^{i−1}ε̌); answer = Σ_{i≥ℓ} noisy counts; ε_τ = 2^{ℓ−1}ε̌.
  Record r in domain i pays 2^{i−1}ε̌ ≤ E(r) (parallel composition, Lemma 3.11).
* :func:`sum_extension` — the Sec. 5.2 extension to sums: per-domain sums with noise
  Laplace(b_i), b_i = v̄_i / 2^{i−1}ε̌ where v̄_i bounds the values of domain i; same rule.
* :func:`framework` — Algorithm 2 (Sec. 6): Part 1 runs Algorithm 1 with E' = E/2 and β/2
  to pick ℓ (ε_τ = 2^{ℓ−1}ε̌); Part 2 runs a standard ε_τ/2-DP mechanism M on D_ℓ, the
  records of domains ℓ..L (records of domains below ℓ are *dropped*, not clipped).
  Record r in domain i pays 2^{i−2}ε̌ (Part 1) + ε_τ/2 if i ≥ ℓ (Part 2) ≤ E(r).
  Option: ``eps_share`` = s gives Part 1 E' = s·E and M (1 − s)·ε_τ (record r pays
  s·2^{i−1}ε̌ + (1 − s)·ε_τ·[i ≥ ℓ] ≤ 2^{i−1}ε̌ ≤ E(r), since ε_τ ≤ 2^{i−1}ε̌ for i ≥ ℓ), and
  ``beta_share`` = Part 1's share of β; the paper's halves are the defaults
  (:mod:`prdp_core.mechanisms.prdp_forecast` predicts when another split is better).
* :func:`naive` — the straw man of Sec. 4.1: M on the whole data at the global minimum ε̌.

Built-in standard mechanisms M (each ε-DP with respect to adding/removing one record):

* ``count`` — |D| + Laplace(1/ε).
* ``sum`` — :class:`ClippedSum`, an instance-adaptive clipped sum. Budget split:
  ε_sel = ``split``·ε (default ¼) picks a clipping threshold τ among the powers of two
  2^{j0}, …, 2^J ≥ U with the exponential mechanism: P(j) ∝ exp(−``decay``·(j − j0) −
  ε_sel·#{v > 2^j}). The count of records above a threshold has sensitivity 1 and moves in
  one direction between neighbours, so this is ε_sel-DP (no factor 2); the data-independent
  weight exp(−decay·j) prefers small thresholds when clipping costs little. The remaining
  ε_sum = ε − ε_sel pays for Σ min(v, τ) + Laplace(τ/ε_sum). τ lands at the first power of
  two above all but O(1/ε) of the values, i.e. near Max(D) (the role of the Laplace-based
  estimator of Dong and Yi used in Sec. 8), when the data term outweighs the weight:
  ε_sel·n ≳ decay·log₂ Max(D). With fewer records or smaller ε the weight wins, τ falls to
  the smallest candidates and the sum is biased towards 0 (e.g. n = 10⁴, E = 500/ln⁴v).
* ``max`` — :class:`RankMax`, rank-error selection with the exponential mechanism: candidates
  0 and a log grid of ``steps`` points per doubling up to U; score −|#{v > x} − t| with
  target rank t = ⌈(2/ε)·ln(m/β)⌉ (m candidates), P ∝ w(x)·exp(ε·score/2) with the
  data-independent weight w = exp(−2 per doubling of x). The answer has about t records
  above it; when it overshoots Max(D) it lands just above it. It needs n > t: when t exceeds
  the largest table the engine accepts (``limits.MAX_ROWS``, a public fact) the answer is NaN
  ("declined") — the naive max at ε̌ always declines, as in the paper. Error is measured as a
  rank error (records above the answer), as in Sec. 8.
* ``distinct`` — number of distinct values of a column + Laplace(1/ε) (sensitivity 1).
* a custom M: ``Query.custom(name, fn)`` with ``fn(table, eps, beta, rng) -> float``, run on
  the rows of D_ℓ; every kept record is charged ε_τ/2 (the mechanism must be ε-DP).

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
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np
import pandas as pd

from ..accounting import DistributionLoss, LedgerEntry, RecordLoss
from ..budget import BudgetFunction, DomainPartition
from ..distribution import LossDistribution
from ..engines import Bins, DomainStats, is_engine_data
from ..engines.memory import distinct_max_domain, domain_histogram, measure_values
from ..errors import ParameterError, PolicyError
from ..limits import MAX_ROWS
from ..release import Release
from ..secure import SecureSampler, to_units
from ..validate import whole_number

QueryKind = Literal["count", "sum", "max", "distinct", "custom"]
CustomMechanism = Callable[[pd.DataFrame, float, float, np.random.Generator], float]


# ---------------------------------------------------------------------------
# Checks and small helpers
# ---------------------------------------------------------------------------


def _check_beta(beta: float) -> float:
    try:
        b = float(beta)
    except (TypeError, ValueError):
        raise ParameterError(f"The failure rate β must be a number (got {beta!r}).") from None
    if not 1e-12 <= b < 1:  # below 1e-12 the thresholds' ln(L/β) means nothing (and β/2 can underflow)
        raise ParameterError(f"The failure rate β must be between 1e-12 and 1 (got {beta!r}).",
                             hint="The paper uses β = 0.1.")
    return b


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ParameterError("Pass a numpy random Generator as rng (numpy.random.default_rng(seed)).")
    return rng


def _table_of(table: Any) -> pd.DataFrame:
    t = getattr(table, "table", table)
    if not isinstance(t, pd.DataFrame):
        raise ParameterError("The data must be a pandas DataFrame (or a prdp_core Dataset).")
    return t


def _eps_array(values_eps: Any, eps_min: float, eps_max: float) -> np.ndarray:
    """Per-record budgets checked against [ε̌, ε̂]; budgets above ε̂ are capped (charging less is safe)."""
    e = np.asarray(values_eps, dtype=float).ravel()
    if e.size and not np.all(np.isfinite(e)):
        raise PolicyError("Every record's budget must be a finite number.")
    if e.size and np.min(e) < eps_min * (1 - 1e-9):
        k = int(np.sum(e < eps_min * (1 - 1e-9)))
        raise PolicyError(f"{k:,} record(s) ask for a budget below ε̌ = {eps_min:.4g}.",
                          hint="Lower ε̌ so that every requirement can be honoured.")
    return np.minimum(np.maximum(e, eps_min), eps_max)


def _truth_cols(est: float, true: float) -> dict[str, float]:
    err = est - true
    return {"true": true, "error": err, "abs_error": abs(err),
            "rel_error": abs(err) / abs(true) if true != 0 else (0.0 if err == 0 else math.inf)}


def _entry(label: str, mechanism: str, loss: np.ndarray | LossDistribution, note: str, bound: float,
           params: dict[str, Any], seed: int | None, secure: bool = False, neighbours: str = "add/remove"
           ) -> LedgerEntry:
    fn = DistributionLoss(loss, "eps", note, float(bound)) if isinstance(loss, LossDistribution) else \
        RecordLoss(loss, measure="eps", note=note, bound=float(bound))
    return LedgerEntry(label=label, mechanism=mechanism, loss=fn, params=params, seed=seed, secure=secure,
                       neighbours=neighbours)


def _sampler(secure: bool, sampler: SecureSampler | None, rng: Any) -> SecureSampler | None:
    """The secure sampler of a run (None for a seeded run, which then needs a numpy Generator)."""
    smp = sampler if sampler is not None else (SecureSampler() if secure else None)
    if smp is None:
        _check_rng(rng)
    return smp


def secure_select_domain(true: np.ndarray, eps: np.ndarray, thresholds: np.ndarray, sampler: SecureSampler
                         ) -> Selection:
    """Algorithm 1's rule with exact noise: integer per-domain counts + discrete Laplace of scale
    1/eps[i] (OpenDP; ε_i-DP per domain for a count of sensitivity 1), answers on the integers."""
    c = np.asarray(true, dtype=float)
    if not np.all(c == np.rint(c)):
        raise ParameterError("Secure PrDP counts need whole-number per-domain counts.")
    noisy = np.empty(c.size)
    for i in range(c.size):  # one scale per domain
        noisy[i] = sampler.laplace_answers(np.array([int(c[i])]), 1.0, 1.0, float(eps[i])).estimate[0]
    ok = noisy >= thresholds
    passed = bool(ok.any())
    ell = int(np.argmax(ok)) + 1 if passed else c.size
    return Selection(noisy[None, :], np.asarray(thresholds, dtype=float), np.array([ell]), np.array([passed]))


# ---------------------------------------------------------------------------
# Algorithm 1's selection rule, vectorised over trials
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """Noisy per-domain answers and the chosen domain ℓ, one row per trial."""

    noisy: np.ndarray        # (trials, L)
    thresholds: np.ndarray   # (L,)
    ell: np.ndarray          # (trials,) 1-based
    passed: np.ndarray       # (trials,) bool: some domain reached its threshold

    def retained_sum(self) -> np.ndarray:
        """Σ_{i ≥ ℓ} noisy answers, per trial."""
        rev = np.cumsum(self.noisy[:, ::-1], axis=1)[:, ::-1]
        return rev[np.arange(self.noisy.shape[0]), self.ell - 1]


def select_domain(true: np.ndarray, scales: np.ndarray, thresholds: np.ndarray, *, rng: np.random.Generator,
                  trials: int = 1) -> Selection:
    """Add Laplace(scales[i]) to each domain's answer and pick ℓ = the first domain whose noisy
    answer is ≥ its threshold (ℓ = L if none, the paper's initialisation)."""
    L = true.size
    noisy = true[None, :] + rng.laplace(0.0, 1.0, size=(trials, L)) * scales[None, :]
    ok = noisy >= thresholds[None, :]
    passed = ok.any(axis=1)
    ell = np.where(passed, np.argmax(ok, axis=1) + 1, L)
    return Selection(noisy, thresholds, ell.astype(int), passed)


# ---------------------------------------------------------------------------
# Algorithm 1: PrDP count
# ---------------------------------------------------------------------------


def count(values_eps: Any, *, eps_min: float, eps_max: float, beta: float, rng: np.random.Generator | None = None,
          reveal: bool = False, seed: int | None = None, secure: bool = False,
          sampler: SecureSampler | None = None) -> Release:
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
        (:mod:`prdp_core.secure`).

    Returns a Release whose ``extras`` hold ``eps_tau`` = 2^{ℓ−1}ε̌ and ``ell``. Record r in
    domain i is charged 2^{i−1}ε̌ ≤ E(r).
    """
    b = _check_beta(beta)
    smp = _sampler(secure, sampler, rng)
    dp = DomainPartition(float(eps_min), float(eps_max))
    e = _eps_array(values_eps, dp.eps_min, dp.eps_max)
    idx = dp.index(e)
    counts = np.bincount(idx, minlength=dp.L + 1)[1:].astype(float)
    loss = dp.lo[idx - 1]
    return _count_release(dp, counts, b, rng, smp, None if smp is not None else seed, reveal, loss,
                          np.asarray(values_eps, dtype=float).ravel())


def count_of(data: Any, budget: BudgetFunction, *, beta: float, rng: np.random.Generator | None = None,
             reveal: bool = False, seed: int | None = None, secure: bool = False,
             sampler: SecureSampler | None = None) -> Release:
    """Algorithm 1 on a table (DataFrame, Dataset, or a dataset held by an engine, whose per-domain
    counts are computed there): :func:`count` of E(r) with E's ε̌ and ε̂."""
    if not is_engine_data(data):
        return count(budget(_table_of(data)), eps_min=budget.eps_min, eps_max=budget.eps_max, beta=beta, rng=rng,
                     reveal=reveal, seed=seed, secure=secure, sampler=sampler)
    b = _check_beta(beta)
    smp = _sampler(secure, sampler, rng)
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
        sel = select_domain(counts, 1.0 / lo, th, rng=rng)  # type: ignore[arg-type]
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
                   loss_distribution=None if loss is not None else delivered)  # type: ignore[arg-type]


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
# Standard DP mechanisms M on per-domain sufficient statistics
# ---------------------------------------------------------------------------


def _pow2_range(U: float) -> tuple[int, int]:
    """(j0, J): candidates 2^j0 … 2^J with 2^J the smallest power of two ≥ U (J ≥ 0). j0 = 0
    when U ≥ 1 (values are integers in [U], Sec. 3.1: the smallest positive one is 1); −30 for
    measures bounded by U < 1 (fractions)."""
    J = max(0, int(math.ceil(math.log2(U))))
    while 2.0 ** J < U:
        J += 1
    while J > 0 and 2.0 ** (J - 1) >= U:
        J -= 1
    return (0 if U >= 1 else -30), J


@dataclass(frozen=True)
class ClippedSum:
    """Instance-adaptive clipped sum (ε-DP): private threshold τ, then Laplace(τ/ε_sum).

    ``split``: share of ε spent choosing τ (the rest pays for the clipped sum).
    ``decay``: data-independent preference exp(−decay·j) for smaller thresholds 2^j.
    """

    split: float = 0.25
    decay: float = 2.0
    name: str = "clipped sum"

    def __post_init__(self) -> None:
        if not 0 < self.split < 1:
            raise ParameterError("The share of ε for choosing the clipping threshold must be in (0, 1).")
        if not self.decay >= 0:
            raise ParameterError("The decay must be non-negative.")

    def stats(self, v: np.ndarray, idx: np.ndarray, L: int, U: float) -> dict[str, Any]:
        cnt, sm = domain_histogram(v, idx, L, self.bins(U))
        return self.stats_from(DomainStats(np.zeros(L), cnt, sm, None, None), U)

    @staticmethod
    def bins(U: float) -> Bins:
        """Candidates 2^j0 … 2^J (and one bin above): v's bin is the smallest j with v ≤ 2^j."""
        j0, J = _pow2_range(U)
        return Bins("pow2", j0, J)

    def stats_from(self, st: DomainStats, U: float) -> dict[str, Any]:
        """The statistics of :meth:`stats` from an engine's per-domain histogram."""
        b = self.bins(U)
        return {"cnt": st.hist_counts.astype(float), "sum": st.hist_sums, "j0": b.j0, "J": b.J}  # type: ignore[union-attr]

    @staticmethod
    def candidates(cnt: np.ndarray, sm: np.ndarray, j0: int, J: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """From one row of per-bin counts and sums: the thresholds τ_j = 2^j (j = j0..J), #{v > τ_j}
        and Σ min(v, τ_j)."""
        taus = np.exp2(np.arange(j0, J + 1, dtype=float))
        above = np.cumsum(cnt[::-1])[::-1][1:]
        return taus, above, np.cumsum(sm)[:-1] + taus * above

    def logits(self, above: np.ndarray, e_sel: np.ndarray) -> np.ndarray:
        """Unnormalised log-probabilities of choosing each τ_j, one row per selection budget ε_sel."""
        return -self.decay * np.arange(above.size)[None, :] - np.asarray(e_sel)[:, None] * above[None, :]

    def run(self, st: dict[str, Any], ell: np.ndarray, eps: np.ndarray, beta: float, rng: np.random.Generator
            ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Estimates for each trial (D_ℓ = domains ≥ ell[t], budget eps[t])."""
        cnt_all, sm_all, j0, J = st["cnt"], st["sum"], st["j0"], st["J"]
        out = np.empty(ell.size)
        tau_out = np.empty(ell.size)
        rc = np.cumsum(cnt_all[::-1], axis=0)[::-1]  # rows: domains ≥ i
        rs = np.cumsum(sm_all[::-1], axis=0)[::-1]
        for l in np.unique(ell):
            rows = np.flatnonzero(ell == l)
            taus, above, clipped = self.candidates(rc[l - 1], rs[l - 1], j0, J)  # #{v > τ_j}, Σ min(v, τ_j)
            e_sel = self.split * eps[rows]
            e_sum = eps[rows] - e_sel
            logits = self.logits(above, e_sel)
            j = np.argmax(logits + rng.gumbel(size=logits.shape), axis=1)
            tau = taus[j]
            out[rows] = clipped[j] + rng.laplace(0.0, 1.0, rows.size) * tau / e_sum
            tau_out[rows] = tau
        return out, {"tau": tau_out}

    def truth(self, st: dict[str, Any]) -> float:
        return float(st["sum"].sum())


@dataclass(frozen=True)
class RankMax:
    """Maximum by rank-error selection with the exponential mechanism (ε-DP).

    ``steps``: grid points per doubling of the value (the answer's resolution, 2^(1/steps)).
    ``decay``: data-independent weight exp(−decay per doubling) on the candidates, so that when
    no candidate sits near the target rank an answer above Max(D) lands just above it rather
    than anywhere up to U (every candidate above Max(D) has the same score).
    """

    steps: int = 16
    decay: float = 2.0
    name: str = "rank-error max"

    def __post_init__(self) -> None:
        if not 1 <= int(self.steps) <= 256:
            raise ParameterError("Grid steps per doubling must be between 1 and 256.")
        if not self.decay >= 0:
            raise ParameterError("The decay must be non-negative.")

    def log_weights(self, m: int) -> np.ndarray:
        """Data-independent log-weight of each candidate: −decay per doubling of the value."""
        return -self.decay * np.arange(m) / self.steps

    def grid(self, U: float) -> np.ndarray:
        """Candidates: 0, then 2^(j0 + k/steps) for k = 0..K, the last one replaced by U."""
        j0, _ = _pow2_range(U)
        K = max(0, int(math.ceil(self.steps * (math.log2(U) - j0))))
        g = np.exp2(j0 + np.arange(K + 1) / self.steps)
        g[-1] = U
        return np.concatenate(([0.0], g))

    def bins(self, U: float) -> Bins:
        """Smallest candidate index k with v ≤ grid[k], from log2 (a value within rounding of a grid
        point may land one bin off: that moves the answer, not the privacy); m when v > U."""
        j0, _ = _pow2_range(U)
        return Bins("loggrid", j0, steps=int(self.steps), m=self.grid(U).size, U=float(U))

    def stats(self, v: np.ndarray, idx: np.ndarray, L: int, U: float) -> dict[str, Any]:
        cnt, _ = domain_histogram(v, idx, L, self.bins(U), sums=False)
        st = self.stats_from(DomainStats(np.zeros(L), cnt, None, None, float(v.max()) if v.size else 0.0), U)
        st.update(v=v, idx=idx, n=int(v.size))
        return st

    def stats_from(self, st: DomainStats, U: float) -> dict[str, Any]:
        """The statistics of :meth:`stats` from an engine's per-domain histogram (``above``, when
        given, counts records above a value: rank errors in teaching mode)."""
        return {"cnt": st.hist_counts.astype(float), "grid": self.grid(U), "max": st.max,  # type: ignore[union-attr]
                "n": int(st.counts.sum())}

    def target(self, eps: np.ndarray, beta: float, m: int) -> np.ndarray:
        return np.ceil(2.0 / eps * math.log(m / beta))

    def run(self, st: dict[str, Any], ell: np.ndarray, eps: np.ndarray, beta: float, rng: np.random.Generator
            ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        g = st["grid"]
        m = g.size
        rc = np.cumsum(st["cnt"][::-1], axis=0)[::-1]
        out = np.empty(ell.size)
        t_out = np.empty(ell.size)
        for l in np.unique(ell):
            rows = np.flatnonzero(ell == l)
            cnt = rc[l - 1]
            above = np.cumsum(cnt[::-1])[::-1][1:]  # #{v > g[k]}, k = 0..m−1
            t = self.target(eps[rows], beta, m)
            logits = self.log_weights(m)[None, :] - (eps[rows, None] / 2.0) * np.abs(above[None, :] - t[:, None])
            k = np.argmax(logits + rng.gumbel(size=logits.shape), axis=1)
            # a target rank beyond any table the engine accepts: the mechanism cannot work (Sec. 8.2.1)
            out[rows] = np.where(t > MAX_ROWS, np.nan, g[k])
            t_out[rows] = t
        return out, {"target_rank": t_out}

    def truth(self, st: dict[str, Any]) -> float:
        return st["max"]

    @staticmethod
    def rank_error(st: dict[str, Any], estimates: np.ndarray) -> np.ndarray:
        """Records of the whole data strictly above each estimate (0 when it reaches Max(D))."""
        if "v" not in st:  # a table held by an engine: counted there
            return st["above"](np.asarray(estimates, dtype=float))
        v = np.sort(st["v"])
        return v.size - np.searchsorted(v, np.asarray(estimates, dtype=float), side="right")

    @staticmethod
    def relative_error(st: dict[str, Any], estimates: np.ndarray) -> np.ndarray:
        """Error of a released maximum: rank error / n below Max(D) (Sec. 8), and the relative
        overshoot (x − Max)/Max above it (a rank error cannot see answers above the data)."""
        est = np.asarray(estimates, dtype=float)
        n = max(1, st["n"])
        mx = st["max"]
        with np.errstate(invalid="ignore", divide="ignore"):
            over = (est - mx) / mx if mx > 0 else np.where(est > 0, np.inf, 0.0)
        out = np.where(est > mx, over, RankMax.rank_error(st, est) / n)
        return np.where(np.isnan(est), np.inf, out)  # declined: no answer


@dataclass(frozen=True)
class LaplaceCount:
    """|D| + Laplace(1/ε)."""

    name: str = "Laplace count"

    def stats(self, v: np.ndarray, idx: np.ndarray, L: int, U: float) -> dict[str, Any]:
        return {"cnt": np.bincount(idx, minlength=L + 1)[1:].astype(float)}

    def stats_from(self, st: DomainStats, U: float) -> dict[str, Any]:
        return {"cnt": st.counts.astype(float)}

    def run(self, st: dict[str, Any], ell: np.ndarray, eps: np.ndarray, beta: float, rng: np.random.Generator
            ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        rc = np.cumsum(st["cnt"][::-1])[::-1]
        return rc[ell - 1] + rng.laplace(0.0, 1.0, ell.size) / eps, {}

    def truth(self, st: dict[str, Any]) -> float:
        return float(st["cnt"].sum())


@dataclass(frozen=True)
class DistinctCount:
    """Number of distinct values of a column + Laplace(1/ε) (one record changes it by ≤ 1)."""

    name: str = "distinct count"

    def stats(self, codes: np.ndarray, idx: np.ndarray, L: int, U: float) -> dict[str, Any]:
        return {"cnt": distinct_max_domain(codes, idx, L).astype(float)}

    def stats_from(self, st: DomainStats, U: float) -> dict[str, Any]:
        return {"cnt": st.distinct.astype(float)}  # type: ignore[union-attr]

    run = LaplaceCount.run
    truth = LaplaceCount.truth


BUILTIN: dict[str, Any] = {"count": LaplaceCount(), "sum": ClippedSum(), "max": RankMax(), "distinct": DistinctCount()}


# ---------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    """What to answer and with which standard DP mechanism M.

    ``kind``: ``count``, ``sum`` (of ``column``), ``max`` (of ``column``), ``distinct`` (values
    of ``column``) or ``custom``. ``mechanism``: a built-in M (:class:`ClippedSum`,
    :class:`RankMax`, …) or, for ``custom``, ``fn(table, eps, beta, rng) -> float`` (ε-DP).
    ``truth``: for ``custom``, the exact answer on a table (teaching mode).
    """

    kind: QueryKind
    column: str | None = None
    mechanism: Any = None
    truth: Callable[[pd.DataFrame], float] | None = None
    name: str = ""

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        return self.kind if self.column is None or self.kind == "count" else f"{self.kind}({self.column})"

    @staticmethod
    def count() -> "Query":
        return Query("count")

    @staticmethod
    def sum(column: str, mechanism: ClippedSum | None = None) -> "Query":
        return Query("sum", column, mechanism)

    @staticmethod
    def max(column: str, mechanism: RankMax | None = None) -> "Query":
        return Query("max", column, mechanism)

    @staticmethod
    def distinct(column: str) -> "Query":
        return Query("distinct", column)

    @staticmethod
    def custom(name: str, fn: CustomMechanism, truth: Callable[[pd.DataFrame], float] | None = None) -> "Query":
        return Query("custom", None, fn, truth, name)

    def resolved(self, budget: BudgetFunction) -> "Query":
        """Fill in the column (default: the budget's measure) and the built-in mechanism."""
        if self.kind not in ("count", "sum", "max", "distinct", "custom"):
            raise ParameterError(f"Unknown query '{self.kind}'.", hint="Use count, sum, max, distinct or custom.")
        if self.kind == "custom":
            if not callable(self.mechanism):
                raise ParameterError("A custom query needs a mechanism fn(table, eps, beta, rng) -> float.")
            return self
        col = self.column
        if col is None and self.kind in ("sum", "max", "distinct"):
            col = budget.value_column
            if col is None:
                raise ParameterError(f"Say which column to {self.kind}: the budget does not name one measure.")
        mech = self.mechanism if self.mechanism is not None else BUILTIN[self.kind]
        return Query(self.kind, col, mech, self.truth, self.name)


def as_query(query: "str | Query") -> Query:
    """``"count"``, ``"sum"``, ``"sum:BALANCE"``, ``"max:BALANCE"``, ``"distinct:BRANCH"`` or a Query."""
    if isinstance(query, Query):
        return query
    if not isinstance(query, str):
        raise ParameterError("A query is a name such as 'sum' or 'sum:BALANCE', or a Query object.")
    kind, _, col = query.partition(":")
    kind = kind.strip().lower()
    if kind not in ("count", "sum", "max", "distinct"):
        raise ParameterError(f"Unknown query '{query}'.", hint="Use count, sum, max or distinct (optionally ':column').")
    return Query(kind, col.strip() or None)  # type: ignore[arg-type]


def _query_input(table: pd.DataFrame, q: Query) -> np.ndarray:
    if q.kind in ("sum", "max"):
        return measure_values(table, q.column)  # type: ignore[arg-type]
    if q.kind == "distinct":
        if q.column not in table.columns:
            raise ParameterError(f"Column '{q.column}' is not in the table.")
        codes, _ = pd.factorize(table[q.column], use_na_sentinel=False)
        return codes.astype(np.int64)
    return np.zeros(len(table))


# ---------------------------------------------------------------------------
# Prepared data: requested budgets, domains and M's sufficient statistics
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """Everything the PrDP mechanisms need from a table, computed once (for runs and simulations)."""

    budget: BudgetFunction
    query: Query
    eps: np.ndarray | None    # requested E(r), aligned with the table (None: a table held by an engine)
    idx: np.ndarray | None    # domain 1..L of each record (None: a table held by an engine)
    counts: np.ndarray        # true records per domain (L,)
    stats: dict[str, Any] = field(repr=False)
    table: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return int(self.eps.size) if self.eps is not None else int(round(float(self.counts.sum())))

    @property
    def domains(self) -> DomainPartition:
        return self.budget.domains()

    def truth(self) -> float:
        q = self.query
        if q.kind == "custom":
            if q.truth is None or self.table is None:
                return math.nan
            return float(q.truth(self.table))
        return float(q.mechanism.truth(self.stats))


def prepare(table: Any, budget: BudgetFunction, query: "str | Query") -> Prepared:
    """Evaluate E on the table, assign domains and compute M's per-domain statistics."""
    if not isinstance(budget, BudgetFunction):
        raise ParameterError("budget must be a BudgetFunction (see prdp_core.budget.parse_budget).")
    if is_engine_data(table):
        return _prepare_on_engine(table, budget, query)
    t = _table_of(table)
    q = as_query(query).resolved(budget)
    eps = budget(t)
    dp = budget.domains()
    idx = dp.index(eps)
    stats: dict[str, Any] = {}
    if q.kind != "custom":
        stats = q.mechanism.stats(_query_input(t, q), idx, dp.L, budget.U)
    cnt = stats.get("cnt")
    if q.kind in ("sum", "max", "count") and cnt is not None:  # records per domain from M's histogram
        counts = cnt.sum(axis=1) if cnt.ndim == 2 else cnt.copy()
    else:
        counts = np.bincount(idx, minlength=dp.L + 1)[1:].astype(float)
    return Prepared(budget, q, eps, idx, counts, stats, t if q.kind == "custom" else None)


def _prepare_on_engine(data: Any, budget: BudgetFunction, query: "str | Query") -> Prepared:
    """:func:`prepare` with the per-domain statistics computed by the dataset's engine (the same
    numbers as on the records in memory; no per-record array)."""
    q = as_query(query).resolved(budget)
    if q.kind == "custom":
        raise PolicyError("A custom mechanism runs on the records: tables held by an engine take the built-in "
                          "count, sum, max and distinct.", hint="Run it on a sample (dataset.sample(n)).")
    mech = q.mechanism
    bins = mech.bins(budget.U) if hasattr(mech, "bins") else None
    eng = data.engine
    st = eng.domain_stats(budget, column=q.column if q.kind != "count" else None, bins=bins,
                          distinct=q.kind == "distinct")
    stats = mech.stats_from(st, budget.U)
    if q.kind == "max":
        stats["above"] = lambda x, col=q.column: eng.count_above(col, x)
    cnt = stats.get("cnt")
    if q.kind in ("sum", "max", "count") and cnt is not None:
        counts = cnt.sum(axis=1) if cnt.ndim == 2 else cnt.copy()
    else:
        counts = st.counts.astype(float)
    return Prepared(budget, q, None, None, counts, stats, None)


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

    count / distinct: integer count + discrete Laplace(1/ε_M). sum (:class:`ClippedSum`): the
    threshold τ = 2^j is chosen by OpenDP's report-noisy-max over the same monotone scores
    −#{v > 2^j} and preference weights (ε_sel), then Σ min(v, τ) is quantised record by record on
    the grid of τ, summed exactly, and gets discrete Laplace calibrated to τ (ε_sum). max
    (:class:`RankMax`): report-noisy-max over the rank scores −|#{v > x} − t| (not monotone).
    """
    q = p.query
    mech = q.mechanism
    if q.kind == "custom" or not isinstance(mech, (LaplaceCount, DistinctCount, ClippedSum, RankMax)):
        raise ParameterError("Secure mode runs the built-in count, sum, max and distinct mechanisms only.",
                             hint="Run a custom mechanism as a seeded teaching run.")
    st = p.stats
    if isinstance(mech, (LaplaceCount, DistinctCount)):
        n_kept = int(round(float(st["cnt"][ell - 1:].sum())))
        return float(sampler.laplace_answers(np.array([n_kept]), 1.0, 1.0, eps_m).estimate[0]), {}
    if isinstance(mech, ClippedSum):
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


def framework(table: Any, budget: BudgetFunction, query: "str | Query", *, beta: float,
              rng: np.random.Generator | None = None, reveal: bool = False, seed: int | None = None,
              secure: bool = False, sampler: SecureSampler | None = None, eps_share: float = PAPER_SHARE,
              beta_share: float = PAPER_SHARE) -> Release:
    """Algorithm 2 (general PrDP framework, Sec. 6): answer ``query`` under E-PrDP.

    Parameters
    ----------
    table: the records (DataFrame or Dataset).
    budget: the budget function E (its ε̌, ε̂ fix the domains; its U bounds values for sum/max).
    query: ``"count"``, ``"sum"``, ``"max"``, ``"distinct:COLUMN"`` … or a :class:`Query`
        (sum/max default to the budget's measure).
    beta: failure rate β (Part 1 and M each get β/2; Thm 6.1).
    rng: noise generator of a seeded run. reveal: attach true answers and errors (teaching mode).
    secure, sampler: secure mode — Part 1 and M draw exact noise and selections from OpenDP
        (:func:`secure_select_domain`, :func:`_secure_m`) with the same budgets, so the same
        per-record losses; no seed. Built-in mechanisms only.
    eps_share, beta_share: Part 1's share s of E and of β (default ½ each, the paper's split).
        M then runs at (1 − s)·ε_τ with the rest of β. A smaller s gives M more budget and makes
        Part 1's thresholds higher (:mod:`prdp_core.mechanisms.prdp_forecast` predicts which
        split works at a given n).

    Privacy: record r of domain i pays s·2^{i−1}ε̌ in Part 1 and, if i ≥ ℓ, (1 − s)·ε_τ in Part 2
    (2^{i−2}ε̌ and ε_τ/2 by default); since ε_τ = 2^{ℓ−1}ε̌ ≤ 2^{i−1}ε̌ ≤ E(r) for i ≥ ℓ the sum is
    ≤ E(r), so the release is E-PrDP (sequential composition, Lemma 3.10).
    """
    smp = _sampler(secure, sampler, rng)
    seed = None if smp is not None else seed
    b = _check_beta(beta)
    p = prepare(table, budget, query)
    sp = Split(p.domains, b, check_share("Part 1's share of the budget", eps_share),
               check_share("Part 1's share of β", beta_share))
    if smp is None:
        est_a, sel, eps_m_a, det = framework_trials(p, beta=b, rng=rng, trials=1, eps_share=sp.eps_share,  # type: ignore[arg-type]
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
    delivered = _delivered(p, per_domain[1:], lambda: per_domain.take(p.idx))  # one gather, O(n)
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


def _delivered(p: Prepared, per_domain: np.ndarray, per_record: Callable[[], np.ndarray]
               ) -> np.ndarray | LossDistribution:
    """Delivered losses of a release charging each record of domain i ``per_domain[i−1]``: one per
    record, or as a distribution over the domains for a table held by an engine."""
    return _domain_distribution(per_domain, p.counts) if p.idx is None else per_record()


def _prdp_release(p: Prepared, name: str, row: dict[str, Any], delivered: np.ndarray | LossDistribution,
                  label: str, note: str, bound: float, params: dict[str, Any], seed: int | None, sec: bool,
                  reveal: bool, extras: dict[str, Any]) -> Release:
    """The Release of a framework or naive run (per-record arrays, or distributions for an engine's table)."""
    on_engine = isinstance(delivered, LossDistribution)
    if on_engine:
        extras["private_requested_distribution"] = _requested_distribution(p.domains, p.counts)
    return Release(mechanism=name, answers=pd.DataFrame([row]), measure="eps",
                   loss=None if on_engine else delivered,  # type: ignore[arg-type]
                   entries=(_entry(label, name, delivered, note, bound, params, seed, sec),), params=params,
                   seed=seed, secure=sec, requested=p.eps, truth_included=reveal, extras=extras,
                   loss_distribution=delivered if on_engine else None)  # type: ignore[arg-type]


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
    if is_engine_data(table):
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


# ---------------------------------------------------------------------------
# Sec. 4.1: the naive global-minimum baseline
# ---------------------------------------------------------------------------


def naive_trials(p: Prepared, *, beta: float, rng: np.random.Generator, trials: int = 1
                 ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """M on the whole data at ε̌, ``trials`` times."""
    ell = np.ones(int(trials), dtype=int)
    return _run_m(p, ell, np.full(int(trials), p.budget.eps_min), _check_beta(beta), rng)


def naive(table: Any, budget: BudgetFunction, query: "str | Query", *, beta: float, rng: np.random.Generator,
          reveal: bool = False, seed: int | None = None) -> Release:
    """The straw man of Sec. 4.1: run M on all records at the global minimum ε̌ (E-PrDP, since
    ε̌ ≤ E(r) for every record). Its error scales with 1/ε̌ — usually useless."""
    rng = _check_rng(rng)
    b = _check_beta(beta)
    p = prepare(table, budget, query)
    est_a, det = naive_trials(p, beta=b, rng=rng)
    est = float(est_a[0])
    delivered = _delivered(p, np.full(p.domains.L, budget.eps_min), lambda: np.full(p.n, budget.eps_min))
    row: dict[str, Any] = {"query": p.query.label, "estimate": est, "eps_tau": budget.eps_min, "ell": 1}
    extras: dict[str, Any] = {"eps_M": budget.eps_min, "mechanism_M": getattr(p.query.mechanism, "name", "")}
    _finish_row(row, extras, det, p, est, est_a, reveal)
    params = {"query": p.query.label, "beta": b, "budget": budget.to_dict()}
    name = f"prdp.naive.{p.query.kind}"
    return _prdp_release(p, name, row, delivered, f"Naive ε̌: {p.query.label}", "global minimum ε̌ for every record",
                         budget.eps_min, params, seed, False, reveal, extras)


# ---------------------------------------------------------------------------
# Simulation: errors of every mechanism over repeated runs (Table 3, Figs. 3–5)
# ---------------------------------------------------------------------------

Method = Literal["count", "extension", "framework", "naive"]


def trimmed_mean(x: np.ndarray, drop: float = 0.2) -> float:
    """Mean after dropping the top and bottom ``drop`` share (the paper's protocol, Sec. 8.1)."""
    a = np.sort(np.asarray(x, dtype=float))
    k = int(math.floor(drop * a.size))
    core = a[k: a.size - k] if a.size - 2 * k > 0 else a
    return float(np.mean(core))


def simulate(table: Any, budget: BudgetFunction, query: "str | Query", method: Method, *, beta: float,
             trials: int, rng: np.random.Generator, absolute: bool = False) -> np.ndarray:
    """Relative errors of ``trials`` runs: |estimate − truth| / |truth|; for max, the rank error / n
    (records above the answer) and the relative overshoot above Max(D) (:meth:`RankMax.relative_error`).

    ``method``: ``count`` (Algorithm 1, count queries only), ``extension`` (Sec. 5.2, sum only),
    ``framework`` (Algorithm 2) or ``naive`` (M at ε̌). Vectorised over trials. ``absolute``:
    return |estimate − truth| instead (the max keeps its rank-based error).
    """
    rng = _check_rng(rng)
    b = _check_beta(beta)
    q = as_query(query)
    if method == "extension":
        if q.kind != "sum":
            raise ParameterError("The Sec. 5.2 extension answers sums only.")
        st = extension_stats(table, budget, q.column)
        est, _ = extension_trials(st, budget.domains(), beta=b, rng=rng, trials=trials)
        if absolute or st.truth == 0:
            return np.abs(est - st.truth)
        return np.abs(est - st.truth) / abs(st.truth)
    p = prepare(table, budget, q)
    if method == "count":
        if p.query.kind != "count":
            raise ParameterError("Algorithm 1 answers counts only.")
        dp = p.domains
        sel = select_domain(p.counts, 1.0 / dp.lo, dp.thresholds(b), rng=rng, trials=trials)
        est = sel.retained_sum()
    elif method == "framework":
        est = framework_trials(p, beta=b, rng=rng, trials=trials)[0]
    elif method == "naive":
        est = naive_trials(p, beta=b, rng=rng, trials=trials)[0]
    else:
        raise ParameterError(f"Unknown method '{method}'.", hint="Use count, extension, framework or naive.")
    if p.query.kind == "max":
        return RankMax.relative_error(p.stats, est)
    truth = p.truth()
    if absolute or truth == 0:
        return np.abs(est - truth)
    return np.abs(est - truth) / abs(truth)


# ---------------------------------------------------------------------------
# Scaling study: sum error vs n, U and skew (Figs. 3–5)
# ---------------------------------------------------------------------------

#: The budget functions of Sec. 8.1 (preset name, parameters).
PAPER_BUDGETS: dict[str, tuple[str, dict[str, float]]] = {
    "inverse": ("inverse", {"alpha": 1e4}), "log": ("log", {"alpha": 500.0, "k": 4.0}),
    "sqrt": ("sqrt", {"alpha": 8.0}),
}
SCALING_DEFAULTS: dict[str, list[float]] = {
    "n": [1e4, 3e4, 1e5, 3e5, 1e6], "U": [1e4, 1e6, 1e8, 1e10, 1e12, 1e14, 1e16],
    "sigma": [1e2, 1e3, 1e4, 3e4, 1e5],
}


def normal_balances(n: int, mu: float, sigma: float, *, rng: np.random.Generator) -> np.ndarray:
    """n integer balances from Normal(μ, σ²) with negative draws redrawn (Sec. 8.1's synthetic data)."""
    out = np.empty(0)
    while out.size < n:
        d = np.rint(rng.normal(mu, sigma, int((n - out.size) * 1.3) + 16))
        out = np.concatenate((out, d[d >= 0]))
    return out[:n]


def scaling_study(vary: Literal["n", "U", "sigma"], values: Any = None, *,
                  budgets: tuple[str, ...] = ("inverse", "log", "sqrt"),
                  methods: tuple[Method, ...] = ("extension", "framework", "naive"), n: int = 200_000,
                  U: float = 1e12, mu: float = 5e4, sigma: float = 5e4, trials: int = 20, beta: float = 0.1,
                  seed: int = 0) -> pd.DataFrame:
    """Error of private sums as n, U or σ varies (the paper's Figs. 3, 4, 5), by simulation.

    For each value of the varied parameter a Normal(μ, σ) data set is drawn (values capped at U:
    records live in [U]); each budget function of Sec. 8.1 is built with that U (ε̌ = E(U),
    ε̂ = 100) and each method runs ``trials`` times (vectorised). Returns one row per (value,
    budget, method) with the trimmed-mean absolute and relative errors (top/bottom 20% dropped).
    """
    if vary not in SCALING_DEFAULTS:
        raise ParameterError(f"Cannot vary '{vary}'.", hint="Vary n, U or sigma.")
    trials = whole_number("Runs per point", trials, 1, 100_000)
    vals = list(SCALING_DEFAULTS[vary] if values is None else values)
    if not vals:
        raise ParameterError("Give at least one value to vary.")
    if vary == "n" and max(vals) > 2e7:
        raise ParameterError("Simulated data sets are limited to 20,000,000 records.")
    from .. import budget as _b

    rows = []
    for k, x in enumerate(vals):
        nn, uu, ss = n, U, sigma
        if vary == "n":
            nn = int(x)
        elif vary == "U":
            uu = float(x)
        else:
            ss = float(x)
        data = pd.DataFrame({"v": np.minimum(normal_balances(nn, mu, ss, rng=np.random.default_rng([seed, k])), uu)})
        truth = float(data["v"].sum())
        for j, name in enumerate(budgets):
            kind, params = PAPER_BUDGETS[name]
            bud = _b.preset(kind, "v", U=uu, eps_max=100.0, **params)
            for m, method in enumerate(methods):
                err = simulate(data, bud, "sum", method, beta=beta, trials=trials, absolute=True,
                               rng=np.random.default_rng([seed, k, j, m, 1]))
                rows.append({"vary": vary, "value": float(x), "budget": name, "method": method,
                             "abs_error": trimmed_mean(err), "rel_error": trimmed_mean(err) / truth if truth else math.nan,
                             "n": nn, "U": uu, "sigma": ss})
    return pd.DataFrame(rows)
