"""Fewer points for step curves (Plotly ``line_shape="hv"``), drawn the same.

A chart is sent to the browser as its traces' points: a policy-loss CDF of a large table has a point
per distinct loss, the public policy function one per grid value. Both are step curves, and most of
those points draw nothing a reader can see. The functions here keep the points that shape the drawn
curve: :func:`step_corners` exactly (the same drawing), :func:`thin_steps` to below a pixel of a
chart of up to :data:`COLUMNS` × :data:`ROWS` pixels. They change what is drawn, never a number
computed from the policy (summaries, tables and exports use the full profiles).
"""

from __future__ import annotations

import numpy as np

#: Screen resolution :func:`thin_steps` keeps: more than the width and height of a chart on a wide screen.
COLUMNS, ROWS = 2000, 1000


def step_corners(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points of a step curve where its value changes, with its first and last points. Drawn with
    ``line_shape="hv"`` (horizontal to the next point, then vertical), a point whose value equals the
    previous one lies on that horizontal segment: without it the curve is the same."""
    x, y = np.asarray(x), np.asarray(y)
    if y.size < 3:
        return x, y
    keep = np.ones(y.size, dtype=bool)
    keep[1:-1] = y[1:-1] != y[:-2]
    return x[keep], y[keep]


def _screen(v: np.ndarray, log: bool, cells: int) -> np.ndarray:
    """Cell index of each value on an axis of ``cells`` cells spanning the values (log axes: their logs)."""
    v = np.asarray(v, dtype=float)
    if log:
        pos = v[v > 0]
        v = np.log10(np.where(v > 0, v, pos.min() if pos.size else 1.0))
    finite = v[np.isfinite(v)]
    if not finite.size:
        return np.zeros(v.size, dtype=np.int64)
    lo, hi = float(finite.min()), float(finite.max())
    span = hi - lo if hi > lo else 1.0
    return np.floor(np.nan_to_num((v - lo) / span, nan=0.0) * (cells - 1)).astype(np.int64)


def thin_steps(x: np.ndarray, y: np.ndarray, *, log_x: bool = False, log_y: bool = False,
               columns: int = COLUMNS, rows: int = ROWS) -> tuple[np.ndarray, np.ndarray]:
    """A monotone step curve (x ascending, y monotone, drawn ``"hv"``) with at most about ``columns + rows``
    points: a point is kept when it falls in another cell of a ``columns`` × ``rows`` screen grid than the
    previous one (the first and last points always), so the drawing moves by less than a cell. Curves with
    fewer points are returned as they are."""
    x, y = np.asarray(x), np.asarray(y)
    if x.size <= columns + rows:
        return x, y
    cx, cy = _screen(x, log_x, columns), _screen(y, log_y, rows)
    keep = np.ones(x.size, dtype=bool)
    keep[1:-1] = (cx[1:-1] != cx[:-2]) | (cy[1:-1] != cy[:-2])
    return x[keep], y[keep]
