"""User text reaches no browser as Markdown or HTML: a real browser visits every page of the app while each
kind of user text holds a Markdown image and an HTML ``<img>`` pointing at a listener on 127.0.0.1, and the
listener must receive no request.

The planted text (tests/hostile_markdown.py): the file names, column names (id, owner, measure, group) and group
values of a table, uploaded on the Data page (its Column roles view) and with a study on the Study page; the
study's title, query and mechanism labels, tier names, personalized labels and filter values; a board entry's
name and rationale submitted in the browser, another participant's entries (name, rationale, dataset) and an
archived board's title. Every page registered in app.py is visited (releases run, every tab and expander
opened, the Board page's list of entries and facilitator tools opened). The study report and the board's HTML
export, opened from files, are checked the same way.
"""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import pytest

from ..hostile_markdown import board_html, plant_board, planted, report_html, study
from .conftest import FACILITATOR_KEY, ROOT, new_page, shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

#: The buttons of each page that release (their results name the study's labels, tiers and groups).
RELEASES = {"Run": ("run_go",), "Analyst tiers": ("mt_release_btn",),
            "Budget functions": ("bf_run",)}


@pytest.fixture(scope="module")
def listener() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 recording the path of every request it receives (a planted image's
    fetch); yields its host:port and the list of paths."""
    seen: list[str] = []

    class Record(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Record)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def pages() -> list[str]:
    """The titles of every page registered in app.py."""
    titles = re.findall(r'st\.Page\("app_pages/\w+\.py", title="([^"]+)"', (ROOT / "app.py").read_text())
    assert len(titles) == len(list((ROOT / "app_pages").glob("*.py"))), titles
    return titles


def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click()
    wait_idle(page, timeout=120_000)
    page.get_by_role("heading", name=title, exact=True).first.wait_for()
    wait_idle(page, timeout=120_000)


def _open_everything(page) -> None:
    """Show every tab and open every expander of the page (what they hold is drawn, images and all) — but a chart's
    "Show data as a table", which holds a dataframe of the chart's own numbers and labels: a dataframe draws its
    cells as text, never as Markdown (the chart's summary above it is drawn, and checked, without opening it)."""
    tabs = page.get_by_role("tab")
    closed = (page.locator('[data-testid="stExpander"] details:not([open]) > summary')
              .filter(has_not_text="Show data as a table").locator("visible=true"))
    for i in range(max(tabs.count(), 1)):
        if tabs.count():
            tabs.nth(i).click()
        for _ in range(30):
            if not closed.count():
                break
            closed.first.click()
    wait_idle(page)


def _type(page, key: str, text: str) -> None:
    box = page.locator(f".st-key-{key} input")
    box.fill(text)
    box.press("Enter")
    wait_idle(page)


def test_no_page_fetches_an_address_planted_in_user_text(browser, workshop_server, listener):
    host, seen = listener
    workshop_url, workshop = workshop_server
    plant_board(workshop / "board.sqlite", host, FACILITATOR_KEY)
    config, table = study(host)
    page = new_page(browser)
    try:
        page.goto(workshop_url)
        page.get_by_role("heading", name="Data", exact=True).wait_for()
        wait_idle(page)

        # load the study and its table (file names, column names and group values planted)
        _nav(page, "Study")
        page.get_by_role("tab", name=re.compile("Load a study")).click()
        page.locator(".st-key-study_data_upload input[type=file]").set_input_files(
            {"name": planted(host, "file") + ".csv", "mimeType": "text/csv", "buffer": table})
        wait_idle(page)
        page.locator(".st-key-study_upload input[type=file]").set_input_files(
            {"name": planted(host, "config") + ".yaml", "mimeType": "text/yaml", "buffer": config.encode()})
        wait_idle(page)
        page.get_by_role("button", name="Load this study").click()
        wait_idle(page, timeout=120_000)
        page.get_by_text("Loaded the study from").first.wait_for()

        for title in pages():
            _nav(page, title)
            for key in RELEASES.get(title, ()):
                page.locator(f".st-key-{key} button").click()
                wait_idle(page, timeout=120_000)
            if title == "Data":  # the same table uploaded here: its Column roles view (not made active)
                page.locator(".st-key-upload input[type=file]").set_input_files(
                    {"name": planted(host, "upload") + ".csv", "mimeType": "text/csv", "buffer": table})
                wait_idle(page, timeout=120_000)
                page.get_by_role("button", name="Use this table").wait_for()
            if title == "Board":
                _type(page, "board_name", planted(host, "my-name"))
                _type(page, "board_rationale", planted(host, "my-why"))
                page.get_by_role("button", name="Submit to the board").click()
                wait_idle(page, timeout=120_000)
                page.get_by_text(re.compile(r"^Submitted #\d+ ")).first.wait_for()
                shot(page, "user-text-board-submitted")
                pick = page.locator(".st-key-board_pick").get_by_role("combobox")
                pick.click()  # the entries' list, open (a click on a long chosen name only focuses the box)
                if pick.get_attribute("aria-expanded") != "true":
                    pick.press("ArrowDown")
                page.get_by_role("option").first.wait_for()
                shot(page, "user-text-board-entries")
                page.keyboard.press("Escape")
                page.get_by_text("Facilitator", exact=True).click()
                page.locator(".st-key-board_key_input input").fill(FACILITATOR_KEY)
                page.get_by_role("button", name="Unlock").click()
                wait_idle(page)
                page.get_by_text("Archived boards").first.wait_for()
            _open_everything(page)
            shot(page, f"user-text-{title.lower().replace(' ', '-')}")
            assert page.locator('[data-testid="stException"]').count() == 0, title
        page.wait_for_timeout(1000)
    finally:
        page.context.close()
    assert not seen, f"the browser fetched planted addresses: {sorted(set(seen))}"



def test_exports_opened_in_a_browser_fetch_no_planted_address(browser, listener, tmp_path):
    """The study's HTML report and the board's HTML export, opened from files as a reviewer would, with
    every planted text in them: the listener receives no request."""
    host, seen = listener
    seen.clear()
    pages = {"report.html": report_html(tmp_path, host), "board.html": board_html(tmp_path, host)}
    page = new_page(browser)
    try:
        for name, text in pages.items():
            (tmp_path / name).write_text(text, encoding="utf-8")
            page.goto((tmp_path / name).as_uri())
            page.locator(".js-plotly-plot").first.wait_for()
            page.get_by_text(planted(host, "entry-name" if name == "board.html" else "title")).first.wait_for()
            page.wait_for_timeout(1000)
    finally:
        page.context.close()
    assert not seen, f"the browser fetched planted addresses: {sorted(set(seen))}"
