"""Private suggestions on the app's pages: a DP percentile over a typed range, its cost shown before use
and charged to the session ledger when adopted (:mod:`prdp_core.mechanisms.dp_quantile`).

The Policy designer offers private splitting thresholds (:func:`thresholds_panel`), the
Personalized DP page a private upper bound of a query's values and the Analyst tiers page a private
clipping bound of a sum (both :func:`bound_panel`). Both are the
only suggestions review mode offers besides typing a value: the data-derived ones (percentiles read
off the records) stay in teaching mode, labelled as such.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from prdp_core.core.errors import PrdpError
from prdp_core.core.splitting import as_thresholds
from prdp_core.mechanisms.dp_quantile import (
    MAX_EPSILON,
    CandidateGrid,
    DPQuantile,
    dp_percentile_thresholds,
    dp_quantile,
    rank_error_bound,
    suggestion_entry,
)

from . import state
from .common import md_escape, show_error

#: Session key of the parameters a private bound set: widget key → ``{"column", "value", "source"}``.
PRIVATE_KEY = "private_params"


def forget_suggestions() -> None:
    """A new active dataset (the ``new_dataset`` hook of :func:`ui.state.set_dataset`, registered below): the
    bounds a private suggestion released on the previous table are not this one's."""
    st.session_state.pop(PRIVATE_KEY, None)


def remember(key: str, column: str, value: float, source: str) -> None:
    """Remember that the parameter held by the widget ``key`` was set to ``value`` by a private suggestion on
    ``column`` (``source``: ``"private: …"``), so the release, the ledger and the study say so until it is retyped."""
    ss = st.session_state
    ss[PRIVATE_KEY] = {**(ss.get(PRIVATE_KEY) or {}), key: {"column": column, "value": float(value), "source": source}}


def private_source(key: str, column: Any) -> str | None:
    """The source of the parameter held by the widget ``key`` when it is still the value a private suggestion on
    ``column`` set (:func:`remember`); None when it was typed in since (or was never private)."""
    ss = st.session_state
    p = (ss.get(PRIVATE_KEY) or {}).get(key)
    if p and p["column"] == column and ss.get(key) is not None and float(ss[key]) == p["value"]:
        return str(p["source"])
    return None


#: Public default range of the candidates (a wide log grid costs only ln K in accuracy).
DEFAULT_LO, DEFAULT_HI, DEFAULT_SIZE = 1.0, 1e9, 1000


def _grid(prefix: str, column: str) -> CandidateGrid:
    ss = st.session_state
    return CandidateGrid(float(ss.get(f"{prefix}_lo_{column}", DEFAULT_LO)),
                         float(ss.get(f"{prefix}_hi_{column}", DEFAULT_HI)), DEFAULT_SIZE,
                         ss.get(f"{prefix}_spacing", "log"))


def _secure() -> bool:
    """Review mode draws with the exact sampler; teaching mode when the designer asks for it."""
    return state.review_mode() or bool(st.session_state.get("psugg_secure", False))


def _cost_caption(eps: float, pct: float, n_draws: int) -> None:
    each = eps / max(n_draws, 1)
    bound = rank_error_bound(pct, each, DEFAULT_SIZE, 0.05)
    st.caption(f"Cost when adopted: **ε = {eps:.4g}** (ρ = {eps * eps / 2:.4g}) for every record, added to your "
               f"privacy ledger{'' if n_draws == 1 else f' (ε = {each:.4g} per measure)'}. Accuracy: the suggested "
               f"value's rank is within {bound:,.0f} records of the best candidate's with probability 95% "
               f"({DEFAULT_SIZE:,} candidates over each typed range). The range is a public choice: type it "
               "from the measure's definition, never from the data.")


def _range_inputs(prefix: str, columns: Sequence[str]) -> None:
    for c in columns:
        a, b = st.columns(2)
        a.number_input(f"Smallest candidate of {md_escape(c)}", min_value=0.0, value=DEFAULT_LO, format="%g",
                       key=f"{prefix}_lo_{c}", help="Public: not read from the data. Default 1 (labelled default).")
        b.number_input(f"Largest candidate of {md_escape(c)}", min_value=0.0, value=DEFAULT_HI, format="%g",
                       key=f"{prefix}_hi_{c}", help="Public: not read from the data. Default 10⁹ (labelled default).")


def _adopt(key: str, draw: Callable[[], tuple[Any, str]]) -> None:
    """Callback body of both panels: ``draw()`` draws and applies a suggestion and returns (its ledger entry,
    the message), as a recorded release (:func:`ui.state.recorder`): the entry is charged to the session ledger,
    the message or the error kept under ``key``."""
    ss = st.session_state
    try:
        _, done = state.recorder().release(draw, label="private suggestion", entries=lambda out: (out[0],))
        ss[f"{key}_done"] = done
        ss.pop(f"{key}_error", None)
    except PrdpError as err:
        ss[f"{key}_error"] = err
        ss.pop(f"{key}_done", None)


