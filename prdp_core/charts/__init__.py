"""Plotly figures shared by the app and the HTML report.

Every figure has a title, axis labels and units. Builders take the engine's
results (profiles, loss profiles, error tables) and never compute privacy math
themselves beyond arranging numbers for display. Generic builders live here;
topic-specific ones in submodules (``prdp_core.charts.<topic>``), which use
:func:`layout` and :data:`PALETTE` for a consistent look.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from ..data.profile import Histogram

#: Plotly template of every figure: Plotly's ``plotly_white`` with only what the app's charts can use
#: (:func:`_lean_template`), registered under this name when this module is imported.
TEMPLATE = "prdp_white"
#: The trace types the charts draw: the template keeps its defaults for these only.
TRACE_TYPES = ("scatter", "bar", "box", "histogram")
#: The legend of every chart: a row under the chart, anchored to the bottom of the figure (``yref="container"``),
#: so Plotly makes room for it below the x-axis title instead of drawing it over the title (a legend placed in
#: the plot's coordinates, e.g. ``y=-0.2``, stays where it is when the tick labels and the title need more room).
LEGEND = dict(orientation="h", x=0.0, xanchor="left", yref="container", y=0.0, yanchor="bottom")
#: Kinds of subplots no chart has (every chart is on cartesian axes): their template defaults are dropped.
UNUSED_SUBPLOTS = ("polar", "ternary", "scene", "geo")


def _lean_template() -> go.layout.Template:
    """``plotly_white`` without the defaults of the trace types the charts never draw (about 40 of them) and of
    the polar, ternary, 3-D and map subplots: the template is most of a small figure's JSON, which the app sends
    to the browser at every rerun that changes the chart (7 KB of it, 2.9 KB left). A figure looks the same,
    since Plotly applies a template's defaults to traces of their own type and to subplots of their own kind."""
    spec = pio.templates["plotly_white"].to_plotly_json()
    spec["data"] = {t: v for t, v in spec["data"].items() if t in TRACE_TYPES}
    spec["layout"] = {k: v for k, v in spec["layout"].items() if k not in UNUSED_SUBPLOTS}
    return go.layout.Template(spec)


pio.templates[TEMPLATE] = _lean_template()

#: Colour sequence used for overlaid policies (colour-blind friendly, Okabe–Ito).
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]


def plain_text(text: Any) -> str:
    """Text Plotly shows as it is: Plotly renders a few HTML tags in titles, names, labels and hover text
    (``<b>``, ``<a href>`` with an optional pop-up, ``<span style>``…), so ``<`` and ``>`` become the
    entities ``&lt;`` / ``&gt;`` (decoded only after the tags are parsed). Idempotent."""
    return str(text).replace("<", "&lt;").replace(">", "&gt;")


#: Tags of our own hover templates; any other "<" in a template comes from user text (a trace name).
_OWN_TAG = re.compile(r"<(?!/?extra>|br>)")


def _plain_values(v: Any) -> Any:
    if isinstance(v, str):
        return plain_text(v)
    if isinstance(v, np.ndarray) and v.dtype.kind in "OUS":
        v = v.tolist()
    if isinstance(v, (tuple, list)) and any(isinstance(x, str) for x in v):
        return [plain_text(x) if isinstance(x, str) else x for x in v]
    return v


def plain_figure(fig: go.Figure) -> go.Figure:
    """Make every text of ``fig`` that can hold user text (column names, group values, tier and policy
    labels) literal: titles, axis and legend titles, annotations, trace names, categorical values and
    hover texts; hover templates keep their own ``<extra>`` and ``<br>`` tags only. :func:`layout`
    applies it; builders that add traces after :func:`layout` call it again (it is idempotent)."""
    lay = fig.layout
    if lay.title.text:
        lay.title.text = plain_text(lay.title.text)
    for ax in [*fig.select_xaxes(), *fig.select_yaxes()]:
        if ax.title.text:
            ax.title.text = plain_text(ax.title.text)
    if lay.legend.title.text:
        lay.legend.title.text = plain_text(lay.legend.title.text)
    for ann in lay.annotations or ():
        if ann.text:
            ann.text = plain_text(ann.text)
    for tr in fig.data:
        if isinstance(getattr(tr, "name", None), str):
            tr.name = plain_text(tr.name)
        for attr in ("x", "y", "text", "hovertext"):
            if attr in tr and tr[attr] is not None:
                v = _plain_values(tr[attr])
                if v is not tr[attr]:
                    tr[attr] = v
        if getattr(tr, "hovertemplate", None):
            tr.hovertemplate = _OWN_TAG.sub("&lt;", tr.hovertemplate)
    return fig


