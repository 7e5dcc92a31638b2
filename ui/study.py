"""The app's state as a study config, and back (the Study page).

:func:`export_state` reads every page's session state into a study config mapping (the
schema of :mod:`prdp_core.config`, docs/config.md): the data source, mode and seed, the
Policy designer's active policy, the Budget functions, Personalized DP and Analyst tiers
editors with the mechanism each page runs, and — under ``app`` — the view settings of every
page (sweeps, toggles, calculators). :func:`import_state` does the reverse: it validates the
whole config and loads its data *before* touching the session, so a bad config leaves the
session as it was. The session's privacy ledger is never changed by an import (it records
what this session released), nor is its review mode (:mod:`ui.mode`: a review session stays in review
whatever the config's mode, and the import's notes say so). :func:`page_study` builds one page's part
of such a config with the same builders: the study its "Reproduce in Python" code is written from
(:mod:`ui.reproduce`).

Each page declares the session-state keys it owns — view settings, engine keys, rules of imported values,
editor tables, results — in its ui module (``STATE``, a :class:`ui.page_state.PageState`); this module loops
over those declarations (:data:`PAGES`). The Policy designer's thresholds ``thr_<measure>`` and its policy
(``policy``, ``policy_token``, ``policy_summary``) are read and written here as the study's policy section.

:func:`keep_settings` (called by app.py before each page) keeps these settings when the
user moves to another page: Streamlit forgets the values of widgets that are not on screen.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd
import streamlit as st

import prdp_core
from prdp_core.core.errors import ConfigError, DataError, PrdpError
from prdp_core.data import memory
from prdp_core.data.dataset import Dataset, Schema, load_table, prepare_dataset
from prdp_core.study.config import (
    PRDP_ALGORITHMS,
    RECORD_ALGORITHMS,
    Study,
    build_budget,
    data_columns,
    group_values,
    parse_config,
    prepare_section,
)

from . import (
    analyst_tiers,
    budget_functions,
    concepts,
    data,
    personalized,
    policy_designer,
    private_suggest,
    run,
    state,
    tradeoffs,
)
from . import mode as umode
from .common import md_escape
from .concepts import DECLARED_PREFIX, DECLARED_SETTINGS
from .page_state import PageState
from .policy_designer import SOURCES_KEY

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

#: Threshold given to a measure a config leaves out, where the Policy designer needs one for every
#: measure: so large that no record is split on it (a public constant, not a data value).
NO_SPLIT_THRESHOLD = 1e15

_PDP_SHORT = {"M": "minimum", "T": "threshold", "S": "sample", "PE": "pe", "Alag": "stretching"}


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _is_plain(v: Any) -> bool:
    v = _plain(v)
    if isinstance(v, list):
        return all(x is None or isinstance(x, (bool, int, float, str)) for x in v)
    return v is None or isinstance(v, (bool, int, float, str))


#: Allowed values of page settings whose widgets refuse others (a slider or number box outside its bounds,
#: a text where a number belongs, an option the widget does not offer), from the pages' declarations.
SETTING_RULES: dict[str, tuple[Any, ...]] = {k: rule for p in PAGES for k, rule in p.rules.items()}


def _checked_setting(key: str, value: Any) -> tuple[bool, Any]:
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


def _prefixed(page: str, keys: Any) -> list[str]:
    prefixes = PAGE_SETTING_PREFIXES.get(page, ())
    return [k for k in keys if isinstance(k, str) and prefixes and k.startswith(prefixes)]


def _all_keys() -> list[str]:
    keys = ["seed", *ENGINE_KEYS]  # the sidebar's seed box is hidden in review mode
    for settings in PAGE_SETTINGS.values():
        keys += settings
    for page in PAGE_SETTING_PREFIXES:
        keys += _prefixed(page, list(st.session_state.keys()))
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


# ---------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------


def _editor_frame(base: pd.DataFrame, delta: Any) -> pd.DataFrame:
    """Apply a data editor's stored edits (edited / added / deleted rows) to its base table."""
    df = base.copy().reset_index(drop=True)
    if not isinstance(delta, Mapping):
        return df
    for i, changes in (delta.get("edited_rows") or {}).items():
        for col, val in changes.items():
            if col in df.columns and int(i) < len(df):
                df.loc[int(i), col] = val
    added = [r for r in (delta.get("added_rows") or []) if isinstance(r, Mapping)]
    if added:
        df = pd.concat([df, pd.DataFrame(added)], ignore_index=True)
    deleted = [int(i) for i in (delta.get("deleted_rows") or []) if int(i) < len(base)]
    if deleted:
        df = df.drop(index=deleted).reset_index(drop=True)
    return df


def _data_section() -> dict[str, Any]:
    src = state.source()
    d: dict[str, Any]
    if src.get("kind") == "large":  # a table of the data folder, read in place (the path is relative to it)
        d = {"path": str(src["path"]), "engine": str(src.get("engine") or "duckdb")}
    elif src.get("kind") == "sample":
        d = {"sample": src["name"], "seed": int(src.get("seed", 0) or 0)}
        if src.get("n") is not None:
            d["n"] = int(src["n"])
    else:
        d = {"path": str(src.get("filename") or "data.csv")}
    if src.get("schema") is not None:
        s = src["schema"]
        d["schema"] = {"id": s.get("id_col"), "measures": list(s.get("measures") or ()),
                       "groups": list(s.get("groups") or ()), "owner": s.get("owner_col")}
    if src.get("options"):
        d["prepare"] = prepare_section(src["options"])
    return d


