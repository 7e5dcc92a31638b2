"""The p% rule, the (n, k)-dominance rule and the minimum frequency on hand-computed cells, at the owner level."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.legacy_sdc import TOTAL, Rules, cell_table, primary_suppression


def _records(cells: dict[str, list[float]]) -> pd.DataFrame:
    """One record per contribution; each contribution its own owner unless given as (owner, value)."""
    rows = []
    for cell, contribs in cells.items():
        for j, c in enumerate(contribs):
            owner, x = c if isinstance(c, tuple) else (f"{cell}-{j}", c)
            rows.append({"G": cell, "OWNER": owner, "X": float(x)})
    return pd.DataFrame(rows)


def _verdict(cells: dict, rules: Rules) -> pd.DataFrame:
    t = cell_table(_records(cells), ["G"], "X", "OWNER")
    v = primary_suppression(t, rules)
    return pd.concat([t.cells, v], axis=1).set_index("G")


P10 = Rules(p=10, k=None, min_frequency=0)


def test_p_rule_on_hand_computed_cells():
    v = _verdict({"a": [100, 5, 3], "b": [100, 50, 20], "c": [50, 50, 1], "d": [80], "e": [0, 0, 0]}, P10)
    # a: X − x1 − x2 = 3 < 10% of 100 → sensitive, protection 10 − 3 = 7
    assert v.loc["a", "p_rule"] and v.loc["a", "protection"] == pytest.approx(7.0)
    # b: remainder 20 ≥ 10 → published
    assert not v.loc["b", "sensitive"] and v.loc["b", "protection"] == 0
    # c: a tie of the two largest: x1 = x2 = 50, remainder 1 < 5 → protection 4
    assert v.loc["c", "p_rule"] and v.loc["c", "protection"] == pytest.approx(4.0)
    # d: a single owner is always sensitive: protection 10% of its value
    assert v.loc["d", "p_rule"] and v.loc["d", "protection"] == pytest.approx(8.0)
    # e: an all-zero cell is never sensitive
    assert not v.loc["e", "sensitive"]
    # the grand total (all 12 contributions) is safe
    assert not v.loc[TOTAL, "sensitive"]


def test_rules_judge_owners_not_records():
    # two establishments of one firm (40 + 40) and one of another (10): record by record the remainder 10 would
    # pass the p% rule (10 ≥ 4), but the firm's 80 against 10 leaves nothing: sensitive
    cells = {"a": [("F", 40), ("F", 40), ("G", 10)]}
    v = _verdict(cells, P10)
    assert v.loc["a", "owners"] == 2 and v.loc["a", "p_rule"]
    assert v.loc["a", "protection"] == pytest.approx(8.0)
    per_record = primary_suppression(cell_table(_records(cells), ["G"], "X", None), P10)
    assert not per_record["p_rule"].iloc[0]


def test_dominance_rule_on_hand_computed_cells():
    v = _verdict({"a": [100, 5, 3], "b": [40, 30, 30], "c": [60, 40]}, Rules(p=None, n=2, k=85, min_frequency=0))
    # a: the two largest hold 105 of 108 > 85% → protection 105/0.85 − 108
    assert v.loc["a", "dominance"] and v.loc["a", "protection"] == pytest.approx(105 / 0.85 - 108)
    assert not v.loc["b", "dominance"]  # 70 of 100
    assert v.loc["c", "dominance"]  # two owners hold everything
    one = _verdict({"c": [60, 40], "f": [50, 50]}, Rules(p=None, n=1, k=50, min_frequency=0))
    assert one.loc["c", "protection"] == pytest.approx(60 / 0.5 - 100)
    assert not one.loc["f", "dominance"]  # exactly 50%: not more than k%


def test_minimum_frequency_and_combined_reasons():
    v = _verdict({"a": [10, 10], "b": [5, 5, 5]},
                 Rules(p=10, n=2, k=85, min_frequency=3))
    assert v.loc["a", "frequency"] and v.loc["a", "reason"] == "p% rule, dominance, frequency"
    assert not v.loc["b", "sensitive"] and v.loc["b", "reason"] == ""
    f_only = _verdict({"a": [10, 10, 10], "b": [5, 5, 5, 5]}, Rules(p=None, k=None, min_frequency=4))
    assert f_only.loc["a", "frequency"] and f_only.loc["a", "protection"] == pytest.approx(3.0)  # 10% of 30
    assert not f_only.loc["b", "frequency"]


@pytest.mark.parametrize("kw", [{"p": 0}, {"p": 100}, {"k": 0}, {"k": 120}, {"n": 0}, {"n": 1.5},
                                {"min_frequency": -1}])
def test_impossible_rule_parameters_are_refused(kw):
    with pytest.raises(ParameterError):
        Rules(**kw)


def test_bad_tables_are_refused_with_a_message():
    frame = pd.DataFrame({"G": ["a", "b"], "X": [1.0, -2.0]})
    with pytest.raises(ParameterError, match="negative"):
        cell_table(frame, ["G"], "X")
    with pytest.raises(ParameterError, match="no column 'H'"):
        cell_table(frame, ["H"], "X")
    frame["X"] = [1.0, np.nan]
    with pytest.raises(ParameterError, match="missing"):
        cell_table(frame, ["G"], "X")


def test_two_dimensional_table_has_margins_from_the_records():
    frame = pd.DataFrame({"A": ["x", "x", "y", "y"], "B": ["p", "q", "p", "q"], "F": ["f", "f", "g", "h"],
                          "X": [1.0, 2.0, 3.0, 4.0]})
    t = cell_table(frame, ["A", "B"], "X", "F")
    c = t.cells.set_index(["A", "B"])
    assert c.loc[("x", TOTAL), "value"] == 3 and c.loc[("x", TOTAL), "owners"] == 1  # firm f once in its row
    assert c.loc[(TOTAL, "p"), "owners"] == 2 and c.loc[(TOTAL, TOTAL), "value"] == 10
    assert c.loc[(TOTAL, TOTAL), "owners"] == 3
    assert sorted(t.cells["kind"].unique()) == ["interior", "margin", "total"]
