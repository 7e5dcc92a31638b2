"""Shared checks of the secure samplers' laws: a χ² test against the discrete Laplace pmf and a
deliberately miscalibrated sampler that such a test must reject."""

from __future__ import annotations

import numpy as np

from prdp_core.core import noise
from prdp_core.core.secure import SecureSampler
from tests.laws import chi2_p


class SkewedSampler(SecureSampler):
    """A deliberately broken sampler: its discrete Laplace is calibrated to ``factor`` × the budget
    (factor 1.1 gives a scale 10% too small)."""

    def __init__(self, factor: float, bits: int = 10) -> None:
        super().__init__(bits)
        self.factor = factor

    def laplace_answers(self, units, grid, sensitivity, eps):  # type: ignore[override]
        return super().laplace_answers(units, grid, sensitivity, eps * self.factor)


def chi2_dlap_p(sample: np.ndarray, scale: float) -> float:
    """χ² p-value of integer ``sample`` against the discrete Laplace P(k) ∝ e^{−|k|/scale}."""
    sample = np.asarray(sample)
    support = np.arange(-int(12 * scale) - 2, int(12 * scale) + 3)
    return chi2_p(sample, lambda k: noise.two_sided_geometric_pmf(k, 1.0 / scale), support)


class BatchSampler(SecureSampler):
    """Records, for each call a release makes, 30,000 more draws with the very same arguments (grid,
    sensitivity, budget): a sample of the law of the noise that call added."""

    def laplace_answers(self, units, grid, sensitivity, eps):  # type: ignore[override]
        a = super().laplace_answers(units, grid, sensitivity, eps)
        self.batches = getattr(self, "batches", []) + [
            super().laplace_answers(np.zeros(30_000, dtype=np.int64), grid, sensitivity, eps).units]
        return a


class BrokenBatchSampler(BatchSampler, SkewedSampler):
    """:class:`BatchSampler` over a sampler whose scale is 10% too small."""
