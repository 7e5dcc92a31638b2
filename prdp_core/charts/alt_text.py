"""Text alternatives of a figure: a one-sentence summary and its data as a table.

A chart is read by sight; a screen reader, a keyboard user or a reader of a printed report needs the
same information as text (WCAG 2.1, 1.1.1 *Non-text content*). Both are computed from the figure
itself — its title, axis titles and the traces' data — so every chart has them without a word written
by hand, and they say what the chart shows, whatever data it draws:

* :func:`summary`: what the chart shows (its title, the series, the axes), the range of each axis and
  its key point (the largest value and where it is);
* :func:`data_table`: the traces' points as one long table (series, x, y and, for boxes, their
  quantiles), thinned evenly when a trace has more points than a table can usefully show.

Titles and names in a figure are HTML-escaped by :func:`prdp_core.charts.plain_figure`; the text here
is unescaped back to what the reader sees on the chart.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..core.wording import readable

#: Box-trace quantities a table lists beside x and y (Plotly's names; ``box_from_quantiles`` sets them).
BOX_FIELDS = ("lowerfence", "q1", "median", "q3", "upperfence")
#: At most this many rows in a chart's table; a longer trace keeps evenly spaced points (its ends included).
MAX_ROWS = 2000
#: At most this many series are named in a summary (the table lists all).
MAX_NAMED = 4


@dataclass(frozen=True)
class _Trace:
    name: str
    x: np.ndarray | None
    y: np.ndarray | None
    extra: dict[str, np.ndarray]

    @property
    def size(self) -> int:
        arrays = [a for a in (self.x, self.y, *self.extra.values()) if a is not None]
        return max((len(a) for a in arrays), default=0)


def _text(value: Any) -> str:
    return html.unescape(str(value or "")).strip()


def _array(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    a = np.asarray(value)
    return a.ravel() if a.size else None


def _traces(fig: go.Figure) -> list[_Trace]:
    out = []
    for i, tr in enumerate(fig.data):
        extra = {f: a for f in BOX_FIELDS if (a := _array(getattr(tr, f, None))) is not None}
        t = _Trace(_text(getattr(tr, "name", None)) or f"series {i + 1}", _array(getattr(tr, "x", None)),
                   _array(getattr(tr, "y", None)), extra)
        if t.size:
            out.append(t)
    return out


def _numeric(a: np.ndarray | None) -> np.ndarray | None:
    """``a`` as finite floats, or None when it is text (categories) or has no finite value."""
    if a is None or a.dtype.kind not in "iufb":
        return None
    f = a.astype(float)
    f = f[np.isfinite(f)]
    return f if f.size else None


#: The scale note of an axis title ("…, log scale", "… (log scale)"): a summary gives values, not the scale.
_SCALE_NOTE = re.compile(r",? *\(?log scale\)?$")


def _axis_title(fig: go.Figure, axis: str, default: str) -> str:
    return _SCALE_NOTE.sub("", _text(getattr(getattr(fig.layout, axis).title, "text", None))).strip() or default


def _names(names: Sequence[str]) -> str:
    shown = list(names[:MAX_NAMED]) + ([f"{len(names) - MAX_NAMED} more"] if len(names) > MAX_NAMED else [])
    return ", ".join(shown)


def _extent(values: list[np.ndarray | None]) -> tuple[float, float] | None:
    nums = [v for v in (_numeric(a) for a in values) if v is not None]
    if not nums:
        return None
    allv = np.concatenate(nums)
    return float(allv.min()), float(allv.max())


def _categories(values: list[np.ndarray | None]) -> list[str]:
    seen: dict[str, None] = {}
    for a in values:
        if a is not None and a.dtype.kind not in "iufb":
            seen.update((_text(v), None) for v in a)
    return list(seen)


def _peak(traces: list[_Trace]) -> tuple[_Trace, int] | None:
    """The trace and index of the largest y (or median) of the chart."""
    best: tuple[float, _Trace, int] | None = None
    for t in traces:
        ys = t.y if t.y is not None else t.extra.get("median")
        if ys is None or ys.dtype.kind not in "iufb":
            continue
        yf = ys.astype(float)
        if not np.isfinite(yf).any():
            continue
        i = int(np.nanargmax(np.where(np.isfinite(yf), yf, np.nan)))
        if best is None or yf[i] > best[0]:
            best = (float(yf[i]), t, i)
    return None if best is None else (best[1], best[2])


def _axis_phrase(title: str, values: list[np.ndarray | None]) -> str:
    ext = _extent(values)
    if ext is not None:
        return f"{title} from {readable(ext[0])} to {readable(ext[1])}"
    cats = _categories(values)
    if cats:
        first = ", ".join(cats[:3]) + (", …" if len(cats) > 3 else "")
        return f"{title} over {len(cats)} categor{'y' if len(cats) == 1 else 'ies'} ({first})"
    return ""


def summary(fig: go.Figure) -> str:
    """One sentence saying what ``fig`` shows: its title and series, each axis' range and its largest value."""
    title = _text(fig.layout.title.text) or "Chart"
    traces = _traces(fig)
    if not traces:
        return f"{title}: no data to show."
    x_title = _axis_title(fig, "xaxis", "x")
    y_title = _axis_title(fig, "yaxis", "y")
    names = list(dict.fromkeys(t.name for t in traces))
    ys = [t.y if t.y is not None else t.extra.get("median") for t in traces]
    parts = [_axis_phrase(x_title, [t.x for t in traces]), _axis_phrase(y_title, ys)]
    what = f"{len(names)} series ({_names(names)})" if len(names) > 1 else names[0]
    sentence = f"{title}: {what}; " + "; ".join(p for p in parts if p)
    peak = _peak(traces)
    if peak is not None:
        t, i = peak
        y = t.y if t.y is not None else t.extra["median"]
        at = f" at {x_title} = {_value(t.x[i])}" if t.x is not None and i < len(t.x) else ""
        who = f" ({t.name})" if len(names) > 1 else ""
        sentence += f"; largest {y_title}: {readable(float(y[i]))}{who}{at}"
    return sentence + "."


