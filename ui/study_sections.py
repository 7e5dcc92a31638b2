"""The sections of a study config built from the pages' session state (the export's builders).

Each builder reads one page's widgets and editors from the session and returns its part of a study
config (docs/config.md): the Budget functions page's budget function and PrDP mechanism, the
Personalized DP specification and release, the Analyst tiers' table and multi-tier release, the
Policy designer's thresholds and workload with the Run page's unit-splitting release, and the pages'
view settings (``app``). :mod:`ui.study_export` assembles the whole study (and a page's part of it)
from them; :mod:`ui.study_updates` does the reverse.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from prdp_core.core.errors import PrdpError
from prdp_core.study.config import PRDP_ALGORITHMS, RECORD_ALGORITHMS

from . import analyst_tiers, state
from .concepts import DECLARED_PREFIX
from .study import prefixed

#: The Personalized DP page's short mechanism names and the config's ``mechanism`` values.
PDP_SHORT = {"M": "minimum", "T": "threshold", "S": "sample", "PE": "pe", "Alag": "stretching"}


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


def budget_section(ss: Any) -> dict[str, Any]:
    """The ``policy.budget`` section: the Budget functions page's preset, steps, groups or formula."""
    mode = ss.get("bf_mode", "preset")
    out: dict[str, Any]
    measure = ss.get("bf_measure")
    if mode == "preset":
        preset = ss.get("bf_preset", "inverse")
        if preset == "constant":
            return {"preset": "constant", "eps": float(ss.get("bf_eps", 1.0)), "U": float(ss.get("bf_U", 1e12))}
        out = {"preset": preset, "column": measure, "alpha": float(ss.get("bf_alpha", 1e4))}
        if preset == "log":
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


def prdp_mechanism(ss: Any, seed: int, on_engine: bool = False) -> dict[str, Any]:
    """The Budget functions page's PrDP release; ``on_engine`` leaves out the algorithms that need the records."""
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


def spec_section(ss: Any, seed: int) -> dict[str, Any]:
    """The ``policy.specification`` section: the Personalized DP page's tiers or ε column."""
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


def pdp_mechanism(ss: Any, seed: int) -> dict[str, Any]:
    """The Personalized DP page's release (its mechanism, threshold rule and query)."""
    from .personalized import MECHANISM_CHOICES, T_RULES

    short = MECHANISM_CHOICES.get(ss.get("pdp_rel_mech", "Sample (S)"), "S")
    rule = T_RULES.get(ss.get("pdp_rel_t", "max Φ (paper's S)"), "max")
    t: Any = float(ss.get("pdp_rel_tc", 0.5)) if rule == "custom" else rule
    from .personalized import data_default_params, private_params

    hi = ss.get("pdp_hi")
    kind = ss.get("pdp_rel_kind", "count")
    flagged, private = data_default_params(kind), private_params(kind)
    return {"kind": "personalized", "mechanism": PDP_SHORT[short], "t": t,
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


def mt_mechanism(ss: Any, seed: int) -> dict[str, Any]:
    """The Analyst tiers page's multi-tier release (central or local, with its filter)."""
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


def policy_section(pol: Any, policy: dict[str, Any]) -> dict[str, Any]:
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


def us_mechanism(ss: Any, seed: int) -> dict[str, Any]:
    """The Run page's unit-splitting release (its partition-selection δ)."""
    us: dict[str, Any] = {"kind": "unit_splitting", "partition_delta": float(ss.get("run_ps_delta", 1e-6))}
    us.update({"secure": True} if ss.get("run_secure") else {"seed": seed})  # secure releases are unseeded
    return us


def app_section(ss: Any, settings: Mapping[str, tuple[str, ...]]) -> dict[str, dict[str, Any]]:
    """The ``app`` section: the plain view settings of the pages in ``settings`` (typed categories as lists)."""
    app: dict[str, dict[str, Any]] = {}
    for page, keys in settings.items():
        vals = {k: _plain(ss[k]) for k in keys if k in ss and _is_plain(ss[k])}
        typed = [(k[len(DECLARED_PREFIX):], str(ss[k])) for k in sorted(prefixed(page, list(ss.keys())))
                 if str(ss.get(k) or "").strip()]
        if typed:  # column names may hold any character: exported as two lists, not as setting names
            vals["hl_declared_columns"] = [c for c, _ in typed]
            vals["hl_declared_categories"] = [v for _, v in typed]
        if vals:
            app[page] = vals
    return app
