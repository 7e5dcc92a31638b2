"""The session state a study carries: every page's declared keys gathered, and kept across navigation.

The Study page maps the app's session to a study config and back (the schema of :mod:`prdp_core.study.config`,
docs/config.md): :mod:`ui.study_export` reads every page's session state into a config (built section by
section in :mod:`ui.study_sections`, the data source in :mod:`ui.study_source`), :mod:`ui.study_import`
validates a config and writes it back (each policy part by :mod:`ui.study_updates`), and
:mod:`ui.study_report` renders the report of its recorded releases.

Each page declares the session-state keys it owns — view settings, engine keys, rules of imported values,
editor tables, results — in its ui module (``STATE``, a :class:`ui.page_state.PageState`); this module
gathers those declarations (:data:`PAGES`) for the export and the import to loop over. The Policy
designer's thresholds ``thr_<measure>`` and its policy (``policy``, ``policy_token``, ``policy_summary``)
are read and written as the study's policy section.

:func:`keep_settings` (called by app.py before each page) keeps these settings when the
user moves to another page: Streamlit forgets the values of widgets that are not on screen.
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

from . import (
    analyst_tiers,
    budget_functions,
    concepts,
    data,
    personalized,
    policy_designer,
    run,
    tradeoffs,
)
from .page_state import PageState

#: The pages whose session state a study carries, in the order of a config's ``app`` section (each page's ui
#: module declares its keys, :class:`ui.page_state.PageState`).
STUDY_STATE = PageState(page="study", settings=("learn",))
PAGES: tuple[PageState, ...] = (STUDY_STATE, policy_designer.STATE, tradeoffs.STATE, run.STATE, budget_functions.STATE,
                                personalized.STATE, analyst_tiers.STATE, concepts.STATE, data.STATE)

#: View settings of each page: exported under ``app.<page>`` (plain values only).
PAGE_SETTINGS: dict[str, tuple[str, ...]] = {p.page: p.settings for p in PAGES if p.settings}

#: Widget keys that make up the engine sections (policy, workload, mechanisms) of a study.
ENGINE_KEYS: tuple[str, ...] = tuple(k for p in PAGES for k in p.engine)

#: Pages whose defaults depend on the dataset (:func:`ui.state.first_run_on_dataset`).
DATASET_PAGES = tuple(p.page for p in PAGES if p.dataset_defaults)

#: Results of earlier runs, dropped by an import (they belong to the previous settings).
RESULT_KEYS = tuple(k for p in PAGES for k in p.results)

#: Editor tables and their bases, cleared by an import.
EDITOR_KEYS = tuple(k for p in PAGES for k in p.editors)


#: Allowed values of page settings whose widgets refuse others (a slider or number box outside its bounds,
#: a text where a number belongs, an option the widget does not offer), from the pages' declarations.
SETTING_RULES: dict[str, tuple[Any, ...]] = {k: rule for p in PAGES for k, rule in p.rules.items()}


def checked_setting(key: str, value: Any) -> tuple[bool, Any]:
    """(ok, value) of an imported page setting under :data:`SETTING_RULES` (numbers given as text are read)."""
    rule = SETTING_RULES.get(key)
    if rule is None:
        return True, value
    if rule[0] == "choice":
        return (not isinstance(value, (list, dict)) and value in rule[1]), value
    if rule[0] == "subset":
        ok = isinstance(value, list) and all(not isinstance(v, (list, dict, bool)) and v in rule[1] for v in value)
        return ok, value
    _, lo, hi, whole = rule
    x = value
    if isinstance(x, str):
        try:
            x = float(x.strip())
        except ValueError:
            return False, value
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or not lo <= x <= hi:
        return False, value
    if whole:
        return (float(x).is_integer()), int(x)
    return True, float(x)


#: Page settings whose keys depend on the data (prefix + column name): the histogram lab's typed public
#: categories of each column. Kept across navigation, exported and imported like :data:`PAGE_SETTINGS`.
PAGE_SETTING_PREFIXES: dict[str, tuple[str, ...]] = {p.page: p.prefixes for p in PAGES if p.prefixes}


def prefixed(page: str, keys: Any) -> list[str]:
    """The data-dependent setting keys of ``page`` among ``keys`` (its declared prefixes)."""
    prefixes = PAGE_SETTING_PREFIXES.get(page, ())
    return [k for k in keys if isinstance(k, str) and prefixes and k.startswith(prefixes)]


def _all_keys() -> list[str]:
    keys = ["seed", *ENGINE_KEYS]  # the sidebar's seed box is hidden in review mode
    for settings in PAGE_SETTINGS.values():
        keys += settings
    for page in PAGE_SETTING_PREFIXES:
        keys += prefixed(page, list(st.session_state.keys()))
    ds = st.session_state.get("dataset")
    if ds is not None:
        keys += [f"thr_{m}" for m in ds.schema.measures]
    return keys


def keep_settings() -> None:
    """Keep the settings of pages that are not on screen (call before the page runs).

    Streamlit drops the value of a widget that is not drawn in a run; re-assigning the known
    keys at the start of every run keeps them, so the user finds each page as they left it
    and the Study page can export every page's state."""
    ss = st.session_state
    for k in _all_keys():
        if k in ss and k != "learn":
            try:
                ss[k] = ss[k]
            except Exception:  # a widget that refuses API writes: leave it to Streamlit
                pass


__all__ = ["DATASET_PAGES", "EDITOR_KEYS", "ENGINE_KEYS", "PAGES", "PAGE_SETTINGS", "PAGE_SETTING_PREFIXES",
           "RESULT_KEYS", "SETTING_RULES", "STUDY_STATE", "checked_setting", "keep_settings", "prefixed"]
