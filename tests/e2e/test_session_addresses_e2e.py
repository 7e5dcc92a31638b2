"""Session addresses cannot be planted (issue 28), in a real browser with two browser contexts (two browsers:
their own cookies). Browser A uploads a table, designs a policy and releases; browser B opening A's address
gets none of A's table, design or ledger and is told that the address belongs to another browser, while A
reloading its own address gets its session back (the browser's secret was kept in its cookie). The reverse
fixation: B creates a key, A opens B's address and loads a confidential table; B reopening its key does not
receive A's table."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from .conftest import new_page, shot, wait_idle
from .test_durable_e2e import _nav, _release, _totals

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

FOREIGN = "This address belongs to another browser"


def _key(page) -> str:
    return parse_qs(urlparse(page.url).query)["s"][0]


def _upload(page, tmp_path, name: str, rows: int) -> None:
    """On the Data page: upload a table and use it."""
    page.get_by_role("tab", name=re.compile("Upload a file")).click()
    wait_idle(page)
    csv = tmp_path / name
    csv.write_text("shop_id,region,sales\n" + "".join(f"S{i},R{i % 4},{1 + (i * 37) % 2000}\n" for i in range(rows)))
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(csv))
    wait_idle(page)
    page.get_by_text(f"{name} is not in use yet").wait_for()
    page.get_by_role("button", name="Use this table").click()
    wait_idle(page)
    page.get_by_text(f"Active dataset: {name}").wait_for()


def _open(page, url: str) -> None:
    page.goto(url)
    wait_idle(page)
    page.locator('[data-testid="stSidebar"]').get_by_text("Your work is saved on this server").wait_for()
    wait_idle(page)


def _secret_cookie(page) -> str | None:
    return next((c["value"] for c in page.context.cookies() if c["name"] == "prdp_browser"), None)


def test_a_second_browser_opening_the_address_gets_none_of_the_session(browser, app_url, tmp_path):
    a, b = new_page(browser), new_page(browser)
    try:
        _open(a, app_url)
        _upload(a, tmp_path, "secret_shops.csv", 300)
        sidebar_a = a.locator('[data-testid="stSidebar"]')
        _nav(a, "Policy designer")
        box = a.locator(".st-key-thr_sales input")
        box.fill("250")
        box.press("Enter")
        wait_idle(a)
        sidebar_a.get_by_text("T(sales) = 250").wait_for()
        _nav(a, "Run")
        _release(a, 1)
        n, total = _totals(a)
        key = _key(a)
        assert n == 1

        _open(b, a.url)  # B opens A's address (the Run page with A's key and design)
        shot(b, "addresses-01-another-browser")
        sidebar_b = b.locator('[data-testid="stSidebar"]')
        assert sidebar_b.get_by_text("secret_shops.csv").count() == 0 and b.get_by_text("secret_shops.csv").count() == 0
        assert sidebar_b.get_by_text("T(sales) = 250").count() == 0
        assert b.get_by_text(re.compile(r"over its \d+ release\(s\)")).count() == 0  # no ledger of A's
        assert b.get_by_text("Restored your saved session").count() == 0
        assert b.get_by_text(FOREIGN).count() == 1 and b.get_by_text("This ledger is new").count() == 1
        assert _key(b) != key and _secret_cookie(a) and _secret_cookie(b) != _secret_cookie(a)  # a secret each
        b.get_by_role("button", name="Start a new session").click()
        wait_idle(b)
        assert b.get_by_text(FOREIGN).count() == 0

        a.reload()  # A's own browser gets its session back
        a.get_by_text("Restored your saved session").wait_for()
        wait_idle(a)
        assert _key(a) == key and _totals(a) == (1, total)
        a.locator('[data-testid="stSidebar"]').get_by_text("secret_shops.csv").first.wait_for()
    finally:
        a.context.close()
        b.context.close()


def test_a_planted_address_does_not_give_the_attacker_the_victims_table(browser, app_url, tmp_path):
    attacker, victim = new_page(browser), new_page(browser)
    try:
        _open(attacker, app_url + "/policy_designer")
        planted = attacker.url  # …/policy_designer?s=<the attacker's key>
        key = _key(attacker)

        _open(victim, planted)
        told = victim.get_by_text(FOREIGN).count()
        restored = victim.get_by_text("Restored your saved session").count()
        _nav(victim, "Data")
        _upload(victim, tmp_path, "confidential.csv", 250)
        _nav(victim, "Policy designer")
        shot(victim, "addresses-02-victim")

        attacker.goto(planted)  # the attacker reopens its key: its own session, not the victim's table
        attacker.get_by_text("Restored your saved session").wait_for()
        wait_idle(attacker)
        assert _key(attacker) == key
        assert attacker.get_by_text("confidential.csv").count() == 0
        assert attacker.locator('[data-testid="stSidebar"]').get_by_text("confidential.csv").count() == 0
        assert (told, restored) == (1, 0)  # the victim was told, and not given the attacker's session
        fresh = new_page(browser)  # nor does any other browser of the attacker's
        try:
            _open(fresh, planted)
            fresh.get_by_text(FOREIGN).wait_for()
            assert fresh.get_by_text("confidential.csv").count() == 0
        finally:
            fresh.context.close()
    finally:
        attacker.context.close()
        victim.context.close()
