"""Figures of the multi-tier release (Analyst tiers page).

Builders only arrange numbers computed by :mod:`prdp_core.mechanisms.multitier`: per-tier
errors of each strategy, coalition losses, the template plan of the local model, released
answers and residual characteristic functions.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from . import PALETTE, layout

STRATEGY_COLOURS = {"multitier": PALETTE[0], "ideal": PALETTE[2], "independent": PALETTE[2], "gradual": PALETTE[1],
                    "grr": PALETTE[3], "brr": PALETTE[4]}


def mse_by_tier_figure(table: pd.DataFrame, columns: Mapping[str, str], *, title: str, y_label: str,
                       log_y: bool = True) -> go.Figure:
    """Grouped bars: one group per tier, one bar per strategy (``columns`` maps label → column)."""
    fig = go.Figure()
    tiers = [f"{t} (ε={e:g})" for t, e in zip(table["tier"], table["eps"])]
    for i, (label, col) in enumerate(columns.items()):
        fig.add_trace(go.Bar(x=tiers, y=table[col].tolist(), name=label, marker_color=PALETTE[i % len(PALETTE)],
                             hovertemplate="%{x}: %{y:.4g}<extra>" + label + "</extra>"))
    fig.update_layout(barmode="group")
    return layout(fig, title, "tier (budget ε)", y_label, log_y=log_y)


def coalition_figure(table: pd.DataFrame, *, unit: str = "ε") -> go.Figure:
    """Privacy loss of growing coalitions: multi-tier (computed) vs independent releases vs the guarantee."""
    fig = go.Figure()
    x = table["coalition"].tolist()
    fig.add_trace(go.Bar(x=x, y=table["independent"].tolist(), name="independent releases",
                         marker_color=PALETTE[3],
                         hovertemplate="%{x}: " + unit + " = %{y:.4g}<extra>independent</extra>"))
    fig.add_trace(go.Bar(x=x, y=table["gradual"].tolist(), name="gradual (budget split)",
                         marker_color=PALETTE[1], hovertemplate="%{x}: " + unit + " = %{y:.4g}<extra>gradual</extra>"))
    fig.add_trace(go.Bar(x=x, y=table["multitier"].tolist(), name="multi-tier (computed)",
                         marker_color=PALETTE[0],
                         hovertemplate="%{x}: " + unit + " = %{y:.4g}<extra>multi-tier</extra>"))
    fig.add_trace(go.Scatter(x=x, y=table["guarantee (max)"].tolist(), mode="markers", name="guarantee: max budget",
                             marker=dict(symbol="line-ew-open", size=28, color="#000000", line=dict(width=2))))
    fig.update_layout(barmode="group")
    return layout(fig, "What colluding tiers learn together", "coalition of tiers", f"privacy loss ({unit})")


def template_plan_figure(templates: pd.DataFrame, tiers: Sequence[str], eps: Sequence[float],
                         served: Sequence[int]) -> go.Figure:
    """The template chain (level against position, coloured by operator, labelled with k) and the tiers.

    Dashed lines are the tiers' budgets; a diamond marks the template serving each tier (its
    level is at or below the budget: the gap is the unused budget).
    """
    fig = go.Figure()
    for op, colour in (("rescale", PALETTE[0]), ("expansion", PALETTE[1])):
        sub = templates[templates["operator"] == op]
        fig.add_trace(go.Scatter(
            x=sub["template"].tolist(), y=sub["eps"].tolist(), mode="markers+text", name=op,
            text=[f"k={k}" for k in sub["k"]], textposition="top center", textfont=dict(size=9),
            marker=dict(color=colour, size=7),
            hovertemplate="template %{x}: level ε = %{y:.4g}, %{text}<extra>" + op + "</extra>"))
    # budget lines, labels and markers are collected and added once: add_hline/add_trace per tier copy the
    # whole figure each time (200 tiers took ~27 s)
    level = dict(zip(templates["template"].tolist(), templates["eps"].astype(float).tolist()))
    shapes, notes, marks = [], [], []
    for i, (name, e, s) in enumerate(zip(tiers, eps, served)):
        colour = PALETTE[(i + 2) % len(PALETTE)]
        shapes.append(dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=float(e), y1=float(e),
                           line=dict(dash="dash", color=colour)))
        notes.append(dict(text=f"{name}: ε={e:g}", xref="x domain", x=1, yref="y", y=float(e), xanchor="right",
                          yanchor="bottom", showarrow=False))
        marks.append(go.Scatter(x=[int(s)], y=[level[s]], mode="markers", name=f"serves {name}",
                                marker=dict(symbol="diamond-open", size=16, color=colour, line=dict(width=2)),
                                hovertemplate=f"{name}: served at ε_t = %{{y:.4g}} (budget {e:g})<extra></extra>"))
    fig.add_traces(marks)
    fig.update_layout(shapes=shapes, annotations=notes)
    return layout(fig, "Template plan: levels along the chain and the tier each template serves",
                  "template (position in the chain)", "privacy level ε of the template", height=420)


def release_central_figure(answers: pd.DataFrame, *, truth: bool, unit: str = "") -> go.Figure:
    """Each tier's released answer with its 95% interval (and the true value in teaching mode)."""
    fig = go.Figure()
    tiers = [f"{t} (ε={e:g})" for t, e in zip(answers["tier"], answers["eps"])]
    est = answers["estimate"].to_numpy(dtype=float)
    fig.add_trace(go.Scatter(
        x=tiers, y=est.tolist(), mode="markers", name="released answer", marker=dict(color=PALETTE[0], size=10),
        error_y=dict(type="data", symmetric=False, array=(answers["ci_high"].to_numpy() - est).tolist(),
                     arrayminus=(est - answers["ci_low"].to_numpy()).tolist(), color=PALETTE[0]),
        hovertemplate="%{x}: %{y:.6g}<extra>released</extra>"))
    if truth and "true" in answers.columns:
        fig.add_trace(go.Scatter(x=tiers, y=answers["true"].tolist(), mode="lines+markers", name="true value",
                                 line=dict(color="#666666", dash="dot"), marker=dict(symbol="x", size=9)))
    label = f"answer ({unit})" if unit else "answer"
    return layout(fig, "Released answer of every tier (95% interval of the noise)", "tier (budget ε)", label)


