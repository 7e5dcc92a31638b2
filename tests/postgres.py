"""A throw-away PostgreSQL server for tests that need a real one (the board's store).

Started with Debian's binaries (``/usr/lib/postgresql/<version>/bin``): ``initdb`` with trust
authentication in a temporary folder, ``pg_ctl start`` on 127.0.0.1 and a free port. Run as
root (CI), the server runs as the ``postgres`` system user (``runuser``), in a folder that user
owns. Without the binaries the tests are skipped locally and FAIL under CI=true.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Iterator

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pg_bin() -> Path | None:
    """The folder of the newest installed PostgreSQL's binaries, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    return Path(found[-1]).parent if found else None


def require_postgres() -> Path:
    b = pg_bin()
    if b is None:
        if IN_CI:
            pytest.fail("PostgreSQL binaries (/usr/lib/postgresql/*/bin) are missing under CI: .ci/run must install "
                        "Debian's postgresql package.")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql); these tests run under CI.")
    return b


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """A running server; :meth:`new_database` gives each test its own database URL."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="prdp-pg-", dir="/tmp"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "prdp", "--no-sync", "-E", "UTF8")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "60",
                  "-o", f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off", "start")
        self.url = f"postgresql+psycopg://prdp@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{tool} failed ({r.returncode}): {r.stderr or r.stdout}\n{tail}")

    def new_database(self) -> str:
        """A fresh, empty database on this server; returns its SQLAlchemy URL."""
        import sqlalchemy as sa

        name = f"t_{uuid.uuid4().hex[:12]}"
        eng = sa.create_engine(self.url, isolation_level="AUTOCOMMIT")
        with eng.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        eng.dispose()
        return f"postgresql+psycopg://prdp@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer(require_postgres())
    try:
        yield server
    finally:
        server.stop()