def _budget_section(ss: Any) -> dict[str, Any]:
    mode = ss.get("bf_mode", "preset")
    out: dict[str, Any]
    measure = ss.get("bf_measure")
    if mode == "preset":
        kind = ss.get("bf_preset", "inverse")
        if kind == "constant":
            return {"preset": "constant", "eps": float(ss.get("bf_eps", 1.0)), "U": float(ss.get("bf_U", 1e12))}
        out = {"preset": kind, "column": measure, "alpha": float(ss.get("bf_alpha", 1e4))}
        if kind == "log":
            out["k"] = float(ss.get("bf_k", 4.0))
    elif mode == "step":
        rows = pd.DataFrame(ss.get("bf_steps_current", ss.get("bf_steps"))).dropna(how="all")
        eps = pd.to_numeric(rows["ε"], errors="coerce").tolist()
        bounds = pd.to_numeric(rows["up to value"], errors="coerce").tolist()[:-1]
        out = {"steps": {"column": measure, "bounds": bounds, "eps": eps}}
    elif mode == "groups":
        from .budget_functions import default_group_table

        col = ss.get("bf_group_col")
        tbl = ss.get("bf_groups_table")
        if tbl is None:
            tbl = default_group_table(state.active_dataset(), col, measure)
        tbl = pd.DataFrame(tbl).dropna(how="all")
        parts, default = {}, None
        for g, text in zip(tbl["group"].astype(str), tbl["budget"].astype(str)):
            if g.strip() == "*":
                default = text
            elif g.strip():
                parts[g.strip()] = text
        out = {"groups": {"column": col, "parts": parts, "default": default}}
    else:
        out = {"expression": str(ss.get("bf_expr", ""))}
    out["eps_min"] = float(ss["bf_eps_min"]) if ss.get("bf_eps_min_on") else None
    out["eps_max"] = float(ss.get("bf_eps_max", 100.0))
    out["U"] = float(ss.get("bf_U", 1e12))
    return out


def _prdp_mechanism(ss: Any, seed: int, on_engine: bool = False) -> dict[str, Any]:
    model = ss.get("bf_model", "central")
    query = ss.get("bf_query", "sum")
    m: dict[str, Any] = {"kind": "prdp", "model": model, "query": query, "beta": float(ss.get("bf_beta", 0.1))}
    m.update({"secure": True} if ss.get("bf_secure") else {"seed": seed})  # secure releases are unseeded
    if query in ("sum", "max"):
        m["column"] = ss.get("bf_measure")
    elif query == "distinct":
        m["column"] = ss.get("bf_distinct_col")
    if model == "local":
        m["threshold"] = ss.get("bf_threshold", "paper")
    allowed = {"count": query == "count", "framework": True, "sum_extension": query == "sum" and model == "central",
               "naive": True}
    m["algorithms"] = [a for a in PRDP_ALGORITHMS if allowed[a] and not (on_engine and a in RECORD_ALGORITHMS)]
    return m


def _spec_section(ss: Any, seed: int) -> dict[str, Any]:
    from .personalized import EACH_RECORD, SPEC_DEFAULTS

    g = lambda k: ss.get(k, SPEC_DEFAULTS.get(k))  # noqa: E731
    user = g("pdp_user")
    user = None if user in (None, EACH_RECORD) else user
    if g("pdp_source") == "tiers":
        return {"tiers": {"f_c": float(g("pdp_fc")), "f_m": float(g("pdp_fm")), "eps_c": float(g("pdp_ec")),
                          "eps_m": float(g("pdp_em")), "eps_l": float(g("pdp_el"))}, "seed": seed, "user": user}
    out: dict[str, Any] = {"column": g("pdp_col"), "default_eps": float(g("pdp_default")), "user": user}
    mp = ss.get("pdp_label_map_df")
    if isinstance(mp, pd.DataFrame) and len(mp):
        out["labels"] = {str(k): float(v) for k, v in zip(mp["label"], mp["ε"]) if v is not None and not pd.isna(v)}
    return out


def _pdp_mechanism(ss: Any, seed: int) -> dict[str, Any]:
    from .personalized import MECHANISM_CHOICES, T_RULES

    short = MECHANISM_CHOICES.get(ss.get("pdp_rel_mech", "Sample (S)"), "S")
    rule = T_RULES.get(ss.get("pdp_rel_t", "max Φ (paper's S)"), "max")
    t: Any = float(ss.get("pdp_rel_tc", 0.5)) if rule == "custom" else rule
    from .personalized import data_default_params, private_params

    hi = ss.get("pdp_hi")
    kind = ss.get("pdp_rel_kind", "count")
    flagged, private = data_default_params(kind), private_params(kind)
    return {"kind": "personalized", "mechanism": _PDP_SHORT[short], "t": t,
            **({"design_defaults": flagged} if flagged else {}), **({"param_source": private} if private else {}),
            "rescale": bool(ss.get("pdp_rel_rescale", False)),
            "query": {"kind": kind, "column": ss.get("pdp_value"),
                      "cutoff": float(ss.get("pdp_cutoff", 1.0)), "lo": float(ss.get("pdp_lo", 0.0)),
                      "hi": None if hi is None else float(hi), "median_score": ss.get("pdp_score", "rank"),
                      "integer": bool(ss.get("pdp_integer", False))},
            **({"secure": True} if ss.get("pdp_secure") else {"seed": seed})}  # secure releases are unseeded


