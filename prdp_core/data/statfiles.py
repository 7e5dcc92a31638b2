"""Tables of statistical packages: SAS (.sas7bdat, .xpt), Stata (.dta) and SPSS (.sav, .zsav).

:func:`read_stat_file` reads such a file from its bytes (with :mod:`prdp_core.data.statread`: pyreadstat in a
child process, the table as its CSV export reads) after limits read from its header:

* **Before anything is started**, the file must begin as its extension's format does (the SAS, SPSS and Stata
  marks, :func:`extension_of_content`; an old Stata file's release byte).
* **Before parsing**, the header (pyreadstat's metadata, which reads no record) gives the number of columns,
  the width of each text column and — except for SAS transport files (.xpt), which do not store it — the
  number of rows. A file over ``MAX_COLUMNS`` columns, ``MAX_ROWS`` rows or with a text column wider than
  ``MAX_CELL_BYTES`` is refused; then the route's memory guard, when it gives one
  (:func:`prdp_core.data.memory.guard_table`, as ``guard``), is asked for rows × columns (a text column counts
  for one column per 8 bytes of its width), so a compressed file (.sav, .zsav, .sas7bdat) whose records would
  not fit is refused before it is inflated. The rows of an .xpt file are bounded by its size (records of fixed
  width, uncompressed); a .sav file written without its row count (some programs do) is read up to the row
  limit.
* **While parsing**, the reader stops one row past ``MAX_ROWS`` (as the text parser does).

A file that is not what its extension says, truncated, corrupt or crashing the reader raises a
:class:`~prdp_core.core.errors.DataError`; nothing else escapes.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import pandas as pd

from ..core import limits
from ..core.errors import DataError, ResourceLimitError
from .statread import STAT_EXTENSIONS, UNREADABLE_HINT, Reader

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


#: The memory guard of a route (:func:`prdp_core.data.memory.guard_table`), asked with ``rows`` and ``columns``.
Guard = Callable[..., object]


def check_header(ext: str, header: dict[str, Any], size: int, guard: Guard | None = None) -> int | None:
    """Refuse a statistical file (``size`` bytes) from its header (:func:`prdp_core.data.statread.header_of`) when
    its columns, rows or text widths are over the limits or ``guard`` refuses its records (see the module doc).
    Returns the number of rows the header states (None when it does not)."""
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
    if bound is not None and guard is not None:
        guard(rows=bound, columns=max(cells, 1))
    return rows


def read_stat_file(data: bytes, ext: str, guard: Guard | None = None) -> pd.DataFrame:
    """The table of a SAS, Stata or SPSS file (``ext``: a key of :data:`STAT_EXTENSIONS`) given as bytes, read in a
    child process (:class:`prdp_core.data.statread.Reader`) after the checks of its header (and ``guard``, the
    route's memory guard); the reader stops one row past the row limit (see the module doc)."""
    from .filelimits import check_frame_cells

    ext = ext.lower()
    if ext not in STAT_EXTENSIONS:
        raise DataError(f"Files of type '{ext}' are not SAS, Stata or SPSS files.")
    if not _starts_as(ext, data):
        what = STAT_EXTENSIONS[ext]
        raise DataError(f"The file is named '{ext}' but does not begin as a {what} file does.",
                        hint=UNREADABLE_HINT.format(what=what))
    with Reader(data, ext) as reader:
        check_header(ext, reader.header(), len(data), guard)
        df = reader.table(limits.MAX_ROWS + 1)
    check_frame_cells(df)
    return df


