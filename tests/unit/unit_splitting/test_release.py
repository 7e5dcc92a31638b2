"""Unit-splitting releases: noise scale (with power), realized ≤ policy, baselines, partition selection."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import prdp_core
from prdp_core.core.errors import ParameterError, PolicyError
from prdp_core.core.loss_profile import owner_losses
from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Filter, Query, SplittingPolicy, Workload
from prdp_core.data.dataset import Dataset, Schema
from prdp_core.mechanisms.unit_splitting import (
    PartitionSelection,
    joint_sum_release,
    joint_sum_sigmas,
    release,
    topcode_policy,
    workload_stats,
)


def _many_cells(n_cells: int = 20_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_cells), 2)
    return pd.DataFrame({"id": np.arange(g.size), "g": g, "v": rng.integers(0, 300, g.size).astype(float)})


@pytest.mark.parametrize("kind,rho,T", [("sum", 0.5, 40.0), ("count", 0.2, None)])
def test_gaussian_noise_has_promised_sigma_with_power(kind, rho, T):
    df = _many_cells()
    q = Query(kind, "v" if kind == "sum" else None, rho=rho, group_by=("g",))
    pol = SplittingPolicy(as_thresholds({"v": 40.0}), Workload((q,)))
    rel = release(df, pol, rng=np.random.default_rng(1), reveal=True, owner_realized=False)
    sigma = (T if T else 1.0) / math.sqrt(2 * rho)
    assert np.allclose(rel.answers["sigma"], sigma)
    err = rel.answers["error"].to_numpy()
    assert stats.kstest(err, stats.norm(scale=sigma).cdf).pvalue > 1e-3
    assert stats.kstest(err, stats.norm(scale=0.9 * sigma).cdf).pvalue < 1e-4
    assert stats.kstest(err, stats.norm(scale=1.1 * sigma).cdf).pvalue < 1e-4


def test_per_group_thresholds_set_each_cells_sensitivity():
    df = prdp_core.data.samples.load("table2_example")
    thr = as_thresholds({"Mining": {"Employees": 50, "Payroll": 1e7}, "*": {"Employees": 50, "Payroll": 5e6}},
                        group_col="Industry")
    by_ind = SplittingPolicy(thr, Workload((Query("sum", "Payroll", rho=0.5, group_by=("Industry",)),)))
    s = workload_stats(df, by_ind)[0]
    assert dict(zip(s.keys["Industry"], s.sens)) == {"Agriculture": 5e6, "Mining": 1e7, "Retail": 5e6}
    # grouped by something else, the bound must hold for any record: the largest threshold
    overall = SplittingPolicy(thr, Workload((Query("sum", "Payroll", rho=0.5),)))
    assert workload_stats(df, overall)[0].sens.tolist() == [1e7]


def _frames():
    vals = st.lists(st.integers(0, 5000), min_size=2, max_size=30)
    return vals.flatmap(lambda v: st.tuples(
        st.just(v), st.lists(st.integers(0, 3), min_size=len(v), max_size=len(v)),
        st.lists(st.integers(0, 4), min_size=len(v), max_size=len(v))))


@settings(max_examples=40)
@given(_frames(), st.floats(1, 2000), st.floats(0.01, 3), st.booleans(), st.booleans())
def test_realized_never_exceeds_policy(frame, T, rho, flat_count, with_filter):
    v, g, owner = frame
    df = pd.DataFrame({"id": range(len(v)), "g": g, "o": owner, "v": np.array(v, float),
                       "w": np.array(v[::-1], float)})
    qs = [Query("sum", "v", rho=rho, group_by=("g",)), Query("avg", "w", rho=rho / 2, rho_count=0.1),
          Query("sum", "w", rho=0.3, split=False, clamp=T / 2,
                filter=Filter("g", (1, 2)) if with_filter else None)]
    if flat_count:
        qs.append(Query("count", rho=0.2, group_by=("g",)))
    pol = SplittingPolicy(as_thresholds({"v": T, "w": T * 2}), Workload(tuple(qs), partition_rho=0.05))
    ds = Dataset("t", df, Schema(id_col="id", measures=("v", "w"), groups=("g",), owner_col="o"))
    rel = release(ds, pol, rng=np.random.default_rng(0), reveal=True)
    realized = rel.extras["private_realized"]
    assert np.all(realized <= rel.loss * (1 + 1e-9) + 1e-12)
    own_policy = owner_losses(rel.loss, df["o"])
    own_real = rel.extras["private_owner_realized"]
    assert np.all(own_real.reindex(own_policy.index).to_numpy() <= own_policy.to_numpy() * (1 + 1e-9) + 1e-12)


def test_realized_loss_is_exact_for_gaussian_sums():
    df = pd.DataFrame({"id": [1, 2, 3], "g": ["a", "a", "b"], "v": [10.0, 250.0, 100.0]})
    pol = SplittingPolicy(as_thresholds({"v": 100.0}), Workload((Query("sum", "v", rho=0.5, group_by=("g",)),
                                                                 Query("count", rho=0.25))))
    rel = release(df, pol, rng=np.random.default_rng(0))
    # ρ·(v/T)² for the sum (σ = T/√(2ρ)) plus ρ_count for the count
    assert np.allclose(rel.extras["private_realized"], 0.5 * (df["v"] / 100.0) ** 2 + 0.25)
    assert np.allclose(rel.loss, [0.75, 0.5 * 9 + 0.25, 0.75])


def test_review_copy_has_no_truth_or_per_record_losses():
    df = _many_cells(50)
    pol = SplittingPolicy(as_thresholds({"v": 40.0}), Workload((Query("sum", "v", rho=1.0, group_by=("g",)),)))
    rel = release(df, pol, rng=np.random.default_rng(0), reveal=True, seed=0).for_review()
    assert not {"true", "error", "rel_error", "n_records"} & set(rel.answers.columns)
    assert rel.loss is None and not any(k.startswith("private_") for k in rel.extras)
    assert rel.entries[0].loss == pol and rel.seed == 0


def test_topcode_baseline_is_flat_and_biased():
    df = prdp_core.data.samples.load("table2_example")
    pol = SplittingPolicy(as_thresholds({"Employees": 50}), Workload((Query("sum", "Employees", rho=0.5),)))
    flat = topcode_policy(pol, {"Employees": 60})
    assert np.allclose(flat(df), 0.5)
    s = workload_stats(df, flat)[0]
    assert s.total.tolist() == [60 + 50 + 60 + 50 + 20] and s.sens.tolist() == [60.0]
    with pytest.raises(PolicyError, match="top-coding bound"):
        topcode_policy(pol, {})


def test_partition_selection_keep_probability_matches_formula():
    ps = PartitionSelection(rho=0.1, delta=1e-6)
    assert ps.tau == pytest.approx(1 + ps.sigma * stats.norm.isf(1e-6))
    pieces = np.array([1.0, 10.0, 20.0, ps.tau, 30.0, 40.0])
    trials = 40_000
    kept = ps.select(np.tile(pieces, (trials, 1)), np.random.default_rng(3)).mean(axis=0)
    expected = ps.keep_probability(pieces)
    for k, e in zip(kept, expected):
        assert abs(k - e) <= 5 * math.sqrt(e * (1 - e) / trials) + 1e-4
    assert expected[3] == pytest.approx(0.5)
    # a lone record's δ grows with its number of pieces
    d = ps.record_delta(np.array([1, 5, 20, 100]))
    assert d[0] <= 1e-6 and np.all(np.diff(d) > 0) and d[-1] > 0.99


def test_release_with_partition_selection_keeps_big_cells():
    rng = np.random.default_rng(0)
    g = np.concatenate([np.repeat(np.arange(50), 200), [1000]])  # 50 busy cells and one lone huge record
    v = np.concatenate([rng.integers(1, 10, 50 * 200), [10_000]]).astype(float)
    df = pd.DataFrame({"id": range(g.size), "g": g, "v": v})
    pol = SplittingPolicy(as_thresholds({"v": 10.0}),
                          Workload((Query("sum", "v", rho=1.0, group_by=("g",)),), partition_rho=0.5))
    rel = release(df, pol, rng=np.random.default_rng(1))
    kept = set(rel.answers["g"].astype(int))
    assert set(range(50)) <= kept
    assert 1000 in kept  # 1,000 pieces: found with near certainty — and the record's δ(r) says so
    assert rel.extras["private_record_delta"][-1] > 0.99
    assert rel.extras["partition_selection"]["candidates"]["g"] == 51


def test_joint_sum_sigmas():
    sig = joint_sum_sigmas({"a": 3.0, "b": 4.0}, 0.5, scaled=False)
    assert sig == {"a": 5.0, "b": 5.0}
    sc = joint_sum_sigmas({"a": 3.0, "b": 4.0}, 0.5)
    assert sc["a"] == pytest.approx(3 * math.sqrt(2)) and sc["b"] == pytest.approx(4 * math.sqrt(2))
    # scaled joint = separate releases at ρ/k each
    assert sc["a"] == pytest.approx(3.0 / math.sqrt(2 * 0.25))
    with pytest.raises(ParameterError):
        joint_sum_sigmas({}, 1.0)


def _two_measures(n_cells: int = 20_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_cells), 3)
    return pd.DataFrame({"id": np.arange(g.size), "g": g, "h": g % 2,
                         "a": np.round(rng.pareto(1.2, g.size) * 10, 1), "b": np.round(rng.pareto(1.5, g.size) * 5, 1)})


@pytest.mark.parametrize("scaled", [True, False])
def test_joint_release_sigmas_noise_and_losses(scaled):
    df = _two_measures()
    thr, rho = {"a": 30.0, "b": 40.0}, 0.5
    rel = joint_sum_release(df, thr, ["a", "b"], rho=rho, rng=np.random.default_rng(2), group_by=("g",),
                            scaled=scaled, reveal=True, seed=2)
    want = joint_sum_sigmas(thr, rho, scaled=scaled)
    ans = rel.answers
    assert len(ans) == 2 * 20_000
    for a in ("a", "b"):
        sub = ans[ans["query"].astype(str).str.contains(f"SUM\\({a}\\)")]
        assert np.allclose(sub["sigma"], want[a])
        # the promised σ, with power against ±10%
        err = sub["error"].to_numpy()
        assert stats.kstest(err, stats.norm(scale=want[a]).cdf).pvalue > 1e-3
        assert stats.kstest(err, stats.norm(scale=0.9 * want[a]).cdf).pvalue < 1e-4
        assert stats.kstest(err, stats.norm(scale=1.1 * want[a]).cdf).pvalue < 1e-4
        # sums over split data are the sums of the original values (Lemma 8)
        assert np.allclose(sub["true"].to_numpy(), df.groupby("g")[a].sum().to_numpy())
    m = np.maximum(1, np.maximum(np.ceil(df["a"] / 30.0), np.ceil(df["b"] / 40.0))).to_numpy()
    assert np.allclose(rel.loss, rho * m**2)
    # realized loss is exact: Σ_a r(a)²/(2σ_a²), and never above the policy loss
    exact = df["a"].to_numpy() ** 2 / (2 * want["a"] ** 2) + df["b"].to_numpy() ** 2 / (2 * want["b"] ** 2)
    assert np.allclose(rel.extras["private_realized"], exact)
    assert np.all(rel.extras["private_realized"] <= rel.loss * (1 + 1e-12))
    e = rel.entries[0]
    assert e.mechanism == "unit_splitting.joint_gaussian" and e.seed == 2
    assert np.allclose(e.loss(df), rel.loss)
    review = rel.for_review()
    assert review.loss is None and "true" not in review.answers.columns


def test_joint_release_per_group_thresholds_filter_and_calibrations():
    df = _two_measures(200)
    thr = {0: {"a": 10.0, "b": 5.0}, "*": {"a": 40.0, "b": 20.0}}
    by_h = joint_sum_release(df, thr, ["a", "b"], rho=1.0, rng=np.random.default_rng(0), group_col="h",
                             group_by=("h",), scaled=False)
    # cells of h = 0 use that row's thresholds, the others the default row: √(T_a² + T_b²)/√2
    sig = by_h.answers.drop_duplicates("h").set_index("h")["sigma"]
    assert sig[0] == pytest.approx(math.hypot(10, 5) / math.sqrt(2)) and sig[1] == pytest.approx(math.hypot(40, 20)
                                                                                                  / math.sqrt(2))
    # without the group column among the keys the largest threshold of every row bounds each piece
    by_g = joint_sum_release(df, thr, ["a"], rho=1.0, rng=np.random.default_rng(0), group_col="h", group_by=("g",))
    assert np.allclose(by_g.answers["sigma"], 40.0 / math.sqrt(2))
    scaled = joint_sum_release(df, thr, ["a", "b"], rho=1.0, rng=np.random.default_rng(0), group_col="h",
                               group_by=("h",))
    # both calibrations have the same total variance; the scaled one gives every measure the same σ_a/T(a)
    s_sc = scaled.answers["sigma"].to_numpy().reshape(2, 2)
    s_iso = by_h.answers["sigma"].to_numpy().reshape(2, 2)
    assert np.allclose((s_sc**2).sum(axis=0), (s_iso**2).sum(axis=0))
    assert np.allclose(s_sc / np.array([[10.0, 40.0], [5.0, 20.0]]), 1.0)
    filt = joint_sum_release(df, {"a": 10.0, "b": 10.0}, ["a", "b"], rho=1.0, rng=np.random.default_rng(0),
                             filter=Filter("h", (1,)))
    assert np.all(filt.loss[df["h"].to_numpy() == 0] == 0)
    with pytest.raises(PolicyError, match="no splitting threshold"):
        joint_sum_release(df, {"a": 1.0}, ["a", "b"], rho=1.0, rng=np.random.default_rng(0))
    with pytest.raises(ParameterError):
        joint_sum_release(df, {"a": 1.0}, ["a"], rho=0.0, rng=np.random.default_rng(0))


def test_query_without_budget_is_refused():
    df = _many_cells(5)
    pol = SplittingPolicy(as_thresholds({"v": 1.0}), Workload((Query("sum", "v", rho=0.0),)))
    with pytest.raises(PolicyError, match="no budget"):
        release(df, pol, rng=np.random.default_rng(0))
