"""The session ledger's totals on the page (Run and Study pages): what the releases on the active table
add up to, release after release (sequential composition), and whether the ledger is the session's
whole ledger (:func:`ui.durable.ledger_notice`).

Only releases that ran on the active table's records count in its totals (a session's ledger spans
the datasets it used: releases on unrelated data — another table, a sample, the records the histogram lab
generates — do not add to these records' losses); the others are counted and their data named. The
largest per-record total is a statistic of the records: teaching mode only.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from prdp_core.board.ledgers import same_data
from prdp_core.core.accounting import Ledger
from prdp_core.core.errors import PrdpError
from prdp_core.core.interpret import UNBOUNDED_NOTE, loss_guidance

from . import durable, review, state
from .common import md_escape


@st.cache_data(show_spinner=False, max_entries=16, scope="session")
def _totals(token: str, uids: tuple[str, ...], here: tuple[bool, ...], _led: Ledger, _table: pd.DataFrame | None
            ) -> pd.DataFrame:
    """The ledger's running totals on the active table, once per (dataset, entries): a 20-million-row table
    is not evaluated again on every rerun."""
    return _led.running_totals(_table, on_table=here, others="skip")


def _fmt(v: float) -> str:
    return "unbounded" if math.isinf(v) else f"{v:.4g}"


def notice() -> None:
    """Under the ledger's heading: when the session's earlier releases could not be restored, say so (loudly)."""
    durable.ledger_notice()


def totals() -> None:
    """Below the ledger table: the totals of the releases on the active table, and which releases are not in them."""
    led = state.ledger()
    if not len(led):
        return
    mine = state.fingerprint()
    fps = durable.entry_fingerprints()
    here = tuple(same_data(fp, mine) for fp in fps)
    uids = tuple(st.session_state.get("ledger_uids", ()))
    try:
        table = state.dataset().table
    except PrdpError:  # a table held by an engine: no record-by-record totals, the public sums remain
        table = None
    tot = _totals(state.token(), uids, here, led, table)
    on_it = sum(here)
    others = len(here) - on_it
    if others:
        names = sorted({str((fp or {}).get("name") or "unknown data") for fp, h in zip(fps, here) if not h})
        st.caption(f"{others} release(s) of this session ran on other data and are not in the totals below: "
                   f"{md_escape('; '.join(names))}.")
    if not on_it:
        return
    last = tot.iloc[-1]
    if math.isnan(last["worst-case total (ρ)"]):
        st.caption("These releases state their losses under different neighbour notions: they have no total as they "
                   "are (each notion is totalled on its own).")
        return
    public = f"worst case ρ = {_fmt(last['worst-case total (ρ)'])}"
    data_dependent = any(e.loss.kind == "record" for e, h in zip(led.entries, here) if h)
    if review.shows_records("base loss", note=False) or not data_dependent:
        public = f"base loss ρ = {_fmt(last['base total (ρ)'])}, " + public
    if table is not None and review.shows_records("largest record total", note=False):
        eps = last["largest record total (ε)"]
        eps_text = "" if math.isnan(eps) else f" (ε = {_fmt(eps)})"
        st.markdown(f"**Totals on this table** over its {on_it} release(s): the most exposed record has lost "
                    f"**ρ = {_fmt(last['largest record total (ρ)'])}**{eps_text} in all — confidential, a "
                    f"statistic of the records. Public forms summed: {public}.")
        _guidance(float(last["largest record total (ρ)"]))
    else:
        st.markdown(f"**Totals on this table** over its {on_it} release(s), public forms summed: {public}.")
        if table is not None:
            st.caption(review.NOTE.format(what="the largest total loss of a record"))
    if math.isinf(last["worst-case total (ρ)"]):
        st.caption(UNBOUNDED_NOTE)


def _guidance(rho: float) -> None:
    """A plain-language sentence beside an extreme largest total (:func:`prdp_core.core.interpret.loss_guidance`)."""
    if math.isfinite(rho):
        text = loss_guidance(rho)
        if text:
            st.caption(f":material/info: {text}")
