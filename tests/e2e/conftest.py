"""Real-browser fixtures: a Streamlit server on 127.0.0.1 and Playwright driving Debian chromium.

Under CI (CI=true) these tests must run: a missing browser is a failure, not a skip.
Screenshots go to test-artifacts/e2e/.
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
from typing import IO, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "e2e"
CHROMIUM = os.environ.get("PRDP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _require_browser() -> None:
    if not Path(CHROMIUM).exists():
        if IN_CI:
            pytest.fail(f"{CHROMIUM} is missing under CI: .ci/run must install Debian chromium.")
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium); runs under CI.")


def launch(cmd: list[str], port: int, *, cwd: Path, env: dict[str, str], log: IO[str]) -> subprocess.Popen:
    """Start a Streamlit server command and wait until /_stcore/health answers on ``port``; returns its process
    (the caller stops it: a test of a crash kills it)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}; see {log.name}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("streamlit did not answer /_stcore/health within 90 s")
        time.sleep(0.3)


def stop(proc: subprocess.Popen) -> None:
    """Stop a server started by :func:`launch` (politely, then by force)."""
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def streamlit_cmd(port: int) -> list[str]:
    """The command of a test server of app.py on 127.0.0.1:``port``."""
    return [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.address", "127.0.0.1",
            "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
            "--server.fileWatcherType", "none"]


@contextmanager
def _server(cmd: list[str], port: int, *, cwd: Path, env: dict[str, str], log_name: str) -> Iterator[str]:
    """Run a Streamlit server command until /_stcore/health answers; stop it afterwards."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(ARTIFACTS / log_name, "w") as log:
        proc = launch(cmd, port, cwd=cwd, env=env, log=log)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(proc)


@pytest.fixture(scope="session")
def app_url(tmp_path_factory) -> Iterator[str]:
    _require_browser()
    port = _free_port()
    env = {**os.environ, "PRDP_WORKSHOP_DIR": str(tmp_path_factory.mktemp("workshop"))}
    env.pop("PRDP_BOARD_URL", None)
    with _server(streamlit_cmd(port), port, cwd=ROOT, env=env, log_name="streamlit-server.log") as url:
        yield url


#: The facilitator key of the workshop server of the browser tests.
FACILITATOR_KEY = "e2e facilitator key"


@pytest.fixture(scope="module")
def workshop_url(tmp_path_factory) -> Iterator[str]:
    """A workshop server started as a facilitator would: ``prdp app`` from another folder, with its
    own workshop folder (board database, data folder) and a facilitator key."""
    _require_browser()
    port = _free_port()
    home = tmp_path_factory.mktemp("workshop-server")
    (home / "data").mkdir()
    env = {**os.environ, "PRDP_WORKSHOP_DIR": str(home), "PRDP_FACILITATOR_KEY": FACILITATOR_KEY}
    env.pop("PRDP_BOARD_URL", None)
    env.pop("PRDP_DATA_DIR", None)
    prdp = str(Path(sys.executable).with_name("prdp"))
    cmd = [prdp, "app", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(home / "data")]
    with _server(cmd, port, cwd=home, env=env, log_name="workshop-server.log") as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def new_page(browser):
    """A page in a fresh browser context (its own cookies and Streamlit session)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    return pg


@pytest.fixture
def page(browser, app_url):
    pg = new_page(browser)
    try:
        yield pg
    finally:
        pg.context.close()


def shot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def wait_idle(page, timeout: float = 60_000) -> None:
    """Wait until Streamlit has finished the current run: no 'Running' status widget and no
    skeleton placeholders left (elements still being drawn)."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " && !document.querySelector('[data-testid=\"stSkeleton\"]')", timeout=timeout)
    page.wait_for_timeout(300)
