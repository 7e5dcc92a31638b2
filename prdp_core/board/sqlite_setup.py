"""SQLite as the board's database: WAL, a busy timeout and ``BEGIN IMMEDIATE``, so that concurrent writers (a
room of participants, several server processes) queue for the write lock instead of failing."""

from __future__ import annotations

import random
import sqlite3
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

#: How long a writer waits for another's lock before the store gives up (seconds).
SQLITE_BUSY_SECONDS = 60


def _wal(cur: Any) -> None:
    """Switch a new database to WAL. SQLite answers "database is locked" at once, without waiting for the busy
    timeout, when another connection holds a write lock while the file is still in rollback mode (several
    processes opening a new board together), so the switch is retried here for up to the busy timeout."""
    deadline = time.monotonic() + SQLITE_BUSY_SECONDS
    pause = 0.005
    while True:
        try:
            if str(cur.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                cur.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) and "busy" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(pause * (1 + random.random()))
            pause = min(pause * 2, 0.25)


def sqlite_setup(engine: Engine) -> None:
    """WAL, a busy timeout and BEGIN IMMEDIATE: writers queue for the lock instead of failing."""

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # transactions are begun below, not by the driver
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_SECONDS * 1000}")
        _wal(cur)
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


__all__ = ["SQLITE_BUSY_SECONDS", "sqlite_setup"]
