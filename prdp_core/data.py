"""Data intake: files into validated tables, and the schema that gives columns their roles.

A dataset for PrDP Explorer is a table of *records* (the privacy units: an
establishment, an account, a person). Its columns play one of four roles:

* **record id** – identifies a record; generated from the row number when absent.
* **measures** – non-negative numbers the privacy loss is about (employment,
  payroll, balance). Per-record policies are functions of these values, so they
  are confidential.
* **groups** – conditional attributes used in filters and group-by keys (county,
  industry). In unit splitting they are copied to every split piece.
* **owner** – optional id of an entity owning several records (a firm owning
  establishments); owner-level losses follow from group privacy.

Entry points: :func:`load_table` (bytes/paths → DataFrame, raising only
:class:`~prdp_core.errors.PrdpError`), :func:`guess_schema`, :func:`check_table`
and :func:`prepare_dataset` (a checked :class:`Dataset` the rest of the engine uses).
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Callable, Hashable, Iterable, Literal, Mapping

import numpy as np
import pandas as pd

from . import filelimits, limits
from .codes import code_fixed_width
from .errors import DataError, PrdpError, ResourceLimitError, SchemaError

#: File types the loader reads, by extension.
SUPPORTED_EXTENSIONS = {
    ".csv": "text",
    ".tsv": "text",
    ".tab": "text",
    ".txt": "text",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".xlsx": "excel",
}

#: Name of the id column added when a table has no record id.
GENERATED_ID = "row_id"

_PARQUET_MAGIC = b"PAR1"
_ZIP_MAGIC = b"PK\x03\x04"
_OLE_MAGIC = b"\xd0\xcf\x11\xe0"  # legacy .xls / .doc


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


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


def _kind_from(filename: str | None, data: bytes) -> str:
    ext = Path(filename).suffix.lower() if filename else ""
    if ext in SUPPORTED_EXTENSIONS:
        return SUPPORTED_EXTENSIONS[ext]
    if ext == ".xls" or data[:4] == _OLE_MAGIC:
        raise DataError(
            "Legacy Excel (.xls) files are not supported.",
            hint="Open it in a spreadsheet program and save it as .xlsx or .csv.",
        )
    if ext and ext not in ("",):
        # Unknown extension: trust the content if it is unambiguous, otherwise refuse.
        if data[:4] == _PARQUET_MAGIC:
            return "parquet"
        if data[:4] == _ZIP_MAGIC and ext != ".zip":
            raise DataError(
                f"Files of type '{ext}' are not supported.",
                hint="Upload CSV, TSV, Parquet or Excel (.xlsx).",
            )
        if _looks_binary(data):
            raise DataError(
                f"Files of type '{ext}' are not supported (the content is binary).",
                hint="Upload CSV, TSV, Parquet or Excel (.xlsx).",
            )
        raise DataError(
            f"Files of type '{ext}' are not supported.",
            hint="Upload CSV, TSV, Parquet or Excel (.xlsx); rename a text table to .csv if that is what it is.",
        )
    if data[:4] == _PARQUET_MAGIC:
        return "parquet"
    if data[:4] == _ZIP_MAGIC:
        return "excel"
    return "text"


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
        best = max(counts, key=counts.get)
        delim = best if counts[best] > 0 else default
    return delim


#: The codec the table parser reads each detected encoding with (a UTF-8 byte-order mark is dropped).
_PARSER_ENCODING = {"utf-8": "utf-8-sig", "cp1252": "cp1252", "utf-16": "utf-16"}


def _read_text(data: bytes, filename: str | None) -> pd.DataFrame:
    """Parse a text table after the checks of :mod:`prdp_core.filelimits` (header, largest cell).

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
    size, compression ratios) and its declared dimension; the reader stops one row past the row limit."""
    filelimits.check_xlsx_archive(data)
    import openpyxl

    book = None
    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
        if not book.worksheets:
            raise DataError("The Excel file has no worksheet.", hint="Put the table on the first sheet.")
        filelimits.check_xlsx_sheet(book.worksheets[0])
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
) -> pd.DataFrame:
    """Load a CSV/TSV (delimiter sniffed), Parquet or Excel (.xlsx) table.

    Parameters
    ----------
    path_or_buffer:
        A path, raw bytes, or a binary file-like object (e.g. a Streamlit upload).
    filename:
        Name used to pick the format when the buffer has none (``"data.tsv"``).
    max_bytes:
        Size limit; defaults to :data:`prdp_core.limits.MAX_UPLOAD_MB`.

    Returns a DataFrame with unique, stripped column names. Only
    :class:`~prdp_core.errors.PrdpError` subclasses are raised: unsupported type,
    empty file, undecodable text, ragged rows, over-size files, too many columns.
    """
    limit = limits.max_upload_bytes() if max_bytes is None else int(max_bytes)
    try:
        data, name_from_source = _read_bytes(path_or_buffer, limit)
        name = filename or name_from_source
        if len(data) == 0:
            raise DataError("The file is empty (0 bytes).", hint="Upload a file that contains a table.")
        kind = _kind_from(name, data)
        if kind == "text":
            df = _read_text(data, name)
        elif kind == "parquet":
            df = _read_parquet(data)
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
                        hint="Upload CSV, TSV, Parquet or Excel (.xlsx).") from None


def preview(df: pd.DataFrame, rows: int = 20) -> pd.DataFrame:
    """The first ``rows`` rows of a table for display: a text cell longer than
    :data:`~prdp_core.limits.MAX_PREVIEW_CHARS` characters is cut there and ends with "…", so a
    preview stays small whatever a file holds."""
    limit = limits.MAX_PREVIEW_CHARS
    head = df.head(rows).copy()
    for c in range(head.shape[1]):
        col = head.iloc[:, c]
        if col.dtype == object or pd.api.types.is_string_dtype(col):
            head.isetitem(c, col.map(lambda v: v[:limit] + "…" if isinstance(v, str) and len(v) > limit else v).array)
    return head


# ---------------------------------------------------------------------------
# Schema
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Schema:
    """Roles of the columns of a table.

    Attributes
    ----------
    id_col:
        Record id column (the privacy unit). ``None`` means "generate one from the row number".
    measures:
        Numeric, non-negative columns the privacy policy is about. Their per-record
        values are confidential; policies such as splitting thresholds act on them.
    groups:
        Conditional attributes (filters, group-by keys); copied to every split piece.
    owner_col:
        Optional id of an owner of several records (a firm owning establishments);
        owner-level losses follow from group privacy.
    """

    id_col: str | None = None
    measures: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    owner_col: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "measures", tuple(self.measures))
        object.__setattr__(self, "groups", tuple(self.groups))

    def columns(self) -> list[str]:
        cols = [c for c in (self.id_col, self.owner_col) if c]
        return cols + list(self.measures) + [g for g in self.groups if g not in cols]

    def to_dict(self) -> dict[str, Any]:
        return {"id_col": self.id_col, "measures": list(self.measures), "groups": list(self.groups),
                "owner_col": self.owner_col}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Schema":
        return cls(id_col=d.get("id_col"), measures=tuple(d.get("measures") or ()),
                   groups=tuple(d.get("groups") or ()), owner_col=d.get("owner_col"))


_ID_NAME = re.compile(r"(^|[_\s.-])(id|key|uid|record|recid|estab_?id)$|^id[_\s]", re.IGNORECASE)
_OWNER_NAME = re.compile(r"firm|owner|company|employer|parent|household|hh_?id|user|customer|agency|org", re.IGNORECASE)
_CODE_NAME = re.compile(r"code|naics|fips|zip|postal|year|month|cat|class|type|level|state|county|region|sector",
                        re.IGNORECASE)


def _numeric_share(s: pd.Series) -> float:
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        return 1.0
    sample = s.dropna()
    if len(sample) == 0:
        return 0.0
    sample = sample.iloc[:2000]
    conv = pd.to_numeric(sample, errors="coerce")
    return float(conv.notna().mean())


def numeric_columns(df: pd.DataFrame, *, min_share: float = 0.5) -> list[str]:
    """Columns whose (non-missing) values are mostly numbers — the candidates for measures.

    ``min_share`` is the share of numeric cells a column needs; a column with a few cells that
    are not numbers still counts (the Data page offers to treat those as missing)."""
    return [c for c in df.columns
            if not pd.api.types.is_bool_dtype(df[c]) and _numeric_share(df[c]) >= min_share]


#: Names that R, pandas and spreadsheets give a column of row numbers ("" is read as "Unnamed: 0").
_ROW_NUMBER_NAME = re.compile(r"^(rownames|row[._ ]?names|row[._ ]?(num|number|no)|index|unnamed: ?0|\.\.\.1)$",
                              re.IGNORECASE)
#: A table with more measure candidates than this starts with only its most skewed non-negative ones
#: selected as measures (the others are offered in the role editor, not chosen for the user).
MAX_GUESSED_MEASURES = 3


def _is_row_number(name: str, s: pd.Series) -> bool:
    """A row-number column: a row-number name and unique consecutive integers, none missing."""
    if not _ROW_NUMBER_NAME.match(str(name).strip()) or len(s) == 0 or s.isna().any():
        return False
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return False
    v = s.to_numpy(dtype="float64")
    return bool(np.isfinite(v).all() and (v == np.floor(v)).all() and s.is_unique
                and v.max() - v.min() == len(v) - 1)


def _most_skewed(df: pd.DataFrame, candidates: list[str], k: int) -> list[str]:
    """The ``k`` most skewed candidates without negative values (in table order); the single most
    skewed candidate when every one has negative values (check_table then offers a shift)."""
    skew: dict[str, float] = {}
    nonneg: list[str] = []
    for c in candidates:
        v = pd.to_numeric(df[c], errors="coerce").dropna()
        sk = float(v.skew()) if len(v) > 2 else float("nan")
        skew[c] = sk if np.isfinite(sk) else -np.inf
        if len(v) and float(v.min()) >= 0:
            nonneg.append(c)
    pool = nonneg or candidates
    chosen = set(sorted(pool, key=lambda c: -skew[c])[: k if nonneg else 1])
    return [c for c in candidates if c in chosen]


def _distinct_counts(df: pd.DataFrame) -> dict[str, int]:
    """The number of distinct non-missing values of each column. Columns whose values cannot be
    compared (lists, mappings, arrays: nested data, which no role can use) are refused with a
    :class:`DataError` naming them and the type of their values."""
    counts: dict[str, int] = {}
    bad: list[str] = []
    for c in df.columns:
        binary = df[c].dtype == object and next(
            (type(v).__name__ for v in df[c].dropna().head(1000) if isinstance(v, (bytes, bytearray, memoryview))), None)
        if binary:
            bad.append(f"{str(c)[:60]} ({binary} values)")
            continue
        try:
            counts[c] = int(df[c].nunique(dropna=True))
        except TypeError:
            kind = next((type(v).__name__ for v in df[c].to_numpy() if not isinstance(v, Hashable)), "object")
            bad.append(f"{str(c)[:60]} ({kind} values)")
    if bad:
        raise DataError(f"Columns of a type the app cannot use: {', '.join(bad[:8])}"
                        f"{f' and {len(bad) - 8} more' if len(bad) > 8 else ''}.",
                        hint="Keep columns of numbers, text, booleans or dates: flatten or drop nested columns.")
    return counts


def guess_schema(df: pd.DataFrame) -> Schema:
    """Guess column roles from names and content; every guess is editable in the UI.

    * id: an id-like name with unique values; else a row-number column (``rownames``, ``index``,
      ``Unnamed: 0``… holding unique consecutive integers); else none → generated row ids. A
      row-number column is never a measure;
    * owner: an owner-like name (firm, company, user, …) with repeated values;
    * measures: numeric columns that are not ids/codes (negative values are flagged by
      :func:`check_table`, not guessed away); on a wide table (more than
      :data:`MAX_GUESSED_MEASURES` candidates) only the most skewed non-negative ones;
    * groups: the remaining columns with few distinct values (≤ 5,000 or ≤ 50% of rows).

    A table with columns of lists, records or binary values (Parquet list, struct, map, binary)
    is refused with a :class:`DataError` naming them: they can play no role.
    """
    n = len(df)
    distinct = _distinct_counts(df)
    id_col: str | None = None
    owner_col: str | None = None
    row_numbers = [c for c in df.columns if _is_row_number(c, df[c])]
    for c in df.columns:
        s = df[c]
        if id_col is None and _ID_NAME.search(c) and not _OWNER_NAME.search(c):
            if s.notna().all() and distinct[c] == n:
                id_col = c
                continue
        if owner_col is None and _OWNER_NAME.search(c) and n > 1:
            nun = distinct[c]
            if 1 < nun < n:
                owner_col = c
    if id_col is None and row_numbers:
        id_col = row_numbers[0]
    candidates: list[str] = []
    groups: list[str] = []
    for c in df.columns:
        if c in (id_col, owner_col) or c in row_numbers:
            continue
        s = df[c]
        nun = distinct[c]
        is_num = _numeric_share(s) >= 0.99
        codeish = bool(_CODE_NAME.search(c))
        if is_num and not codeish and not pd.api.types.is_bool_dtype(s) and nun > 2:
            candidates.append(c)  # negative values are flagged later by check_table, with fixes offered
            continue
        if nun <= max(2, min(5000, n // 2)) and nun >= 1:
            groups.append(c)
    measures = candidates if len(candidates) <= MAX_GUESSED_MEASURES else \
        _most_skewed(df, candidates, MAX_GUESSED_MEASURES)
    return Schema(id_col=id_col, measures=tuple(measures), groups=tuple(groups), owner_col=owner_col)


def validate_schema(df: pd.DataFrame, schema: Schema) -> None:
    """Check that the schema fits the table; raise :class:`SchemaError` naming the fix."""
    validate_roles(df.columns, schema, lambda: bool(numeric_columns(df)))


def validate_roles(columns: Iterable[Any], schema: Schema, has_numeric: Callable[[], bool]) -> None:
    """:func:`validate_schema` on a table's column names (``has_numeric()``: does some column hold
    numbers?) — for tables held by an engine too."""
    cols = set(columns)
    named = [("record id", schema.id_col), ("owner", schema.owner_col)]
    named += [("measure", m) for m in schema.measures] + [("group", g) for g in schema.groups]
    missing = [f"{role} '{c}'" for role, c in named if c is not None and c not in cols]
    if missing:
        raise SchemaError(f"Columns not in the table: {', '.join(missing)}.", hint="Pick columns that exist.")
    if not schema.measures:
        if not has_numeric():
            raise SchemaError(
                "The table has no numeric column: a measure (the values the privacy policy is about) must hold "
                "numbers.",
                hint="Upload a table with at least one numeric column; if the numbers are there, check the "
                     "delimiter and write them without thousands separators or units (1234.5, not 1,234.50 €).")
        raise SchemaError("Choose at least one measure column (the numeric values the privacy policy is about).")
    seen: dict[str, str] = {}
    for role, c in named:
        if c is None:
            continue
        # an owner (e.g. a state owning counties) may also be a group-by key; other roles are exclusive
        if c in seen and {seen[c], role} != {"owner", "group"}:
            raise SchemaError(f"Column '{c}' is both {seen[c]} and {role}.", hint="Give each column one role.")
        seen[c] = role
    if len(set(schema.measures)) != len(schema.measures):
        raise SchemaError("A measure column is listed twice.")
    if len(set(schema.groups)) != len(schema.groups):
        raise SchemaError("A group column is listed twice.")


# ---------------------------------------------------------------------------
# Checks and preparation
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MeasureIssue:
    """What is wrong with one measure column."""

    column: str
    non_numeric: int = 0
    non_numeric_examples: tuple[str, ...] = ()
    missing: int = 0  # NaN / empty cells
    infinite: int = 0
    negative: int = 0
    minimum: float = float("nan")


@dataclass(frozen=True)
class TableCheck:
    """Everything :func:`prepare_dataset` would refuse, counted, so a UI can offer fixes."""

    n_rows: int
    measures: tuple[MeasureIssue, ...]
    rows_with_missing: int  # rows with a NaN/empty/inf value in some measure
    rows_with_bad: int  # rows that would be dropped if non-numeric cells were treated as missing too
    duplicate_ids: int
    duplicate_id_examples: tuple[str, ...] = ()
    missing_ids: int = 0
    missing_groups: dict[str, int] = field(default_factory=dict)  # group column → missing cells

    @property
    def non_numeric(self) -> dict[str, int]:
        return {m.column: m.non_numeric for m in self.measures if m.non_numeric}

    @property
    def negative(self) -> dict[str, int]:
        return {m.column: m.negative for m in self.measures if m.negative}

    @property
    def ok(self) -> bool:
        return (self.rows_with_missing == 0 and not self.negative and not self.non_numeric
                and self.duplicate_ids == 0 and self.missing_ids == 0 and not self.missing_groups)


def _coerce_measure(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Return float values and a mask of cells that were present but not numbers."""
    if pd.api.types.is_bool_dtype(s):
        vals = s.astype("float64").to_numpy()
        return vals, np.zeros(len(s), dtype=bool)
    if pd.api.types.is_numeric_dtype(s):
        return s.to_numpy(dtype="float64", na_value=np.nan), np.zeros(len(s), dtype=bool)
    conv = pd.to_numeric(s, errors="coerce")
    vals = conv.to_numpy(dtype="float64", na_value=np.nan)
    present = s.notna().to_numpy().copy()
    if s.dtype == object or pd.api.types.is_string_dtype(s):
        blank = s.astype("string").str.strip().eq("").fillna(False).to_numpy(dtype=bool)
        present &= ~blank
    bad = present & np.isnan(vals)
    return vals, bad


