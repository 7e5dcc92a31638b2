"""Complementary suppression and its linear-programming audit on one- and two-dimensional tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.legacy_sdc import TOTAL, Rules, audit, cell_table, primary_suppression, suppress

P10 = Rules(p=10, k=None, min_frequency=0)


def _table(frame, dims, rules=P10):
    t = cell_table(frame, dims, "X", "F")
    v = primary_suppression(t, rules)
    return t, v


def test_a_single_complementary_cell_that_is_too_small_is_not_enough():
    # cell a: one firm of 100 (protection 10); b, c, d: three equal firms each, 4, 5 and 6 in all (not sensitive)
    rows = [("a", "A1", 100.0)] + [(g, f"{g}{j}", v / 3) for g, v in (("b", 4), ("c", 5), ("d", 6)) for j in range(3)]
    frame = pd.DataFrame(rows, columns=["G", "F", "X"])
    t, v = _table(frame, ["G"])
    sens, prot = v["sensitive"].to_numpy(), v["protection"].to_numpy()
    assert t.cells.loc[sens, "G"].tolist() == ["a"] and prot[sens][0] == pytest.approx(10.0)
    # withholding the largest other cell (6) alone lets the intruder narrow a to [100, 106]: under-protected
    one = sens | (t.cells["G"] == "d").to_numpy()
    alone = audit(t, one, prot).set_index("cell")
    a = int(np.flatnonzero(sens)[0])
    assert alone.loc[a, "upper"] == pytest.approx(106.0) and not alone.loc[a, "protected"]
    # the method withholds more until a can reach 110
    s = suppress(t, sens, prot)
    assert (s.status == "complementary").sum() >= 2
    assert s.protected
    got = s.audit.set_index("cell").loc[a]
    assert got["upper"] >= 110 - 1e-6 and got["lower"] <= 90 + 1e-6
    assert s.status[t.cells["G"] == TOTAL].iloc[0] == "published"  # the margin stays published


def test_audit_gives_the_exact_interval_of_a_two_by_two_table():
    frame = pd.DataFrame({"A": ["x", "x", "y", "y"], "B": ["p", "q", "p", "q"], "F": list("fghi"),
                          "X": [7.0, 3.0, 2.0, 8.0]})
    t = cell_table(frame, ["A", "B"], "X", "F")
    interior = t.interior()
    a = audit(t, interior, np.zeros(len(t.cells))).set_index("cell")
    c = t.cells
    i00 = int(np.flatnonzero((c["A"] == "x") & (c["B"] == "p"))[0])
    # row x = 10, column p = 9, column q = 11: x·p ∈ [max(0, 10 − 11), min(10, 9)] = [0, 9]
    assert a.loc[i00, "lower"] == pytest.approx(0.0) and a.loc[i00, "upper"] == pytest.approx(9.0)
    # one suppressed interior cell alone is recovered exactly from its margins
    alone = audit(t, (np.arange(len(c)) == i00), np.full(len(c), 1.0)).set_index("cell")
    assert alone.loc[i00, "lower"] == pytest.approx(7.0) == alone.loc[i00, "upper"]
    assert not alone.loc[i00, "protected"]


def _random_frame(rng, dims: int) -> pd.DataFrame:
    n = int(rng.integers(40, 160))
    firms = rng.integers(0, int(rng.integers(8, 60)), n)
    x = np.round(rng.pareto(1.2, n) * 10 + 1, 2)
    groups = int(rng.integers(3, 16 if dims == 1 else 7))
    frame = pd.DataFrame({"F": firms.astype(str), "X": x, "A": rng.integers(0, groups, n).astype(str)})
    if dims == 2:
        frame["B"] = rng.integers(0, int(rng.integers(2, 6)), n).astype(str)
    return frame


@pytest.mark.parametrize("dims", [1, 2])
def test_on_random_tables_no_suppressed_cell_is_recoverable_within_its_protection(dims):
    rng = np.random.default_rng(20261129 + dims)
    checked = 0
    for _ in range(12 if dims == 1 else 8):
        frame = _random_frame(rng, dims)
        t, v = _table(frame, ["A", "B"][:dims], Rules(p=25, n=2, k=75, min_frequency=3))
        sens, prot = v["sensitive"].to_numpy(), v["protection"].to_numpy()
        s = suppress(t, sens, prot)
        assert s.protected, s.audit[~s.audit["protected"]]
        # every sensitive cell's interval reaches its protection on both sides, recomputed independently
        full = audit(t, s.suppressed, prot).set_index("cell")
        vals = t.cells["value"].to_numpy()
        for cell in np.flatnonzero(sens):
            assert full.loc[cell, "upper"] >= vals[cell] + prot[cell] - 1e-6
            assert full.loc[cell, "lower"] <= vals[cell] - min(prot[cell], vals[cell]) + 1e-6
            checked += 1
    assert checked > 5  # the tables did have sensitive cells


def test_three_dimensions_are_refused_naming_what_they_need():
    frame = pd.DataFrame({"A": ["x"], "B": ["p"], "C": ["u"], "F": ["f"], "X": [1.0]})
    t, v = _table(frame, ["A", "B", "C"])
    with pytest.raises(ParameterError, match="one or two dimensions") as err:
        suppress(t, v["sensitive"].to_numpy(), v["protection"].to_numpy())
    assert "linked margin" in (err.value.hint or "")


def test_sensitive_margins_are_protected_too():
    # one firm is the whole of row y (two cells) and of the one-dimensional table's total
    frame = pd.DataFrame({"A": ["x"] * 6 + ["y", "y"], "B": ["p", "q", "r"] * 2 + ["p", "q"],
                          "F": list("abcdef") + ["z", "z"], "X": [5.0, 6.0, 7.0, 5.0, 6.0, 7.0, 40.0, 30.0]})
    t, v = _table(frame, ["A", "B"])
    sens, prot = v["sensitive"].to_numpy(), v["protection"].to_numpy()
    row_y = ((t.cells["A"] == "y") & (t.cells["B"] == TOTAL)).to_numpy()
    assert sens[row_y].all()
    s = suppress(t, sens, prot)
    assert s.protected and s.status[row_y].iloc[0] == "primary"
    one = pd.DataFrame({"A": ["u", "u", "w"], "F": ["z", "z", "z"], "X": [10.0, 20.0, 5.0]})
    t1, v1 = _table(one, ["A"])
    s1 = suppress(t1, v1["sensitive"].to_numpy(), v1["protection"].to_numpy())
    assert v1["sensitive"].all() and s1.protected


def test_a_group_called_like_a_margin_is_a_cell_of_its_own():
    """Margins are told from cells by their codes, never by the label "(total)": a row of the data named so keeps
    its own row-total equation."""
    import numpy as np
    import pandas as pd

    from prdp_core.mechanisms.legacy_sdc import cell_table
    from prdp_core.mechanisms.legacy_sdc.complementary import equations

    frame = pd.DataFrame({"r": ["(total)", "(total)", "b", "b"], "c": ["x", "y", "x", "y"],
                          "v": [10.0, 20.0, 30.0, 50.0]})
    table = cell_table(frame, ["r", "c"], "v")
    A = equations(table)
    values = table.cells["value"].to_numpy()
    assert np.allclose(A @ values, 0)  # every equation holds with the true values
    assert A.shape[0] == 2 + 2 + 2  # two row totals, two column totals, both sets of margins against the grand total
