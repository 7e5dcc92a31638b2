"""A server restart loses no one's work (issue 21), in a real browser: upload a table, design a policy,
release twice, kill the server (SIGKILL, as a crash) and start it again on the same port with the same
workshop folder; the browser reconnects with the same address and finds the same table, policy and two
ledger rows, and a third release adds to the restored totals. The share link never carries the session
key; the address bar's URL opened in a fresh browser opens nothing of the session until the owner's one-time
transfer code moves the whole session there.

(The browser reruns the page by itself on reconnecting because the sidebar holds a periodic fragment,
ui.durable.sidebar_note; without one, Streamlit waits for the next action.)"""

from __future__ import annotations

import os
import re
import signal
from contextlib import ExitStack
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import ARTIFACTS, _clean_env, _require_browser, new_page, shot, wait_idle
from .server import app_server, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

TOTAL = re.compile(r"over its (\d+) release\(s\): the most exposed record has lost ρ = ([0-9.e+]+)")


def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click()
    wait_idle(page)
    assert page.locator('[data-testid="stException"]').count() == 0, title


def _totals(page) -> tuple[int, float]:
    """(releases on this table, the largest per-record total ρ) as the Run page's ledger states them."""
    line = page.get_by_text(TOTAL).first
    line.wait_for()
    m = TOTAL.search(line.inner_text())
    assert m, line.inner_text()
    return int(m.group(1)), float(m.group(2))


def _release(page, n: int) -> None:
    """Run the release; wait for the ledger's line to count ``n`` releases (the answers of an earlier run may
    still be on screen, e.g. drawn before a server restart, while the release runs)."""
    page.get_by_role("button", name="Run release").click()
    wait_idle(page)
    page.get_by_text("Released answers", exact=True).wait_for()
    page.get_by_text(re.compile(rf"over its {n} release\(s\)")).first.wait_for()


def test_a_killed_and_restarted_server_gives_back_the_table_the_policy_and_the_ledger(browser, tmp_path):
    _require_browser()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = _clean_env(PRDP_WORKSHOP_DIR=str(tmp_path / "workshop"))
    env.pop("PRDP_UPLOAD_DIR", None)
    with open(ARTIFACTS / "durable-server-1.log", "w") as log1, open(ARTIFACTS / "durable-server-2.log", "w") as log2, \
            app_server(log1, env=env, port=port) as (url, first):
        page = new_page(browser)
        try:
            page.goto(url)
            page.get_by_role("heading", name="Data", exact=True).wait_for()
            wait_idle(page)
            # upload a table and use it
            page.get_by_role("tab", name=re.compile("Upload a file")).click()
            wait_idle(page)
            csv = tmp_path / "shops.csv"
            csv.write_text("shop_id,region,sales\n" + "".join(
                f"S{i},R{i % 4},{1 + (i * 37) % 2000}\n" for i in range(400)))
            page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(csv))
            wait_idle(page)
            page.get_by_text("shops.csv is not in use yet").wait_for()
            page.get_by_role("button", name="Use this table").click()
            wait_idle(page)
            page.get_by_text("Active dataset: shops.csv").wait_for()
            sidebar = page.locator('[data-testid="stSidebar"]')
            # design a policy: a typed threshold
            _nav(page, "Policy designer")
            box = page.locator(".st-key-thr_sales input")
            box.fill("250")
            box.press("Enter")
            wait_idle(page)
            sidebar.get_by_text("T(sales) = 250").wait_for()
            # release twice
            _nav(page, "Run")
            _release(page, 1)
            _release(page, 2)
            n, before = _totals(page)
            assert n == 2
            shot(page, "durable-01-two-releases")
            key = parse_qs(urlparse(page.url).query)["s"][0]
            assert len(key) >= 32

            # the share link on the Board page carries the design, never the key
            _nav(page, "Board")
            link = page.locator('[data-testid="stCode"]').filter(has_text="?d=").first.inner_text().strip()
            assert "d=" in link and key not in link and "s=" not in urlparse(link).query
            _nav(page, "Run")

            # a crash: the server is killed, then started again on the same port with the same workshop folder
            with ExitStack() as restarted:
                with page.expect_websocket(timeout=120_000):  # the browser reconnects by itself
                    os.kill(first.pid, signal.SIGKILL)
                    first.wait(timeout=30)
                    restarted.enter_context(app_server(log2, env=env, port=port))
                _after_restart(page, browser, key, before)
        finally:
            page.context.close()


def _after_restart(page, browser, key: str, before: float) -> None:
    """The reconnected page, a third release, and the address in a fresh browser."""
    # on reconnecting, the browser reruns the page with that address: a new session restores the saved one
    assert parse_qs(urlparse(page.url).query)["s"][0] == key  # the same address
    page.get_by_text("Restored your saved session").wait_for()
    wait_idle(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    page.get_by_text(re.compile(r"your privacy ledger \(2 earlier releases\)")).wait_for()
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("shops.csv").first.wait_for()
    sidebar.get_by_text("T(sales) = 250").wait_for()
    assert _totals(page) == (2, before)
    assert parse_qs(urlparse(page.url).query)["s"][0] == key
    shot(page, "durable-02-restored")

    # a third release adds to the restored totals (once the reconnected browser's reruns are over: a click
    # sent while they are under way can be dropped)
    page.wait_for_timeout(3_000)
    wait_idle(page)
    _release(page, 3)
    n, after = _totals(page)
    assert n == 3 and after == pytest.approx(1.5 * before, rel=1e-3)
    shot(page, "durable-03-third-release")

    # the address bar's URL opened in a fresh browser opens nothing of the session (issue 28) until the owner's
    # transfer code, made in this browser, moves the whole session there
    other = new_page(browser)
    try:
        other.goto(page.url)
        other.get_by_text("This address belongs to another browser").wait_for()
        wait_idle(other)
        sidebar = page.locator('[data-testid="stSidebar"]')
        wait_idle(page)
        sidebar.get_by_text("Open this session in another browser").click()
        codes = sidebar.locator('[data-testid="stCode"]')
        for _ in range(3):  # a click that lands while the reconnected page still reruns can be dropped: click again
            sidebar.get_by_role("button", name="Make a transfer code").click()
            wait_idle(page)
            try:
                codes.first.wait_for(timeout=15_000)
                break
            except PlaywrightTimeout:
                continue
        code = codes.first.inner_text().strip()
        assert re.fullmatch(r"[A-Z2-9]{5}-[A-Z2-9]{5}", code), code
        shot(page, "durable-04-transfer-code")
        other.get_by_text("It is my session, from my other browser or device").click()
        other.get_by_label("Transfer code").fill(code)
        other.get_by_role("button", name="Open my session here").click()
        other.get_by_text("Restored your saved session").wait_for()
        wait_idle(other)
        other.get_by_text(re.compile(r"your privacy ledger \(3 earlier releases\)")).wait_for()
        assert parse_qs(urlparse(other.url).query)["s"][0] == key
        _nav(other, "Run")
        assert _totals(other) == (3, after)
        shot(other, "durable-05-transferred")
    finally:
        other.context.close()
