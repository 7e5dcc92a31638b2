"""WCAG 2.1 AA in a real browser: axe-core on every page of the app in teaching and review mode, and the keyboard
path from choosing a page to changing a threshold.

* axe-core (bundled by axe-playwright-python: nothing is downloaded) runs the WCAG 2.1 A and AA rules on each
  page the sidebar's navigation lists (pages added later are covered as they appear), first in teaching mode,
  then in review mode. A violation is the app's unless the same rule fails on the same kind of element (its
  nearest Streamlit ``data-testid`` and its tag) on a bare Streamlit page served by the same Streamlit
  (tests/e2e/bare_streamlit_app.py): that list of Streamlit's own violations is computed by the test, never
  written down. Every other violation fails the test with its rule, element and page. Every chart is named by
  its text alternative (``aria-label``).
* After choosing the Policy designer in the navigation, the keyboard focus is on the page's heading and at most
  five Tab presses reach the first threshold; ArrowUp changes it by a step that fits its magnitude and the
  page's chart follows.
"""

from __future__ import annotations

import sys

import pytest

from ui.common import scale_step

from .conftest import ARTIFACTS, ROOT, new_page, shot, wait_idle
from .server import CDF_CHART, FINGERPRINT_JS, app_server, chart_changed_js, clean_env, threshold_input

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

#: The rules axe runs: WCAG 2.0 and 2.1, levels A and AA.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BARE_APP = ROOT / "tests" / "e2e" / "bare_streamlit_app.py"
REVIEW = "Review (true values hidden)"

#: JavaScript (after axe.min.js is loaded): the violations of ``axe.run`` on the page, one per element: the rule,
#: the element's kind (its nearest ``data-testid``, itself included, and its tag), its CSS path and its HTML.
VIOLATIONS_JS = """async (tags) => {
  const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations'],
                                     elementRef: true});
  return r.violations.flatMap(v => v.nodes.map(n => {
    const el = n.element;
    const owner = el && el.closest('[data-testid]');
    return {rule: v.id, impact: v.impact, help: v.help,
            kind: (owner ? owner.getAttribute('data-testid') : '-') + ' ' + (el ? el.tagName : '?'),
            target: JSON.stringify(n.target), html: n.html.slice(0, 200),
            summary: (n.failureSummary || '').replace(/\\s+/g, ' ').slice(0, 240)};
  }));
}"""

#: JavaScript: the charts of the page without an accessible name.
UNNAMED_CHARTS_JS = """() => Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"]'))
  .filter(c => !(c.getAttribute('aria-label') || '').trim()).length"""

#: JavaScript: the element that has the keyboard focus (tag, text and the label of its widget).
FOCUS_JS = """() => { const e = document.activeElement; const w = e && e.closest('[data-testid]');
  return e ? [e.tagName, (e.innerText || '').trim().slice(0, 60), e.getAttribute('aria-label') || '',
              w ? w.getAttribute('data-testid') : ''].join(' | ') : ''; }"""


def _axe_script() -> str:
    from axe_playwright_python.sync_playwright import Axe

    return Axe().axe_script


def _violations(page) -> list[dict]:
    page.evaluate(_axe_script())
    return page.evaluate(VIOLATIONS_JS, AXE_TAGS)


def _nav_links(page):
    """Every page of the navigation (the sidebar hides pages beyond its first ones until asked to show them)."""
    more = page.locator('[data-testid="stSidebarNavViewButton"]')
    if more.count() and more.first.inner_text().startswith("View") and "more" in more.first.inner_text():
        more.first.click()
    return page.locator('[data-testid="stSidebarNav"] a')


def _title(link) -> str:
    return link.inner_text().strip().splitlines()[-1].strip()  # the icon's ligature name comes first


def _visit_all(page, visit) -> int:
    """Call ``visit(title)`` on every page of the navigation (each opened by its link); the number of pages."""
    n = _nav_links(page).count()
    for i in range(n):
        link = _nav_links(page).nth(i)
        title = _title(link)
        link.click()
        wait_idle(page)
        visit(title)
    return n


