"""The law of a forecast error: a mixture of shifted Laplace (central) or normal (local) laws.

:class:`ErrorLaw` holds the relative error |error|/total as a mixture over the selected domain
and M's threshold of folded shifted noises, with closed-form CDF, quantiles and mean; sums of
independent Laplace variables with distinct scales become a signed mixture of Laplace laws by
partial fractions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

#: Relative error from which an answer counts as a failure (it misses at least half of the truth).
FAILURE_LEVEL = 0.5


# ---------------------------------------------------------------------------
# The law of the error: a mixture of shifted noises
# ---------------------------------------------------------------------------


def _partial_fractions(scales: np.ndarray) -> np.ndarray:
    """Weights A_k with ∏_j 1/(1 + b_j²t²) = Σ_k A_k/(1 + b_k²t²): the density of a sum of
    independent Laplace(b_k) variables is Σ_k A_k·Laplace(b_k) (distinct scales; zeros ignored)."""
    b2 = np.asarray(scales, dtype=float) ** 2
    out = np.zeros(b2.shape)
    for row in range(b2.shape[0]):
        nz = np.flatnonzero(b2[row] > 0)
        for k in nz:
            others = b2[row, nz[nz != k]]
            out[row, k] = float(np.prod(b2[row, k] / (b2[row, k] - others))) if others.size else 1.0
    return out


def _merge_close(scales: np.ndarray) -> np.ndarray:
    """Scales sorted in decreasing order, merging neighbours within 10% into one Laplace of the same
    variance (partial fractions need distinct scales; the merge is an approximation)."""
    b = np.sort(np.asarray(scales, dtype=float)[np.asarray(scales) > 0])[::-1]
    out: list[float] = []
    for x in b:
        if out and x > 0.9 * out[-1]:
            out[-1] = math.sqrt(out[-1] ** 2 + x ** 2)
        else:
            out.append(float(x))
    return np.array(out)


def _laplace_cdf(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        z = np.where(b > 0, x / np.where(b > 0, b, 1.0), np.where(x >= 0, np.inf, -np.inf))
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0)), 1.0 - 0.5 * np.exp(-np.maximum(z, 0.0)))


@dataclass(frozen=True)
class ErrorLaw:
    """The law of a mechanism's signed error, as a mixture of components: component c has
    probability ``weight[c]``, a fixed part ``shift[c]`` (dropped records, clipping) plus noise —
    a sum of independent Laplace variables with scales ``scales[c]`` (zeros unused), or, when
    ``sd`` is given, a normal with standard deviation ``sd[c]`` — and a true answer ``truth[c]``
    (relative errors are |error| / truth)."""

    weight: np.ndarray
    shift: np.ndarray
    truth: np.ndarray
    scales: np.ndarray | None = None      # (components, K)
    sd: np.ndarray | None = None          # (components,)
    coef: np.ndarray | None = field(default=None, repr=False)

    @staticmethod
    def laplace(weight: Any, shift: Any, truth: Any, scales: Any) -> "ErrorLaw":
        sc = np.asarray(scales, dtype=float)
        if sc.ndim == 1:  # one Laplace per component
            one = np.where(sc > 0, sc, 0.0)[:, None]
            return ErrorLaw(np.asarray(weight, dtype=float), np.asarray(shift, dtype=float),
                            np.asarray(truth, dtype=float), one, None, (one > 0).astype(float))
        rows = [_merge_close(r) for r in sc]
        k = max(1, max(r.size for r in rows))
        sc = np.zeros((len(rows), k))
        for i, r in enumerate(rows):
            sc[i, : r.size] = r
        return ErrorLaw(np.asarray(weight, dtype=float), np.asarray(shift, dtype=float),
                        np.asarray(truth, dtype=float), sc, None, _partial_fractions(sc))

    @staticmethod
    def normal(weight: Any, shift: Any, truth: Any, sd: Any) -> "ErrorLaw":
        return ErrorLaw(np.asarray(weight, dtype=float), np.asarray(shift, dtype=float),
                        np.asarray(truth, dtype=float), None, np.asarray(sd, dtype=float))

    def _noise_cdf(self, x: np.ndarray) -> np.ndarray:
        """P(noise ≤ x) per component, for x of shape (components, …)."""
        if self.sd is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                sd = self.sd.reshape((-1,) + (1,) * (x.ndim - 1))
                return np.where(sd > 0, special.ndtr(x / np.where(sd > 0, sd, 1.0)), (x >= 0).astype(float))
        assert self.scales is not None and self.coef is not None
        out = np.zeros(x.shape)
        nonzero = np.zeros(self.weight.shape, dtype=bool)
        for k in range(self.scales.shape[1]):
            b = self.scales[:, k].reshape((-1,) + (1,) * (x.ndim - 1))
            a = self.coef[:, k].reshape((-1,) + (1,) * (x.ndim - 1))
            out += np.where(b > 0, a * _laplace_cdf(x, b), 0.0)
            nonzero |= self.scales[:, k] > 0
        step = (x >= 0).astype(float)
        nz = nonzero.reshape((-1,) + (1,) * (x.ndim - 1))
        return np.clip(np.where(nz, out, step), 0.0, 1.0)

    def within(self, r: float | np.ndarray) -> np.ndarray:
        """P(relative error ≤ r) per component (rows) and r (columns)."""
        rr = np.atleast_1d(np.asarray(r, dtype=float))
        t = np.abs(self.truth)[:, None]
        mu = self.shift[:, None]
        inside = self._noise_cdf(rr[None, :] * t - mu) - self._noise_cdf(-rr[None, :] * t - mu)
        return np.clip(np.where(t > 0, inside, 0.0), 0.0, 1.0)

    def cdf(self, r: float | np.ndarray) -> np.ndarray:
        """P(relative error ≤ r) for each r."""
        return np.clip(self.weight @ self.within(r) / max(float(self.weight.sum()), 1e-300), 0.0, 1.0)

    def failure(self, level: float = FAILURE_LEVEL) -> float:
        """P(relative error ≥ level)."""
        return float(1.0 - self.cdf(level)[0])

    def quantile(self, q: float) -> float:
        """The q-quantile of the relative error (geometric bisection over [10⁻¹⁵, 10³⁰])."""
        lo, hi = 1e-15, 1e30
        if self.cdf(lo)[0] >= q:
            return 0.0
        if self.cdf(hi)[0] < q:
            return math.inf
        for _ in range(90):
            mid = math.sqrt(lo * hi)
            if self.cdf(mid)[0] >= q:
                hi = mid
            else:
                lo = mid
        return hi

    def mean(self) -> float:
        """E[relative error]: E|μ + X| = Σ_k A_k(|μ| + b_k·e^{−|μ|/b_k}) for Laplace sums, the folded
        normal's mean for normal noise."""
        mu = np.abs(self.shift)
        if self.sd is not None:
            s = self.sd
            with np.errstate(divide="ignore", invalid="ignore"):
                folded = np.where(s > 0, s * math.sqrt(2 / math.pi) * np.exp(-0.5 * (mu / np.where(s > 0, s, 1)) ** 2)
                                  + mu * (1 - 2 * special.ndtr(-mu / np.where(s > 0, s, 1))), mu)
        else:
            assert self.scales is not None and self.coef is not None
            b = self.scales
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                term = np.where(b > 0, self.coef * (mu[:, None] + b * np.exp(-mu[:, None] / np.where(b > 0, b, 1))),
                                0.0)
            has = (b > 0).any(axis=1)
            folded = np.where(has, term.sum(axis=1), mu)
        t = np.abs(self.truth)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(t > 0, folded / np.where(t > 0, t, 1.0), np.inf)
        w = self.weight / max(float(self.weight.sum()), 1e-300)
        return float(np.sum(np.where(w > 0, w * rel, 0.0)))
