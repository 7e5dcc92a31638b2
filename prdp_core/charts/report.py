"""Figures of the study report: released answers with intervals, delivered-loss CDFs.

The report reuses the app's builders (``charts.policy``, ``charts.budget``,
``charts.tradeoffs``); this module adds the two figures only the report needs.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from . import PALETTE, layout


def answers_ci_figure(answers: pd.DataFrame, *, title: str, label: str = "label", max_points: int = 60) -> go.Figure:
    """Released estimates with their 95% intervals (when the release has them) and, in teaching
    mode, the true values. ``answers`` needs ``estimate`` and a ``label`` column."""
    a = answers.head(max_points)
    x = a[label].astype(str).tolist()
    err = None
    if {"ci_low", "ci_high"} <= set(a.columns):
        hi = (a["ci_high"] - a["estimate"]).to_numpy(dtype=float)
        lo = (a["estimate"] - a["ci_low"]).to_numpy(dtype=float)
        err = dict(type="data", symmetric=False, array=hi.tolist(), arrayminus=lo.tolist(), color="#9ecae1")
    fig = go.Figure(go.Scatter(x=x, y=a["estimate"].astype(float).tolist(), mode="markers",
                               name="released estimate" + (" (95% interval)" if err else ""),
                               marker=dict(color=PALETTE[0], size=8), error_y=err))
    if "true" in a.columns:
        fig.add_trace(go.Scatter(x=x, y=a["true"].astype(float).tolist(), mode="markers",
                                 name="true value (teaching only)", marker=dict(color=PALETTE[3], symbol="x", size=8)))
    fig = layout(fig, title, "answer", "value")
    fig.update_xaxes(type="category", showticklabels=len(a) <= 40)
    return fig


def delivered_cdf_figure(series: Mapping[str, tuple[np.ndarray, np.ndarray]], *, title: str, unit: str = "ε",
                         log_x: bool = True) -> go.Figure:
    """CDFs of per-record delivered (or requested) losses in ``unit``, several series overlaid."""
    fig = go.Figure()
    for i, (name, (x, y)) in enumerate(series.items()):
        x = np.asarray(x, dtype=float)
        y = 100 * np.asarray(y, dtype=float)
        fig.add_trace(go.Scatter(x=x.tolist(), y=y.tolist(), mode="lines+markers" if x.size < 30 else "lines",
                                 line_shape="hv", name=name, line=dict(color=PALETTE[i % len(PALETTE)], width=2),
                                 hovertemplate="%{y:.3f}% of records lose at most %{x:.4g}" + unit
                                               + "<extra>" + name + "</extra>"))
    return layout(fig, title, f"per-record loss ({unit})" + (", log scale" if log_x else ""),
                  "share with loss ≤ x (%)", log_x=log_x)
