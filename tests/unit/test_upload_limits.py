"""Upload limits applied before or while a file is read (issue 15, hostile inputs).

Each hostile file of the issue — an .xlsx zip bomb, a 5 M-row .xlsx, a CSV whose first header
field is quoted across two lines before 10⁶ columns, a Parquet file with nested and binary
columns, a 150 MB single-cell CSV — is refused with a message naming the limit (or the column
types). The tests assert the path taken (the parser is never called, traced memory stays small);
times are measured in benchmarks/README.md ("Hostile inputs").
"""

from __future__ import annotations

import io
import time
import tracemalloc
import zipfile

import numpy as np
import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prdp_core
from prdp_core.commands.cli import EXIT_DATA, main
from prdp_core.core import limits
from prdp_core.core.errors import DataError, ResourceLimitError
from prdp_core.data import filelimits, xlsxscan
from prdp_core.data.dataset import guess_schema, preview

from .. import hostile_files as H


def _never(*args, **kwargs):
    raise AssertionError("the parser must not run on a refused file")


def _refused(data: bytes, name: str, error: type[Exception] = ResourceLimitError, *, peak_mb: float = 64) -> str:
    """Load ``data``; assert it is refused with ``error`` within ``peak_mb`` of traced memory; return the message."""
    tracemalloc.start()
    try:
        with pytest.raises(error) as info:
            prdp_core.load_table(data, filename=name)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    assert peak < peak_mb, f"{peak:.0f} MB traced while refusing {name}"
    return str(info.value)


@pytest.fixture
def no_parsers(monkeypatch):
    """Fail the test if a table parser is called."""
    for name in ("read_csv", "read_excel", "read_parquet"):
        monkeypatch.setattr(pd, name, _never)
    monkeypatch.setattr(openpyxl, "load_workbook", _never)


# ---------------------------------------------------------------------------
# Excel
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return H.xlsx_bomb()


@pytest.fixture(scope="module")
def rows_5m() -> bytes:
    return H.xlsx_rows()


def test_an_xlsx_zip_bomb_is_refused_from_its_zip_directory(bomb, no_parsers):
    assert len(bomb) < 600_000  # about 480 KB, unpacking to about 400 MB
    msg = _refused(bomb, "bomb.xlsx")
    assert f"{limits.MAX_XLSX_UNCOMPRESSED_MB:,} MB limit" in msg and "uncompressed size" in msg


def test_a_5m_row_xlsx_is_refused_before_parsing(rows_5m, no_parsers):
    assert "uncompressed size" in _refused(rows_5m, "rows.xlsx")


def test_the_cells_of_a_sheet_are_counted_before_they_are_parsed(rows_5m, monkeypatch, no_parsers):
    monkeypatch.setattr(limits, "MAX_XLSX_UNCOMPRESSED_MB", 10_000)
    monkeypatch.setattr(limits, "MAX_XLSX_RATIO", 10_000)
    msg = _refused(rows_5m, "rows.xlsx")
    assert f"stores more than {limits.MAX_XLSX_CELLS:,} cells" in msg and f"{limits.MAX_XLSX_CELLS:,} cells" in msg


@pytest.mark.parametrize("builder", [H.xlsx_empty_cells, H.xlsx_empty_cells_no_dimension],
                         ids=["false dimension A1:B2", "no dimension"])
def test_millions_of_stored_empty_cells_are_refused_whatever_the_dimension_says(builder, no_parsers):
    data = builder()  # 5.85 M cells <c r="A2"/>, 91 MB of XML: under the size and ratio limits
    start = time.process_time()
    msg = _refused(data, "empty.xlsx")
    assert time.process_time() - start < 30  # about 1 s (benchmarks/README.md); the reader took minutes
    assert f"stores more than {limits.MAX_XLSX_CELLS:,} cells (empty ones included)" in msg
    assert f"limit of {limits.MAX_XLSX_CELLS:,} cells of an .xlsx sheet" in msg


def test_the_grid_of_a_sheet_counts_its_last_column_and_row(no_parsers, monkeypatch):
    far_column = H.xlsx((f'<row r="{r}"><c r="A{r}"><v>1</v></c><c r="XFD{r}"/></row>' for r in range(2, 200)),
                        dimension="A1:B2")
    msg = _refused(far_column, "wide.xlsx")
    assert "spans 199 rows × 16,384 columns = 3,260,416 cells" in msg and "declared dimension" in msg
    far_row = H.xlsx(['<row r="1048576"><c r="A1048576"><v>1</v></c><c r="B1048576"><v>2</v></c></row>'])
    assert "spans 1,048,576 rows × 2 columns" in _refused(far_row, "tall.xlsx")
    monkeypatch.setattr(limits, "MAX_XLSX_CELLS", 10_000)
    # Without r, cells and rows are numbered in order: one wide row and 20 short ones, 641 cells stored.
    no_refs = H.xlsx(["<row>" + "<c/>" * 600 + "<c><v>1</v></c></row>"] + ["<row><c><v>1</v></c></row>"] * 20)
    assert "spans 22 rows × 601 columns = 13,222 cells" in _refused(no_refs, "plain.xlsx")