def check_table(df: pd.DataFrame, schema: Schema) -> TableCheck:
    """Count the problems that would stop this table from being used with ``schema``."""
    validate_schema(df, schema)
    issues = []
    row_bad = np.zeros(len(df), dtype=bool)
    row_bad_any = np.zeros(len(df), dtype=bool)
    for m in schema.measures:
        vals, bad = _coerce_measure(df[m])
        nan = np.isnan(vals) & ~bad
        inf = np.isinf(vals)
        neg = vals < 0
        examples = tuple(str(x)[:40] for x in pd.unique(df[m][bad])[:3]) if bad.any() else ()
        finite = vals[np.isfinite(vals)]
        issues.append(MeasureIssue(
            column=m, non_numeric=int(bad.sum()), non_numeric_examples=examples,
            missing=int(nan.sum()), infinite=int(inf.sum()), negative=int(neg.sum()),
            minimum=float(finite.min()) if finite.size else float("nan"),
        ))
        row_bad |= nan | inf
        row_bad_any |= nan | inf | bad
    dup = 0
    dup_examples: tuple[str, ...] = ()
    missing_ids = 0
    if schema.id_col and not strictly_increasing(df[schema.id_col]):  # sorted ids are unique: no hashing
        ids = df[schema.id_col]
        missing_ids = int(ids.isna().sum())
        d = ids.duplicated(keep="first") & ids.notna()
        dup = int(d.sum())
        if dup:
            dup_examples = tuple(str(x)[:40] for x in pd.unique(ids[d])[:3])
    missing_groups = {g: int(_missing_cells(df[g]).sum()) for g in schema.groups}
    return TableCheck(n_rows=len(df), measures=tuple(issues), rows_with_missing=int(row_bad.sum()),
                      rows_with_bad=int(row_bad_any.sum()),
                      duplicate_ids=dup, duplicate_id_examples=dup_examples, missing_ids=missing_ids,
                      missing_groups={g: k for g, k in missing_groups.items() if k})


