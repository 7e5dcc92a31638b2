"""Resource limits of uploaded files, checked before or while a file is parsed.

A hostile or broken file must be refused from what is cheap to read — its first bytes, a
zip directory, Parquet metadata — before a parser spends minutes and gigabytes on it. Each
check raises :class:`~prdp_core.core.errors.ResourceLimitError` naming the limit of
:mod:`prdp_core.core.limits` it enforces (or :class:`~prdp_core.core.errors.DataError` for column types
the engine cannot use), and costs a small, bounded amount of memory:

* **Text tables** (:func:`check_text_header`, :func:`check_text_cells`): the header record is
  read from the first ``MAX_HEADER_BYTES`` only, with quoted fields that span lines handled as
  the parser handles them; a header that does not end there, or has more than ``MAX_COLUMNS``
  fields, is refused. The largest cell is found by a vectorised scan of the bytes in blocks
  that follows the parser's quoting rules (a delimiter or line break inside double quotes does
  not end a cell; a quote in the middle of an unquoted field, ``12" pipe``, is a plain
  character); a file with more than 100,000 such quotes is read with the csv module instead,
  in bounded pieces. The row limit is applied by the parser, which stops one row after it
  (see :func:`prdp_core.data.load_table`).
* **Excel** (:func:`check_xlsx_archive`): the number of parts, their total uncompressed size and
  the compression ratio of every part come from the zip directory (Python's zip reader never
  inflates a part beyond its declared size), before a part is inflated. What the sheet holds —
  cells, rows, shared strings, whatever its declared dimension says — is counted next, by
  :mod:`prdp_core.data.xlsxscan`.
* **Parquet** (:func:`check_parquet_metadata`): rows and columns from the footer, column types
  from the schema (lists, structs, maps, binary… are refused by name before any data is read).
  The longest text value of a decoded Parquet or .xlsx table is checked by
  :func:`check_frame_cells`.
"""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..core import limits
from ..core.errors import DataError, ResourceLimitError

#: Bytes scanned at once when looking for the largest cell (bounds the scan's scratch memory).
_BLOCK = 1 << 21
_UTF8_BOM = b"\xef\xbb\xbf"
_QUOTE, _SPACE = ord('"'), ord(" ")
_CR, _LF = ord("\r"), ord("\n")
#: Quote runs inside unquoted fields (``12" pipe``) the vectorised scan follows one by one; a file
#: with more is read with the csv module (slower, same result).
_MAX_LITERAL_RUNS = 100_000


def _mb(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:,.1f} MB"


# ---------------------------------------------------------------------------
# Text tables
# ---------------------------------------------------------------------------


def _lines(buf: bytes, start: int = 0, end: int | None = None) -> Iterator[str]:
    """Physical lines of ``buf[start:end]`` with their line break (\\n, \\r or \\r\\n), as latin-1 text
    (one character per byte: delimiters, quotes and line breaks keep their positions)."""
    stop = len(buf) if end is None else end
    pos = start
    next_lf = buf.find(b"\n", pos, stop)
    next_cr = buf.find(b"\r", pos, stop)
    while pos < stop:
        if 0 <= next_lf < pos:
            next_lf = buf.find(b"\n", pos, stop)
        if 0 <= next_cr < pos:
            next_cr = buf.find(b"\r", pos, stop)
        ends = [e for e in (next_lf, next_cr) if e >= 0]
        if not ends:
            yield buf[pos:stop].decode("latin-1")
            return
        e = min(ends)
        if e == next_cr and buf[e + 1:e + 2] == b"\n" and e + 1 < stop:
            e += 1
        yield buf[pos:e + 1].decode("latin-1")
        pos = e + 1


def _reader(lines: Iterator[str], delim: str) -> Any:
    """A csv reader with the quoting rules of the table parser (double quotes, "" inside quotes,
    spaces before an opening quote skipped) that accepts fields up to the cell limit."""
    if csv.field_size_limit() < limits.MAX_CELL_BYTES + 2:
        csv.field_size_limit(limits.MAX_CELL_BYTES + 2)  # only ever raised: other readers keep working
    return csv.reader(lines, delimiter=delim, quotechar='"', doublequote=True, skipinitialspace=True,
                      strict=False)


