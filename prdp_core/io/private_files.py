"""Files and folders only the server's own user may read: the workshop store's database, the ledger key,
the uploads folder and the DuckDB spill folder hold confidential data (per-record losses, uploaded
tables), so they are created with mode 0600 (files) or 0700 (folders) and, when they exist with a looser
mode, tightened to it — never left readable by the group or by others.

Only paths that are the product's own are handled here (a database file, a folder it names); a folder the
user chose to hold them (the workshop folder, ``/tmp``) is created 0700 when missing but never changed.
A path that cannot be tightened (another user's file) is a :class:`~prdp_core.core.errors.StoreError` that
names it and the command that fixes it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..core.errors import StoreError

#: Modes of a private file and folder.
FILE_MODE = 0o600
DIR_MODE = 0o700


def tighten(path: str | os.PathLike, mode: int) -> None:
    """Take every permission beyond ``mode`` away from an existing ``path`` (nothing when it is missing or
    already as tight); StoreError when it cannot be done."""
    p = Path(path)
    try:
        current = stat.S_IMODE(p.stat().st_mode)
    except FileNotFoundError:
        return
    except OSError as err:
        raise StoreError(f"Cannot check who may read {p}: {err.strerror or err}.",
                         hint="Check the folder's permissions.") from None
    if current & ~mode:
        try:
            os.chmod(p, current & mode)
        except OSError as err:
            raise StoreError(f"{p} can be read by other users of this machine (mode {current:o}) and cannot be "
                             f"made private: {err.strerror or err}.",
                             hint=f"Run chmod {mode:o} {p} as its owner, or choose another folder.") from None


def private_dir(path: str | os.PathLike) -> Path:
    """The folder ``path``, created with mode 0700 when missing (its missing parents too) or tightened to it."""
    p = Path(path)
    try:
        p.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(f"Cannot create the folder {p}: {err.strerror or err}.",
                         hint="Choose a writable folder.") from None
    tighten(p, DIR_MODE)
    return p


def private_file(path: str | os.PathLike) -> Path:
    """The file ``path``, created empty with mode 0600 when missing, or tightened to 0600."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    except OSError as err:
        raise StoreError(f"Cannot create the file {p}: {err.strerror or err}.",
                         hint="Choose a writable folder.") from None
    os.close(fd)
    tighten(p, FILE_MODE)
    return p


def private_sqlite(path: str | os.PathLike) -> Path:
    """A SQLite database file, created 0600 when missing (SQLite then gives its WAL and shared-memory files the same
    mode) or tightened to 0600 with the journal files it has."""
    p = private_file(path)
    for suffix in ("-wal", "-shm", "-journal"):
        tighten(p.with_name(p.name + suffix), FILE_MODE)
    return p


__all__ = ["DIR_MODE", "FILE_MODE", "private_dir", "private_file", "private_sqlite", "tighten"]
