"""Figures of the Concepts page: what ε means, zCDP ↔ (ε, δ), per-attribute costs, histograms.

Builders only arrange numbers computed by :mod:`prdp_core.core.interpret` and
:mod:`prdp_core.mechanisms.granular`; they compute no privacy math themselves.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.graph_objects as go

from . import PALETTE, layout


def _v(series: pd.Series | Sequence) -> list:
    """Plain Python values (Plotly does not draw pandas' string arrays as categories)."""
    return series.tolist() if hasattr(series, "tolist") else list(series)


def accuracy_figure(curve: pd.DataFrame, eps: float | None = None) -> go.Figure:
    """Inference accuracy and Laplace round-back probability against ε (``interpret.accuracy_curve``)."""
    fig = go.Figure()
    series = [("accuracy", "best guess of one bit (e^ε/(1+e^ε))"),
              ("round_back", "count + Lap(1/ε) rounds back exactly"),
              ("round_back_replacement", "histogram cell + Lap(2/ε) rounds back exactly")]
    for i, (col, name) in enumerate(series):
        fig.add_trace(go.Scatter(x=_v(curve["eps"]), y=_v(100 * curve[col]), mode="lines", name=name,
                                 line=dict(color=PALETTE[i], dash="solid" if i == 0 else "dot"),
                                 hovertemplate="ε = %{x:.3g}: %{y:.4g}%<extra>" + name + "</extra>"))
    if eps is not None:
        fig.add_vline(x=eps, line_dash="dash", line_color="#666666", annotation_text=f"ε = {eps:.3g}",
                      annotation_position="top left")
    fig = layout(fig, "What ε lets a worst-case adversary do", "ε (privacy loss bound)", "probability (%)")
    fig.update_yaxes(range=[0, 101])
    return fig


def conversion_figure(table: pd.DataFrame, delta: float, rho: float | None = None) -> go.Figure:
    """ε of (ε, δ)-DP implied by ρ-zCDP: CKS against the textbook bound (``interpret.conversion_table``)."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=_v(table["rho"]), y=_v(table["eps_textbook"]), mode="lines",
                             name="textbook ρ + 2√(ρ ln 1/δ)", line=dict(color=PALETTE[1], dash="dot")))
    fig.add_trace(go.Scatter(x=_v(table["rho"]), y=_v(table["eps_cks"]), mode="lines",
                             name="Canonne–Kamath–Steinke", line=dict(color=PALETTE[0])))
    if rho is not None:
        fig.add_vline(x=rho, line_dash="dash", line_color="#666666", annotation_text=f"ρ = {rho:.3g}",
                      annotation_position="top left")
    return layout(fig, f"(ε, δ)-DP implied by ρ-zCDP at δ = {delta:.0e}", "ρ (zCDP)", "ε of (ε, δ)-DP")


def granularity_figure(table: pd.DataFrame, *, kind: str, k: int, workload: str = "marginals") -> go.Figure:
    """Loss of a change of s attributes under an ε0 per-attribute guarantee (``granular.granularity_table``)."""
    unit = "ε (pure)" if kind == "pure" else "ε in √(2ρ) units (zCDP)"
    names = {"group": "any ε0-per-attribute mechanism (group privacy, Prop. 8)",
             "disjoint": "one release per attribute (Lemma 10)",
             "workload": f"Gaussian {k}-way {workload} (Thm 11)"}
    fig = go.Figure()
    for i, col in enumerate(c for c in ("group", "disjoint", "workload") if c in table):
        fig.add_trace(go.Scatter(x=_v(table["attributes"]), y=_v(table[col]), mode="lines+markers",
                                 name=names[col], line=dict(color=PALETTE[i]), marker=dict(size=4),
                                 hovertemplate="%{x} attributes: %{y:.4g}<extra>" + names[col] + "</extra>"))
    return layout(fig, "Cost of changing s attributes of one record", "attributes changed (s)", unit)


def record_ratio_figure(table: pd.DataFrame, *, k: int, workload: str = "marginals") -> go.Figure:
    """Whole-record loss ÷ per-attribute ε0 against the number of attributes d."""
    names = {"group": "group privacy: d", "disjoint": "one zCDP release per attribute: √d",
             "workload": f"Gaussian {k}-way {workload}: √(d/k)"}
    fig = go.Figure()
    for i, col in enumerate(("group", "disjoint", "workload")):
        fig.add_trace(go.Scatter(x=_v(table["d"]), y=_v(table[col]), mode="lines", name=names[col],
                                 line=dict(color=PALETTE[i])))
    return layout(fig, "Whole-record loss as a multiple of the per-attribute ε0", "number of attributes d",
                  "whole-record ε ÷ ε0")


def attribute_rho_figure(table: pd.DataFrame, subset_rho: float | None = None) -> go.Figure:
    """ρ({j}) of every attribute and the whole record (``accounting.attribute_rho_table``)."""
    colors = [PALETTE[1] if a == "(whole record)" else PALETTE[0] for a in _v(table["attribute"])]
    fig = go.Figure(go.Bar(x=_v(table["attribute"]), y=_v(table["rho"]), marker_color=colors,
                           customdata=_v(table["eps_cks"]),
                           hovertemplate="%{x}: ρ = %{y:.3g} (ε = %{customdata:.3g} at the chosen δ)"
                                         "<extra></extra>"))
    if subset_rho is not None:
        fig.add_hline(y=subset_rho, line_dash="dash", line_color=PALETTE[3], annotation_text="chosen subset",
                      annotation_position="top left")
    fig = layout(fig, "zCDP budget of a change of one attribute, and of the whole record", "attribute",
                 "ρ (zCDP)")
    fig.update_xaxes(type="category")  # layout() sets a linear axis
    return fig


def histogram_comparison_figure(table: pd.DataFrame, methods: Sequence[str], *,
                                truth: bool = False) -> go.Figure:
    """Published estimates of the largest cells by each histogram (``granular.compare_cells``)."""
    fig = go.Figure()
    for i, m in enumerate(methods):
        fig.add_trace(go.Bar(x=_v(table["cell"]), y=_v(table[m]), name=m, marker_color=PALETTE[i],
                             hovertemplate="%{x}: %{y:,.1f}<extra>" + m + "</extra>"))
    if truth and "true" in table:
        fig.add_trace(go.Scatter(x=_v(table["cell"]), y=_v(table["true"]), mode="markers",
                                 name="true count (confidential)",
                                 marker=dict(color="#000000", symbol="line-ew-open", size=18, line=dict(width=2))))
    fig = layout(fig, "Largest cells: published estimates (unpublished cells count as 0)", "cell",
                 "records (count)", height=420)
    fig.update_layout(barmode="group", margin=dict(t=90, b=120),
                      legend=dict(orientation="h", x=0.0, y=1.0, yanchor="bottom"))
    fig.update_xaxes(type="category", tickangle=-35)  # bit patterns must not be read as numbers
    return fig


def level_sizes_figure(level_sizes: Sequence[int]) -> go.Figure:
    """Total list size per level of the heavy-hitter tree (level 0 = the attribute domains)."""
    fig = go.Figure(go.Bar(x=list(range(len(level_sizes))), y=list(level_sizes), marker_color=PALETTE[2],
                           hovertemplate="level %{x}: %{y:,} strings kept<extra></extra>"))
    return layout(fig, "Heavy-hitter tree: strings kept per level", "level (0 = single attributes)",
                  "strings kept (all nodes of the level)")
