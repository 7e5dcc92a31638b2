"""Granular DP accounting: per-attribute vs whole-record (Prop. 8, Lemma 10), workloads (Thm 11), the Census preset."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prdp_core.core import accounting as A
from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.granular.accounting import (
    calibrate_workload,
    census_2020_illustrative,
    granularity_table,
    record_cost_table,
    record_ratio_table,
    releases_from_table,
    releases_table,
    subset_curve,
    workload_ratio,
    workload_sensitivity,
    workload_size,
)

# ---------------------------------------------------------------------------
# Per-attribute vs whole-record accounting (Prop. 8, Lemma 10)
# ---------------------------------------------------------------------------


def test_prop8_group_privacy():
    assert A.per_attribute_to_record(0.1, 10) == pytest.approx(1.0)
    assert A.per_attribute_to_record(0.1, 10, kind="cdp") == pytest.approx(0.5)  # ½(dε0)²
    assert A.per_attribute_to_record(1.0, 0) == 0
    with pytest.raises(ParameterError):
        A.per_attribute_to_record(-1, 3)
    with pytest.raises(ParameterError):
        A.per_attribute_to_record(1, 2.5)
    with pytest.raises(ParameterError):
        A.per_attribute_to_record(1, 2, kind="approx")


def test_prop8_delta_formula_is_the_textbook_conversion():
    """Prop. 8: δ̃ = exp(−(ε̃ − ½d²ε0²)²/(2d²ε0²)) is ε̃ = ρ + 2√(ρ ln 1/δ̃), ρ = ½d²ε0²."""
    for d, e0 in ((10, 0.1), (5, 0.7), (64, 0.05)):
        rho = A.per_attribute_to_record(e0, d, kind="cdp")
        for delta in (1e-3, 1e-6, 1e-10):
            eps = A.zcdp_to_approx_dp(rho, delta, method="textbook")
            assert math.exp(-((eps - 0.5 * d * d * e0 * e0) ** 2) / (2 * d * d * e0 * e0)) == pytest.approx(delta)


def test_lemma10_disjoint_releases():
    per, whole = A.disjoint_attribute_releases([0.02] * 20, measure="rho")
    assert per == 0.02 and whole == pytest.approx(0.4)  # "ε" √d·ε0 for the whole record
    assert math.sqrt(2 * whole) == pytest.approx(math.sqrt(20) * math.sqrt(2 * 0.02))
    assert A.disjoint_attribute_releases([0.1, 0.3], measure="eps") == (0.3, pytest.approx(0.4))
    assert A.disjoint_attribute_releases([], measure="eps") == (0.0, 0.0)


def test_census_preset_reproduces_the_paper():
    rel = census_2020_illustrative()
    whole = A.attribute_subset_rho(rel, {a for r in rel for a in r.attributes})
    assert whole == pytest.approx(2.63)
    assert A.zcdp_to_approx_dp(whole, 1e-6) == pytest.approx(13.79, abs=0.01)
    race = A.attribute_subset_rho(rel, ["race", "ethnicity"])
    assert race == pytest.approx(1.02)
    assert A.zcdp_to_approx_dp(race, 1e-6) == pytest.approx(7.856, abs=0.005)
    table = A.attribute_rho_table(rel, 1e-6)
    assert table["attribute"].iloc[-1] == "(whole record)" and table["rho"].iloc[-1] == pytest.approx(2.63)
    assert table.set_index("attribute").loc["geography", "rho"] == pytest.approx(2.63)
    curve = subset_curve(rel, ["race", "ethnicity", "voting age"])
    assert list(curve["rho"]) == pytest.approx([1.02, 1.02, 1.64])


releases_st = st.lists(st.tuples(st.sets(st.sampled_from("abcdef"), min_size=1, max_size=4),
                                 st.floats(0, 5, allow_nan=False)), min_size=1, max_size=8)


@given(releases_st, st.sets(st.sampled_from("abcdef")), st.sets(st.sampled_from("abcdef")))
def test_subset_accountant_monotone_subadditive(spec, s, t):
    rel = [A.AttributeRelease(f"r{i}", frozenset(a), r) for i, (a, r) in enumerate(spec)]
    rs, rt, rst = (A.attribute_subset_rho(rel, x) for x in (s, t, s | t))
    assert rst <= rs + rt + 1e-9
    assert rst >= max(rs, rt) - 1e-12
    assert A.attribute_subset_rho(rel, "abcdef") == pytest.approx(sum(r for _, r in spec))


def test_release_table_round_trip_and_errors():
    rel = census_2020_illustrative()
    back = releases_from_table(releases_table(rel))
    assert [(r.label, r.attributes, r.rho) for r in back] == [(r.label, r.attributes, r.rho) for r in rel]
    blank = pd.DataFrame({"release": ["x", None], "attributes": ["a, b", None], "rho": [0.5, None]})
    assert len(releases_from_table(blank)) == 1
    with pytest.raises(ParameterError, match="no ρ"):
        releases_from_table(pd.DataFrame({"release": ["x"], "attributes": ["a"], "rho": [None]}))
    with pytest.raises(ParameterError, match="number"):
        releases_from_table(pd.DataFrame({"release": ["x"], "attributes": ["a"], "rho": ["lots"]}))
    with pytest.raises(ParameterError, match="reads no attribute"):
        releases_from_table(pd.DataFrame({"release": ["x"], "attributes": [" , "], "rho": [1.0]}))
    with pytest.raises(ParameterError, match="columns"):
        releases_from_table(pd.DataFrame({"name": ["x"]}))


# ---------------------------------------------------------------------------
# Gaussian workloads (Thm 11)
# ---------------------------------------------------------------------------


def test_workload_ratios_of_the_notes():
    assert workload_ratio("conjunctions", 10, 2) == pytest.approx(2.236, abs=1e-3)
    assert workload_ratio("conjunctions", 12, 3) == pytest.approx(2.0)
    assert workload_ratio("conjunctions", 14, 2) == pytest.approx(2.646, abs=1e-3)
    assert workload_ratio("marginals", 30, 3) == pytest.approx(math.sqrt(10))
    full = workload_sensitivity("conjunctions", 10, 2, 10)
    sub = [workload_sensitivity("conjunctions", 10, 2, s) / full for s in (1, 2, 3, 5, 10)]
    assert sub == pytest.approx([0.447, 0.615, 0.730, 0.882, 1.0], abs=1e-3)
    assert workload_sensitivity("parities", 6, 2, 6) ** 2 == 9  # ⌊d²/4⌋ < C(6,2) = 15
    assert workload_size("marginals", 5, 2) == 40 and workload_size("parities", 5, 2) == 10


def test_workload_calibration():
    cal = calibrate_workload("marginals", 20, 2, 0.2, n=1000)
    assert cal.sigma == pytest.approx(workload_sensitivity("marginals", 20, 2, 1) / (0.2 * 1000))
    assert cal.eps_record == pytest.approx(0.2 * math.sqrt(10))
    assert cal.rho_record == pytest.approx(0.5 * 0.04 * 10)
    assert cal.eps_subset(20) == pytest.approx(cal.eps_record) and cal.eps_subset(1) == pytest.approx(0.2)
    with pytest.raises(ParameterError):
        workload_sensitivity("cubes", 5, 2, 1)
    with pytest.raises(ParameterError):
        workload_sensitivity("marginals", 5, 6, 1)


def test_granularity_and_record_cost_tables():
    g = granularity_table(10, 0.1, k=2, kind="cdp")
    assert list(g.columns) == ["attributes", "group", "disjoint", "workload"]
    assert g["group"].iloc[-1] == pytest.approx(1.0) and g["disjoint"].iloc[-1] == pytest.approx(0.1 * math.sqrt(10))
    assert g["workload"].iloc[-1] == pytest.approx(0.1 * math.sqrt(5))
    assert (g["workload"] <= g["group"] + 1e-12).all()
    gp = granularity_table(10, 0.1, kind="pure")
    assert "workload" not in gp and gp["disjoint"].iloc[-1] == pytest.approx(1.0)
    c = record_cost_table(20, 0.2, k=2, delta=1e-6).set_index("statement")
    whole = c.iloc[2]
    assert whole["pure"] == pytest.approx(4.0) and whole["rho"] == pytest.approx(8.0)
    assert whole["eps_cks"] == pytest.approx(A.zcdp_to_approx_dp(8.0, 1e-6))
    assert c.iloc[3]["rho"] == pytest.approx(0.4) and c.iloc[4]["rho"] == pytest.approx(0.2)
    r = record_ratio_table(50, k=2)
    assert r["workload"].iloc[-1] == pytest.approx(5.0) and math.isnan(r["workload"].iloc[0])
