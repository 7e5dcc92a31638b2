"""Column codes: the counting path for fixed-width text ids equals pandas' sorted factorisation."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prdp_core.data import codes
from prdp_core.data.dataset import Schema, prepare_dataset

ALPHABET = st.sampled_from(list("0123456789ABZaz-_ é€"))


def _same(values: pd.Series) -> None:
    got, labels = codes.factorize(values, sort=True)
    ref, ref_labels = pd.factorize(values, sort=True)
    assert np.array_equal(got, ref)
    assert labels.equals(pd.Index(ref_labels))
    assert labels.dtype == pd.Index(ref_labels).dtype


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6).flatmap(lambda w: st.lists(st.text(ALPHABET, min_size=w, max_size=w), min_size=2,
                                                       max_size=300)))
def test_fixed_width_text_is_coded_like_pandas_sorted(values):
    s = pd.Series(values, dtype="str")
    same_bytes = len({len(v.encode()) for v in values}) == 1
    assert (codes.fixed_width_codes(s) is not None) == same_bytes
    _same(s)
    unsorted, labels = codes.factorize(s, sort=False)  # any order: labels must match the codes
    assert list(labels[unsorted]) == values


@pytest.mark.parametrize("values", [["x1", None, "x2"], ["a", "bb", "a"], ["b", "a"], ["k", "k", "k"]])
def test_missing_values_mixed_widths_and_constants(values):
    _same(pd.Series(values, dtype="str"))
    _same(pd.Series(values, dtype=object))


def test_a_key_space_far_larger_than_the_values_falls_back_to_hashing():
    rng = np.random.default_rng(0)
    values = ["".join(rng.choice(list("abcdefghij"), 12)) for _ in range(500)]
    s = pd.Series(values, dtype="str")
    assert codes.fixed_width_codes(s) is None  # 10^12 keys for 500 values
    _same(s)


def test_ten_thousand_firm_ids_and_the_dataset_codes_its_owners_when_prepared():
    rng = np.random.default_rng(1)
    firms = pd.Series([f"F{v:08d}" for v in rng.integers(0, 4000, 10_000)], dtype="str")
    _same(firms)
    df = pd.DataFrame({"ID": np.arange(10_000), "FIRM": firms, "EMP": rng.integers(1, 50, 10_000)})
    ds = prepare_dataset(df, Schema(id_col="ID", measures=("EMP",), owner_col="FIRM"))
    hit = codes._cached(ds.table, "FIRM", True)
    assert hit is not None
    ref, ref_labels = pd.factorize(ds.table["FIRM"], sort=True)
    assert np.array_equal(hit[0], ref) and hit[1].equals(pd.Index(ref_labels))
    assert codes.column_codes(ds.table, "FIRM", sort=False)[0] is hit[0]  # sorted codes serve any order


def test_the_codes_of_a_collected_table_are_dropped_at_once():
    """An ended session's dataset leaves no codes behind: the entry goes with its table (about 20 MB for a
    10⁶-record table's owners), not when the cache is next full."""
    import gc

    table = pd.DataFrame({"owner": np.char.add("F", np.char.zfill(np.arange(50_000).astype(str), 6))})
    assert codes.code_fixed_width(table, "owner")
    key = (id(table), "owner", True)
    assert key in codes._CACHE
    del table
    gc.collect()
    assert key not in codes._CACHE
