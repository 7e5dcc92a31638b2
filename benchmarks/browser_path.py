"""The app's path at scale in a real browser (``bench_user_path.py --browser``): Playwright driving Debian chromium
(headless, no sandbox; never a downloaded browser) against the app started as in ``--app`` (127.0.0.1, a free port,
``PRDP_DATA_DIR`` the file's folder, no memory setting, an empty result cache; stopped by its process handle).

What a person does, timed from the click (or the Enter) to what they wait for on the screen:

1. the Data page's *Large dataset* tab: the file chosen, *Connect* → the guessed roles (the "not in use yet" note);
   the roles set to ``--id``/``--owner`` where the guess differs; *Check and use this table* → the sidebar names
   the file with its records;
2. the Policy designer → the records' loss CDF drawn;
3. the first threshold doubled, Enter → the CDF redrawn with other data;
4. *Compute the owners' losses* switched on → the owners' CDF drawn;
5. the Run page, *Run release* → the answers' chart drawn;
6. *Compute the owners' realized losses* switched on → their CDF drawn.

Then a second browser (a new session) connects the unchanged file (step 1 again), and two more browsers press *Run
release* within a few milliseconds of each other (a heavy step each: one may queue). Each row has the step's wall
time and the server's peak resident memory during it (``VmHWM``, reset before the step).
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.e2e.server import CHROMIUM, CHROMIUM_FLAGS, FINGERPRINT_JS, IDLE_JS, chart_changed_js  # noqa: E402

Row = tuple[str, float, float]
PLOT = " .js-plotly-plot"


def _idle(page: Any, timeout_ms: float) -> None:
    page.wait_for_timeout(300)
    page.wait_for_function(IDLE_JS, timeout=timeout_ms)
    page.wait_for_timeout(300)


def _no_error(page: Any, what: str) -> None:
    """Stop the run, naming the step, when the page shows an error box or an exception."""
    boxes = page.locator(ERROR_BOXES)
    if boxes.count():
        raise SystemExit(f"--browser stopped at {what}: the page shows: {boxes.first.inner_text()[:400]}")


ERROR_BOXES = '[data-testid="stAlertContentError"], [data-testid="stException"]'


def _shown(page: Any, selector: str, what: str) -> None:
    """Wait until ``selector`` is on the page — or stop, naming ``what``, when an error box or an exception shows
    instead (a step that failed never draws what is waited for)."""
    page.wait_for_function("([sel, err]) => !!document.querySelector(sel) || !!document.querySelector(err)",
                           arg=[selector, ERROR_BOXES])
    if not page.locator(selector).count():
        _no_error(page, what)


def _choose(page: Any, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label`` (unless it shows it already)."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label).first
    if box.locator(f'text="{option}"').count():
        return
    box.get_by_role("combobox").click()
    page.get_by_role("option", name=option, exact=True).click()
    _idle(page, 60_000)


class BrowserPath:
    """One browser (Playwright's sync API) against ``url``; ``server`` measures the server's peak memory."""

    def __init__(self, url: str, server: Any, timeout_s: float) -> None:
        from playwright.sync_api import sync_playwright

        self.url, self.server, self.timeout_ms = url, server, timeout_s * 1000
        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)

    def close(self) -> None:
        self.browser.close()
        self._pw.stop()

    def page(self) -> Any:
        ctx = self.browser.new_context(viewport={"width": 1400, "height": 1000})
        pg = ctx.new_page()
        pg.set_default_timeout(self.timeout_ms)
        return pg

    def step(self, rows: list[Row], label: str, act: Callable[[], None], done: Callable[[], None]) -> None:
        """Time ``done()`` (the wait for what the user looks for) from ``act()`` (the click)."""
        self.server.reset_peak()
        t0 = time.perf_counter()
        act()
        done()
        rows.append((label, time.perf_counter() - t0, self.server.peak_gb()))
        print(f"{label}: {rows[-1][1]:.1f} s", file=sys.stderr, flush=True)

    def connect(self, pg: Any, rows: list[Row], label: str, file: str, id_col: str, owner: str, n_rows: str) -> None:
        """Step 1: open the app, connect ``file`` and make it the active dataset with these roles."""
        pg.goto(self.url)
        pg.get_by_role("heading", name="Data", exact=True).wait_for()
        _idle(pg, self.timeout_ms)
        pg.get_by_role("tab", name=re.compile("Large dataset")).click()
        _idle(pg, self.timeout_ms)
        _choose(pg, "File or folder", file)
        self.step(rows, f"{label}: Connect → roles guessed",
                  lambda: pg.get_by_role("button", name="Connect").click(),
                  lambda: pg.get_by_text(f"{file} is not in use yet").or_(pg.locator(ERROR_BOXES)).first.wait_for())
        _no_error(pg, f"{label}, Connect")
        _idle(pg, self.timeout_ms)
        _choose(pg, "Record id", id_col)
        _choose(pg, "Owner id", owner)
        active = (pg.locator('[data-testid="stSidebar"] [data-testid="stMarkdownContainer"]')
                  .filter(has_text=file).filter(has_text=f"{n_rows} records"))
        self.step(rows, f"{label}: Check and use this table → in use",
                  lambda: pg.get_by_role("button", name="Use this table").first.click(),
                  lambda: active.or_(pg.locator(ERROR_BOXES)).first.wait_for())
        _idle(pg, self.timeout_ms)
        _no_error(pg, f"{label}, connect")

    def nav(self, pg: Any, page_name: str) -> None:
        pg.locator('[data-testid="stSidebarNav"] a').filter(has_text=page_name).first.click()

    def first_session(self, rows: list[Row], file: str, id_col: str, owner: str, n_rows: str) -> None:
        pg = self.page()
        label = "first session"
        self.connect(pg, rows, label, file, id_col, owner, n_rows)
        chart = ".st-key-cdf_records" + PLOT
        self.step(rows, f"{label}: Policy designer → records' CDF", lambda: self.nav(pg, "Policy designer"),
                  lambda: _shown(pg, chart, "the records' CDF"))
        _idle(pg, self.timeout_ms)
        fingerprint = FINGERPRINT_JS % chart
        before = pg.evaluate(fingerprint)
        box = pg.locator('[data-testid="stNumberInput"]').filter(has_text=re.compile(r"^T\(")).locator("input").first
        old = float(box.input_value())
        box.fill(f"{2 * old:g}")
        self.step(rows, f"{label}: threshold {old:g} → {2 * old:g} → CDF redrawn", lambda: box.press("Enter"),
                  lambda: pg.wait_for_function(chart_changed_js(fingerprint), arg=before, polling=20,
                                               timeout=self.timeout_ms))
        _idle(pg, self.timeout_ms)
        self.until_drawn(pg, rows, f"{label}: owners' losses switched on → owners' CDF",
                         pg.get_by_text("Compute the owners' losses (in the engine)"), "cdf_owners")
        self.nav(pg, "Run")
        _idle(pg, self.timeout_ms)
        self.until_drawn(pg, rows, f"{label}: Run release → answers", pg.get_by_role("button", name="Run release"),
                         "run_answers_chart")
        self.until_drawn(pg, rows, f"{label}: owners' realized losses switched on → their CDF",
                         pg.get_by_text("Compute the owners' realized losses (in the engine)"), "run_cdf_owners")
        pg.context.close()

    def until_drawn(self, pg: Any, rows: list[Row], label: str, control: Any, chart_key: str) -> None:
        """One timed step: click ``control`` (a button, a switch's label), wait for the chart ``chart_key``."""
        self.step(rows, label, control.click, lambda: _shown(pg, f".st-key-{chart_key}{PLOT}", label))
        _idle(pg, self.timeout_ms)
        _no_error(pg, label)

    def two_releasing(self, rows: list[Row], file: str, id_col: str, owner: str, n_rows: str) -> None:
        pages = [self.page(), self.page()]
        for k, pg in enumerate(pages):
            self.connect(pg, [], f"session {k + 1}", file, id_col, owner, n_rows)
            self.nav(pg, "Run")
            _idle(pg, self.timeout_ms)
        buttons = [pg.get_by_role("button", name="Run release") for pg in pages]
        self.server.reset_peak()
        starts = []
        for b in buttons:  # both clicks within a few milliseconds: the server gets both requests at once
            b.click()
            starts.append(time.perf_counter())
        for k, pg in enumerate(pages):
            _shown(pg, ".st-key-run_answers_chart" + PLOT, f"the release of session {k + 1}")
            rows.append((f"session {k + 1} of two releasing at once: Run release → answers",
                         time.perf_counter() - starts[k], self.server.peak_gb()))
            print(f"{rows[-1][0]}: {rows[-1][1]:.1f} s", file=sys.stderr, flush=True)
        for pg in pages:
            _no_error(pg, "two releasing at once")
            pg.context.close()


def run_browser(server: Any, file: str, id_col: str, owner: str, n_rows: int, timeout_s: float) -> list[Row]:
    """The path of the module doc on ``server`` (started, ready): (step, wall s, server's peak GB) rows."""
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"--browser needs {CHROMIUM} (Debian's chromium; PRDP_CHROMIUM names another)")
    b = BrowserPath(server.url, server, timeout_s)
    rows: list[Row] = []
    shown = f"{n_rows:,}"
    try:
        b.first_session(rows, file, id_col, owner, shown)
        pg = b.page()
        b.connect(pg, rows, "second session (unchanged file)", file, id_col, owner, shown)
        pg.context.close()
        b.two_releasing(rows, file, id_col, owner, shown)
    finally:
        b.close()
    return rows
