"""Tables of statistical packages: SAS (.sas7bdat, .xpt), Stata (.dta) and SPSS (.sav, .zsav).

:func:`read_stat_file` reads such a file from its bytes with pyreadstat, after limits read from its header:

* **Before parsing**, the header (pyreadstat's metadata, which reads no record) gives the number of columns,
  the width of each text column and — except for SAS transport files (.xpt), which do not store it — the
  number of rows. A file over ``MAX_COLUMNS`` columns, ``MAX_ROWS`` rows or with a text column wider than
  ``MAX_CELL_BYTES`` is refused; then the memory guard (:func:`prdp_core.data.memory.guard_table`) is asked
  for rows × columns (a text column counts for one column per 8 bytes of its width), so a compressed file
  (.sav, .zsav, .sas7bdat) whose records would not fit is refused before it is inflated. The rows of an
  .xpt file are bounded by its size (records of fixed width, uncompressed); a .sav file written without its
  row count (some programs do) is read up to the row limit.
* **While parsing**, the reader stops one row past ``MAX_ROWS`` (as the text parser does).
* **In a child process**: the reader is native code that some malformed files crash (a segmentation fault), so
  the header and the records are read by a child process (:mod:`prdp_core.data.statchild`); a file that does
  not begin as its extension's format does is refused before one is started.

The table then reads as its CSV export would (so a study gives the same results from either):

* **Value labels** (Stata, SPSS): a numeric column whose every value has a label becomes a text column of the
  labels — the group names; a column with labels for some codes only (a measure whose 99 is labelled
  "Refused") keeps its numbers.
* **Missing values**: SAS special missing values (``.A``…), Stata's ``.a``…``.z`` and SPSS user-missing codes
  become missing (NaN), as does an empty text value; the checks of the Column roles view then count them.
* **Numbers**: every package stores numbers as doubles; a column whose values are all whole numbers and
  that has no missing value becomes whole numbers (``1``, not ``1.0``), as in a CSV export. Dates become
  dates.

A file that is not what its extension says, truncated or corrupt raises a
:class:`~prdp_core.core.errors.DataError`; nothing else escapes.
"""

from __future__ import annotations

import io
import math
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..core import limits
from ..core.errors import DataError, ResourceLimitError
from . import memory

#: Extensions of the statistical packages' files, and the package that writes each.
STAT_EXTENSIONS = {
    ".sas7bdat": "SAS",
    ".xpt": "SAS transport",
    ".dta": "Stata",
    ".sav": "SPSS",
    ".zsav": "SPSS",
}

_HINT = "Check that the file is a valid {what} file with the right extension, or export the table as CSV."

#: The first bytes of each format (Stata before release 117 has no such mark and is known by its extension).
_SAS7BDAT_MAGIC = b"\x00" * 12 + bytes.fromhex("c2ea8160b31411cfbd92080009c7318c181f1011")
_XPORT_MAGIC = b"HEADER RECORD*******LIB"  # LIBRARY (version 5) or LIBV8 (version 8)
_STATA_MAGIC = b"<stata_dta>"


def extension_of_content(data: bytes) -> str | None:
    """The extension of the statistical format ``data`` is written in, from its first bytes, or None."""
    if data.startswith(_SAS7BDAT_MAGIC):
        return ".sas7bdat"
    if data.startswith(_XPORT_MAGIC):
        return ".xpt"
    if data.startswith(_STATA_MAGIC):
        return ".dta"
    if data.startswith((b"$FL2", b"$FL3")) and b"\x00" in data[:176]:  # the layout code after the product name
        return ".sav" if data.startswith(b"$FL2") else ".zsav"
    return None


def _starts_as(ext: str, data: bytes) -> bool:
    """Whether ``data`` begins as a file of ``ext`` does (Stata before release 117: its release byte, 102 to 115,
    then its byte order, 1 or 2; .sav and .zsav: either SPSS mark)."""
    found = extension_of_content(data)
    if ext in (".sav", ".zsav"):
        return found in (".sav", ".zsav")
    if ext == ".dta" and found is None:
        return len(data) > 2 and 102 <= data[0] <= 115 and data[1] in (1, 2)
    return found == ext


def _reader(ext: str) -> tuple[Callable[..., Any], dict[str, Any]]:
    """The pyreadstat reader of a file's extension and the options it takes besides ``metadataonly``."""
    import pyreadstat

    common = {"dates_as_pandas_datetime": True}
    readers: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
        ".sas7bdat": (pyreadstat.read_sas7bdat, {**common, "user_missing": False}),
        ".xpt": (pyreadstat.read_xport, common),
        ".dta": (pyreadstat.read_dta, {**common, "user_missing": False}),
        ".sav": (pyreadstat.read_sav, {**common, "user_missing": False}),
        ".zsav": (pyreadstat.read_sav, {**common, "user_missing": False}),
    }
    return readers[ext]


def _count(value: Any) -> int | None:
    """A count of the header, or None when the file does not state it (-1, None)."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n >= 0 else None


def header_of(meta: Any) -> dict[str, Any]:
    """What the limits need of a file's metadata, as plain values: column names, counts, kinds and widths."""
    names = [str(n) for n in (getattr(meta, "column_names", None) or [])]
    return {"names": names, "columns": _count(getattr(meta, "number_columns", None)),
            "rows": _count(getattr(meta, "number_rows", None)),
            "kinds": {str(k): str(v) for k, v in dict(getattr(meta, "readstat_variable_types", None) or {}).items()},
            "widths": {str(k): _count(v) or 8 for k, v in
                       dict(getattr(meta, "variable_storage_width", None) or {}).items()}}


