"""Loading tables: files and uploads (delimited text, Parquet, Excel, SAS, Stata, SPSS) into DataFrames.

:func:`load_table` reads bytes or a path, checks the file's size, kind and shape before parsing
(:mod:`prdp_core.data.filelimits`; SAS, Stata and SPSS files from their header, :mod:`prdp_core.data.statfiles`),
decodes text robustly (UTF-8, UTF-16, cp1252; sniffed delimiters) and normalises the column names; it raises
only :class:`~prdp_core.core.errors.PrdpError` with a message saying what to fix. :func:`preview` gives the
first rows with long cells shortened.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
from pathlib import Path
from typing import IO

import pandas as pd

from ..core import limits
from ..core.errors import DataError, PrdpError, ResourceLimitError
from . import filelimits, statfiles, xlsxscan

#: File types the loader reads, by extension.
SUPPORTED_EXTENSIONS = {
    ".csv": "text",
    ".tsv": "text",
    ".tab": "text",
    ".txt": "text",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".xlsx": "excel",
    **{ext: "stat" for ext in statfiles.STAT_EXTENSIONS},
}

#: The formats the loader reads, as messages name them.
FORMATS_TEXT = "CSV, TSV, Parquet, Excel (.xlsx), SAS (.sas7bdat, .xpt), Stata (.dta) or SPSS (.sav)"

#: Name of the id column added when a table has no record id.
GENERATED_ID = "row_id"

_PARQUET_MAGIC = b"PAR1"
_ZIP_MAGIC = b"PK\x03\x04"
_OLE_MAGIC = b"\xd0\xcf\x11\xe0"  # legacy .xls / .doc


def _read_bytes(path_or_buffer: str | os.PathLike | bytes | IO[bytes], max_bytes: int) -> tuple[bytes, str | None]:
    """Return the raw bytes and, for paths, the file name. Enforces the size limit."""
    name: str | None = None
    if isinstance(path_or_buffer, (bytes, bytearray, memoryview)):
        data = bytes(path_or_buffer)
    elif isinstance(path_or_buffer, (str, os.PathLike)):
        p = Path(path_or_buffer)
        name = p.name
        try:
            size = p.stat().st_size
        except OSError as exc:
            raise DataError(f"Cannot open '{p}': {exc.strerror or exc}.", hint="Check the path.") from None
        if p.is_dir():
            raise DataError(f"'{p}' is a folder, not a file.", hint="Choose a data file.")
        if size > max_bytes:
            raise _too_large(size, max_bytes)
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise DataError(f"Cannot read '{p}': {exc.strerror or exc}.") from None
    else:
        name = getattr(path_or_buffer, "name", None)
        try:
            if hasattr(path_or_buffer, "seek"):
                path_or_buffer.seek(0)
            data = path_or_buffer.read(max_bytes + 1)
        except Exception as exc:  # a foreign file-like object: translate whatever it raises
            raise DataError(f"Cannot read the uploaded file: {exc}.") from None
        if isinstance(data, str):
            data = data.encode("utf-8")
        if not isinstance(data, (bytes, bytearray)):
            raise DataError("The uploaded object did not return bytes.", hint="Upload a data file.")
        data = bytes(data)
    if len(data) > max_bytes:
        raise _too_large(len(data), max_bytes)
    return data, (Path(name).name if name else None)


def _too_large(size: int, max_bytes: int) -> ResourceLimitError:
    return ResourceLimitError(
        f"The file is {size / 2**20:.1f} MB, over the {max_bytes / 2**20:.0f} MB limit.",
        hint="Keep only the columns you need, sample rows, or save it as Parquet (smaller).",
    )


def _kind_from(filename: str | None, data: bytes) -> tuple[str, str]:
    """The reader of a file (text, parquet, excel, stat) and the extension it reads it as."""
    ext = Path(filename).suffix.lower() if filename else ""
    found = statfiles.extension_of_content(data)
    if ext in SUPPORTED_EXTENSIONS:
        if found and SUPPORTED_EXTENSIONS[ext] != "stat":
            raise DataError(f"The file is named '{ext}' but holds a {statfiles.STAT_EXTENSIONS[found]} table.",
                            hint=f"Give it the {found} extension.")
        return SUPPORTED_EXTENSIONS[ext], ext
    if found:
        return "stat", found
    if ext == ".xls" or data[:4] == _OLE_MAGIC:
        raise DataError(
            "Legacy Excel (.xls) files are not supported.",
            hint="Open it in a spreadsheet program and save it as .xlsx or .csv.",
        )
    if ext and ext not in ("",):
        # Unknown extension: trust the content if it is unambiguous, otherwise refuse.
        if data[:4] == _PARQUET_MAGIC:
            return "parquet", ".parquet"
        if data[:4] == _ZIP_MAGIC and ext != ".zip":
            raise DataError(
                f"Files of type '{ext}' are not supported.",
                hint=f"Upload {FORMATS_TEXT}.",
            )
        if _looks_binary(data):
            raise DataError(
                f"Files of type '{ext}' are not supported (the content is binary).",
                hint=f"Upload {FORMATS_TEXT}.",
            )
        raise DataError(
            f"Files of type '{ext}' are not supported.",
            hint=f"Upload {FORMATS_TEXT}; rename a text table to .csv if that is what it is.",
        )
    if data[:4] == _PARQUET_MAGIC:
        return "parquet", ".parquet"
    if data[:4] == _ZIP_MAGIC:
        return "excel", ".xlsx"
    return "text", ".csv"


def _looks_binary(data: bytes) -> bool:
    head = data[:8192]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False  # UTF-16 with BOM
    return b"\x00" in head


#: Characters of a text table the delimiter is sniffed from.
_HEAD_CHARS = 65_536
#: Bytes decoded at once when checking a text table's encoding (no decoded copy of a file is kept).
_DECODE_PIECE = 1 << 20


def _decode(data: bytes) -> tuple[str, str, bool]:
    """The encoding of text bytes (UTF-16 with a byte-order mark, UTF-8 or Windows-1252), the first
    65,536 characters, and whether the text is blank. The bytes are decoded in 1 MB pieces that are
    not kept: the parser reads the bytes itself. Raises DataError when they are not text."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            raise DataError("The file claims to be UTF-16 text but cannot be decoded.",
                            hint="Re-save it as UTF-8 CSV.") from None
        return "utf-16", text[:_HEAD_CHARS], not text or text.isspace()
    if _looks_binary(data):
        raise DataError(
            "The file is not readable text (it contains binary bytes).",
            hint="Upload a CSV/TSV text file, or a Parquet or .xlsx file with the right extension.",
        )
    for encoding, codec in (("utf-8", "utf-8-sig"), ("cp1252", "cp1252")):
        decoder = codecs.getincrementaldecoder(codec)()
        head, blank, pos = "", True, 0
        try:
            for pos in range(0, max(len(data), 1), _DECODE_PIECE):
                piece = decoder.decode(data[pos:pos + _DECODE_PIECE], final=pos + _DECODE_PIECE >= len(data))
                if len(head) < _HEAD_CHARS:
                    head += piece[:_HEAD_CHARS - len(head)]
                blank = blank and (not piece or piece.isspace())
        except UnicodeDecodeError as exc:
            if encoding == "utf-8":
                continue
            raise DataError(
                f"The text cannot be decoded (neither UTF-8 nor Windows-1252; bad byte at position {pos + exc.start}).",
                hint="Re-save the file as UTF-8 CSV.",
            ) from None
        return encoding, head, blank
    raise AssertionError("unreachable: Windows-1252 either decodes or raises")


