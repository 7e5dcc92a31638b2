"""The building blocks of prdp's self-contained HTML reports: the style sheet, figures with Plotly inlined once
and formula-free tables (the study report's and the board's)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def _fig_html(fig: Any, first: list[bool]) -> str:
    import plotly.io as pio

    inline = first[0]
    first[0] = False
    return pio.to_html(_listify(fig.to_plotly_json()), include_plotlyjs=True if inline else False, full_html=False,
                       config={"displaylogo": False, "responsive": True}, validate=False)


def _listify(obj: Any) -> Any:
    """Figure data with plain lists (no binary arrays), so every number in the report is readable text."""
    if isinstance(obj, dict):
        return {k: _listify(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_listify(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_listify(v) for v in obj.tolist()] if obj.dtype == object else obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _table(df: pd.DataFrame, *, max_rows: int = 200, floatfmt: str = "{:,.6g}") -> str:
    if df is None or df.empty:
        return "<p class='muted'>(nothing to show)</p>"
    shown = df.head(max_rows)
    out = shown.to_html(index=False, escape=True, border=0, classes="tbl", na_rep="",
                        float_format=lambda v: floatfmt.format(v))
    if len(df) > max_rows:
        out += f"<p class='muted'>First {max_rows:,} of {len(df):,} rows; results.csv has them all.</p>"
    return out


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1150px;color:#222;
line-height:1.45;padding:0 1rem}
h1{margin-bottom:.2rem}h2{border-bottom:2px solid #0072B2;padding-bottom:.2rem;margin-top:2.2rem}
.muted{color:#666;font-size:.9rem}.banner{padding:.6rem 1rem;border-radius:6px;margin:1rem 0}
.review{background:#e8f4fb;border:1px solid #0072B2}.teaching{background:#fff4e5;border:1px solid #E69F00}
table.tbl{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
table.tbl th,table.tbl td{border-bottom:1px solid #ddd;padding:.25rem .6rem;text-align:right}
table.tbl th{background:#f3f3f3}table.tbl td:first-child,table.tbl th:first-child{text-align:left}
pre{background:#f7f7f7;padding:.8rem;border-radius:6px;overflow-x:auto;font-size:.8rem}
"""


__all__ = ["_CSS", "_fig_html", "_listify", "_table"]
