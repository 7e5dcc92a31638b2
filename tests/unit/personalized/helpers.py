"""Shared checks of the personalized DP tests: drawing from output-range pieces and a chi-square test of a pmf."""

from __future__ import annotations

import numpy as np
from scipy import stats

from prdp_core.mechanisms.personalized.ranges import _draw_from_pieces


def chi2_p(draws, support, pmf):
    """p-value of a chi-square test of ``draws`` against ``pmf`` on ``support`` (small cells pooled)."""
    idx = np.searchsorted(support, draws)
    obs = np.bincount(idx, minlength=support.size)
    exp = pmf * draws.size
    keep = exp >= 5
    o = np.r_[obs[keep], obs[~keep].sum()]
    e = np.r_[exp[keep], exp[~keep].sum()]
    if e[-1] < 5:
        o[-2] += o[-1]
        e[-2] += e[-1]
        o, e = o[:-1], e[:-1]
    return stats.chisquare(o, e).pvalue


def piece_draws(pcs, logits, n, seed):
    """``n`` draws from output-range pieces with the given logits (the samplers' common last step)."""
    rng = np.random.default_rng(seed)
    return np.array([_draw_from_pieces(pcs, logits, rng) for _ in range(n)])