def current_tiers(ss: Any) -> dict[str, float] | None:
    """The Analyst tiers editor's tiers (name → ε), edits included; None when invalid or unused."""
    from prdp_core.mechanisms import multitier as mt

    base = ss.get("mt_tiers_base")
    if not isinstance(base, pd.DataFrame):
        return None
    from .analyst_tiers import current_table

    delta = ss.get(f"mt_tiers_editor_{ss.get('mt_editor_version', 0)}")
    current = current_table()
    if delta is None and current is not None:
        frame = current  # the editor is not on screen: the table as last shown
    else:
        frame = _editor_frame(base, delta)
    try:
        mt.tiers_from(frame)
    except PrdpError:
        return None
    frame = frame.dropna(how="all")
    return {str(n): float(e) for n, e in zip(frame["name"], frame["eps"])}


def _mt_mechanism(ss: Any, seed: int) -> dict[str, Any]:
    from .analyst_tiers import DEFAULTS, NO_FILTER

    def g(k: str) -> Any:
        return ss.get(k) if ss.get(k) is not None else DEFAULTS.get(k)

    m: dict[str, Any] = {"kind": "multitier", "model": g("mt_model"),
                         **({"secure": True} if ss.get("mt_secure") else {"seed": seed})}  # secure: unseeded
    if g("mt_filter_col") not in (None, NO_FILTER):
        m["filter"] = {"column": g("mt_filter_col"), "op": g("mt_filter_op"), "value": _plain(ss.get("mt_filter_val"))}
    if m["model"] == "central":
        m.update(query=g("mt_query"), family=g("mt_family"), delta=float(g("mt_delta")))
        if m["query"] == "sum":
            m.update(measure=g("mt_measure"), clip=float(g("mt_clip")))
            if analyst_tiers.private_params():  # a clipping bound a private suggestion released says so
                m["param_source"] = analyst_tiers.private_params()
    else:
        m.update(measure=g("mt_local_measure"), d=int(g("mt_d")), scale=g("mt_scale"), top=float(g("mt_top")),
                 variant=g("mt_variant"))
    return m


def _policy_section(pol: Any, policy: dict[str, Any]) -> dict[str, Any]:
    """Write the thresholds of ``pol`` (and where they came from) into ``policy``; return its workload section."""
    t = pol.thresholds
    if t.group_col is None:
        policy["thresholds"] = {m: float(v) for m, v in t.as_dict()["*"].items()}
    else:
        policy["thresholds"] = {"group_column": t.group_col,
                                "rows": {str(g): {m: float(v) for m, v in row} for g, row in t.rows}}
    if pol.threshold_sources():  # thresholds computed from the data stay flagged after a round trip
        policy["threshold_source"] = pol.threshold_sources()
    return pol.workload.to_dict()


def _us_mechanism(ss: Any, seed: int) -> dict[str, Any]:
    us: dict[str, Any] = {"kind": "unit_splitting", "partition_delta": float(ss.get("run_ps_delta", 1e-6))}
    us.update({"secure": True} if ss.get("run_secure") else {"seed": seed})  # secure releases are unseeded
    return us


def _app_section(ss: Any, settings: Mapping[str, tuple[str, ...]]) -> dict[str, dict[str, Any]]:
    """The ``app`` section: the plain view settings of the pages in ``settings`` (typed categories as lists)."""
    app: dict[str, dict[str, Any]] = {}
    for page, keys in settings.items():
        vals = {k: _plain(ss[k]) for k in keys if k in ss and _is_plain(ss[k])}
        typed = [(k[len(DECLARED_PREFIX):], str(ss[k])) for k in sorted(_prefixed(page, list(ss.keys())))
                 if str(ss.get(k) or "").strip()]
        if typed:  # column names may hold any character: exported as two lists, not as setting names
            vals["hl_declared_columns"] = [c for c, _ in typed]
            vals["hl_declared_categories"] = [v for _, v in typed]
        if vals:
            app[page] = vals
    return app


