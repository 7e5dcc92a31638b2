"""Limits of an .xlsx file's content, counted by a vectorised scan of its XML before the reader parses it.

A sheet's declared dimension (``<dimension ref="A1:B2"/>``) may be false or missing, so the limits are
applied to what the sheet holds: the scan streams each part out of the zip in 1 MB pieces (never
more than one piece and an unfinished tag in memory) and, with numpy, finds every tag, its local name
(``<c``, ``<x:c``…) and its ``r`` attribute, and follows the reader's numbering: a row without ``r``
is the next row, a cell without ``r`` the next column. It counts

* the stored cells (empty ones ``<c r="A1"/>`` included) and the rows of the sheet, and the grid the
  reader builds from them — the last row × the last column, as a dimension would declare it — against
  ``MAX_XLSX_CELLS``, and its last row against ``MAX_ROWS`` (and a header row);
* the entries (``<si>``) of the shared-strings table, against ``MAX_XLSX_CELLS`` too;
* every XML element of these parts, against ``_ELEMENTS_PER_CELL`` × ``MAX_XLSX_CELLS`` (a cell
  has one to three: ``<c>``, its value ``<v>`` or formula ``<f>``, an inline string's ``<is><t>``;
  the reader spends about as long on any other element, so a sheet of elements that are not cells
  costs it no more than a sheet at the cell limit).

It stops at the first piece past a limit and raises :class:`~prdp_core.core.errors.ResourceLimitError`.
What the scan cannot count exactly is refused as a :class:`~prdp_core.core.errors.DataError` that spreadsheet
programs never write: a document type declaration (whose entities would add elements the scan does
not see), a part not in UTF-8 or another encoding that keeps ASCII's bytes, a ``r`` reference not of
the form ``B7`` (row: ``7``), a cell or row tag mixing both quote characters or holding ``>`` inside
an attribute value.

The parts scanned are those the reader parses in full when it opens the file or reads the table:
the shared strings, the first worksheet (the table) and, for their elements only, the other
worksheets that declare no dimension before their cells (the reader reads such a sheet to its end
to find its size; a sheet with a dimension costs it, and the scan, only its first bytes).
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core import limits
from ..core.errors import DataError, ResourceLimitError

#: Bytes inflated and scanned at once.
_PIECE = 1 << 20
#: XML elements allowed per cell of the cell limit in a scanned part.
_ELEMENTS_PER_CELL = 3
#: Encodings in which every ASCII character is the same single byte (the scan reads bytes).
_ASCII_ENCODINGS = {"utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin-1", "latin1", "windows-1252",
                    "cp1252"}
_HINT = "Open it in a spreadsheet program and save it again as .xlsx, or save the table as CSV or Parquet."

_PAD = 16  # zero bytes after a piece: windows of up to 16 bytes may start at any of its positions
_REF_WIDTH = 10  # the longest usual reference: three letters and seven digits (XFD1048576)
_IS_WS = np.zeros(256, dtype=bool)
_IS_WS[[ord(ch) for ch in " \t\r\n"]] = True
_NAME_END = _IS_WS.copy()
_NAME_END[[ord("/"), ord(">")]] = True
_LT, _GT, _EQ, _COLON, _DQ, _SQ = (ord(ch) for ch in "<>=:\"'")
_MASKS = np.arange(1 << _PAD)
#: Of a 16-bit mask: the index of its lowest set bit (16 if none), and its number of trailing ones.
_LOWEST_SET = np.where(_MASKS > 0, np.log2(np.maximum(_MASKS & -_MASKS, 1)).astype(np.intp), _PAD)
_TRAILING_ONES = _LOWEST_SET[~_MASKS & 0xFFFF]
_FIRST_SET_BIT = _LOWEST_SET[:256]
#: The namespace of a sheet's elements, and a declaration that may bind a prefix to it (the value is
#: compared after the XML parser expands references: one holding "&" may name it too).
_MAIN_NAMESPACE = b"http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_PREFIX_DECLARATION = re.compile(rb"xmlns:[^\s=]+\s*=\s*([\"'])([^\"']*)\1")


def _data_error(part: str, what: str) -> DataError:
    return DataError(f"The Excel file's part '{part[:80]}' {what}.", hint=_HINT)


@dataclass
class _Counts:
    """What the scan has counted so far in one part, and the numbering carried from one piece to the next."""

    part: str
    kind: str  # "strings" (shared strings), "table" (the sheet read) or "sheet" (another sheet)
    elements: int = 0
    cells: int = 0
    rows: int = 0
    strings: int = 0
    last_row: int = 0
    last_col: int = 0
    dimension: bool = False  # a <dimension> tag came before the sheet's data
    sheet_data: bool = False
    prefixed: bool = False  # a prefix may name the sheet's namespace (<x:c): local names are looked up
    row_no: int = 0  # the number of the last row tag seen
    col_no: int = 0  # the column of the last cell tag seen in the current row
    errors: list[str] = field(default_factory=list)


def _after(sorted_pos: np.ndarray, at: np.ndarray, fallback: int) -> np.ndarray:
    """For each position of ``at``, the first of ``sorted_pos`` at or after it (``fallback`` if none)."""
    k = np.searchsorted(sorted_pos, at)
    return np.append(sorted_pos, fallback)[k]


def _bits(mask: np.ndarray) -> np.ndarray:
    """The rows of a boolean matrix of 8 or 16 columns as integers (column 0: bit 0)."""
    packed = np.packbits(mask.reshape(-1), bitorder="little")
    return packed if mask.shape[1] == 8 else packed.view("<u2")


def _references(a: np.ndarray, win: np.ndarray, quote: np.ndarray, letters: bool) -> tuple[np.ndarray, np.ndarray]:
    """The column (``letters``) or row numbers of the attribute values opened by the quotes at
    ``quote``, and which values are usual (``B7``: one to three capital letters then one to seven
    digits; a row: one to seven digits)."""
    m = win[quote + 1]
    upper, digit = _bits((m - 65) < 26), _bits((m - 48) < 10)  # uint8: bytes below "A" or "0" wrap around
    width = _LOWEST_SET[_bits(m == a[quote][:, None])]  # the closing quote
    n_letters = _TRAILING_ONES[upper]
    n_digits = width - n_letters
    usual = ((width <= _REF_WIDTH) & (_TRAILING_ONES[upper | digit] >= width)
             & (n_digits >= 1) & (n_digits <= 7) & (n_letters <= (3 if letters else 0)))
    if letters:
        usual &= n_letters >= 1
        col = m[:, :3].astype(np.int64) - 64
        values = np.select([n_letters == 1, n_letters == 2], [col[:, 0], col[:, 0] * 26 + col[:, 1]],
                           col[:, 0] * 676 + col[:, 1] * 26 + col[:, 2])
    else:
        values = np.zeros(len(quote), dtype=np.int64)
        for j in range(7):
            values = np.where(j < width, values * 10 + m[:, j].astype(np.int64) - 48, values)
    return values, usual


def _numbering(refs: np.ndarray, anchors: np.ndarray, steps: np.ndarray, carry: int) -> np.ndarray:
    """The reader's numbering of a run of tags: a tag with a reference (``anchors``) takes its value
    ``refs``, any other tag the previous number plus its step (``steps``, 1 or 0); ``carry`` is the
    number before the first tag."""
    n = refs.size
    count = np.cumsum(steps)
    last = np.maximum.accumulate(np.where(anchors, np.arange(n), -1))
    base = np.where(last >= 0, refs[np.maximum(last, 0)], carry)
    since = np.where(last >= 0, count - count[np.maximum(last, 0)], count)
    return base + since


def _names(a: np.ndarray, win: np.ndarray, n: int, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The start and length of the local name (after any ``prefix:``) of the tags opened at ``starts``."""
    name_end = np.full(starts.size, n, dtype=np.intp)
    todo = np.arange(starts.size)
    offset = 2
    while todo.size and offset < 4 * _PAD:  # names are short: look 8 bytes at a time
        at = starts[todo] + offset
        first = _FIRST_SET_BIT[_bits(_NAME_END[win[at, :8]])]
        found = first < 8
        name_end[todo[found]] = at[found] + first[found]
        todo, offset = todo[~found], offset + 8
    if todo.size:
        name_end[todo] = _after(np.flatnonzero(_NAME_END[a[:n]]), starts[todo] + 1, n)
    local = starts + 1
    colons = np.flatnonzero(a[:n] == _COLON)
    if colons.size:
        k = np.searchsorted(colons, name_end) - 1
        colon = np.append(colons, -1)[np.where(k >= 0, k, colons.size)]
        local = np.where(colon > starts, colon + 1, local)
    return local, name_end - local


