"""Real-browser fixtures: a Streamlit server on 127.0.0.1 and Playwright driving Debian chromium.

Under CI (CI=true) these tests must run: a missing browser is a failure, not a skip.
Screenshots go to test-artifacts/e2e/.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from .server import (  # noqa: F401
    CHROMIUM,
    CHROMIUM_FLAGS,
    FINGERPRINT_JS,
    IDLE_JS,
    ROOT,
    app_server,
    chart_changed_js,
    prdp_app_command,
    threshold_input,
)
from .server import clean_env as _clean_env

ARTIFACTS = ROOT / "test-artifacts" / "e2e"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _require_browser() -> None:
    if not Path(CHROMIUM).exists():
        if IN_CI:
            pytest.fail(f"{CHROMIUM} is missing under CI: .ci/run must install Debian chromium.")
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium); runs under CI.")


@pytest.fixture(scope="session")
def app_url(tmp_path_factory) -> Iterator[str]:
    _require_browser()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    env = _clean_env(PRDP_WORKSHOP_DIR=str(tmp_path_factory.mktemp("workshop")))
    with open(ARTIFACTS / "streamlit-server.log", "w") as log, app_server(log, env=env) as (url, _proc):
        yield url


#: The facilitator key of the workshop server of the browser tests.
FACILITATOR_KEY = "e2e facilitator key"


@pytest.fixture(scope="module")
def workshop_server(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """A workshop server started as a facilitator would: ``prdp app`` from another folder, with its
    own workshop folder (board database, data folder) and a facilitator key; yields its URL and folder."""
    _require_browser()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    home = tmp_path_factory.mktemp("workshop-server")
    (home / "data").mkdir()
    env = _clean_env(PRDP_WORKSHOP_DIR=str(home), PRDP_FACILITATOR_KEY=FACILITATOR_KEY)
    with open(ARTIFACTS / "workshop-server.log", "w") as log, \
            app_server(log, env=env, command=prdp_app_command(home / "data"), cwd=home) as (url, _proc):
        yield url, home


@pytest.fixture(scope="module")
def workshop_url(workshop_server) -> str:
    """The URL of :func:`workshop_server`."""
    return workshop_server[0]


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
    """Wait until Streamlit has finished the current run (:data:`IDLE_JS`: the app root's script run
    state is ``notRunning`` and no skeleton placeholders are left). The first pause lets a click's rerun
    request reach the server, whose answer moves the state to ``running``."""
    page.wait_for_timeout(300)
    page.wait_for_function(IDLE_JS, timeout=timeout)
    page.wait_for_timeout(300)


def change_first_threshold(page, fingerprint_js: str, new_of) -> tuple[float, float, float]:
    """On the Policy designer: set the first threshold T(…) to ``new_of(old)`` and wait until the chart whose
    fingerprint is ``fingerprint_js`` (from :data:`FINGERPRINT_JS`) changes; returns (old, new, seconds from the
    change to the updated chart)."""
    import time

    before = page.evaluate(fingerprint_js)
    assert before
    thr = threshold_input(page)
    old = float(thr.input_value())
    new = new_of(old)
    thr.fill(f"{new:g}")
    t0 = time.perf_counter()
    thr.press("Enter")
    page.wait_for_function(chart_changed_js(fingerprint_js), arg=before, timeout=120_000, polling=20)
    return old, new, time.perf_counter() - t0
