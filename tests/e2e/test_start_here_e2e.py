"""The guided path in a real browser: from a fresh session, the Start here page's "Next" alone (and the defaults)
leads from the data to a downloaded report of one recorded release."""

from __future__ import annotations

import re

import pytest

from .conftest import new_page, shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

STEPS = ["Data", "Policy", "Preview", "Run", "Review"]


def test_next_alone_leads_from_a_fresh_session_to_a_downloaded_report(browser, app_url):
    pg = new_page(browser)
    try:
        pg.set_default_timeout(120_000)
        pg.goto(app_url)
        pg.get_by_role("heading", name="Data", exact=True).wait_for()
        wait_idle(pg, 120_000)
        pg.locator('[data-testid="stSidebarNav"] a').filter(has_text="Start here").first.click()
        pg.get_by_role("heading", name="Start here", exact=True).wait_for()
        for i, title in enumerate(STEPS):
            pg.get_by_role("heading", name=f"{i + 1}. {title}", exact=True).wait_for()
            wait_idle(pg, 120_000)
            if i < len(STEPS) - 1:
                nxt = pg.get_by_role("button", name="Next", exact=True)
                assert nxt.count() == 1
                nxt.click()
        assert pg.get_by_role("button", name="Next", exact=True).count() == 0  # the path ends here
        pg.get_by_text(re.compile(r"Released: \d[\d,]* noisy answers")).wait_for()
        shot(pg, "start-here-review")
        with pg.expect_download() as info:
            pg.get_by_role("button", name="Download the report (HTML)").click()
        download = info.value
        assert download.failure() is None, download.failure()
        assert download.suggested_filename == "prdp_report.html"
        html = open(download.path(), encoding="utf-8").read()
        assert html.lstrip().lower().startswith("<!doctype html") and "cbp_like" in html
        assert "unit splitting" in html.lower()
    finally:
        pg.context.close()
