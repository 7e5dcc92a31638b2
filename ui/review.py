"""Review mode: what the pages may show about the records, and the note that replaces the rest.

In review mode (sidebar) the app shows what a policy and its releases make public, and nothing computed
from the records themselves:

* shown — the public policy function P(value) and its loss levels with their (ε, δ) reading, budgets and
  budget functions, analytic noise scales σ, parameters typed in (or flagged as computed from the data),
  noisy released answers, the ledger's public forms;
* hidden — per-record and per-owner losses (their CDFs, quantiles, maxima, shares above the base loss),
  true answers and errors (and everything computed from them: expected relative errors, solved budgets),
  record counts and group sizes, profiles of the measures (quantiles, histograms, Lorenz curves, skewness),
  rows of the table, the values that would need fixing in a file.

Pages ask :func:`shows_records` before drawing such a statistic: in teaching mode it returns True; in
review mode it draws one note saying what is hidden and returns False. Numbers inside a sentence go
through :func:`count`. One rule, one place: a page never tests the mode itself to hide records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from . import state

if TYPE_CHECKING:
    from prdp_core.core.accounting import Ledger

#: The caption that stands where statistics of the records are hidden.
NOTE = (":material/visibility_off: **Hidden in review mode:** {what}. They are statistics of the records; "
        "teaching mode (sidebar) shows them to the policy designer.")


def shows_records(what: str, *, note: bool = True) -> bool:
    """Whether the page may draw ``what`` (statistics of the records, e.g. "the records' loss chart").

    Teaching mode: True. Review mode: False, after a caption naming what is hidden (``note=False``:
    no caption, for a statistic that an earlier note already covers)."""
    if state.teaching():
        return True
    if note:
        st.caption(NOTE.format(what=what))
    return False


def count(n: int, noun: str = "records", *, hidden: str = "some") -> str:
    """A record count inside a sentence: ``"1,234 records"`` in teaching mode, ``"some records"`` in review
    mode (a record count is a true answer: the COUNT of the table or of a group)."""
    return f"{int(n):,} {noun}" if state.teaching() else f"{hidden} {noun}"


def ledger_summary(ledger: Ledger, frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ledger's table as shown and exported (``frame``: ``ledger.summary()`` or an export of it). In review
    mode a data-dependent entry (a per-record loss without public form, e.g. the PrDP framework's or a
    personalized release's) has no *base loss*: its smallest loss is that of the records actually present."""
    from prdp_core.study.study_tables import without_data_dependent_minima

    out = ledger.summary() if frame is None else frame
    return out if state.teaching() else without_data_dependent_minima(out, ledger)