def export_state() -> dict[str, Any]:
    """The whole app as a study config mapping (docs/config.md); ``parse_config`` accepts it.

    Parts a page holds invalid input for (e.g. a budget formula being typed) are left out;
    :func:`export_notes` says which."""
    ss = st.session_state
    seed = int(ss.get("seed", 0))
    notes: list[str] = []
    cfg: dict[str, Any] = {"version": 1, "title": f"Study of {state.active_dataset().name}"[:200],  # a title's limit
                           "mode": ss.get("mode", "teaching"), "seed": seed, "data": _data_section()}
    policy: dict[str, Any] = {}
    mechanisms: list[dict[str, Any]] = []
    large = state.source().get("kind") == "large"  # the records stay in the engine: parts that need them are left out
    pol = ss.get("policy")
    if pol is not None and ss.get("policy_token") == state.active_token():
        cfg["workload"] = _policy_section(pol, policy)
        mechanisms.append(_us_mechanism(ss, seed))
    if "bf_mode" in ss:
        b = _budget_section(ss)
        try:
            build_budget(parse_config({"version": 1, "data": {"sample": "table2_example"},
                                       "policy": {"budget": b}}).policy["budget"])
            policy["budget"] = b
            if large and ss.get("bf_model") == "local":
                notes.append(LARGE_NOTE.format(what="The local-model (PrLDP) run of the Budget functions page"))
            else:
                mechanisms.append(_prdp_mechanism(ss, seed, on_engine=large))
        except PrdpError as err:
            notes.append(f"The budget function editor holds an invalid budget ({err.message}); it was left out.")
    if "pdp_source" in ss and large:
        notes.append(LARGE_NOTE.format(what="The Personalized DP specification and release"))
    elif "pdp_source" in ss:
        policy["specification"] = _spec_section(ss, seed)
        mechanisms.append(_pdp_mechanism(ss, seed))
    if "mt_tiers_base" in ss and large:
        notes.append(LARGE_NOTE.format(what="The analyst tiers"))
    elif "mt_tiers_base" in ss:
        tiers = current_tiers(ss)
        if tiers is None:
            notes.append("The tier table is invalid; the analyst tiers were left out.")
        else:
            policy["tiers"] = tiers
            mechanisms.append(_mt_mechanism(ss, seed))
    if policy:
        cfg["policy"] = policy
    cfg["mechanisms"] = mechanisms
    app = _app_section(ss, PAGE_SETTINGS)
    if app:
        cfg["app"] = app
    ss["study_export_notes"] = notes
    return cfg


def export_notes() -> list[str]:
    """What the last :func:`export_state` had to leave out."""
    return list(st.session_state.get("study_export_notes", []))


def export_study() -> Study:
    """:func:`export_state` validated as a :class:`~prdp_core.config.Study`."""
    return parse_config(export_state())


#: The page of each snippet part (whose view settings a page's study carries).
SNIPPET_PAGES = {"data": "data", "policy": "policy_designer", "run": "run", "tradeoffs": "tradeoffs",
                 "budget": "budget_functions", "personalized": "personalized", "multitier": "analyst_tiers",
                 "granular": "concepts"}


def page_study(part: str, pol: Any = None) -> Study:
    """The study a page's "Reproduce in Python" snippet is written from (:func:`prdp_core.snippets.snippet`):
    the data source, mode and seed, the part's policy section and mechanism — built as :func:`export_state`
    builds them — and the page's view settings. ``pol`` is the unit-splitting policy the page shows (the
    Run page's: only the queries it releases). Raises :class:`~prdp_core.errors.ConfigError` when the page's
    settings do not make a valid study (e.g. a budget formula being typed)."""
    ss = st.session_state
    seed = int(ss.get("seed", 0))
    cfg: dict[str, Any] = {"version": 1, "mode": ss.get("mode", "teaching"), "seed": seed, "data": _data_section()}
    policy: dict[str, Any] = {}
    mechanisms: list[dict[str, Any]] = []
    if part in ("policy", "run", "tradeoffs"):
        if pol is None:
            raise ConfigError("No valid policy yet.")
        cfg["workload"] = _policy_section(pol, policy)
        if part == "run":
            mechanisms.append(_us_mechanism(ss, seed))
    elif part == "budget":
        policy["budget"] = _budget_section(ss)
        on_engine = state.source().get("kind") == "large" and ss.get("bf_model") != "local"  # local: on a sample
        mechanisms.append(_prdp_mechanism(ss, seed, on_engine=on_engine))
    elif part == "personalized":
        policy["specification"] = _spec_section(ss, seed)
        mechanisms.append(_pdp_mechanism(ss, seed))
    elif part == "multitier":
        tiers = current_tiers(ss)
        if tiers is None:
            raise ConfigError("The tier table is invalid.")
        policy["tiers"] = tiers
        mechanisms.append(_mt_mechanism(ss, seed))
    if policy:
        cfg["policy"] = policy
    cfg["mechanisms"] = mechanisms
    page = SNIPPET_PAGES[part]
    app = _app_section(ss, {page: PAGE_SETTINGS.get(page, ())})
    if app:
        cfg["app"] = app
    return parse_config(cfg)


# ---------------------------------------------------------------------------
# Import
# ---------------------------------------------------------------------------


def _same_source(src: Mapping[str, Any], cfg_data: Mapping[str, Any]) -> bool:
    cur = _data_section() if src else {}
    want = dict(cfg_data)
    return {k: v for k, v in cur.items() if v not in (None, {}, [])} == \
        {k: v for k, v in want.items() if v not in (None, {}, [])}


#: The export note for a part that needs the records, on a large dataset.
LARGE_NOTE = ("{what} need the records themselves: on this large dataset they run on a sample in the app, and a study "
              "of the whole table cannot run them, so they were left out.")


