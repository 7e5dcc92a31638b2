"""Figures of the workshop board: the room's policies overlaid and compared.

Names of policies are typed by participants: they are HTML-escaped before they become trace
names or labels (Plotly renders a few HTML tags, links among them, in text).
"""

from __future__ import annotations

import html
from typing import Any, Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from . import PALETTE, layout
from .policy import loss_cdf_figure


def label(text: str, limit: int = 40) -> str:
    """A participant's text as a safe, short figure label."""
    t = str(text)
    return html.escape(t if len(t) <= limit else t[: limit - 1] + "…")


def board_cdf_figure(series: Mapping[str, tuple[np.ndarray, np.ndarray]], *, unit: str, who: str = "records",
                     view: str = "cdf", log_x: bool = True) -> go.Figure:
    """Loss CDFs of the board's policies overlaid (``series``: label → (losses, shares)); ``unit``
    names the x-axis unit ("ρ (zCDP)", "ε (pure DP)" or "ε at δ = 1e-06")."""
    safe = {label(k): v for k, v in series.items()}
    fig = loss_cdf_figure(safe, title=f"Loss CDF over {who}, every policy of the board", log_x=log_x, view=view,
                          unit="")
    fig.update_xaxes(title_text=f"loss of a {who[:-1]} ({unit})" + (", log scale" if log_x else ""))
    return fig


def tradeoff_figure(points: pd.DataFrame, *, delta: float) -> go.Figure:
    """Privacy against accuracy: each policy's 99th-percentile record loss (ε at δ) against the
    median relative error of its answers, the Pareto front joined by a line."""
    fig = go.Figure()
    front = points[points["pareto"]].sort_values("eps_p99")
    if len(front) > 1:
        fig.add_trace(go.Scatter(x=front["eps_p99"], y=front["median_rel_error"], mode="lines", name="Pareto front",
                                 line=dict(color="#999999", dash="dash"), hoverinfo="skip"))
    names = [label(n) for n in points["name"]]
    fig.add_trace(go.Scatter(
        x=points["eps_p99"], y=points["median_rel_error"], mode="markers+text", name="policies",
        text=names, textposition="top center",
        marker=dict(size=[14 if p else 9 for p in points["pareto"]],
                    color=[PALETTE[0] if p else PALETTE[1] for p in points["pareto"]],
                    symbol=["star" if p else "circle" for p in points["pareto"]]),
        customdata=np.array([[n, "on the Pareto front" if p else "beaten by another policy"]
                             for n, p in zip(names, points["pareto"])], dtype=object).reshape(-1, 2),
        hovertemplate="%{customdata[0]}: ε %{x:.4g} at the 99th percentile, median relative error %{y:.2%}"
                      "<br>%{customdata[1]}<extra></extra>"))
    fig = layout(fig, "Privacy vs accuracy (stars: the Pareto front)",
                 f"ε at δ = {delta:g} of the 99th-percentile record (log scale)", "median relative error (log scale)",
                 log_x=True, log_y=True)
    return fig


def public_functions_figure(policies: Mapping[str, Any], measure: str) -> go.Figure:
    """The public policy functions P(value of ``measure``) of several unit-splitting policies
    (``policies``: label → SplittingPolicy), each on its default thresholds row. Public."""
    rows = {name: _default_row(p) for name, p in policies.items()}
    ts = [float(dict(r[1])[measure]) for r in rows.values()]
    lo, hi = max(min(ts) / 10.0, 1e-12), max(ts) * 300.0
    jumps = np.concatenate([t * np.arange(1, 201) for t in ts])
    grid = np.unique(np.concatenate((np.logspace(np.log10(lo), np.log10(hi), 600), jumps[jumps <= hi])))
    fig = go.Figure()
    m = label(measure)
    for i, (name, pol) in enumerate(policies.items()):
        safe = label(name)
        fig.add_trace(go.Scatter(x=grid, y=pol.public_function(measure, grid, group=rows[name][0]), mode="lines",
                                 line_shape="hv", name=safe, line=dict(color=PALETTE[i % len(PALETTE)], width=2),
                                 hovertemplate=f"{m} = %{{x:,.4g}}: P = %{{y:.4g}}ρ<extra>{safe}</extra>"))
    return layout(fig, f"Public policy functions: loss of a record by its {m}",
                  f"{m} of the record, log scale", "P(r) (ρ), log scale", log_x=True, log_y=True)


def _default_row(policy: Any) -> Any:
    """The thresholds row of 'every other group' (or the only row)."""
    from ..core.splitting import DEFAULT_KEY

    return next((r for r in policy.thresholds.rows if r[0] == DEFAULT_KEY), policy.thresholds.rows[0])
