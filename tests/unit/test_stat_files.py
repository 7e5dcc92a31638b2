"""SAS, Stata and SPSS tables (prdp_core.data.statfiles): read as their CSV export reads — value labels as the group
names, missing codes as missing — in the loader and the CLI, after limits read from the file's header, by a child
process that a malformed file may crash without stopping the app."""

from __future__ import annotations

import io
import subprocess
import sys

import pandas as pd
import pyreadstat
import pytest

import prdp_core
from prdp_core.commands.cli import EXIT_DATA, EXIT_OK, main
from prdp_core.core import limits
from prdp_core.core.errors import DataError, ResourceLimitError
from prdp_core.data import memory, statfiles, statread
from prdp_core.engines import choose_engine
from prdp_core.engines.duckdb_engine import resolve_source

from .. import hostile_files as H


@pytest.fixture(scope="module")
def tables() -> dict[str, bytes]:
    return H.stat_tables()


@pytest.fixture(scope="module")
def csv_frame(tables) -> pd.DataFrame:
    return prdp_core.load_table(tables[".csv"], filename="firms.csv")


def _never(*args, **kwargs):
    raise AssertionError("the records must not be parsed for a file refused from its header")


@pytest.fixture
def no_parse(monkeypatch):
    """Fail the test if the records of a statistical file are parsed."""
    monkeypatch.setattr(statread.Reader, "table", _never)


# ---------------------------------------------------------------------------
# The table, as its CSV export reads
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("ext", [".dta", ".sav", ".zsav", ".xpt"])
def test_a_statistical_file_loads_as_its_csv_export(tables, csv_frame, ext):
    df = prdp_core.load_table(tables[ext], filename=f"firms{ext}")
    pd.testing.assert_frame_equal(df, csv_frame)  # values, column types, missing values
    assert set(df["region"]) == set(H.REGIONS.values())  # the value labels are the group names
    assert df["income"].isna().sum() == len(df) // 10  # SPSS's user-missing -9 is missing, as an empty CSV cell
    assert str(df["firm_id"].dtype) == "int64" and df.attrs["prdp_source"] == f"firms{ext}"


def test_the_format_is_known_by_its_first_bytes(tables, csv_frame):
    for ext in (".dta", ".sav", ".zsav", ".xpt"):
        pd.testing.assert_frame_equal(prdp_core.load_table(tables[ext]), csv_frame)  # bytes without a name
        assert statfiles.extension_of_content(tables[ext]) == ext
    assert statfiles.extension_of_content(tables[".csv"]) is None


def test_a_file_whose_name_and_content_disagree_is_refused(tables):
    with pytest.raises(DataError, match="named '.csv' but holds a SPSS table") as info:
        prdp_core.load_table(tables[".sav"], filename="firms.csv")
    assert info.value.hint == "Give it the .sav extension."
    for name in ("firms.dta", "firms.sav", "firms.xpt", "firms.sas7bdat"):
        with pytest.raises(DataError, match="does not begin as a"):
            prdp_core.load_table(tables[".csv"], filename=name)


def test_labels_of_some_codes_only_keep_a_measure_numeric(tmp_path):
    frame = pd.DataFrame({"id": [1, 2, 3, 4], "income": [10.0, 99.0, 30.0, 40.5], "sector": [1.0, 2.0, 1.0, 2.0]})
    path = tmp_path / "codes.dta"
    pyreadstat.write_dta(frame, str(path), variable_value_labels={"income": {99: "Refused"},
                                                                   "sector": {1: "Farms", 2: "Mines"}})
    df = prdp_core.load_table(path)
    assert df["income"].tolist() == [10.0, 99.0, 30.0, 40.5]  # a measure with one labelled code stays numbers
    assert df["sector"].tolist() == ["Farms", "Mines", "Farms", "Mines"]
    assert prdp_core.guess_schema(df).groups == ("sector",)


