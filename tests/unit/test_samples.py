"""Every sample loads, is deterministic for a seed, and has its documented properties."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

import prdp_core
from prdp_core.core.errors import ParameterError

SMALL = {"cbp_like": 5000, "sim_pareto": 5000, "bank_normal_50k": 5000, "bank_normal_500k": 5000,
         "bank_zipf_b3": 5000, "bank_zipf_b5": 5000}


def test_registry_has_required_samples():
    names = set(prdp_core.data.samples.names())
    assert {"cbp_like", "sim_pareto", "bank_normal_50k", "bank_normal_500k", "bank_zipf_b3", "bank_zipf_b5",
            "table2_example"} <= names
    assert len(prdp_core.data.samples.names("real")) >= 2


@pytest.mark.parametrize("name", sorted(set(prdp_core.data.samples.names())))
def test_every_sample_loads_deterministically_and_validates(name):
    n = SMALL.get(name)
    a = prdp_core.data.samples.load(name, n=n, seed=7)
    b = prdp_core.data.samples.load(name, n=n, seed=7)
    pd.testing.assert_frame_equal(a, b)
    ds = prdp_core.data.samples.load_dataset(name, n=n, seed=7)
    assert ds.n == len(a)
    for m in ds.schema.measures:
        v = ds.table[m].to_numpy()
        assert np.isfinite(v).all() and (v >= 0).all()
    assert ds.table[ds.schema.id_col].is_unique
    info = prdp_core.data.samples.info(name)
    assert info.title and info.description and info.source


@pytest.mark.parametrize("name", ["cbp_like", "sim_pareto", "bank_normal_50k", "bank_zipf_b3"])
def test_synthetic_seed_changes_draw(name):
    a = prdp_core.data.samples.load(name, n=500, seed=1)
    b = prdp_core.data.samples.load(name, n=500, seed=2)
    assert not a.equals(b)


def test_cbp_like_table8_percentiles():
    df = prdp_core.data.samples.load("cbp_like", n=100_000, seed=0)
    targets = {"EMP": [(2, .47), (5, .66), (100, .97)],
               "PAYANN": [(104, .50), (500, .79), (10_000, .99)],
               "PAYQTR1": [(24, .50), (125, .80), (2_500, .99)]}
    for col, pts in targets.items():
        for thr, share in pts:
            assert abs((df[col] <= thr).mean() - share) < 0.015, (col, thr)


def test_cbp_like_structure():
    df = prdp_core.data.samples.load("cbp_like", n=50_000, seed=4)
    sizes = df.groupby("FIRM_ID").size()
    assert (sizes == 1).mean() > 0.9  # most firms have one establishment
    assert sizes.max() >= 50  # some large multi-establishment firms
    assert (df["NAICS6"].str[:3] == df["NAICS3"]).all() and (df["NAICS6"].str[:5] == df["NAICS5"]).all()
    assert (df["NAICS3"].str.len() == 3).all() and (df["NAICS6"].str.len() == 6).all()
    assert (df["COUNTY"].str.len() == 5).all()
    assert df["EMP"].dtype.kind == "i" and df["PAYANN"].dtype.kind == "i"
    # payroll grows with employment (correlated measures, as in the real CBP)
    assert stats.spearmanr(df["EMP"], df["PAYANN"]).statistic > 0.7


def test_sim_pareto_tails():
    df = prdp_core.data.samples.load("sim_pareto", n=20_000, seed=5)
    assert df["CatIX"].between(1, 1000).all()
    for col, alpha in (("HT1", 1.2), ("HT2", 1.5)):
        assert df[col].min() >= 1.0
        p = stats.kstest(df[col], stats.pareto(b=alpha).cdf).pvalue
        assert p > 1e-3
        # and the test has power against a 10% different tail index
        assert stats.kstest(df[col], stats.pareto(b=alpha * 1.1).cdf).pvalue < 1e-3


def test_bank_normal_truncated_mean():
    df = prdp_core.data.samples.load("bank_normal_50k", n=200_000, seed=0)
    b = df["BALANCE"]
    assert len(b) == 200_000 and b.min() >= 0
    # mean of N(μ, μ²) truncated at 0: μ + μ·φ(1)/Φ(1)
    expected = 50_000 * (1 + stats.norm.pdf(1) / stats.norm.cdf(1))
    assert abs(b.mean() - expected) < 0.01 * expected


@pytest.mark.parametrize("name,b", [("bank_zipf_b3", 3.0), ("bank_zipf_b5", 5.0)])
def test_bank_zipf_zero_mass(name, b):
    df = prdp_core.data.samples.load(name, n=200_000, seed=0)
    p0 = 1 / special.zeta(b)
    assert abs((df["BALANCE"] == 0).mean() - p0) < 0.005
    assert abs((df["BALANCE"] == 1).mean() - p0 * 2.0 ** -b) < 0.005


def test_table2_example_exact():
    df = prdp_core.data.samples.load("table2_example")
    assert df["Employees"].tolist() == [150, 50, 100, 50, 20]
    assert df["Payroll"].tolist() == [10_000_000, 15_000_000, 10_000_000, 10_000_000, 1_000_000]
    with pytest.raises(ParameterError):
        prdp_core.data.samples.load("table2_example", n=10)


def test_real_samples_are_heavy_tailed():
    for name in prdp_core.data.samples.names("real"):
        ds = prdp_core.data.samples.load_dataset(name)
        prof = prdp_core.data.profile.profile_dataset(ds)
        top = max(p.top1_share for p in prof.measures.values())
        assert top > 0.2, name  # the top 1% of records hold over a fifth of some measure
        assert ds.schema.owner_col is not None


def test_real_sample_subsampling():
    name = prdp_core.data.samples.names("real")[0]
    a = prdp_core.data.samples.load(name, n=100, seed=1)
    assert len(a) == 100
    assert a.equals(prdp_core.data.samples.load(name, n=100, seed=1))
    with pytest.raises(ParameterError, match="only"):
        prdp_core.data.samples.load(name, n=10**7)


def test_bad_sample_arguments():
    with pytest.raises(ParameterError, match="Unknown sample"):
        prdp_core.data.samples.load("nope")
    with pytest.raises(ParameterError):
        prdp_core.data.samples.load("cbp_like", n=0)
    with pytest.raises(ParameterError):
        prdp_core.data.samples.load("cbp_like", n=2.5)  # type: ignore[arg-type]


def test_documented_default_sizes_and_integer_balances():
    """cbp_like and sim_pareto default to 100,000 rows; each bank sample is 200,000 integer balances ≥ 0."""
    assert prdp_core.data.samples.info("cbp_like").default_n == 100_000
    assert prdp_core.data.samples.info("sim_pareto").default_n == 100_000
    assert len(prdp_core.data.samples.load("cbp_like")) == 100_000
    for name in ("bank_normal_50k", "bank_normal_500k", "bank_zipf_b3", "bank_zipf_b5"):
        b = prdp_core.data.samples.load(name)["BALANCE"]
        assert len(b) == 200_000 and b.dtype.kind == "i" and b.min() >= 0, name


@pytest.mark.parametrize("name,rows", [("us_county_labor_2009", 3_218), ("world_cities", 34_003), ("gapminder", 1_704)])
def test_real_samples_documented_figures(name, rows):
    """The row counts of sample_data/README.md and the figures each sample's `properties` states
    (top-1% share, largest record × the median) hold for its first measure."""
    import re

    ds = prdp_core.data.samples.load_dataset(name)
    assert ds.n == rows
    p = prdp_core.data.profile.profile_dataset(ds).measures[ds.schema.measures[0]]
    checked = 0
    for prop in prdp_core.data.samples.info(name).properties:
        if m := re.search(r"top 1% of .* hold ≈ (\d+)%", prop):
            assert abs(p.top1_share * 100 - int(m.group(1))) < 1.0, (prop, p.top1_share)
            checked += 1
        if m := re.search(r"largest .* ≈ (\d+)× the median", prop):
            assert abs(p.max / p.median / int(m.group(1)) - 1) < 0.1, (prop, p.max / p.median)
            checked += 1
    assert checked == len(prdp_core.data.samples.info(name).properties)


def test_cbp_like_documented_firms_and_counties():
    """sample_data/README.md: about 20% of establishments belong to multi-establishment firms;
    clip(n/100, 20, 3100) counties."""
    n = 100_000
    df = prdp_core.data.samples.load("cbp_like", n=n, seed=0)
    sizes = df["FIRM_ID"].map(df.groupby("FIRM_ID").size())
    assert abs((sizes > 1).mean() - 0.20) < 0.02
    n_counties = min(max(n // 100, 20), 3100)
    assert 0.95 * n_counties <= df["COUNTY"].nunique() <= n_counties
