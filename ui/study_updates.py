"""The session updates of each policy part of an imported study (the import's writers, page by page).

Each function validates its policy part of a study against the dataset and the entry of the mechanism
its page runs, then fills ``up`` (session key → value, written by :func:`ui.study_import.import_state`
once everything is valid), ``pop`` (keys to drop) and ``notes`` (what a page cannot show as configured):
the Policy designer's thresholds and workload, the Budget functions page, Personalized DP and the
Analyst tiers. :mod:`ui.study_sections` does the reverse.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

import prdp_core
from prdp_core.data import Dataset
from prdp_core.study.config import Study, data_columns, group_values
from prdp_core.study.runs import RunConfig

from . import private_suggest
from .policy_designer import SOURCES_KEY
from .study_sections import PDP_SHORT


def entry_of(study: Study, part: str) -> RunConfig | None:
    """The study's first mechanism entry released under the policy part ``part`` (the one the part's page runs)."""
    return next((m for m in study.mechanisms if m.POLICY_PART == part), None)


#: Threshold given to a measure a config leaves out, where the Policy designer needs one for every
#: measure: so large that no record is split on it (a public constant, not a data value).
NO_SPLIT_THRESHOLD = 1e15


def policy_updates(study: Study, ds: Any, up: dict[str, Any], pop: set[str]) -> Any:
    """The Policy designer's thresholds, workload and policy from the study (validated on ``ds``)."""
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


def budget_updates(study: Study, ds: Any, up: dict[str, Any], pop: set[str], notes: list[str]) -> None:
    """The Budget functions page's budget function and PrDP release from the study."""
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
    m = entry_of(study, "budget")
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


def spec_updates(study: Study, ds: Dataset, up: dict[str, Any], pop: set[str], notes: list[str]) -> None:
    """The Personalized DP page's specification and release from the study (validated on ``ds``)."""
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
    m = entry_of(study, "specification")
    if m is not None:
        short = {v: k for k, v in PDP_SHORT.items()}[m["mechanism"]]
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


def tier_updates(study: Study, ds: Dataset, up: dict[str, Any], pop: set[str]) -> None:
    """The Analyst tiers page's table and multi-tier release from the study."""
    from .analyst_tiers import NO_FILTER

    study.tiers()
    up["mt_tiers_base"] = pd.DataFrame(list(study.policy["tiers"].items()), columns=["name", "eps"])
    up["mt_editor_version"] = int(st.session_state.get("mt_editor_version", 0)) + 1
    m = entry_of(study, "tiers")
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
