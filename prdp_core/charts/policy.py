"""Figures of the Policy designer: policy-loss CDFs and the public policy function."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import plotly.graph_objects as go

from . import PALETTE, layout
from .steps import step_corners, thin_steps


def loss_cdf_figure(series: Mapping[str, tuple[np.ndarray, np.ndarray]], *, title: str, base: float | None = None,
                    log_x: bool = True, unit: str = "ρ", view: str = "cdf") -> go.Figure:
    """Per-record (or per-owner) losses of several policies overlaid.

    Each series is (loss values ascending, share of records with loss ≤ value). ``view``:
    ``"cdf"`` (share with loss ≤ x), ``"zoom"`` (the same, y-axis zoomed on the records paying
    more than the smallest loss) or ``"tail"`` (share paying more than x, log scale — the
    heavy tail at a glance). A dotted line marks the base loss (what unsplit records pay). A curve of
    more points than a chart can show is thinned to its screen resolution (:func:`~.steps.thin_steps`).
    """
    fig = go.Figure()
    lowest = 100.0
    for i, (name, (x, y)) in enumerate(series.items()):
        x = np.asarray(x, dtype=float)
        y = 100 * np.asarray(y, dtype=float)
        if y.size:
            lowest = min(lowest, float(y[0]))
        if view == "tail":
            x, y = x[:-1], 100.0 - y[:-1]  # share strictly above each jump; the last point is 0
            x, y = thin_steps(x, y, log_x=log_x, log_y=True)
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines+markers" if x.size < 30 else "lines", line_shape="hv",
                                     name=name, line=dict(color=PALETTE[i % len(PALETTE)], width=2),
                                     marker=dict(size=5),
                                     hovertemplate="%{y:.4g}% of them lose more than %{x:.4g}" + unit
                                                   + "<extra>" + name + "</extra>"))
            continue
        # start the step at the share of records paying the smallest loss
        x, y = thin_steps(x, y, log_x=log_x)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines+markers" if x.size < 30 else "lines", line_shape="hv",
                                 name=name, line=dict(color=PALETTE[i % len(PALETTE)], width=2),
                                 marker=dict(size=5),
                                 hovertemplate="%{y:.3f}% of them lose at most %{x:.4g}" + unit
                                               + "<extra>" + name + "</extra>"))
    if base is not None and base > 0:
        # the line and label of fig.add_vline(x=base, …, annotation_position="bottom right"), set directly:
        # add_vline's machinery for lines across subplots took a third of this figure's time
        fig.update_layout(shapes=[dict(type="line", x0=base, x1=base, xref="x", y0=0, y1=1, yref="y domain",
                                       line=dict(color="#666666", dash="dot"))],
                          annotations=[dict(text=f"base loss {base:.3g}{unit}", showarrow=False, x=base, xref="x",
                                            xanchor="left", y=0, yref="y domain", yanchor="bottom")])
    x_label = f"policy loss P(r) ({unit}, zCDP)" + (", log scale" if log_x else "")
    if view == "tail":
        return layout(fig, title, x_label, "share with loss > x (%, log scale)", log_x=log_x, log_y=True)
    fig = layout(fig, title, x_label, "share with loss ≤ x (%)", log_x=log_x)
    low = max(0.0, lowest - 0.1 * (100.0 - lowest) - 0.05) if view == "zoom" else 0.0
    fig.update_yaxes(range=[low, 100.0 + (100.0 - low) * 0.01])
    return fig


def public_function_figure(grid: np.ndarray, curves: Mapping[str, np.ndarray], *, measure: str,
                           observed: np.ndarray | Mapping[str, float] | None = None, unit: str = "ρ") -> go.Figure:
    """The published policy P as a function of a hypothetical record's value of one measure.

    ``curves`` maps a group label to P over ``grid``; ``observed`` (optional, confidential)
    marks quantiles of the real data on the x-axis: the values themselves, or their median, p90 and
    p99 already computed (a mapping label → value, e.g. from a profile computed by an engine).
    Each curve is drawn from the points where its value changes (:func:`~.steps.step_corners`: the same steps).
    """
    fig = go.Figure()
    for i, (name, values) in enumerate(curves.items()):
        x, y = step_corners(grid, values)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line_shape="hv", name=name,
                                 line=dict(color=PALETTE[i % len(PALETTE)], width=2),
                                 hovertemplate=f"{measure} = %{{x:,.4g}}: P = %{{y:.4g}}{unit}<extra>{name}</extra>"))
    if isinstance(observed, Mapping):
        marks = list(zip(observed.values(), observed))
    elif observed is not None and observed.size:
        marks = list(zip(np.quantile(observed, [0.5, 0.9, 0.99]), ("median", "p90", "p99")))
    else:
        marks = []
    if marks:
        for q, lab in marks:
            fig.add_vline(x=float(q), line_dash="dot", line_color="#999999", annotation_text=lab,
                          annotation_position="top left")
    return layout(fig, f"Public policy function: loss of a record by its {measure}",
                  f"{measure} of the record, log scale", f"P(r) ({unit}), log scale", log_x=True, log_y=True)
