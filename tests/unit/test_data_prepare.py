"""Schema guessing, checks and preparation of datasets (bad values, fixes, notes)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import prdp_core
from prdp_core.core.errors import DataError, SchemaError
from prdp_core.data.dataset import Schema, check_table, guess_schema, prepare_dataset, shift_text


def frame():
    return pd.DataFrame({
        "estab_id": ["e1", "e2", "e3", "e4"],
        "firm_id": ["f1", "f1", "f2", "f3"],
        "county": ["A", "B", "A", "B"],
        "emp": [1, 5, 100, 2],
        "payroll": [10.0, 50.0, 900.0, 20.0],
    })


def test_guess_schema_roles():
    s = guess_schema(frame())
    assert s.id_col == "estab_id"
    assert s.owner_col == "firm_id"
    assert set(s.measures) == {"emp", "payroll"}
    assert "county" in s.groups


def test_guess_schema_on_cbp_like_matches_documented():
    df = prdp_core.data.samples.load("cbp_like", n=2000, seed=3)
    assert guess_schema(df) == prdp_core.data.samples.info("cbp_like").schema


def test_validate_schema_errors():
    df = frame()
    with pytest.raises(SchemaError, match="at least one measure"):
        check_table(df, Schema(id_col="estab_id"))
    with pytest.raises(SchemaError, match="not in the table"):
        check_table(df, Schema(measures=("nope",)))
    with pytest.raises(SchemaError, match="both"):
        check_table(df, Schema(id_col="emp", measures=("emp",)))
    # an owner may also be a group-by key
    check_table(df, Schema(measures=("emp",), groups=("firm_id",), owner_col="firm_id"))


def test_non_numeric_measure_reported_then_fixable():
    df = frame().astype({"emp": object})
    df.loc[1, "emp"] = "n/a"
    chk = check_table(df, guess_schema(frame()))
    assert chk.non_numeric == {"emp": 1}
    with pytest.raises(DataError, match="not numbers"):
        prepare_dataset(df, guess_schema(frame()))
    ds = prepare_dataset(df, guess_schema(frame()), non_numeric="missing", missing="drop")
    assert ds.n == 3
    assert any("non-numeric" in n for n in ds.notes) and any("Dropped 1" in n for n in ds.notes)


def test_nan_and_inf_rows_dropped_with_count():
    df = frame()
    df.loc[0, "payroll"] = np.nan
    df["emp"] = df["emp"].astype(float)
    df.loc[2, "emp"] = np.inf
    sch = guess_schema(frame())
    chk = check_table(df, sch)
    assert chk.rows_with_missing == 2
    with pytest.raises(DataError, match="2 row"):
        prepare_dataset(df, sch)
    ds = prepare_dataset(df, sch, missing="drop")
    assert ds.n == 2 and np.isfinite(ds.table[list(sch.measures)].to_numpy()).all()


def test_negative_reject_or_shift():
    df = frame()
    df.loc[3, "payroll"] = -30.0
    sch = guess_schema(frame())
    with pytest.raises(DataError, match="negative"):
        prepare_dataset(df, sch)
    ds = prepare_dataset(df, sch, negative="shift")
    assert ds.table["payroll"].min() == 0.0
    assert ds.shifts == {"payroll": 30.0}
    assert ds.table["payroll"].tolist() == [40.0, 80.0, 930.0, 0.0]
    # a public constant instead of the data's minimum
    pub = prepare_dataset(df, sch, negative="shift", shift_by={"payroll": 100.0})
    assert pub.table["payroll"].tolist() == [110.0, 150.0, 1000.0, 70.0] and pub.shifts == {"payroll": 100.0}
    with pytest.raises(DataError, match="too small"):
        prepare_dataset(df, sch, negative="shift", shift_by={"payroll": 10.0})


def test_public_shift_does_not_depend_on_the_data():
    """A declared constant moves its measure on a neighbouring table without the negative record too."""
    sch = guess_schema(frame())
    with_neg = frame()
    with_neg.loc[3, "payroll"] = -30.0
    without = frame().drop(index=3)
    a = prepare_dataset(with_neg, sch, negative="shift", shift_by={"payroll": 100.0})
    b = prepare_dataset(without, sch, negative="shift", shift_by={"payroll": 100.0})
    assert a.shifts == b.shifts == {"payroll": 100.0}
    assert b.table["payroll"].tolist() == (frame().drop(index=3)["payroll"] + 100.0).tolist()
    assert a.table["payroll"].tolist()[:3] == b.table["payroll"].tolist()
    with pytest.raises(DataError, match="finite constant"):
        prepare_dataset(without, sch, negative="shift", shift_by={"payroll": float("nan")})


def test_the_shift_adds_exactly_the_public_constant_stated():
    """A measure with minimum −502.3 shifted by the public constant 1,000 ends at 497.7: the constant added is the
    one stated, every value moves by it and nothing else, and the note says which constant it was; only without a
    declared constant does the engine shift by −min, and then it says the shift is the smallest record's."""
    df = pd.DataFrame({"id": [1, 2, 3, 4], "SALES": [-502.3, 10.25, 2000.0, 0.0]})
    sch = Schema(id_col="id", measures=("SALES",))
    ds = prepare_dataset(df, sch, negative="shift", shift_by={"SALES": 1000.0})
    assert ds.shifts == {"SALES": 1000.0}
    assert ds.table["SALES"].tolist() == (df["SALES"] + 1000.0).tolist()
    assert ds.table["SALES"].min() == pytest.approx(497.7, abs=1e-12)
    assert shift_text("SALES", 1000.0) == "SALES shifted by +1,000 (public constant)"
    assert ds.notes[0].startswith("SALES shifted by +1,000 (public constant): every value of 'SALES' has 1,000 added")
    assert "subtract n × 1,000" in ds.notes[0]
    auto = prepare_dataset(df, sch, negative="shift")
    assert auto.shifts == {"SALES": 502.3} and auto.table["SALES"].min() == 0.0
    assert auto.notes[0].startswith("SALES shifted by +502.3 (smallest record: confidential): its minimum is now 0")
    # constants are written in full, never rounded to six digits
    assert shift_text("x", 1234567.5) == "x shifted by +1,234,567.5 (public constant)"
    assert shift_text("x", 0.125, public=False) == "x shifted by +0.125 (smallest record: confidential)"