def test_sas7bdat_files_go_through_the_same_path(tables, csv_frame, monkeypatch):
    """pyreadstat cannot write .sas7bdat: the dispatch is checked with its reader standing in for Stata's."""
    read, options = statread._reader(".sas7bdat")
    assert read is pyreadstat.read_sas7bdat and options == {"dates_as_pandas_datetime": True, "user_missing": False}
    assert statfiles.extension_of_content(statfiles._SAS7BDAT_MAGIC + b"rest") == ".sas7bdat"
    calls = []

    def read_sas7bdat(source, **kwargs):
        calls.append(kwargs)
        return pyreadstat.read_dta(source, **kwargs)

    monkeypatch.setattr(pyreadstat, "read_sas7bdat", read_sas7bdat)
    _, meta = statread.parse(tables[".dta"], ".sas7bdat", metadataonly=True)
    assert statread.header_of(meta)["rows"] == len(csv_frame)
    df, _ = statread.parse(tables[".dta"], ".sas7bdat", row_limit=limits.MAX_ROWS + 1)
    pd.testing.assert_frame_equal(df, csv_frame)
    assert [c["metadataonly"] for c in calls] == [True, False]
    # the loader sends a .sas7bdat file to the SAS reader (in the child); a broken one is a clear DataError
    with pytest.raises(DataError, match="The SAS file could not be read"):
        prdp_core.load_table(statfiles._SAS7BDAT_MAGIC + b"\x00" * 2000, filename="firms.sas7bdat")


# ---------------------------------------------------------------------------
# Limits read from the header, before the records are parsed
# ---------------------------------------------------------------------------


def test_rows_the_header_states_over_the_limit_are_refused_before_parsing(tables, no_parse, monkeypatch):
    for data, name in ((H.dta_rows_claimed(50_000_000), "x.dta"), (H.sav_rows_claimed(50_000_000), "x.sav")):
        with pytest.raises(ResourceLimitError, match="50,000,000 rows, over the 20,000,000 row limit"):
            prdp_core.load_table(data, filename=name)
    monkeypatch.setattr(limits, "MAX_ROWS", 10)
    for ext in (".dta", ".sav", ".zsav"):
        with pytest.raises(ResourceLimitError, match="60 rows, over the 10 row limit"):
            prdp_core.load_table(tables[ext], filename=f"firms{ext}")


def test_columns_and_wide_text_are_refused_from_the_header(tables, no_parse, monkeypatch):
    monkeypatch.setattr(limits, "MAX_COLUMNS", 3)
    with pytest.raises(ResourceLimitError, match="4 columns, over the 3 column limit"):
        prdp_core.load_table(tables[".dta"], filename="firms.dta")
    monkeypatch.setattr(limits, "MAX_COLUMNS", 100)
    monkeypatch.setattr(limits, "MAX_CELL_BYTES", 4)
    with pytest.raises(ResourceLimitError, match="text column 'region' is 5 bytes wide"):
        prdp_core.load_table(tables[".xpt"], filename="firms.xpt")


