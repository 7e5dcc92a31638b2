"""The reader of SAS, Stata and SPSS files: pyreadstat, run in a child process, and the table as its CSV export reads.

**The table** (:func:`parse`) reads as its CSV export would, so a study gives the same results from either:

* **Value labels** (Stata, SPSS): a numeric column whose every value has a label becomes a text column of the
  labels — the group names; a column with labels for some codes only (a measure whose 99 is labelled
  "Refused") keeps its numbers.
* **Missing values**: SAS special missing values (``.A``…), Stata's ``.a``…``.z`` and SPSS user-missing codes
  become missing (NaN), as does an empty text value; the checks of the Column roles view then count them.
* **Numbers**: every package stores numbers as doubles; a column whose values are all whole numbers and
  that has no missing value becomes whole numbers (``1``, not ``1.0``), as in a CSV export. Dates become
  dates.

**The child process** (:class:`Reader`). pyreadstat's reader is native code (ReadStat): some malformed files
make it crash the process that runs it (a segmentation fault, seen on SPSS files whose header declares a wrong
variable width). A crash there would end the app for every session, so the reader runs in a child process of
the same Python (started fresh: ``spawn``), which talks to the parent over a pipe:

1. the parent sends the file's bytes; the child reads the header alone (no record) and sends back what the
   limits need (:func:`header_of`: plain JSON);
2. the parent checks the limits (:func:`prdp_core.data.statfiles.check_header`) and either stops the child or
   sends the row limit; the child parses the records, stopping one row past it, and sends the table as an
   Arrow stream (types kept).

Messages are raw bytes (``send_bytes``): the parent never unpickles what the child sends (only the child's
start-up arguments, its end of the pipe and the extension, are pickled, by the parent). A child that dies (a
crash), says nothing for :data:`TIMEOUT_S` seconds or sends anything but these messages gives a
:class:`~prdp_core.core.errors.DataError`; the child is killed when the parent is done with it.
"""

from __future__ import annotations

import io
import json
import multiprocessing
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..core.errors import DataError, PrdpError, ResourceLimitError

#: Extensions of the statistical packages' files, and the package that writes each.
STAT_EXTENSIONS = {
    ".sas7bdat": "SAS",
    ".xpt": "SAS transport",
    ".dta": "Stata",
    ".sav": "SPSS",
    ".zsav": "SPSS",
}

#: What to do about a file the reader cannot read (``{what}``: the package).
UNREADABLE_HINT = "Check that the file is a valid {what} file with the right extension, or export the table as CSV."


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
    return DataError(f"The {what} file could not be read: {why}.", hint=UNREADABLE_HINT.format(what=what))


#: Seconds a child may take to answer (the header, then the table) before it is stopped.
TIMEOUT_S = 600.0


def _error(err: PrdpError) -> bytes:
    return b"J" + json.dumps({"error": err.message, "hint": err.hint,
                              "limit": isinstance(err, ResourceLimitError)}).encode()


def main(conn: Any, ext: str) -> None:
    """The child: read the file of extension ``ext`` sent on ``conn`` (a pipe's end: raw bytes only, never
    pickled objects), answer its header, then — when the parent sends a row limit, not 0 — its table."""
    try:
        data = conn.recv_bytes()
    except (EOFError, OSError):
        return
    try:
        _, meta = parse(data, ext, metadataonly=True)
    except PrdpError as err:
        conn.send_bytes(_error(err))
        return
    conn.send_bytes(b"J" + json.dumps({"header": header_of(meta)}).encode())
    try:
        row_limit = int.from_bytes(conn.recv_bytes(), "little")
    except (EOFError, OSError):
        return
    if row_limit <= 0:
        return
    try:
        df, _ = parse(data, ext, row_limit=row_limit)
    except PrdpError as err:
        conn.send_bytes(_error(err))
        return
    import pyarrow as pa

    table = pa.Table.from_pandas(df, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    conn.send_bytes(b"A" + sink.getvalue().to_pybytes())


#: What the child runs (tests put a misbehaving child here).
_child = main


class Reader:
    """A child process reading one statistical file (a context manager: the child is stopped on exit). It is
    started fresh (``spawn``: a new interpreter, none of the server's threads or state) and talks over a pipe."""

    def __init__(self, data: bytes, ext: str) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.ext = ext
        self.timed_out = False
        self.conn, child_end = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_child, args=(child_end, ext), daemon=True, name="prdp-statfile-reader")
        self.proc.start()
        child_end.close()
        self._send(data)

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.proc.close()

    def _send(self, payload: bytes) -> None:
        try:
            self.conn.send_bytes(payload)
        except (BrokenPipeError, OSError):
            pass  # the child has stopped: its exit is read next

    def _stopped(self) -> DataError:
        if self.timed_out:
            return unreadable(self.ext, f"the reader took longer than {TIMEOUT_S:.0f} s")
        self.proc.join(5)
        if self.proc.is_alive():  # alive but saying what it should not: stopped
            self.proc.kill()
            self.proc.join()
        code = self.proc.exitcode or 0
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        return unreadable(self.ext, f"the reader stopped on its content ({how}: the file is malformed)")

    def _receive(self) -> tuple[bytes, bytes]:
        """The child's next message: its kind (J: JSON, A: an Arrow stream) and its payload."""
        try:
            if not self.conn.poll(TIMEOUT_S):
                self.timed_out = True
                self.proc.kill()
                raise self._stopped()
            msg = self.conn.recv_bytes()
        except (EOFError, OSError):
            raise self._stopped() from None
        if msg[:1] not in (b"J", b"A"):
            raise self._stopped()
        return msg[:1], msg[1:]

    def _json(self, payload: bytes) -> dict[str, Any]:
        """A message of the child; its refusal is raised as the PrdpError it was."""
        try:
            msg = json.loads(payload)
        except ValueError:
            raise self._stopped() from None
        if not isinstance(msg, dict):
            raise self._stopped()
        if "error" in msg:
            cls = ResourceLimitError if msg.get("limit") else DataError
            raise cls(str(msg["error"]), hint=msg.get("hint"))
        return msg

    def header(self) -> dict[str, Any]:
        """What the file's header says (:func:`prdp_core.data.statfiles.header_of`); PrdpError when unreadable."""
        tag, payload = self._receive()
        header = self._json(payload).get("header") if tag == b"J" else None
        if not isinstance(header, dict):
            raise self._stopped()
        return header

    def table(self, row_limit: int) -> pd.DataFrame:
        """The file's table, read up to ``row_limit`` rows; PrdpError when unreadable."""
        import pyarrow as pa

        self._send(int(row_limit).to_bytes(8, "little"))
        tag, payload = self._receive()
        if tag == b"J":
            self._json(payload)
            raise self._stopped()
        try:
            return pa.ipc.open_stream(payload).read_all().to_pandas()
        except (pa.ArrowException, ValueError):
            raise self._stopped() from None
