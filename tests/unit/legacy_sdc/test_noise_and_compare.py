"""Noise infusion at the owner level and the side-by-side comparison's summary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.legacy_sdc import (
    TOTAL,
    NoiseInfusion,
    Rules,
    cell_table,
    compare_methods,
    infuse,
    primary_suppression,
    suppress,
)


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 3000
    return pd.DataFrame({"A": rng.integers(0, 4, n).astype(str), "B": rng.integers(0, 3, n).astype(str),
                         "F": rng.integers(0, 400, n).astype(str), "X": rng.pareto(1.5, n) * 10 + 1})


def test_multipliers_stay_between_low_and_high_away_from_one():
    m = NoiseInfusion(0.1, 0.15).multipliers(20000, np.random.default_rng(1))
    away = np.abs(m - 1)
    assert away.min() >= 0.1 and away.max() <= 0.15
    assert 0.45 < (m > 1).mean() < 0.55  # up or down with probability ½


def test_one_multiplier_per_owner_keeps_the_margins_additive():
    t = cell_table(_frame(), ["A", "B"], "X", "F")
    got = infuse(t, NoiseInfusion(), np.random.default_rng(5))
    c = t.cells.assign(noisy=got["noisy"])
    interior = c[c["kind"] == "interior"]
    for a, row in interior.groupby("A"):
        assert c.loc[(c["A"] == a) & (c["B"] == TOTAL), "noisy"].iloc[0] == pytest.approx(row["noisy"].sum())
    assert c.loc[c["kind"] == "total", "noisy"].iloc[0] == pytest.approx(interior["noisy"].sum())


def test_flags_follow_the_share_of_noise_and_a_single_owner_cell_is_withheld():
    frame = pd.DataFrame({"A": ["solo", "many", "many", "many", "many"], "F": ["s", "a", "b", "c", "d"],
                          "X": [50.0, 10.0, 10.0, 10.0, 10.0]})
    t = cell_table(frame, ["A"], "X", "F")
    got = infuse(t, NoiseInfusion(0.10, 0.15), np.random.default_rng(0)).set_index(t.cells["A"])
    assert 0.10 - 1e-12 <= got.loc["solo", "share"] <= 0.15 + 1e-12 and got.loc["solo", "flag"] == "J"
    share = got["share"]
    expect = np.where(share < 0.02, "G", np.where(share < 0.05, "H", "J"))
    assert (got["flag"].to_numpy() == expect).all()
    with pytest.raises(ParameterError):
        NoiseInfusion(0.2, 0.1)


def test_the_summary_counts_what_each_method_publishes_and_its_error():
    frame = pd.DataFrame({"A": ["a", "b", "b", "b", "c", "c", "c"], "F": list("fghijkl"),
                          "X": [100.0, 30.0, 30.0, 40.0, 20.0, 20.0, 20.0]})
    t = cell_table(frame, ["A"], "X", "F")
    v = primary_suppression(t, Rules(p=10, k=None, min_frequency=0))
    s = suppress(t, v["sensitive"].to_numpy(), v["protection"].to_numpy())
    dp = pd.DataFrame({"A": ["a", "b"], "estimate": [110.0, 95.0]})  # c not released (partition selection)
    cmp = compare_methods(t, v, s, infuse(t, NoiseInfusion(), np.random.default_rng(2)), dp, dp_label="DP")
    rows = cmp.summary.set_index("method")
    supp = rows.loc["cell suppression"]
    assert supp["cells"] == 3 and supp["published"] == 1  # a (one firm) and its complement withheld
    assert supp["median_rel_error"] == 0
    published = t.cells.loc[s.status.to_numpy() == "published"]
    published = published[published["kind"] == "interior"]
    assert supp["share_total"] == pytest.approx(published["value"].sum() / 260)
    d = rows.loc["DP"]
    assert d["published"] == 2 and d["share_total"] == pytest.approx(200 / 260)
    assert d["median_rel_error"] == pytest.approx(np.median([0.1, 0.05]))
    assert "formal guarantee" in d["promise"] and rows.loc["noise infusion", "promise"].startswith("No formal")
    review = cmp.for_review()
    assert list(review.columns) == ["method", "cells", "withheld"]
    assert review.set_index("method").loc["cell suppression", "withheld"] == 2