def _blank(row: list[str]) -> bool:
    return not row or (len(row) == 1 and not row[0].strip())


def check_text_header(data: bytes, delim: str) -> None:
    """Refuse a text table whose header is too long or too wide, from its first bytes only.

    The header is the first non-blank record of the first ``MAX_HEADER_BYTES`` bytes; quoted
    names may span lines. Refused: a header that does not end within the limit
    (``MAX_HEADER_BYTES``), a header of more than ``MAX_COLUMNS`` fields, and a first data row
    with more fields than the header (the parser would silently turn the extra leading fields
    into an index and shift every value into the wrong column).
    """
    limit = limits.MAX_HEADER_BYTES
    start = len(_UTF8_BOM) if data.startswith(_UTF8_BOM) else 0
    end = min(len(data), start + limit)
    cut = {"reached": False}  # the reader has read the last, cut-off line of the first `limit` bytes

    def lines() -> Iterator[str]:
        for line in _lines(data, start, end):
            if end < len(data) and not line.endswith(("\n", "\r")):
                cut["reached"] = True
            yield line

    reader = _reader(lines(), delim)
    widths: list[int] = []
    complete = True
    try:
        for row in reader:
            if _blank(row):
                continue
            complete = not cut["reached"]
            if not widths and len(row) > limits.MAX_COLUMNS:
                raise ResourceLimitError(
                    f"The table has {'more than ' if not complete else ''}{len(row):,} columns, over the "
                    f"{limits.MAX_COLUMNS:,} column limit.", hint="Keep only the id, measure and grouping columns.")
            if not complete and not widths:
                raise ResourceLimitError(
                    f"The header row does not end within its first {limit:,} bytes (the header size limit).",
                    hint="Check the quotes of the column names (a name opened with \" must be closed), or "
                         "keep only the id, measure and grouping columns.")
            widths.append(len(row))  # of a row cut at the limit: a lower bound of its width
            if len(widths) == 2 or not complete:
                break
    except csv.Error:
        return  # the parser reports malformed text with its own message
    if len(widths) == 2 and widths[1] > widths[0]:
        more = "" if complete else "at least "
        raise DataError(f"The first data row has {more}{widths[1]:,} fields but the header names only {widths[0]:,} "
                        "columns.", hint="Check for stray delimiters, or add the missing column names.")


def _cell_refusal(size: int, line: int | None, *, exact: bool = True) -> ResourceLimitError:
    where = f" (line {line:,})" if line else ""
    size_text = f"{'' if exact else 'more than '}{size:,}"
    return ResourceLimitError(
        f"A cell of the file{where} holds {size_text} bytes, over the cell size limit of "
        f"{limits.MAX_CELL_BYTES:,} bytes.", hint="A table cell holds a number, a code or a short label: check the "
                                                  "quotes (a field opened with \" must be closed) and remove long "
                                                  "free text.")


def _line_of(data: bytes, pos: int) -> int:
    return data.count(b"\n", 0, pos) + 1


class _Gaps:
    """The widest gap between separator positions fed in increasing order, block by block."""

    def __init__(self, before: int) -> None:
        self.last, self.widest, self.at = before, 0, before + 1

    def add(self, sep: np.ndarray) -> None:
        if sep.size:
            gaps = np.diff(sep, prepend=self.last) - 1
            k = int(np.argmax(gaps))
            if int(gaps[k]) > self.widest:
                self.widest, self.at = int(gaps[k]), (int(sep[k - 1]) + 1 if k else self.last + 1)
            self.last = int(sep[-1])

    def close(self, end: int) -> tuple[int, int]:
        """(widest gap, its start) once the separators up to ``end`` have been added."""
        if end - self.last - 1 > self.widest:
            self.widest, self.at = end - self.last - 1, self.last + 1
        return self.widest, self.at


def _run_length(arr: np.ndarray, pos: int) -> int:
    """The number of consecutive double quotes starting at ``pos``."""
    width = 64
    while True:
        other = np.flatnonzero(arr[pos:pos + width] != _QUOTE)
        if other.size:
            return int(other[0])
        if pos + width >= arr.size:
            return int(arr.size - pos)
        width *= 4