def check_header(ext: str, header: dict[str, Any], size: int) -> int | None:
    """Refuse a statistical file (``size`` bytes) from its header (:func:`header_of`) when its columns, rows or
    text widths are over the limits or its records would not fit in memory (see the module doc). Returns the
    number of rows the header states (None when it does not)."""
    names = list(header["names"])
    columns = len(names) if header["columns"] is None else int(header["columns"])
    if columns > limits.MAX_COLUMNS:
        raise ResourceLimitError(f"The table has {columns:,} columns, over the {limits.MAX_COLUMNS:,} column limit.",
                                 hint="Keep only the id, measure and grouping columns.")
    rows = header["rows"]
    if rows is not None and rows > limits.MAX_ROWS:
        raise ResourceLimitError(f"The table has {rows:,} rows, over the {limits.MAX_ROWS:,} row limit.",
                                 hint="Sample the rows before uploading.")
    kinds, widths = header["kinds"], header["widths"]
    for name in names:
        if kinds.get(name) == "string" and widths.get(name, 0) > limits.MAX_CELL_BYTES:
            raise ResourceLimitError(
                f"The text column '{name[:60]}' is {widths[name]:,} bytes wide, over the cell size limit of "
                f"{limits.MAX_CELL_BYTES:,} bytes.", hint="A table cell holds a number, a code or a short label: "
                                                          "drop long free text.")
    cells = sum(max(1, math.ceil(widths.get(n, 8) / 8)) if kinds.get(n) == "string" else 1 for n in names)
    bound = rows
    if bound is None and ext == ".xpt":  # fixed-width records, uncompressed: at most the file's bytes per record
        bound = size // max(sum(widths.get(n, 8) for n in names), 1)
    if bound is not None:
        memory.guard_table(rows=bound, columns=max(cells, 1))
    return rows


def _whole(col: pd.Series) -> pd.Series:
    """A float column of whole numbers without missing values as whole numbers (as a CSV export reads)."""
    values = col.to_numpy()
    if values.size and np.isfinite(values).all() and (np.abs(values) < 2**53).all() \
            and (values == np.round(values)).all():
        return col.astype("int64")
    return col


def _labelled(col: pd.Series, labels: dict[Any, Any]) -> pd.Series | None:
    """The labels of a numeric column whose every value has one (text: the group names), else None."""
    present = col.dropna().unique()
    by_value = {float(k): str(v) for k, v in labels.items() if isinstance(k, (int, float, np.number))}
    if not by_value or not all(float(v) in by_value for v in present):
        return None
    return col.map(lambda v: by_value[float(v)] if pd.notna(v) else np.nan).astype("str")


def _as_csv_reads(df: pd.DataFrame, meta: Any) -> pd.DataFrame:
    """The decoded table as its CSV export would read: labels as text, empty text missing, whole numbers."""
    value_labels = dict(getattr(meta, "variable_value_labels", None) or {})
    for i in range(df.shape[1]):
        col = df.iloc[:, i]
        name = df.columns[i]
        if pd.api.types.is_float_dtype(col.dtype):
            labelled = _labelled(col, value_labels[name]) if value_labels.get(name) else None
            df.isetitem(i, (labelled if labelled is not None else _whole(col)).array)
        elif col.dtype == object or pd.api.types.is_string_dtype(col.dtype):
            df.isetitem(i, col.mask(col.isin([""]), np.nan).array)
    return df


def read_stat_file(data: bytes, ext: str) -> pd.DataFrame:
    """The table of a SAS, Stata or SPSS file (``ext``: a key of :data:`STAT_EXTENSIONS`) given as bytes, read in a
    child process (:mod:`prdp_core.data.statchild`) after the checks of its header; the reader stops one row past
    the row limit (see the module doc)."""
    from . import statchild
    from .filelimits import check_frame_cells

    ext = ext.lower()
    if ext not in STAT_EXTENSIONS:
        raise DataError(f"Files of type '{ext}' are not SAS, Stata or SPSS files.")
    if not _starts_as(ext, data):
        what = STAT_EXTENSIONS[ext]
        raise DataError(f"The file is named '{ext}' but does not begin as a {what} file does.",
                        hint=_HINT.format(what=what))
    with statchild.Reader(data, ext) as reader:
        check_header(ext, reader.header(), len(data))
        df = reader.table(limits.MAX_ROWS + 1)
    check_frame_cells(df)
    return df


def parse(data: bytes, ext: str, *, metadataonly: bool = False, row_limit: int = 0) -> tuple[pd.DataFrame, Any]:
    """Run the pyreadstat reader of ``ext`` over ``data`` (in the child process: the reader is native code that a
    malformed file can crash); a table is returned as :func:`_as_csv_reads` gives it. Whatever the reader raises
    becomes a DataError."""
    read, base = _reader(ext)
    try:
        df, meta = read(io.BytesIO(data), **base, metadataonly=metadataonly, row_limit=row_limit)
    except MemoryError:
        raise ResourceLimitError("The table does not fit in memory.", hint="Sample rows or drop columns.") from None
    except Exception as exc:  # pyreadstat raises ReadstatError, PyreadstatError, ValueError, UnicodeError…
        raise unreadable(ext, str(exc).strip().split("\n")[0][:200] or type(exc).__name__) from None
    return (df if metadataonly else _as_csv_reads(df, meta)), meta


def unreadable(ext: str, why: str) -> DataError:
    """The refusal of a file the reader could not read, and why."""
    what = STAT_EXTENSIONS[ext]
    return DataError(f"The {what} file could not be read: {why}.", hint=_HINT.format(what=what))
