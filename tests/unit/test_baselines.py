"""Baselines: clipped sums with Laplace / Gaussian noise, top-coding, the global minimum."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import prdp_core
from prdp_core.core.accounting import Ledger
from prdp_core.core.errors import ParameterError
from prdp_core.core.secure import grid_for
from prdp_core.mechanisms import baselines as BL
from prdp_core.mechanisms.prdp.budget import inverse


def test_clipped_total_matches_numpy_across_chunks():
    rng = np.random.default_rng(0)
    v = rng.normal(10, 30, 10_001)
    want = float(np.clip(v, -5, 20).sum())
    assert BL.clipped_total(v, -5, 20) == pytest.approx(want, rel=1e-12)
    assert BL.clipped_total(v, -5, 20, chunk=7) == pytest.approx(want, rel=1e-12)
    assert BL.clipped_total(np.array([np.inf, -np.inf, 3.0]), 0, 10) == 13.0
    assert BL.clipped_total(np.array([]), 0, 1) == 0.0


def test_primitives_validate_inputs():
    rng = np.random.default_rng(0)
    for lo, hi in ((1, 0), (0, 0), (math.nan, 1), (0, math.inf)):
        with pytest.raises(ParameterError):
            BL.clipped_sum_laplace(np.ones(3), lo, hi, 1.0, rng=rng)
    for e in (0, -1, math.nan, math.inf, "x"):
        with pytest.raises(ParameterError):
            BL.clipped_sum_laplace(np.ones(3), 0, 1, e, rng=rng)
        with pytest.raises(ParameterError):
            BL.clipped_sum_gaussian(np.ones(3), 0, 1, e, rng=rng)
    with pytest.raises(ParameterError, match="NaN"):
        BL.clipped_sum_laplace(np.array([1.0, math.nan]), 0, 1, 1.0, rng=rng)


def test_release_contents_flat_loss_and_ledger():
    df = prdp_core.data.samples.load("table2_example")
    m = BL.ClippedSum("Employees", 0.5, upper=60.0)
    rel = m.release(df, rng=np.random.default_rng(1), reveal=True, seed=1)
    assert rel.measure == "eps" and np.all(rel.loss == 0.5) and rel.seed == 1 and not rel.secure
    row = rel.answers.iloc[0]
    assert row["true"] == float(np.clip(df["Employees"], 0, 60).sum())
    assert row["scale"] == pytest.approx(120.0) and row["ci_low"] < row["estimate"] < row["ci_high"]
    assert rel.extras["private_clipping_bias"] <= 0
    assert rel.entries[0].loss.describe().startswith("0.5ε")
    led = Ledger().extend(rel.entries)
    assert led.total(df, "eps").tolist() == [0.5] * len(df)
    review = rel.for_review()
    assert "true" not in review.answers and review.loss is None and "private_clipping_bias" not in review.extras
    g = BL.ClippedSum("Payroll", 0.25, upper=1e6, noise="gaussian").release(df, rng=np.random.default_rng(2))
    assert g.measure == "rho" and g.answers["sigma"].iloc[0] == pytest.approx(1e6 / math.sqrt(0.5))
    c = BL.ClippedSum(None, 1.0).release(df, rng=np.random.default_rng(3), reveal=True)
    assert c.answers["query"].iloc[0] == "COUNT(*)" and c.answers["true"].iloc[0] == len(df)


def test_secure_release_is_on_the_grid():
    df = pd.DataFrame({"v": [1.3, 70.0, 12.25, 49.0, -3.0]})
    rel = BL.ClippedSum("v", 1.0, upper=50.0, lower=-10.0).release(df, secure=True, reveal=True)
    g = grid_for(50.0)
    est = rel.answers["estimate"].iloc[0]
    assert rel.secure and rel.seed is None and rel.entries[0].secure and rel.extras["grid"] == g
    assert est % g == 0 and rel.answers["scale"].iloc[0] >= 50.0
    cnt = BL.ClippedSum(None, 1.0).release(df, secure=True)
    assert cnt.answers["estimate"].iloc[0] == round(cnt.answers["estimate"].iloc[0])
    with pytest.raises(ParameterError, match="secure=True"):
        BL.ClippedSum("v", 1.0, upper=50.0).release(df)


def test_release_errors_are_actionable():
    df = pd.DataFrame({"v": [1.0], "s": ["a"]})
    with pytest.raises(ParameterError, match="not in the table"):
        BL.ClippedSum("w", 1.0).release(df, rng=np.random.default_rng(0))
    with pytest.raises(ParameterError, match="numeric"):
        BL.ClippedSum("s", 1.0).release(df, rng=np.random.default_rng(0))
    with pytest.raises(ParameterError, match="noise"):
        BL.ClippedSum("v", 1.0, noise="cauchy")  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        BL.ClippedSum("v", -1.0)
    with pytest.raises(ParameterError):
        BL.ClippedSum("v", 1.0).release([1, 2], rng=np.random.default_rng(0))


def test_top_coding_and_global_minimum():
    df = prdp_core.data.samples.load("table2_example")
    t = BL.top_coding("Employees", 60, 0.5)
    assert t.noise == "gaussian" and t.sensitivity == 60 and t.lower == 0
    rel = t.release(df, rng=np.random.default_rng(0), reveal=True)
    assert rel.answers["true"].iloc[0] == 60 + 50 + 60 + 50 + 20  # the same clamp as the Table 7 baseline
    bud = inverse(1e4, "BALANCE")
    gm = BL.global_minimum(bud, "BALANCE")
    assert gm.budget == bud.eps_min and gm.upper == bud.U and gm.noise == "laplace"
    data = prdp_core.data.samples.load("bank_normal_50k", n=1_000, seed=0)
    r = gm.release(data, rng=np.random.default_rng(1))
    assert np.all(r.loss <= bud(data) * (1 + 1e-12))
    with pytest.raises(ParameterError):
        BL.global_minimum("not a budget")  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        BL.top_coding("v", 0, 1.0)
