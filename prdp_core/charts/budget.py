"""Figures for budget functions and the general PrDP framework (prdp-general-framework paper).

Builders only arrange engine results for display: the budget curve E(v) with the
privacy-specified domains, per-domain counts against the thresholds T_i, delivered vs
requested per-record losses, side-by-side mechanism answers and the scaling study.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..mechanisms.prdp import BudgetFunction, Groups, value_grid
from . import PALETTE, layout, plain_figure, plain_text

_METHOD_LABEL = {"extension": "PrDP extension (Sec. 5.2)", "framework": "PrDP framework (Alg. 2)",
                 "naive": "naive ε̌", "count": "PrDP count (Alg. 1)"}
_DASH = {"inverse": "solid", "log": "dash", "sqrt": "dot"}


def _curves(budget: BudgetFunction, grid: np.ndarray) -> list[tuple[str, np.ndarray]]:
    if isinstance(budget.shape, Groups):
        out = []
        for value, shape in budget.shape.parts:
            out.append((f"{budget.shape.column} = {value}",
                        BudgetFunction(shape, budget.eps_min, budget.eps_max, budget.U).curve(grid)))
        if budget.shape.default is not None:
            out.append(("other groups", BudgetFunction(budget.shape.default, budget.eps_min, budget.eps_max,
                                                       budget.U).curve(grid)))
        return out
    return [("E(v)", budget.curve(grid))]


def budget_curve_figure(budget: BudgetFunction, *, measure: str, values: np.ndarray | None = None,
                        vmax: float | None = None, show_domains: bool = True, max_points: int = 1500,
                        seed: int = 0) -> go.Figure:
    """E over the value range (log–log) with the domain boundaries 2^{i−1}ε̌ and, optionally, a
    sample of the data's values marked at their budgets (confidential: teaching mode only)."""
    top = float(vmax) if vmax else budget.U
    grid = value_grid(top, 500, vmin=1.0 if top > 10 else None)
    pos = grid > 0
    fig = go.Figure()
    for i, (name, e) in enumerate(_curves(budget, grid)):
        fig.add_trace(go.Scatter(x=grid[pos], y=e[pos], mode="lines", name=name,
                                 line=dict(color=PALETTE[i % len(PALETTE)], width=2.5),
                                 hovertemplate=f"{measure} = %{{x:.4g}}: ε = %{{y:.4g}}<extra>{name}</extra>"))
    if values is not None and len(values):
        v = np.asarray(values, dtype=float)
        if v.size > max_points:
            v = np.random.default_rng(seed).choice(v, max_points, replace=False)
        v = np.maximum(v, grid[pos][0])
        if not isinstance(budget.shape, Groups):
            fig.add_trace(go.Scatter(x=v, y=budget.curve(v), mode="markers", name="records (sample)",
                                     marker=dict(color=PALETTE[3], size=5, opacity=0.45),
                                     hovertemplate=f"{measure} = %{{x:.4g}}: ε = %{{y:.4g}}<extra>record</extra>"))
    if show_domains:
        dp = budget.domains()
        step = max(1, dp.L // 40)
        x0, x1 = float(grid[pos][0]), float(grid[-1])
        levels = list(dp.lo[::step])
        xs: list[float | None] = []
        ys: list[float | None] = []
        for lv in levels:
            xs += [x0, x1, None]
            ys += [float(lv), float(lv), None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name="domain boundaries 2^(i−1)·ε̌",
                                 line=dict(color="#BBBBBB", width=1, dash="dot"), hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=[x0, x1, None, x0, x1], y=[budget.eps_max, budget.eps_max, None, budget.eps_min,
                                                               budget.eps_min],
                                 mode="lines", name=f"ε̂ = {budget.eps_max:.3g} and ε̌ = {budget.eps_min:.3g}",
                                 line=dict(color="#666666", width=1, dash="dash"), hoverinfo="skip"))
    return layout(fig, "Budget function E over the value range (dotted: domain boundaries 2^(i−1)·ε̌)",
                  f"{measure}, log scale", "required budget ε (pure DP), log scale", log_x=True, log_y=True,
                  height=420)


