"""Builders of the hostile upload files of issues 15 and 28, shared by the tests and benchmarks/bench_hostile.py,
and of the SAS, Stata and SPSS files the loader reads (ordinary and hostile).

Each returns the file's bytes. The .xlsx builders write a minimal but valid workbook (content
types, relationships, workbook, sheets, optionally a shared-strings table) with Python's zipfile,
streaming each sheet so that a file expanding to hundreds of megabytes is built without holding
them; ``xlsx_table`` is an ordinary workbook to compare the hostile ones with.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG = "http://schemas.openxmlformats.org/package/2006/relationships"
_SHEET_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
_STRINGS_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"


def _parts(sheets: int, strings: bool) -> dict[str, str]:
    """Content types, relationships and workbook of a workbook of ``sheets`` sheets (and a shared-strings table)."""
    overrides = "".join(f'<Override PartName="/xl/worksheets/sheet{i}.xml" ContentType="{_SHEET_TYPE}"/>'
                        for i in range(1, sheets + 1))
    if strings:
        overrides += f'<Override PartName="/xl/sharedStrings.xml" ContentType="{_STRINGS_TYPE}"/>'
    rels = "".join(f'<Relationship Id="rId{i}" Type="{_REL}/worksheet" Target="worksheets/sheet{i}.xml"/>'
                   for i in range(1, sheets + 1))
    if strings:
        rels += f'<Relationship Id="rId{sheets + 1}" Type="{_REL}/sharedStrings" Target="sharedStrings.xml"/>'
    names = "".join(f'<sheet name="Sheet{i}" sheetId="{i}" r:id="rId{i}"/>' for i in range(1, sheets + 1))
    return {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" '
            f'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>{overrides}'
            '</Types>'),
        "_rels/.rels": (
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_PKG}"><Relationship Id="rId1" '
            f'Type="{_REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>'),
        "xl/workbook.xml": (
            f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{MAIN}" xmlns:r="{_REL}"><sheets>{names}'
            '</sheets></workbook>'),
        "xl/_rels/workbook.xml.rels": (
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_PKG}">{rels}</Relationships>'),
    }


def _stream(zf: zipfile.ZipFile, name: str, head: str, items: Iterable[str], foot: str) -> None:
    """Write the part ``name``: ``head``, the items (written 100,000 at a time), ``foot``."""
    with zf.open(name, "w", force_zip64=True) as part:
        part.write(head.encode())
        batch: list[str] = []
        for item in items:
            batch.append(item)
            if len(batch) >= 100_000:
                part.write("".join(batch).encode())
                batch.clear()
        part.write(("".join(batch) + foot).encode())


def _sheet_head(dimension: str | None, header: str | None) -> str:
    dim = f'<dimension ref="{dimension}"/>' if dimension else ""
    cells = "".join(f'<c t="inlineStr"><is><t>{h}</t></is></c>' for h in header.split(",")) if header else ""
    return (f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN}">{dim}<sheetData>'
            + (f"<row>{cells}</row>" if header else ""))


def workbook(*sheets: tuple[Iterable[str], str | None], strings: Iterable[str] | None = None,
             header: str = "id,emp", level: int = 9) -> bytes:
    """A workbook of the given sheets, each ``(rows, dimension)``: a header row of inline strings, then
    the given ``<row>`` elements; with ``strings``, a shared-strings table of these ``<si>`` entries.
    ``level``: the deflate level (9 takes minutes on some repetitive sheets; 1 is fast)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        for name, text in _parts(len(sheets), strings is not None).items():
            zf.writestr(name, text)
        for i, (rows, dimension) in enumerate(sheets, start=1):
            _stream(zf, f"xl/worksheets/sheet{i}.xml", _sheet_head(dimension, header), rows,
                    "</sheetData></worksheet>")
        if strings is not None:
            _stream(zf, "xl/sharedStrings.xml", f'<?xml version="1.0" encoding="UTF-8"?><sst xmlns="{MAIN}">',
                    strings, "</sst>")
    return buf.getvalue()