def _scan_cells(data: bytes, delim: int) -> tuple[int, int] | None:
    """The longest cell of a text table, in bytes as written, and the position where it starts.

    The quoting rules are the parser's: a double quote opens a quoted stretch only at the start of
    a field (after the spaces it skips), "" inside quotes stands for a quote, and any other quote —
    ``12" pipe`` — is a plain character. A cell ends at a delimiter or line break outside quotes.

    Vectorised in blocks: the quotes are first paired by parity (exact when every opening quote
    stands at a field start); each run of quotes in the middle of an unquoted field is then found
    in file order (a search in two sorted arrays per run, since each such run of odd length flips
    the parity of everything after it) and the parity corrected. Returns None when the file has
    more than ``_MAX_LITERAL_RUNS`` such runs (the caller reads it with the csv module instead).
    """
    arr = np.frombuffer(data, dtype=np.uint8)
    n = arr.size
    first = len(_UTF8_BOM) if data.startswith(_UTF8_BOM) else 0
    parity = 0  # of all quotes so far
    literal = 0  # parity of the quotes found to be plain characters so far
    resume = first  # quotes before this position belong to a plain run already counted
    runs = 0
    cells = _Gaps(first - 1)
    prev_byte = prev_text = -1  # the byte before the block, the last one that is not a space (-1: none)
    for start in range(first, n, _BLOCK):
        a = arr[start:start + _BLOCK]
        is_q = a == _QUOTE
        is_sep = (a == delim) | (a == _LF) | (a == _CR)
        if not is_q.any():
            sep = np.flatnonzero(is_sep) if not parity ^ literal else np.empty(0, dtype=np.intp)
        else:
            ev = np.flatnonzero(is_q | is_sep)
            evq = is_q[ev]
            after = np.bitwise_xor.accumulate(evq.view(np.uint8))
            before = after ^ evq.view(np.uint8) ^ parity  # parity of all quotes before each event
            qi = np.flatnonzero(evq)
            qpos = ev[qi]
            prev = np.where(qpos > 0, a[np.maximum(qpos - 1, 0)].astype(np.int16), prev_byte)
            mid = (prev != _QUOTE) & (prev != delim) & (prev != _LF) & (prev != _CR) & (prev != -1)
            spaced = np.flatnonzero(mid & (prev == _SPACE))
            if spaced.size:  # spaces after a delimiter are skipped: such a quote opens a field
                idx = np.where(a != _SPACE, np.arange(a.size), -1)
                np.maximum.accumulate(idx, out=idx)
                j = np.where(qpos[spaced] > 0, idx[np.maximum(qpos[spaced] - 1, 0)], -1)
                text = np.where(j >= 0, a[np.maximum(j, 0)].astype(np.int16), prev_text)
                mid[spaced[(text == delim) | (text == _LF) | (text == _CR) | (text == -1)]] = False
            cand = qpos[mid]
            cand_par = before[qi][mid]
            by_state = (cand[cand_par == 0], cand[cand_par == 1])
            literal_at_start = literal
            fixes: list[int] = []
            flips: list[int] = []
            pos = max(resume - start, 0)
            while True:  # the next quote run standing in an unquoted field, in file order
                options = by_state[literal]
                k = int(np.searchsorted(options, pos))
                if k == options.size:
                    break
                f = int(options[k])
                length = _run_length(arr, start + f)
                fixes.append(f)
                flips.append(length & 1)
                literal ^= length & 1
                pos = f + length
                runs += 1
                if runs > _MAX_LITERAL_RUNS:
                    return None
            resume = max(resume, start + pos)
            sep_i = np.flatnonzero(~evq)
            sep_pos = ev[sep_i]
            corr = np.full(sep_pos.size, literal_at_start, dtype=np.uint8)
            if fixes:
                flipped = np.concatenate((np.zeros(1, np.uint8),
                                          np.bitwise_xor.accumulate(np.array(flips, np.uint8))))
                corr ^= flipped[np.searchsorted(np.array(fixes), sep_pos)]
            sep = sep_pos[(before[sep_i] ^ corr) == 0]
            parity ^= int(after[-1])
        cells.add(sep + start)
        prev_byte = int(a[-1])
        if prev_byte != _SPACE:
            prev_text = prev_byte
        else:
            text_at = np.flatnonzero(a != _SPACE)
            if text_at.size:
                prev_text = int(a[text_at[-1]])
    return cells.close(n)


