"""Charts built once per content: a rerun that changes nothing a chart draws reuses its figure.

Building a Plotly figure (validating every property of its traces and layout) is the costliest part of a
page's rerun after the data work. :func:`chart` keys a figure by a digest of everything it draws — the
arrays by their bytes, the other arguments by their text — so the reruns a workshop participant makes
without changing a chart (a toggle elsewhere on the page, the Learn switch, coming back to the page)
rebuild nothing. The figures are kept per session (a few, the last drawn) and never mutated by their
readers (``st.plotly_chart`` serialises a copy).
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Mapping

import numpy as np
import streamlit as st


def digest(*parts: Any) -> str:
    """A digest of ``parts``: arrays by dtype, shape and bytes, mappings and sequences item by item, anything
    else by its ``repr``."""
    h = hashlib.sha256()

    def add(p: Any) -> None:
        if isinstance(p, np.ndarray):
            h.update(f"a{p.dtype}{p.shape}".encode())
            h.update(np.ascontiguousarray(p).tobytes())
        elif isinstance(p, Mapping):
            h.update(b"{")
            for k, v in p.items():
                add(k)
                add(v)
            h.update(b"}")
        elif isinstance(p, (list, tuple)):
            h.update(b"[")
            for v in p:
                add(v)
            h.update(b"]")
        else:
            h.update(f"{type(p).__name__}:{p!r};".encode())

    for part in parts:
        add(part)
    return h.hexdigest()


@st.cache_resource(show_spinner=False, max_entries=8, scope="session")
def _cached(key: str, _build: Callable[[], Any]) -> Any:
    return _build()


def chart(build: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The Plotly figure ``build(*args, **kwargs)``, built once per digest of its name and arguments in this
    session."""
    return _cached(digest(build.__module__, build.__qualname__, args, kwargs), lambda: build(*args, **kwargs))


#: The key prefix of the container :func:`show` puts a chart, its summary and its table in (the page's script
#: labels the chart with the summary by it: ui/accessibility.py).
CHART_BOX = "chartbox_"
#: The key suffix of a chart's *Show data as a table* expander (open: True).
TABLE_OPEN = "_table_open"


def show(fig: Any, *, key: str, where: Any = None, note: str = "") -> None:
    """Show a Plotly figure with its text alternatives: a one-sentence summary computed from its data
    (:func:`prdp_core.charts.alt_text.summary`, under the chart; ``note`` adds a sentence of the page) and its
    data as a table on request (an expander, keyed ``<key>_table_open``, that builds and sends the table only
    while it is open). ``where``: a column or container (default: the page).

    The chart, the summary and the table share a container keyed ``chartbox_<key>``, by which the page's
    script (:mod:`ui.accessibility`) gives the chart the summary as its accessible name."""
    from prdp_core.charts.alt_text import data_table, summary

    from .common import md_escape

    box = (where if where is not None else st).container(key=f"{CHART_BOX}{key}")
    box.plotly_chart(fig, key=key)
    text = summary(fig) + (f" {note}" if note else "")
    box.markdown(md_escape(text))
    table_box = box.expander("Show data as a table", icon=":material/table_rows:", key=f"{key}{TABLE_OPEN}",
                             on_change="rerun")
    if table_box.open:
        table, total = data_table(fig)
        if len(table) < total:
            table_box.caption(f"{len(table):,} of the chart's {total:,} points, evenly spaced.")
        table_box.dataframe(table, hide_index=True)