#: The label given to missing group values by ``prepare_dataset(..., missing_groups="label")``.
MISSING_GROUP = "(missing)"


def strictly_increasing(s: pd.Series) -> bool:
    """True when the values of ``s`` are strictly increasing (so unique and never missing).

    An O(n) comparison of neighbours: the usual sorted id column of a large table is known to be
    unique without hashing every value (hashing ten million text ids takes seconds). Text compares
    by its UTF-8 bytes, numbers as numbers; anything else (or any missing value) answers False,
    and the caller falls back to the full check."""
    n = len(s)
    if n < 2:
        return bool(n == 0 or s.notna().all())
    dt = s.dtype
    if isinstance(dt, pd.StringDtype) and dt.storage == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.array(s.array)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if arr.null_count:
            return False
        return not pc.any(pc.less_equal(arr[1:], arr[:-1])).as_py()
    if pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt):
        v = s.to_numpy()
        if v.dtype.kind not in "iuf":
            return False
        return bool(np.all(v[1:] > v[:-1]))  # NaN compares False
    return False


def _column_values(col: pd.Series) -> Any:
    """A column's values for a new table: text columns keep their (Arrow) array, others become numpy.

    Converting ten million Arrow strings to Python objects and back takes seconds; the values and
    the resulting column dtype are the same either way."""
    if isinstance(col.dtype, pd.StringDtype):
        return col.array
    return col.to_numpy()


