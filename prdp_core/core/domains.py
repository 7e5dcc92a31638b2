"""Privacy-specified domains of the PrDP framework (Sec. 5.1): the budget range cut into powers of two.

The budget range [ε̌, ε̂] is cut into L = ⌈log₂(ε̂/ε̌)⌉ ranges X_1 = [ε̌, 2ε̌],
X_i = (2^{i−1}ε̌, min(2^iε̌, ε̂)]. Every record of X_i may be charged 2^{i−1}ε̌ — at most a
factor two stronger than it asked for (:class:`DomainPartition`). For a budget that decreases
with v each domain is a value interval (:meth:`~.budget.BudgetFunction.domain_table`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import ParameterError
from .validate import positive as _positive


def ceil_log2(x: np.ndarray) -> np.ndarray:
    """⌈log₂ x⌉ of positive finite numbers, exact, as int64 (from the IEEE-754 bits: the exponent of
    the next double below x, plus one). Zero and negative numbers give ≤ −1023, inf gives 1024."""
    a = np.ascontiguousarray(x, dtype=np.float64)
    b = a.view(np.int64) - 1
    b >>= 52
    b -= 1022
    return b


def _ceil_log2_inplace(a: np.ndarray) -> np.ndarray:
    """:func:`ceil_log2` reusing the buffer of a float64 array the caller owns (no allocation)."""
    b = a.view(np.int64)
    b -= 1
    b >>= 52
    b -= 1022
    return b


# ---------------------------------------------------------------------------
# Privacy-specified domains (Sec. 5.1)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DomainPartition:
    """The L = ⌈log₂(ε̂/ε̌)⌉ privacy-specified domains of the budget range [ε̌, ε̂] (Sec. 5.1).

    Domain i (1-based) holds the records with E(r) ∈ (2^{i−1}ε̌, min(2^iε̌, ε̂)] (the first
    also holds E(r) = ε̌). Each of its records may be charged ``lo[i-1]`` = 2^{i−1}ε̌.
    """

    eps_min: float
    eps_max: float

    def __post_init__(self) -> None:
        lo = _positive("ε̌ (the smallest budget)", self.eps_min)
        hi = _positive("ε̂ (the largest budget)", self.eps_max)
        if hi < lo:
            raise ParameterError(f"ε̂ = {hi:g} is below ε̌ = {lo:g}.", hint="ε̂ must be at least ε̌.")
        if not math.isfinite(hi / lo) or self.L > 2000:
            raise ParameterError("ε̂/ε̌ is astronomically large.", hint="Use a larger ε̌ or a smaller ε̂.")

    @property
    def L(self) -> int:
        """Number of domains, at least 1."""
        r = self.eps_max / self.eps_min
        L = math.ceil(math.log2(r)) if r > 1 else 1
        if L > 1 and self.eps_min * 2.0 ** (L - 1) >= self.eps_max * (1 - 1e-12):  # log2 rounded up
            L -= 1
        return max(1, L)

    @property
    def lo(self) -> np.ndarray:
        """2^{i−1}ε̌ for i = 1..L: the budget every record of domain i is charged."""
        return self.eps_min * np.exp2(np.arange(self.L, dtype=float))

    @property
    def hi(self) -> np.ndarray:
        """min(2^iε̌, ε̂): the upper end of domain i's budget range."""
        hi = np.minimum(self.eps_min * np.exp2(np.arange(1, self.L + 1, dtype=float)), self.eps_max)
        hi[-1] = self.eps_max
        return hi

    def index(self, eps: np.ndarray) -> np.ndarray:
        """Domain (1..L) of each budget. Budgets must lie in [ε̌, ε̂] (cap them first).

        Boundaries are handled so that a record is never charged more than its budget:
        ``lo[index(e) - 1] <= e`` always holds.
        """
        e = np.asarray(eps, dtype=float)
        L = self.L
        k = _ceil_log2_inplace(np.divide(e, self.eps_min))
        np.clip(k, 1, L, out=k)
        # No record is charged more than its budget: with r = fl(e/ε̌) and i = ⌈log2 r⌉ (exact),
        # 2^{i−1} < r, and since 2^{i−1} is a double and rounding is monotone, 2^{i−1} ≤ e/ε̌ exactly;
        # ε̌·2^{i−1} is computed exactly, so lo[i−1] ≤ e (clipping to 1..L only lowers the charge
        # for budgets in [ε̌, ε̂]). Tests check the invariant on boundary values.
        return k.astype(np.int16 if L < 30000 else np.int32)

    def thresholds(self, beta: float, *, scale: float = 1.0) -> np.ndarray:
        """T_i = ln(L/β) / (2^{i−1}ε̌) (Algorithm 1, line 9); ``scale`` multiplies them (√(8n) for PrLDP)."""
        b = float(beta)
        if not 0 < b < 1:
            raise ParameterError(f"The failure rate β must be strictly between 0 and 1 (got {beta!r}).")
        return scale * math.log(self.L / b) / self.lo

    def table(self, beta: float | None = None) -> pd.DataFrame:
        """One row per domain: index, budget range, charged budget and (with β) threshold T_i."""
        df = pd.DataFrame({"domain": np.arange(1, self.L + 1), "eps_low": self.lo, "eps_high": self.hi,
                           "charged": self.lo})
        if beta is not None:
            df["threshold"] = self.thresholds(beta)
        return df
