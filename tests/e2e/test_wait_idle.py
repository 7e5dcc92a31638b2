"""``wait_idle`` returns only once the app's script run has ended.

A test-only script (tests/e2e/slow_run_app.py) sleeps a known time after a click and then writes a
marker: right after ``wait_idle`` the marker is on the page, and the wait lasted at least the run.
"""

from __future__ import annotations

import sys
import time

import pytest

from .conftest import ARTIFACTS, _require_browser, new_page, wait_idle
from .server import ROOT, app_server
from .slow_run_app import MARKER, RUN_SECONDS

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


def _slow_app_command(port: int) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(ROOT / "tests" / "e2e" / "slow_run_app.py"),
            "--server.address", "127.0.0.1", "--server.port", str(port), "--server.headless", "true",
            "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]


def test_wait_idle_waits_for_the_end_of_a_run(browser):
    _require_browser()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(ARTIFACTS / "slow-run-server.log", "w") as log, \
            app_server(log, command=_slow_app_command) as (url, _proc):
        page = new_page(browser)
        try:
            page.goto(url)
            wait_idle(page)
            start = page.get_by_role("button", name="Start")
            assert start.is_visible()  # the first run has ended: its button is drawn
            start.click()
            t0 = time.monotonic()
            wait_idle(page)
            waited = time.monotonic() - t0
            assert page.get_by_text(MARKER).count() == 1, f"wait_idle returned after {waited:.1f} s, mid-run"
            assert waited >= RUN_SECONDS - 0.5
        finally:
            page.context.close()