def _scan_piece(buf: bytes, c: _Counts) -> None:
    """Count the tags of ``buf``, which holds whole tags only (it starts at a ``<`` or at the start of
    the part, and ends before a ``<``)."""
    n = len(buf)
    a = np.frombuffer(buf + bytes(_PAD), dtype=np.uint8)
    win = np.lib.stride_tricks.sliding_window_view(a, _PAD)
    lt = np.flatnonzero(a[:n] == _LT)
    following = a[lt + 1]
    for at in lt[following == ord("!")]:
        if buf.startswith((b"<!DOCTYPE", b"<!ENTITY"), int(at)):
            c.errors.append("declares a document type (entities), which spreadsheet programs never write")
            return
    starts = lt[(following != ord("/")) & (following != ord("?")) & (following != ord("!")) & (lt + 1 < n)]
    c.elements += int(starts.size)
    if starts.size == 0:
        return
    if not c.prefixed:
        c.prefixed = any(b"&" in m.group(2) or m.group(2) == _MAIN_NAMESPACE
                         for m in _PREFIX_DECLARATION.finditer(buf))
    if c.prefixed:
        local, length = _names(a, win, n, starts)

        def named(name: bytes) -> np.ndarray:
            hit = length == len(name)
            at = np.flatnonzero(hit)
            hit[at] = (win[local[at], :len(name)] == np.frombuffer(name, dtype=np.uint8)).all(axis=1)
            return hit
    else:  # no prefix can name the sheet's namespace: its tags are <c, <row…

        def named(name: bytes) -> np.ndarray:
            hit = _NAME_END[a[starts + 1 + len(name)]]
            for i, ch in enumerate(name):
                hit &= a[starts + 1 + i] == ch
            return hit

    if c.kind == "strings":
        c.strings += int(named(b"si").sum())
        return
    if not c.sheet_data:
        data_at = np.flatnonzero(named(b"sheetData"))
        upto = int(data_at[0]) if data_at.size else starts.size
        c.dimension = c.dimension or bool(named(b"dimension")[:upto].any())
        c.sheet_data = bool(data_at.size)
    if c.kind != "table":
        return
    is_cell = named(b"c")
    is_row = named(b"row")
    keep = is_cell | is_row
    tags = starts[keep]
    if tags.size == 0:
        return
    tag_is_row = is_row[keep]
    tag_end = _after(np.flatnonzero(a[:n] == _GT), tags, n)
    apostrophes = b"'" in buf
    quotes = np.flatnonzero(((a[:n] == _DQ) | (a[:n] == _SQ)) if apostrophes else (a[:n] == _DQ))
    if ((np.searchsorted(quotes, tag_end) - np.searchsorted(quotes, tags)) % 2).any():
        c.errors.append("has a cell or row tag with a '>' inside an attribute, which spreadsheet programs never "
                        "write")
        return
    if apostrophes:
        dq, sq = np.flatnonzero(a[:n] == _DQ), np.flatnonzero(a[:n] == _SQ)
        both = (np.searchsorted(dq, tag_end) > np.searchsorted(dq, tags)) & (
            np.searchsorted(sq, tag_end) > np.searchsorted(sq, tags))
        if both.any():
            c.errors.append("has a cell or row tag with both kinds of quotes, which spreadsheet programs never "
                            "write")
            return
    # The r attributes: "=" after a name "r" that follows a space, inside a cell or row tag.
    eq = np.flatnonzero(a[:n] == _EQ)
    name_at = np.maximum(eq - 1, 0)
    spaced = _IS_WS[a[name_at]]
    if spaced.any():  # r = "A1": skip the spaces before "="
        last_text = np.maximum.accumulate(np.where(_IS_WS[a[:n]], -1, np.arange(n)))
        name_at = np.where(spaced, np.maximum(last_text[name_at], 0), name_at)
    is_r = (a[name_at] == ord("r")) & _IS_WS[a[np.maximum(name_at - 1, 0)]] & (name_at >= 1)
    eq = eq[is_r]
    owner = np.searchsorted(tags, eq) - 1
    inside = (owner >= 0) & (eq < tag_end[np.maximum(owner, 0)])
    eq, owner = eq[inside], owner[inside]
    quote = eq + 1
    loose = _IS_WS[a[quote]]
    if loose.any():  # r= "A1": skip the spaces after "="
        next_text = np.minimum.accumulate(np.where(_IS_WS[a[:n]], n, np.arange(n))[::-1])[::-1]
        quote = np.where(loose, next_text[np.minimum(quote, n - 1)], quote)
    usual_all = (a[quote] == _DQ) | (a[quote] == _SQ)
    ref_row = tag_is_row[owner]
    values = np.zeros(tags.size, dtype=np.int64)
    has_ref = np.zeros(tags.size, dtype=bool)
    for row_refs in (False, True):
        pick = np.flatnonzero(ref_row == row_refs)
        if pick.size:
            v, usual = _references(a, win, quote[pick], letters=not row_refs)
            usual_all[pick] &= usual
            values[owner[pick]] = v
            has_ref[owner[pick]] = True
    if not usual_all.all():
        at = int(quote[np.flatnonzero(~usual_all)[0]])
        c.errors.append(f"holds the reference r={buf[at:at + 24].decode('latin-1')!r}…, not of the form B7 (a "
                        "row: 7) that spreadsheet programs write")
        return
    rows = _numbering(values, has_ref & tag_is_row, tag_is_row.astype(np.int64), c.row_no)
    c.row_no = int(rows[-1])
    c.last_row = max(c.last_row, int(rows.max()))
    c.rows += int(tag_is_row.sum())
    cell = ~tag_is_row
    c.cells += int(cell.sum())
    if cell.any():
        # Columns: a row tag restarts at 0, a cell with r takes its column, any other cell the next one.
        cols = _numbering(np.where(tag_is_row, 0, values), tag_is_row | has_ref, cell.astype(np.int64), c.col_no)
        c.col_no = int(cols[-1])
        c.last_col = max(c.last_col, int(cols[cell].max()))
    else:
        c.col_no = 0


