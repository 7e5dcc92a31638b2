"""Fuzz the loader: random bytes, ragged CSVs, mixed types — only PrdpError may escape."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import prdp_core
from prdp_core.core.errors import PrdpError
from prdp_core.data import statfiles
from prdp_core.data.dataset import Schema, check_table, guess_schema, prepare_dataset

from .. import hostile_files as H

NAMES = st.sampled_from(["f.csv", "f.tsv", "f.txt", "f.parquet", "f.xlsx", "f.xls", "f.bin", "f.dta", "f.sav", "f.xpt",
                         "f.sas7bdat", None])


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


@settings(max_examples=8, deadline=None)  # each file that begins as a statistical file's starts a reader process
@given(st.sampled_from([b"$FL2", b"$FL3", b"<stata_dta>", statfiles._XPORT_MAGIC, statfiles._SAS7BDAT_MAGIC,
                        b"\x72\x02"]),
       st.binary(max_size=600), st.sampled_from([".sav", ".zsav", ".dta", ".xpt", ".sas7bdat", None]))
def test_random_bytes_after_a_statistical_file_mark(head, tail, ext):
    _load_or_prdp_error(head + b"\x00" + tail, None if ext is None else f"x{ext}")


_STAT_FILES = H.stat_tables(12)


@settings(max_examples=6, deadline=None)  # a reader process each
@given(st.sampled_from([".dta", ".sav", ".zsav", ".xpt"]),
       st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=8), st.integers(0, 10**6))
def test_real_statistical_files_with_flipped_bytes(ext, flips, cut):
    data = bytearray(_STAT_FILES[ext])
    for at, value in flips:
        data[at % len(data)] = value
    _load_or_prdp_error(bytes(data[:max(cut % (len(data) + 1), 1)]), f"x{ext}")


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
