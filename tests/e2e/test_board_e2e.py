"""The workshop board in real browsers, against a server started with ``prdp app``: two
participants submit, one loads the other's policy, a copied short link restores a design in a fresh
context, nobody withdraws someone else's entry, and review mode shows no statistic of the records."""

from __future__ import annotations

import re

import pytest

from prdp_core.board import summary as S

from .conftest import FACILITATOR_KEY, new_page, shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]



def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click()
    wait_idle(page)


def _open(browser, url: str):
    page = new_page(browser)
    page.goto(url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    wait_idle(page)
    return page


def _designer(page, emp: float | None = None) -> None:
    _nav(page, "Policy designer")
    page.get_by_text("Policy-loss CDF over records").first.wait_for()
    if emp is not None:
        box = page.locator(".st-key-thr_EMP input")
        box.fill(f"{emp:g}")
        box.press("Enter")
        wait_idle(page)
        page.locator('[data-testid="stSidebar"]').get_by_text(f"T(EMP) = {emp:g}").wait_for()


def _type(page, key: str, text: str) -> None:
    box = page.locator(f".st-key-{key} input")
    box.fill(text)
    box.press("Enter")
    wait_idle(page)


def _submit(page, name: str, why: str) -> None:
    _nav(page, "Board")
    page.get_by_role("heading", name="Board", exact=True).wait_for()
    _type(page, "board_name", name)
    _type(page, "board_rationale", why)
    page.get_by_role("button", name="Submit to the board").click()
    wait_idle(page, timeout=120_000)
    page.get_by_text(re.compile(f"Submitted #\\d+ {re.escape(name)}")).wait_for()


def _pick(page, label: str) -> None:
    page.locator(".st-key-board_pick").get_by_role("combobox").click()
    page.get_by_role("option", name=re.compile(re.escape(label))).click()
    wait_idle(page)


def _in_table(page, text: str) -> None:
    page.locator('[data-testid="stDataFrame"]').get_by_text(text, exact=True).first.wait_for(state="attached")


def _columns(page) -> tuple[int, list[str]]:
    """The board table's number of columns (all of them) and the headers the grid has drawn."""
    grid = page.locator('[data-testid="stDataFrame"] table[role="grid"]').first
    grid.wait_for(state="attached")
    return int(grid.get_attribute("aria-colcount")), grid.locator("th").all_inner_texts()


def _expected_columns(review: bool) -> list[str]:
    return list(S.board_frame([], review=review, delta=1e-6, mine=set(), compact=True).columns)


#: The horizontal overflow of the page and of the board's table (its grid and every scrolling part of it): the
#: (scrollWidth, clientWidth) of each.
_OVERFLOW_JS = """() => {
  const page = document.querySelector('[data-testid="stMain"]');
  const grid = document.querySelector('[data-testid="stDataFrame"] .stDataFrameGlideDataEditor');
  if (!grid) return {page: [page.scrollWidth, page.clientWidth], grid: null};
  const widest = [grid, ...grid.querySelectorAll('div')].reduce(
    (w, e) => (e.scrollWidth - e.clientWidth > w[0] - w[1] ? [e.scrollWidth, e.clientWidth] : w), [0, 0]);
  return {page: [page.scrollWidth, page.clientWidth], doc: [document.documentElement.scrollWidth,
          document.documentElement.clientWidth], grid: widest};
}"""


def test_the_board_table_fits_a_1280_pixel_screen(browser, workshop_url):
    """At a 1280-pixel viewport, with the sidebar open, in teaching mode (every column): neither the page nor the
    board's table scrolls sideways."""
    p = _open(browser, workshop_url)
    p.set_viewport_size({"width": 1280, "height": 900})
    _designer(p)
    _submit(p, "A policy with a rather long name to see that it is cut, not widened", "wide tables scroll")
    _in_table(p, "A policy with a rather long name to see that it is cut, not widened")
    p.locator('[data-testid="stSidebar"]').wait_for()
    wait_idle(p)
    got = p.evaluate(_OVERFLOW_JS)
    shot(p, "board-06-1280")
    assert got["grid"] is not None, got
    for what, (scroll, client) in got.items():
        assert scroll <= client, f"{what} overflows: {scroll} > {client} px"
    p.context.close()


def test_two_participants_submit_compare_and_load(browser, workshop_url):
    alice = _open(browser, workshop_url)
    _designer(alice, emp=50)
    _submit(alice, "Alice cautious", "small firms pay the base loss")
    shot(alice, "board-01-alice-submitted")

    bob = _open(browser, workshop_url)
    _designer(bob)  # the default policy: T(EMP) = 100
    _submit(bob, "Bob default", "the paper's conservative scheme")
    _in_table(bob, "Alice cautious")
    _in_table(bob, "Bob default")
    bob.locator(".st-key-board_cdf .js-plotly-plot").wait_for()  # teaching mode: the CDF overlay
    bob.locator(".st-key-board_tradeoff .js-plotly-plot").wait_for()
    shot(bob, "board-02-bob-sees-both")

    # Bob cannot withdraw Alice's entry
    _pick(bob, "Alice cautious")
    bob.get_by_role("button", name="Withdraw").click()
    wait_idle(bob)
    bob.get_by_text("You can withdraw only your own entries").wait_for()
    _in_table(bob, "Alice cautious")

    # Bob loads Alice's policy into his session
    bob.get_by_role("button", name="Load this policy").click()
    wait_idle(bob)
    bob.get_by_text(re.compile("Loaded #\\d+ Alice cautious into your session")).wait_for()
    bob.locator('[data-testid="stSidebar"]').get_by_text("T(EMP) = 50").wait_for()
    _designer(bob)
    assert bob.locator(".st-key-thr_EMP input").input_value() == "50"
    shot(bob, "board-03-bob-loaded-alice")

    # Alice withdraws her own entry
    _nav(alice, "Board")
    _pick(alice, "Alice cautious")
    alice.get_by_role("button", name="Withdraw").click()
    wait_idle(alice)
    alice.get_by_text(re.compile("Entry #\\d+ was withdrawn")).wait_for()
    for p in (alice, bob):
        assert p.locator('[data-testid="stException"]').count() == 0
        p.context.close()


def test_a_copied_link_restores_the_design_in_a_fresh_context(browser, workshop_url):
    first = _open(browser, workshop_url)
    _designer(first, emp=77)
    first.wait_for_function("() => location.search.includes('policy=')")
    _nav(first, "Board")  # the share link: the design without the session key the address bar also holds
    link = first.locator('[data-testid="stCode"]').filter(has_text="?d=").first.inner_text().strip()
    assert "/policy_designer?d=" in link and "s=" not in link.split("?")[1] and len(link) < 80  # short
    first.get_by_text("not the address bar").wait_for()
    first.get_by_text("Long link").click()  # the long form, for offline use
    long = first.locator('[data-testid="stCode"]').filter(has_text="policy=").first.inner_text().strip()
    assert "/policy_designer?policy=" in long and "s=" not in long.split("?")[1]
    first.context.close()

    fresh = new_page(browser)
    fresh.goto(link)
    wait_idle(fresh)
    fresh.get_by_text("Loaded the design this link carries").wait_for()
    fresh.locator('[data-testid="stSidebar"]').get_by_text("T(EMP) = 77").wait_for()
    fresh.get_by_text("Policy-loss CDF over records").first.wait_for()
    assert fresh.locator(".st-key-thr_EMP input").input_value() == "77"
    shot(fresh, "board-04-link-restored")

    damaged = new_page(browser)
    damaged.goto(long.split("?")[0] + "?policy=not*a*design")
    wait_idle(damaged)
    damaged.get_by_text("The link's design was not loaded").wait_for()
    assert damaged.locator('[data-testid="stException"]').count() == 0
    fresh.context.close()
    damaged.context.close()


def test_a_link_opened_in_a_browser_with_a_session_asks_before_loading_it(browser, workshop_url):
    """A short link opened in a new tab of a browser that has a session with a design: that session is reopened
    and asked "Load this design into your session?"; loading it keeps the session (its address)."""
    sharer = _open(browser, workshop_url)
    _designer(sharer, emp=77)
    _nav(sharer, "Board")
    link = sharer.locator('[data-testid="stCode"]').filter(has_text="?d=").first.inner_text().strip()
    sharer.context.close()

    mine = _open(browser, workshop_url)
    _designer(mine, emp=33)
    mine.wait_for_function("() => document.cookie.includes('prdp_last_session=')")
    key = mine.evaluate("() => new URLSearchParams(location.search).get('s')")
    tab = mine.context.new_page()
    tab.goto(link)
    tab.get_by_text("Load this design into your session?").wait_for()
    assert tab.evaluate("() => new URLSearchParams(location.search).get('s')") == key  # the same session
    tab.locator('[data-testid="stSidebar"]').get_by_text("T(EMP) = 33").wait_for()  # not loaded before asked
    tab.get_by_role("button", name="Load this design").click()
    wait_idle(tab)
    tab.get_by_text("Loaded the design this link carries").wait_for()
    tab.locator('[data-testid="stSidebar"]').get_by_text("T(EMP) = 77").wait_for()
    assert tab.locator('[data-testid="stException"]').count() == 0
    shot(tab, "board-07-link-into-session")
    mine.context.close()


def test_review_mode_shows_no_record_statistic_on_the_board(browser, workshop_url):
    p = _open(browser, workshop_url)
    _designer(p)
    _submit(p, "Reviewed policy", "for the review")
    n, drawn = _columns(p)
    assert n == len(_expected_columns(review=False))
    assert {"ε at δ, p99 record", "median rel. error"} <= set(drawn)  # the record columns are drawn

    # the facilitator switches the board to review mode
    fac = _open(browser, workshop_url)
    _nav(fac, "Board")
    fac.get_by_text("Facilitator", exact=True).click()
    _type(fac, "board_key_input", FACILITATOR_KEY)
    fac.get_by_role("button", name="Unlock").click()
    wait_idle(fac)
    fac.get_by_text("Facilitator actions unlocked").wait_for()
    fac.locator(".st-key-board_set_mode").get_by_text("review", exact=True).click()
    wait_idle(fac)
    fac.get_by_role("button", name="Save").click()
    wait_idle(fac)
    fac.get_by_text("Board settings saved").wait_for()

    # a participant in teaching mode now sees public quantities only
    _nav(p, "Data")
    _nav(p, "Board")
    p.get_by_text(re.compile("Review mode \\(the facilitator's setting\\)")).wait_for()
    _in_table(p, "Reviewed policy")
    n, drawn = _columns(p)
    assert n == len(_expected_columns(review=True)) < len(_expected_columns(review=False))
    assert not set(S.RECORD_COLUMNS) & set(drawn) and "ε at δ, base" in drawn
    assert p.locator(".st-key-board_cdf").count() == 0 and p.locator(".st-key-board_tradeoff").count() == 0
    shot(p, "board-05-review-mode")

    # back to teaching for the other tests of this server
    fac.locator(".st-key-board_set_mode").get_by_text("teaching", exact=True).click()
    wait_idle(fac)
    fac.get_by_role("button", name="Save").click()
    wait_idle(fac)
    for pg in (p, fac):
        assert pg.locator('[data-testid="stException"]').count() == 0
        pg.context.close()