def _longest_run(data: bytes, delim: int) -> tuple[int, int]:
    """The longest stretch of bytes without a delimiter or line break, and its start: it lies inside
    one cell whatever the quoting, so it is a lower bound of the longest cell."""
    arr = np.frombuffer(data, dtype=np.uint8)
    runs = _Gaps(-1)
    for start in range(0, arr.size, _BLOCK):
        a = arr[start:start + _BLOCK]
        runs.add(np.flatnonzero((a == delim) | (a == _LF) | (a == _CR)) + start)
    return runs.close(arr.size)


def _longest_quoted_cell(data: bytes, delim: str) -> tuple[int, int, bool]:
    """The longest cell read with the csv module (exact quoting rules) and its line, in pieces of
    bounded size: a line longer than the cell limit is cut right after a delimiter, which leaves the
    quoting state unchanged (a cut inside quotes is ignored, one outside ends the field anyway)."""
    cap = limits.MAX_CELL_BYTES + 2
    line_no = 0

    def pieces() -> Iterator[str]:
        nonlocal line_no
        for line in _lines(data):
            line_no += 1
            while len(line) > cap:
                cut = line.rfind(delim, 0, cap)
                if cut < 0:  # cannot happen: a run of `cap` bytes without separators was refused before
                    cut = cap - 1
                yield line[:cut + 1]
                line = line[cut + 1:]
            yield line

    reader = _reader(pieces(), delim)
    longest, where = 0, 0
    try:
        for row in reader:
            if row:
                m = max(map(len, row))
                if m > longest:
                    longest, where = m, line_no
                if longest > limits.MAX_CELL_BYTES:
                    break
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            return csv.field_size_limit(), line_no, False
    return longest, where, True


def check_text_cells(data: bytes, delim: str) -> None:
    """Refuse a text table with a cell over ``MAX_CELL_BYTES`` bytes, before the parser builds it.

    ``data`` is the file in an ASCII-compatible encoding (UTF-8 or Windows-1252; UTF-16 text is
    re-encoded first). Cost: one vectorised pass in 2 MB blocks (:func:`_scan_cells`); a file with
    more than ``_MAX_LITERAL_RUNS`` quotes inside unquoted fields is read with the csv module
    instead, in pieces of at most the cell limit.
    """
    limit = limits.MAX_CELL_BYTES
    scan = _scan_cells(data, ord(delim))
    if scan is not None:
        longest, at = scan
        if longest > limit:
            raise _cell_refusal(longest, _line_of(data, at))
        return
    run, run_at = _longest_run(data, ord(delim))
    if run > limit:
        raise _cell_refusal(run, _line_of(data, run_at))
    size, line, exact = _longest_quoted_cell(data, delim)
    if size > limit:
        raise _cell_refusal(size, line, exact=exact)


# ---------------------------------------------------------------------------
# Excel (.xlsx)
# ---------------------------------------------------------------------------

_EOCD = b"PK\x05\x06"