def xlsx(rows: Iterable[str], *, dimension: str | None = None, header: str = "id,emp") -> bytes:
    """A one-sheet workbook: a header row of inline strings, then the given ``<row>`` elements."""
    return workbook((rows, dimension), header=header)


def column_name(i: int) -> str:
    """The letters of column ``i`` (1: A, 27: AA, 16,384: XFD)."""
    name = ""
    while i:
        i, rest = divmod(i - 1, 26)
        name = chr(65 + rest) + name
    return name


def empty_cell_rows(rows: int, columns: int) -> Iterable[str]:
    """``rows`` rows (from row 2) of ``columns`` stored empty cells each, ``<c r="A2"/>``."""
    template = '<row r="#">' + "".join(f'<c r="{column_name(i)}#"/>' for i in range(1, columns + 1)) + "</row>"
    return (template.replace("#", str(r)) for r in range(2, rows + 2))


def xlsx_empty_cells(rows: int = 225_000, columns: int = 26, dimension: str | None = "A1:B2") -> bytes:
    """A sheet declaring the dimension ``dimension`` (None: none) but storing ``rows`` × ``columns``
    empty cells (225,000 × 26: 5.85 M cells, about 14 MB, 91 MB of XML)."""
    return workbook((empty_cell_rows(rows, columns), dimension), level=1)


def xlsx_empty_cells_no_dimension() -> bytes:
    """:func:`xlsx_empty_cells` with no dimension declared."""
    return xlsx_empty_cells(dimension=None)


def xlsx_table(rows: int = 200_000) -> bytes:
    """An ordinary table as a spreadsheet program writes it (the baseline of the hostile ones): a
    dimension, ``r`` on every row and cell, ids, a measure, a region from a shared-strings table and a
    year (200,000 rows: 4 MB, 30 MB of XML)."""
    table = (f'<row r="{r}" spans="1:4"><c r="A{r}"><v>{r - 1}</v></c><c r="B{r}"><v>{(r * 7919) % 10007 / 8:g}'
             f'</v></c><c r="C{r}" t="s"><v>{r % 4}</v></c><c r="D{r}"><v>{2000 + r % 24}</v></c></row>'
             for r in range(2, rows + 2))
    regions = (f"<si><t>{name}</t></si>" for name in ("north", "south", "east", "west"))
    return workbook((table, f"A1:D{rows + 1}"), strings=regions, header="id,emp,region,year", level=6)


def xlsx_bomb(rows: int = 40_000) -> bytes:
    """A zip bomb: ``rows`` identical rows, each padded with 10,000 spaces (legal between XML elements),
    no declared dimension. 40,000 rows: a file of about 480 KB expanding to about 400 MB."""
    row = "<row><c><v>1</v></c><c><v>2</v></c></row>" + " " * 10_000
    return xlsx(row for _ in range(rows))


def xlsx_rows(n: int = 5_000_000) -> bytes:
    """An .xlsx of ``n`` identical data rows with its dimension declared (5 M rows: about 400 KB,
    130 MB of XML)."""
    return xlsx(("<row><c><v>1</v></c><c><v>2</v></c></row>" for _ in range(n)), dimension=f"A1:B{n + 1}")


def csv_quoted_header_wide(columns: int = 1_000_000) -> bytes:
    """A CSV whose first header field is quoted across two lines, then ``columns`` more names and one
    data row (10⁶ columns: about 10 MB)."""
    header = '"first\nname",' + ",".join(f"c{i}" for i in range(columns))
    return (header + "\n" + ",".join("1" for _ in range(columns + 1)) + "\n").encode()


def csv_single_cell(size: int = 150_000_000) -> bytes:
    """A CSV of one column whose only cell holds ``size`` bytes."""
    return b"note\n" + b"x" * size + b"\n"