def layout(fig: go.Figure, title: str, x: str, y: str, *, log_x: bool = False, log_y: bool = False,
           height: int = 360) -> go.Figure:
    """Common title, axes, legend and template of every figure; user text in it is shown literally
    (:func:`plain_figure`)."""
    fig.update_layout(title=dict(text=title, x=0.0, xanchor="left"), height=height,
                      margin=dict(l=60, r=20, t=50, b=50), legend=LEGEND)
    if pio.templates.default != TEMPLATE:  # the app makes it the default: figures are born with it
        fig.update_layout(template=TEMPLATE)
    # "-" lets Plotly pick linear, date or category axes itself (category bars stay visible)
    fig.update_xaxes(title_text=x, type="log" if log_x else "-")
    fig.update_yaxes(title_text=y, type="log" if log_y else "-")
    return plain_figure(fig)


def histogram_figure(hist: Histogram, measure: str, *, unit: str = "") -> go.Figure:
    """Log-scale histogram of a measure; zeros are reported in the title (no log bin)."""
    e = hist.edges
    centers = np.sqrt(e[:-1] * e[1:])
    widths = e[1:] - e[:-1]
    fig = go.Figure(go.Bar(x=centers, y=hist.counts, width=widths, marker_color=PALETTE[0],
                           customdata=np.stack([e[:-1], e[1:]], axis=1),
                           hovertemplate="%{customdata[0]:.3g} – %{customdata[1]:.3g}: %{y:,} records<extra></extra>"))
    zeros = f" ({hist.zeros:,} zeros not shown)" if hist.zeros else ""
    label = f"{measure} ({unit})" if unit else measure
    return layout(fig, f"Distribution of {measure}{zeros}", f"{label}, log scale", "records", log_x=True)


def lorenz_figure(curves: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> go.Figure:
    """Lorenz (concentration) curves of one or several measures with the equality line."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 100], y=[0, 100], mode="lines", name="perfect equality",
                             line=dict(color="#999999", dash="dash")))
    for i, (name, (pop, share)) in enumerate(curves.items()):
        fig.add_trace(go.Scatter(x=100 * pop, y=100 * share, mode="lines", name=name,
                                 line=dict(color=PALETTE[i % len(PALETTE)]),
                                 hovertemplate="smallest %{x:.1f}% of records hold %{y:.2f}% of the total"
                                               "<extra>" + name + "</extra>"))
    return layout(fig, "Concentration (Lorenz curve)", "share of records, smallest first (%)",
                   "share of the total (%)")


def cdf_figure(series: Mapping[str, tuple[np.ndarray, np.ndarray]], *, title: str, x_label: str,
               y_label: str = "share of records (%)", log_x: bool = False,
               vlines: Iterable[tuple[float, str]] = ()) -> go.Figure:
    """Step CDFs: each series is (x values, cumulative share in [0, 1])."""
    fig = go.Figure()
    for i, (name, (x, y)) in enumerate(series.items()):
        fig.add_trace(go.Scatter(x=x, y=100 * np.asarray(y), mode="lines", line_shape="hv", name=name,
                                 line=dict(color=PALETTE[i % len(PALETTE)]),
                                 hovertemplate="%{y:.2f}% at or below %{x:.4g}<extra>" + name + "</extra>"))
    for xv, label in vlines:
        fig.add_vline(x=xv, line_dash="dot", line_color="#666666", annotation_text=label,
                      annotation_position="top left")
    return layout(fig, title, x_label, y_label, log_x=log_x)


def line_figure(x: Sequence[float], ys: Mapping[str, Sequence[float]], *, title: str, x_label: str,
                y_label: str, log_x: bool = False, log_y: bool = False, mode: str = "lines") -> go.Figure:
    """Several named lines over a common x."""
    fig = go.Figure()
    for i, (name, y) in enumerate(ys.items()):
        fig.add_trace(go.Scatter(x=list(x), y=list(y), mode=mode, name=name,
                                 line=dict(color=PALETTE[i % len(PALETTE)])))
    return layout(fig, title, x_label, y_label, log_x=log_x, log_y=log_y)
