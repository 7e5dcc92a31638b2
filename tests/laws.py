"""Goodness-of-fit checks shared by the tests of noise samplers: a χ² test of integer draws against a pmf."""

from __future__ import annotations

import numpy as np
from scipy import stats


def chi2_p(sample: np.ndarray, pmf, support: np.ndarray) -> float:
    """p-value of a χ² test of integer ``sample`` against ``pmf`` on ``support``, the mass beyond the support's
    largest |k| as one more cell; cells expecting 5 draws or fewer are left out and the rest rescaled."""
    sample = np.asarray(sample)
    obs = np.array([(sample == k).sum() for k in support] + [(np.abs(sample) > support.max()).sum()])
    p = pmf(support)
    exp = np.concatenate((p, [max(1 - p.sum(), 1e-12)])) * sample.size
    keep = exp > 5
    obs, exp = obs[keep], exp[keep]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue
