"""Study configs: the versioned schema, messages naming the offending key, safe data paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

from prdp_core.core.errors import ConfigError, DataError
from prdp_core.data import samples
from prdp_core.review.report import load_config, parse_config
from prdp_core.study.config import MAX_CONFIG_BYTES, load_data, safe_data_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").rglob("*.yaml"))

FULL = {
    "version": 1, "title": "t", "mode": "teaching", "seed": 3,
    "data": {"sample": "cbp_like", "n": 2000, "seed": 1},
    "policy": {"thresholds": {"EMP": 100, "PAYANN": 10000},
               "budget": {"preset": "log", "column": "EMP", "alpha": 500, "k": 4, "eps_max": 50, "U": 1e6},
               "specification": {"tiers": {"f_c": 0.5}, "user": "FIRM_ID"},
               "tiers": {"public": 0.5, "agency": 8}},
    "workload": {"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.2},
                             {"kind": "sum", "measure": "EMP", "rho": 0.3, "group_by": "STATE"},
                             {"kind": "avg", "measure": "PAYANN", "rho": 0.1, "rho_count": 0.1, "split": False,
                              "clamp": 5000, "filter": {"column": "STATE", "values": ["CA", "TX"]}}],
                 "partition_rho": 0.05},
    "mechanisms": [{"kind": "unit_splitting"}, {"kind": "prdp", "query": "max", "column": "EMP"},
                   {"kind": "personalized", "mechanism": "pe", "query": {"kind": "median", "column": "EMP",
                                                                           "hi": 1000}},
                   {"kind": "multitier", "model": "local", "measure": "EMP", "d": 8},
                   {"kind": "multitier", "query": "sum", "measure": "PAYANN", "clip": 50, "family": "laplace",
                    "filter": {"column": "EMP", "op": ">=", "value": 3}}],
    "report": {"delta": 1e-7},
    "app": {"tradeoffs": {"tr_rhos": [0.5, 1.0]}},
}


def _with(path: str, value, base=None) -> dict:
    """A copy of FULL with ``path`` (dots; [i] for lists) set to ``value`` (``...`` deletes it)."""
    d = yaml.safe_load(yaml.safe_dump(base or FULL))
    keys = path.replace("[", ".").replace("]", "").split(".")
    cur = d
    for k in keys[:-1]:
        cur = cur[int(k)] if isinstance(cur, list) else cur[k]
    last = keys[-1]
    if value is ...:
        del cur[int(last) if isinstance(cur, list) else last]
    elif isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value
    return d


def test_full_config_round_trips():
    st = parse_config(FULL)
    again = parse_config(st.to_yaml())
    assert again == st
    assert again.to_yaml() == st.to_yaml()
    assert st.policy["specification"]["seed"] == 3          # defaults to the study seed
    assert [st.mechanism_seed(i) for i in range(5)] == [3, 4, 5, 6, 7]
    assert st.mechanisms[1]["algorithms"] == ["framework", "naive"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.relative_to(ROOT / "examples").as_posix())
def test_examples_validate_and_fit_their_data(path):
    st = load_config(path)
    assert parse_config(st.to_yaml(), base_dir=path.parent) == st
    ds = load_data(st)
    st.check_against(ds)


@pytest.mark.parametrize("path, value, message", [
    ("version", 2, "version: unsupported version 2"),
    ("version", "1", "version: unsupported version '1'"),
    ("version", True, "version: unsupported version True"),
    ("version", ..., "version: is required"),
    ("mode", "secret", "mode: must be one of teaching, review"),
    ("seed", -1, "seed: must be a whole number between 0"),
    ("seed", 1.5, "seed: must be a whole number"),
    ("colour", "red", "colour: unknown key"),
    ("data.sample", "nope", "data.sample: unknown sample 'nope'"),
    ("data.n", 0, "data.n: must be a whole number between 1"),
    ("data.rows", 5, "data.rows: unknown key"),
    ("policy.thresholds.EMP", -3, "policy.thresholds.EMP: must be a positive number (got -3)"),
    ("policy.thresholds.EMP", "lots", "policy.thresholds.EMP: must be a positive number"),
    ("policy.thresholds.EMP", float("nan"), "policy.thresholds.EMP: must be a positive number"),
    ("policy.budget.alpha", 0, "policy.budget.alpha: must be a positive number"),
    ("policy.budget.preset", "cubic", "policy.budget.preset: must be one of"),
    ("policy.budget.expression", "1/EMP", "policy.budget: give exactly one of"),
    ("policy.specification.tiers.f_c", 1.5, "policy.specification.tiers"),
    ("policy.tiers.agency", 0, "policy.tiers.agency: must be a positive number"),
    ("policy.rules", {}, "policy.rules: unknown key"),
    ("workload.queries[0].kind", "median", "workload.queries[0].kind: must be one of count, sum, avg"),
    ("workload.queries[1].rho", -1, "workload.queries[1].rho: must be a non-negative number"),
    ("workload.queries[1].measure", "PAYQTR1", "workload.queries[1].measure: 'PAYQTR1' is summed on split data"),
    ("workload.queries[2].clamp", ..., "workload.queries[2]: AVG(PAYANN)"),
    ("workload.queries[0].colour", 1, "workload.queries[0].colour: unknown key"),
    ("workload.queries", [], "workload.queries: must be a non-empty list"),
    ("mechanisms[0].kind", "magic", "mechanisms[0].kind: must be one of"),
    ("mechanisms[0].partition_delta", 0.5, "mechanisms[0].partition_delta: must be at most 0.1"),
    ("mechanisms[1].query", "median", "mechanisms[1].query: must be one of count, sum, max, distinct"),
    ("mechanisms[1].algorithms", ["sum_extension"], "mechanisms[1].algorithms[0]: 'sum_extension' does not apply"),
    ("mechanisms[1].beta", 0, "mechanisms[1].beta: must be above 0"),
    ("mechanisms[2].query.kind", "mode", "mechanisms[2].query.kind: must be one of"),
    ("mechanisms[2].query.hi", ..., "mechanisms[2].query: A median needs finite public bounds"),
    ("mechanisms[3].d", 1, "mechanisms[3].d: must be a whole number between 2 and 256"),
    ("mechanisms[4].filter.op", "~", "mechanisms[4].filter.op: must be one of"),
    ("mechanisms[4].family", "staircase", "mechanisms[4].family: must be one of"),
    ("report.delta", 1, "report.delta: must be at most 0.1"),
    ("app.nowhere", {}, "app.nowhere: unknown key"),
    ("app.tradeoffs.tr_rhos", {"a": 1}, "app.tradeoffs.tr_rhos: must be a single value"),
])
def test_messages_name_the_offending_key(path, value, message):
    with pytest.raises(ConfigError) as e:
        parse_config(_with(path, value))
    assert str(e.value).startswith(message) or message in str(e.value), str(e.value)


def test_secure_flag():
    st = parse_config(_with("mechanisms[0].secure", True))
    assert st.mechanisms[0]["secure"] is True and "seed" not in st.mechanisms[0]
    # every PrDP model and algorithm has a secure path (the max query runs the naive baseline too)
    st = parse_config(_with("mechanisms[1].secure", True))
    assert st.mechanisms[1]["secure"] is True and "naive" in st.mechanisms[1]["algorithms"]
    local = _with("mechanisms[1].model", "local", _with("mechanisms[1].query", "sum"))
    assert parse_config(_with("mechanisms[1].secure", True, local)).mechanisms[1]["secure"] is True
    with pytest.raises(ConfigError, match=r"mechanisms\[0\].seed: a secure release is unseeded"):
        parse_config(_with("mechanisms[0].seed", 3, _with("mechanisms[0].secure", True)))
    with pytest.raises(ConfigError, match=r"mechanisms\[0\].secure: must be true or false"):
        parse_config(_with("mechanisms[0].secure", "yes"))
    for i in (2, 3, 4):  # personalized, multi-tier local and central accept it too
        st = parse_config(_with(f"mechanisms[{i}].secure", True))
        assert st.mechanisms[i]["secure"] is True and "seed" not in st.mechanisms[i]
        with pytest.raises(ConfigError, match=rf"mechanisms\[{i}\].seed: a secure release is unseeded"):
            parse_config(_with(f"mechanisms[{i}].seed", 3, _with(f"mechanisms[{i}].secure", True)))


def test_mechanism_needs_its_policy_part():
    d = _with("policy.budget", ...)
    with pytest.raises(ConfigError, match=r"mechanisms\[1\]: the PrDP framework needs policy.budget"):
        parse_config(d)
    with pytest.raises(ConfigError, match=r"mechanisms\[0\]: unit splitting needs"):
        parse_config(_with("workload", ...))


@pytest.mark.parametrize("text, message", [
    ("", "The config is empty"),
    ("version: 1\ndata: [unclosed", "not valid YAML at line"),
    ("- just\n- a list\n", "must be a YAML mapping"),
    ("!!python/object/apply:os.system ['echo hi']", "not valid YAML"),
    ("version: 1\ndata: !!python/name:os.system {}\n", "not valid YAML"),
    (b"\xff\xfe\x00bad", "not UTF-8"),
])
def test_bad_text(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(text)


def test_too_large(tmp_path):
    with pytest.raises(ConfigError, match="larger than"):
        parse_config("#" * (MAX_CONFIG_BYTES + 1))
    p = tmp_path / "big.yaml"
    p.write_text("#" * (MAX_CONFIG_BYTES + 1))
    with pytest.raises(ConfigError, match="larger than"):
        load_config(p)
    with pytest.raises(ConfigError, match="No config file"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="is a folder"):
        load_config(tmp_path)
    if Path("/dev/zero").exists():  # an endless device is refused before any read
        with pytest.raises(ConfigError, match="not a regular file"):
            load_config("/dev/zero")


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.csv", "data/../../x.csv", "~/x.csv", "C:\\x.csv",
                                  "C:x.csv", "\\\\server\\share\\x.csv", "..\\x.csv", "sub/..", ""])
def test_data_paths_may_not_leave_the_folder(path, tmp_path):
    with pytest.raises(ConfigError, match="data.path"):
        parse_config({"version": 1, "data": {"path": path}}, base_dir=tmp_path)


def test_symlink_escape_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text("a,b\n1,2\n")
    study = tmp_path / "study"
    study.mkdir()
    os.symlink(outside / "secret.csv", study / "data.csv")
    os.symlink(outside, study / "linkdir")
    (study / "s.yaml").write_text("version: 1\ndata: {path: data.csv}\n")
    with pytest.raises(ConfigError, match="resolves outside the config's folder"):
        load_config(study / "s.yaml")
    with pytest.raises(ConfigError, match="resolves outside"):
        safe_data_path("linkdir/secret.csv", study)
    inside = study / "real.csv"
    inside.write_text("id,v\n1,2\n")
    os.symlink(inside, study / "alias.csv")
    assert safe_data_path("alias.csv", study) == inside.resolve()


def test_relative_data_path_and_missing_file(tmp_path):
    sub = tmp_path / "data"
    sub.mkdir()
    (sub / "t.csv").write_text("id,v,g\n1,2,a\n2,5,b\n3,,a\n")
    cfg = tmp_path / "s.yaml"
    cfg.write_text("version: 1\ndata:\n  path: data/t.csv\n  schema: {id: id, measures: [v], groups: [g]}\n"
                   "  prepare: {missing: drop}\n")
    ds = load_data(load_config(cfg))
    assert ds.n == 2 and ds.schema.measures == ("v",)
    cfg.write_text("version: 1\ndata: {path: data/none.csv}\n")
    with pytest.raises(DataError, match="no data file 'data/none.csv'"):
        load_data(load_config(cfg))
    with pytest.raises(DataError, match="not loaded from a file"):
        load_data(parse_config("version: 1\ndata: {path: x.csv}\n"))


def test_check_against_names_the_key():
    ds = samples.load_dataset("table2_example")
    st = parse_config({"version": 1, "data": {"sample": "table2_example"},
                       "policy": {"thresholds": {"Employees": 3, "Revenue": 10}},
                       "workload": {"queries": [{"kind": "sum", "measure": "Employees", "rho": 1}]},
                       "mechanisms": [{"kind": "unit_splitting"}]})
    with pytest.raises(ConfigError, match="policy.thresholds.Revenue: 'Revenue' is not a column"):
        st.check_against(ds)
    st2 = parse_config({"version": 1, "data": {"sample": "table2_example"}, "policy": {"tiers": {"a": 1}},
                        "mechanisms": [{"kind": "multitier", "model": "local", "measure": "Industry"}]})
    with pytest.raises(ConfigError, match=r"mechanisms\[0\].measure: 'Industry' is not a measure"):
        st2.check_against(ds)


_leaf = hst.one_of(hst.none(), hst.booleans(), hst.integers(-5, 10**6), hst.floats(allow_nan=True),
                   hst.text(max_size=12))
_tree = hst.recursive(_leaf, lambda kids: hst.one_of(hst.lists(kids, max_size=4),
                                                     hst.dictionaries(hst.sampled_from(
                                                         ["version", "data", "policy", "thresholds", "EMP", "kind",
                                                          "queries", "workload", "mechanisms", "sample", "path",
                                                          "rho", "tiers", "budget", "app", "x"]), kids, max_size=4)),
                      max_leaves=20)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_tree, version=hst.sampled_from([1, 1, 2, None]))
def test_fuzz_only_config_errors(tree, version):
    """Arbitrary nested input is either a valid study or a ConfigError — nothing else escapes."""
    d = dict(tree) if isinstance(tree, dict) else {"x": tree}
    if version is not None:
        d["version"] = version
    d.setdefault("data", {"sample": "table2_example"})
    try:
        parse_config(d)
    except ConfigError:
        pass


def test_public_shift_constants_round_trip_and_apply(tmp_path):
    """data.prepare.shift_by (what the Data page writes after a shift by a typed constant) loads back."""
    (tmp_path / "t.csv").write_text("id,bal,g\n1,-5,a\n2,10,b\n3,20,a\n")
    text = ("version: 1\ndata:\n  path: t.csv\n  schema: {id: id, measures: [bal], groups: [g]}\n"
            "  prepare: {negative: shift, shift_by: {bal: 100}}\n")
    (tmp_path / "s.yaml").write_text(text)
    study = load_config(tmp_path / "s.yaml")
    assert study.data.prepare == {"negative": "shift", "shift_by": {"bal": 100.0}}
    assert parse_config(study.to_yaml()) == study
    ds = load_data(study)
    assert ds.table["bal"].tolist() == [95.0, 110.0, 120.0] and ds.shifts == {"bal": 100.0}
    study.check_against(ds)
    other = parse_config(text.replace("{bal: 100}", "{pay: 100}").replace("path: t.csv", "path: t.csv"))
    with pytest.raises(ConfigError, match=r"^data\.prepare\.shift_by\.pay: 'pay' is not a measure"):
        other.check_against(ds)
    for bad, message in [("{bal: -1}", "data.prepare.shift_by.bal: must be a non-negative number"),
                         ("{bal: lots}", "data.prepare.shift_by.bal: must be a non-negative number"),
                         ("[100]", "data.prepare.shift_by: must map measure names to constants")]:
        with pytest.raises(ConfigError) as e:
            parse_config(text.replace("{bal: 100}", bad))
        assert str(e.value).startswith(message), str(e.value)
    with pytest.raises(ConfigError, match=r"^data\.prepare\.shift_by: applies only with 'negative: shift'"):
        parse_config(text.replace("negative: shift, ", ""))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shifts=hst.one_of(_leaf, hst.lists(_leaf, max_size=3),
                         hst.dictionaries(hst.one_of(hst.text(max_size=8), hst.integers(), hst.none()), _tree,
                                          max_size=4)))
def test_fuzz_shift_constants_only_config_errors(shifts):
    cfg = {"version": 1, "data": {"path": "t.csv", "prepare": {"negative": "shift", "shift_by": shifts}}}
    try:
        study = parse_config(cfg)
    except ConfigError:
        return
    assert parse_config(study.to_yaml()) == study