def budget_histogram_figure(eps: np.ndarray, budget: BudgetFunction) -> go.Figure:
    """Distribution of the records' budgets on the domain grid (for budgets of several columns)."""
    dp = budget.domains()
    counts = np.bincount(dp.index(eps), minlength=dp.L + 1)[1:]
    fig = go.Figure(go.Bar(x=np.arange(1, dp.L + 1), y=counts, marker_color=PALETTE[0],
                           customdata=np.stack([dp.lo, dp.hi], axis=1),
                           hovertemplate="domain %{x}: ε in (%{customdata[0]:.3g}, %{customdata[1]:.3g}]: "
                                         "%{y:,} records<extra></extra>"))
    return layout(fig, "Records per privacy-specified domain", "domain i (budgets 2^(i−1)·ε̌ … 2^i·ε̌)", "records")


def domain_figure(table: pd.DataFrame, *, show_counts: bool) -> go.Figure:
    """Per-domain thresholds T_i (and, in teaching mode, the true record counts), log scale."""
    fig = go.Figure()
    x = table["domain"].to_numpy()
    rng_txt = [f"ε in ({a:.3g}, {b:.3g}]" for a, b in zip(table["eps_low"], table["eps_high"])]
    if "value_from" in table:
        rng_txt = [f"{t}; values {a:,.4g} – {b:,.4g}" if np.isfinite(a) else f"{t}; no values"
                   for t, a, b in zip(rng_txt, table["value_from"], table["value_to"])]
    if show_counts and "records" in table:
        rec = np.asarray(table["records"], dtype=float)
        fig.add_trace(go.Bar(x=x, y=np.where(rec > 0, rec, np.nan), name="records in the domain (true)",
                             marker_color=PALETTE[0], customdata=np.stack([rec, rng_txt], axis=1),
                             hovertemplate="domain %{x}: %{customdata[0]:,} records<br>%{customdata[1]}"
                                           "<extra></extra>"))
    if "threshold" in table:
        fig.add_trace(go.Scatter(x=x, y=table["threshold"], mode="lines+markers", name="threshold T_i",
                                 line=dict(color=PALETTE[3]), customdata=rng_txt,
                                 hovertemplate="domain %{x}: T = %{y:,.4g}<br>%{customdata}<extra></extra>"))
    return layout(fig, "Privacy-specified domains: count needed to pass (T_i)" +
                  (" and records present" if show_counts else ""),
                  "domain i (larger i = weaker protection)", "records, log scale", log_y=True)


def loss_figure(requested: np.ndarray, delivered: dict[str, np.ndarray], *, max_points: int = 2000,
                seed: int = 0) -> go.Figure:
    """Delivered vs requested per-record loss (pure ε), log–log, with the line delivered = requested."""
    req = np.asarray(requested, dtype=float)
    idx = np.arange(req.size)
    if req.size > max_points:
        idx = np.random.default_rng(seed).choice(req.size, max_points, replace=False)
    fig = go.Figure()
    lo = float(np.min(req)) if req.size else 1e-3
    hi = float(np.max(req)) if req.size else 1.0
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="delivered = requested",
                             line=dict(color="#999999", dash="dash")))
    for i, (name, d) in enumerate(delivered.items()):
        dd = np.asarray(d, dtype=float)[idx]
        dd = np.where(dd > 0, dd, np.nan)  # a zero loss (e.g. a value of 0 in a sum) has no place on a log axis
        fig.add_trace(go.Scatter(x=req[idx], y=dd, mode="markers", name=name,
                                 marker=dict(color=PALETTE[i % len(PALETTE)], size=5, opacity=0.5),
                                 hovertemplate="requested %{x:.4g}, delivered %{y:.4g}<extra>" + name + "</extra>"))
    return layout(fig, "Per-record loss: delivered vs requested E(r) (every point on or below the line)",
                  "requested E(r), log scale", "delivered loss ε, log scale", log_x=True, log_y=True)


