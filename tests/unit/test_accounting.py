"""Ledger, composition laws and (ε, δ) conversions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prdp_core.core.accounting import (
    FlatLoss,
    Ledger,
    LedgerEntry,
    ParallelLoss,
    RecordLoss,
    SumLoss,
    approx_dp_delta,
    loss_from_dict,
    pure_to_zcdp,
    zcdp_to_approx_dp,
)
from prdp_core.core.errors import ConfigError, ParameterError, PolicyError
from prdp_core.core.neighbours import Substitution


def test_published_conversion_values():
    # ρ = 2.63, δ = 1e-6: ε ≈ 13.79 (CKS) vs ≈ 14.69 (textbook)
    assert zcdp_to_approx_dp(2.63, 1e-6) == pytest.approx(13.79, abs=0.005)
    assert zcdp_to_approx_dp(2.63, 1e-6, method="textbook") == pytest.approx(14.69, abs=0.005)


def test_cks_matches_brute_force_over_alpha():
    for rho, delta in [(0.01, 1e-5), (0.5, 1e-9), (5.0, 1e-3), (30.0, 1e-10)]:
        a = 1 + np.logspace(-6, 4, 400_001)
        f = a * rho + (np.log(1 / delta) + (a - 1) * np.log1p(-1 / a) - np.log(a)) / (a - 1)
        assert zcdp_to_approx_dp(rho, delta) == pytest.approx(f.min(), rel=1e-6)


@given(st.floats(1e-4, 50), st.floats(1e-12, 0.1))
def test_cks_never_worse_than_textbook_and_inverts(rho, delta):
    e = zcdp_to_approx_dp(rho, delta)
    assert e <= zcdp_to_approx_dp(rho, delta, method="textbook") + 1e-9
    if e > 1e-9:
        assert approx_dp_delta(rho, e) == pytest.approx(delta, rel=1e-3)
    else:  # ρ so small that (0, δ)-DP already holds
        assert approx_dp_delta(rho, 0.0) <= delta * (1 + 1e-6)


def test_conversion_bad_parameters():
    with pytest.raises(ParameterError):
        zcdp_to_approx_dp(-1, 1e-6)
    with pytest.raises(ParameterError):
        zcdp_to_approx_dp(1, 0)
    with pytest.raises(ParameterError):
        zcdp_to_approx_dp(1, 1e-6, method="nope")  # type: ignore[arg-type]
    assert zcdp_to_approx_dp(0.0, 1e-6) == 0.0


TABLE = pd.DataFrame({"g": ["a", "b", "a", "c"], "v": [1.0, 2.0, 3.0, 4.0]})


@given(st.lists(st.floats(0, 10), min_size=1, max_size=5))
def test_sequential_composition_adds(vals):
    led = Ledger([LedgerEntry(f"r{i}", "test", FlatLoss(v)) for i, v in enumerate(vals)])
    assert np.allclose(led.total(TABLE), sum(vals))
    s = SumLoss(tuple(FlatLoss(v) for v in vals))
    assert np.allclose(s(TABLE), sum(vals))
    assert s.supremum() == pytest.approx(sum(vals))


def test_parallel_composition_takes_each_parts_loss_and_max_over_universe():
    p = ParallelLoss("g", (("a", FlatLoss(1.0)), ("b", FlatLoss(5.0))), default=FlatLoss(2.0))
    assert p(TABLE).tolist() == [1.0, 5.0, 1.0, 2.0]
    assert p.supremum() == 5.0 and p.minimum() == 1.0
    with pytest.raises(PolicyError, match="No policy part covers"):
        ParallelLoss("g", (("a", FlatLoss(1.0)),))(TABLE)


def test_mixed_measures_total_in_rho():
    led = Ledger([LedgerEntry("z", "t", FlatLoss(0.5, "rho")), LedgerEntry("e", "t", FlatLoss(2.0, "eps"))])
    assert np.allclose(led.total(TABLE, "rho"), 0.5 + pure_to_zcdp(2.0))
    with pytest.raises(PolicyError, match="zCDP release"):
        led.total(TABLE, "eps")


def test_ledger_round_trip_and_summary():
    p = ParallelLoss("g", (("a", FlatLoss(1.0)),), default=SumLoss((FlatLoss(0.5), FlatLoss(0.25))))
    led = Ledger([LedgerEntry("sum", "m", p, {"x": np.float64(2.0)}, seed=3),
                  LedgerEntry("rec", "m", RecordLoss(np.array([0.1, 0.2, 0.3, 0.4]), "eps"))])
    d = led.to_dict()
    assert "values" not in d["entries"][1]["loss"]  # per-record values are not exported by default
    with pytest.raises(ConfigError, match="without their values"):
        Ledger.from_dict(d)
    led2 = Ledger.from_dict({"entries": [d["entries"][0]]})
    assert np.allclose(led2.total(TABLE), p(TABLE))
    s = led.summary(TABLE)
    assert list(s["release"]) == ["sum", "rec"] and s.loc[0, "worst case"] == 1.0
    with pytest.raises(ConfigError):
        loss_from_dict({"kind": "nope"})


def test_flat_loss_validation():
    with pytest.raises(ParameterError):
        FlatLoss(-1.0)
    with pytest.raises(ParameterError):
        FlatLoss(math.nan)


def test_ledger_refuses_to_total_different_neighbour_notions():
    led = Ledger([LedgerEntry("a", "m", FlatLoss(1.0, "eps")),
                  LedgerEntry("b", "m", FlatLoss(1.0, "eps"), neighbours="substitution")])
    with pytest.raises(PolicyError, match="neighbour notions"):
        led.total(TABLE, "eps")
    assert list(led.summary()["neighbours"]) == ["add/remove", "substitution"]
    assert Ledger.from_dict(led.to_dict()).entries[1].neighbours == Substitution()