def parquet_nested() -> bytes:
    """A Parquet file with a measure and list, struct, map and binary columns."""
    table = pa.table({
        "id": [1, 2, 3], "emp": [5.0, 7.0, 9.0],
        "tags": [[1, 2], [3], []], "address": [{"zip": 1}, {"zip": 2}, {"zip": 3}],
        "extra": pa.array([[("k", 1)], [], [("j", 2)]], type=pa.map_(pa.string(), pa.int64())),
        "blob": [b"\x00\x01", b"x", b""],
    })
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


# ---------------------------------------------------------------------------
# SAS, Stata and SPSS files
# ---------------------------------------------------------------------------

#: The group names of :func:`stat_tables` and the codes the statistical files store them under (value labels).
REGIONS = {1: "North", 2: "South", 3: "East"}


def _written(write: Callable[..., None], frame: pd.DataFrame, suffix: str, **options: object) -> bytes:
    """The bytes pyreadstat's ``write`` gives ``frame`` (it writes to a path only)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"t{suffix}"
        write(frame, str(path), **options)
        return path.read_bytes()


def stat_tables(n: int = 60, seed: int = 0) -> dict[str, bytes]:
    """One table — record ids, two measures (one with missing values), a group column — as CSV (``.csv``) and as
    Stata (``.dta``), SPSS (``.sav``, ``.zsav``) and SAS transport (``.xpt``) files. The Stata and SPSS files store
    the groups as numeric codes with value labels (the group names); the SPSS files store the missing values as
    the user-missing code -9; the .xpt file (SAS transport has no value labels) stores the names as text."""
    import pyreadstat

    rng = np.random.default_rng(seed)
    codes = rng.integers(1, 4, n)
    income = np.round(rng.lognormal(3, 1, n), 2)
    income[rng.choice(n, n // 10, replace=False)] = np.nan
    coded = pd.DataFrame({"firm_id": np.arange(1, n + 1), "emp": rng.integers(0, 500, n),
                          "income": income, "region": codes.astype(float)})
    named = coded.assign(region=[REGIONS[int(c)] for c in codes])
    spss = coded.assign(income=coded["income"].fillna(-9.0))
    missing = {"income": [-9.0]}
    labels = {"region": REGIONS}
    return {
        ".csv": named.to_csv(index=False).encode(),
        ".dta": _written(pyreadstat.write_dta, coded, ".dta", variable_value_labels=labels),
        ".sav": _written(pyreadstat.write_sav, spss, ".sav", variable_value_labels=labels, missing_ranges=missing),
        ".zsav": _written(pyreadstat.write_sav, spss, ".zsav", variable_value_labels=labels, missing_ranges=missing,
                          compress=True),
        ".xpt": _written(pyreadstat.write_xport, named, ".xpt"),
    }


def dta_rows_claimed(rows: int) -> bytes:
    """A small Stata file (release 119) whose header claims ``rows`` records (the 8-byte ``<N>`` field)."""
    data = bytearray(stat_tables(4)[".dta"])
    at = data.index(b"<N>") + 3
    data[at:at + 8] = rows.to_bytes(8, "little")
    return bytes(data)


def sav_rows_claimed(rows: int) -> bytes:
    """A small SPSS file whose header claims ``rows`` cases (the 4-byte count at offset 80)."""
    data = bytearray(stat_tables(4)[".sav"])
    data[80:84] = rows.to_bytes(4, "little", signed=True)
    return bytes(data)


def sav_crashing_reader() -> bytes:
    """A small SPSS file whose variable after INCOME declares a string width of 393,216 bytes (the third byte of its
    type field): ReadStat crashes (a segmentation fault) on reading its header."""
    data = bytearray(stat_tables(4)[".sav"])
    at = data.index(b"INCOME  ") + 8 + 8 + 4 + 2  # the name, INCOME's missing value, the next record's type
    data[at] = 6
    return bytes(data)