def test_the_memory_guard_is_asked_from_the_header(tables, no_parse, monkeypatch):
    monkeypatch.setenv("PRDP_SESSION_MEMORY_MB", "0.001")
    for ext in (".zsav", ".xpt"):  # compressed: rows from the header; transport: bounded by the file's size
        with pytest.raises(ResourceLimitError, match="Checking and preparing the table would need"):
            prdp_core.load_table(tables[ext], filename=f"firms{ext}", guard=memory.guard_table)
    asked = []
    monkeypatch.setattr(statread.Reader, "table", lambda self, row_limit: pd.DataFrame({"x": [1]}))
    prdp_core.load_table(tables[".xpt"], filename="firms.xpt", guard=lambda **shape: asked.append(shape))
    assert asked == [{"rows": len(tables[".xpt"]) // (8 * 3 + 5), "columns": 4}]  # 3 numbers and 5-byte text


def test_the_reader_stops_one_row_past_the_limit_when_the_header_has_no_count(tables, monkeypatch):
    asked = []
    table = statread.Reader.table

    def spy(self, row_limit):
        asked.append(row_limit)
        return table(self, row_limit)

    monkeypatch.setattr(statread.Reader, "table", spy)
    monkeypatch.setattr(limits, "MAX_ROWS", 10)
    with pytest.raises(ResourceLimitError, match="11 rows, over the 10 row limit"):
        prdp_core.load_table(tables[".xpt"], filename="firms.xpt")  # SAS transport files do not state their rows
    assert asked == [11]


# ---------------------------------------------------------------------------
# Hostile files
# ---------------------------------------------------------------------------


def test_a_file_that_crashes_the_native_reader_is_a_data_error():
    data = H.sav_crashing_reader()
    crash = subprocess.run([sys.executable, "-c", "import io, sys, pyreadstat; "
                            "pyreadstat.read_sav(io.BytesIO(sys.stdin.buffer.read()), metadataonly=True)"],
                           input=data, capture_output=True)
    assert crash.returncode < 0  # read in this process, the file would stop it (and the app with it)
    with pytest.raises(DataError, match=r"The SPSS file could not be read: the reader stopped on its content \(signal"):
        prdp_core.load_table(data, filename="crash.sav")


@pytest.mark.parametrize("ext", [".dta", ".sav", ".zsav", ".xpt"])
def test_truncated_files_are_data_errors(tables, ext):
    data = tables[ext]
    with pytest.raises(DataError, match="could not be read"):
        prdp_core.load_table(data[:200], filename=f"broken{ext}")
    half = data[:len(data) // 2]
    if ext == ".xpt":  # SAS transport files do not state their rows: the records present are read, as of a CSV
        assert 0 < len(prdp_core.load_table(half, filename=f"broken{ext}")) < 60
    else:
        with pytest.raises(DataError, match="could not be read"):
            prdp_core.load_table(half, filename=f"broken{ext}")


def test_huge_header_counts_are_refused_or_read_up_to_the_limit():
    with pytest.raises(DataError, match="The Stata file could not be read"):  # more rows than the file could hold
        prdp_core.load_table(H.dta_rows_claimed(10**12), filename="x.dta")
    # a count the reader takes for "not stated": the rows the file holds are read, up to the row limit
    assert len(prdp_core.load_table(H.sav_rows_claimed(2**31 - 1), filename="x.sav")) == 4


def _hangs(conn, ext):
    import time

    time.sleep(60)


def _talks_nonsense(conn, ext):
    conn.recv_bytes()
    conn.send_bytes(b"Jnonsense")


def test_a_reader_that_hangs_or_talks_nonsense_is_stopped(tables, monkeypatch):
    monkeypatch.setattr(statread, "TIMEOUT_S", 1.0)
    monkeypatch.setattr(statread, "_child", _hangs)
    with pytest.raises(DataError, match="the reader took longer than 1 s"):
        prdp_core.load_table(tables[".dta"], filename="firms.dta")
    monkeypatch.setattr(statread, "TIMEOUT_S", 60.0)
    monkeypatch.setattr(statread, "_child", _talks_nonsense)
    with pytest.raises(DataError, match="the reader stopped on its content"):
        prdp_core.load_table(tables[".dta"], filename="firms.dta")


# ---------------------------------------------------------------------------
# The CLI: data.path, the same results as the CSV
# ---------------------------------------------------------------------------

STUDY = """version: 1
mode: teaching
seed: 7
data:
  path: firms{ext}
  schema: {{id: firm_id, measures: [emp, income], groups: [region]}}
  prepare: {{missing: drop}}
policy:
  thresholds:
    group_column: region
    rows:
      "*": {{emp: 300, income: 100}}
workload:
  queries:
    - {{kind: count, group_by: [region], rho: 0.5}}
    - {{kind: sum, measure: emp, group_by: [region], rho: 0.5}}
mechanisms:
  - kind: unit_splitting
"""


def _run(folder, ext: str) -> str:
    (folder / f"study{ext}.yaml").write_text(STUDY.format(ext=ext))
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(folder / f"study{ext}.yaml"), "--out", str(folder / f"out{ext}"), "-q"], stdout=out,
                stderr=err)
    assert code == EXIT_OK, err.getvalue()
    return (folder / f"out{ext}" / "results.csv").read_text()


def test_prdp_run_on_each_format_gives_the_results_of_the_csv(tables, tmp_path):
    for ext, data in tables.items():
        (tmp_path / f"firms{ext}").write_bytes(data)
    expected = _run(tmp_path, ".csv")
    assert "North" in expected and "South" in expected
    for ext in (".dta", ".sav", ".xpt"):
        assert _run(tmp_path, ext) == expected, ext  # a seeded teaching-mode release: the same numbers


def test_prdp_validate_refuses_a_malformed_file_with_the_data_exit_code(tmp_path):
    (tmp_path / "firms.sav").write_bytes(H.sav_crashing_reader())
    (tmp_path / "study.yaml").write_text(STUDY.format(ext=".sav"))
    out, err = io.StringIO(), io.StringIO()
    assert main(["validate", str(tmp_path / "study.yaml")], stdout=out, stderr=err) == EXIT_DATA
    assert "The SPSS file could not be read" in err.getvalue()


def test_engines_send_statistical_files_to_the_loader(tables, tmp_path, monkeypatch):
    (tmp_path / "firms.dta").write_bytes(tables[".dta"])
    monkeypatch.setattr("prdp_core.engines.dataset.auto_memory_bytes", lambda: 10)
    assert choose_engine("firms.dta", "auto", base_dir=tmp_path) == "memory"  # larger than auto's limit: still read
    with pytest.raises(DataError, match="is a Stata file, which the DuckDB engine cannot read in place") as info:
        resolve_source("firms.dta", base_dir=tmp_path)
    assert "Parquet" in (info.value.hint or "")
