"""Streamlit-side helpers shared by the pages: session state, sidebar, common widgets.

Nothing here computes privacy math: that is prdp_core's job. These helpers keep the
pages thin and consistent (error display, "learn" notes, reproduce-in-Python code).
"""

from __future__ import annotations


def _default_chart_template() -> None:
    """Make the charts' look (``prdp_core.charts.TEMPLATE``: plotly_white, lean) Plotly's default in the app
    process, so every figure is born with it; setting it per figure costs tens of milliseconds a chart on each
    rerun."""
    import plotly.io as pio

    from prdp_core.charts import TEMPLATE

    pio.templates.default = TEMPLATE


_default_chart_template()