def test_a_huge_shared_strings_table_is_refused_before_it_is_read(no_parsers):
    strings = (f"<si><t>{i}</t></si>" for i in range(limits.MAX_XLSX_CELLS + 1))
    data = H.workbook((['<row><c t="s"><v>0</v></c><c><v>1</v></c></row>'], "A1:B2"), strings=strings)
    msg = _refused(data, "strings.xlsx")
    assert f"shared-strings table holds more than {limits.MAX_XLSX_CELLS:,} strings" in msg


def test_only_the_sheet_read_and_sheets_read_to_find_their_size_count(monkeypatch):
    monkeypatch.setattr(limits, "MAX_XLSX_CELLS", 1_000)
    table = (['<row><c><v>1</v></c><c><v>2</v></c></row>'], None)
    big = list(H.empty_cell_rows(400, 10))  # 4,000 cells, 4,400 elements
    with_dimension = H.workbook(table, (big, "A1:J401"))
    assert prdp_core.load_table(with_dimension, filename="two.xlsx").shape == (1, 2)
    assert "holds more than 3,000 XML elements" in _refused(H.workbook(table, (big * 2, None)), "two.xlsx")
    assert "stores more than 1,000 cells" in _refused(H.workbook((big, None), table), "two.xlsx")


def test_a_sheet_declaring_a_larger_dimension_than_it_holds_loads():
    data = H.xlsx(['<row r="2"><c r="A2"><v>1</v></c><c r="B2"><v>2</v></c></row>'], dimension="A1:Z5000000")
    assert prdp_core.load_table(data, filename="small.xlsx").to_dict("list") == {"id": [1], "emp": [2]}


@pytest.mark.parametrize(("sheet", "fragment"), [
    ('<!DOCTYPE w [<!ENTITY c "<c/><c/>">]><row>&c;&c;</row>', "document type"),
    ('<row r="2"><c r="&#88;FD2"/></row>', "not of the form B7"),
    ('<row r="1e6"><c><v>1</v></c></row>', "not of the form B7"),
    ("<row r=\"2\"><c r='A2' t=\"n\"/></row>", "both kinds of quotes"),
    ('<row r="2"><c t="a>b" r="XFD2"/></row>', "inside an attribute"),
])
def test_sheet_xml_the_scan_cannot_count_exactly_is_refused(sheet, fragment, no_parsers):
    msg = _refused(H.xlsx([sheet]), "odd.xlsx", DataError)
    assert fragment in msg and "save it again" in msg


def test_a_corrupt_sheet_is_an_unreadable_file_for_the_scan_too(no_parsers):
    data = bytearray(H.xlsx(f'<row r="{r}"><c r="A{r}"><v>{r}</v></c></row>' for r in range(2, 3000)))
    info = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo("xl/worksheets/sheet1.xml")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 200
    data[start:start + 40] = bytes(b ^ 0x5A for b in data[start:start + 40])
    msg = _refused(bytes(data), "bad.xlsx", DataError)
    assert "The Excel file could not be read" in msg and "parser must not run" not in msg  # said by the scan


def test_a_sheet_in_utf16_is_refused(no_parsers):
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(H.xlsx(["<row><c><v>1</v></c></row>"]))) as src, \
            zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for name in src.namelist():
            text = src.read(name)
            if name == "xl/worksheets/sheet1.xml":
                text = text.decode().replace('encoding="UTF-8"', 'encoding="UTF-16"').encode("utf-16")
            out.writestr(name, text)
    assert "not encoded in UTF-8" in _refused(buf.getvalue(), "utf16.xlsx", DataError)


_PREFIX = st.sampled_from(["", "x:"])
_SPACE = st.sampled_from(["", " ", "\n "])


