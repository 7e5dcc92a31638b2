"""The standard DP mechanisms M of the PrDP framework, run on per-domain sufficient statistics (Sec. 6).

Each is ε-DP with respect to adding/removing one record:

* ``count`` — :class:`LaplaceCount`: |D| + Laplace(1/ε).
* ``sum`` — :class:`AdaptiveClippedSum`, an instance-adaptive clipped sum. Budget split:
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
* ``distinct`` — :class:`DistinctCount`: number of distinct values of a column + Laplace(1/ε)
  (sensitivity 1).
* a custom M: ``FrameworkQuery.custom(name, fn)`` with ``fn(table, eps, beta, rng) -> float``, run on
  the rows of D_ℓ; every kept record is charged ε_τ/2 (the mechanism must be ε-DP).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.errors import ParameterError
from ...core.limits import MAX_ROWS
from ...engines import memory as memory_engine
from ...engines.base import Bins, DomainStats

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
class AdaptiveClippedSum:
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
        cnt, sm = memory_engine.domain_histogram(v, idx, L, self.bins(U))
        return self.stats_from(DomainStats(np.zeros(L), cnt, sm, None, None), U)

    @staticmethod
    def bins(U: float) -> Bins:
        """Candidates 2^j0 … 2^J (and one bin above): v's bin is the smallest j with v ≤ 2^j."""
        j0, J = _pow2_range(U)
        return Bins("pow2", j0, J)

    def stats_from(self, st: DomainStats, U: float) -> dict[str, Any]:
        """The statistics of :meth:`stats` from an engine's per-domain histogram."""
        b = self.bins(U)
        return {"cnt": st.hist_counts.astype(float), "sum": st.hist_sums, "j0": b.j0, "J": b.J}  # type: ignore[union-attr]  # an engine's histogram of a sum query holds hist_counts

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
        cnt, _ = memory_engine.domain_histogram(v, idx, L, self.bins(U), sums=False)
        st = self.stats_from(DomainStats(np.zeros(L), cnt, None, None, float(v.max()) if v.size else 0.0), U)
        st.update(v=v, idx=idx, n=int(v.size))
        return st

    def stats_from(self, st: DomainStats, U: float) -> dict[str, Any]:
        """The statistics of :meth:`stats` from an engine's per-domain histogram (``above``, when
        given, counts records above a value: rank errors in teaching mode)."""
        return {"cnt": st.hist_counts.astype(float), "grid": self.grid(U), "max": st.max,  # type: ignore[union-attr]  # an engine's histogram of a max query holds hist_counts
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
        return {"cnt": memory_engine.distinct_max_domain(codes, idx, L).astype(float)}

    def stats_from(self, st: DomainStats, U: float) -> dict[str, Any]:
        return {"cnt": st.distinct.astype(float)}  # type: ignore[union-attr]  # an engine's histogram of a distinct query holds distinct

    run = LaplaceCount.run
    truth = LaplaceCount.truth


BUILTIN: dict[str, Any] = {"count": LaplaceCount(), "sum": AdaptiveClippedSum(), "max": RankMax(),
                           "distinct": DistinctCount()}
