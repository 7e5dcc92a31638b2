"""Accuracy of the personalized DP mechanisms: Example 1, closed forms and exact pmfs against simulation, design
tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.personalized.accuracy import (
    compare,
    count_mse_proxy,
    delivered_table,
    exact_mse,
    example1_errors,
    simulate_answers,
    sum_mse_proxy,
    threshold_curve,
)
from prdp_core.mechanisms.personalized.mechanisms import PE, Minimum, Sample, Stretching, Threshold, paper_mechanisms
from prdp_core.mechanisms.personalized.query import PersonalizedQuery
from prdp_core.mechanisms.personalized.sample import sample_probability
from prdp_core.mechanisms.personalized.spec import TierConfig, generate_tiers, spec_from_values


def test_example1_total_errors():
    e1 = example1_errors(t=1.0)
    assert e1["pi_c"] == pytest.approx(0.0612, abs=5e-5)
    assert e1["k"] == 13
    assert e1["sampling_mse"] == pytest.approx(149.69, abs=0.01)  # paper: ≈ 150
    assert e1["laplace_var"] == 2.0
    assert round(e1["total"]) == 152  # paper: 152
    e2 = example1_errors(t=0.2)
    assert e2["pi_c"] == pytest.approx(0.4750, abs=5e-5)
    assert e2["sampling_mse"] == pytest.approx(49.82, abs=0.01)  # paper: ≈ 50
    assert e2["laplace_var"] == pytest.approx(50.0)
    assert round(e2["total"]) == 100  # paper: 100


def _example1_data():
    # n = 200 users, 65% conservative (ε = 0.1), the rest liberal (ε = 1); density 0.1 in each group
    phi = np.r_[np.full(130, 0.1), np.full(70, 1.0)]
    bits = np.zeros(200)
    bits[:13] = 1
    bits[130:137] = 1
    return bits, phi


def test_example1_from_the_mechanism_closed_form_and_simulation():
    bits, phi = _example1_data()
    spec = spec_from_values(phi)
    q = PersonalizedQuery("count")
    for t, total in ((1.0, 151.69), (0.2, 99.82)):
        m = Sample(t)
        bias, mse = exact_mse(m, bits, phi, q, spec, truth=20.0)
        assert mse == pytest.approx(total, abs=0.01)
        est = simulate_answers(m, bits, phi, q, spec, runs=40_000, rng=np.random.default_rng(7))
        assert np.mean((est - 20) ** 2) == pytest.approx(total, rel=0.03)
        # the same through the per-release code path (fewer draws)
        rng = np.random.default_rng(8)
        draws = np.array([m.answer(bits, phi, q, spec, rng=rng).estimate for _ in range(4000)])
        assert np.mean((draws - 20) ** 2) == pytest.approx(total, rel=0.08)


@pytest.mark.parametrize("m", [Sample(0.4), Sample("max", rescale=True), Threshold(0.5), Minimum(),
                               Stretching(), Stretching(rescale=True)])
def test_closed_form_count_and_sum_mse_match_simulation(m):
    rng = np.random.default_rng(21)
    n = 400
    vals = rng.integers(0, 20, n).astype(float)
    spec = generate_tiers(n, TierConfig(eps_c=0.1, eps_m=0.4), rng=rng)
    for q in (PersonalizedQuery("count", "v", cutoff=5), PersonalizedQuery("sum", "v", lo=0, hi=20)):
        x = q.prepare(vals)
        truth = q.truth(vals)
        bias, mse = exact_mse(m, x, spec.eps, q, spec, truth)
        est = simulate_answers(m, x, spec.eps, q, spec, runs=20_000, rng=rng)
        assert np.mean((est - truth) ** 2) == pytest.approx(mse, rel=0.05)
        assert est.mean() - truth == pytest.approx(bias, abs=4 * est.std() / math.sqrt(est.size) + 1e-9)


def test_exact_pmf_mse_matches_simulation_for_pe_and_em():
    rng = np.random.default_rng(22)
    vals = np.clip(np.rint(rng.normal(50, 15, 101)), 1, 100)
    spec = generate_tiers(101, rng=rng)
    for kind in ("median", "min"):
        q = PersonalizedQuery(kind, "v", lo=1, hi=100, integer=True)
        truth = q.truth(vals)
        for m in (PE(), Minimum(), Threshold()):
            bias, mse = exact_mse(m, vals, spec.eps, q, spec, truth)
            est = simulate_answers(m, vals, spec.eps, q, spec, runs=20_000, rng=rng)
            assert np.mean((est - truth) ** 2) == pytest.approx(mse, rel=0.06), (kind, m)


def test_count_proxy_formula_matches_simulation():
    rng = np.random.default_rng(23)
    spec = generate_tiers(500, rng=rng)
    delta, t = 0.2, 0.5
    proxy = count_mse_proxy(spec.eps, [t], density=delta)["rmse"].iloc[0] ** 2
    pi = sample_probability(spec.eps, t)
    R = 20_000
    bits = rng.random((R, 500)) < delta
    kept = bits & (rng.random((R, 500)) < pi)
    err = kept.sum(1) - bits.sum(1) + rng.laplace(0, 1 / t, R)
    assert np.mean(err ** 2) == pytest.approx(proxy, rel=0.04)
    with pytest.raises(ParameterError):
        sum_mse_proxy(spec.eps, [t], mean=2.0, sd=-1.0, bound=1.0)
    with pytest.raises(ParameterError):
        count_mse_proxy(spec.eps, [t], density=1.5)
    # the sum proxy with 0/1 values of mean δ (sd² = δ(1 − δ)) is the count proxy
    s = sum_mse_proxy(spec.eps, [t], mean=delta, sd=math.sqrt(delta * (1 - delta)), bound=1.0)
    assert s["rmse"].iloc[0] ** 2 == pytest.approx(proxy)


def test_compare_and_threshold_curve_tables():
    rng = np.random.default_rng(24)
    tab = pd.DataFrame({"v": rng.integers(0, 30, 500).astype(float)})
    spec = generate_tiers(500, rng=rng)
    for q in (PersonalizedQuery("count", "v", cutoff=10), PersonalizedQuery("median", "v", hi=40),
              PersonalizedQuery("sum", "v", hi=40)):
        df = compare(tab, spec, q, runs=50, rng=rng)
        assert set(df["mechanism"]) >= {"M", "T", "S", "S-avg"}
        assert ("PE" in set(df["mechanism"])) == (q.kind != "sum")
        assert ("Alag" in set(df["mechanism"])) == (q.kind != "median")
        assert (df["rmse"] >= 0).all() and df["method"].notna().all()
        curve = threshold_curve(tab, spec, q, [0.1, 0.37, 1.0], runs=30, rng=rng)
        assert len(curve) == 3 and (curve["rmse"] > 0).all()
    dt = delivered_table(spec, paper_mechanisms("count"))
    row = dt.set_index("mechanism")
    assert row.loc["S", "users_full_phi"] == 1.0 and row.loc["PE", "users_full_phi"] == 1.0
    assert row.loc["T", "users_unused"] == pytest.approx(0.91, abs=0.001)  # only the 9% liberal users are used
