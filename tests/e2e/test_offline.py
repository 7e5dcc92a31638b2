"""The app and its HTML report fetch nothing from outside the server, and user text never loads anything.

Chromium records every request while it visits every page of the app in teaching and review mode —
after uploading a table whose file name, column names and group values hold Markdown images and HTML
``<img>`` tags pointing at a planted host (127.0.0.1:8999, where nothing is served) — and runs a
release. Any request to another host than the app's server (fonts, icons, favicons, map tiles, CDNs)
or to the planted address fails the test. The study report built from the same hostile table is then
opened from a file:// URL: it may request nothing but itself.
"""

from __future__ import annotations

import re
from urllib.parse import urlparse

import pytest

from prdp_core.review import report

from .conftest import shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

PLANTED = "127.0.0.1:8999"
MEASURE = f"![m](http://{PLANTED}/x.png)"
GROUP = f"<img src=http://{PLANTED}/g.png>"
FILE = f"![f](http://{PLANTED}/f.png).csv"
VALUES = [f"![v](http://{PLANTED}/v.png)", f"<img src=http://{PLANTED}/w.png>", "[x](javascript:alert(1))",
          "**bold**", "$math$", ":material/home:", ":red[red]"]


def _csv() -> str:
    head = ",".join('"' + c.replace('"', '""') + '"' for c in ("id", MEASURE, GROUP))
    rows = [f"r{i},{1 + (i * 37) % 500},\"{VALUES[i % len(VALUES)]}\"" for i in range(140)]
    return "\n".join([head, *rows]) + "\n"


def _foreign(urls: list[str], allowed: set[str]) -> list[str]:
    """Requests to anything but the allowed hosts (data: and blob: URLs stay in the page)."""
    out = []
    for u in urls:
        p = urlparse(u)
        if p.scheme in ("data", "blob", "about") or (p.scheme in ("http", "https", "ws", "wss")
                                                     and p.netloc in allowed):
            continue
        out.append(u)
    return out


def _visit_every_page(page, tag: str) -> None:
    links = page.locator('[data-testid="stSidebarNav"] a')
    for i in range(links.count()):
        link = page.locator('[data-testid="stSidebarNav"] a').nth(i)
        title = link.inner_text().strip()
        link.click()
        wait_idle(page)
        if title == "Run":
            page.get_by_role("button", name="Run release").click()
            wait_idle(page)
        assert page.locator('[data-testid="stException"]').count() == 0, (tag, title)
        page.wait_for_timeout(500)  # late requests: images, fonts, favicons
    shot(page, f"offline-{tag}")


def test_the_app_requests_nothing_outside_its_server(browser, app_url, tmp_path):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    urls: list[str] = []
    ctx.on("request", lambda r: urls.append(r.url))
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(app_url)
        page.get_by_role("heading", name="Data", exact=True).wait_for()
        wait_idle(page)
        page.get_by_role("tab", name=re.compile("Upload a file")).click()
        wait_idle(page)  # switching tabs reruns the page
        f = tmp_path / FILE.replace("/", "_")
        f.write_text(_csv(), encoding="utf-8")
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
            files=[{"name": FILE, "mimeType": "text/csv", "buffer": f.read_bytes()}])
        wait_idle(page)
        page.get_by_text("is not in use yet").wait_for()  # the upload's own roles view
        page.get_by_role("button", name="Use this table").click()  # confirm the guessed roles
        wait_idle(page)
        page.locator('[data-testid="stSidebar"]').get_by_text("140 records").wait_for()
        shown = page.locator('[data-testid="stSidebar"]').get_by_text(re.compile(r"!\[m\]\(http:\u200b?//127")).count()
        _visit_every_page(page, "teaching")
        page.locator('[data-testid="stSidebar"]').get_by_text("Review (true values hidden)").click()
        wait_idle(page)
        _visit_every_page(page, "review")
    finally:
        ctx.close()
    host = urlparse(app_url).netloc
    assert any(urlparse(u).netloc == host for u in urls)  # the recording works
    assert not [u for u in urls if PLANTED in u], [u for u in urls if PLANTED in u]
    assert not _foreign(urls, {host}), _foreign(urls, {host})
    assert shown, "the hostile column name is not shown as text in the sidebar"


def test_the_html_report_requests_nothing(browser, tmp_path):
    (tmp_path / "hostile.csv").write_text(_csv(), encoding="utf-8")
    study = report.parse_config({
        "version": 1, "title": f"Study of {MEASURE}", "mode": "teaching",
        "data": {"path": "hostile.csv", "schema": {"id": "id", "measures": [MEASURE], "groups": [GROUP]}},
        "policy": {"thresholds": {MEASURE: 400}},
        "workload": {"queries": [{"kind": "count", "group_by": [GROUP]},
                                 {"kind": "sum", "measure": MEASURE, "group_by": [GROUP], "label": VALUES[0]}]},
        "mechanisms": [{"kind": "unit_splitting", "label": VALUES[1]}]}, base_dir=tmp_path)
    files = report.write_outputs(report.run_study(study), tmp_path / "out")
    html = files["report.html"].read_text(encoding="utf-8")
    assert f"<img src=http://{PLANTED}" not in html and f"src=\"http://{PLANTED}" not in html
    ctx = browser.new_context()
    urls: list[str] = []
    ctx.on("request", lambda r: urls.append(r.url))
    page = ctx.new_page()
    try:
        page.goto(files["report.html"].as_uri())
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length > 2",
                               timeout=60_000)
        page.wait_for_timeout(1000)
        shot(page, "offline-report")
    finally:
        ctx.close()
    assert urls and all(urlparse(u).scheme in ("file", "data", "blob", "about") for u in urls), urls
