"""Per-record local DP: Algorithms 3–5, their exact aggregate sampler and thresholds."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import prdp_core
from prdp_core.core.domains import DomainPartition
from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.prdp import local as prldp
from prdp_core.mechanisms.prdp.budget import inverse
from prdp_core.mechanisms.prdp.experiments import trimmed_mean

INV = inverse(1e4, "BALANCE")


def test_laplace_sum_is_exactly_a_sum_of_laplace_with_power():
    rng = np.random.default_rng(0)
    n, b = 7, 2.0
    direct = rng.laplace(0, b, size=(40_000, n)).sum(axis=1)
    fast = prldp.laplace_sum(n, b, rng=rng, size=40_000)
    assert stats.ks_2samp(direct, fast).pvalue > 1e-3
    wrong = prldp.laplace_sum(n, 0.9 * b, rng=rng, size=40_000)
    assert stats.ks_2samp(direct, wrong).pvalue < 1e-4
    wrong = prldp.laplace_sum(n, 1.1 * b, rng=rng, size=40_000)
    assert stats.ks_2samp(direct, wrong).pvalue < 1e-4
    assert np.all(prldp.laplace_sum(0, b, rng=rng, size=5) == 0)


def test_randomiser_reports_and_analyser():
    e = np.array([1e-8, 0.5, 100.0, 0.02])
    rep = prldp.randomise(e, eps_min=1e-8, eps_max=100.0, rng=np.random.default_rng(1))
    dp = DomainPartition(1e-8, 100.0)
    assert rep.shape == (4, dp.L)
    # a party's report differs from ⊥'s (all-noise) in its own domain only: the loss is 2^{i−1}ε̌
    many = np.stack([prldp.randomise(e, eps_min=1e-8, eps_max=100.0, rng=np.random.default_rng(s)) for s in range(300)])
    mean = many.mean(axis=0)
    idx = dp.index(e)
    for j in range(4):
        assert mean[j, idx[j] - 1] == pytest.approx(1.0, abs=6 / dp.lo[idx[j] - 1] / math.sqrt(300))
    out = prldp.analyse(rep, eps_min=1e-8, eps_max=100.0, beta=0.1)
    assert set(out) >= {"eps_tau", "ell", "estimate", "totals", "thresholds", "passed"}
    assert out["estimate"] == pytest.approx(rep.sum(axis=0)[out["ell"] - 1:].sum())
    with pytest.raises(ParameterError):
        prldp.analyse(rep[:, :3], eps_min=1e-8, eps_max=100.0, beta=0.1)


def test_thresholds_paper_and_bernstein():
    lo = np.array([0.01, 0.02, 0.04])
    paper = prldp.local_thresholds(200_000, lo, 0.1, "paper")
    np.testing.assert_allclose(paper, math.sqrt(8 * 200_000) * math.log(3 / 0.1) / lo)
    tight = prldp.local_thresholds(200_000, lo, 0.1, "bernstein")
    np.testing.assert_allclose(tight, math.sqrt(8 * 200_000 * math.log(6 / 0.1)) / lo)
    assert np.all(tight < paper)
    # tiny n: the sub-exponential bound does not apply, the paper's value is kept
    np.testing.assert_allclose(prldp.local_thresholds(1, lo, 0.1, "bernstein"), prldp.local_thresholds(1, lo, 0.1))
    with pytest.raises(ParameterError):
        prldp.local_thresholds(10, lo, 0.1, "median")


@pytest.fixture(scope="module")
def normal() -> pd.DataFrame:
    return prdp_core.data.samples.load("bank_normal_50k", n=200_000, seed=0)


def test_local_count_release(normal):
    r = prldp.count(INV(normal), eps_min=INV.eps_min, eps_max=INV.eps_max, beta=0.1, rng=np.random.default_rng(2),
                 reveal=True)
    assert r.check_delivered_within_requested() and r.mechanism == "prldp.count"
    assert r.extras["private_dropped"] == int(r.extras["private_domain_counts"][: r.extras["ell"] - 1].sum())


def test_appendix_b_count_error_with_the_tight_threshold(normal):
    """Appendix B reports 9.84% for Normal(50k): the Bernstein threshold reproduces it, the printed
    √(8n)·ln(L/β) threshold drops one more domain (about 50%)."""
    tight = trimmed_mean(prldp.simulate(normal, INV, "count", "count", beta=0.1, trials=30,
                                       rng=np.random.default_rng(3), threshold="bernstein"))
    paper = trimmed_mean(prldp.simulate(normal, INV, "count", "count", beta=0.1, trials=30,
                                       rng=np.random.default_rng(3)))
    assert 0.0984 / 2 < tight < 0.0984 * 2
    assert paper > tight
    naive = trimmed_mean(prldp.simulate(normal, INV, "count", "naive", beta=0.1, trials=10,
                                        rng=np.random.default_rng(4)))
    assert naive > 1


def test_local_framework_losses_and_clip_bound(normal):
    r = prldp.framework(normal, INV, "sum", beta=0.1, rng=np.random.default_rng(5), threshold="bernstein", reveal=True)
    dp = INV.domains()
    e = INV(normal)
    eps_tau = r.extras["eps_tau"]
    kept = e >= eps_tau * (1 - 1e-12)
    np.testing.assert_allclose(r.loss, dp.lo[dp.index(e) - 1] / 2 + np.where(kept, eps_tau / 2, 0))
    assert r.extras["tau"] == pytest.approx(1e4 / eps_tau)  # sup{v : E(v) ≥ ε_τ} for E = α/v
    assert normal.BALANCE[kept].max() <= r.extras["tau"]
    assert r.check_delivered_within_requested()
    with pytest.raises(ParameterError, match="count and sum"):
        prldp.framework(normal, INV, "max", beta=0.1, rng=np.random.default_rng(0))