def test_duplicate_ids_reject_or_regenerate():
    df = frame()
    df.loc[1, "estab_id"] = "e1"
    sch = Schema(id_col="estab_id", measures=("emp",))
    assert check_table(df, sch).duplicate_ids == 1
    with pytest.raises(DataError, match="duplicate"):
        prepare_dataset(df, sch)
    ds = prepare_dataset(df, sch, duplicate_ids="regenerate")
    assert ds.table["estab_id"].is_unique


def test_generated_ids_and_column_order():
    ds = prepare_dataset(frame(), Schema(measures=("emp",), groups=("county",), owner_col="firm_id"))
    assert list(ds.table.columns) == ["row_id", "firm_id", "county", "emp"]
    assert ds.table["row_id"].tolist() == [1, 2, 3, 4]
    assert ds.table["emp"].dtype == np.float64


def test_all_rows_missing():
    df = pd.DataFrame({"v": [np.nan, np.nan]})
    with pytest.raises(DataError, match="No row is left"):
        prepare_dataset(df, Schema(measures=("v",)), missing="drop")


def test_table_without_numeric_column_is_named():
    import prdp_core

    df = prdp_core.load_table(b"name,city\nann,paris\nbob,rome\n", filename="t.csv")
    assert prdp_core.data.numeric_columns(df) == []
    with pytest.raises(SchemaError, match="no numeric column") as e:
        check_table(df, guess_schema(df))
    assert "thousands separators" in str(e.value)
    # a table that has a numeric column but no measure chosen gets the other message
    df2 = prdp_core.load_table(b"name,v\nann,1\nbob,2.5\n", filename="t.csv")
    assert prdp_core.data.numeric_columns(df2) == ["v"]
    with pytest.raises(SchemaError, match="Choose at least one measure"):
        check_table(df2, Schema(groups=("name",)))


# ---------------------------------------------------------------------------
# Newcomers' own tables: row-number columns and wide tables
# ---------------------------------------------------------------------------