def _sniff_delimiter(text: str, filename: str | None) -> str:
    ext = Path(filename).suffix.lower() if filename else ""
    default = "\t" if ext in (".tsv", ".tab") else ","
    sample = text[:65536]
    lines = [ln for ln in sample.splitlines() if ln.strip()][:50]
    if not lines:
        return default
    try:
        dialect = csv.Sniffer().sniff("\n".join(lines), delimiters=",;\t|")
        delim = dialect.delimiter
    except csv.Error:
        delim = default
    # The sniffer can pick a delimiter that never splits the header: fall back to counting.
    if delim not in lines[0]:
        counts = {d: lines[0].count(d) for d in ",;\t|"}
        best = max(counts, key=lambda d: counts[d])
        delim = best if counts[best] > 0 else default
    return delim


#: The codec the table parser reads each detected encoding with (a UTF-8 byte-order mark is dropped).
_PARSER_ENCODING = {"utf-8": "utf-8-sig", "cp1252": "cp1252", "utf-16": "utf-16"}


def _read_text(data: bytes, filename: str | None) -> pd.DataFrame:
    """Parse a text table after the checks of :mod:`prdp_core.data.filelimits` (header, largest cell).

    The parser reads the bytes (not a decoded copy) and stops one row past the row limit."""
    encoding, head, blank = _decode(data)
    if blank:
        raise DataError("The file contains no data (only blank lines).", hint="Upload a table with a header row.")
    delim = _sniff_delimiter(head, filename)
    ascii_compatible = data.decode("utf-16").encode("utf-8") if encoding == "utf-16" else data
    filelimits.check_text_header(ascii_compatible, delim)
    filelimits.check_text_cells(ascii_compatible, delim)
    del ascii_compatible
    try:
        df = pd.read_csv(io.BytesIO(data), sep=delim, engine="c", low_memory=False, skipinitialspace=True,
                         encoding=_PARSER_ENCODING[encoding], nrows=limits.MAX_ROWS + 1)
    except pd.errors.EmptyDataError:
        raise DataError("The file contains no columns.", hint="Upload a table with a header row.") from None
    except pd.errors.ParserError as exc:
        msg = str(exc).strip().split("\n")[0]
        m = re.search(r"line (\d+)", msg)
        where = f" (around line {m.group(1)})" if m else ""
        raise DataError(
            f"The rows do not all have the same number of fields{where}: {msg}",
            hint="Check for stray delimiters or unquoted text containing the delimiter.",
        ) from None
    except (ValueError, OverflowError, UnicodeError, MemoryError) as exc:
        raise DataError(f"The text could not be read as a table: {exc}.") from None
    df.attrs["prdp_encoding"] = encoding
    df.attrs["prdp_delimiter"] = delim
    return df


