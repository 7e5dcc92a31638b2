"""The board taken home: a formula-safe CSV of its table and one self-contained HTML report.

:func:`board_csv` writes :func:`~prdp_core.board.summary.board_frame` through
:func:`prdp_core.io.export.to_csv_bytes` (text cells that a spreadsheet would run as a formula
are neutralised). :func:`board_html` compares every policy of the board on one offline page
(Plotly inlined once, figure data as plain lists, every participant's text HTML-escaped):
the table, the public policy functions of the unit-splitting policies, and — in teaching mode
only — the loss CDFs over records and owners and the privacy-vs-accuracy scatter with its
Pareto front; then each entry's rationale and study config. In review mode the report holds
only public quantities: no statistic of the records. :func:`write_board` writes both, plus
each entry's study config as YAML (``prdp run`` reruns it), into one folder, by the rules of every
output of prdp (:mod:`prdp_core.io.outputs`: never through a symbolic link, never over a file prdp did
not write unless ``force``).
"""

from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import Any, Iterable

from ..io.export import to_csv_bytes
from ..io.html_parts import _CSS, _fig_html, _table
from ..study.config import parse_config
from . import summary


def board_csv(entries: Iterable[Any], *, review: bool, delta: float) -> bytes:
    """The board's table as UTF-8 CSV (review mode: public columns only)."""
    return to_csv_bytes(summary.board_frame(entries, review=review, delta=delta))


def _config_yaml(entry: Any) -> str:
    return parse_config(entry.config).to_yaml()


def board_html(entries: Iterable[Any], *, review: bool, delta: float, title: str = "Workshop board",
               dataset: str | None = None) -> str:
    """The board as one self-contained HTML page (opens offline). ``dataset``: the pinned
    workshop dataset, if any (described in the header)."""
    from ..charts.board import board_cdf_figure, public_functions_figure, tradeoff_figure

    entries = list(entries)
    e = html.escape
    first = [True]
    now = datetime.now(tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"<h1>{e(title)}</h1>",
             f"<p class='muted'>Workshop board of PrDP Explorer: {len(entries)} "
             f"polic{'y' if len(entries) == 1 else 'ies'}, exported {now}. (ε, δ) columns convert zCDP losses at the "
             f"workshop's δ = {delta:g} "
             "(Canonne–Kamath–Steinke); pure-ε losses are shown as they are.</p>"]
    if dataset:
        parts.append(f"<p>Workshop dataset: <b>{e(dataset)}</b>.</p>")
    if review:
        parts.append("<div class='banner review'><b>Review mode.</b> Only public quantities: each policy's function, "
                     "budgets and the analytic noise of its answers. No statistic of the records is in this report."
                     "</div>")
    else:
        parts.append("<div class='banner teaching'><b>Teaching mode.</b> Loss distributions, shares and errors are "
                     "computed from the real records: this report is <b>confidential</b> and for the workshop "
                     "only. Error figures come from seeded runs or closed forms, never from a real release.</div>")
    parts.append("<h2>The policies</h2>")
    parts.append(_table(summary.board_frame(entries, review=review, delta=delta), max_rows=500))

    policies = summary.splitting_policies(entries)
    measures = summary.measures_of(policies)
    if policies and measures:
        parts.append("<h2>Public policy functions</h2>")
        parts.append("<p class='muted'>The loss of a record as a function of one measure's value (other measures at "
                     "most their thresholds): what an agency publishes. Unit-splitting policies only.</p>")
        for m in measures[:3]:
            parts.append(_fig_html(public_functions_figure(policies, m), first))

    if not review and entries:
        parts.append("<h2>Loss distributions</h2>")
        for owners in (False, True):
            series, unit = summary.cdf_series(entries, owners=owners, delta=delta)
            if series:
                parts.append(_fig_html(board_cdf_figure(series, unit=unit, who="owners" if owners else "records",
                                                        view="zoom"), first))
        pts = summary.tradeoff_points(entries, delta)
        if len(pts):
            parts.append("<h2>Privacy vs accuracy</h2>")
            parts.append("<p class='muted'>A policy is on the Pareto front when no other policy has both a smaller "
                         "99th-percentile record loss and a smaller median relative error.</p>")
            parts.append(_fig_html(tradeoff_figure(pts, delta=delta), first))
            parts.append(_table(pts.rename(columns={"eps_p99": "ε at δ, p99 record",
                                                    "median_rel_error": "median rel. error"})))

    parts.append("<h2>Each policy</h2>")
    for en in entries:
        pub = en.summary.get("public", {})
        parts.append(f"<h3>#{en.id} {e(en.name)} <span class='muted'>({e(en.kind)})</span></h3>")
        if en.rationale:
            parts.append(f"<p><i>Rationale:</i> {e(en.rationale)}</p>")
        parts.append(f"<p>{e(str(pub.get('policy', '')))}</p>")
        queries = summary.query_table(en, review=review)
        if not queries.empty:
            parts.append(_table(queries))
        if not review and en.summary.get("records", {}).get("query_errors"):
            method = en.summary["records"].get("error_method", "")
            parts.append(f"<p class='muted'>Median relative error: {e(str(method))}.</p>")
        parts.append(f"<details><summary>Study config</summary><pre>{e(_config_yaml(en))}</pre></details>")
    body = "\n".join(parts)
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{_CSS}</style></head>"
            f"<body>\n{body}\n</body></html>\n")
