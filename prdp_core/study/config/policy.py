"""The policy and workload sections of a study config: splitting thresholds (and where they came from),
the workload's queries, the budget function E(r), the personalized specification Φ and analyst tiers."""


from __future__ import annotations

from functools import partial
from typing import Any, Mapping

from ...core.provenance import is_data_derived
from .fields import _bool, _choice, _err, _fmt, _int, _mapping, _name, _names, _number, _scalar, _text, _wrap
from .keys import BUDGET_PRESETS, MAX_SEED


def _thresholds(v: Any) -> dict[str, Any]:
    path = "policy.thresholds"
    if not isinstance(v, Mapping) or not v:
        raise _err(path, "must map each measure to its splitting threshold, e.g. {EMP: 100}.")
    if "rows" in v or "group_column" in v:
        d = _mapping(v, path, ("group_column", "rows"), required=("group_column", "rows"))
        col = _text(d["group_column"], f"{path}.group_column", max_len=500)
        if not isinstance(d["rows"], Mapping) or not d["rows"]:
            raise _err(f"{path}.rows", "must map group values ('*' = every other group) to thresholds.")
        rows: dict[str, dict[str, float]] = {}
        for g, row in d["rows"].items():
            key = str(_scalar(g, f"{path}.rows"))
            rp = f"{path}.rows.{_name(key)}"
            if not isinstance(row, Mapping) or not row:
                raise _err(rp, "must map each measure to its threshold.")
            rows[key] = {str(m): _number(t, f"{rp}.{_name(m)}", positive=True) for m, t in row.items()}
        return {"group_column": col, "rows": rows}
    return {str(m): _number(t, f"{path}.{_name(m)}", positive=True) for m, t in v.items()}


def _threshold_source(v: Any, thresholds: Mapping[str, Any] | None) -> dict[str, str]:
    """``policy.threshold_source``: measure → where its threshold came from (``typed``, ``data: …`` when
    it was computed from the confidential data, ``private: …`` when a private suggestion released it).
    Optional; a measure not listed was typed in."""
    path = "policy.threshold_source"
    if thresholds is None:
        raise _err(path, "needs policy.thresholds.")
    if not isinstance(v, Mapping):
        raise _err(path, "must map measures to the source of their threshold, e.g. {EMP: 'data: p99'}.")
    measures = set(thresholds) if "rows" not in thresholds else {m for r in thresholds["rows"].values() for m in r}
    out: dict[str, str] = {}
    for m, src in v.items():
        key = f"{path}.{m}"
        if str(m) not in measures:
            raise _err(key, f"{_fmt(m)} has no threshold in policy.thresholds.")
        src = _text(src, key, max_len=200)
        if src.strip() != "typed" and not is_data_derived(src) and not src.strip().startswith("private:"):
            raise _err(key, f"must be 'typed', or start with 'data:' or 'private:' (got {_fmt(src)}).",
                       hint="e.g. 'data: p99' for a threshold computed from the data's 99th percentile, "
                            "'private: DP p97, ε = 0.1' for one suggested privately (its cost in the ledger).")
        if src.strip() != "typed":
            out[str(m)] = src.strip()
    return out


QUERY_KEYS = ("kind", "measure", "rho", "split", "group_by", "filter", "clamp", "rho_count", "label")