@pytest.fixture(scope="module")
def streamlit_own(browser, tmp_path_factory) -> set[tuple[str, str]]:
    """The (rule, element kind) of every violation axe finds on the pages of a bare Streamlit app."""
    cwd = tmp_path_factory.mktemp("bare-streamlit")  # Streamlit's defaults: no config of the app

    def command(port: int) -> list[str]:
        return [sys.executable, "-m", "streamlit", "run", str(BARE_APP), "--server.address", "127.0.0.1",
                "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
                "--server.fileWatcherType", "none"]

    found: set[tuple[str, str]] = set()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(ARTIFACTS / "bare-streamlit-server.log", "w") as log, \
            app_server(log, env=clean_env(), command=command, cwd=cwd) as (url, _proc):
        page = new_page(browser)
        try:
            page.goto(url)
            page.get_by_role("heading", name="First").wait_for()
            wait_idle(page)
            pages = _visit_all(page, lambda _t: found.update((v["rule"], v["kind"]) for v in _violations(page)))
            assert pages == 3
        finally:
            page.context.close()
    return found


def test_axe_finds_nothing_of_the_app_on_any_page_in_either_mode(browser, app_url, streamlit_own):
    page = new_page(browser)
    failures: list[str] = []
    visited: list[str] = []

    def check(mode: str):
        def visit(title: str) -> None:
            visited.append(f"{mode}/{title}")
            for v in _violations(page):
                if (v["rule"], v["kind"]) not in streamlit_own:
                    failures.append(f"[{mode}] {title}: {v['rule']} ({v['impact']}: {v['help']}) on {v['kind']} "
                                    f"{v['target']}: {v['html']} — {v['summary']}")
            unnamed = page.evaluate(UNNAMED_CHARTS_JS)
            if unnamed:
                failures.append(f"[{mode}] {title}: {unnamed} chart(s) without a text alternative (aria-label)")
        return visit

    try:
        page.goto(app_url)
        page.get_by_role("heading", name="Data", exact=True).wait_for()
        wait_idle(page)
        registered = (ROOT / "app.py").read_text().count("st.Page(")
        assert _visit_all(page, check("teaching")) == registered
        page.locator('[data-testid="stSidebar"]').get_by_text(REVIEW).click()
        wait_idle(page)
        assert _visit_all(page, check("review")) == registered
        if failures:
            shot(page, "accessibility-last-page")
        assert not failures, f"{len(failures)} violation(s) of WCAG 2.1 AA by the app:\n" + "\n".join(failures)
        assert len(visited) == 2 * registered
    finally:
        page.context.close()


def test_keyboard_from_page_choice_to_a_changed_threshold(browser, app_url):
    page = new_page(browser)
    try:
        page.goto(app_url)
        page.get_by_role("heading", name="Data", exact=True).wait_for()
        wait_idle(page)
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Policy designer").click()
        wait_idle(page)
        page.locator(CDF_CHART).wait_for()
        # the page's heading has the focus: the keyboard starts on the page, not in the sidebar
        page.wait_for_function("() => document.activeElement && document.activeElement.tagName === 'H1'"
                               " && document.activeElement.innerText.trim() === 'Policy designer'", timeout=10_000)
        thr = threshold_input(page)
        path: list[str] = []
        while len(path) < 5 and not thr.evaluate("el => el === document.activeElement"):
            page.keyboard.press("Tab")
            path.append(page.evaluate(FOCUS_JS))
        assert thr.evaluate("el => el === document.activeElement"), \
            "5 Tab presses did not reach the first threshold; the focus went:\n" + "\n".join(path)

        old = float(thr.input_value())
        before = page.evaluate(FINGERPRINT_JS % CDF_CHART)
        page.keyboard.press("ArrowUp")
        page.wait_for_function(chart_changed_js(FINGERPRINT_JS % CDF_CHART), arg=before, timeout=120_000)
        new = float(thr.input_value())
        step = scale_step(old)
        assert new == pytest.approx(old + step)
        assert 0.01 * old < step <= 0.1 * old  # a step of 1–10% of the threshold, whatever its magnitude
    finally:
        page.context.close()

