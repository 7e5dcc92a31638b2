"""Where a public parameter came from (typed, computed from the data, private) goes with its value: a design
loaded over another brings its thresholds' sources, a board entry keeps them, and the private bounds of the
personalized and multi-tier mechanisms are carried by the study config into every release and ledger entry."""

from __future__ import annotations

import pytest

from prdp_core.board import summary as S
from prdp_core.core.errors import ConfigError
from prdp_core.core.provenance import data_derived, with_part_sources
from prdp_core.study.config import parse_config
from prdp_core.study.runner import run_study

PRIVATE = "private: DP p99, ε = 0.1"
WORKLOAD = {"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.5}]}


def test_a_design_brings_the_sources_of_its_thresholds_never_the_readers():
    reader = {"thresholds": {"EMP": 500.0}, "threshold_source": {"EMP": "data: p99 (rounded)"},
              "tiers": {"a": 1.0}}
    typed = with_part_sources(reader, {"thresholds": {"EMP": 100.0}})
    assert typed == {"thresholds": {"EMP": 100.0}, "tiers": {"a": 1.0}}  # typed: no source
    private = with_part_sources(reader, {"thresholds": {"EMP": 138.7}, "threshold_source": {"EMP": PRIVATE}})
    assert private["threshold_source"] == {"EMP": PRIVATE}
    other = with_part_sources(reader, {"tiers": {"b": 2.0}})  # a design without thresholds keeps the reader's
    assert other["threshold_source"] == {"EMP": "data: p99 (rounded)"} and other["tiers"] == {"b": 2.0}


@pytest.mark.parametrize("source", ["data: p99 (rounded)", PRIVATE])
def test_a_board_entry_keeps_where_its_thresholds_came_from(source):
    study = parse_config({"version": 1, "data": {"sample": "cbp_like", "n": 500},
                          "policy": {"thresholds": {"EMP": 50.0}, "threshold_source": {"EMP": source},
                                     "tiers": {"a": 1.0, "b": 2.0}},
                          "workload": WORKLOAD, "mechanisms": [{"kind": "unit_splitting"}]})
    entry = S.restrict(study, "thresholds")
    assert entry.policy["threshold_source"] == {"EMP": source} and "tiers" not in entry.policy
    assert "threshold_source" not in S.restrict(study, "tiers").policy


def _study(mechanism: dict, policy: dict) -> dict:
    return {"version": 1, "mode": "teaching", "data": {"sample": "cbp_like", "n": 400}, "policy": policy,
            "mechanisms": [mechanism]}


PDP = {"kind": "personalized", "query": {"kind": "sum", "column": "EMP", "hi": 400.0},
       "param_source": {"hi": PRIVATE}}
PDP_POLICY = {"specification": {"column": "EMP", "default_eps": 1.0}}
MT = {"kind": "multitier", "query": "sum", "measure": "EMP", "clip": 405.0, "param_source": {"clip": PRIVATE}}
MT_POLICY = {"tiers": {"a": 1.0, "b": 2.0}}


@pytest.mark.parametrize("mechanism, policy, param", [(PDP, PDP_POLICY, "hi"), (MT, MT_POLICY, "clip")])
def test_a_private_bound_round_trips_and_every_release_says_so(mechanism, policy, param):
    study = parse_config(_study(mechanism, policy))
    assert parse_config(study.to_yaml()) == study
    assert study.to_dict()["mechanisms"][0]["param_source"] == {param: PRIVATE}
    run = run_study(study)
    (_, _, rel), = run.releases
    assert rel.params[f"{param}_source"] == PRIVATE and all(e.params[f"{param}_source"] == PRIVATE
                                                            for e in rel.entries)
    assert data_derived(rel.params) == []  # private: public once released, not data-derived


@pytest.mark.parametrize("mechanism, policy, bad, where", [
    (PDP, PDP_POLICY, {"hi": "data: p99"}, "param_source.hi"),
    (PDP, PDP_POLICY, {"lo": PRIVATE}, "param_source.lo"),
    (PDP, PDP_POLICY, [PRIVATE], "param_source"),
    (MT, MT_POLICY, {"clip": "typed"}, "param_source.clip"),
    (MT, MT_POLICY, {"delta": PRIVATE}, "param_source.delta"),
])
def test_a_bad_param_source_says_what_to_fix(mechanism, policy, bad, where):
    with pytest.raises(ConfigError, match=where.replace(".", r"\.")):
        parse_config(_study({**mechanism, "param_source": bad}, policy))


def test_the_local_model_takes_no_param_source():
    local = {"kind": "multitier", "model": "local", "measure": "EMP", "param_source": {"clip": PRIVATE}}
    with pytest.raises(ConfigError, match=r"param_source"):
        parse_config(_study(local, MT_POLICY))


def test_the_report_and_the_exported_config_name_private_thresholds(tmp_path):
    from prdp_core.review.report import write_outputs

    study = parse_config({"version": 1, "mode": "teaching", "data": {"sample": "cbp_like", "n": 400},
                          "policy": {"thresholds": {"EMP": 138.721}, "threshold_source": {"EMP": PRIVATE}},
                          "workload": WORKLOAD, "mechanisms": [{"kind": "unit_splitting"}]})
    files = write_outputs(run_study(study), tmp_path / "out")
    html = files["report.html"].read_text(encoding="utf-8")
    assert "Private suggestions." in html and "T(EMP) (DP p99, ε = 0.1)" in html
    assert "Computed from the data." not in html
    again = parse_config(files["study.yaml"].read_text(encoding="utf-8"))
    assert again.policy["threshold_source"] == {"EMP": PRIVATE} and again.policy["thresholds"] == {"EMP": 138.721}