def _missing_cells(s: pd.Series) -> np.ndarray:
    """Cells of a group column that are missing (NaN/None) or blank text."""
    miss = s.isna().to_numpy()
    if s.dtype == object or pd.api.types.is_string_dtype(s):
        miss = miss | s.astype("string").str.strip().eq("").fillna(False).to_numpy(dtype=bool)
    return miss


@dataclass(frozen=True)
class Dataset:
    """A checked table ready for the engine.

    ``table`` has the record-id column (``schema.id_col``, generated as ``row_id``
    when the source had none), float64 measures that are finite and non-negative,
    and the group/owner columns as loaded. ``notes`` lists every transformation
    applied (rows dropped, shifts), so reports can say what was done.
    """

    name: str
    table: pd.DataFrame
    schema: Schema
    notes: tuple[str, ...] = field(default_factory=tuple)
    shifts: dict[str, float] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.table)

    def measure(self, name: str) -> np.ndarray:
        return self.table[name].to_numpy()

    def describe(self) -> str:
        return f"{self.name}: {self.n:,} records, measures {', '.join(self.schema.measures)}"


def shift_text(measure: str, constant: float, *, public: bool = True) -> str:
    """How a shifted measure is described everywhere (notes, the Data page's profile):
    ``"SALES shifted by +1,000 (public constant)"``, or ``"… (smallest record: confidential)"`` for the
    shift −min that :func:`prepare_dataset` takes from the data when no constant is declared."""
    how = "public constant" if public else "smallest record: confidential"
    return f"{measure} shifted by +{float(constant):,.15g} ({how})"


