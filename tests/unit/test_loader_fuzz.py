"""Fuzz the loader: random bytes, ragged CSVs, mixed types — only PrdpError may escape."""

from __future__ import annotations

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

import prdp_core
from prdp_core.core.errors import PrdpError
from prdp_core.data.dataset import Schema, check_table, guess_schema, prepare_dataset

NAMES = st.sampled_from(["f.csv", "f.tsv", "f.txt", "f.parquet", "f.xlsx", "f.xls", "f.bin", None])


def _load_or_prdp_error(data: bytes, name: str | None) -> pd.DataFrame | None:
    try:
        return prdp_core.load_table(data, filename=name)
    except PrdpError:
        return None


@given(st.binary(max_size=2000), NAMES)
def test_random_bytes_only_prdp_errors(data, name):
    _load_or_prdp_error(data, name)


@given(st.binary(max_size=400))
def test_random_bytes_with_magic_headers(tail):
    for head, name in ((b"PAR1", "x.parquet"), (b"PK\x03\x04", "x.xlsx"), (b"\xef\xbb\xbf", "x.csv"),
                       (b"\xff\xfe", "x.csv")):
        _load_or_prdp_error(head + tail, name)


CELL = st.one_of(
    st.integers(-10**12, 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8),
    st.sampled_from(["", "NA", "n/a", "-", "1,234", '"q,uoted"', "'", '"', "\\", "=1+1", "1e400"]),
)


@given(
    st.lists(st.lists(CELL, min_size=0, max_size=6), min_size=0, max_size=12),
    st.sampled_from([",", ";", "\t", "|"]),
)
def test_ragged_mixed_csv_then_schema_pipeline(rows, delim):
    text = "\n".join(delim.join(r) for r in rows)
    df = _load_or_prdp_error(text.encode("utf-8", "surrogatepass"), "fuzz.csv")
    if df is None:
        return
    # Whatever loads must also survive the schema/check/prepare pipeline with PrdpError only.
    try:
        schema = guess_schema(df)
        if not schema.measures:
            schema = Schema(measures=(df.columns[0],))
        check_table(df, schema)
        prepare_dataset(df, schema, non_numeric="missing", missing="drop", negative="shift",
                        duplicate_ids="regenerate")
    except PrdpError:
        pass
