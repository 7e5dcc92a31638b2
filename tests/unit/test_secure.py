"""Secure release mode: exact OpenDP samplers, the grid, calibration and the secure release paths."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import prdp_core
from prdp_core.core import noise
from prdp_core.core.accounting import Ledger
from prdp_core.core.errors import ParameterError, PolicyError
from prdp_core.core.secure import (
    SECURE_LABEL,
    TEACHING_LABEL,
    SecureSampler,
    exact_cell_sums,
    grid_for,
    mode_label,
    to_units,
    units_ceil,
)
from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Query, SplittingPolicy, Workload
from prdp_core.mechanisms.prdp.answers import RankMax
from prdp_core.mechanisms.prdp.budget import inverse
from prdp_core.mechanisms.prdp.central import count, framework
from prdp_core.mechanisms.prdp.queries import FrameworkQuery
from prdp_core.mechanisms.unit_splitting import PartitionSelection, release
from tests.laws import chi2_p

S = SecureSampler()
N = 30_000


def test_grid_is_an_exact_power_of_two_below_the_sensitivity():
    for d in (1.0, 3.0, 40.0, 1e-7, 123456.789, 2.0**40):
        g = grid_for(d)
        assert math.frexp(g)[0] == 0.5
        assert 2**10 <= d / g < 2**11
    assert grid_for(40.0, bits=0) == 32.0
    assert units_ceil(40.0, grid_for(40.0)) == 1280
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ParameterError):
            grid_for(bad)
    with pytest.raises(ParameterError):
        SecureSampler(bits=-1)
    with pytest.raises(ParameterError):
        to_units(np.array([1e300]), 1.0)
    with pytest.raises(ParameterError):
        to_units(np.array([math.nan]), 1.0)


def test_exact_cell_sums_match_python_integers():
    rng = np.random.default_rng(0)
    u = rng.integers(-(2**45), 2**45, 5_000)
    c = rng.integers(0, 9, 5_000)
    want = [sum(int(x) for x in u[c == k]) for k in range(9)]
    assert exact_cell_sums(c, u, 9).tolist() == want
    # float bincount would have lost the low bits
    assert not np.array_equal(np.bincount(c, weights=u.astype(float) + 0.25, minlength=9).astype(np.int64), want)


@pytest.mark.parametrize("sigma", [1.5, 6.0])
def test_discrete_gaussian_exact_law_with_power(sigma):
    x = S.gaussian_answers(np.zeros(N, dtype=np.int64), 1.0, 1.0, 1.0 / (2 * sigma**2)).units
    support = np.arange(-int(8 * sigma) - 2, int(8 * sigma) + 3)
    assert chi2_p(x, lambda k: noise.discrete_gaussian_pmf(k, sigma), support) > 1e-6
    assert chi2_p(x, lambda k: noise.discrete_gaussian_pmf(k, 0.9 * sigma), support) < 1e-4
    assert chi2_p(x, lambda k: noise.discrete_gaussian_pmf(k, 1.1 * sigma), support) < 1e-4


@pytest.mark.parametrize("eps", [0.4, 1.5])
def test_discrete_laplace_exact_law_with_power(eps):
    a = S.laplace_answers(np.zeros(N, dtype=np.int64), 1.0, 1.0, eps)
    assert np.allclose(a.loss, eps) and np.allclose(a.scale, 1 / eps)
    support = np.arange(-40, 41)
    x = a.units
    assert chi2_p(x, lambda k: noise.two_sided_geometric_pmf(k, eps), support) > 1e-6
    assert chi2_p(x, lambda k: noise.two_sided_geometric_pmf(k, eps * 1.1), support) < 1e-4
    assert chi2_p(x, lambda k: noise.two_sided_geometric_pmf(k, eps / 1.1), support) < 1e-4


def test_quantised_gaussian_on_a_fine_grid_has_the_claimed_sigma_with_power():
    """Δ = 40 on the grid 1/32: σ_eff = g·⌈Δ/g⌉/√(2ρ) = Δ/√(2ρ) (Δ/g is an integer), KS with power."""
    rho = 0.5
    a = S.gaussian_answers(np.zeros(N, dtype=np.int64), grid_for(40.0), 40.0, rho)
    sigma = 40.0 / math.sqrt(2 * rho)
    assert np.allclose(a.scale, sigma) and np.all(a.loss <= rho * (1 + 1e-12))
    assert np.all(np.mod(a.estimate, a.grid) == 0)
    assert stats.kstest(a.estimate, stats.norm(scale=sigma).cdf).pvalue > 1e-6
    assert stats.kstest(a.estimate, stats.norm(scale=0.9 * sigma).cdf).pvalue < 1e-4
    assert stats.kstest(a.estimate, stats.norm(scale=1.1 * sigma).cdf).pvalue < 1e-4


@pytest.mark.parametrize("sens", [1.0, 3.3, 40.0, 1e6 + 0.1])
def test_rounded_up_sensitivity_never_weakens_the_guarantee(sens):
    g = grid_for(sens)
    for eps in (0.01, 1.0):
        a = S.laplace_answers(np.zeros(3, dtype=np.int64), g, sens, eps)
        assert np.all(a.loss <= eps * (1 + 1e-12))
        assert np.all(a.scale >= sens / eps) and np.all(a.scale <= sens / eps * (1 + 2.0**-10) * (1 + 1e-12))
        b = S.gaussian_answers(np.zeros(3, dtype=np.int64), g, sens, eps)
        sigma = sens / math.sqrt(2 * eps)
        assert np.all(b.loss <= eps * (1 + 1e-12))
        assert np.all(b.scale >= sigma) and np.all(b.scale <= sigma * (1 + 2.0**-10) * (1 + 1e-12))
    # a contribution of exactly Δ never exceeds ⌈Δ/g⌉ grid units
    assert to_units(np.array([sens]), g)[0] <= units_ceil(sens, g)


def test_drop_in_noise_and_unseeded_draws():
    x = S.laplace(2.0, 1_000)
    assert np.all(x == np.rint(x))  # sensitivity 1: integer grid
    y = S.gaussian(3.0, 1_000, sensitivity=7.0)
    assert np.all(np.mod(y, grid_for(7.0)) == 0)
    assert isinstance(S.laplace(1.0), float)
    assert not np.array_equal(S.laplace(5.0, 200), S.laplace(5.0, 200))  # fresh randomness each call


def test_secure_selection_law_and_its_privacy():
    """(Unseeded: acceptance at p > 1e-6, power far below 1e-4.) OpenDP's report-noisy-max matches its exact law;
    on monotone neighbouring scores the log-ratio of every outcome is at most ε (and reaches a good part of it)."""
    eps = 1.0
    scores = np.array([0.0, -1.0, -3.0])
    draws = np.array([S.select(scores, eps, monotonic=True)[0] for _ in range(3_000)])
    probs = noise.noisy_max_exponential_probs(scores, 1.0 / eps)
    assert abs(probs.sum() - 1) < 1e-6
    obs = np.bincount(draws, minlength=3)
    assert stats.chisquare(obs, probs * draws.size).pvalue > 1e-6
    assert stats.chisquare(obs, noise.noisy_max_exponential_probs(scores, 1.5 / eps) * draws.size).pvalue < 1e-4
    worst = 0.0
    for shift in np.eye(3):  # a neighbour moves some scores by one in the same direction
        for s2 in (scores - shift, scores + shift, scores - 1 + shift):
            q = noise.noisy_max_exponential_probs(s2, 1.0 / eps)
            worst = max(worst, float(np.max(np.abs(np.log(probs) - np.log(q)))))
    assert 0.3 * eps < worst <= eps + 1e-6
    assert S.select(scores, eps)[1] == pytest.approx(eps)
    with pytest.raises(ParameterError):
        S.select(np.array([0.5, 1.0]), eps)
    with pytest.raises(ParameterError):
        S.select(np.array([]), eps)


def test_mode_labels():
    assert mode_label(True) == SECURE_LABEL == "secure (exact OpenDP samplers, unseeded)"
    assert mode_label(False) == TEACHING_LABEL == "seeded teaching run"


# ---------------------------------------------------------------------------
# Secure release paths
# ---------------------------------------------------------------------------


def _policy(T: float = 40.0, rho: float = 0.5, partition_rho: float = 0.0, group_col: str | None = None,
            thresholds=None) -> SplittingPolicy:
    thr = as_thresholds(thresholds or {"v": T}, group_col=group_col) if group_col else as_thresholds({"v": T})
    qs = (Query("sum", "v", rho=rho, group_by=("g",)), Query("count", rho=0.2, group_by=("g",)),
          Query("avg", "v", rho=0.3, rho_count=0.1), Query("sum", "v", rho=0.2, split=False, clamp=55.5))
    return SplittingPolicy(thr, Workload(qs, partition_rho=partition_rho))


def test_secure_unit_splitting_release_is_marked_on_the_grid_and_within_policy():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"id": range(400), "g": rng.integers(0, 5, 400), "o": rng.integers(0, 90, 400),
                       "v": rng.pareto(1.2, 400) * 30})
    pol = _policy(partition_rho=0.05)
    rel = release(df, pol, secure=True, reveal=True, owner_col="o")
    assert rel.secure and rel.seed is None and rel.entries[0].secure and rel.entries[0].seed is None
    assert rel.params["secure"]["bits"] == 10
    grids = rel.extras["grid"]
    a = rel.answers
    for q, g in grids.items():
        sub = a[a["query"] == q]
        if "AVG" not in q:
            assert np.all(np.mod(sub["estimate"].to_numpy(), g) == 0), q
    # σ is at least the continuous one
    s1 = a[a["query"] == "1. SUM(v) BY g"]["sigma"]
    assert np.all(s1 >= 40.0) and np.all(s1 <= 40.0 * (1 + 2.0**-10) + 1e-12)
    assert np.all(rel.extras["private_realized"] <= rel.loss * (1 + 1e-9) + 1e-12)
    own = prdp_core.core.loss_profile.owner_losses(rel.loss, df["o"])
    assert np.all(rel.extras["private_owner_realized"].reindex(own.index).to_numpy() <= own.to_numpy() * (1 + 1e-9))
    led = Ledger().extend(rel.entries)
    assert bool(led.summary()["secure"].iloc[0])
    assert Ledger.from_dict(led.to_dict()).entries[0].secure


def test_secure_release_per_group_thresholds_and_explicit_sampler():
    df = prdp_core.data.samples.load("table2_example")
    thr = as_thresholds({"Mining": {"Employees": 50, "Payroll": 1e7}, "*": {"Employees": 50, "Payroll": 5e6}},
                        group_col="Industry")
    pol = SplittingPolicy(thr, Workload((Query("sum", "Payroll", rho=0.5, group_by=("Industry",)),)))
    keys = {("Industry",): pd.DataFrame({"Industry": ["Agriculture", "Mining", "Retail"]})}  # a public list
    rel = release(df, pol, sampler=SecureSampler(bits=4), reveal=True, public_keys=keys)
    g = rel.extras["grid"]["1. SUM(Payroll) BY Industry"]
    assert g == grid_for(5e6, 4)
    sig = dict(zip(rel.answers["Industry"], rel.answers["sigma"]))
    assert sig["Mining"] >= 1e7 and sig["Retail"] >= 5e6 and sig["Mining"] > sig["Retail"]


def test_secure_gaussian_noise_of_a_release_has_the_claimed_sigma_with_power():
    rng = np.random.default_rng(1)
    g = np.repeat(np.arange(20_000), 2)
    df = pd.DataFrame({"id": np.arange(g.size), "g": g, "v": rng.integers(0, 300, g.size).astype(float)})
    pol = SplittingPolicy(as_thresholds({"v": 40.0}), Workload((Query("sum", "v", rho=0.5, group_by=("g",)),)))
    rel = release(df, pol, secure=True, reveal=True, owner_realized=False,
                  public_keys={("g",): pd.DataFrame({"g": np.arange(20_000)})})
    err = rel.answers["error"].to_numpy()
    assert stats.kstest(err, stats.norm(scale=40.0).cdf).pvalue > 1e-6
    assert stats.kstest(err, stats.norm(scale=36.0).cdf).pvalue < 1e-4
    assert stats.kstest(err, stats.norm(scale=44.0).cdf).pvalue < 1e-4


@pytest.mark.parametrize("scaled", [True, False])
def test_secure_joint_sum_release_has_the_claimed_sigmas_with_power(scaled):
    """Each coordinate of a secure joint SUM release is a discrete Gaussian at the σ of the teaching
    release (σ_a = T(a)·√k/√(2ρ), or √ΣT²/√(2ρ)), with power against ±10%; the record's realized loss
    stays within ρ·m(r)²; the ledger says secure and unseeded."""
    from prdp_core.mechanisms.unit_splitting import joint_sum_release, joint_sum_sigmas

    rng = np.random.default_rng(3)
    k = 15_000
    g = np.repeat(np.arange(k), 2)
    df = pd.DataFrame({"id": np.arange(g.size), "g": g, "a": rng.integers(0, 300, g.size).astype(float),
                       "b": rng.uniform(0, 5_000, g.size)})
    thr = {"a": 40.0, "b": 900.0}
    keys = {("g",): pd.DataFrame({"g": np.arange(k)})}
    rel = joint_sum_release(df, thr, ["a", "b"], rho=0.5, secure=True, reveal=True, group_by=("g",),
                            scaled=scaled, public_keys=keys)
    assert rel.secure and rel.seed is None and rel.entries[0].secure and set(rel.extras["grid"]) == {"a", "b"}
    want = joint_sum_sigmas(thr, 0.5, scaled=scaled)
    for i, m in enumerate(("a", "b")):
        err = rel.answers.loc[rel.answers["query"].cat.codes == i, "error"].to_numpy()
        assert stats.kstest(err, stats.norm(scale=want[m]).cdf).pvalue > 1e-6
        for wrong in (0.9, 1.1):
            assert stats.kstest(err, stats.norm(scale=wrong * want[m]).cdf).pvalue < 1e-4
    assert np.all(rel.extras["private_realized"] <= rel.loss * (1 + 1e-9))
    with pytest.raises(PolicyError, match="group keys from the data"):
        joint_sum_release(df, thr, ["a", "b"], rho=0.5, secure=True, group_by=("g",))
    with pytest.raises(PolicyError, match="computed from the confidential data"):
        joint_sum_release(df, thr, ["a"], rho=0.5, secure=True, threshold_source={"a": "data: p99"})


def test_secure_partition_selection_keeps_with_the_formula():
    ps = PartitionSelection(rho=0.5, delta=1e-3)
    pieces = np.repeat(np.array([1.0, ps.tau, 12.0]), 4_000)
    kept = ps.select(pieces, None, S).reshape(3, -1).mean(axis=1)
    want = ps.keep_probability(np.array([1.0, ps.tau, 12.0]))
    assert np.all(np.abs(kept - want) <= 5 * np.sqrt(want * (1 - want) / 4_000) + 2e-3)


def test_release_needs_a_generator_or_secure_mode():
    df = pd.DataFrame({"id": [1, 2], "g": [0, 1], "v": [1.0, 2.0]})
    with pytest.raises(ParameterError, match="secure=True"):
        release(df, _policy())


@pytest.mark.parametrize("query", ["count", "sum", "max", "distinct:BRANCH"])
def test_secure_prdp_framework_releases(query):
    df = prdp_core.data.samples.load("bank_normal_50k", n=20_000, seed=1)
    bud = inverse(1e4, "BALANCE")
    rel = framework(df, bud, query, beta=0.1, secure=True, reveal=True)
    assert rel.secure and rel.seed is None and rel.entries[0].secure
    assert rel.check_delivered_within_requested()
    est = float(rel.answers["estimate"].iloc[0])
    if query in ("count", "distinct:BRANCH"):
        assert est == round(est)
    if query == "sum":
        tau = rel.extras["tau"]
        assert math.frexp(tau)[0] == 0.5 and est % grid_for(tau) == 0
        # unseeded: the framework misses with probability up to β = 0.1 per release, so the median of five releases
        # is what must be close (a run of three misses in five has probability below 1%)
        errors = [abs(rel.answers["rel_error"].iloc[0])] + [
            abs(framework(df, bud, query, beta=0.1, secure=True, reveal=True).answers["rel_error"].iloc[0])
            for _ in range(4)]
        assert float(np.median(errors)) < 0.5, errors
    if query == "max":
        assert est in set(RankMax().grid(bud.U)) or math.isnan(est)
    # same loss formula as a seeded run: 2^(i−2)ε̌ + ε_τ/2 for kept records
    dp_ = bud.domains()
    idx = dp_.index(bud(df))
    want = np.ldexp(dp_.eps_min / 4.0, idx.astype(np.int32)) + np.where(idx >= rel.extras["ell"],
                                                                        rel.extras["eps_M"], 0.0)
    np.testing.assert_allclose(rel.loss, want)


def test_secure_prdp_count_and_custom_refused():
    df = prdp_core.data.samples.load("bank_normal_50k", n=2_000, seed=1)
    bud = inverse(1e4, "BALANCE")
    e = bud(df)
    rel = count(e, eps_min=bud.eps_min, eps_max=bud.eps_max, beta=0.1, secure=True, reveal=True)
    assert rel.secure and np.all(rel.extras["noisy_counts"] == np.rint(rel.extras["noisy_counts"]))
    assert rel.check_delivered_within_requested()
    q = FrameworkQuery.custom("mean", lambda t, eps, beta, rng: float(t["BALANCE"].mean()))
    with pytest.raises(ParameterError, match="built-in"):
        framework(df, bud, q, beta=0.1, secure=True)
    with pytest.raises(ParameterError):
        count(e, eps_min=bud.eps_min, eps_max=bud.eps_max, beta=0.1)  # neither rng nor secure


def test_secure_release_refuses_keys_taken_from_the_data():
    df = pd.DataFrame({"id": range(4), "g": ["a", "a", "b", "rare"], "v": [1.0, 2.0, 3.0, 4.0]})
    pol = SplittingPolicy(as_thresholds({"v": 10.0}), Workload((Query("sum", "v", rho=0.5, group_by=("g",)),)))
    with pytest.raises(PolicyError, match="cannot take its group keys from the data"):
        release(df, pol, secure=True)
    # with a public key list, exactly the listed cells are answered (an absent one gets a noisy 0,
    # records of unlisted keys take part in no cell)
    rel = release(df, pol, secure=True, reveal=True,
                  public_keys={("g",): pd.DataFrame({"g": ["a", "b", "c"]})})
    assert rel.answers["g"].tolist() == ["a", "b", "c"]
    assert rel.answers["true"].tolist() == [3.0, 3.0, 0.0]


def test_secure_grid_does_not_depend_on_which_groups_are_present():
    thr = as_thresholds({"A": {"v": 1.0}, "B": {"v": 1000.0}}, group_col="g")
    pol = SplittingPolicy(thr, Workload((Query("sum", "v", rho=0.5, group_by=("g",)),), partition_rho=0.5))
    with_a = pd.DataFrame({"id": range(3), "g": ["A", "B", "B"], "v": [0.5, 100.0, 200.0]})
    without_a = with_a.iloc[1:]
    g1 = release(with_a, pol, secure=True).extras["grid"]
    g2 = release(without_a, pol, secure=True).extras["grid"]
    assert g1 == g2