def _check_encoding(head: bytes, part: str) -> None:
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in head[:4]:
        raise _data_error(part, "is not encoded in UTF-8 (it looks like UTF-16 or UTF-32)")
    found = re.match(rb"(?:\xef\xbb\xbf)?<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']", head)
    if found and found.group(1).decode().lower() not in _ASCII_ENCODINGS:
        raise _data_error(part, f"is encoded in {found.group(1).decode()[:30]}, not UTF-8")


def _raise_past_limits(c: _Counts) -> None:
    """Raise the error for counts past a limit, or for XML the scan could not count."""
    if c.errors:
        raise _data_error(c.part, c.errors[0])
    cap = limits.MAX_XLSX_CELLS
    hint = "Save the table as CSV or Parquet (read faster, and larger tables are accepted)."
    what = "shared-strings table" if c.kind == "strings" else f"sheet '{c.part[:80]}'"
    if c.strings > cap:
        raise ResourceLimitError(f"The Excel file's shared-strings table holds more than {cap:,} strings, over the "
                                  f"limit of {cap:,} cells of an .xlsx sheet.", hint=hint)
    if c.cells > cap:
        raise ResourceLimitError(f"The Excel file's sheet '{c.part[:80]}' stores more than {cap:,} cells (empty ones "
                                  f"included), over the limit of {cap:,} cells of an .xlsx sheet.", hint=hint)
    if c.last_row > limits.MAX_ROWS + 1:  # the header row and MAX_ROWS rows of data
        raise ResourceLimitError(f"The Excel file's sheet '{c.part[:80]}' reaches row {c.last_row:,}, over the "
                                 f"{limits.MAX_ROWS:,} row limit (and a header row).",
                                 hint="Sample the rows before uploading.")
    if c.rows > cap:
        raise ResourceLimitError(f"The Excel file's sheet '{c.part[:80]}' stores more than {cap:,} rows, over the "
                                  f"limit of {cap:,} cells of an .xlsx sheet.", hint=hint)
    grid = c.last_row * max(c.last_col, 1)
    if grid > cap:
        raise ResourceLimitError(
            f"The Excel file's sheet '{c.part[:80]}' spans {c.last_row:,} rows × {max(c.last_col, 1):,} columns = "
            f"{grid:,} cells (whatever its declared dimension says), over the limit of {cap:,} cells of an .xlsx "
            "sheet.", hint=hint)
    if c.elements > _ELEMENTS_PER_CELL * cap:
        raise ResourceLimitError(
            f"The Excel file's {what} holds more than {_ELEMENTS_PER_CELL * cap:,} XML elements "
            f"({_ELEMENTS_PER_CELL} per cell of the limit of {cap:,} cells of an .xlsx sheet).", hint=hint)


