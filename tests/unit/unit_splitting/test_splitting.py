"""Unit splitting: the paper's worked examples exactly, and properties of Algorithm 1."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import prdp_core
from prdp_core.core.errors import PolicyError
from prdp_core.core.splitting import (
    SplitLoss,
    as_thresholds,
    max_pieces_for_cap,
    percentile_thresholds,
    split_counts,
    threshold_percentiles,
    thresholds_for_cap,
    unit_split,
)
from prdp_core.core.workload import Filter, Query, SplittingPolicy, Workload

T2 = {"Employees": 50, "Payroll": 5_000_000}


def table2():
    return prdp_core.data.samples.load("table2_example")


def test_table2b_reproduced_exactly():
    out = unit_split(table2(), T2, id_col="ID")
    expected = pd.DataFrame({
        "ID": [1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5],
        "Industry": ["Agriculture"] * 6 + ["Mining"] * 4 + ["Retail"],
        "Employees": [50, 50, 50, 50, 0, 0, 50, 50, 50, 0, 20],
        "Payroll": [5e6, 5e6, 0, 5e6, 5e6, 5e6, 5e6, 5e6, 5e6, 5e6, 1e6],
    })
    pd.testing.assert_frame_equal(out[["ID", "Industry", "Employees", "Payroll"]], expected, check_dtype=False)
    assert out["piece"].tolist() == [1, 2, 3, 1, 2, 3, 1, 2, 1, 2, 1]


def test_example1_policy_rho_ceil_emp_over_50():
    # P(r) = ρ·⌈emp/50⌉ as printed (Example 1 is about a linear policy, not a splitting one)
    emp = table2()["Employees"].to_numpy()
    m = split_counts(table2(), {"Employees": 50})
    assert m.tolist() == [3, 1, 2, 1, 1]
    assert np.allclose(0.7 * np.ceil(emp / 50), [2.1, 0.7, 1.4, 0.7, 0.7])
    assert (0.7 * np.maximum(1, np.ceil(emp / 50)) == 0.7 * m).all()  # establishment 5 still pays ρ


def test_example2_losses_9_4_1():
    rho = 0.3
    pol = SplittingPolicy(as_thresholds(T2), Workload((Query("sum", "Employees", rho=rho),)))
    assert np.allclose(pol(table2()), rho * np.array([9, 9, 4, 4, 1]))
    assert np.allclose(SplitLoss(rho, as_thresholds(T2))(table2()), rho * np.array([9, 9, 4, 4, 1]))


def test_example4_median_before_splitting():
    r1, r2 = 0.2, 0.5
    wl = Workload((Query("sum", "Payroll", rho=r1, split=False, clamp=1e7, label="median(Payroll)"),
                   Query("sum", "Employees", rho=r2)))
    pol = SplittingPolicy(as_thresholds(T2), wl)
    assert np.allclose(pol(table2()), [r1 + 9 * r2, r1 + 9 * r2, r1 + 4 * r2, r1 + 4 * r2, r1 + r2])


def test_example5_per_industry_thresholds():
    r1, r2, r3 = 0.1, 0.2, 0.3
    thr = {"Agriculture": T2, "Retail": T2, "Mining": {"Employees": 50, "Payroll": 10_000_000}}
    wl = Workload((Query("sum", "Employees", rho=r2, group_by=("Industry",)),
                   Query("sum", "Payroll", rho=r3, group_by=("Industry",))), partition_rho=r1)
    pol = SplittingPolicy(as_thresholds(thr, group_col="Industry"), wl)
    assert np.allclose(pol(table2()), (r1 + r2 + r3) * np.array([9, 9, 4, 1, 1]))
    m = split_counts(table2(), thr, group_col="Industry")
    assert m.tolist() == [3, 3, 2, 1, 1]


def test_filters_and_avg_components():
    wl = Workload((Query("count", rho=0.1), Query("avg", "Employees", rho=0.2, rho_count=0.05,
                                                  filter=Filter("Industry", ("Mining",)))))
    pol = SplittingPolicy(as_thresholds(T2), wl)
    got = pol(table2())
    assert np.allclose(got, [0.1, 0.1, 0.1 + 0.2 * 4 + 0.05, 0.1 + 0.2 * 4 + 0.05, 0.1])
    assert pol.components(table2()).shape == (5, 2)


def test_joint_versus_separate_splitting():
    wl = Workload((Query("sum", "Employees", rho=1.0),), joint=False)
    pol = SplittingPolicy(as_thresholds(T2), wl)
    # record 2: 50 employees (1 piece) but payroll needs 3 pieces; separate splitting charges 1
    assert np.allclose(pol(table2()), [9, 1, 4, 1, 1])
    joint = SplittingPolicy(as_thresholds(T2), Workload(wl.queries, joint=True))
    assert (pol(table2()) <= joint(table2())).all()


def test_public_policy_function_is_a_step_function():
    pol = SplittingPolicy(as_thresholds(T2), Workload((Query("count", rho=0.5), Query("sum", "Employees", rho=1.0))))
    grid = np.array([0, 1, 50, 51, 100, 101, 150])
    assert pol.public_function("Employees", grid).tolist() == [1.5, 1.5, 1.5, 4.5, 4.5, 9.5, 9.5]


def test_public_levels_are_read_off_the_public_function_and_bound_any_record_with_that_many_pieces():
    """Review mode converts these levels to (ε, δ) instead of the levels of real records: they depend on the
    policy alone (the same for any table) and equal the loss of a record cut into m pieces."""
    from prdp_core.mechanisms.preview import public_levels

    wl = Workload((Query("count", rho=0.5), Query("sum", "Employees", rho=1.0), Query("sum", "Payroll", rho=0.25)),
                  partition_rho=0.125)
    pol = SplittingPolicy(as_thresholds(T2), wl)
    lv = public_levels(pol, pieces=(2, 3))
    assert lv == {"base loss (unsplit records)": 1.875, "a record cut into 2 pieces": 0.5 + 1.375 * 4,
                  "a record cut into 3 pieces": 0.5 + 1.375 * 9}
    m = split_counts(table2(), T2)
    losses = pol(table2())
    assert losses[m == 3].max() <= lv["a record cut into 3 pieces"] and losses[m == 1].max() == lv[
        "base loss (unsplit records)"]


def test_validation_messages():
    with pytest.raises(PolicyError, match="positive"):
        as_thresholds({"Employees": 0})
    with pytest.raises(PolicyError, match="positive"):
        as_thresholds({"Employees": -3})
    with pytest.raises(PolicyError, match="number"):
        as_thresholds({"Employees": "abc"})
    with pytest.raises(PolicyError, match="not a column"):
        split_counts(table2(), {"Nope": 3})
    with pytest.raises(PolicyError, match="no thresholds"):
        split_counts(table2(), {"Mining": T2}, group_col="Industry")
    with pytest.raises(PolicyError, match="lacks"):
        split_counts(table2(), {"Mining": T2, "*": {"Employees": 5}}, group_col="Industry")
    with pytest.raises(PolicyError, match="group column"):
        as_thresholds({"Mining": T2})
    with pytest.raises(PolicyError, match="empty"):
        Workload(()).validate(table2())
    bad = SplittingPolicy(as_thresholds({"Employees": 5}), Workload((Query("sum", "Payroll"),)))
    with pytest.raises(PolicyError, match="no splitting threshold"):
        bad.validate(table2())


measure_values = st.lists(st.one_of(st.integers(0, 10**6), st.floats(0, 1e6, allow_nan=False)),
                          min_size=1, max_size=40)


@given(measure_values, measure_values, st.floats(0.01, 1.0), st.floats(0.01, 1.0))
def test_split_pieces_bounded_sum_back_and_match_counts(a, b, fa, fb):
    n = min(len(a), len(b))
    df = pd.DataFrame({"id": np.arange(n), "a": np.array(a[:n], float), "b": np.array(b[:n], float)})
    # thresholds at 1%–100% of the largest value keep the split table small (≤ 100 pieces a record)
    ta = max(df["a"].max() * fa, 1e-3)
    tb = max(df["b"].max() * fb, 1e-3)
    thr = {"a": ta, "b": tb}
    out = unit_split(df, thr, id_col="id")
    m = split_counts(df, thr)
    assert (out.groupby("id").size().to_numpy() == m).all()
    assert (out["a"] <= ta).all() and (out["b"] <= tb).all() and (out[["a", "b"]] >= 0).all().all()
    sums = out.groupby("id")[["a", "b"]].sum()
    np.testing.assert_allclose(sums["a"].to_numpy(), df["a"].to_numpy(), rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(sums["b"].to_numpy(), df["b"].to_numpy(), rtol=1e-9, atol=1e-6)
    # m is the smallest count that works: m·T ≥ r for every measure, (m−1)·T < r for one of them
    need = np.maximum(np.ceil(df["a"] / ta), np.ceil(df["b"] / tb)).clip(lower=1).to_numpy()
    assert (np.abs(m - need) <= 1).all() and (m * ta >= df["a"]).all() and (m * tb >= df["b"]).all()


@given(st.lists(st.integers(0, 10**9), min_size=1, max_size=50), st.integers(1, 200))
def test_integer_data_splits_exactly(vals, k):
    t = max(1, max(vals) // k)
    df = pd.DataFrame({"id": range(len(vals)), "v": vals})
    out = unit_split(df, {"v": t}, id_col="id")
    assert (out.groupby("id")["v"].sum().to_numpy() == np.array(vals)).all()
    m = split_counts(df, {"v": t})
    assert (m == np.maximum(1, -(-np.array(vals) // t))).all()


def test_materialising_a_huge_split_table_is_refused():
    from prdp_core.core.errors import ResourceLimitError

    df = pd.DataFrame({"id": [1, 2], "v": [1e12, 5.0]})
    with pytest.raises(ResourceLimitError, match="split table would have"):
        unit_split(df, {"v": 1.0}, id_col="id")
    assert split_counts(df, {"v": 1.0}).tolist() == [10**12, 5]  # the counts themselves are cheap


def test_per_group_split_table_uses_group_thresholds():
    thr = {"Mining": {"Employees": 10, "Payroll": 1e7}, "*": T2}
    out = unit_split(table2(), thr, id_col="ID", group_col="Industry")
    assert out[out.ID == 3]["Employees"].max() <= 10 and len(out[out.ID == 3]) == 10


def test_percentile_suggestions_and_pctscore():
    df = prdp_core.data.samples.load("cbp_like", n=50_000, seed=1)
    thr = percentile_thresholds(df, ["EMP", "PAYANN"], 97)
    pct = threshold_percentiles(df, thr)
    assert pct["EMP"] >= 97 and pct["PAYANN"] >= 97
    # Table 8 "Conservative": EMP 100 is the ≈97th percentile
    assert abs(threshold_percentiles(df, {"EMP": 100})["EMP"] - 97) < 1.5
    g = percentile_thresholds(df, ["EMP"], 90, group_col="NAICS2")
    assert g.group_col == "NAICS2" and len(g.rows) == df["NAICS2"].nunique() + 1


def test_max_pieces_for_cap():
    assert max_pieces_for_cap(10.0, 0.0, 1.0) == 3
    assert max_pieces_for_cap(9.0, 0.0, 1.0) == 3
    assert max_pieces_for_cap(1.0, 0.0, 1.0) == 1
    with pytest.raises(PolicyError, match="below the base loss"):
        max_pieces_for_cap(0.5, 0.0, 1.0)


def test_thresholds_for_cap_meet_the_cap_and_are_tight():
    df = prdp_core.data.samples.load("cbp_like", n=20_000, seed=2)
    wl = Workload((Query("count", rho=0.5), Query("sum", "EMP", rho=0.25), Query("sum", "PAYANN", rho=0.25)))
    # no record above 10ρ (ρ = total base loss 1.0)
    thr = thresholds_for_cap(df, ["EMP", "PAYANN"], cap=10.0, flat=wl.flat_rho, split=wl.split_rho)
    p = SplittingPolicy(thr, wl)(df)
    assert p.max() <= 10.0 + 1e-9
    smaller = as_thresholds({m: t * 0.99 for m, t in thr.as_dict()["*"].items()})
    assert SplittingPolicy(smaller, wl)(df).max() > 10.0  # any smaller threshold breaks the cap
    # at most 1% of records above the base loss
    thr1 = thresholds_for_cap(df, ["EMP", "PAYANN"], cap=wl.total_rho, flat=wl.flat_rho, split=wl.split_rho,
                              share=0.01)
    p1 = SplittingPolicy(thr1, wl)(df)
    assert np.mean(p1 > wl.total_rho + 1e-12) <= 0.01
    assert np.mean(p1 > wl.total_rho + 1e-12) > 0.005  # and close to the allowed share (tight)


def test_fast_record_cdf_matches_brute_force():
    from prdp_core.core.loss_profile import ecdf
    from prdp_core.core.workload import default_workload
    from prdp_core.mechanisms.preview import preview_policy

    ds = prdp_core.data.samples.load_dataset("cbp_like", n=20_000, seed=3)
    pol = SplittingPolicy(as_thresholds({"EMP": 20, "PAYANN": 500, "PAYQTR1": 125}),
                          default_workload(ds.schema.measures, ("COUNTY",)))
    prev = preview_policy(ds, pol)
    x, y = prev.record_cdf()
    bx, by = ecdf(pol(ds.table))
    np.testing.assert_allclose(x, bx)
    np.testing.assert_allclose(y, by)