def _read_parquet(data: bytes) -> pd.DataFrame:
    """Read a Parquet file after checking its footer (rows, columns, column types) and before
    returning its text cells (cell size)."""
    import pyarrow.parquet as pq

    try:
        filelimits.check_parquet_metadata(pq.ParquetFile(io.BytesIO(data)))
        df = pd.read_parquet(io.BytesIO(data))
    except PrdpError:
        raise
    except Exception as exc:  # pyarrow raises many types; all mean "not a usable parquet file"
        raise DataError(f"The Parquet file could not be read: {_short(exc)}.",
                        hint="Check that it is a valid, uncorrupted Parquet file.") from None
    filelimits.check_frame_cells(df)
    return df


def _read_excel(data: bytes) -> pd.DataFrame:
    """Read the first sheet of an .xlsx file after checking its zip directory (parts, uncompressed
    size, compression ratios) and what its sheets and shared strings hold (cells, rows, grid, strings,
    whatever the declared dimension says); the reader stops one row past the row limit."""
    filelimits.check_xlsx_archive(data)
    import openpyxl

    book = None
    try:
        xlsxscan.check_xlsx_content(data)
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
        if not book.worksheets:
            raise DataError("The Excel file has no worksheet.", hint="Put the table on the first sheet.")
        df = pd.read_excel(book, sheet_name=0, engine="openpyxl", nrows=limits.MAX_ROWS + 1)
    except PrdpError:
        raise
    except Exception as exc:  # openpyxl/zipfile raise many types
        raise DataError(f"The Excel file could not be read: {_short(exc)}.",
                        hint="Save it as .xlsx (first sheet holds the table) or export it as CSV.") from None
    finally:
        if book is not None:
            book.close()
    filelimits.check_frame_cells(df)
    return df


def _short(exc: BaseException, limit: int = 200) -> str:
    s = str(exc).strip().split("\n")[0] or type(exc).__name__
    return s[:limit]


