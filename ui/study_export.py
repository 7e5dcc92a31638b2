"""The app's state as a study config (the Study page's export, and each page's study for its snippet).

:func:`export_state` reads every page's session state into a study config mapping (the schema of
:mod:`prdp_core.study.config`, docs/config.md): the data source, mode and seed, the Policy designer's active
policy, the Budget functions, Personalized DP and Analyst tiers editors with the mechanism each page
runs, and — under ``app`` — the view settings of every page (sweeps, toggles, calculators). Parts a page
holds invalid input for are left out and :func:`export_notes` says which. :func:`page_study` builds one
page's part of such a config with the same builders (:mod:`ui.study_sections`): the study its
"Reproduce in Python" code is written from (:mod:`ui.reproduce`). :func:`part_settings` is what a page part's
recorded releases are made with, as the study exports them (kept with them by :func:`ui.state.release`, compared by
the Study page's report, :mod:`ui.study_report`).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping

import streamlit as st

from prdp_core.core.errors import ConfigError, PrdpError
from prdp_core.study.config import Study, build_budget, parse_config
from prdp_core.study.runs import RUN_KINDS

from . import state
from .study import PAGE_SETTINGS
from .study_sections import (
    app_section,
    budget_section,
    current_tiers,
    mt_mechanism,
    pdp_mechanism,
    policy_section,
    prdp_mechanism,
    spec_section,
    us_mechanism,
)
from .study_source import data_section

#: The export note for a part that needs the records, on a large dataset.
LARGE_NOTE = ("{what} need the records themselves: on this large dataset they run on a sample in the app, and a study "
              "of the whole table cannot run them, so they were left out.")


def export_state() -> dict[str, Any]:
    """The whole app as a study config mapping (docs/config.md); ``parse_config`` accepts it.

    Parts a page holds invalid input for (e.g. a budget formula being typed) are left out;
    :func:`export_notes` says which."""
    ss = st.session_state
    seed = int(ss.get("seed", 0))
    notes: list[str] = []
    cfg: dict[str, Any] = {"version": 1, "title": f"Study of {state.active_dataset().name}"[:200],  # a title's limit
                           "mode": ss.get("mode", "teaching"), "seed": seed, "data": data_section()}
    policy: dict[str, Any] = {}
    mechanisms: list[dict[str, Any]] = []
    large = state.source().get("kind") == "large"  # the records stay in the engine: parts that need them are left out
    pol = ss.get("policy")
    if pol is not None and ss.get("policy_token") == state.active_token():
        cfg["workload"] = policy_section(pol, policy)
        mechanisms.append(us_mechanism(ss, seed))
    if "bf_mode" in ss:
        b = budget_section(ss)
        try:
            build_budget(parse_config({"version": 1, "data": {"sample": "table2_example"},
                                       "policy": {"budget": b}}).policy["budget"])
            policy["budget"] = b
            if large and ss.get("bf_model") == "local":
                notes.append(LARGE_NOTE.format(what="The local-model (PrLDP) run of the Budget functions page"))
            else:
                mechanisms.append(prdp_mechanism(ss, seed, on_engine=large))
        except PrdpError as err:
            notes.append(f"The budget function editor holds an invalid budget ({err.message}); it was left out.")
    if "pdp_source" in ss and large:
        notes.append(LARGE_NOTE.format(what="The Personalized DP specification and release"))
    elif "pdp_source" in ss:
        policy["specification"] = spec_section(ss, seed)
        mechanisms.append(pdp_mechanism(ss, seed))
    if "mt_tiers_base" in ss and large:
        notes.append(LARGE_NOTE.format(what="The analyst tiers"))
    elif "mt_tiers_base" in ss:
        tiers = current_tiers(ss)
        if tiers is None:
            notes.append("The tier table is invalid; the analyst tiers were left out.")
        else:
            policy["tiers"] = tiers
            mechanisms.append(mt_mechanism(ss, seed))
    if policy:
        cfg["policy"] = policy
    cfg["mechanisms"] = mechanisms
    app = app_section(ss, PAGE_SETTINGS)
    if app:
        cfg["app"] = app
    ss["study_export_notes"] = notes
    return cfg


def export_notes() -> list[str]:
    """What the last :func:`export_state` had to leave out."""
    return list(st.session_state.get("study_export_notes", []))


def export_study() -> Study:
    """:func:`export_state` validated as a :class:`~prdp_core.study.config.Study`."""
    return parse_config(export_state())


#: The page of each snippet part (whose view settings a page's study carries).
SNIPPET_PAGES = {"data": "data", "policy": "policy_designer", "run": "run", "tradeoffs": "tradeoffs",
                 "budget": "budget_functions", "personalized": "personalized", "multitier": "analyst_tiers",
                 "granular": "concepts"}


def _budget_part(ss: Any, seed: int, policy: dict[str, Any]) -> dict[str, Any]:
    policy["budget"] = budget_section(ss)
    on_engine = state.source().get("kind") == "large" and ss.get("bf_model") != "local"  # local: on a sample
    return prdp_mechanism(ss, seed, on_engine=on_engine)


def _specification_part(ss: Any, seed: int, policy: dict[str, Any]) -> dict[str, Any]:
    policy["specification"] = spec_section(ss, seed)
    return pdp_mechanism(ss, seed)


def _tiers_part(ss: Any, seed: int, policy: dict[str, Any]) -> dict[str, Any]:
    tiers = current_tiers(ss)
    if tiers is None:
        raise ConfigError("The tier table is invalid.")
    policy["tiers"] = tiers
    return mt_mechanism(ss, seed)


#: The snippet parts of a policy-part page: each writes its part into ``policy`` and returns its mechanism (the
#: Policy designer, Run and Trade-offs parts write the workload instead; data and granular parts hold neither).
PART_BUILDERS: dict[str, Callable[[Any, int, dict[str, Any]], dict[str, Any]]] = {
    "budget": _budget_part, "personalized": _specification_part, "multitier": _tiers_part}


def page_study(part: str, pol: Any = None) -> Study:
    """The study a page's "Reproduce in Python" snippet is written from (:func:`prdp_core.study.snippets.snippet`):
    the data source, mode and seed, the part's policy section and mechanism — built as :func:`export_state`
    builds them — and the page's view settings. ``pol`` is the unit-splitting policy the page shows (the
    Run page's: only the queries it releases). Raises :class:`~prdp_core.core.errors.ConfigError` when the page's
    settings do not make a valid study (e.g. a budget formula being typed)."""
    ss = st.session_state
    seed = int(ss.get("seed", 0))
    cfg: dict[str, Any] = {"version": 1, "mode": ss.get("mode", "teaching"), "seed": seed, "data": data_section()}
    policy: dict[str, Any] = {}
    mechanisms: list[dict[str, Any]] = []
    if part in ("policy", "run", "tradeoffs"):
        if pol is None:
            raise ConfigError("No valid policy yet.")
        cfg["workload"] = policy_section(pol, policy)
        if part == "run":
            mechanisms.append(us_mechanism(ss, seed))
    elif part in PART_BUILDERS:
        mechanisms.append(PART_BUILDERS[part](ss, seed, policy))
    if policy:
        cfg["policy"] = policy
    cfg["mechanisms"] = mechanisms
    page = SNIPPET_PAGES[part]
    app = app_section(ss, {page: PAGE_SETTINGS.get(page, ())})
    if app:
        cfg["app"] = app
    return parse_config(cfg)


# ---------------------------------------------------------------------------
# The settings a recorded release is made with
# ---------------------------------------------------------------------------


#: The page part that records the releases of each mechanism kind of a study (granular: the command line only).
PART_OF_KIND = {"unit_splitting": "run", "prdp": "budget_functions", "personalized": "personalized",
                "multitier": "analyst_tiers"}


#: The policy part each mechanism kind releases (:attr:`prdp_core.study.runs.RunConfig.POLICY_PART`).
POLICY_OF_KIND = {k: c.POLICY_PART for k, c in RUN_KINDS.items() if c.POLICY_PART is not None}


def settings_of(cfg: Mapping[str, Any], kind: str) -> str:
    """What a release of ``kind`` is made with, read from a study config: its policy part, the workload (unit
    splitting), its mechanism entries and the mode (as JSON, to compare)."""
    part = POLICY_OF_KIND.get(kind, "")
    pol = (cfg.get("policy") or {}).get(part)
    workload = cfg.get("workload") if part == "thresholds" else None  # the workload goes with the thresholds
    mechanisms = [dict(m) for m in cfg.get("mechanisms", []) if m.get("kind") == kind]
    return json.dumps([pol, workload, mechanisms, cfg.get("mode")], sort_keys=True, default=str)


def part_settings(part: str) -> str | None:
    """The settings of page ``part`` as the study exports them now (None: not a study's mechanism, or settings
    that make no valid study)."""
    kind = next((k for k, p in PART_OF_KIND.items() if p == part), None)
    if kind is None:
        return None
    try:
        return settings_of(export_study().to_dict(), kind)
    except PrdpError:
        return None


# a release recorded by ui.state keeps its page part's settings (the Study page's report compares them)
state.register("part_settings", part_settings)
