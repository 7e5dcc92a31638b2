"""Analytic errors agree with simulation; sweeps, solvers and the paper's claims."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize_scalar

import prdp_core
from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Query, SplittingPolicy, Workload
from prdp_core.mechanisms import analysis as A
from prdp_core.mechanisms import budget_solver, sweeps
from prdp_core.mechanisms.unit_splitting import release, topcode_policy


def test_query_rel_err_matches_monte_carlo():
    df = pd.DataFrame({"id": range(40), "g": np.repeat(np.arange(8), 5), "v": np.arange(40.0) * 10 + 5})
    pol = SplittingPolicy(as_thresholds({"v": 100.0}), Workload((Query("sum", "v", rho=0.3, group_by=("g",)),)))
    trials = 1500
    rng = np.random.default_rng(7)
    are = np.array([release(df, pol, rng=rng, reveal=True, owner_realized=False).answers["rel_error"].to_numpy()
                    for _ in range(trials)])
    errs = A.workload_errors(df, pol, gamma=0.9)
    for col, q in (("query_rel_err", 0.9), ("median_are", 0.5)):
        emp = np.quantile(are, q, axis=0)
        # sampling error of a quantile: a few percent at 1,500 draws
        assert np.allclose(emp, errs[col].to_numpy(), rtol=0.08)


def test_biased_are_quantiles_match_simulation():
    rng = np.random.default_rng(2)
    bias, sigma, true = np.array([0.0, -30.0, 80.0]), np.array([10.0, 10.0, 40.0]), np.array([100.0, 100.0, 500.0])
    sim = np.abs(bias + sigma * rng.standard_normal((200_000, 3))) / true
    for q in (0.5, 0.95):
        assert np.allclose(A.are_quantile(bias, sigma, true, q), np.quantile(sim, q, axis=0), rtol=0.01)


def test_avg_errors_by_monte_carlo_are_close_to_simulated_releases():
    df = pd.DataFrame({"id": range(60), "g": np.repeat([0, 1, 2], 20), "v": np.tile(np.arange(20.0), 3) * 7})
    pol = SplittingPolicy(as_thresholds({"v": 50.0}),
                          Workload((Query("avg", "v", rho=0.5, rho_count=0.5, group_by=("g",)),)))
    est = A.workload_errors(df, pol, mc_trials=4000, rng=np.random.default_rng(0))
    rng = np.random.default_rng(1)
    sims = np.array([release(df, pol, rng=rng, reveal=True, owner_realized=False).answers["rel_error"]
                     for _ in range(1500)])
    assert np.allclose(np.median(sims, axis=0), est["median_are"], rtol=0.1)


def test_figure1_optimum_and_orders_of_magnitude():
    for alpha, rho in ((1.2, 1.0), (1.5, 0.1), (2.0, 10.0)):
        d_star = A.optimal_clip(n=1000, alpha=alpha, rho=rho)
        res = minimize_scalar(lambda ld: float(A.clipped_pareto_mse_ratio(math.exp(ld), n=1000, alpha=alpha,
                                                                           rho=rho)), bounds=(0, 20), method="bounded")
        assert math.exp(res.x) == pytest.approx(d_star, rel=1e-3)
    # even at the optimum, the noise-to-signal ratio is huge (Fig. 1's point)
    assert A.clipped_pareto_mse_ratio(A.optimal_clip(n=1000, alpha=1.2, rho=1.0), n=1000, alpha=1.2, rho=1.0) > 100


def test_sim_pareto_claim_at_rho_1():
    # Paper, Sec. 6.3: at ρ = 1 a median ARE of about 10% with under 1% of records above ρ
    ds = prdp_core.data.samples.load_dataset("sim_pareto")
    pol = SplittingPolicy(as_thresholds({"HT1": 1.0}), Workload((Query("sum", "HT1", rho=1.0, group_by=("CatIX",)),)))
    grid = sweeps.percentile_grid(ds.table, ["HT1"], [99.5])
    _, losses = sweeps.sweep(ds.table, pol, grid, [1.0])
    row = losses.iloc[0]
    assert row["share_above_base"] < 0.01
    assert row["median ARE SUM(HT1)"] < 0.12


def test_splitting_beats_topcoding_on_cbp_like():
    # Table 8 split schemes vs Table 7 top-code schemes (Fig. 3's qualitative result)
    ds = prdp_core.data.samples.load_dataset("cbp_like")
    meas = ("EMP", "PAYANN", "PAYQTR1")
    qs = []
    for lvl in ("NAICS2", "NAICS3"):
        qs.append(Query("count", rho=0.1, group_by=("COUNTY", lvl)))
        qs += [Query("sum", a, rho=0.1, group_by=("COUNTY", lvl)) for a in meas]
    wl = Workload(tuple(qs))
    split = {"Conservative": {"EMP": 100, "PAYANN": 10_000, "PAYQTR1": 2_500},
             "Moderate": {"EMP": 5, "PAYANN": 500, "PAYQTR1": 125}}
    top = {"Conservative": {"EMP": 1e3, "PAYANN": 1e5, "PAYQTR1": 2.5e4},
           "Aggressive": {"EMP": 1e2, "PAYANN": 1e3, "PAYQTR1": 2.5e2}}
    med = {}
    for name, thr in split.items():
        e = A.workload_errors(ds.table, SplittingPolicy(as_thresholds(thr), wl), min_count=100)
        med["split " + name] = e.groupby("family")["median_are"].median()
    for name, clamp in top.items():
        pol = topcode_policy(SplittingPolicy(as_thresholds(split["Conservative"]), wl), clamp)
        e = A.workload_errors(ds.table, pol, min_count=100)
        med["top " + name] = e.groupby("family")["median_are"].median()
    for a in meas:
        fam = f"SUM({a})"
        worst_split = max(med["split Conservative"][fam], med["split Moderate"][fam])
        best_top = min(med["top Conservative"][fam], med["top Aggressive"][fam])
        assert worst_split * 2 < best_top, (fam, worst_split, best_top)
    counts = {k: v["COUNT"] for k, v in med.items()}
    assert max(counts.values()) == pytest.approx(min(counts.values()))


def test_solve_budget_meets_the_goal():
    ds = prdp_core.data.samples.load_dataset("cbp_like", n=30_000, seed=4)
    pol = SplittingPolicy(as_thresholds({"EMP": 100, "PAYANN": 10_000}),
                          Workload((Query("count", rho=0.1, group_by=("NAICS2",)),
                                    Query("sum", "EMP", rho=0.1, group_by=("NAICS2",)),
                                    Query("sum", "PAYANN", rho=0.1, group_by=("NAICS3",)))))
    sol = budget_solver.solve_budget(ds.table, pol, target=0.05, gamma=0.95, share=0.9, min_count=50)
    errs = A.workload_errors(ds.table, sol.policy, gamma=0.95, min_count=50)
    for fam, grp in errs.groupby("family"):
        assert np.mean(grp["query_rel_err"] <= 0.05 * (1 + 1e-9)) >= 0.9 - 1e-9, fam
    # and no smaller budget would do for the binding cell
    smaller = budget_solver.solve_budget(ds.table, pol, target=0.05, gamma=0.95, share=0.9, min_count=50)
    assert smaller.rho_by_family == sol.rho_by_family
    assert "relative error" in sol.describe()
    rounded = sol.rounded()
    for a, b in zip(sol.policy.workload.queries, rounded.workload.queries):
        assert b.rho >= a.rho and b.rho <= a.rho * 1.1 and float(f"{b.rho:.2g}") == b.rho
    caps = budget_solver.largest_thresholds(ds.table, pol, target=0.2, share=0.5, min_count=50)
    assert set(caps) == {"EMP", "PAYANN"} and all(v > 0 for v in caps.values())


def test_sweep_limits_and_validation():
    df = pd.DataFrame({"id": [1, 2], "g": [1, 1], "v": [1.0, 2.0]})
    pol = SplittingPolicy(as_thresholds({"v": 1.0}), Workload((Query("sum", "v", rho=1.0),)))
    with pytest.raises(prdp_core.core.errors.ParameterError):
        sweeps.sweep(df, pol, [], [1.0])
    with pytest.raises(prdp_core.core.errors.ParameterError):
        sweeps.sweep(df, pol, [{"v": 1.0}], [0.0])
    e, l_ = sweeps.sweep(df, pol, [{"v": 1.0}, {"v": 3.0}], [1.0, 2.0])
    assert len(l_) == 4 and set(e["setting"]) == {"T(v)=1", "T(v)=3"}


def test_sweep_boxes_agree_with_per_answer_errors():
    ds = prdp_core.data.samples.load_dataset("cbp_like", n=20_000, seed=5)
    wl = sweeps.level_workload(("EMP", "PAYANN"), (("NAICS2",), ("NAICS3",)), base_rho=1.0)
    top = SplittingPolicy(as_thresholds({"EMP": 50, "PAYANN": 5000}), wl)
    pol = topcode_policy(top, {"EMP": 200, "PAYANN": 20_000})  # a mix is not needed: check both kinds
    for p in (top, pol):
        boxes, _ = sweeps.sweep(ds.table, p, [{"EMP": 50, "PAYANN": 5000}], [2.0], min_count=20)
        errs = A.workload_errors(ds.table, SplittingPolicy(p.thresholds, p.workload.scaled(2.0)), min_count=20)
        for fam, grp in errs.groupby("family"):
            b = boxes[boxes["family"] == fam].iloc[0]
            assert b["median"] == pytest.approx(np.median(grp["median_are"]), rel=1e-6)
            assert b["q95"] == pytest.approx(np.quantile(grp["median_are"], 0.95), rel=1e-6)


def test_partition_selection_errors_match_simulated_releases():
    # cell c holds c + 1 records of value 10 (one piece each at T = 10): 2..13 pieces, so the keep
    # probabilities of Gaussian thresholding (σ_ps = 1, τ ≈ 5.75) run from about 0 to about 1
    g = np.repeat(np.arange(12), np.arange(2, 14))
    df = pd.DataFrame({"id": np.arange(g.size), "g": g, "v": np.full(g.size, 10.0)})
    qs = (Query("count", rho=0.4, group_by=("g",)), Query("sum", "v", rho=0.2, group_by=("g",)),
          Query("avg", "v", rho=0.3, rho_count=0.3, group_by=("g",)))
    pol = SplittingPolicy(as_thresholds({"v": 10.0}), Workload(qs, partition_rho=0.5))
    errs = A.workload_errors(df, pol, gamma=0.9, mc_trials=20_000, rng=np.random.default_rng(1))
    ps = prdp_core.mechanisms.unit_splitting.PartitionSelection(0.5, 1e-6)
    expected_keep = ps.keep_probability(np.arange(2, 14))
    for i in range(3):
        assert np.allclose(errs["keep_prob"].to_numpy()[12 * i:12 * (i + 1)], expected_keep)
    assert expected_keep[0] < 0.01 and expected_keep[-1] > 0.99
    # simulated releases: a cell left out by partition selection counts as an ARE of 1
    trials = 2000
    rng = np.random.default_rng(5)
    are = np.ones((trials, 3, 12))
    for t in range(trials):
        a = release(df, pol, rng=rng, reveal=True, owner_realized=False).answers
        qi = a["query"].cat.codes.to_numpy()
        are[t, qi, a["g"].to_numpy().astype(int)] = a["rel_error"].to_numpy()
    kept = (are[:, 0, :] != 1.0).mean(axis=0)
    assert np.all(np.abs(kept - expected_keep) <= 4 * np.sqrt(expected_keep * (1 - expected_keep) / trials) + 0.01)
    tol = 4 * math.sqrt(0.25 / trials) + 0.01
    for col, q in (("median_are", 0.5), ("query_rel_err", 0.9)):
        pred = errs[col].to_numpy().reshape(3, 12)
        # the predicted q-quantile v: the empirical CDF reaches q at v and not before it
        at = (are <= pred[None] * (1 + 1e-9)).mean(axis=0)
        before = (are < pred[None] * (1 - 1e-6)).mean(axis=0)
        assert np.all(at >= q - tol), (col, at)
        assert np.all(before <= q + tol), (col, before)
    # cells likely to be suppressed have a median error of 100%; cells almost surely kept, small errors
    med = errs["median_are"].to_numpy().reshape(3, 12)
    assert np.all(med[:, 0] == 1.0) and np.all(med[:, -1] < 0.5)
    # the sweep uses the same mixture
    boxes, _ = sweeps.sweep(df, pol, [{"v": 10.0}], [pol.workload.total_rho])
    cnt = boxes[boxes["family"] == "COUNT"].iloc[0]
    assert cnt["median"] == pytest.approx(float(np.median(med[0])), rel=1e-9)


def test_are_quantile_with_keep_edge_cases():
    sig, true = np.array([1.0, 1.0, 1.0]), np.array([10.0, 10.0, 10.0])
    # kept for sure: the Gaussian quantile; never kept: 1; half: the upper half of the mixture is the mass at 1
    v = A.are_quantile_with_keep(0.0, sig, true, np.array([1.0, 0.0, 0.5]), 0.5)
    assert v[0] == pytest.approx(A.median_are(1.0, 10.0)) and v[1] == 1.0
    assert v[2] == 1.0
    # just above the kept share the quantile sits in the Gaussian part again
    w = A.are_quantile_with_keep(0.0, 1.0, 10.0, 0.5, 0.45)
    assert w == pytest.approx(A.query_rel_err(1.0, 10.0, 0.9))
    # with a bias the kept part is a folded normal
    b = A.are_quantile_with_keep(np.array([2.0]), np.array([1.0]), np.array([10.0]), np.array([1.0]), 0.5)
    assert b[0] == pytest.approx(A.are_quantile(np.array([2.0]), np.array([1.0]), np.array([10.0]), 0.5)[0])