@st.composite
def _sheets(draw) -> tuple[str, str]:
    """A sheet's XML with rows and cells with and without r, prefixes and spaces around "="; and its prefix."""
    prefix = draw(_PREFIX)
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        attr = ""
        if draw(st.booleans()):
            attr = f' r{draw(_SPACE)}={draw(_SPACE)}"{draw(st.integers(1, 40))}"'
        cells = []
        for _ in range(draw(st.integers(0, 5))):
            ref = ""
            if draw(st.booleans()):
                ref = f' r="{H.column_name(draw(st.integers(1, 800)))}{draw(st.integers(1, 40))}"'
            body = draw(st.sampled_from(["", "<{p}v>3</{p}v>", '<{p}is><{p}t>a r="ZZ9" &lt;c</{p}t></{p}is>']))
            cells.append(f"<{prefix}c{ref}>{body.format(p=prefix)}</{prefix}c>" if body else f"<{prefix}c{ref}/>")
        rows.append(f"<{prefix}row{attr}>{''.join(cells)}</{prefix}row>")
    return "".join(rows), prefix


@settings(max_examples=200, deadline=None)
@given(sheet=_sheets(), piece=st.sampled_from([1 << 20, 7, 64]), escaped=st.booleans())
def test_the_scan_counts_and_numbers_as_the_reader_does(sheet, piece, escaped):
    from openpyxl.worksheet._reader import WorkSheetParser

    rows, prefix = sheet
    namespace = H.MAIN.replace(":", "&#58;", 1) if escaped else H.MAIN  # the parser expands &#58; to ":"
    ns = f' xmlns:x="{namespace}"' if prefix else ""
    xml = (f'<?xml version="1.0" encoding="UTF-8"?><{prefix}worksheet xmlns="{H.MAIN}"{ns}><{prefix}sheetData>'
           f"{rows}</{prefix}sheetData></{prefix}worksheet>").encode()
    last_row = last_col = cells = n_rows = 0
    for index, row in WorkSheetParser(io.BytesIO(xml), []).parse():
        n_rows += 1
        last_row = max(last_row, index)
        cells += len(row)
        last_col = max([last_col] + [cell["column"] for cell in row])
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("s.xml", xml)
    original = xlsxscan._PIECE
    xlsxscan._PIECE = piece  # small pieces cut the sheet between tags
    try:
        with zipfile.ZipFile(buf) as zf:
            counts = xlsxscan.scan_part(zf, "s.xml", "table")
    finally:
        xlsxscan._PIECE = original
    assert (counts.cells, counts.rows, counts.last_row, counts.last_col) == (cells, n_rows, last_row, last_col)


def test_a_highly_compressed_xlsx_part_is_refused_by_its_ratio(no_parsers):
    small_bomb = H.xlsx_bomb(rows=4_000)  # 40 MB of XML: under the size limit, compressed about 800 times
    msg = _refused(small_bomb, "ratio.xlsx")
    assert "compressed" in msg and f"limit of {limits.MAX_XLSX_RATIO:,}" in msg and "zip bomb" in msg


def test_too_many_xlsx_parts_are_refused_from_the_end_record(no_parsers, monkeypatch):
    monkeypatch.setattr(limits, "MAX_XLSX_PARTS", 3)
    msg = _refused(H.xlsx_rows(3), "parts.xlsx")
    assert "5 parts" in msg and "limit of 3 parts" in msg


def _spy(monkeypatch, name: str) -> dict:
    """The keyword arguments the loader passes to ``pandas.<name>`` (which still runs)."""
    seen: dict = {}
    original = getattr(pd, name)

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(pd, name, spy)
    return seen


def test_xlsx_row_limit_stops_the_reader(monkeypatch):
    seen = _spy(monkeypatch, "read_excel")
    monkeypatch.setattr(limits, "MAX_ROWS", 5)
    msg = _refused(H.xlsx_rows(50), "many.xlsx")
    assert "reaches row 51, over the 5 row limit" in msg and not seen  # counted before the reader runs
    monkeypatch.setattr(xlsxscan, "check_xlsx_content", lambda data: None)
    msg = _refused(H.xlsx_rows(50), "many.xlsx")
    assert "row limit" in msg and seen["nrows"] == 6  # the reader stops one row past the limit too
    monkeypatch.undo()
    monkeypatch.setattr(limits, "MAX_ROWS", 5)
    assert prdp_core.load_table(H.xlsx_rows(5), filename="five.xlsx").shape == (5, 2)


def test_a_long_xlsx_cell_is_refused():
    letters = np.random.default_rng(0).integers(97, 123, limits.MAX_CELL_BYTES + 1, dtype=np.uint8)
    text = letters.tobytes().decode()  # random letters: a long cell, not a zip bomb
    long_cell = H.xlsx([f'<row><c t="inlineStr"><is><t>{text}</t></is></c><c><v>1</v></c></row>'])
    msg = _refused(long_cell, "cell.xlsx", peak_mb=128)
    assert "column 'id'" in msg and f"cell size limit of {limits.MAX_CELL_BYTES:,}" in msg