def _workload(v: Any) -> dict[str, Any]:
    from ...core.workload import Filter, Query, Workload

    def query_of(n: Mapping[str, Any]) -> Query:
        return Query(kind=n["kind"], measure=n.get("measure"), rho=n["rho"], split=n.get("split", True),
                     group_by=tuple(n.get("group_by", ())),
                     filter=Filter.from_dict(n["filter"]) if "filter" in n else None, clamp=n.get("clamp"),
                     rho_count=n.get("rho_count", 0.0), label=n.get("label", ""))

    d = _mapping(v, "workload", ("queries", "partition_rho", "joint", "group_keys"), required=("queries",))
    qs = d["queries"]
    if not isinstance(qs, list) or not qs:
        raise _err("workload.queries", "must be a non-empty list of queries.")
    out = []
    for i, q in enumerate(qs):
        p = f"workload.queries[{i}]"
        qd = _mapping(q, p, QUERY_KEYS, required=("kind",))
        kind = _choice(qd["kind"], f"{p}.kind", ("count", "sum", "avg"))
        norm: dict[str, Any] = {"kind": kind, "rho": _number(qd.get("rho", 1.0), f"{p}.rho", nonneg=True)}
        if kind != "count":
            if qd.get("measure") is None:
                raise _err(f"{p}.measure", f"a {kind} query needs a measure.")
            norm["measure"] = _text(qd["measure"], f"{p}.measure", max_len=500)
            norm["split"] = _bool(qd.get("split", True), f"{p}.split")
            if qd.get("clamp") is not None:
                norm["clamp"] = _number(qd["clamp"], f"{p}.clamp", positive=True)
            if kind == "avg":
                norm["rho_count"] = _number(qd.get("rho_count", 0.0), f"{p}.rho_count", nonneg=True)
        elif qd.get("measure") is not None:
            raise _err(f"{p}.measure", "a count query has no measure.")
        if qd.get("group_by"):
            norm["group_by"] = _names(qd["group_by"], f"{p}.group_by")
        if qd.get("filter") is not None:
            f = _mapping(qd["filter"], f"{p}.filter", ("column", "values"), required=("column", "values"))
            vals = f["values"] if isinstance(f["values"], list) else [f["values"]]
            if not vals:
                raise _err(f"{p}.filter.values", "needs at least one value.")
            norm["filter"] = {"column": _text(f["column"], f"{p}.filter.column", max_len=500),
                              "values": [_scalar(x, f"{p}.filter.values[{j}]") for j, x in enumerate(vals)]}
        if qd.get("label"):
            norm["label"] = _text(qd["label"], f"{p}.label", max_len=200)
        _wrap(p, partial(query_of, norm))
        out.append(norm)
    norm_wl: dict[str, Any] = {"queries": out,
               "partition_rho": _number(d.get("partition_rho", 0.0), "workload.partition_rho", nonneg=True),
               "joint": _bool(d.get("joint", True), "workload.joint")}
    _wrap("workload", lambda: Workload((), norm_wl["partition_rho"], norm_wl["joint"]))
    if d.get("group_keys") is not None:
        norm_wl["group_keys"] = _group_keys(d["group_keys"], out)
        _wrap("workload.group_keys", lambda: Workload(tuple(query_of(q) for q in out),
                                                      group_keys=norm_wl["group_keys"]))
    return norm_wl