def prepare_dataset(
    df: pd.DataFrame,
    schema: Schema,
    *,
    name: str = "dataset",
    non_numeric: Literal["error", "missing"] = "error",
    missing: Literal["error", "drop"] = "error",
    negative: Literal["error", "shift"] = "error",
    duplicate_ids: Literal["error", "regenerate"] = "error",
    shift_by: Mapping[str, float] | None = None,
    missing_groups: Literal["keep", "label"] = "keep",
) -> Dataset:
    """Validate ``df`` against ``schema`` and return a :class:`Dataset`.

    Parameters choose what to do with each kind of bad input (the default refuses):

    * ``non_numeric="missing"`` treats cells that are not numbers as missing;
    * ``missing="drop"`` drops rows with a missing or infinite measure (count noted);
    * ``negative="shift"`` adds a constant to each measure with negative values — the
      papers assume non-negative measures; sums and thresholds are then on the shifted
      scale (the shift is recorded in ``Dataset.shifts``). The constant should be
      **public** (``shift_by={measure: c}``, e.g. a documented lower bound; a declared constant
      is applied to its measure whether or not the data hold a negative value, so the shift
      never depends on a record): a shift
      derived from the data (the default, −min) depends on the smallest record, so removing
      that record would change every released sum — fine for exploring, not for a release;
    * ``duplicate_ids="regenerate"`` replaces the id column by row numbers (if the
      id really names an owner of several records, map it as owner instead);
    * ``missing_groups="label"`` puts missing or blank values of group columns in a group of
      their own, ``"(missing)"`` (kept as missing by default: such a column can filter, but a
      release grouped by it is refused).
    """
    validate_schema(df, schema)
    chk = check_table(df, schema)
    fix = Preparation(non_numeric=non_numeric, missing=missing, negative=negative, duplicate_ids=duplicate_ids,
                      shift_by=shift_by, missing_groups=missing_groups)
    fix.check_non_numeric(chk)
    out = pd.DataFrame(index=df.index)
    bad_rows = np.zeros(len(df), dtype=bool)
    for m in schema.measures:
        vals, bad = _coerce_measure(df[m])
        if bad.any():
            fix.treated_missing(m, int(bad.sum()))
            vals = vals.copy()
            vals[bad] = np.nan
        out[m] = vals
        bad_rows |= ~np.isfinite(vals)
    n_bad = int(bad_rows.sum())
    fix.drop_rows(n_bad, len(df))
    keep = ~bad_rows
    if n_bad:  # copying every column of a large table only to keep all of its rows costs seconds
        base = df.loc[keep]
        out = out.loc[keep]
    else:
        base = df
    for m in schema.measures:
        c = fix.shift(m, float(out[m].min()), lambda m=m: int((out[m] < 0).sum()))
        if c:
            out[m] = out[m] + c
    id_col = fix.id_column(schema, df.columns, chk, lambda: _bad_ids(base[schema.id_col]))
    if fix.generate_ids:
        ids = pd.Series(np.arange(1, len(base) + 1), index=base.index, name=id_col)
    else:
        ids = base[id_col]
    table = pd.DataFrame({id_col: _column_values(ids)})
    if schema.owner_col:
        table[schema.owner_col] = _column_values(base[schema.owner_col])
    for g in schema.groups:
        if g not in table.columns:
            col = base[g]
            if missing_groups == "label":
                miss = _missing_cells(col)
                if miss.any():
                    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
                        # numbers become text ("2009", not "2009.0") so a filter typed as text still matches
                        col = col.map(lambda v: f"{v:g}" if isinstance(v, float) and v.is_integer() and
                                      abs(v) < 1e15 else str(v))
                    col = col.astype(object).where(~miss, MISSING_GROUP)
                    fix.labelled(g, int(miss.sum()))
            table[g] = _column_values(col)
    for m in schema.measures:
        table[m] = out[m].to_numpy(dtype="float64")
    final_schema = replace(schema, id_col=id_col)
    if schema.owner_col:
        code_fixed_width(table, schema.owner_col)  # owner ids coded once, with the table (fast path only)
    return Dataset(name=name, table=table, schema=final_schema, notes=tuple(fix.notes), shifts=fix.shifts)