def release_local_figure(answers: pd.DataFrame, *, truth: bool) -> go.Figure:
    """Estimated count per category for every tier (and the true counts in teaching mode)."""
    fig = go.Figure()
    cats = list(pd.unique(answers["category"]))
    if truth and "true" in answers.columns:
        first = answers[answers["tier"] == answers["tier"].iloc[0]]
        fig.add_trace(go.Bar(x=cats, y=first["true"].tolist(), name="true count", marker_color="#BBBBBB"))
    for i, (tier, g) in enumerate(answers.groupby("tier", sort=False)):
        fig.add_trace(go.Scatter(x=g["category"].tolist(), y=g["estimate"].tolist(), mode="lines+markers",
                                 name=f"{tier} (ε={g['eps'].iloc[0]:g})", line=dict(color=PALETTE[i % len(PALETTE)]),
                                 hovertemplate="%{x}: %{y:.1f}<extra>" + str(tier) + "</extra>"))
    return layout(fig, "Estimated number of users per category, by tier", "category", "users (estimated)")


def residual_ratio_figure(t: np.ndarray, ratios: Mapping[str, np.ndarray], *, title: str) -> go.Figure:
    """Residual characteristic functions R(t) = Φ_to/Φ_from: a valid CF never leaves [−1, 1]."""
    fig = go.Figure()
    for i, (name, r) in enumerate(ratios.items()):
        fig.add_trace(go.Scatter(x=np.asarray(t).tolist(), y=np.clip(np.asarray(r, dtype=float), -5, 5).tolist(),
                                 mode="lines", name=name, line=dict(color=PALETTE[i % len(PALETTE)])))
    for y in (-1.0, 1.0):
        fig.add_hline(y=y, line_dash="dot", line_color="#666666")
    return layout(fig, title, "t", "R(t) (clipped to ±5)")
