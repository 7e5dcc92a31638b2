"""The mechanisms section of a study config: one validated entry per mechanism kind (unit_splitting,
prdp, personalized, multitier, granular), with its parameters, label, seed or secure flag."""


from __future__ import annotations

from typing import Any, Mapping

from .fields import _bool, _choice, _err, _int, _mapping, _name, _number, _scalar, _text, _wrap
from .keys import (
    MAX_SEED,
    MECHANISM_KINDS,
    MT_FAMILIES,
    MT_OPS,
    PDP_MECHANISMS,
    PDP_QUERIES,
    PRDP_ALGORITHMS,
    PRDP_QUERIES,
    RECORD_ALGORITHMS,
)


def _granular(d: Mapping[str, Any], p: str) -> dict[str, Any]:
    """The keys of a ``granular`` mechanism: a histogram of attributes under granular (per-attribute) DP."""
    from ..mechanisms.granular.data import MAX_ATTRIBUTES

    out: dict[str, Any] = {"histogram": _choice(d.get("histogram", "standard"), f"{p}.histogram",
                                                ("standard", "heavy_hitter"))}
    attrs = d["attributes"]
    if isinstance(attrs, str):
        attrs = [attrs]
    if not isinstance(attrs, list) or not 1 <= len(attrs) <= MAX_ATTRIBUTES:
        raise _err(f"{p}.attributes", f"must list 1 to {MAX_ATTRIBUTES} columns (the histogram's attributes).")
    out["attributes"] = [_text(a, f"{p}.attributes[{j}]", max_len=500) for j, a in enumerate(attrs)]
    if len(set(out["attributes"])) != len(out["attributes"]):
        raise _err(f"{p}.attributes", "lists a column twice.")
    cats = d.get("categories") or {}
    if not isinstance(cats, Mapping):
        raise _err(f"{p}.categories", "must map an attribute to its declared public categories (a list or text).")
    decl: dict[str, Any] = {}
    for k, c in cats.items():
        key = f"{p}.categories.{_name(k)}"
        if str(k) not in out["attributes"]:
            raise _err(key, "is not one of the attributes.")
        if isinstance(c, str):
            decl[str(k)] = _text(c, key, max_len=200_000)
        elif isinstance(c, list) and c:
            decl[str(k)] = [_scalar(x, key) for x in c]
        else:
            raise _err(key, "must be a non-empty list of categories or text with one per comma.")
    if decl:
        out["categories"] = decl
    out["eps"] = _number(d["eps"], f"{p}.eps", positive=True, hi=100.0)
    if out["histogram"] == "heavy_hitter":
        out["nu"] = _number(d.get("nu", 0.01), f"{p}.nu", lo=0.0, open_lo=True, hi=0.5)
        out["method"] = _choice(d.get("method", "exact"), f"{p}.method", ("exact", "lemma28"))
        if "threshold" in d:
            raise _err(f"{p}.threshold", "applies to the standard histogram only.")
    else:
        for k in ("nu", "method"):
            if k in d:
                raise _err(f"{p}.{k}", "applies to the heavy-hitter histogram only.")
        if d.get("threshold") is not None:
            out["threshold"] = _number(d["threshold"], f"{p}.threshold")
    return out


