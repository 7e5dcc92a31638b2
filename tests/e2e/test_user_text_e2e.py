"""User text reaches no browser as Markdown or HTML: a real browser visits every page of the app while each
kind of user text holds a Markdown image and an HTML ``<img>`` pointing at a listener on 127.0.0.1, and the
listener must receive no request.

The planted text: the uploaded table's file name, column names (id, owner, measure, group) and group values; a
study's title, query and mechanism labels, tier names, personalized labels and filter values (loaded on the Study
page with that table); a board entry's name and rationale submitted in the browser, another participant's entry
(name, rationale, dataset) and an archived board's title. Every page registered in app.py is visited, the Run
page releases, and the Board page is opened with the facilitator's tools unlocked.
"""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from .conftest import FACILITATOR_KEY, ROOT, new_page, shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


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


def hostile(host: str, kind: str) -> str:
    """A text of ``kind`` that loads ``http://host/<kind>.png`` if rendered as Markdown and
    ``…/<kind>-html.png`` if rendered as HTML."""
    return f"![{kind}](http://{host}/{kind}.png)<img src=http://{host}/{kind}-html.png>"


def pages() -> list[str]:
    """The titles of every page registered in app.py."""
    titles = re.findall(r'st\.Page\("app_pages/\w+\.py", title="([^"]+)"', (ROOT / "app.py").read_text())
    assert len(titles) == len(list((ROOT / "app_pages").glob("*.py"))), titles
    return titles


def _study(host: str) -> tuple[str, bytes]:
    """A study config and its table, every name and label of them hostile."""
    def bad(kind: str) -> str:
        return hostile(host, kind)

    m, g, o = bad("measure"), bad("group"), bad("owner")
    values = [bad("value"), bad("label"), "plain"]
    head = ",".join('"' + c.replace('"', '""') + '"' for c in (bad("id"), o, g, m))
    rows = [f"r{i},o{i // 3},\"{values[i % 3]}\",{1 + (i * 37) % 400}" for i in range(150)]
    cfg = {"version": 1, "title": bad("title"), "mode": "teaching", "seed": 1,
           "data": {"path": "table.csv", "schema": {"id": bad("id"), "measures": [m], "groups": [g], "owner": o}},
           "policy": {"thresholds": {m: 100},
                      "specification": {"column": g, "default_eps": 1, "labels": {bad("label"): 0.5}},
                      "tiers": {bad("tier"): 1.0, "agency": 4.0}},
           "workload": {"queries": [{"kind": "count", "group_by": [g], "rho": 0.5, "label": bad("query")},
                                    {"kind": "sum", "measure": m, "group_by": [g], "rho": 0.5,
                                     "filter": {"column": g, "values": [bad("value")]}}]},
           "mechanisms": [{"kind": "unit_splitting", "label": bad("mechanism")},
                          {"kind": "multitier", "query": "count",
                           "filter": {"column": g, "op": "==", "value": bad("value")}}]}
    return yaml.safe_dump(cfg, allow_unicode=True), ("\n".join([head, *rows]) + "\n").encode()


def _other_participants(workshop: Path, host: str) -> None:
    """Another participant's entry on an archived board (hostile title) and one on the open board."""
    import prdp_core
    from prdp_core.board import summary as S
    from prdp_core.board.store import BoardStore
    from prdp_core.config import parse_config

    cfg = parse_config({"version": 1, "seed": 0, "title": hostile(host, "entry-title"),
                        "data": {"sample": "cbp_like", "n": 3000, "seed": 1},
                        "policy": {"thresholds": {"EMP": 40, "PAYANN": 4000, "PAYQTR1": 900}},
                        "workload": {"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.5,
                                                  "label": hostile(host, "entry-query")}]},
                        "mechanisms": [{"kind": "unit_splitting"}]})
    summary = S.summarise(cfg, prdp_core.samples.load_dataset("cbp_like", n=3000, seed=1))
    store = BoardStore(f"sqlite:///{workshop / 'board.sqlite'}", facilitator_key=FACILITATOR_KEY)
    try:
        for name in ("archived-name", "entry-name"):
            store.submit(participant="someone-else", name=hostile(host, name), rationale=hostile(host, "why"),
                         config=cfg.to_dict(), summary=summary, kind=summary["kind"],
                         dataset=hostile(host, "entry-dataset"))
            if name == "archived-name":
                store.archive(key=FACILITATOR_KEY, title=hostile(host, "board-title"))
    finally:
        store.dispose()


def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click()
    wait_idle(page, timeout=120_000)
    page.get_by_role("heading", name=title, exact=True).first.wait_for()
    wait_idle(page, timeout=120_000)


def _type(page, key: str, text: str) -> None:
    box = page.locator(f".st-key-{key} input")
    box.fill(text)
    box.press("Enter")
    wait_idle(page)


def test_no_page_fetches_an_address_planted_in_user_text(browser, workshop_server, listener):
    host, seen = listener
    workshop_url, workshop = workshop_server
    _other_participants(workshop, host)
    config, table = _study(host)
    page = new_page(browser)
    try:
        page.goto(workshop_url)
        page.get_by_role("heading", name="Data", exact=True).wait_for()
        wait_idle(page)

        # load the study and its table (file name, column names and group values hostile)
        _nav(page, "Study")
        page.get_by_role("tab", name=re.compile("Load a study")).click()
        page.locator(".st-key-study_data_upload input[type=file]").set_input_files(
            {"name": hostile(host, "file") + ".csv", "mimeType": "text/csv", "buffer": table})
        wait_idle(page)
        page.get_by_text("… or paste a config").click()
        page.locator(".st-key-study_paste textarea").fill(config)
        page.locator(".st-key-study_paste textarea").press("Control+Enter")
        wait_idle(page)
        page.get_by_role("button", name="Load the pasted config").click()
        wait_idle(page, timeout=120_000)
        page.get_by_text("Loaded the study from").first.wait_for()

        for title in pages():
            _nav(page, title)
            if title == "Run":
                page.get_by_role("button", name="Run release").click()
                wait_idle(page, timeout=120_000)
            elif title == "Board":
                _type(page, "board_name", hostile(host, "my-name"))
                _type(page, "board_rationale", hostile(host, "my-why"))
                page.get_by_role("button", name="Submit to the board").click()
                wait_idle(page, timeout=120_000)
                page.get_by_text("to the board").first.wait_for()
                page.get_by_text("Facilitator", exact=True).click()
                page.locator(".st-key-board_key_input input").fill(FACILITATOR_KEY)
                page.get_by_role("button", name="Unlock").click()
                wait_idle(page)
                page.get_by_text("Archived boards").first.wait_for()
            shot(page, f"user-text-{title.lower().replace(' ', '-')}")
            assert page.locator('[data-testid="stException"]').count() == 0, title
        page.wait_for_timeout(1000)
    finally:
        page.context.close()
    assert not seen, f"the browser fetched planted addresses: {sorted(set(seen))}"