def _normalise_columns(df: pd.DataFrame) -> pd.DataFrame:
    cols = []
    seen: dict[str, int] = {}
    for i, c in enumerate(df.columns):
        name = str(c).strip() or f"column_{i + 1}"
        if name in seen:
            seen[name] += 1
            name = f"{name}_{seen[name]}"
        else:
            seen[name] = 0
        cols.append(name)
    df.columns = cols
    return df


def load_table(
    path_or_buffer: str | os.PathLike | bytes | IO[bytes],
    *,
    filename: str | None = None,
    max_bytes: int | None = None,
    guard: statfiles.Guard | None = None,
) -> pd.DataFrame:
    """Load a CSV/TSV (delimiter sniffed), Parquet, Excel (.xlsx), SAS (.sas7bdat, .xpt), Stata (.dta) or SPSS
    (.sav, .zsav) table.

    Parameters
    ----------
    path_or_buffer:
        A path, raw bytes, or a binary file-like object (e.g. a Streamlit upload).
    filename:
        Name used to pick the format when the buffer has none (``"data.tsv"``).
    max_bytes:
        Size limit; defaults to :data:`prdp_core.core.limits.MAX_UPLOAD_MB`.
    guard:
        The route's memory guard (:func:`prdp_core.data.memory.guard_table`): a SAS, Stata or SPSS file's rows ×
        columns are submitted to it from the file's header, before its records are parsed.

    Returns a DataFrame with unique, stripped column names. Only
    :class:`~prdp_core.core.errors.PrdpError` subclasses are raised: unsupported type,
    empty file, undecodable text, ragged rows, over-size files, too many columns.
    """
    limit = limits.max_upload_bytes() if max_bytes is None else int(max_bytes)
    try:
        data, name_from_source = _read_bytes(path_or_buffer, limit)
        name = filename or name_from_source
        if len(data) == 0:
            raise DataError("The file is empty (0 bytes).", hint="Upload a file that contains a table.")
        kind, ext = _kind_from(name, data)
        if kind == "text":
            df = _read_text(data, name)
        elif kind == "parquet":
            df = _read_parquet(data)
        elif kind == "stat":
            df = statfiles.read_stat_file(data, ext, guard)
        else:
            df = _read_excel(data)
        df = _normalise_columns(df)
        if df.shape[1] == 0:
            raise DataError("The table has no columns.", hint="Upload a table with a header row.")
        if df.shape[1] > limits.MAX_COLUMNS:
            raise ResourceLimitError(
                f"The table has {df.shape[1]:,} columns, over the {limits.MAX_COLUMNS:,} column limit.",
                hint="Keep only the id, measure and grouping columns.",
            )
        if len(df) == 0:
            raise DataError("The table has a header but no data rows.", hint="Upload a table with at least one row.")
        if len(df) > limits.MAX_ROWS:
            raise ResourceLimitError(
                f"The table has {len(df):,} rows, over the {limits.MAX_ROWS:,} row limit.",
                hint="Sample the rows before uploading.",
            )
        df.attrs["prdp_source"] = name or "uploaded table"
        return df
    except PrdpError:
        raise
    except MemoryError:
        raise ResourceLimitError("The table does not fit in memory.", hint="Sample rows or drop columns.") from None
    except Exception as exc:  # last line of defence: nothing but PrdpError escapes
        raise DataError(f"The file could not be read: {_short(exc)}.",
                        hint=f"Upload {FORMATS_TEXT}.") from None


def preview(df: pd.DataFrame, rows: int = 20) -> pd.DataFrame:
    """The first ``rows`` rows of a table for display: a text cell longer than
    :data:`~prdp_core.core.limits.MAX_PREVIEW_CHARS` characters is cut there and ends with "…", so a
    preview stays small whatever a file holds."""
    limit = limits.MAX_PREVIEW_CHARS
    head = df.head(rows).copy()
    for c in range(head.shape[1]):
        col = head.iloc[:, c]
        if col.dtype == object or pd.api.types.is_string_dtype(col):
            head.isetitem(c, col.map(lambda v: v[:limit] + "…" if isinstance(v, str) and len(v) > limit else v).array)
    return head
