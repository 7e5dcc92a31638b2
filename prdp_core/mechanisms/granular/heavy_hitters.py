"""PrivHeavyHitter (Algorithm 2 of Ghazi et al.): noisy heavy-hitter lists level by level.

Each node keeps the candidate strings whose Laplace-noised count passes τ; its privacy is computed
by the exact accountant of :mod:`prdp_core.mechanisms.granular.calibration`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ...core import noise
from ...core.errors import ParameterError, ResourceLimitError
from ...core.secure import SecureSampler
from ...core.validate import positive as _pos
from .calibration import hh_levels
from .data import AttributeData

#: Largest number of candidate strings one node of PrivHeavyHitter may test.
MAX_CANDIDATES: int = 4_000_000


# ---------------------------------------------------------------------------
# PrivHeavyHitter (Algorithm 2)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HeavyHitterRun:
    """Output of :func:`priv_heavy_hitters`: the final list and every node's list.

    ``codes`` — the final list L_[d] (one cell per row); ``counts`` — their exact counts
    (confidential, for the second stage); ``level_sizes[ℓ]`` — total list size over the
    nodes of level ℓ (ℓ = 0 are the leaves); ``level_candidates[ℓ]`` — strings tested.
    """

    codes: np.ndarray
    counts: np.ndarray
    levels: int
    lam: float
    mu: float
    tau: float
    level_sizes: tuple[int, ...]
    level_candidates: tuple[int, ...]
    pairs: Mapping[tuple[int, int], tuple[np.ndarray, np.ndarray]] = field(repr=False, default_factory=dict)
    leaf_sizes: tuple[int, ...] = ()

    def node_strings(self, level: int, index: int) -> np.ndarray:
        """The list L_I of node (level, index) as rows of leaf codes (padded attributes included)."""
        if level == 0:
            return np.arange(self.leaf_sizes[index])[:, None]
        lp, rp = self.pairs[(level, index)]
        return self._decode(level, index, np.arange(lp.size))

    def _decode(self, level: int, index: int, idx: np.ndarray) -> np.ndarray:
        if level == 0:
            return np.asarray(idx, dtype=np.int64)[:, None]
        lp, rp = self.pairs[(level, index)]
        return np.hstack((self._decode(level - 1, 2 * index, lp[idx]),
                          self._decode(level - 1, 2 * index + 1, rp[idx])))


def priv_heavy_hitters(data: AttributeData, *, lam: float, mu: float, tau: float,
                       rng: np.random.Generator | None = None, max_candidates: int = MAX_CANDIDATES,
                       sampler: SecureSampler | None = None) -> HeavyHitterRun:
    """PrivHeavyHitter (Algorithm 2): frequent attribute combinations, ε-∇0DP.

    The d attributes are the leaves of a binary tree (d padded to 2^L with constant
    attributes); leaf lists are the whole domains. At level ℓ = 1..L every node I tests the
    concatenations of its children's lists: count f^I_s, capped below at τ_ℓ − µ, plus
    Lap(λ), kept if above τ_ℓ = τ + (ℓ−1)µ. Each attribute lies in one node per level, so
    a one-attribute change costs :func:`hh_epsilon_exact` (λ, µ, L) — independent of τ and n.

    ``lam`` — Laplace scale λ (privacy); ``mu`` — threshold step µ ≥ 1 (privacy and list
    size); ``tau`` — base threshold τ (utility only; must not depend on the data beyond n).
    ``sampler``: secure mode — the noise is OpenDP's exact DLap(λ) on the integer counts and the test
    max(f, τ_ℓ − µ) + K > τ_ℓ is decided exactly (f + K > τ_ℓ, or K > µ for a capped count); its
    privacy is :func:`prdp_core.mechanisms.granular.discrete.hh_epsilon_discrete`.
    """
    lam = _pos("λ", lam)
    mu = _pos("µ", mu)
    tau = float(tau)
    if not math.isfinite(tau):
        raise ParameterError("The threshold τ must be a finite number.")
    n, d = data.n, data.d
    L = hh_levels(d)
    D = 1 << L
    sizes = list(data.domain_sizes) + [1] * (D - d)
    pairs: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    lvl_sizes = [0] * (L + 1)
    lvl_cand = [0] * (L + 1)
    lvl_sizes[0] = int(sum(sizes))

    def leaf(j: int) -> tuple[int, np.ndarray]:
        if j < d:
            return sizes[j], data.codes[:, j].astype(np.int32)
        return 1, np.zeros(n, dtype=np.int32)

    def node(level: int, index: int) -> tuple[int, np.ndarray]:
        if level == 0:
            return leaf(index)
        ls, lid = node(level - 1, 2 * index)
        rs, rid = node(level - 1, 2 * index + 1)
        m = ls * rs
        if m > max_candidates:
            raise ResourceLimitError(
                f"A node of the heavy-hitter tree would test {m:,} combinations (limit {max_candidates:,}).",
                hint="Use attributes with fewer categories, a larger error target ν or a smaller ε0.")
        valid = (lid >= 0) & (rid >= 0)
        key = lid[valid].astype(np.int64) * rs + rid[valid]
        del lid, rid
        counts = np.bincount(key, minlength=m)
        t = tau + (level - 1) * mu
        if sampler is None:
            noisy = np.maximum(counts, t - mu) + noise.laplace(lam, m, rng=rng)  # type: ignore[arg-type]  # rng is set when there is no exact sampler (NoiseSource.parts)
            keep = np.flatnonzero(noisy > t)
        else:
            k = sampler.laplace_answers(np.zeros(m, dtype=np.int64), 1.0, 1.0, 1.0 / lam).units
            keep = np.flatnonzero(np.where(counts >= t - mu, counts + k > t, k > mu))
        remap = np.full(m, -1, dtype=np.int32)
        remap[keep] = np.arange(keep.size, dtype=np.int32)
        ids = np.full(n, -1, dtype=np.int32)
        ids[valid] = remap[key]
        pairs[(level, index)] = (keep // rs, keep % rs)
        lvl_sizes[level] += int(keep.size)
        lvl_cand[level] += int(m)
        return int(keep.size), ids

    size, ids = node(L, 0)
    counts = np.bincount(ids[ids >= 0], minlength=size).astype(np.int64)
    run = HeavyHitterRun(np.zeros((0, d), dtype=np.int64), counts, L, lam, mu, tau, tuple(lvl_sizes),
                         tuple(lvl_cand), pairs, tuple(sizes))
    codes = run._decode(L, 0, np.arange(size))[:, :d] if L > 0 else np.arange(size)[:, None]
    return HeavyHitterRun(codes, counts, L, lam, mu, tau, tuple(lvl_sizes), tuple(lvl_cand), pairs, tuple(sizes))
