"""Partition selection on split data: Gaussian thresholding of each candidate cell's split rows, its
plan over a workload's group-by sets and the appearance probability δ(r) of a record's cells."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pandas as pd
from scipy import stats

from ...core.errors import ParameterError
from ...core.secure import SecureSampler, to_units
from ...core.workload import SplittingPolicy
from ...data.codes import GroupCells as _Factorizer
from .stats import _key_index


@dataclass(frozen=True)
class PartitionSelection:
    """Gaussian thresholding on split data (see the module docstring).

    ``rho`` is the zCDP budget of one selection (its noisy piece counts cost ρ·m(r)² per
    record); ``delta`` sets the threshold so that a cell holding a single one-piece record
    appears with probability at most δ.
    """

    rho: float
    delta: float = 1e-6

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rho) and self.rho > 0):
            raise ParameterError("The partition-selection budget must be positive.")
        if not (0 < self.delta < 0.5):
            raise ParameterError("The partition-selection δ must be in (0, 0.5).")

    @property
    def sigma(self) -> float:
        return 1.0 / math.sqrt(2.0 * self.rho)

    @property
    def tau(self) -> float:
        return 1.0 + self.sigma * float(stats.norm.isf(self.delta))

    def keep_probability(self, pieces: np.ndarray | float) -> np.ndarray:
        """P(a cell with this many split rows is kept) = Φ̄((τ − pieces)/σ)."""
        return stats.norm.sf((self.tau - np.asarray(pieces, dtype=float)) / self.sigma)

    def record_delta(self, m: np.ndarray | float) -> np.ndarray:
        """δ(r): probability that a record alone in its cell makes that cell appear."""
        return self.keep_probability(m)

    def select(self, pieces: np.ndarray, rng: np.random.Generator | None,
               sampler: SecureSampler | None = None) -> np.ndarray:
        """Cells kept: pieces + N(0, σ²) > τ. With a secure ``sampler`` the noise is OpenDP's discrete
        Gaussian on the grid 2^−bits (sensitivity one piece = 2^bits grid steps, so σ maps exactly)."""
        if sampler is not None:
            g = sampler.grid(1.0)
            units = to_units(np.asarray(pieces, dtype=float), g)
            noisy = sampler.gaussian_answers(units, g, 1.0, self.rho).estimate
            return noisy.reshape(np.shape(pieces)) > self.tau
        noise = rng.normal(0.0, self.sigma, size=np.shape(pieces))  # type: ignore[union-attr]  # rng is set when there is no exact sampler (NoiseSource.parts)
        return pieces + noise > self.tau


def partition_record_delta(policy: SplittingPolicy, pieces: np.ndarray | float, partition_delta: float = 1e-6,
                           public: Iterable[tuple[str, ...]] = ()) -> np.ndarray:
    """δ(r) added by partition selection for a record cut into ``pieces`` pieces (public function of m).

    The workload's ρ_ps is split over its k distinct group-by sets; a record alone in its cells can
    make one cell appear in each: δ(r) = min(1, k·Φ̄((τ − m(r))/σ)) (basic composition). Zero when the
    workload has no partition selection or no group-by. Group-bys in ``public`` (with a public key
    list) need no selection.
    """
    wl = policy.workload
    sets, ps = selection_plan((q.group_by for q in wl.queries), wl.partition_rho, partition_delta, public)
    m = np.asarray(pieces, dtype=float)
    if ps is None:
        return np.zeros_like(m)
    return np.minimum(1.0, len(sets) * ps.record_delta(m))


def selection_plan(group_bys: Iterable[tuple[str, ...]], partition_rho: float, partition_delta: float,
                   public: Iterable[tuple[str, ...]] = ()) -> tuple[list[tuple[str, ...]], PartitionSelection | None]:
    """The group-by sets whose keys are found by partition selection, and the selection each runs.

    Every distinct non-empty group-by not in ``public`` (sets with a public key list) is selected
    once; ρ_ps = ``partition_rho`` is split evenly over them (basic composition). ``(sets, None)``
    when nothing is selected. The one rule the release, δ(r) and the error analysis share."""
    skip = set(public or ())
    sets = list(dict.fromkeys(gb for gb in group_bys if gb and gb not in skip))
    if partition_rho <= 0 or not sets:
        return sets, None
    return sets, PartitionSelection(partition_rho / len(sets), partition_delta)


def selection_cells(table: pd.DataFrame, group_by: tuple[str, ...], *, factorizer: _Factorizer | None = None
                    ) -> tuple[pd.DataFrame, np.ndarray]:
    """Candidate cells of a partition selection over ``group_by``: the keys present among all records
    (whatever a query's filter) and each record's cell."""
    return (factorizer if factorizer is not None else _Factorizer(table)).all_cells(group_by)


def _select_cells(sets: list[tuple[str, ...]], ps: PartitionSelection | None, set_pieces: Any, rng: Any,
                  smp: SecureSampler | None) -> tuple[dict[tuple[str, ...], pd.Index], dict[tuple[str, ...], int]]:
    """Partition selection: the cells kept in each selected group-by set (noise drawn set by set, in
    order), from ``set_pieces(gb)`` = (candidate keys, split rows per candidate)."""
    kept: dict[tuple[str, ...], pd.Index] = {}
    candidates: dict[tuple[str, ...], int] = {}
    if ps is not None:
        for gb in sets:
            keys, pcs = set_pieces(gb)
            kept[gb] = _key_index(keys[ps.select(pcs, rng, smp)])
            candidates[gb] = len(keys)
    return kept, candidates