def _outcome(key: str) -> None:
    ss = st.session_state
    if ss.get(f"{key}_error") is not None:
        show_error(ss[f"{key}_error"])
    elif ss.get(f"{key}_done"):
        st.success(ss[f"{key}_done"], icon=":material/lock:")


def thresholds_panel(measures: Sequence[str], apply: Callable[[Any, str], None], *, disabled: bool = False) -> None:
    """Private splitting thresholds: a DP percentile of each measure over typed ranges; ``apply(thresholds,
    source)`` writes them into the editors (the Policy designer's ``apply_suggestion``)."""
    st.markdown("**Private suggestion** — a differentially private quantile for each measure, charged to "
                "your ledger: the thresholds it gives are public once released.")
    c1, c2 = st.columns(2)
    c1.slider("Percentile", 50.0, 99.9, 97.0, 0.1, key="psugg_pct")
    c2.number_input("Privacy cost ε (all measures)", min_value=1e-4, max_value=MAX_EPSILON, value=0.1, format="%.4g",
                    key="psugg_eps")
    _range_inputs("psugg", measures)
    if state.teaching():
        st.checkbox("Exact sampler (secure, unseeded)", key="psugg_secure",
                    help="Review mode always uses it; a teaching run is seeded by the session's seed.")
    ss = st.session_state
    _cost_caption(float(ss["psugg_eps"]), float(ss["psugg_pct"]), len(measures))

    def draw() -> tuple[Any, str]:
        grids = {m: _grid("psugg", m) for m in measures}
        secure = _secure()
        _, seed = state.rng_and_seed()
        sug = dp_percentile_thresholds(state.dataset(), list(measures), float(ss["psugg_pct"]), grids=grids,
                                       epsilon=float(ss["psugg_eps"]), secure=secure, seed=None if secure else seed)
        apply(as_thresholds(sug.thresholds), sug.quantiles[0].source())
        return sug.entry, (f"Adopted private thresholds ({md_escape(sug.entry.label)}): "
                           + ", ".join(f"T({md_escape(m)}) = {v:,.6g}" for m, v in sug.thresholds.items())
                           + f", used as released; ε = {sug.epsilon:.4g} added to your ledger.")

    st.button("Draw and adopt private thresholds", key="psugg_apply", on_click=_adopt, args=("psugg", draw),
              disabled=disabled, help="Draws once and charges the ledger: drawing again costs again.")
    _outcome("psugg")


def bound_panel(key: str, column: str, apply: Callable[[DPQuantile], str | None], *, pct: float = 99.0) -> None:
    """A private upper bound of ``column`` (the personalized queries' ``hi``): a DP ``pct``-th percentile over a
    typed range, charged to the ledger; ``apply(quantile)`` writes it (source ``private: …``) and returns how it
    was post-processed (e.g. rounded), said beside the released value, or None when it is used as released."""
    ss = st.session_state
    c1, c2 = st.columns(2)
    c1.number_input("Percentile", 50.0, 99.99, pct, 0.5, key=f"{key}_pct")
    c2.number_input("Privacy cost ε", min_value=1e-4, max_value=MAX_EPSILON, value=0.1, format="%.4g", key=f"{key}_eps")
    _range_inputs(key, [column])
    _cost_caption(float(ss[f"{key}_eps"]), float(ss[f"{key}_pct"]), 1)

    def draw() -> tuple[Any, str]:
        secure = _secure()
        rng, seed = state.rng_and_seed()
        q = dp_quantile(state.dataset(), column, float(ss[f"{key}_pct"]), grid=_grid(key, column),
                        epsilon=float(ss[f"{key}_eps"]), secure=secure, rng=None if secure else rng,
                        seed=None if secure else seed)
        used = apply(q)
        return suggestion_entry([q], what=f"upper bound of {column}"), (
            f"Adopted a private upper bound of {md_escape(column)}: {q.value:,.6g} (DP p{q.pct:g}, "
            f"ε = {q.epsilon:.4g} added to your ledger)" + (f"; used as {md_escape(used)}." if used else ", used as "
                                                            "released."))

    st.button("Draw and adopt a private bound", key=f"{key}_apply", on_click=_adopt, args=(key, draw),
              help="Draws once and charges the ledger: drawing again costs again.")
    _outcome(key)


state.register("new_dataset", forget_suggestions)

__all__ = ["DEFAULT_HI", "DEFAULT_LO", "DEFAULT_SIZE", "PRIVATE_KEY", "bound_panel", "forget_suggestions",
           "private_source", "remember", "thresholds_panel"]
