"""The closed-form error analysis (prdp_core.mechanisms.analysis) on a table held by DuckDB equals the analysis on
the same table in memory: per-cell errors, sweeps, budget solvers, scheme comparisons, threshold
percentiles and loss CDFs — computed from the engine's statistics, with no per-record array."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core import engines
from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Filter, Query, SplittingPolicy, Workload
from prdp_core.data.dataset import Schema, prepare_dataset
from prdp_core.mechanisms import analysis, budget_solver, sweeps

pytestmark = pytest.mark.xdist_group("engines")

SCHEMA = Schema(id_col="id", measures=("v", "w"), groups=("g", "h"), owner_col="o")


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 20_000
    df = pd.DataFrame({"id": np.arange(n), "g": rng.choice(["a", "b", "c", "d"], n), "h": rng.integers(0, 7, n),
                       "o": rng.integers(0, n // 4, n).astype(str),
                       "v": np.floor(rng.pareto(1.2, n) * 10), "w": rng.lognormal(3, 1.5, n)})
    df.loc[rng.random(n) < 0.4, "v"] = 0.0  # many zeros: a low percentile of v is 0
    path = tmp_path_factory.mktemp("analysis") / "t.parquet"
    df.to_parquet(path)
    mem = prepare_dataset(df, SCHEMA)
    duck = engines.open_dataset(str(path), engine="duckdb", schema=SCHEMA)
    return mem, duck


def _policy(partition_rho: float = 0.0, joint: bool = True, filtered: bool = False) -> SplittingPolicy:
    f = Filter("g", ("a", "c")) if filtered else None
    qs = (Query("count", rho=0.2, group_by=("g",)),
          Query("sum", "v", rho=0.2, group_by=("g", "h"), filter=f),
          Query("sum", "w", rho=0.3, group_by=("h",), split=False, clamp=50.0),
          Query("avg", "w", rho=0.2, rho_count=0.1, group_by=("g",)))
    return SplittingPolicy(as_thresholds({"v": 20.0, "w": 60.0}), Workload(qs, partition_rho=partition_rho,
                                                                             joint=joint))


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    for c in a.columns:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if x.dtype.kind == "f" or y.dtype.kind == "f":
            np.testing.assert_allclose(x.astype(float), y.astype(float), rtol=1e-9, atol=0, equal_nan=True)
        else:
            assert [str(v) for v in x] == [str(v) for v in y], c


@pytest.mark.parametrize("ps", [0.0, 0.5], ids=["keys", "selection"])
@pytest.mark.parametrize("filtered", [False, True], ids=["all", "filter"])
def test_workload_errors_are_equal(tables, ps, filtered):
    mem, duck = tables
    pol = _policy(ps, filtered=filtered)
    a = analysis.workload_errors(mem.table, pol, min_count=5, rng=np.random.default_rng(1))
    b = analysis.workload_errors(duck, pol, min_count=5, rng=np.random.default_rng(1))
    _same(a, b)
    assert (a["family"] == "SUM(w)").any() and (a["bias"] != 0).any()  # the top-coded sum is biased


@pytest.mark.parametrize("ps", [0.0, 0.5], ids=["keys", "selection"])
@pytest.mark.parametrize("filtered", [False, True], ids=["all", "filter"])
def test_sweeps_are_equal(tables, ps, filtered):
    mem, duck = tables
    pol = _policy(ps, joint=not filtered, filtered=filtered)
    grid_m = sweeps.percentile_grid(mem.table, ["v", "w"], (30, 90, 99))
    grid_d = sweeps.percentile_grid(duck, ["v", "w"], (30, 90, 99))
    assert grid_m == grid_d and grid_m[0]["v"] > 0  # the 30th percentile of v is 0: the smallest positive value
    ea, la = sweeps.sweep(mem.table, pol, grid_m, [0.1, 1.0], min_count=5)
    eb, lb = sweeps.sweep(duck, pol, grid_d, [0.1, 1.0], min_count=5)
    _same(ea, eb)
    _same(la, lb)
    for th in grid_m:
        xa, ya = sweeps.loss_cdf_for(mem.table, pol, th, 2.0)
        xb, yb = sweeps.loss_cdf_for(duck, pol, th, 2.0)
        np.testing.assert_allclose(xa, xb, rtol=1e-12)
        np.testing.assert_allclose(ya, yb, rtol=1e-12)


def test_solvers_and_schemes_are_equal(tables):
    mem, duck = tables
    pol = _policy()
    a = budget_solver.solve_budget(mem.table, pol, target=0.1, min_count=5)
    b = budget_solver.solve_budget(duck, pol, target=0.1, min_count=5)
    assert a.rho_by_family == pytest.approx(b.rho_by_family, rel=1e-9)
    assert budget_solver.largest_thresholds(mem.table, pol, target=0.1, min_count=5) == pytest.approx(
        budget_solver.largest_thresholds(duck, pol, target=0.1, min_count=5), rel=1e-9)
    split = {"p90": sweeps.percentile_grid(duck, ["v", "w"], [90])[0]}
    top = {"p99": sweeps.percentile_grid(duck, ["v", "w"], [99])[0]}
    _same(sweeps.compare_schemes(mem.table, ["v", "w"], [("g",), ("g", "h")], split, top, min_count=5),
          sweeps.compare_schemes(duck, ["v", "w"], [("g",), ("g", "h")], split, top, min_count=5))
    d_m = analysis.policy_distribution(mem.table, a.policy)
    d_d = analysis.policy_distribution(duck, a.policy)
    assert np.array_equal(d_m.values, d_d.values) and np.array_equal(d_m.counts, d_d.counts)


def test_engine_quantiles_follow_numpy(tables):
    mem, duck = tables
    qs = [0.0, 0.1, 0.3, 0.5, 0.9, 0.975, 0.99, 0.999, 1.0]
    for m in ("v", "w"):
        ref = np.quantile(mem.table[m].to_numpy(), qs)
        assert np.array_equal(duck.engine.quantiles(m, qs), ref)
        assert np.array_equal(engines.as_engine_dataset(mem).engine.quantiles(m, qs), ref)
    v = mem.table["v"].to_numpy()
    assert duck.engine.threshold_quantiles("v", [0.1])[0] == v[v > 0].min()
