"""The child process that reads SAS, Stata and SPSS files, so that a malformed file cannot stop the server.

pyreadstat's reader is native code (ReadStat): some malformed files make it crash the process that runs it
(a segmentation fault, seen on SPSS files whose header declares a wrong variable width). A crash there would
end the app for every session, so :class:`Reader` runs the reader in a child process of the same Python and
talks to it over pipes:

1. the parent sends the file's bytes; the child reads the header alone (no record) and sends back what the
   limits need (:func:`prdp_core.data.statfiles.header_of`: plain JSON);
2. the parent checks the limits (:func:`prdp_core.data.statfiles.check_header`, the memory guard among them)
   and either stops the child or sends the row limit; the child parses the records, stopping one row past it,
   and sends the table as an Arrow stream (types kept; no pickle).

A child that dies (a crash), says nothing for :data:`TIMEOUT_S` seconds or sends anything but these messages
gives a :class:`~prdp_core.core.errors.DataError`; the child is killed when the parent is done with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import IO, Any

import pandas as pd

from ..core.errors import DataError, PrdpError, ResourceLimitError

#: Seconds a child may take to answer (the header, then the table) before it is stopped.
TIMEOUT_S = 600.0

_CODE = "from prdp_core.data.statchild import main; main()"
_LENGTH = 8
_MAX_MESSAGE = 1 << 40


def _send(out: IO[bytes], tag: bytes, payload: bytes) -> None:
    out.write(tag + len(payload).to_bytes(_LENGTH, "little") + payload)
    out.flush()


def _read_exact(stream: IO[bytes], n: int) -> bytes | None:
    """``n`` bytes of ``stream``, or None when it ends first."""
    chunks, left = [], n
    while left > 0:
        chunk = stream.read(min(left, 1 << 24))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _error(err: PrdpError) -> bytes:
    return json.dumps({"error": err.message, "hint": err.hint,
                       "limit": isinstance(err, ResourceLimitError)}).encode()


def main() -> None:
    """The child: read a file (its extension is the first argument) sent on standard input, answer its header,
    then — when the parent sends a row limit, not 0 — its table (see the module doc)."""
    from . import statfiles

    ext = sys.argv[1]
    stdin, out = sys.stdin.buffer, sys.stdout.buffer
    size = _read_exact(stdin, _LENGTH)
    data = _read_exact(stdin, int.from_bytes(size, "little")) if size else None
    if data is None:
        return
    try:
        _, meta = statfiles.parse(data, ext, metadataonly=True)
    except PrdpError as err:
        _send(out, b"J", _error(err))
        return
    _send(out, b"J", json.dumps({"header": statfiles.header_of(meta)}).encode())
    limit = _read_exact(stdin, _LENGTH)
    row_limit = int.from_bytes(limit, "little") if limit else 0
    if row_limit <= 0:
        return
    try:
        df, _ = statfiles.parse(data, ext, row_limit=row_limit)
    except PrdpError as err:
        _send(out, b"J", _error(err))
        return
    import pyarrow as pa

    table = pa.Table.from_pandas(df, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    _send(out, b"A", sink.getvalue().to_pybytes())


class Reader:
    """A child process reading one statistical file (a context manager: the child is stopped on exit)."""

    def __init__(self, data: bytes, ext: str) -> None:
        self.ext = ext
        self.timed_out = False
        self.proc = subprocess.Popen([sys.executable, "-I", "-c", _CODE, ext], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._timer = threading.Timer(TIMEOUT_S, self._expire)
        self._timer.daemon = True
        self._timer.start()
        self._write(len(data).to_bytes(_LENGTH, "little") + data)

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def _expire(self) -> None:
        self.timed_out = True
        self.proc.kill()

    def _write(self, payload: bytes) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(payload)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the child has stopped: what it said, or its exit, is read next

    def _stopped(self) -> DataError:
        from .statfiles import unreadable

        if self.timed_out:
            return unreadable(self.ext, f"the reader took longer than {TIMEOUT_S:.0f} s")
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # alive but saying what it should not: stopped
            self.proc.kill()
            code = self.proc.wait()
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        return unreadable(self.ext, f"the reader stopped on its content ({how}: the file is malformed)")

    def _receive(self) -> tuple[bytes, bytes]:
        assert self.proc.stdout is not None
        head = _read_exact(self.proc.stdout, 1 + _LENGTH)
        if head is None or head[:1] not in (b"J", b"A"):
            raise self._stopped()
        size = int.from_bytes(head[1:], "little")
        payload = _read_exact(self.proc.stdout, size) if size < _MAX_MESSAGE else None
        if payload is None:
            raise self._stopped()
        return head[:1], payload

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

        self._write(int(row_limit).to_bytes(_LENGTH, "little"))
        tag, payload = self._receive()
        if tag == b"J":
            self._json(payload)
            raise self._stopped()
        try:
            return pa.ipc.open_stream(payload).read_all().to_pandas()
        except (pa.ArrowException, ValueError):
            raise self._stopped() from None