def scan_part(zf: zipfile.ZipFile, part: str, kind: str) -> _Counts:
    """Stream ``part`` out of the archive and count it (see the module's docstring), raising at the first
    piece past a limit. ``kind``: ``"strings"`` (the shared-strings table: its entries and elements),
    ``"table"`` (the sheet read: cells, rows, grid, elements) or ``"sheet"`` (another sheet: its
    elements, unless it declares a dimension before its data — the reader then stops there, and so
    does the scan)."""
    c = _Counts(part=part, kind=kind)
    tail = bytearray()
    with zf.open(part) as src:
        head = src.read(_PIECE)
        _check_encoding(head, part)
        piece = head
        while piece:
            tail += piece
            cut = tail.rfind(b"<", len(tail) - len(piece))
            if cut > 0:
                _scan_piece(bytes(tail[:cut]), c)
                del tail[:cut]
                if kind == "sheet" and c.dimension:
                    return c
                _raise_past_limits(c)
            piece = src.read(_PIECE)
    _scan_piece(bytes(tail), c)
    if not (kind == "sheet" and c.dimension):
        _raise_past_limits(c)
    return c


def check_xlsx_content(data: bytes) -> None:
    """Refuse an .xlsx file whose shared strings or sheets hold more than the limits, whatever their
    declared dimensions say (see the module's docstring). The parts are found as the reader finds
    them (content types, workbook and its relationships); call after
    :func:`prdp_core.data.filelimits.check_xlsx_archive`. A file the reader cannot open is left to the
    reader's own error."""
    from openpyxl.reader.excel import ExcelReader
    from openpyxl.xml.constants import SHARED_STRINGS

    try:
        reader: Any = ExcelReader(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
        reader.read_manifest()
        strings = reader.package.find(SHARED_STRINGS)
        reader.read_workbook()
        sheets = [rel.target for _sheet, rel in reader.parser.find_sheets()
                  if rel.target in reader.valid_files and "chartsheet" not in rel.Type]
    except Exception:  # openpyxl raises many types; load_table reports them as an unreadable file
        return
    zf = reader.archive
    try:
        if strings is not None and strings.PartName[1:] in reader.valid_files:
            scan_part(zf, strings.PartName[1:], "strings")
        for i, part in enumerate(sheets):
            scan_part(zf, part, "sheet" if i else "table")
    finally:
        zf.close()
