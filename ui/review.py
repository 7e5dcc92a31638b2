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

Each such statistic is a registered screen output (:data:`SCREEN_OUTPUTS`, registered with the review
boundary of :mod:`prdp_core.review.review_boundary`, which decides). Pages ask :func:`shows_records` before
drawing one: in teaching mode it returns True; in review mode it draws one note saying what is hidden and
returns False. Numbers inside a sentence go through :func:`count`. One rule, one place: a page never
tests the mode itself to hide records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from prdp_core.review.review_boundary import may_show, register_screen

from . import state

if TYPE_CHECKING:
    from prdp_core.core.accounting import Ledger

#: The caption that stands where statistics of the records are hidden.
NOTE = (":material/visibility_off: **Hidden in review mode:** {what}. They are statistics of the records; "
        "teaching mode (sidebar) shows them to the policy designer.")


#: The screen's statistics of the records, by the name a page asks for: what each shows (the note of review mode
#: names it). Registered with the review boundary (:data:`prdp_core.review.review_boundary.SCREEN`).
SCREEN_OUTPUTS = {
    "record count": "record count",
    "record counts in sentences": "record counts",
    "base loss": "base loss",
    "largest record total": "the largest total loss of a record",
    "measure profile": "the profile of the measures (count, quantiles, maximum, skewness, top-1% share, histogram, "
                       "Lorenz curve) and the notes on rows dropped or fixed",
    "table rows": "the rows of the table",
    "rows to fix": "counts of the rows to fix and examples of their values",
    "policy losses": "what the records and owners lose — the share of records split, loss quantiles, the largest "
                     "loss, the loss charts of records and owners, where the thresholds sit among the records' values",
    "values on the policy chart": "the records' values on this chart (its range follows the thresholds)",
    "loss levels": "the loss levels of real records (median, percentiles, largest)",
    "threshold suggestions": "threshold suggestions (percentiles of the records and loss caps computed on them)",
    "losses by group": "losses by group and the records with the largest losses",
    "sweep errors": "the errors of the answers and the records' loss shares and charts for each threshold and ρ "
                    "(computed from the true answers and the records' values)",
    "scheme errors": "the errors of splitting and top-coding (computed from the true answers)",
    "budgets for goals": "the budgets meeting each goal and the records' losses under them (computed from the true "
                         "answers)",
    "solved budgets": "the budgets solved for the goal and the largest thresholds meeting it (computed from the true "
                      "answers)",
    "true answers": "true answers, errors and record counts of the cells",
    "release losses": "the policy and realized losses of the records and owners",
    "budget histogram": "the histogram of the records' budgets",
    "users per epsilon": "the number of users, how many chose each ε (histogram, users per tier) and the notes that "
                         "count them",
    "worked example": "the losses of a real record and of its owner in the worked example (it follows a "
                      "hypothetical record typed in instead)",
    "data-dependent base losses": "the smallest loss of a data-dependent release (that of the records present)",
    "legacy cells": "which cells cell suppression and noise infusion would withhold, their true and noisy values and "
                    "the methods' errors (the number of cells withheld is shown)",
}
for _name, _shows in SCREEN_OUTPUTS.items():
    register_screen(_name, _shows)


def shows_records(name: str, *, note: bool = True) -> bool:
    """Whether the page may draw the registered screen output ``name`` (a key of :data:`SCREEN_OUTPUTS`: statistics
    of the records, e.g. "policy losses"), as the review boundary decides
    (:func:`~prdp_core.review.review_boundary.may_show`).

    Teaching mode: True. Review mode: False, after a caption naming what is hidden (``note=False``:
    no caption, for a statistic that an earlier note already covers)."""
    if may_show(name, teaching=state.teaching()):
        return True
    if note:
        st.caption(NOTE.format(what=SCREEN_OUTPUTS[name]))
    return False


def count(n: int, noun: str = "records", *, hidden: str = "some") -> str:
    """A record count inside a sentence: ``"1,234 records"`` in teaching mode, ``"some records"`` in review
    mode (a record count is a true answer: the COUNT of the table or of a group)."""
    return f"{int(n):,} {noun}" if may_show("record counts in sentences", teaching=state.teaching()) \
        else f"{hidden} {noun}"


def ledger_summary(ledger: Ledger, frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ledger's table as shown and exported (``frame``: ``ledger.summary()`` or an export of it). In review
    mode a data-dependent entry (a per-record loss without public form, e.g. the PrDP framework's or a
    personalized release's) has no *base loss*: its smallest loss is that of the records actually present."""
    from prdp_core.study.study_tables import without_data_dependent_minima

    out = ledger.summary() if frame is None else frame
    return out if may_show("data-dependent base losses", teaching=state.teaching()) \
        else without_data_dependent_minima(out, ledger)
