"""Start and stop the app's Streamlit server on 127.0.0.1 and a free port.

Shared by the browser tests (tests/e2e/conftest.py) and the load benchmark
(benchmarks/bench_sessions.py). The server is stopped through its process handle.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Callable, Iterator

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("PRDP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

#: JavaScript that is true once Streamlit has finished the current run: no "Running" status widget
#: and no skeleton placeholders left (elements still being drawn).
IDLE_JS = ("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
           " && !document.querySelector('[data-testid=\"stSkeleton\"]')")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def streamlit_command(port: int) -> list[str]:
    """``streamlit run app.py`` of this checkout on 127.0.0.1:``port``."""
    return [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.address", "127.0.0.1",
            "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
            "--server.fileWatcherType", "none"]


@contextmanager
def app_server(log: IO[str], *, env: dict[str, str] | None = None, command: Callable[[int], list[str]] | None = None,
               cwd: Path = ROOT, startup_timeout: float = 90, port: int | None = None
               ) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run the app's server until the block ends; yield its URL and process.

    ``command`` builds the server's command line for a port (default: :func:`streamlit_command`; e.g.
    ``prdp app …`` for a workshop server); ``env`` adds variables to the server's environment (the memory
    limits, the workshop folder); ``port`` (default: a free one) lets a test start a server again where a
    killed one listened."""
    port = free_port() if port is None else port
    proc = subprocess.Popen((command or streamlit_command)(port), cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the app server exited with code {proc.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the app server did not answer /_stcore/health within {startup_timeout:.0f} s")
            time.sleep(0.3)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
