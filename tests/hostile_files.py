"""Builders of the hostile upload files of issue 15, shared by the tests and benchmarks/bench_hostile.py.

Each returns the file's bytes. The .xlsx builders write a minimal but valid workbook (content
types, relationships, workbook, one sheet) with Python's zipfile, streaming the sheet so that a
file expanding to hundreds of megabytes is built without holding them.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG = "http://schemas.openxmlformats.org/package/2006/relationships"
_PARTS = {
    "[Content_Types].xml": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>'),
    "_rels/.rels": (
        f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_PKG}"><Relationship Id="rId1" '
        f'Type="{_REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>'),
    "xl/workbook.xml": (
        f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{_MAIN}" xmlns:r="{_REL}"><sheets>'
        '<sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'),
    "xl/_rels/workbook.xml.rels": (
        f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_PKG}"><Relationship Id="rId1" '
        f'Type="{_REL}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>'),
}


def xlsx(rows: Iterable[str], *, dimension: str | None = None, header: str = "id,emp") -> bytes:
    """A one-sheet workbook: a header row of inline strings, then the given ``<row>`` elements."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, text in _PARTS.items():
            zf.writestr(name, text)
        with zf.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as sheet:
            dim = f'<dimension ref="{dimension}"/>' if dimension else ""
            cells = "".join(f'<c t="inlineStr"><is><t>{h}</t></is></c>' for h in header.split(","))
            sheet.write(f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{_MAIN}">{dim}<sheetData>'
                        f"<row>{cells}</row>".encode())
            batch: list[str] = []
            for r in rows:
                batch.append(r)
                if len(batch) >= 100_000:
                    sheet.write("".join(batch).encode())
                    batch.clear()
            sheet.write(("".join(batch) + "</sheetData></worksheet>").encode())
    return buf.getvalue()


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