def check_xlsx_archive(data: bytes) -> None:
    """Refuse an .xlsx file whose parts would unpack too large, from its zip directory only.

    Checked before any part is inflated: the number of parts (from the end-of-directory record,
    before the directory itself is read; ``MAX_XLSX_PARTS``), their total uncompressed size
    (``MAX_XLSX_UNCOMPRESSED_MB``) and, for parts over 1 MB, their compression ratio
    (``MAX_XLSX_RATIO``; a zip bomb's is about 1,000, a real sheet's 5 to 20). The sizes are
    binding: Python's zip reader stops a part at its declared size.
    """
    eocd = data.rfind(_EOCD, max(0, len(data) - 65_557))
    if eocd >= 0 and len(data) >= eocd + 12:
        parts = int.from_bytes(data[eocd + 10:eocd + 12], "little")
        if parts > limits.MAX_XLSX_PARTS:
            raise ResourceLimitError(f"The Excel file holds {parts:,} parts, over the limit of "
                                     f"{limits.MAX_XLSX_PARTS:,} parts of an .xlsx file.",
                                     hint="Save the table as CSV or Parquet.")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise DataError(f"The Excel file could not be read: {str(exc)[:200] or type(exc).__name__}.",
                        hint="Save it as .xlsx (first sheet holds the table) or export it as CSV.") from None
    if len(infos) > limits.MAX_XLSX_PARTS:
        raise ResourceLimitError(f"The Excel file holds {len(infos):,} parts, over the limit of "
                                 f"{limits.MAX_XLSX_PARTS:,} parts of an .xlsx file.",
                                 hint="Save the table as CSV or Parquet.")
    total = sum(i.file_size for i in infos)
    cap = limits.MAX_XLSX_UNCOMPRESSED_MB * 2**20
    if total > cap:
        raise ResourceLimitError(
            f"The Excel file unpacks to {_mb(total)}, over the {limits.MAX_XLSX_UNCOMPRESSED_MB:,} MB limit of an "
            ".xlsx file's uncompressed size.", hint="Save the table as CSV or Parquet (read faster, and larger "
                                                    "tables are accepted).")
    for i in infos:
        ratio = i.file_size / max(i.compress_size, 1)
        if i.file_size > 2**20 and ratio > limits.MAX_XLSX_RATIO:
            raise ResourceLimitError(
                f"The part '{i.filename[:80]}' of the Excel file is compressed {ratio:,.0f} times, over the limit of "
                f"{limits.MAX_XLSX_RATIO:,} (a compression ratio this high is the mark of a zip bomb).",
                hint="Save the table as CSV or Parquet.")


# ---------------------------------------------------------------------------
# Parquet, and the cells of any decoded table
# ---------------------------------------------------------------------------


def _usable_arrow_type(t: Any) -> bool:
    import pyarrow.types as pt

    if pt.is_dictionary(t):
        return bool(pt.is_string(t.value_type) or pt.is_large_string(t.value_type))
    return bool(pt.is_null(t) or pt.is_boolean(t) or pt.is_integer(t) or pt.is_floating(t) or pt.is_decimal(t)
                or pt.is_string(t) or pt.is_large_string(t) or pt.is_temporal(t))


def check_parquet_metadata(parquet_file: Any) -> None:
    """Refuse a Parquet file from its footer, before any column is read: more rows than ``MAX_ROWS``,
    more columns than ``MAX_COLUMNS``, or columns whose type the engine cannot use (lists, structs,
    maps, binary, dictionaries of anything but text, …) — a :class:`DataError` naming each such
    column and its type."""
    meta, schema = parquet_file.metadata, parquet_file.schema_arrow
    if len(schema) > limits.MAX_COLUMNS:
        raise ResourceLimitError(f"The table has {len(schema):,} columns, over the {limits.MAX_COLUMNS:,} column "
                                 "limit.", hint="Keep only the id, measure and grouping columns.")
    if meta.num_rows > limits.MAX_ROWS:
        raise ResourceLimitError(f"The table has {meta.num_rows:,} rows, over the {limits.MAX_ROWS:,} row limit.",
                                 hint="Sample the rows before uploading.")
    bad = [f"{f.name[:60]} ({str(f.type)[:60]})" for f in schema if not _usable_arrow_type(f.type)]
    if bad:
        shown = ", ".join(bad[:8]) + (f" and {len(bad) - 8} more" if len(bad) > 8 else "")
        raise DataError(f"Columns of a type the app cannot use: {shown}.",
                        hint="Keep columns of numbers, text, booleans or dates: flatten or drop nested (list, struct, "
                             "map) and binary columns before saving the file.")


def check_frame_cells(df: Any) -> None:
    """Refuse a decoded table (Parquet, .xlsx) with a text cell longer than ``MAX_CELL_BYTES``
    characters. Text columns stored by Arrow are measured without creating Python strings."""
    import pandas as pd

    limit = limits.MAX_CELL_BYTES
    for c in df.columns:
        s = df[c]
        if isinstance(s.dtype, pd.StringDtype):
            longest = s.str.len().max()
            longest = 0 if pd.isna(longest) else int(longest)
        elif s.dtype == object:
            longest = max((len(v) for v in s.to_numpy() if isinstance(v, str)), default=0)
        else:
            continue
        if longest > limit:
            raise ResourceLimitError(f"A cell of column '{str(c)[:60]}' holds {longest:,} characters, over the cell "
                                     f"size limit of {limit:,}.",
                                     hint="A table cell holds a number, a code or a short label: remove long free "
                                          "text.")