def _num(v: float) -> str:
    return f"{v:,.0f}" if 1e4 <= abs(v) < 1e15 else f"{v:,.4g}"


def comparison_figure(rows: pd.DataFrame, *, truth: float | None = None, title: str = "") -> go.Figure:
    """Answers of several mechanisms side by side (bars, value labels), with the true answer in teaching
    mode. Answers far outside the others (the naive baseline) are drawn off scale, their labels give them."""
    names = [str(x) for x in rows["mechanism"]]
    est = np.asarray(rows["estimate"], dtype=float)
    labels = ["declined" if np.isnan(v) else _num(v) for v in est]
    fig = go.Figure(go.Bar(x=names, y=np.nan_to_num(est, nan=0.0), text=labels, textposition="outside",
                           marker_color=[PALETTE[i % len(PALETTE)] for i in range(len(names))], cliponaxis=False,
                           hovertemplate="%{x}: %{text}<extra></extra>"))
    finite = est[np.isfinite(est)]
    ref = truth if truth is not None else (float(np.median(finite)) if finite.size else 0.0)
    if truth is not None:
        fig.add_hline(y=truth, line=dict(color="#000000", dash="dash"), annotation_text="true answer",
                      annotation_position="top left")
    span = max(abs(ref), 1e-300)
    inside = finite[np.abs(finite - ref) <= 10 * span]
    off = finite.size - inside.size
    fig = layout(fig, title or "Released answers", "mechanism", "released answer")
    fig.update_xaxes(type="category")  # layout() sets a linear axis, which would hide named bars
    if off and inside.size:
        lo = min(0.0, float(inside.min()), ref)
        hi = max(float(inside.max()), ref)
        pad = 0.25 * (hi - lo or span)
        y0, y1 = lo - (pad if lo < 0 else 0), hi + pad
        fig.update_yaxes(range=[y0, y1])
        fig.update_layout(title=dict(text=(title or "Released answers") + f" ({off} off the scale)"))
        for name, v in zip(names, est):
            if np.isfinite(v) and abs(v - ref) > 10 * span:
                fig.add_annotation(x=plain_text(name), y=y1 if v > ref else y0, text=f"{_num(v)} (off the scale)",
                                   showarrow=False, yanchor="top" if v > ref else "bottom", font=dict(color=PALETTE[3]))
    return plain_figure(fig)


def scaling_figure(df: pd.DataFrame, vary: str, *, budgets: Sequence[str] | None = None) -> go.Figure:
    """Error of private sums vs n, U or σ (the paper's Figs. 3–5): one colour per method, one dash per budget."""
    label = {"n": "number of records n", "U": "domain bound U", "sigma": "standard deviation σ of the values"}[vary]
    fig = go.Figure()
    methods = list(dict.fromkeys(df["method"]))
    for bname in budgets or list(dict.fromkeys(df["budget"])):
        for mi, m in enumerate(methods):
            part = df[(df["budget"] == bname) & (df["method"] == m)].sort_values("value")
            if part.empty:
                continue
            fig.add_trace(go.Scatter(
                x=part["value"], y=part["abs_error"], mode="lines+markers",
                name=f"{_METHOD_LABEL.get(m, m)}, {bname}", line=dict(color=PALETTE[mi % len(PALETTE)],
                                                                     dash=_DASH.get(bname, "solid")),
                hovertemplate=f"{vary} = %{{x:.3g}}: error %{{y:.3g}}<extra>{m}, {bname}</extra>"))
    return layout(fig, f"Sum estimation error vs {label} (trimmed mean of repeated runs)",
                  f"{label}, log scale", "absolute error of the sum, log scale", log_x=True, log_y=True, height=440)
