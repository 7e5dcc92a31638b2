"""Start and stop the app's Streamlit server on 127.0.0.1 and a free port.

Shared by the browser tests (tests/e2e/conftest.py) and the load benchmarks
(benchmarks/bench_sessions.py, benchmarks/bench_workshop_load.py): the server, its environment and
command, and what the browser reads of the page (idle, a chart's data, the Policy designer's
threshold input). The server is stopped through its process handle.
"""

from __future__ import annotations

import os
import re
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

#: JavaScript that is true once Streamlit has finished the current run: the app root's script run state
#: (the ``data-test-script-state`` attribute Streamlit's frontend sets on ``[data-testid="stApp"]``:
#: ``initial`` before the first run, then ``running``, ``rerunRequested``, ``stopRequested``,
#: ``notRunning`` or ``compilationError``) says no run is under way or asked for, the page is connected
#: to its server, and no skeleton placeholders are left (elements still being drawn).
IDLE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app) return false;
  const state = app.getAttribute('data-test-script-state');
  return (state === 'notRunning' || state === 'compilationError')
    && app.getAttribute('data-test-connection-state') === 'CONNECTED'
    && !document.querySelector('[data-testid="stSkeleton"]');
}"""

#: JavaScript giving a fingerprint of the data of the Plotly chart matched by a CSS selector (``%s``): its
#: traces' x and y, which Streamlit sends base64-encoded, so the fingerprint changes whenever the curve does.
FINGERPRINT_JS = """() => {
  const el = document.querySelector('%s');
  if (!el || !el.data || !el.data.length) return null;
  const s = JSON.stringify(el.data.map(t => [t.x, t.y]));
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return s.length + ':' + h;
}"""

#: The Policy designer's chart of the policy-loss CDF over records.
CDF_CHART = ".st-key-cdf_records .js-plotly-plot"


def chart_changed_js(fingerprint_js: str) -> str:
    """JavaScript predicate of ``page.wait_for_function(…, arg=before)``: true once the fingerprint
    ``fingerprint_js`` (:data:`FINGERPRINT_JS` of a chart) is set and differs from ``before``."""
    return f"(before) => {{ const f = ({fingerprint_js})(); return f && f !== before; }}"


def threshold_input(page):
    """The Policy designer's first threshold box T(…) (a Playwright locator, sync or async page)."""
    return page.locator('[data-testid="stNumberInput"]').filter(has_text=re.compile(r"^T\(")).locator("input").first


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    """The server's environment: no board URL or data folder inherited from the caller's shell, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PRDP_BOARD_URL", "PRDP_DATA_DIR")}
    return {**env, **extra}


def prdp_app_command(data_dir: Path) -> Callable[[int], list[str]]:
    """The command line of a workshop server started as a facilitator would: ``prdp app`` on
    127.0.0.1 with ``data_dir`` as its data folder (for :func:`app_server`'s ``command``)."""
    prdp = str(Path(sys.executable).with_name("prdp"))

    def command(port: int) -> list[str]:
        return [prdp, "app", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data_dir)]

    return command


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