def _mechanism(v: Any, i: int, policy: Mapping[str, Any], has_workload: bool, engine: str = "memory"
               ) -> dict[str, Any]:
    p = f"mechanisms[{i}]"
    if not isinstance(v, Mapping) or "kind" not in v:
        raise _err(p, f"must be a mapping with a 'kind' ({', '.join(MECHANISM_KINDS)}).")
    kind = _choice(v["kind"], f"{p}.kind", MECHANISM_KINDS)
    common = ("kind", "label", "seed")
    out: dict[str, Any] = {"kind": kind}
    if kind == "unit_splitting":
        d = _mapping(v, p, common + ("partition_delta", "secure"))
        if "thresholds" not in policy or not has_workload:
            raise _err(p, "unit splitting needs policy.thresholds and a workload.")
        out["partition_delta"] = _number(d.get("partition_delta", 1e-6), f"{p}.partition_delta", positive=True,
                                         hi=0.1)
    elif kind == "prdp":
        d = _mapping(v, p, common + ("model", "query", "column", "beta", "threshold", "algorithms", "secure"))
        if "budget" not in policy:
            raise _err(p, "the PrDP framework needs policy.budget (the budget function E).")
        model = _choice(d.get("model", "central"), f"{p}.model", ("central", "local"))
        query = _choice(d.get("query", "sum"), f"{p}.query", PRDP_QUERIES)
        if model == "local" and query not in ("count", "sum"):
            raise _err(f"{p}.query", "the local model answers count and sum only.")
        out.update(model=model, query=query,
                   beta=_number(d.get("beta", 0.1), f"{p}.beta", lo=0.0, open_lo=True, hi=0.5))
        if query != "count":
            if d.get("column") is None:
                raise _err(f"{p}.column", f"a {query} query needs a column.")
            out["column"] = _text(d["column"], f"{p}.column", max_len=500)
        if model == "local":
            out["threshold"] = _choice(d.get("threshold", "paper"), f"{p}.threshold", ("paper", "bernstein"))
        allowed = {"count": ("count",) if query == "count" else (), "framework": ("framework",),
                   "sum_extension": ("sum_extension",) if query == "sum" and model == "central" else (),
                   "naive": ("naive",)}
        default = [a for a in PRDP_ALGORITHMS if allowed[a]]
        if engine != "memory":  # the records stay in the engine: algorithms that need them are left out
            default = [a for a in default if a not in RECORD_ALGORITHMS]
        algs = d.get("algorithms", default)
        if isinstance(algs, str):
            algs = [algs]
        if not isinstance(algs, list) or not algs:
            raise _err(f"{p}.algorithms", f"must be a non-empty list from {', '.join(default)}.")
        for j, a in enumerate(algs):
            _choice(a, f"{p}.algorithms[{j}]", PRDP_ALGORITHMS)
            if not allowed[a]:
                raise _err(f"{p}.algorithms[{j}]", f"'{a}' does not apply to a {model} {query} query.",
                           hint=f"Use some of: {', '.join(default)}.")
        out["algorithms"] = list(algs)  # every model and algorithm has a secure path (secure: true)
    elif kind == "granular":
        d = _mapping(v, p, common + ("histogram", "attributes", "categories", "eps", "nu", "method", "threshold",
                                     "secure"), required=("attributes", "eps"))
        out.update(_granular(d, p))
    elif kind == "personalized":
        d = _mapping(v, p, common + ("mechanism", "t", "rescale", "query", "design_defaults", "secure"))
        if "specification" not in policy:
            raise _err(p, "personalized DP needs policy.specification (each user's ε).")
        out["mechanism"] = _choice(d.get("mechanism", "sample"), f"{p}.mechanism", PDP_MECHANISMS)
        t = d.get("t", "max")
        out["t"] = t if t in ("max", "mean") else _number(t, f"{p}.t", positive=True)
        out["rescale"] = _bool(d.get("rescale", False), f"{p}.rescale")
        dd = d.get("design_defaults") or []
        if not isinstance(dd, list) or any(x not in ("hi", "cutoff") for x in dd):
            raise _err(f"{p}.design_defaults", "must list the query parameters whose value is a design default "
                       "computed from the data: hi and/or cutoff.", hint="e.g. design_defaults: [hi]")
        if dd:
            out["design_defaults"] = sorted(set(dd))
        q = _mapping(d.get("query") or {}, f"{p}.query", ("kind", "column", "cutoff", "lo", "hi", "median_score",
                                                         "integer"))
        qn: dict[str, Any] = {"kind": _choice(q.get("kind", "count"), f"{p}.query.kind", PDP_QUERIES),
                              "column": None if q.get("column") is None else _text(q["column"], f"{p}.query.column",
                                                                                    max_len=500),
                              "cutoff": _number(q.get("cutoff", 1.0), f"{p}.query.cutoff"),
                              "lo": _number(q.get("lo", 0.0), f"{p}.query.lo"),
                              "hi": None if q.get("hi") is None else _number(q["hi"], f"{p}.query.hi"),
                              "median_score": _choice(q.get("median_score", "rank"), f"{p}.query.median_score",
                                                      ("rank", "changes")),
                              "integer": _bool(q.get("integer", False), f"{p}.query.integer")}
        from ..mechanisms.personalized import PersonalizedQuery

        _wrap(f"{p}.query", lambda: PersonalizedQuery(**qn))
        out["query"] = qn
    else:
        d = _mapping(v, p, common + ("model", "query", "measure", "clip", "family", "delta", "filter", "d", "scale",
                                     "top", "variant", "secure"))
        if "tiers" not in policy:
            raise _err(p, "a multi-tier release needs policy.tiers (each analyst's ε).")
        model = _choice(d.get("model", "central"), f"{p}.model", ("central", "local"))
        out["model"] = model
        if d.get("filter") is not None:
            f = _mapping(d["filter"], f"{p}.filter", ("column", "op", "value"), required=("column", "value"))
            out["filter"] = {"column": _text(f["column"], f"{p}.filter.column", max_len=500),
                             "op": _choice(f.get("op", "=="), f"{p}.filter.op", MT_OPS),
                             "value": _scalar(f["value"], f"{p}.filter.value")}
        if model == "central":
            out["query"] = _choice(d.get("query", "count"), f"{p}.query", ("count", "sum"))
            fams = MT_FAMILIES if out["query"] == "sum" else MT_FAMILIES[:3]
            out["family"] = _choice(d.get("family", "geometric"), f"{p}.family", fams)
            if out["query"] == "sum":
                if d.get("measure") is None:
                    raise _err(f"{p}.measure", "a sum needs a measure.")
                out["measure"] = _text(d["measure"], f"{p}.measure", max_len=500)
                from ..mechanisms.multitier.noise_families import MAX_SENSITIVITY

                out["clip"] = _number(d.get("clip", 100.0), f"{p}.clip", positive=True, hi=MAX_SENSITIVITY)
            out["delta"] = _number(d.get("delta", 1e-6), f"{p}.delta", positive=True, hi=0.1)
            for k in ("d", "scale", "top", "variant"):
                if k in d:
                    raise _err(f"{p}.{k}", "applies to the local model only.")
        else:
            if d.get("measure") is None:
                raise _err(f"{p}.measure", "the local model categorises a measure: name it.")
            out["measure"] = _text(d["measure"], f"{p}.measure", max_len=500)
            out["d"] = _int(d.get("d", 16), f"{p}.d", lo=2, hi=256)
            out["scale"] = _choice(d.get("scale", "log"), f"{p}.scale", ("log", "linear"))
            out["top"] = _number(d.get("top", 1e6), f"{p}.top", positive=True, hi=1e300)  # public top of the bins
            out["variant"] = _choice(d.get("variant", "subset2"), f"{p}.variant", ("subset2", "subset1"))
            for k in ("query", "clip", "family", "delta"):
                if k in d:
                    raise _err(f"{p}.{k}", "applies to the central model only.")
    if d.get("label") is not None:
        out["label"] = _text(d["label"], f"{p}.label", max_len=200)
    if d.get("seed") is not None:
        out["seed"] = _int(d["seed"], f"{p}.seed", hi=MAX_SEED)
    if "secure" in d and _bool(d["secure"], f"{p}.secure"):
        if "seed" in out:
            raise _err(f"{p}.seed", "a secure release is unseeded: drop the seed or the secure flag.")
        out["secure"] = True
    return out