def _dataset_for(study: Study, data_bytes: bytes | None, data_name: str | None
                 ) -> tuple[Any, dict[str, Any] | None]:
    """The dataset the study needs and its source dict; (None, None) when the active one fits. A study
    held by an engine (``data.engine``: duckdb or auto) reads its path in the server's data folder, in
    place (:func:`ui.large.open_source`)."""
    src = study.data
    if _same_source(state.source(), src.to_dict()) and data_bytes is None:
        return None, None
    opts = dict(src.prepare)
    if src.path is not None and src.engine != "memory" and data_bytes is None:
        from . import large

        if src.schema is None:
            raise ConfigError("data.schema: a study of a large dataset names its column roles (they are not guessed "
                              "from the whole table).", hint="Add data.schema (id, measures, groups, owner).")
        try:
            return large.open_source({"path": src.path, "engine": "duckdb", "schema": src.schema, "options": opts})
        except PrdpError as err:
            raise type(err)(f"data.path: {err.message}", hint=err.hint or "Put the table in the server's data "
                                                                             f"folder ({large.folder()}).") from None
    if src.sample is not None:  # the sample (or its table) comes through the memory guard
        source: dict[str, Any] = {"kind": "sample", "name": src.sample, "n": src.n, "seed": src.sample_seed}
        if src.schema is None and not opts:
            return state.sample_dataset(src.sample, src.n, src.sample_seed), source
        df = state.sample_frame(src.sample, src.n, src.sample_seed)
        schema = Schema.from_dict(src.schema) if src.schema else prdp_core.samples.info(src.sample).schema
        ds = prepare_dataset(df, schema, name=src.sample, **opts)
        return ds, {**source, "schema": schema.to_dict(), "options": opts}
    if data_bytes is None:
        raise DataError(f"data.path: this study reads the file '{src.path}'. Upload it with the config, or make it "
                        "the active dataset on the Data page first.", hint="The current session is unchanged.")
    name = data_name or src.path or "data.csv"
    memory.guard_table(file_bytes=len(data_bytes))
    df = load_table(data_bytes, filename=name)
    memory.guard_table(rows=len(df), columns=df.shape[1])
    schema = Schema.from_dict(src.schema) if src.schema else prdp_core.guess_schema(df)
    ds = prepare_dataset(df, schema, name=name, **opts)
    return ds, {"kind": "file", "filename": name, "schema": schema.to_dict(), "options": opts}


def _policy_updates(study: Study, ds: Any, up: dict[str, Any], pop: set[str]) -> Any:
    from prdp_core.core.splitting import thresholds_from_frame
    from prdp_core.core.workload import SplittingPolicy, Workload, workload_to_frame

    measures = list(ds.schema.measures)
    t = study.policy["thresholds"]
    wl = Workload.from_dict(study.workload or {"queries": []})
    if "rows" not in t:
        for m in measures:
            up[f"thr_{m}"] = float(t.get(m, NO_SPLIT_THRESHOLD))
        thr = prdp_core.core.splitting.as_thresholds({m: up[f"thr_{m}"] for m in measures})
        up["policy_per_group"] = False
    else:
        rows = [{"group": str(g), **{m: float(row.get(m, NO_SPLIT_THRESHOLD)) for m in measures}}
                for g, row in t["rows"].items()]
        frame = pd.DataFrame(rows, columns=["group", *measures])
        thr = thresholds_from_frame(frame, group_col=t["group_column"], table=group_values(ds, t["group_column"]))
        up.update(policy_per_group=True, policy_group_col=t["group_column"], thr_group_base=frame)
        star = t["rows"].get("*")
        for m in measures:
            up[f"thr_{m}"] = float((star or {}).get(m, NO_SPLIT_THRESHOLD))
        pop.add("thr_table")
    sources = study.policy.get("threshold_source") or {}
    pol = SplittingPolicy(thr, wl, threshold_source=sources)
    if getattr(ds, "engine", None) is not None:
        ds.engine.validate_policy(pol, ds.schema.measures)
    else:
        pol.validate(ds.table, ds.schema.measures)
    # the Policy designer flags a threshold still at a value the config says was computed from the data
    up[SOURCES_KEY] = {m: {"values": sorted({float(dict(row)[m]) for _, row in thr.rows if m in dict(row)}),
                           "source": src} for m, src in sources.items()}
    up.update(wl_frame=workload_to_frame(wl), policy_partition_rho=float(wl.partition_rho),
              policy_joint=bool(wl.joint), policy=pol, policy_compare=[])
    pop.add("wl_table")
    return pol


