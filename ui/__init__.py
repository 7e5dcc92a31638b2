"""Streamlit-side helpers shared by the pages: session state, sidebar, common widgets.

Nothing here computes privacy math: that is prdp_core's job. These helpers keep the
pages thin and consistent (error display, "learn" notes, reproduce-in-Python code).
"""

from __future__ import annotations


def _leave_legacy_multipage_mode() -> None:
    """Make a server's first request for a page URL go through app.py.

    Streamlit treats a project with a ``pages/`` folder as a legacy multipage app until
    ``st.navigation`` has run once in the server process: a first request for, say,
    ``/policy_designer`` would run that page without app.py (no session set-up, legacy
    menu). Pages import this package, so switching the flag off here and rerunning sends
    that request through app.py and its navigation.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:  # pragma: no cover - streamlit internals moved
        return
    if PagesManager.uses_pages_directory and get_script_run_ctx(suppress_warning=True) is not None:
        PagesManager.uses_pages_directory = False
        import streamlit as st

        st.rerun()


_leave_legacy_multipage_mode()


def _default_chart_template() -> None:
    """Make the charts' look (plotly_white) Plotly's default in the app process, so every figure
    is born with it; setting it per figure costs tens of milliseconds a chart on each rerun."""
    import plotly.io as pio

    from prdp_core.charts import TEMPLATE

    pio.templates.default = TEMPLATE


_default_chart_template()
