"""Algorithm 1's domain selection of the PrDP framework (numpy and secure), and the input checks its releases share.

ℓ is the first privacy-specified domain whose noisy count reaches its public threshold
T_i = ln(L/β)/(2^{i−1}ε̌) (the paper's initialisation ℓ = L when none does); the noise of domain
i is Laplace(1/(2^{i−1}ε̌)), so a record of domain i pays 2^{i−1}ε̌ ≤ E(r). :class:`Selection`
vectorises the rule over trials; :func:`secure_select_domain` draws with the exact sampler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...core.accounting import DistributionLoss, LedgerEntry, RecordLoss
from ...core.distribution import LossDistribution
from ...core.errors import ParameterError, PolicyError
from ...core.neighbours import AddRemove, NeighbourRelation, as_neighbours
from ...core.secure import SecureSampler

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
           params: dict[str, Any], seed: int | None, secure: bool = False,
           neighbours: NeighbourRelation | str = AddRemove.name) -> LedgerEntry:
    fn = DistributionLoss(loss, "eps", note, float(bound)) if isinstance(loss, LossDistribution) else \
        RecordLoss(loss, measure="eps", note=note, bound=float(bound))
    return LedgerEntry(label=label, mechanism=mechanism, loss=fn, params=params, seed=seed, secure=secure,
                       neighbours=as_neighbours(neighbours))


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