def _budget_updates(study: Study, ds: Any, up: dict[str, Any], pop: set[str], notes: list[str]) -> None:
    b = study.policy["budget"]
    E = study.budget_function()
    E.check_columns(data_columns(ds))
    up.update(bf_eps_max=float(b["eps_max"]) if b.get("eps_max") is not None else 100.0,
              bf_U=float(b["U"]) if b.get("U") is not None else 1e12,
              bf_eps_min_on=b.get("eps_min") is not None,
              bf_eps_min=float(b["eps_min"]) if b.get("eps_min") is not None else 1e-8)
    if "preset" in b:
        up.update(bf_mode="preset", bf_preset=b["preset"])
        if b["preset"] == "constant":
            up["bf_eps"] = float(b["eps"])
        else:
            up.update(bf_alpha=float(b["alpha"]), bf_measure=b["column"])
            if b["preset"] == "log":
                up["bf_k"] = float(b["k"])
    elif "expression" in b:
        up.update(bf_mode="expression", bf_expr=b["expression"])
    elif "steps" in b:
        s = b["steps"]
        up.update(bf_mode="step", bf_measure=s["column"],
                  bf_steps=pd.DataFrame({"up to value": [*s["bounds"], None], "ε": list(s["eps"])}))
        pop.update({"bf_steps_current", "bf_steps_edit"})
    else:
        g = b["groups"]
        rows = [{"group": k, "budget": v} for k, v in g["parts"].items()]
        if g.get("default") is not None:
            rows.append({"group": "*", "budget": g["default"]})
        tbl = pd.DataFrame(rows, columns=["group", "budget"])
        up.update(bf_mode="groups", bf_group_col=g["column"], bf_groups_base=tbl, bf_groups_base_col=g["column"],
                  bf_groups_table=tbl)
        pop.add(f"bf_groups_edit_{g['column']}")
    m = next((m for m in study.mechanisms if m["kind"] == "prdp"), None)
    if m is not None:
        up.update(bf_model=m["model"], bf_query=m["query"], bf_beta=float(m["beta"]), bf_secure=bool(m.get("secure")))
        if m["model"] == "local":
            up["bf_threshold"] = m.get("threshold", "paper")
        if m["query"] == "distinct":
            up["bf_distinct_col"] = m["column"]
        elif m["query"] in ("sum", "max"):
            if "bf_measure" in up and up["bf_measure"] != m["column"]:
                notes.append(f"The Budget functions page uses one measure for the budget and the query; it shows "
                             f"{up['bf_measure']}.")
            else:
                up["bf_measure"] = m["column"]


def _spec_updates(study: Study, ds: Dataset, up: dict[str, Any], pop: set[str], notes: list[str]) -> None:
    from .personalized import EACH_RECORD, MECHANISM_CHOICES, T_RULES

    s = study.policy["specification"]
    study.privacy_spec(ds.table)  # validate on the data before changing anything
    up["pdp_user"] = s["user"] or EACH_RECORD
    if "tiers" in s:
        t = s["tiers"]
        up.update(pdp_source="tiers", pdp_fc=t["f_c"], pdp_fm=t["f_m"], pdp_ec=t["eps_c"], pdp_em=t["eps_m"],
                  pdp_el=t["eps_l"])
        if s["seed"] != study.seed:
            notes.append("The Personalized DP page draws the tiers with the session seed; the config's "
                         f"specification seed {s['seed']} differs from the study seed {study.seed}.")
    else:
        col = s["column"]
        up.update(pdp_source="column", pdp_col=col, pdp_default=float(s["default_eps"]))
        if s["labels"]:
            labels = [str(x) for x in pd.unique(ds.table[col].astype(str))[:50]]
            eps = [float(s["labels"].get(lab, s["default_eps"])) for lab in labels]
            up["pdp_label_map_df"] = pd.DataFrame({"label": labels, "ε": eps})
        else:
            up["pdp_label_map_df"] = None
        pop.add(f"pdp_label_editor_{col}")
    m = next((m for m in study.mechanisms if m["kind"] == "personalized"), None)
    if m is not None:
        short = {v: k for k, v in _PDP_SHORT.items()}[m["mechanism"]]
        up["pdp_rel_mech"] = next(k for k, v in MECHANISM_CHOICES.items() if v == short)
        t_val = m["t"]
        rule = t_val if t_val in ("max", "mean") else "custom"
        up["pdp_rel_t"] = next(k for k, v in T_RULES.items() if v == rule)
        if rule == "custom":
            up["pdp_rel_tc"] = float(t_val)
        q = m["query"]
        up["pdp_secure"] = bool(m.get("secure", False))
        up.update(pdp_rel_rescale=bool(m["rescale"]), pdp_rel_kind=q["kind"], pdp_cutoff=float(q["cutoff"]),
                  pdp_lo=float(q["lo"]), pdp_score=q["median_score"], pdp_integer=bool(q.get("integer", False)))
        if q.get("column"):
            up["pdp_value"] = q["column"]
        if q.get("hi") is not None:
            up["pdp_hi"] = float(q["hi"])
        dd = m.get("design_defaults") or []
        if m.get("param_source") and q.get("column") and q.get("hi") is not None:  # a private hi stays private
            up[private_suggest.PRIVATE_KEY]["pdp_hi"] = {"column": q["column"], "value": float(q["hi"]),
                                                         "source": m["param_source"]["hi"]}
        if dd and q.get("column"):  # values the exporting session had computed from the data stay flagged
            up["pdp_data_defaults"] = {"column": q["column"],
                                       "hi": float(q["hi"]) if "hi" in dd and q.get("hi") is not None else None,
                                       "cutoff": float(q["cutoff"]) if "cutoff" in dd else None}


