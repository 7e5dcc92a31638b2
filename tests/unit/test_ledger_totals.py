"""Ledger.running_totals: the ledger's losses added up release after release, and the stored form of
thresholds that a restored ledger depends on."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.accounting import FlatLoss, Ledger, LedgerEntry, RecordLoss, loss_from_dict
from prdp_core.core.errors import ParameterError
from prdp_core.core.splitting import Thresholds, as_thresholds
from prdp_core.core.workload import Query, SplittingPolicy, Workload

TABLE = pd.DataFrame({"G": [1, 2, 1, 2, 3], "V": [10.0, 200.0, 3000.0, 5.0, 77.0]})


def _split(rho: float = 0.5) -> LedgerEntry:
    thr = as_thresholds({"*": {"V": 100.0}, 2: {"V": 10.0}}, group_col="G")
    return LedgerEntry("split", "unit_splitting", SplittingPolicy(thr, Workload((Query("sum", "V", rho=rho),))))


def test_totals_follow_sequential_composition_record_by_record():
    e1, e2 = _split(), LedgerEntry("flat", "m", FlatLoss(0.25))
    led = Ledger([e1, e2, e1])
    tot = led.running_totals(TABLE)
    per = [e.loss(TABLE) for e in led.entries]
    assert tot["largest record loss"].tolist() == pytest.approx([p.max() for p in per])
    assert tot["largest record total (ρ)"].tolist() == pytest.approx(
        [per[0].max(), (per[0] + per[1]).max(), (per[0] + per[1] + per[2]).max()])
    assert tot["largest record total (ρ)"].iloc[-1] == pytest.approx(led.total(TABLE).max())
    assert tot["base total (ρ)"].tolist() == pytest.approx([0.5, 0.75, 1.25])
    assert math.isinf(tot["worst-case total (ρ)"].iloc[0]) and tot["counted"].tolist() == ["records"] * 3
    assert tot["largest record total (ε)"].isna().all()  # zCDP releases have no pure-ε total


def test_pure_epsilon_releases_are_totalled_in_epsilon_and_in_rho():
    v = np.array([0.1, 0.2, 0.4, 0.1, 0.3])
    rec = LedgerEntry("r", "prdp", RecordLoss(v, "eps", bound=0.4))
    tot = Ledger([rec, LedgerEntry("f", "m", FlatLoss(0.5, "eps"))]).running_totals(TABLE)
    assert tot["largest record total (ε)"].tolist() == pytest.approx([0.4, 0.9])
    assert tot["largest record total (ρ)"].iloc[-1] == pytest.approx((0.5 * v ** 2 + 0.125).max())
    assert tot["worst-case total (ρ)"].tolist() == pytest.approx([0.08, 0.08 + 0.125])


def test_releases_on_other_data_count_at_their_worst_case_or_not_at_all():
    other = LedgerEntry("elsewhere", "prdp", RecordLoss(np.ones(7) * 0.2, "eps", bound=0.3))  # 7 records: another table
    here = LedgerEntry("here", "m", FlatLoss(0.1, "eps"))
    led = Ledger([other, here])
    worst = led.running_totals(TABLE, on_table=[False, True])
    assert worst["counted"].tolist() == ["worst case", "records"]
    assert worst["largest record total (ε)"].tolist() == pytest.approx([0.3, 0.4])
    skip = led.running_totals(TABLE, on_table=[False, True], others="skip")
    assert skip["counted"].tolist() == ["not counted", "records"]
    assert skip["largest record total (ε)"].tolist() == pytest.approx([0.0, 0.1])
    # a data-dependent loss of another table cannot be evaluated here, even if said to be on it: worst case
    assert led.running_totals(TABLE)["counted"].tolist() == ["worst case", "records"]
    with pytest.raises(ParameterError):
        led.running_totals(TABLE, on_table=[True])


def test_without_a_table_only_public_sums_and_mixed_notions_have_no_total():
    sub = LedgerEntry("pe", "personalized", FlatLoss(0.2, "eps"), neighbours="substitution")
    tot = Ledger([LedgerEntry("f", "m", FlatLoss(0.5)), sub]).running_totals()
    assert tot["counted"].tolist() == ["public form"] * 2 and "largest record total (ρ)" not in tot
    assert tot["base total (ρ)"].iloc[0] == 0.5 and math.isnan(tot["base total (ρ)"].iloc[1])
    assert Ledger().running_totals(TABLE).empty


@pytest.mark.parametrize("keys", [(1, 2), (1.5, 2.5), (True, False), ("a", "b"), (np.int64(4), np.int64(5))])
def test_thresholds_keep_their_group_values_through_json(keys):
    thr = as_thresholds({"*": {"V": 100.0}, keys[0]: {"V": 10.0}, keys[1]: {"V": 1000.0}}, group_col="G")
    back = Thresholds.from_dict(json.loads(json.dumps(thr.to_dict())))
    plain = [k.item() if isinstance(k, np.generic) else k for k in keys]
    assert [g for g, _ in back.rows] == ["*", *plain]
    assert [type(g) for g, _ in back.rows][1:] == [type(k) for k in plain]


def test_a_per_group_policy_on_integer_groups_gives_the_same_losses_after_json():
    e = _split()
    back = loss_from_dict(json.loads(json.dumps(e.loss.to_dict())))
    assert np.array_equal(back(TABLE), e.loss(TABLE))  # group 2's threshold 10 still applies to G == 2
    assert back(TABLE)[1] == pytest.approx(0.5 * 20 ** 2)
