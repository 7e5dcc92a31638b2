"""Algorithms 1 and 2 and the naive baseline: release contents, loss formulas, the split option, small tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.accounting import Ledger, RecordLoss
from prdp_core.core.errors import ParameterError, PolicyError
from prdp_core.mechanisms.prdp.budget import inverse, log_budget
from prdp_core.mechanisms.prdp.central import count, framework, naive

INV = inverse(1e4, "BALANCE")


def test_count_release_contents(normal):
    e = INV(normal)
    r = count(e, eps_min=INV.eps_min, eps_max=INV.eps_max, beta=0.1, rng=np.random.default_rng(0), reveal=True)
    dp = INV.domains()
    ell = r.extras["ell"]
    assert r.extras["eps_tau"] == pytest.approx(dp.lo[ell - 1]) and r.extras["passed"]
    assert r.answers.loc[0, "true"] == len(normal)
    assert abs(r.answers.loc[0, "error"]) < 200
    np.testing.assert_allclose(r.loss, dp.lo[dp.index(e) - 1])
    np.testing.assert_allclose(r.extras["scales"], 1 / dp.lo)
    assert r.extras["private_dropped"] == int(np.sum(dp.index(e) < ell))
    assert r.check_delivered_within_requested()
    # ε_τ ≥ ε_min(D) / 2 (Thm 5.1, with probability ≥ 1 − β)
    assert r.extras["eps_tau"] >= e.min() / 2
    review = r.for_review()
    assert "true" not in review.answers and review.loss is None
    assert not any(k.startswith("private_") for k in review.extras)


def test_count_when_no_domain_passes_uses_the_last_domain():
    r = count([1e-8] * 3, eps_min=1e-8, eps_max=100.0, beta=0.1, rng=np.random.default_rng(1))
    assert not r.extras["passed"] and r.extras["ell"] == 34
    assert r.extras["eps_tau"] == pytest.approx(1e-8 * 2**33)
    assert abs(r.answers.loc[0, "estimate"]) < 1  # the last domain is empty: only tiny noise
    assert r.check_delivered_within_requested()


def test_count_validates_inputs():
    with pytest.raises(PolicyError, match="below ε̌"):
        count([0.5, 1e-9], eps_min=1e-8, eps_max=1.0, beta=0.1, rng=np.random.default_rng(0))
    with pytest.raises(ParameterError, match="β"):
        count([0.5], eps_min=1e-8, eps_max=1.0, beta=1.0, rng=np.random.default_rng(0))
    with pytest.raises(ParameterError, match="Generator"):
        count([0.5], eps_min=1e-8, eps_max=1.0, beta=0.1, rng=0)
    # budgets above ε̂ are capped (charged less than they allow)
    r = count([5.0, 0.5], eps_min=0.1, eps_max=1.0, beta=0.1, rng=np.random.default_rng(0))
    assert r.check_delivered_within_requested() and r.loss.max() <= 1.0


@pytest.mark.parametrize("query", ["count", "sum", "max", "distinct:BRANCH"])
def test_framework_release_and_loss_formula(normal, query):
    r = framework(normal, INV, query, beta=0.1, rng=np.random.default_rng(2), reveal=True)
    dp = INV.domains()
    idx = dp.index(INV(normal))
    ell = r.extras["ell"]
    eps_tau = dp.lo[ell - 1]
    assert r.extras["eps_M"] == pytest.approx(eps_tau / 2)
    np.testing.assert_allclose(r.loss, dp.lo[idx - 1] / 2 + np.where(idx >= ell, eps_tau / 2, 0))
    assert r.check_delivered_within_requested()
    assert r.extras["private_dropped"] == int(np.sum(idx < ell))
    assert r.mechanism == f"prdp.framework.{query.split(':')[0]}"
    entry = r.entries[0]
    assert isinstance(entry.loss, RecordLoss) and entry.loss.measure == "eps"
    np.testing.assert_allclose(Ledger([entry]).total(normal, "eps"), r.loss)
    row = r.answers.iloc[0]
    assert row["rel_error"] < {"count": 0.01, "sum": 0.02, "max": 0.6, "distinct:BRANCH": 5}[query]


def test_framework_on_an_empty_and_a_tiny_table():
    empty = pd.DataFrame({"BALANCE": np.array([], dtype=float)})
    for q in ("count", "sum", "max"):
        r = framework(empty, INV, q, beta=0.1, rng=np.random.default_rng(0), reveal=True)
        assert r.loss.size == 0 and not r.extras["passed"]
    tiny = pd.DataFrame({"BALANCE": [10.0, 20.0, 5e5]})
    r = framework(tiny, INV, "sum", beta=0.1, rng=np.random.default_rng(0))
    assert r.check_delivered_within_requested()


def test_naive_baseline_uses_the_global_minimum(normal):
    r = naive(normal, INV, "count", beta=0.1, rng=np.random.default_rng(12), reveal=True)
    assert np.all(r.loss == INV.eps_min) and r.check_delivered_within_requested()
    assert r.answers.loc[0, "rel_error"] > 1  # 1/ε̌ = 10^8 noise on a count of 50,000


def _boundary_table() -> pd.DataFrame:
    """Balances whose budget falls exactly on domain boundaries, and ordinary ones."""
    bud = inverse(1e4, "v")
    lo = bud.domains().lo
    exact = 1e4 / lo[(lo <= 1e4) & (lo >= 1e-6)]  # E(v) = 2^{i−1}ε̌ exactly (up to rounding)
    rng = np.random.default_rng(3)
    return pd.DataFrame({"v": np.concatenate((exact, np.abs(rng.normal(5e4, 5e4, 4000)), [0.0, 1.0, 1e12]))})


@pytest.mark.parametrize("share", [0.5, 1 / 3, 0.25, 0.1, 0.9, 0.37])
@pytest.mark.parametrize("query", ["count", "sum", "max", "distinct:v"])
def test_split_option_keeps_every_record_within_its_budget(share, query):
    t = _boundary_table()
    bud = inverse(1e4, "v")
    for seed in range(4):
        r = framework(t, bud, query, beta=0.1, rng=np.random.default_rng(seed), eps_share=share, beta_share=0.3)
        dp = bud.domains()
        idx = dp.index(bud(t))
        ell = r.extras["ell"]
        assert np.all(r.loss <= bud(t)), (share, float(np.max(r.loss - bud(t))))  # exactly, no tolerance
        part2 = np.where(idx >= ell, r.extras["eps_M"], 0.0)
        np.testing.assert_allclose(r.loss, share * dp.lo[idx - 1] + part2, rtol=1e-12)
        assert r.extras["eps_M"] <= (1 - share) * dp.lo[ell - 1] * (1 + 1e-15)
        assert r.params["eps_share"] == share and r.params["beta_share"] == 0.3
        assert f"{share:g}·2^(i−1)·ε̌" in r.entries[0].loss.note


def test_default_split_is_the_paper_and_unchanged():
    t = _boundary_table()
    bud = log_budget(500, "v", k=4)
    a = framework(t, bud, "sum", beta=0.1, rng=np.random.default_rng(5))
    b = framework(t, bud, "sum", beta=0.1, rng=np.random.default_rng(5), eps_share=0.5, beta_share=0.5)
    assert a.answers["estimate"].iloc[0] == b.answers["estimate"].iloc[0]
    np.testing.assert_array_equal(a.loss, b.loss)
    dp = bud.domains()
    idx = dp.index(bud(t))
    ell = a.extras["ell"]
    np.testing.assert_array_equal(a.loss, np.ldexp(dp.eps_min / 4, idx) + np.where(idx >= ell, dp.lo[ell - 1] / 2, 0))
    assert "eps_share" not in a.params and "2^(i−2)·ε̌ + ε_τ/2" in a.entries[0].loss.note
    with pytest.raises(ParameterError, match="between 0.01 and 0.99"):
        framework(t, bud, "sum", beta=0.1, rng=np.random.default_rng(5), eps_share=1.0)


def test_secure_framework_with_a_split():
    t = _boundary_table()
    t["v"] = np.rint(t["v"])
    bud = inverse(1e4, "v")
    r = framework(t, bud, "count", beta=0.1, secure=True, eps_share=0.25)
    assert r.secure and r.check_delivered_within_requested(rtol=0.0)
    assert math.isclose(r.extras["eps_M"], 0.75 * bud.domains().lo[r.extras["ell"] - 1], rel_tol=1e-12)