def test_ordinary_xlsx_still_loads_as_before():
    df = pd.DataFrame({"id": range(5), "emp": [1.5, 2, 3, 4, 5], "g": list("abcab"),
                       "d": pd.date_range("2020", periods=5)})
    buf = io.BytesIO()
    df.to_excel(buf, index=False)
    pd.testing.assert_frame_equal(prdp_core.load_table(buf.getvalue(), filename="ok.xlsx"),
                                  pd.read_excel(io.BytesIO(buf.getvalue())))


# ---------------------------------------------------------------------------
# Text tables
# ---------------------------------------------------------------------------


def test_a_quoted_multiline_header_with_a_million_columns_is_refused_from_its_first_bytes(no_parsers):
    data = H.csv_quoted_header_wide()
    assert len(data) > 9_800_000
    msg = _refused(data, "wide.csv")
    assert f"over the {limits.MAX_COLUMNS:,} column limit" in msg and "more than" in msg


def test_a_header_that_never_ends_is_refused(no_parsers):
    data = b'"an unclosed name, id, emp\n' + b"1,2,3\n" * 400_000
    msg = _refused(data, "open.csv")
    assert f"first {limits.MAX_HEADER_BYTES:,} bytes" in msg and "header size limit" in msg


def test_a_150_mb_single_cell_csv_is_refused_without_parsing(no_parsers):
    data = H.csv_single_cell()
    msg = _refused(data, "cell.csv")  # the scan works in 2 MB blocks: no copy of the 150 MB
    assert "holds 150,000,000 bytes" in msg and f"cell size limit of {limits.MAX_CELL_BYTES:,} bytes" in msg
    assert "(line 2)" in msg


@pytest.mark.parametrize("layout", ["quoted", "stray quote before", "csv reader"])
def test_a_long_quoted_cell_with_delimiters_inside_is_refused(layout, no_parsers, monkeypatch):
    cell = '"' + "ab,cd\n" * (limits.MAX_CELL_BYTES // 6 + 10) + '"'
    data = ("id,note\n1,short\n" + ('2,12" pipe\n' if layout != "quoted" else "") + f"3,{cell}\n4,x\n").encode()
    if layout == "csv reader":
        monkeypatch.setattr(filelimits, "_MAX_LITERAL_RUNS", 0)  # the csv module decides instead of the scan
    msg = _refused(data, "q.csv")
    assert f"cell size limit of {limits.MAX_CELL_BYTES:,} bytes" in msg


def test_stray_quotes_in_a_large_benign_file_do_not_make_long_cells():
    rows = "".join(f'{i},12" pipe,{i % 7}\n' if i % 100 == 0 else f"{i},bolt,{i % 7}\n" for i in range(200_000))
    data = ("id,item,emp\n" + rows).encode()
    assert len(data) > 2 * limits.MAX_CELL_BYTES
    df = prdp_core.load_table(data, filename="inches.csv")
    assert len(df) == 200_000 and df["item"].iloc[0] == '12" pipe'


def test_csv_row_limit_stops_the_parser(monkeypatch):
    seen = _spy(monkeypatch, "read_csv")
    monkeypatch.setattr(limits, "MAX_ROWS", 5)
    msg = _refused(b"a\n" + b"1\n" * 1000, "rows.csv")
    assert "row limit" in msg and seen["nrows"] == 6


def _cells_one_byte_at_a_time(data: bytes, delim: int) -> int:
    """The longest cell (bytes as written) by the parser's state machine: a quote opens a quoted
    field only at its start (after skipped spaces), "" inside quotes is a quote, other quotes are text."""
    seps = {delim, 10, 13}
    state, cur, best = "start", 0, 0
    for b in data[3:] if data.startswith(b"\xef\xbb\xbf") else data:
        if b in seps and state != "q":
            best, cur, state = max(best, cur), 0, "start"
            continue
        cur += 1
        if state == "start":
            state = "start" if b == 32 else "q" if b == 34 else "u"
        elif state == "q":
            state = "qq" if b == 34 else "q"
        elif state == "qq":
            state = "q" if b == 34 else "u"
    return max(best, cur)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='ab ,;"\n\r', max_size=80).map(str.encode), st.sampled_from([",", ";"]), st.booleans(),
       st.sampled_from([1, 3, 1 << 21]))
