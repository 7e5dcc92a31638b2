"""The worked example: one record (and its owner) followed through m(r), P(r), its ε at δ and what an attacker
could infer, every number computed live from the active policy.

In teaching mode the example follows a real record of the active table, chosen by the reader (the one with the
largest loss, a typical one, or a row number), and its owner's records (e.g. a firm's establishments), under the
designer's warning that these values are confidential. Review mode never shows a real record's loss (the screen
output ``worked example`` of :mod:`ui.review`): the example follows a hypothetical record whose values the reader
types, and a hypothetical owner of several such records. The math is prdp_core's: the split counts
(:func:`~prdp_core.core.splitting.split_counts`), the policy's per-query losses
(:meth:`~prdp_core.core.workload.SplittingPolicy.components`), owners' losses
(:func:`~prdp_core.core.loss_profile.owner_losses`), conversions and inferences (:mod:`prdp_core.core.interpret`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from prdp_core.core import interpret
from prdp_core.core.loss_profile import format_loss, owner_losses
from prdp_core.core.splitting import restrict_thresholds, split_counts
from prdp_core.core.wording import readable
from prdp_core.core.workload import SplittingPolicy

from . import policy_designer as pstate
from . import review, state
from .common import confidential, guarded, md_escape

#: The records a reader may follow in teaching mode.
CHOICES = {"largest": "the record with the largest loss", "median": "a typical record (the median loss)",
           "row": "a row of my choosing"}
#: The δ of the example's (ε, δ) read-out and the attacker's prior belief.
DELTA = 1e-6
PRIOR = 0.01


def real_records() -> bool:
    """Whether the example may follow a real record: teaching mode on a table held in memory."""
    return not state.is_large() and review.shows_records("worked example", note=False)


def _real_row(key: str, pol: SplittingPolicy) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The chosen real record (one row) and all the records of its owner (the record alone without an owner)."""
    ds = state.dataset()
    table = ds.table
    confidential("The worked example follows a real record and its owner: shown to the policy designer only.")
    how = st.radio("Follow", list(CHOICES), format_func=CHOICES.get, key=f"{key}_we_pick", horizontal=True)
    losses = pstate.preview(pol).records.values
    if how == "largest":
        i = int(np.argmax(losses))
    elif how == "median":
        i = int(np.argsort(losses, kind="stable")[len(losses) // 2])
    else:
        i = int(st.number_input("Row number (0 is the first row)", min_value=0, max_value=len(table) - 1, value=0,
                                step=1, key=f"{key}_we_row"))
    row = table.iloc[[i]]
    owner = ds.schema.owner_col
    firm = table[table[owner] == row[owner].iloc[0]] if owner and pd.notna(row[owner].iloc[0]) else row
    return row, firm


def _typed_row(key: str, pol: SplittingPolicy) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A hypothetical record typed by the reader (its other columns blank) and an owner of several such records."""
    ds = state.dataset()
    st.caption(":material/visibility_off: Review mode shows no real record's loss: type a hypothetical record "
               "(public thresholds and budgets apply to it as to any record).")
    thr = pol.thresholds.default() or {}
    cols = st.columns(len(pol.thresholds.measures) + 1)
    values: dict[str, Any] = {}
    for c, m in zip(cols, pol.thresholds.measures):
        values[m] = c.number_input(f"{md_escape(m)} of the record", min_value=0.0,
                                   value=float(3.5 * thr.get(m, 1.0)), format="%g", key=f"{key}_we_{m}")
    k = int(cols[-1].number_input("Records of its owner", min_value=1, max_value=10_000, value=3, step=1,
                                  key=f"{key}_we_owner_n"))
    blank: dict[str, Any] = {c: "" for c in ds.schema.groups}
    for m in ds.schema.measures:
        blank[m] = 0.0
    row = pd.DataFrame([{**blank, **values}])
    return row, pd.concat([row] * k, ignore_index=True)


def render(key: str) -> None:
    """The worked example on the active policy (``key``: a prefix of its widget keys, unique per page)."""
    pol = pstate.ensure_policy()
    real = real_records()
    row, firm = (_real_row if real else _typed_row)(key, pol)
    with guarded():
        _steps(pol, row, firm, real)


def _threshold(pol: SplittingPolicy, row: pd.DataFrame, measure: str) -> str:
    """T(a) of ``measure`` for the record ``row`` (its group's row of the thresholds, else the default row)."""
    rows = pol.thresholds.as_dict()
    gc = pol.thresholds.group_col
    mine = rows.get(row[gc].iloc[0]) if gc else None
    t = (mine or rows.get("*") or {}).get(measure)
    return "none" if t is None else readable(t)


def _steps(pol: SplittingPolicy, row: pd.DataFrame, firm: pd.DataFrame, real: bool) -> None:
    """The four steps of the example: pieces, policy loss, (ε, δ), what an attacker could infer; then the owner."""
    m = int(split_counts(row, pol.thresholds)[0])
    lines = []
    for a in pol.thresholds.measures:
        one = restrict_thresholds(pol.thresholds, (a,))
        pieces = int(split_counts(row, one)[0]) if one is not None else 1
        lines.append(f"{md_escape(a)}: r(a) = {readable(row[a].iloc[0])}, T(a) = {_threshold(pol, row, a)} → "
                     f"{pieces:,} piece(s)")
    st.markdown("**1. Pieces.** Unit splitting cuts each measure into pieces of at most T(a); the record's "
                "m(r) is the largest count:\n" + "\n".join(f"   - {t}" for t in lines)
                + f"\n\n   So **m(r) = {m:,}**.")
    comps = pol.components(row).iloc[0]
    p = float(comps.sum())
    parts = "\n".join(f"   - {md_escape(q)}: {format_loss(float(v))}" for q, v in comps.items())
    st.markdown("**2. Policy loss.** Each query charges its budget ρ (a query on split data charges ρ × m(r)²); "
                f"the charges add up:\n{parts}\n\n   So **P(r) = {format_loss(p)}**.")
    g = interpret.record_guarantee(p, "rho", delta=DELTA, prior=PRIOR)
    st.markdown(f"**3. As (ε, δ).** At δ = {DELTA:.0e}, P(r) = {format_loss(p)} is **ε = {g.eps_cks:,.4g}** by the "
                "CKS conversion (the tightest standard one).")
    st.markdown(f"**4. What an attacker could infer.** Someone who knows every other record guesses one yes/no fact "
                f"about this record correctly with probability at most **{interpret.percent(g.accuracy)}** (a coin "
                f"flip is 50%); a suspicion held at {PRIOR:.0%} can rise to at most "
                f"**{interpret.percent(g.posterior)}**.")
    note = interpret.loss_guidance(p, DELTA, pieces=m)
    if note:
        st.caption(f":material/info: {note}")
    own = owner_losses(pol.record_loss(firm), np.zeros(len(firm), dtype=int))
    o = float(own.iloc[0])
    who = "Its owner" if real else "A hypothetical owner"
    og = interpret.zcdp_side_by_side(o, DELTA)
    st.markdown(f"**5. {who}** holds {len(firm):,} record(s). An owner of J records loses at most J × the sum of "
                f"their losses: **{format_loss(o)}**, ε = {og.eps_cks:,.4g} at δ = {DELTA:.0e}.")


__all__ = ["CHOICES", "DELTA", "PRIOR", "real_records", "render"]
