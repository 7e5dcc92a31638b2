"""The Run page's editor of public group keys: one list of values per group-by column of the active
workload — the app's form of a study's ``workload.group_keys`` (:mod:`prdp_core.core.keysets`).

A group-by whose columns are all listed is answered on the product of the lists: cells not listed are
dropped, listed cells absent from the data are released as noisy zeros, and a secure release accepts
them (the cells no longer come from the data). The lists are typed in, never filled from the records."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import streamlit as st

from prdp_core.core import keysets
from prdp_core.core.errors import PrdpError
from prdp_core.core.limits import MAX_KEY_CELLS
from prdp_core.core.workload import SplittingPolicy
from prdp_core.engines import is_engine_data
from prdp_core.mechanisms.unit_splitting.stats import listed_keys, table_kinds

from . import policy_designer as pstate
from . import state
from .common import md_escape

#: Session key of a column's text area (``run_keys_<column>``) and of the lists it was last filled from.
FIELD = "run_keys_{}"
SYNCED = "run_keys_of"


def columns(pol: SplittingPolicy) -> list[str]:
    """The workload's group-by columns, in query order."""
    return list(dict.fromkeys(c for q in pol.workload.queries for c in q.group_by))


def parse_values(text: str) -> list[str]:
    """Values typed in a text area: one per line or separated by commas, blanks ignored."""
    return [v.strip() for v in re.split(r"[,\n]", text or "") if v.strip()]


def _kinds() -> dict[str, str]:
    ds = state.dataset()
    return dict(ds.engine.column_kinds()) if is_engine_data(ds) else table_kinds(ds.table)


def _adopt(lists: dict[str, list[Any]]) -> None:
    from . import run as rstate

    ss = st.session_state
    pol: SplittingPolicy = ss["policy"]
    try:
        new = replace(pol, workload=replace(pol.workload, group_keys=lists))
        listed_keys(new, _kinds())  # numbers for a numeric column; at most MAX_KEY_CELLS cells per group-by
    except PrdpError as err:
        rstate.fail(err)
        return
    pstate.adopt_policy(new)
    ss.pop("run_error", None)


def on_apply(cols: list[str]) -> None:
    """Callback of "Use these key lists": the typed lists become the active workload's group keys."""
    ss = st.session_state
    _adopt({c: vals for c in cols if (vals := parse_values(ss.get(FIELD.format(c), "")))})


def on_clear() -> None:
    """Callback of "Take keys from the data again": the workload without key lists."""
    _adopt({})


def _sync(pol: SplittingPolicy, cols: list[str]) -> None:
    """Fill the text areas from the active lists when they changed elsewhere (an import, a cleared list) or
    when the page is opened again (Streamlit forgets a widget's value on another page)."""
    ss = st.session_state
    current = keysets.as_mapping(pol.workload.group_keys)
    if ss.get(SYNCED) != current or any(FIELD.format(c) not in ss for c in cols):
        for c in cols:
            ss[FIELD.format(c)] = "\n".join(str(v) for v in current.get(c, []))
        ss[SYNCED] = current


def summary(pol: SplittingPolicy) -> str:
    """Which group-bys take their cells from public lists, and how many cells each."""
    wl = pol.workload
    listed = keysets.listed(wl)
    if not listed:
        return ""
    return "; ".join(f"{md_escape(' × '.join(gb))}: {keysets.n_cells(gb, wl.group_keys):,} listed cells"
                     for gb in listed)


def editor(pol: SplittingPolicy, *, expanded: bool) -> None:
    """The "Public group keys" expander: a text area per group-by column, apply and clear buttons."""
    cols = columns(pol)
    if not cols:
        return
    _sync(pol, cols)
    with st.expander("Public group keys", icon=":material/key:", expanded=expanded):
        st.caption("Type the keys from public knowledge (a code list, the published geography), never from these "
                   "records: one value per line or separated by commas. A group-by whose columns are all listed "
                   "answers exactly the product of the lists — records with other keys are dropped, listed cells "
                   "with no record are released as noisy zeros — and a secure release accepts it. At most "
                   f"{MAX_KEY_CELLS:,} cells per group-by. In a study config: `workload.group_keys`.")
        grid = st.columns(min(3, len(cols)))
        for i, c in enumerate(cols):
            grid[i % len(grid)].text_area(f"Keys of {md_escape(c)}", key=FIELD.format(c), height=120)
        b1, b2 = st.columns(2)
        b1.button("Use these key lists", key="run_keys_apply", on_click=on_apply, args=(cols,))
        if pol.workload.group_keys:
            b2.button("Take keys from the data again", key="run_keys_clear", on_click=on_clear)
        text = summary(pol)
        if text:
            st.caption(":material/key: Public key lists in use — " + text + ".")


def needed(pol: SplittingPolicy) -> bool:
    """True when a secure release of ``pol`` would refuse its group keys: a group-by without a list and no
    partition selection."""
    wl = pol.workload
    listed = set(keysets.listed(wl))
    return wl.partition_rho <= 0 and any(q.group_by and q.group_by not in listed for q in wl.queries)
