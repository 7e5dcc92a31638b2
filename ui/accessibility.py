"""Accessibility of every page (WCAG 2.1 AA for what the app draws): readable secondary text, the page's
heading focused after navigation, every chart named by its summary.

:func:`apply` runs before each page (app.py):

* the app's style sheet (assets/accessibility.css): captions and notes in a grey of at least 4.5:1 contrast;
* a small script, in the sidebar, that (1) after a page change moves the keyboard focus to the page's main
  heading (made focusable with ``tabindex="-1"``), so the next Tab reaches the page's first control instead of
  walking through the sidebar, and (2) names each chart shown by :func:`ui.figures.show` with its summary
  (``role="figure"``, ``aria-label``), for charts drawn later in the run as well (a DOM observer).

The script is the app's own constant text (no user text goes into it); the page's path changes the element, so
the browser runs it again on each navigation and only then.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from .figures import CHART_BOX

CSS = Path(__file__).resolve().parents[1] / "assets" / "accessibility.css"
#: ``st.session_state`` key: the last page's path and the number of page changes of the session.
NAV_KEY = "a11y_nav"

_SCRIPT = """<script>
(() => {
  const w = window, doc = document, box = '[class*="st-key-%(box)s"]';
  const tidy = () => {
    // a chart is a figure named by its summary (the text under it, in its box)
    doc.querySelectorAll(box).forEach(b => {
      const chart = b.querySelector('[data-testid="stPlotlyChart"]');
      const text = b.querySelector('[data-testid="stMarkdownContainer"]');
      const t = text ? text.textContent.trim() : '';
      if (chart && t && chart.getAttribute('aria-label') !== t) {
        chart.setAttribute('role', 'figure');
        chart.setAttribute('aria-label', t);
      }
    });
    // the headings' anchor links show only under the mouse: out of the Tab order, Tab reaches the page's controls
    doc.querySelectorAll('[data-testid="stHeaderActionElements"] a:not([tabindex])')
      .forEach(a => a.setAttribute('tabindex', '-1'));
  };
  if (!w.__prdpTidy) {
    w.__prdpTidy = new MutationObserver(tidy);
    w.__prdpTidy.observe(doc.body, {childList: true, subtree: true, characterData: true});
  }
  tidy();
  const nav = %(nav)d;
  if (w.__prdpNav === nav) return;
  w.__prdpNav = nav;
  const until = Date.now() + 20000;
  const focus = () => {
    const app = doc.querySelector('[data-testid="stApp"]');
    const h = doc.querySelector('[data-testid="stMain"] h1');
    if (h && app && app.getAttribute('data-test-script-state') === 'notRunning') {
      h.setAttribute('tabindex', '-1');
      h.focus({preventScroll: true});
    } else if (Date.now() < until) {
      setTimeout(focus, 50);
    }
  };
  focus();
})();
</script>"""


def navigation_count(url_path: str) -> int:
    """The number of page changes of this session, ``url_path`` (the page of this run) included."""
    last, count = st.session_state.get(NAV_KEY, (None, 0))
    if url_path != last:
        count += 1
        st.session_state[NAV_KEY] = (url_path, count)
    return int(count)


def apply(url_path: str) -> None:
    """The style sheet and the focus and chart-name script of the page at ``url_path`` (before the page runs)."""
    st.html(CSS)
    script = _SCRIPT % {"box": CHART_BOX, "nav": navigation_count(url_path)}
    st.sidebar.html(script, unsafe_allow_javascript=True)


__all__ = ["CSS", "NAV_KEY", "apply", "navigation_count"]