def _value(v: Any) -> str:
    try:
        return readable(float(v))
    except (TypeError, ValueError):
        return _text(v)


def _thin(n: int, limit: int) -> np.ndarray:
    """Indices of at most ``limit`` evenly spaced points of ``n`` (both ends kept)."""
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max(limit, 2)).round().astype(int))


def data_table(fig: go.Figure, max_rows: int = MAX_ROWS) -> tuple[pd.DataFrame, int]:
    """The points of ``fig`` as a table (one row per point: series, x, y and any box quantiles; columns named
    after the axes) and the number of points the figure has; a figure with more than ``max_rows`` points keeps
    an even share of each trace's points."""
    traces = _traces(fig)
    total = sum(t.size for t in traces)
    x_title = _axis_title(fig, "xaxis", "x")
    y_title = _axis_title(fig, "yaxis", "y")
    if y_title == x_title:
        x_title, y_title = f"{x_title} (x)", f"{y_title} (y)"
    frames = []
    for t in traces:
        keep = _thin(t.size, max(2, max_rows * t.size // max(total, 1)))
        cols: dict[str, Any] = {"series": [t.name] * len(keep)}
        for title, a in ((x_title, t.x), (y_title, t.y), *t.extra.items()):
            if a is not None:
                vals = a[keep[keep < len(a)]]
                cols[title] = list(vals) + [None] * (len(keep) - len(vals))
        frames.append(pd.DataFrame(cols))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({"series": []})
    for c in table.columns:  # text (categories) is shown as the chart shows it; a column of mixed types as text
        if table[c].dtype == object:
            as_text = _value if not all(isinstance(v, str) or v is None for v in table[c]) else _text
            table[c] = table[c].map(lambda v, f=as_text: None if v is None else f(v))
    return table, total


__all__ = ["BOX_FIELDS", "MAX_NAMED", "MAX_ROWS", "data_table", "summary"]