def _tier_updates(study: Study, ds: Dataset, up: dict[str, Any], pop: set[str]) -> None:
    from .analyst_tiers import NO_FILTER

    study.tiers()
    up["mt_tiers_base"] = pd.DataFrame(list(study.policy["tiers"].items()), columns=["name", "eps"])
    up["mt_editor_version"] = int(st.session_state.get("mt_editor_version", 0)) + 1
    m = next((m for m in study.mechanisms if m["kind"] == "multitier"), None)
    if m is None:
        return
    up["mt_model"] = m["model"]
    up["mt_secure"] = bool(m.get("secure", False))
    f = m.get("filter")
    if f is None:
        up["mt_filter_col"] = NO_FILTER
    else:
        is_group = f["column"] in ds.schema.groups
        up.update(mt_filter_col=f["column"], mt_filter_op=f["op"],
                  mt_filter_val=str(f["value"]) if is_group else float(f["value"]))
    if m["model"] == "central":
        up.update(mt_query=m["query"], mt_family=m["family"], mt_delta=float(m["delta"]))
        if m["query"] == "sum":
            up.update(mt_measure=m["measure"], mt_clip=float(m["clip"]))
            if m.get("param_source"):  # a private clipping bound stays private
                up[private_suggest.PRIVATE_KEY]["mt_clip"] = {"column": m["measure"], "value": float(m["clip"]),
                                                              "source": m["param_source"]["clip"]}
    else:
        up.update(mt_local_measure=m["measure"], mt_d=int(m["d"]), mt_scale=m["scale"],
                  mt_top=float(m.get("top", 1e6)), mt_variant=m["variant"])


def _set_raw(ds: Dataset, source: Mapping[str, Any], data_bytes: bytes | None, data_name: str | None) -> None:
    """The Data page's role editor for an imported data source (the table before preparation)."""
    import uuid

    from . import data as udata

    if source.get("kind") == "large":
        st.session_state.pop("raw", None)  # the Column roles view reconnects the table when opened
        return
    if source.get("kind") == "sample":
        udata.raw_from_sample(source["name"], source.get("n"), int(source.get("seed", 0)))
        if source.get("schema"):
            raw = st.session_state["raw"]
            raw["schema"] = Schema.from_dict(source["schema"])
            raw["source"] = {k: v for k, v in source.items() if k not in ("schema", "options")}
        return
    df = load_table(data_bytes or b"", filename=data_name or source.get("filename"))
    st.session_state["raw"] = {"df": df, "name": source.get("filename"), "schema": Schema.from_dict(source["schema"]),
                               "source": {"kind": "file", "filename": source.get("filename")},
                               "id": uuid.uuid4().hex[:8], "upload": source.get("upload")}


def on_import(kind: str) -> None:
    """Callback of the Study page's import buttons: ``kind`` is ``"upload"`` or ``"paste"``.
    Leaves a message in ``study_msg``; on error the session is unchanged."""
    ss = st.session_state
    try:
        if kind == "upload":
            up = ss.get("study_upload")
            if up is None:
                raise ConfigError("Choose a study config file (YAML) first.")
            text: Any = up.getvalue()
            source = up.name
        else:
            text = ss.get("study_paste") or ""
            source = "the pasted config"
        data = ss.get("study_data_upload")
        if data is not None:
            memory.guard_table(file_bytes=data.size)
        notes = import_state(text, data_bytes=None if data is None else data.getvalue(),
                             data_name=None if data is None else data.name)
    except PrdpError as err:
        ss["study_msg"] = {"kind": "error", "text": f"**{err.title}.** {md_escape(err)}", "notes": []}
        return
    ss["study_msg"] = {"kind": "success", "text": f"Loaded the study from {md_escape(source)}: dataset "
                       f"**{md_escape(state.active_dataset().name)}**, {ss.get('mode')} mode, seed {ss.get('seed')}.",
                       "notes": notes}
    ss.pop("study_outputs", None)