def _bad_ids(ids: pd.Series) -> tuple[int, tuple[str, ...]]:
    """Duplicate or missing ids (count, up to three duplicated ids as text)."""
    if not (ids.isna().any() or ids.duplicated().any()):
        return 0, ()
    n_dup = int(ids.duplicated().sum()) + int(ids.isna().sum())
    return n_dup, tuple(str(x) for x in pd.unique(ids[ids.duplicated()])[:3])


class Preparation:
    """The decisions of :func:`prepare_dataset`, shared with the engines (which compute the same
    counts where the data lives): each method checks one kind of bad input against the chosen
    option and either raises the :class:`DataError` the user sees or records the fix in ``notes``
    (and ``shifts``), in the order :func:`prepare_dataset` reports them."""

    def __init__(self, *, non_numeric: str = "error", missing: str = "error", negative: str = "error",
                 duplicate_ids: str = "error", shift_by: Mapping[str, float] | None = None,
                 missing_groups: str = "keep") -> None:
        self.non_numeric, self.missing, self.negative = non_numeric, missing, negative
        self.duplicate_ids, self.shift_by, self.missing_groups = duplicate_ids, shift_by, missing_groups
        self.notes: list[str] = []
        self.shifts: dict[str, float] = {}
        self.generate_ids = False

    def check_non_numeric(self, chk: TableCheck) -> None:
        if chk.non_numeric and self.non_numeric == "error":
            first = next(m for m in chk.measures if m.non_numeric)
            ex = ", ".join(repr(x) for x in first.non_numeric_examples)
            raise DataError(
                f"Measure '{first.column}' has {first.non_numeric:,} value(s) that are not numbers (e.g. {ex}).",
                hint="Fix them in the file, pick another measure, or treat them as missing and drop those rows.",
            )

    def treated_missing(self, m: str, count: int) -> None:
        self.notes.append(f"{count:,} non-numeric value(s) in '{m}' treated as missing.")

    def drop_rows(self, n_bad: int, n_rows: int) -> None:
        """Rows with a missing or infinite measure: refused, or dropped (noted); none may be left."""
        if n_bad:
            if self.missing == "error":
                raise DataError(
                    f"{n_bad:,} row(s) have a missing, empty or infinite value in a measure column.",
                    hint="Drop those rows (their count is shown) or fix the file.",
                )
            self.notes.append(f"Dropped {n_bad:,} row(s) with missing or infinite measure values.")
        if n_bad >= n_rows:
            raise DataError("No row is left after dropping rows with missing measure values.",
                            hint="Check the measure columns: they look empty.")

    def shift(self, m: str, mn: float, negatives: Callable[[], int]) -> float:
        """The constant added to measure ``m`` (minimum ``mn`` over the rows kept; ``negatives()``
        counts its negative values), 0 for none."""
        if self.shift_by is not None and m in self.shift_by:
            # a declared public constant is applied whatever the data hold, so whether (and by how
            # much) a measure moves never depends on a record
            c = float(self.shift_by[m])
            hint = "Use a public lower bound of the measure, with the opposite sign."
            if not (np.isfinite(c) and c >= 0):
                raise DataError(f"The shift of '{m}' ({c:g}) must be a finite constant ≥ 0.", hint=hint)
            if c < -mn:
                raise DataError(f"The shift of '{m}' ({c:g}) is too small: some values stay negative.", hint=hint)
            self.shifts[m] = c
            self.notes.append(f"{shift_text(m, c)}: every value of '{m}' has {c:,.15g} added (sums are on the "
                              f"shifted scale: subtract n × {c:,.15g} to return to the original scale).")
            return c
        if mn < 0:
            if self.negative == "error":
                raise DataError(
                    f"Measure '{m}' has {negatives():,} negative value(s) (minimum {mn:g}); per-record policies "
                    "assume non-negative measures.",
                    hint="Reject the file and fix it, or shift the measure by a constant so its minimum is 0.",
                )
            self.shifts[m] = -mn
            self.notes.append(f"{shift_text(m, -mn, public=False)}: its minimum is now 0 (sums are on the shifted "
                              f"scale: subtract n × {-mn:,.15g} to return to the original scale). This shift comes from "
                              "the smallest record and is itself confidential: for a release, shift by a public "
                              "constant.")
            return -mn
        return 0.0

    def id_column(self, schema: Schema, columns: Iterable[Any], chk: TableCheck,
                  bad_ids: Callable[[], tuple[int, tuple[str, ...]]]) -> str:
        """The record id column, and whether ids are generated from row numbers (``generate_ids``).
        ``bad_ids()`` counts duplicate or missing ids among the rows kept (asked only when the whole
        table has some)."""
        id_col = schema.id_col
        if id_col is None:
            self.generate_ids = True
            self.notes.append("Record ids generated from the row number.")
            return GENERATED_ID if GENERATED_ID not in set(map(str, columns)) else "_prdp_row_id"
        if chk.duplicate_ids or chk.missing_ids:  # none in the whole table: none among the rows kept
            n_dup, examples = bad_ids()
            if n_dup:
                if self.duplicate_ids == "error":
                    ex = ", ".join(repr(str(x)) for x in examples)
                    raise DataError(
                        f"The record id column '{id_col}' has {n_dup:,} duplicate or missing value(s)"
                        + (f" (e.g. {ex})." if ex else "."),
                        hint="Choose a unique id, generate ids from row numbers, or — if the column names an owner "
                             "of several records — map it as the owner column instead.",
                    )
                self.generate_ids = True
                self.notes.append(f"Duplicate ids in '{id_col}' replaced by row numbers.")
        return id_col

    def labelled(self, g: str, count: int) -> None:
        self.notes.append(f"{count:,} missing value(s) of group column '{g}' put in the group '{MISSING_GROUP}'.")


def dataset_from_frame(df: pd.DataFrame, schema: Schema | None = None, *, name: str = "dataset",
                       **options: Any) -> Dataset:
    """Shortcut: guess the schema when not given, then :func:`prepare_dataset`."""
    return prepare_dataset(df, schema or guess_schema(df), name=name, **options)


def as_measure_array(values: Iterable[float] | pd.Series | np.ndarray, *, name: str = "values") -> np.ndarray:
    """Return finite, non-negative float values or raise :class:`DataError` naming the problem."""
    try:
        arr = np.asarray(values, dtype="float64")
    except (TypeError, ValueError):
        raise DataError(f"'{name}' must be numbers.") from None
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.size and not np.isfinite(arr).all():
        raise DataError(f"'{name}' contains missing or infinite values.", hint="Drop those records first.")
    if arr.size and (arr < 0).any():
        raise DataError(f"'{name}' contains negative values.", hint="Shift the measure so its minimum is 0.")
    return arr
