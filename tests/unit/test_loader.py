"""prdp_core.load_table: formats, sniffing, and a clear PrdpError for every bad input."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

import prdp_core
from prdp_core.core.errors import DataError, PrdpError, ResourceLimitError


def _csv(text: str) -> bytes:
    return text.encode("utf-8")


def test_csv_comma():
    df = prdp_core.load_table(_csv("id,emp,pay\n1,5,100\n2,7,200\n"), filename="a.csv")
    assert list(df.columns) == ["id", "emp", "pay"]
    assert df["emp"].tolist() == [5, 7]


@pytest.mark.parametrize("delim", [";", "\t", "|"])
def test_delimiter_sniffed(delim):
    text = delim.join(["id", "emp", "name"]) + "\n" + delim.join(["1", "5", "a b"]) + "\n" + delim.join(
        ["2", "9", "c"]) + "\n"
    df = prdp_core.load_table(_csv(text), filename="x.txt")
    assert list(df.columns) == ["id", "emp", "name"]
    assert df.attrs["prdp_delimiter"] == delim


def test_tsv_extension_and_bom():
    data = "\ufeffid\temp\n1\t3\n".encode("utf-8")
    df = prdp_core.load_table(data, filename="t.tsv")
    assert list(df.columns) == ["id", "emp"]


def test_cp1252_text_decoded():
    data = "name,emp\nCaf\xe9,3\n".encode("cp1252")
    df = prdp_core.load_table(data, filename="c.csv")
    assert df["name"][0] == "Café"
    assert df.attrs["prdp_encoding"] == "cp1252"


def test_utf16_text():
    data = "id,emp\n1,4\n".encode("utf-16")
    assert prdp_core.load_table(data, filename="u.csv")["emp"].tolist() == [4]


def test_parquet_and_excel_roundtrip(tmp_path):
    df = pd.DataFrame({"id": [1, 2, 3], "emp": [1.5, 2.0, 300.0], "grp": ["a", "b", "a"]})
    pq = tmp_path / "d.parquet"
    df.to_parquet(pq)
    pd.testing.assert_frame_equal(prdp_core.load_table(pq), df, check_dtype=False)
    xl = tmp_path / "d.xlsx"
    df.to_excel(xl, index=False)
    pd.testing.assert_frame_equal(prdp_core.load_table(xl), df, check_dtype=False)
    # content sniffing without a name
    assert len(prdp_core.load_table(pq.read_bytes())) == 3
    assert len(prdp_core.load_table(xl.read_bytes())) == 3


def test_file_like_object():
    buf = io.BytesIO(b"a,b\n1,2\n")
    buf.name = "up.csv"
    assert prdp_core.load_table(buf).shape == (1, 2)


@pytest.mark.parametrize("data,filename,fragment", [
    (b"", "e.csv", "empty"),
    (b"\n\n  \n", "e.csv", "no data"),
    (b"a,b\n", "h.csv", "no data rows"),
    (b"\x00\x01\x02binary\x00", "b.csv", "binary"),
    (b"PK\x03\x04junk", "j.docx", "not supported"),
    (b"hello", "x.json", "not supported"),
    (b"\xd0\xcf\x11\xe0legacy", "old.xls", "Legacy Excel"),
    (b"PAR1notreallyparquet", "p.parquet", "Parquet"),
    (b"PK\x03\x04notreallyexcel", "p.xlsx", "Excel"),
    (b"a,b\n1,2\n3,4,5,6\n", "r.csv", "same number of fields"),
    (b"a,b\n\x81\x8d,1\n", "u.csv", "cannot be decoded"),  # neither UTF-8 nor Windows-1252
])
def test_bad_inputs_give_clear_errors(data, filename, fragment):
    with pytest.raises(PrdpError) as ei:
        prdp_core.load_table(data, filename=filename)
    assert fragment.lower() in str(ei.value).lower()


def test_size_limit_checked_in_loader(tmp_path):
    with pytest.raises(ResourceLimitError, match="over the"):
        prdp_core.load_table(b"a,b\n" + b"1,2\n" * 1000, filename="big.csv", max_bytes=100)
    p = tmp_path / "big.csv"
    p.write_bytes(b"a,b\n" + b"1,2\n" * 1000)
    with pytest.raises(ResourceLimitError):
        prdp_core.load_table(p, max_bytes=100)


def test_missing_path_is_data_error(tmp_path):
    with pytest.raises(DataError, match="Cannot open"):
        prdp_core.load_table(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="folder"):
        prdp_core.load_table(tmp_path)


def test_upload_limit_matches_streamlit_config():
    import tomllib
    from pathlib import Path

    cfg = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["maxUploadSize"] == prdp_core.core.limits.MAX_UPLOAD_MB
    assert cfg["server"]["address"] == "127.0.0.1"


def test_duplicate_and_blank_column_names_made_unique():
    df = prdp_core.load_table(b"a,a, ,b\n1,2,3,4\n", filename="d.csv")
    assert len(set(df.columns)) == 4


def test_too_many_columns(monkeypatch):
    monkeypatch.setattr(prdp_core.core.limits, "MAX_COLUMNS", 3)
    with pytest.raises(ResourceLimitError, match="column limit"):
        prdp_core.load_table(b"a,b,c,d\n1,2,3,4\n", filename="w.csv")


def test_large_numbers_and_nan_text_load():
    df = prdp_core.load_table(b"v\n1e308\nNaN\ninf\n-3\n", filename="n.csv")
    assert np.isnan(df["v"][1]) and np.isinf(df["v"][2])