def _group_keys(v: Any, queries: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """``workload.group_keys``: group-by column → its public list of values (:mod:`prdp_core.core.keysets`)."""
    path = "workload.group_keys"
    if not isinstance(v, Mapping) or not v:
        raise _err(path, "must map group-by columns to lists of their public values, e.g. {STATE: ['01', '02']}.")
    grouped = {c for q in queries for c in q.get("group_by", ())}
    out: dict[str, list[Any]] = {}
    for col, vals in v.items():
        key = f"{path}.{_name(col)}"
        col = _text(col, key, max_len=500)
        if col not in grouped:
            raise _err(key, f"no query groups by {_fmt(col)}.", hint="List keys of the workload's group-by columns.")
        if not isinstance(vals, list) or not vals:
            raise _err(key, "must be a non-empty list of values, e.g. ['01', '02'].")
        out[col] = [_scalar(x, f"{key}[{i}]") for i, x in enumerate(vals)]
    return out


def _budget(v: Any) -> dict[str, Any]:
    path = "policy.budget"
    d = _mapping(v, path, ("preset", "column", "alpha", "k", "eps", "expression", "steps", "groups", "eps_min",
                           "eps_max", "U"))
    forms = [k for k in ("preset", "expression", "steps", "groups") if k in d]
    if len(forms) != 1:
        raise _err(path, "give exactly one of 'preset', 'expression', 'steps' or 'groups'.")
    out: dict[str, Any] = {}
    form = forms[0]
    if form == "preset":
        out["preset"] = _choice(d["preset"], f"{path}.preset", BUDGET_PRESETS)
        if out["preset"] == "constant":
            out["eps"] = _number(d.get("eps", 1.0), f"{path}.eps", positive=True)
        else:
            if d.get("column") is None:
                raise _err(f"{path}.column", "is required for this preset (the measure v).")
            out["column"] = _text(d["column"], f"{path}.column", max_len=500)
            out["alpha"] = _number(d.get("alpha", {"inverse": 1e4, "log": 500.0, "sqrt": 8.0}[out["preset"]]),
                                   f"{path}.alpha", positive=True)
            if out["preset"] == "log":
                out["k"] = _number(d.get("k", 4.0), f"{path}.k", positive=True, hi=16.0)
    elif form == "expression":
        out["expression"] = _text(d["expression"], f"{path}.expression")
    elif form == "steps":
        s = _mapping(d["steps"], f"{path}.steps", ("column", "bounds", "eps"), required=("column", "eps"))
        eps = s["eps"]
        if not isinstance(eps, list) or not eps:
            raise _err(f"{path}.steps.eps", "must be a non-empty list of budgets.")
        bounds = s.get("bounds") or []
        if not isinstance(bounds, list) or len(bounds) != len(eps) - 1:
            raise _err(f"{path}.steps.bounds", f"must list {len(eps) - 1} upper value(s): one per band but the last "
                                               "(which is open).")
        out["steps"] = {"column": _text(s["column"], f"{path}.steps.column", max_len=500),
                        "bounds": [_number(b, f"{path}.steps.bounds[{i}]") for i, b in enumerate(bounds)],
                        "eps": [_number(e, f"{path}.steps.eps[{i}]", positive=True) for i, e in enumerate(eps)]}
    else:
        g = _mapping(d["groups"], f"{path}.groups", ("column", "parts", "default"), required=("column",))
        parts = g.get("parts") or {}
        if not isinstance(parts, Mapping):
            raise _err(f"{path}.groups.parts", "must map group values to budget expressions.")
        out["groups"] = {"column": _text(g["column"], f"{path}.groups.column", max_len=500),
                         "parts": {str(_scalar(k, f"{path}.groups.parts")): _text(str(e) if isinstance(e, (int, float))
                                                                                   and not isinstance(e, bool) else e,
                                                                                   f"{path}.groups.parts.{_name(k)}")
                                   for k, e in parts.items()},
                         "default": None if g.get("default") is None else _text(
                             str(g["default"]) if isinstance(g["default"], (int, float)) else g["default"],
                             f"{path}.groups.default")}
        if not out["groups"]["parts"] and out["groups"]["default"] is None:
            raise _err(f"{path}.groups", "needs at least one part or a default.")
    out["eps_min"] = None if d.get("eps_min") is None else _number(d["eps_min"], f"{path}.eps_min", positive=True)
    out["eps_max"] = None if d.get("eps_max") is None else _number(d["eps_max"], f"{path}.eps_max", positive=True)
    out["U"] = None if d.get("U") is None else _number(d["U"], f"{path}.U", positive=True)
    _wrap(path, lambda: build_budget(out))
    return out


def build_budget(b: Mapping[str, Any]) -> Any:
    """The :class:`~prdp_core.mechanisms.prdp.budget.BudgetFunction` of a normalised ``policy.budget`` section."""
    from ...mechanisms import prdp

    kw: dict[str, Any] = {"eps_min": b.get("eps_min"), "eps_max": b.get("eps_max"), "U": b.get("U")}
    if "preset" in b:
        if b["preset"] == "constant":
            return prdp.constant(b["eps"], U=b.get("U"))
        params = {"alpha": b["alpha"], **({"k": b["k"]} if b["preset"] == "log" else {})}
        return prdp.preset(b["preset"], b["column"], **kw, **params)
    if "expression" in b:
        return prdp.parse_budget(b["expression"], **kw)
    if "steps" in b:
        s = b["steps"]
        return prdp.step_table(s["column"], s["bounds"], s["eps"], **kw)
    g = b["groups"]
    return prdp.per_group(g["column"], dict(g["parts"]), default=g.get("default"), **kw)


def _specification(v: Any, study_seed: int) -> dict[str, Any]:
    path = "policy.specification"
    d = _mapping(v, path, ("tiers", "seed", "user", "column", "default_eps", "labels"))
    if ("tiers" in d) == ("column" in d):
        raise _err(path, "give exactly one of 'tiers' (generated, paper Sec. V) or 'column' (read from the data).")
    out: dict[str, Any] = {"user": None if d.get("user") is None else _text(d["user"], f"{path}.user", max_len=500)}
    if "tiers" in d:
        t = _mapping(d["tiers"] or {}, f"{path}.tiers", ("f_c", "f_m", "eps_c", "eps_m", "eps_l"))
        from ...mechanisms.personalized import TierConfig

        base = TierConfig()
        tiers = {k: _number(t.get(k, getattr(base, k)), f"{path}.tiers.{k}", nonneg=k.startswith("f_"),
                            positive=k.startswith("eps")) for k in ("f_c", "f_m", "eps_c", "eps_m", "eps_l")}
        _wrap(f"{path}.tiers", lambda: TierConfig(**tiers))
        out["tiers"] = tiers
        out["seed"] = _int(d.get("seed", study_seed), f"{path}.seed", hi=MAX_SEED)
        for k in ("default_eps", "labels"):
            if k in d:
                raise _err(f"{path}.{k}", "applies to a specification read from a column.")
        return out
    if "seed" in d:
        raise _err(f"{path}.seed", "applies to generated tiers only.")
    out["column"] = _text(d["column"], f"{path}.column", max_len=500)
    out["default_eps"] = _number(d.get("default_eps", 1.0), f"{path}.default_eps", positive=True)
    labels = d.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise _err(f"{path}.labels", "must map labels to ε.")
    out["labels"] = {str(_scalar(k, f"{path}.labels")): _number(e, f"{path}.labels.{_name(k)}", positive=True)
                     for k, e in labels.items()}
    return out


def _tiers(v: Any) -> dict[str, float]:
    from ...mechanisms import multitier as mt

    path = "policy.tiers"
    if not isinstance(v, Mapping) or not v:
        raise _err(path, "must map each analyst tier's name to its budget ε, e.g. {public: 0.5, agency: 8}.")
    out = {str(_scalar(k, path)): _number(e, f"{path}.{_name(k)}", positive=True) for k, e in v.items()}
    _wrap(path, lambda: mt.tiers_from(out))
    return out