def test_the_vectorised_scan_finds_the_longest_cell_exactly(data, delim, bom, block):
    if bom:
        data = b"\xef\xbb\xbf" + data
    original = filelimits._BLOCK
    filelimits._BLOCK = block  # tiny blocks put quote runs and spaces across block boundaries
    try:
        longest, _ = filelimits._scan_cells(data, ord(delim))
    finally:
        filelimits._BLOCK = original
    assert longest == _cells_one_byte_at_a_time(data, ord(delim))


# ---------------------------------------------------------------------------
# Parquet
# ---------------------------------------------------------------------------


def test_parquet_with_nested_and_binary_columns_is_refused_by_name_and_type(no_parsers):
    msg = _refused(H.parquet_nested(), "nested.parquet", DataError)
    for fragment in ("tags (list<", "address (struct<", "extra (map<", "blob (binary)"):
        assert fragment in msg, msg
    assert "id (" not in msg and "emp (" not in msg


def test_parquet_dictionary_columns_of_text_are_accepted_and_others_refused():
    def parquet(table: pa.Table) -> bytes:
        buf = io.BytesIO()
        pq.write_table(table, buf)
        return buf.getvalue()

    ok = pa.table({"g": pa.array(["a", "b", "a"]).dictionary_encode(), "v": [1.0, 2.0, 3.0]})
    assert list(prdp_core.load_table(parquet(ok), filename="ok.parquet")["g"]) == ["a", "b", "a"]
    bad = pa.table({"b": pa.array([b"x", b"y", b"x"]).dictionary_encode(), "v": [1.0, 2.0, 3.0]})
    assert "b (dictionary<values=binary" in _refused(parquet(bad), "bad.parquet", DataError)


def test_parquet_rows_are_refused_from_the_footer(no_parsers, monkeypatch):
    monkeypatch.setattr(limits, "MAX_ROWS", 2)
    buf = io.BytesIO()
    pq.write_table(pa.table({"v": [1.0, 2.0, 3.0]}), buf)
    assert "3 rows, over the 2 row limit" in _refused(buf.getvalue(), "rows.parquet")


def test_a_long_parquet_cell_is_refused():
    buf = io.BytesIO()
    pq.write_table(pa.table({"note": ["x" * (limits.MAX_CELL_BYTES + 1), "y"], "v": [1.0, 2.0]}), buf)
    msg = _refused(buf.getvalue(), "long.parquet", peak_mb=128)
    assert "column 'note'" in msg and "cell size limit" in msg


def test_nested_parquet_exits_4_in_the_cli(tmp_path):
    (tmp_path / "nested.parquet").write_bytes(H.parquet_nested())
    cfg = tmp_path / "study.yaml"
    cfg.write_text("version: 1\ndata: {path: nested.parquet}\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["validate", str(cfg)], stdout=out, stderr=err) == EXIT_DATA
    assert "tags (list<" in err.getvalue()


# ---------------------------------------------------------------------------
# The schema guess and the preview
# ---------------------------------------------------------------------------


def test_guess_schema_refuses_nested_values_by_name():
    nested = np.empty(3, dtype=object)
    nested[:] = [np.zeros(2), np.ones(1), np.zeros(0)]
    df = pd.DataFrame({"id": [1, 2, 3], "emp": [1.0, 2.0, 3.0], "tags": [[1], [2], []], "arr": nested,
                       "info": [{"a": 1}, {}, {"b": 2}], "blob": [b"x", None, b"z"]})
    with pytest.raises(DataError) as info:
        guess_schema(df)
    msg = str(info.value)
    assert "tags (list values)" in msg and "arr (ndarray values)" in msg and "info (dict values)" in msg
    assert "blob (bytes values)" in msg
    assert guess_schema(df[["id", "emp"]]).measures == ("emp",)


def test_preview_cuts_long_text_cells():
    n = limits.MAX_PREVIEW_CHARS
    df = pd.DataFrame({"note": ["x" * (n + 50), "short", None], "emp": [1.0, 2.0, 3.0],
                       "obj": pd.Series(["y" * (n + 1), 5, "z"], dtype=object)})
    shown = preview(df)
    assert shown["note"].iloc[0] == "x" * n + "…" and shown["note"].iloc[1] == "short"
    assert pd.isna(shown["note"].iloc[2]) and shown["obj"].iloc[0] == "y" * n + "…" and shown["obj"].iloc[1] == 5
    assert shown["emp"].tolist() == [1.0, 2.0, 3.0]
    assert len(df["note"].iloc[0]) == n + 50  # the table itself is untouched
    assert len(preview(pd.DataFrame({"v": range(100)}))) == 20