def _wide(n: int = 400, first: str = "rownames") -> pd.DataFrame:
    """A public table as R or pandas writes it: a row-number column, 26 columns of which 18 numeric."""
    rng = np.random.default_rng(0)
    cols: dict[str, object] = {first: np.arange(1, n + 1)}
    cols["region"] = rng.choice(["north", "south", "east"], n)
    cols["sector"] = rng.choice(list("abcdefg"), n)
    for i in range(15):
        cols[f"v{i:02d}"] = rng.normal(100, 10, n)                  # symmetric
    cols["income"] = rng.lognormal(10, 2.0, n)                       # heavy tails: the measures to pick
    cols["wealth"] = rng.pareto(1.2, n) * 1000
    cols["balance_change"] = rng.standard_t(1.5, n) * 1e4           # the most skewed, but negative values
    cols["visits"] = rng.poisson(1.0, n) * rng.lognormal(0, 1.5, n)
    cols["wealth"][3] = np.nan                                       # missing in a chosen column: still a measure
    for i in range(5):
        cols[f"label{i}"] = rng.choice(["x", "y"], n)
    return pd.DataFrame(cols)


@pytest.mark.parametrize("name", ["rownames", "Unnamed: 0", "index", "row.names", "...1"])
def test_a_row_number_column_is_the_record_id_not_a_measure(name):
    df = _wide(first=name)
    s = guess_schema(df)
    assert s.id_col == name and name not in s.measures and name not in s.groups


def test_a_row_number_column_needs_consecutive_integers():
    df = pd.DataFrame({"index": [3, 1, 2, 10], "amount": [1.0, 50.0, 2.0, 3.0]})
    s = guess_schema(df)
    assert s.id_col is None and "index" in s.measures  # not consecutive: a real number, maybe a measure
    df = pd.DataFrame({"index": [3, 1, 2, 4], "estab_id": ["a", "b", "c", "d"], "amount": [1.0, 50.0, 2.0, 3.0]})
    s = guess_schema(df)  # an id by name wins; the row numbers are still no measure
    assert s.id_col == "estab_id" and s.measures == ("amount",)


def test_a_wide_table_starts_with_its_three_most_skewed_non_negative_measures():
    df = _wide()
    s = guess_schema(df)
    assert s.measures == ("income", "wealth", "visits")
    assert not {f"v{i:02d}" for i in range(15)} & set(s.groups)  # offered as measures, not made groups
    assert {"region", "sector"} <= set(s.groups)
    chk = check_table(df, s)
    assert chk.rows_with_missing == 1  # only the chosen columns are checked for missing values
    narrow = df[["rownames", "region", "v00", "income", "balance_change"]]
    assert guess_schema(narrow).measures == ("v00", "income", "balance_change")  # three or fewer: all of them


def test_a_wide_table_with_only_negative_candidates_still_gets_one_measure():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({f"d{i}": rng.normal(0, 1, 200) for i in range(5)})
    df["d3"] = rng.standard_t(1.2, 200)
    assert guess_schema(df).measures == ("d3",)


def test_a_short_id_name_with_unique_whole_numbers_is_the_id_and_never_a_measure():
    rng = np.random.default_rng(1)
    n = 500
    df = pd.DataFrame({"EID": rng.choice(10**9, n, replace=False), "EMP": rng.integers(1, 50, n),
                       "PAY": rng.integers(1_000, 10**6, n), "STATE": rng.choice(["CA", "TX"], n)})
    s = guess_schema(df)
    assert s.id_col == "EID" and "EID" not in s.measures and set(s.measures) == {"EMP", "PAY"}
    # a second such column is not offered as a measure either; amounts named like "paid" or "aid" stay measures
    df["PID"] = np.arange(n) * 7 + 3
    df["PAID"] = rng.choice(10**7, n, replace=False)
    s = guess_schema(df)
    assert s.id_col == "EID" and set(s.measures) == {"EMP", "PAY", "PAID"}
    s = guess_schema(df.drop(columns="PAID").assign(AID=rng.choice(10**7, n, replace=False)))
    assert s.id_col == "EID" and set(s.measures) == {"EMP", "PAY", "AID"}
    df["EID"] = df["EID"].astype(float) + 0.5  # not whole numbers: not an id
    assert guess_schema(df).id_col != "EID"