def import_state(config: Mapping[str, Any] | Study | str | bytes, *, data_bytes: bytes | None = None,
                 data_name: str | None = None) -> list[str]:
    """Restore the app from a study config (mapping, YAML text or :class:`Study`).

    Everything is validated first — the config, its data (loaded from the sample, from
    ``data_bytes`` for a file source, or the active dataset when it is the same source), the
    policy against the data and every ``app`` setting name — and only then written to the
    session, so on any error (a :class:`PrdpError`) the session is unchanged. Pages the config
    does not mention return to their defaults; the privacy ledger is kept. Returns notes about
    anything the app could not show exactly as configured."""
    study = config if isinstance(config, Study) else parse_config(config)
    notes: list[str] = []
    for page, settings in study.app.items():
        allowed = PAGE_SETTINGS.get(page, ())
        for k in settings:
            if k not in allowed and not (page == "concepts" and k in DECLARED_SETTINGS):
                raise ConfigError(f"app.{page}.{k}: unknown setting of the {page.replace('_', ' ')} page.",
                                  hint=f"Settings of this page: {', '.join(allowed) or 'none'}.")
    new_ds, new_src = _dataset_for(study, data_bytes, data_name)
    ds = new_ds if new_ds is not None else state.active_dataset()
    study.check_against(ds)
    kept_mode, mode_note = umode.imported(study.mode)  # an import never leaves review mode
    up: dict[str, Any] = {"mode": kept_mode, "seed": int(study.seed)}
    if mode_note:
        notes.append(mode_note)
    pop: set[str] = set(RESULT_KEYS)
    up[private_suggest.PRIVATE_KEY] = {}  # the config says which parameters a private suggestion released
    if "thresholds" in study.policy and study.workload is not None:
        _policy_updates(study, ds, up, pop)
    for m in study.mechanisms:
        if m["kind"] == "unit_splitting":
            up["run_ps_delta"] = float(m["partition_delta"])
            up["run_secure"] = bool(m.get("secure", False))
            break
    if "budget" in study.policy:
        _budget_updates(study, ds, up, pop, notes)
    on_engine = getattr(ds, "engine", None) is not None  # a large dataset: parts that need the records stay out
    if "specification" in study.policy and on_engine:
        notes.append("The Personalized DP specification was not loaded: on a large dataset that page works on a "
                     "sample of the records (set it there).")
    elif "specification" in study.policy:
        _spec_updates(study, ds, up, pop, notes)
    if "tiers" in study.policy and on_engine:
        notes.append("The analyst tiers were not loaded: on a large dataset that page works on a sample of the "
                     "records (set them there).")
    elif "tiers" in study.policy:
        _tier_updates(study, ds, up, pop)
    for page, settings in study.app.items():
        settings = dict(settings)
        cols, cats = settings.pop("hl_declared_columns", None), settings.pop("hl_declared_categories", None)
        if cols is not None or cats is not None:
            if not isinstance(cols, list) or not isinstance(cats, list) or len(cols) != len(cats):
                raise ConfigError("app.concepts.hl_declared_columns: must list the columns whose public categories "
                                  "hl_declared_categories gives, one entry each.")
            up.update({f"{DECLARED_PREFIX}{c}": str(v) for c, v in zip(cols, cats)})
        for k, v in settings.items():
            ok, val = _checked_setting(k, v)
            if ok:
                up[k] = val
            else:
                notes.append(f"app.{page}.{k} = {v!r} is not a value the page offers: the page keeps its default.")
    granular = [m.get("label") or f"{m['histogram']} histogram of {', '.join(m['attributes'])}"
                for m in study.mechanisms if m["kind"] == "granular"]
    if granular:
        notes.append(f"The granular-DP mechanisms ({'; '.join(granular)}) are not loaded into the app: prdp run "
                     "releases them, and the Concepts page's histogram lab keeps its own settings (app.concepts). "
                     "A study exported from the app leaves them out — keep this config for them.")
    seeds = {study.mechanism_seed(i) for i, m in enumerate(study.mechanisms) if not m.get("secure")}
    if seeds - {study.seed}:
        notes.append(f"The app runs every page with the session seed {study.seed}; some mechanisms of this config "
                     "have other seeds (the CLI and the report use them).")

    # --- everything is valid: write the session -------------------------------------------
    ss = st.session_state
    owned = set(ENGINE_KEYS) | {k for keys in PAGE_SETTINGS.values() for k in keys} | set(EDITOR_KEYS)
    owned |= {k for k in list(ss.keys()) if isinstance(k, str) and k.startswith("thr_") and k not in
              ("thr_editor_version",)}
    owned |= {k for page in PAGE_SETTING_PREFIXES for k in _prefixed(page, list(ss.keys()))}
    if new_ds is None:
        owned.discard("raw")  # same data source: keep the Data page's role editor as it is
    for k in owned - {"learn"} - set(up):
        ss.pop(k, None)
    for k in pop:
        ss.pop(k, None)
    if new_ds is not None and new_src is not None:
        if data_bytes is not None and new_src.get("kind") == "file":
            from . import durable

            new_src = {**new_src, **durable.keep_upload(data_bytes, new_src.get("filename"))}
        state.set_dataset(new_ds, new_src)  # gives the new data its starting policy, replaced below
        _set_raw(new_ds, new_src, data_bytes, data_name)
        if SOURCES_KEY not in up:
            ss.pop(SOURCES_KEY, None)  # the config's thresholds were typed, whatever the starting policy's were
    pol = up.pop("policy", None)
    for k, v in up.items():
        ss[k] = v
    if pol is not None:
        from .policy_designer import set_policy

        set_policy(pol)
        ss["policy_token"] = state.active_token()
    else:
        ss.pop("policy", None)
        ss.pop("policy_token", None)
        ss.pop("policy_summary", None)
    if study.data.sample is not None:
        name = study.data.sample
        ss["sample_name"] = name
        ss["sample_seed"] = int(study.data.sample_seed)
        meta = prdp_core.samples.info(name)
        ss[f"sample_n_{name}"] = int(study.data.n) if study.data.n is not None else int(
            meta.default_n or 0) if meta.kind == "synthetic" else 0
    q_hi = up.get("pdp_value")
    if q_hi is not None and "pdp_hi" not in up:
        from .personalized import set_query_defaults

        keep: dict[str, Any] = {k: up[k] for k in ("pdp_lo", "pdp_cutoff") if k in up}
        set_query_defaults(q_hi)  # the page's design default for the public upper bound
        ss.update(keep)
    # the imported settings are for the data just loaded: the pages keep them instead of resetting their defaults
    state.settings_belong_to_dataset(DATASET_PAGES)
    ss["study_import_notes"] = notes
    return notes


__all__ = ["ENGINE_KEYS", "PAGE_SETTINGS", "current_tiers", "export_state", "export_study", "import_state",
           "keep_settings"]
