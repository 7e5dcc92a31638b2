"""The Run page's view of today's methods: cell suppression and noise infusion beside the policy's release.

For one SUM query of the active policy's workload (grouped by at most two columns), the designer types the
rules (p%, (n, k), minimum frequency, complementary suppression) and the noise infusion's range, and compares:
:func:`prdp_core.mechanisms.legacy_sdc.release` runs as a recorded release of the session that adds no ledger
entry (none of these methods has a privacy loss), its noise infusion inside a declared teaching simulation.
Teaching mode shows each method's summary — beside the DP answers of the same query from the Run page's
release, when there is one — and the cells; review mode shows only how many cells each method withholds
(which cells the rules withhold is a statistic of the records: the screen output "legacy cells").
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pandas as pd
import streamlit as st

from prdp_core.core.errors import PrdpError
from prdp_core.core.noise_source import Noise
from prdp_core.core.release import Release
from prdp_core.core.workload import SplittingPolicy
from prdp_core.mechanisms import legacy_sdc

from . import review, state
from .common import confidential, md_escape, show_error

#: Session key of the last comparison (the release and the query it was made for).
KEY = "legacy_result"


def sum_queries(pol: SplittingPolicy) -> list[tuple[int, str]]:
    """The workload's SUM queries by at most two columns: (position, name as the release answers it)."""
    return [(i, f"{i + 1}. {q.name()}") for i, q in enumerate(pol.workload.queries)
            if q.kind == "sum" and len(q.group_by) <= legacy_sdc.MAX_DIMS]


def _compare(pol: SplittingPolicy, i: int, name: str) -> None:
    ss = st.session_state
    q = pol.workload.queries[i]
    try:
        rules = legacy_sdc.Rules(p=ss.get("legacy_p") if ss.get("legacy_p_on", True) else None,
                                 n=int(ss.get("legacy_n", 2)),
                                 k=ss.get("legacy_k") if ss.get("legacy_k_on", True) else None,
                                 min_frequency=int(ss.get("legacy_min_freq", 3)))
        infusion = legacy_sdc.NoiseInfusion(float(ss.get("legacy_low", 0.10)), float(ss.get("legacy_high", 0.15)))
        _, seed = state.rng_and_seed()
        rel = state.release("legacy", partial(legacy_sdc.release, state.dataset(), measure=str(q.measure),
                                              group_by=q.group_by, query=name, rules=rules, infusion=infusion,
                                              complementary=bool(ss.get("legacy_complementary", True)),
                                              where=q.filter, noise=Noise.teaching(seed), reveal=state.teaching()),
                            label="today's methods", keep=False)
    except PrdpError as err:
        ss[KEY] = err
        return
    ss[KEY] = {"release": rel, "query": name, "token": state.token()}


def _summary(result: dict[str, Any], dp: Release | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The comparison shown, beside the Run page's release ``dp``: made once per (comparison, release), not on
    every rerun."""
    kept = result.get("beside")
    if kept is None or kept[0] is not dp:
        cmp = legacy_sdc.beside(result["release"], None if dp is None else dp.answers, "DP: the Run page's release")
        kept = result["beside"] = (dp, cmp)
    return kept[1].summary, kept[1].cells


def section(pol: SplittingPolicy, dp: Release | None) -> None:
    """The expander of the Run page: inputs, the Compare button and the comparison (``dp``: the Run page's
    current release, whose answers of the same query stand beside the methods)."""
    queries = sum_queries(pol)
    with st.expander("Today's methods beside the policy: cell suppression and noise infusion",
                     icon=":material/compare_arrows:"):
        st.caption("What agencies published before DP: cells withheld by the p% and (n, k) rules (with complementary "
                   "cells so that none can be recovered from the margins), or every firm's values moved by a random "
                   "share (noise infusion). Neither gives a formal guarantee; neither adds to the ledger.")
        if not queries:
            st.info("The active workload has no SUM query grouped by at most two columns: add one on the Policy "
                    "designer page.")
            return
        names = dict(queries)
        c1, c2, c3, c4 = st.columns(4)
        i = c1.selectbox("Table (a SUM query)", list(names), format_func=names.__getitem__, key="legacy_query")
        c2.number_input("p (%)", min_value=0.1, max_value=99.0, value=10.0, step=1.0, key="legacy_p",
                        help="p% rule: a cell is sensitive when the second-largest firm could estimate the largest "
                             "within p%.")
        c2.toggle("p% rule", value=True, key="legacy_p_on")
        c3.number_input("n", min_value=1, max_value=100, value=2, step=1, key="legacy_n")
        c3.number_input("k (%)", min_value=1.0, max_value=100.0, value=85.0, step=1.0, key="legacy_k",
                        help="(n, k) rule: sensitive when the n largest firms hold more than k% of the cell.")
        c3.toggle("(n, k) rule", value=True, key="legacy_k_on")
        c4.number_input("Fewest firms per cell", min_value=0, max_value=1000, value=3, step=1, key="legacy_min_freq")
        c4.toggle("Complementary suppression", value=True, key="legacy_complementary")
        n1, n2, n3 = st.columns([1, 1, 2])
        n1.number_input("Noise: least share", min_value=0.0, max_value=0.99, value=0.10, step=0.01,
                        key="legacy_low", help="Each firm's values move by at least this share (noise infusion).")
        n2.number_input("Noise: largest share", min_value=0.0, max_value=0.99, value=0.15, step=0.01,
                        key="legacy_high")
        n3.button("Compare with today's methods", key="legacy_go", on_click=_compare, args=(pol, i, names[i]))
        result = st.session_state.get(KEY)
        if isinstance(result, PrdpError):
            show_error(result)
            return
        if not result or result.get("token") != state.token():
            return
        rel: Release = result["release"]
        st.markdown(f"**{md_escape(result['query'])}** — {md_escape(rel.extras.get('legacy_rules', ''))}")
        if not review.shows_records("legacy cells"):
            st.dataframe(rel.for_review().answers, hide_index=True)  # also a teaching run's, once in review mode
            return
        confidential("Which cells the rules withhold, the true and noisy values and the errors come from the "
                     "records: shown because the app is in teaching mode.")
        summary, cells = _summary(result, dp)
        st.dataframe(summary.style.format({"share_cells": "{:.1%}", "share_total": "{:.1%}",
                                           "median_rel_error": "{:.2%}", "p90_rel_error": "{:.2%}"}),
                     hide_index=True)
        st.caption("Relative errors are over the cells each method publishes (withheld cells have no error: they "
                   "have no value). Cells: largest first.")
        st.dataframe(cells[cells["kind"] == "interior"].sort_values("true", ascending=False).head(2000),
                     hide_index=True)
