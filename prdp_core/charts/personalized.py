"""Figures of the personalized DP lab: specifications, delivered ε, thresholds, comparisons, PE scores.

Builders only arrange numbers computed by :mod:`prdp_core.mechanisms.personalized`.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..core.loss_profile import ecdf
from ..core.neighbours import AddRemove, Substitution
from . import PALETTE, cdf_figure, layout

NEIGHBOUR_COLOURS = {AddRemove.name: PALETTE[0], Substitution.name: PALETTE[3]}


def spec_figure(eps: np.ndarray, tiers: np.ndarray | None = None) -> go.Figure:
    """Histogram of the requested ε (Φ) over the users, stacked by tier when there are tiers."""
    e = np.asarray(eps, dtype=float)
    fig = go.Figure()
    groups = [("all users", np.ones(e.size, bool))] if tiers is None else [
        (str(t), np.asarray(tiers) == t) for t in pd.unique(np.asarray(tiers))]
    lo, hi = float(e.min()), float(e.max())
    size = max((hi - lo) / 50, 0.005)
    bins = dict(start=lo - size / 2, end=hi + size, size=size)  # bins centred so that lo and hi are inside
    for i, (name, m) in enumerate(groups):
        fig.add_trace(go.Histogram(x=e[m].tolist(), name=name, xbins=bins, marker_color=PALETTE[i % len(PALETTE)],
                                   hovertemplate="ε %{x}: %{y:,} users<extra>" + name + "</extra>"))
    fig.update_layout(barmode="stack")
    return layout(fig, "Requested ε (Φ) per user", "requested ε (smaller = stronger privacy)", "users")


def delivered_cdf_figure(requested: np.ndarray, delivered: Mapping[str, np.ndarray]) -> go.Figure:
    """CDFs of requested Φ and of the ε each mechanism delivers (left of requested = over-protection)."""
    series = {"requested Φ": ecdf(np.asarray(requested, dtype=float))}
    for name, d in delivered.items():
        series[name] = ecdf(np.asarray(d, dtype=float))
    return cdf_figure(series, title="Requested vs delivered ε per user", x_label="ε (privacy loss)",
                      y_label="share of users (%)")


def pi_curve_figure(phi_grid: np.ndarray, curves: Mapping[str, np.ndarray]) -> go.Figure:
    """Sample's keep probability π(Φ; t) for a few thresholds."""
    fig = go.Figure()
    for i, (name, pi) in enumerate(curves.items()):
        fig.add_trace(go.Scatter(x=phi_grid, y=100 * np.asarray(pi), mode="lines", name=name,
                                 line=dict(color=PALETTE[i % len(PALETTE)]),
                                 hovertemplate="Φ = %{x:.3g}: kept with probability %{y:.1f}%<extra></extra>"))
    return layout(fig, "Sample: probability that a user's tuple is used", "requested ε (Φ)",
                  "keep probability π (%)")


def threshold_curve_figure(curves: Mapping[str, pd.DataFrame], markers: Mapping[str, float], *, unit: str,
                           title: str = "Error against the threshold t") -> go.Figure:
    """RMSE against t (one line per curve: oracle, proxy, Threshold…), with markers at named thresholds."""
    fig = go.Figure()
    for i, (name, df) in enumerate(curves.items()):
        colour = PALETTE[i % len(PALETTE)]
        fig.add_trace(go.Scatter(x=df["t"].tolist(), y=df["rmse"].tolist(), mode="lines+markers", name=name,
                                 line=dict(color=colour),
                                 hovertemplate="t = %{x:.3g}: RMSE %{y:,.4g}<extra>" + name + "</extra>"))
        if "ci_low" in df and df["ci_low"].notna().any() and (df["ci_high"] > df["ci_low"]).any():
            t = df["t"].to_numpy(float)
            fig.add_trace(go.Scatter(x=np.r_[t, t[::-1]].tolist(),
                                     y=np.r_[df["ci_high"].to_numpy(float),
                                             df["ci_low"].to_numpy(float)[::-1]].tolist(),
                                     fill="toself", line=dict(width=0), fillcolor=colour, opacity=0.15,
                                     name=f"{name} 95% interval", showlegend=False, hoverinfo="skip"))
    for label, at in markers.items():
        fig.add_vline(x=at, line_dash="dot", line_color="#666666", annotation_text=label,
                      annotation_position="top")
    return layout(fig, title, "threshold t (ε)", f"RMSE ({unit})", log_y=True)


def comparison_figure(df: pd.DataFrame, *, unit: str, title: str) -> go.Figure:
    """RMSE per mechanism with 95% intervals; colour = neighbour notion of the guarantee.

    The axis is logarithmic when the RMSEs span more than a factor 30 and are all positive.
    """
    fig = go.Figure()
    rmse = df["rmse"].to_numpy(dtype=float)
    positive = rmse[rmse > 0]
    log_x = bool(positive.size == rmse.size and rmse.size and positive.max() / positive.min() > 30)
    for notion, colour in NEIGHBOUR_COLOURS.items():
        part = df[df["neighbours"] == notion]
        if part.empty:
            continue
        r = part["rmse"].to_numpy(dtype=float)
        fig.add_trace(go.Bar(
            x=r.tolist(), y=[str(m) for m in part["mechanism"]], orientation="h", name=f"{notion} neighbours",
            marker_color=colour,
            error_x=dict(type="data", symmetric=False, array=(part["ci_high"].to_numpy(float) - r).tolist(),
                         arrayminus=(r - part["ci_low"].to_numpy(float)).tolist()),
            customdata=[[str(m)] for m in part["method"]],
            hovertemplate="%{y}: RMSE %{x:,.4g} (%{customdata[0]})<extra></extra>"))
    layout(fig, title, f"RMSE ({unit})" + (", log scale" if log_x else ""), "mechanism", log_x=log_x)
    # layout() sets numeric axes; the mechanism axis is categorical
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=[str(m) for m in df["mechanism"]][::-1])
    return fig


def pe_score_figure(r: np.ndarray, d: np.ndarray, pmf: np.ndarray, *, truth: float | None = None) -> go.Figure:
    """PE's personalized score d_f(D, r, Φ) and output probabilities over the range."""
    fig = go.Figure()
    r, d, pmf = (np.asarray(a, dtype=float).tolist() for a in (r, d, pmf))
    fig.add_trace(go.Scatter(x=r, y=d, mode="lines", name="score d(D, r, Φ)", line=dict(color=PALETTE[0]),
                             line_shape="hv", hovertemplate="r = %{x:.4g}: d = %{y:.3g}<extra></extra>"))
    fig.add_trace(go.Scatter(x=r, y=[100 * p for p in pmf], mode="lines", name="output probability",
                             yaxis="y2", line=dict(color=PALETTE[1]), line_shape="hv",
                             hovertemplate="r = %{x:.4g}: %{y:.3g}%<extra></extra>"))
    if truth is not None:
        fig.add_vline(x=truth, line_dash="dot", line_color="#666666", annotation_text="true answer")
    layout(fig, "PE: personalized score and output distribution", "output r",
           "score d (−cheapest ε of tuples to change)")
    fig.update_layout(yaxis2=dict(title="probability (%)", overlaying="y", side="right", rangemode="tozero"))
    return fig


def experiment_figure(df: pd.DataFrame, *, title: str, unit: str = "answer units") -> go.Figure:
    """RMSE per mechanism of a paper experiment (bars with 95% intervals)."""
    return comparison_figure(df.assign(method=df.get("method", "simulated")), unit=unit, title=title)
