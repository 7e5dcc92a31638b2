"""Secure multi-tier release: the exact residual chain on OpenDP samplers (each tier with power), the exact coins
of the local simulation (with power), certified per-tier losses, and releases marked secure and unseeded."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from prdp_core.core.errors import ParameterError
from prdp_core.core.secure import SecureSampler
from prdp_core.mechanisms import multitier as mt
from prdp_core.mechanisms.multitier.noise_families import noise_family, tsg_pmf
from prdp_core.mechanisms.multitier.secure import (
    SecureGenerator,
    coin_slack,
    mixture_slack,
    secure_central,
    uniform_categories,
)
from tests.laws import chi2_p

S = SecureSampler()
N = 30_000
TIERS = {"public": 0.5, "researchers": 2.0, "agency": 8.0}


def test_secure_geometric_chain_reproduces_every_tier_with_power():
    """Tier i's noise is TSG(e^{−ε_i}) (the Eq.-(1) residual on OpenDP's discrete Laplace), with power against
    a 10% error in the scale; a chain whose residual weights were wrong would fail the lower tiers."""
    eps = [3.0, 1.0, 0.5]
    fam = noise_family("geometric")
    st = secure_central(fam, [np.zeros(0)] * N, eps, strategy="multitier", smp=S)
    support = np.arange(-40, 41)
    for i, e in enumerate(eps):
        x = st.estimates[i].astype(int)
        assert chi2_p(x, lambda k: tsg_pmf(k, e), support) > 1e-6, e
        assert chi2_p(x, lambda k: tsg_pmf(k, e * 1.1), support) < 1e-4, e
        assert chi2_p(x, lambda k: tsg_pmf(k, e / 1.1), support) < 1e-4, e
    assert st.total == pytest.approx(3.0) and st.certified[0] <= 3.0 * (1 + 1e-12)
    assert np.all(st.certified[1:] <= np.array(eps[1:]) + 1e-12)
    assert np.all(st.certified[1:] >= np.array(eps[1:]) - 1e-9)


def test_a_broken_residual_fails_the_audit():
    """Independent fresh draws per tier (no residual) keep each tier's law but not the chain's: tier 2 minus
    tier 1 is then not the Eq.-(1) residual (0 with probability w0 + w1·P(TSG(e^{−ε_2}) = 0))."""
    fam = noise_family("geometric")
    chain = secure_central(fam, [np.zeros(0)] * N, [3.0, 1.0], strategy="multitier", smp=S).estimates
    fresh = secure_central(fam, [np.zeros(0)] * N, [3.0, 1.0], strategy="independent", smp=S).estimates
    w0, w1 = mt.geometric_residual_weights(3.0, 1.0)
    p0 = w0 + w1 * float(tsg_pmf(0, 1.0))
    for out, ok in ((chain, True), (fresh, False)):
        zeros = int(np.sum(out[1] == out[0]))
        z = (zeros - N * p0) / math.sqrt(N * p0 * (1 - p0))
        assert (abs(z) < 4.5) is ok


def test_secure_multiscale_chain_matches_its_pmf():
    fam = noise_family("multiscale_geometric", sensitivity=2)
    st = secure_central(fam, [np.zeros(0)] * 20_000, [3.0, 1.5], strategy="multitier", smp=S)
    support = np.arange(-30, 31)
    for i, e in enumerate([3.0, 1.5]):
        x = st.estimates[i].astype(int)
        assert chi2_p(x, lambda k: fam.pmf(k, e), support) > 1e-6
        assert chi2_p(x, lambda k: fam.pmf(k, e * 1.15), support) < 1e-4


@pytest.mark.parametrize("family", ["laplace", "gaussian"])
def test_secure_continuous_families_have_the_claimed_scale_on_their_grid(family):
    fam = noise_family(family, sensitivity=1.0, delta=1e-5)
    eps = [4.0, 1.5]
    st = secure_central(fam, [np.zeros(0)] * N, eps, strategy="multitier", smp=S)
    g = st.grid
    assert np.all(st.estimates / g == np.rint(st.estimates / g))
    for i, e in enumerate(eps):
        sd = math.sqrt(fam.variance(fam.param(e)))
        emp = float(np.sqrt(np.mean(st.estimates[i] ** 2)))
        assert abs(emp / sd - 1) < 0.035, (i, emp, sd)   # a 10% error in the scale is far outside
    if family == "gaussian":  # a lower tier alone is certified at the top ρ (post-processing of tier 1)
        assert st.certified[1] == pytest.approx(st.certified[0])


def test_slacks_are_tiny_and_honest():
    w0, w1 = mt.geometric_residual_weights(3.0, 1.0)
    assert 0 < mixture_slack(w0, w1) < 1e-13
    assert mixture_slack(1.0, 0.0) == 0.0
    assert 0 < coin_slack(0.01, 100) < 1e-10
    assert coin_slack(1e-20, 10) == math.inf


def test_secure_generator_binomial_is_exact_with_power():
    gen = SecureGenerator(S)
    hits = gen.binomial(np.array([200_000]), 0.3)[0]
    se = math.sqrt(200_000 * 0.3 * 0.7)
    assert abs(hits - 60_000) < 4.5 * se
    assert abs(hits - 66_000) > 8 * se  # a 10% error in p would be seen
    out = gen.binomial(np.array([[5, 0, 7], [1, 2, 3]]), np.array([0.0, 0.5, 1.0]))
    assert out.shape == (2, 3) and out[0, 0] == 0 and out[0, 1] == 0 and out[1, 2] == 3 and out[0, 2] == 7
    assert isinstance(gen.binomial(10, 1.0), int) and gen.p_min == pytest.approx(0.3)


def test_secure_generator_multinomial_and_uniform_draws_with_power():
    gen = SecureGenerator(S)
    p = np.array([0.5, 0.3, 0.2])
    c = gen.multinomial(np.array([100_000, 50_000]), p)
    assert c.shape == (2, 3) and c.sum(axis=1).tolist() == [100_000, 50_000]
    assert stats.chisquare(c[0], p * 100_000).pvalue > 1e-6
    assert stats.chisquare(c[0], np.array([0.45, 0.33, 0.22]) * 100_000).pvalue < 1e-4
    u = uniform_categories(70_000, 7)
    obs = np.bincount(u, minlength=7)
    assert u.min() >= 0 and u.max() < 7 and stats.chisquare(obs).pvalue > 1e-6
    assert stats.chisquare(obs[:6], np.array([1.1, 1, 1, 1, 1, 1]) * obs[:6].sum() / 6.1).pvalue < 1e-4
    assert len(gen.bytes(17)) == 17
    assert gen.multinomial(30, np.full(4, 0.25)).sum() == 30


@pytest.mark.parametrize("family", ["geometric", "multiscale_geometric", "laplace", "gaussian"])
@pytest.mark.parametrize("strategy", ["multitier", "independent", "gradual"])
def test_secure_central_release_is_marked_certified_and_unseeded(family, strategy):
    rng = np.random.default_rng(2)
    tab = pd.DataFrame({"x": rng.integers(0, 30, 400).astype(float)})
    integer = family in ("geometric", "multiscale_geometric")
    q = mt.central_query(tab, "sum", measure="x", clip=8, integer=integer)
    plan = mt.plan_central(TIERS, family, sensitivity=float(q.sensitivity))
    rel = mt.release_central(plan, q.value, rng=None, secure=True, strategy=strategy,
                             contributions=q.contributions, records=q.mask)
    assert rel.secure and rel.seed is None and all(e.secure and e.seed is None for e in rel.entries)
    budgets = dict(zip([t.name for t in plan.tiers], plan.budgets()))
    for name, c in rel.params["certified"].items():
        assert c <= (max(plan.budgets()) if strategy != "independent" else sum(plan.budgets())) * (1 + 1e-9)
        if strategy == "multitier" and family != "gaussian":
            assert c <= budgets[name] + 1e-9
    if integer and strategy != "gradual":  # the gradual baseline averages its pieces
        assert np.all(rel.answers["estimate"] == np.rint(rel.answers["estimate"]))
    with pytest.raises(ParameterError, match="contributions"):
        mt.release_central(plan, q.value, rng=None, secure=True)


@pytest.mark.parametrize("mechanism", ["subset", "grr", "brr", "independent"])
def test_secure_local_release_is_marked_certified_and_unseeded(mechanism):
    x = np.random.default_rng(3).integers(0, 8, 3_000)
    plan = mt.plan_local(TIERS, 8)
    rel = mt.release_local(plan, x, rng=None, secure=True, mechanism=mechanism)
    assert rel.secure and rel.seed is None and all(e.secure and e.seed is None for e in rel.entries)
    for t in plan.tiers:
        assert t.eps - 1e-9 <= rel.params["certified"][t.name] <= t.eps + 1e-9 or mechanism == "subset"
        assert rel.params["certified"][t.name] <= t.eps + 1e-9
    if mechanism != "brr":  # a set report's debiased counts sum to n (BRR's independent bits do not)
        assert np.allclose(rel.answers.groupby("tier")["estimate"].sum(), x.size)


def test_secure_local_errors_match_the_plan():
    """200 secure GRR releases: each tier's mean squared error is near its planned variance n·V/d per category."""
    x = np.random.default_rng(5).integers(0, 4, 2_000)
    plan = mt.plan_local({"a": 3.0, "b": 1.0}, 4)
    errs = {"a": [], "b": []}
    for _ in range(200):
        a = mt.release_local(plan, x, rng=None, secure=True, mechanism="grr", reveal=True).answers
        for t, g in a.groupby("tier"):
            errs[t].extend((g["estimate"] - g["true"]) ** 2)
    for t, e in (("a", 3.0), ("b", 1.0)):
        planned = x.size * float(mt.grr_variance(e, 4)) / 4
        got = float(np.mean(errs[t]))
        assert abs(got / planned - 1) < 0.2, (t, got, planned)


def test_secure_local_coins_are_limited(monkeypatch):
    from prdp_core.core import limits
    from prdp_core.core.errors import ResourceLimitError

    monkeypatch.setattr(limits, "MAX_SECURE_COINS", 100)
    plan = mt.plan_local(TIERS, 4)
    with pytest.raises(ResourceLimitError, match="Coins of one secure local release"):
        mt.release_local(plan, np.zeros(500, dtype=int), rng=None, secure=True, mechanism="grr")
