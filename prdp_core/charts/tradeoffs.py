"""Figures of the Trade-offs and Run pages (per-record zCDP paper, Figs. 1–5)."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import LEGEND, PALETTE, TEMPLATE, layout, plain_figure


def box_from_quantiles(stats: pd.DataFrame, *, x: str, color: str, title: str, x_label: str,
                       y_label: str = "median ARE per answer (log scale)", lines: Sequence[tuple[float, str]] = (),
                       log_y: bool = True) -> go.Figure:
    """Box plots drawn from precomputed quantiles (columns q05, q25, median, q75, q95).

    One box per row; boxes of the same ``color`` value share a colour and legend entry.
    Whiskers are the 5th and 95th percentiles.
    """
    fig = go.Figure()
    for i, (key, grp) in enumerate(stats.groupby(color, sort=False, observed=True)):
        fig.add_trace(go.Box(
            x=grp[x].astype(str), q1=grp["q25"], median=grp["median"], q3=grp["q75"],
            lowerfence=grp["q05"], upperfence=grp["q95"], name=str(key), marker_color=PALETTE[i % len(PALETTE)],
            boxpoints=False))
    for yv, lab in lines:
        fig.add_hline(y=yv, line_dash="dash", line_color="#999999", annotation_text=lab,
                      annotation_position="top left")
    fig.update_layout(boxmode="group")
    return layout(fig, title, x_label, y_label, log_y=log_y)


def sweep_figure(boxes: pd.DataFrame, losses: pd.DataFrame, family: str, *, target_lines=(0.1, 1.0)) -> go.Figure:
    """Fig. 2 (left): ARE over the workload vs the share of records with P(r) above the base loss,
    one box per threshold setting (from precomputed quantiles), one panel per base ρ."""
    rhos = sorted(losses["base_rho"].unique())
    fig = make_subplots(rows=1, cols=len(rhos), shared_yaxes=True,
                        subplot_titles=[f"base loss ρ = {r:g}" for r in rhos])
    b = boxes[boxes["family"] == family].merge(losses[["setting", "base_rho", "share_above_base"]],
                                               on=["setting", "base_rho"])
    settings = list(dict.fromkeys(b["setting"]))
    for j, rho in enumerate(rhos, start=1):
        sub = b[b["base_rho"] == rho]
        for row in sub.itertuples(index=False):
            i = settings.index(row.setting)
            fig.add_trace(go.Box(x=[f"{100 * row.share_above_base:.2f}%"], q1=[row.q25], median=[row.median],
                                 q3=[row.q75], lowerfence=[row.q05], upperfence=[row.q95], name=row.setting,
                                 marker_color=PALETTE[i % len(PALETTE)], showlegend=(j == 1), boxpoints=False,
                                 legendgroup=row.setting), row=1, col=j)
        for yv, col in zip(target_lines, ("#009E73", "#D55E00")):
            fig.add_hline(y=yv, line_dash="dash", line_color=col, row=1, col=j)
        fig.update_xaxes(title_text="records above the base loss", row=1, col=j, type="category")
    fig.update_yaxes(type="log")
    fig.update_yaxes(title_text="median ARE per answer (log)", row=1, col=1)
    fig.update_layout(title=dict(text=f"{family}: error vs share of records paying more", x=0.0),
                      height=420, template=TEMPLATE, margin=dict(l=60, r=20, t=70, b=50),
                      legend=LEGEND)
    return plain_figure(fig)  # the family names a measure (user text)


def mse_figure(curves: Mapping[str, tuple[np.ndarray, np.ndarray]], optima: Mapping[str, float]) -> go.Figure:
    """Fig. 1: MSE / E[sum] of a clipped Gaussian sum vs the clipping bound Δ, optimum marked."""
    fig = go.Figure()
    for i, (name, (d, r)) in enumerate(curves.items()):
        c = PALETTE[i % len(PALETTE)]
        fig.add_trace(go.Scatter(x=d, y=r, mode="lines", name=name, line=dict(color=c)))
        if name in optima:
            fig.add_vline(x=optima[name], line_dash="dot", line_color=c)
    fig.add_hline(y=1.0, line_dash="dash", line_color="#0072B2", annotation_text="noise = signal",
                  annotation_position="bottom left")
    return layout(fig, "Global zCDP on heavy tails: MSE / E[sum] of a clipped Gaussian sum (n = 1,000)",
                  "clipping bound Δ (log scale)", "MSE / E[sum] (log scale)", log_x=True, log_y=True)


def answers_figure(answers: pd.DataFrame, *, max_points: int = 400) -> go.Figure:
    """Noisy answers with 95% intervals (and true values when present), largest answers first."""
    a = answers.sort_values("estimate", ascending=False).head(max_points)
    labels = a["label"] if "label" in a.columns else a.index.astype(str)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=labels, y=a["estimate"], mode="markers", name="released estimate",
                             marker=dict(color=PALETTE[0]),
                             error_y=dict(type="data", symmetric=False, array=a["ci_high"] - a["estimate"],
                                          arrayminus=a["estimate"] - a["ci_low"], color="#9ecae1")))
    if "true" in a.columns:
        fig.add_trace(go.Scatter(x=labels, y=a["true"], mode="markers", name="true value (teaching only)",
                                 marker=dict(color=PALETTE[3], symbol="x")))
    fig = layout(fig, "Released answers with 95% intervals", "answer", "value")
    fig.update_xaxes(type="category", showticklabels=len(a) <= 40)
    return fig
