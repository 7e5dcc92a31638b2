"""Typed, registered run configurations (prdp_core.study.runs): one class per mechanism kind that parses,
writes back, runs and writes the reproduction code of its entry; the study tooling dispatches
through the registry, so a new kind needs no edit of the parser, runner or reproduction script."""

from __future__ import annotations

import ast
import copy
import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar, Mapping

import numpy as np
import pytest

from prdp_core.core.errors import ConfigError
from prdp_core.io.export import to_csv_bytes
from prdp_core.review.report import (
    budget_table,
    conversion_rows,
    render_html,
    reproduction_script,
    results_frame,
    run_study,
)
from prdp_core.study.config import MECHANISM_KINDS, load_config, parse_config
from prdp_core.study.config.fields import _number, _text
from prdp_core.study.reproduction import mechanism_code, mechanism_imports
from prdp_core.study.runs import (
    RUN_KINDS,
    GranularRun,
    LegacySdcRun,
    MultitierRun,
    ParseContext,
    PersonalizedRun,
    PrdpRun,
    RunConfig,
    UnitSplittingRun,
    parse_run,
    register,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").rglob("*.yaml"))

#: The entries the config parser returned for examples/*.yaml before the run configurations existed
#: (plain dicts, key order included: the order is what study.yaml is written in).
OLD_ENTRIES: dict[str, list[dict[str, Any]]] = {
    "bank_prdp.yaml": [
        {"kind": "prdp", "model": "central", "query": "sum", "beta": 0.1, "column": "BALANCE",
         "algorithms": ["framework", "sum_extension", "naive"]},
        {"kind": "prdp", "model": "local", "query": "count", "beta": 0.1, "threshold": "bernstein",
         "algorithms": ["count", "framework", "naive"]}],
    "cbp_granular.yaml": [
        {"kind": "granular", "histogram": "standard", "attributes": ["STATE", "NAICS2"], "eps": 1.0,
         "label": "State x sector (standard histogram)", "secure": True},
        {"kind": "granular", "histogram": "heavy_hitter", "attributes": ["STATE", "NAICS2"], "eps": 1.0, "nu": 0.01,
         "method": "exact", "label": "State x sector (heavy-hitter histogram, eps per attribute)", "secure": True}],
    "cbp_unit_splitting.yaml": [{"kind": "unit_splitting", "partition_delta": 1e-06}],
    "cbp_legacy_sdc.yaml": [{"kind": "unit_splitting", "partition_delta": 1e-06},
                            {"kind": "legacy_sdc", "p": 10.0, "n": 2, "k": 85.0, "min_frequency": 3,
                             "complementary": True, "noise_infusion": True, "noise_low": 0.1, "noise_high": 0.15}],
    "study.yaml": [{"kind": "unit_splitting", "partition_delta": 1e-06}],
    "personalized_tiers.yaml": [
        {"kind": "personalized", "mechanism": "sample", "t": "max", "rescale": False,
         "query": {"kind": "count", "column": "EMP", "cutoff": 10.0, "lo": 0.0, "hi": None, "median_score": "rank",
                   "integer": False}},
        {"kind": "multitier", "model": "central", "filter": {"column": "STATE", "op": "==", "value": "CA"},
         "query": "sum", "family": "geometric", "measure": "EMP", "clip": 100.0, "delta": 1e-06},
        {"kind": "multitier", "model": "local", "measure": "PAYANN", "d": 16, "scale": "log", "top": 1000000.0,
         "variant": "subset2"}],
}

POLICY = {"thresholds": {"EMP": 100}, "budget": {"preset": "inverse", "column": "EMP", "alpha": 10, "U": 1e5},
          "specification": {"tiers": {}}, "tiers": {"a": 1, "b": 4}}
BASE = {"version": 1, "seed": 5, "mode": "teaching", "data": {"sample": "cbp_like", "n": 600, "seed": 2},
        "policy": POLICY, "workload": {"queries": [{"kind": "sum", "measure": "EMP", "group_by": ["STATE"],
                                                    "rho": 0.1}]}}

#: One entry per branch of every kind (models, histograms, filters, optional keys, label/seed/secure).
ENTRIES = [
    {"kind": "unit_splitting"}, {"kind": "unit_splitting", "partition_delta": 1e-3, "label": "u", "secure": True},
    {"kind": "prdp", "query": "max", "column": "EMP", "seed": 9},
    {"kind": "prdp", "query": "count", "algorithms": "count"},
    {"kind": "prdp", "model": "local", "query": "sum", "column": "EMP", "threshold": "bernstein", "secure": True},
    {"kind": "personalized", "mechanism": "threshold", "t": 0.4, "design_defaults": ["hi", "hi"],
     "query": {"kind": "sum", "column": "EMP", "hi": 50}},
    {"kind": "personalized", "mechanism": "stretching", "rescale": True, "query": {"kind": "count"}},
    {"kind": "multitier", "query": "sum", "measure": "EMP", "family": "multiscale_geometric",
     "filter": {"column": "STATE", "value": "CA"}},
    {"kind": "multitier", "family": "gaussian", "delta": 1e-8, "label": "m"},
    {"kind": "multitier", "model": "local", "measure": "EMP", "d": 4, "scale": "linear", "top": 300,
     "variant": "subset1", "filter": {"column": "EMP", "op": ">", "value": 3}},
    {"kind": "granular", "attributes": "STATE", "eps": 0.5, "threshold": 3},
    {"kind": "granular", "attributes": ["STATE", "NAICS2"], "eps": 2, "histogram": "heavy_hitter", "nu": 0.2,
     "method": "lemma28", "categories": {"STATE": "CA, TX", "NAICS2": ["11", "21"]}},
    {"kind": "legacy_sdc"},
    {"kind": "legacy_sdc", "query": 0, "p": None, "n": 1, "k": 75, "min_frequency": 0, "complementary": False,
     "noise_infusion": False, "label": "l", "seed": 3},
]
CLASSES = {"unit_splitting": UnitSplittingRun, "prdp": PrdpRun, "personalized": PersonalizedRun,
           "multitier": MultitierRun, "granular": GranularRun, "legacy_sdc": LegacySdcRun}


def _study(*mechanisms: Any, **top: Any) -> dict[str, Any]:
    d = copy.deepcopy(BASE)
    d.update(top)
    d["mechanisms"] = list(mechanisms)
    return d


# ---------------------------------------------------------------------------
# The registry and the config format
# ---------------------------------------------------------------------------


def test_the_registry_holds_the_config_kinds_in_their_order():
    assert tuple(RUN_KINDS) == MECHANISM_KINDS
    assert {k: RUN_KINDS[k] for k in MECHANISM_KINDS} == CLASSES
    assert all(issubclass(c, RunConfig) and c.kind == k for k, c in RUN_KINDS.items())


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_entries_are_typed_and_write_back_the_old_dicts(path):
    study = load_config(path)
    old = OLD_ENTRIES[path.name]
    assert [type(m) for m in study.mechanisms] == [CLASSES[e["kind"]] for e in old]
    for m, expected in zip(study.mechanisms, old):
        got = m.to_config()
        assert got == expected and list(got) == list(expected)  # the same keys, in the same order
        for k, v in expected.items():
            if isinstance(v, dict):
                assert list(got[k]) == list(v)
    again = parse_config(study.to_yaml())
    assert again.to_yaml() == study.to_yaml() and again == study


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["kind"])
def test_every_branch_round_trips(entry):
    m = parse_config(_study(entry)).mechanisms[0]
    assert isinstance(m, CLASSES[entry["kind"]])
    back = parse_run(m.to_config(), 0, ParseContext(policy=POLICY, has_workload=True))
    assert back == m and dataclasses.asdict(back) == dataclasses.asdict(m)
    assert parse_config(_study(m)).mechanisms[0] == m  # a run configuration is itself a valid entry


def test_a_run_configuration_is_a_read_only_mapping_of_its_entry():
    m = parse_config(_study(ENTRIES[5])).mechanisms[0]
    assert isinstance(m, Mapping) and dict(m) == m.to_config() and m == m.to_config()
    assert m["kind"] == "personalized" and m.get("seed") is None and "secure" not in m and len(m) == len(dict(m))
    assert m["design_defaults"] == ["hi"] and m.design_defaults == ("hi",)
    m["query"]["hi"] = -1.0  # a copy: the configuration is unchanged
    m["design_defaults"].append("cutoff")
    assert m.query["hi"] == 50.0 and m["design_defaults"] == ["hi"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.t = 3.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        m["t"] = 3.0  # type: ignore[index]


def test_label_and_seed_defaults_come_from_the_entry():
    st = parse_config(_study({"kind": "unit_splitting"}, {"kind": "unit_splitting", "seed": 42, "label": "mine"},
                             seed=2**31 - 1))
    assert [st.mechanism_seed(i) for i in range(2)] == [2**31 - 1, 42]
    assert [st.mechanism_label(i) for i in range(2)] == ["1. unit_splitting", "mine"]


# The messages of the validator before the run configurations (each kind's unknown key lists its keys in
# the same order; a missing policy part; secure with a seed; an unknown kind).
OLD_MESSAGES = [
    ("x", "mechanisms[0]: must be a mapping with a 'kind' (unit_splitting, prdp, personalized, multitier, granular, "
          "legacy_sdc)."),
    ({"kind": "nope"}, "mechanisms[0].kind: must be one of unit_splitting, prdp, personalized, multitier, granular, "
                       "legacy_sdc (got 'nope')."),
    ({"kind": "unit_splitting", "bogus": 1},
     "mechanisms[0].bogus: unknown key. Allowed here: kind, label, seed, partition_delta, secure."),
    ({"kind": "prdp", "measure": "EMP"}, "mechanisms[0].measure: unknown key. Allowed here: kind, label, seed, model, "
                                         "query, column, beta, threshold, algorithms, secure."),
    ({"kind": "multitier", "column": "EMP"}, "mechanisms[0].column: unknown key. Allowed here: kind, label, seed, "
     "model, query, measure, clip, family, delta, filter, d, scale, top, variant, param_source, secure."),
    ({"kind": "personalized", "column": "EMP"}, "mechanisms[0].column: unknown key. Allowed here: kind, label, seed, "
     "mechanism, t, rescale, query, design_defaults, param_source, secure."),
    ({"kind": "granular", "column": "EMP"}, "mechanisms[0].column: unknown key. Allowed here: kind, label, seed, "
     "histogram, attributes, categories, eps, nu, method, threshold, secure."),
    ({"kind": "granular"}, "mechanisms[0].attributes: is required."),
    ({"kind": "unit_splitting", "seed": 3, "secure": True},
     "mechanisms[0].seed: a secure release is unseeded: drop the seed or the secure flag."),
    ({"kind": "prdp", "query": "count", "algorithms": ["sum_extension"]},
     "mechanisms[0].algorithms[0]: 'sum_extension' does not apply to a central count query. "
     "Use some of: count, framework, naive."),
    ({"kind": "multitier", "model": "local", "measure": "EMP", "clip": 3},
     "mechanisms[0].clip: applies to the central model only."),
    ({"kind": "multitier", "d": 3}, "mechanisms[0].d: applies to the local model only."),
    ({"kind": "granular", "attributes": ["a"], "eps": 1, "nu": 0.1},
     "mechanisms[0].nu: applies to the heavy-hitter histogram only."),
    ({"kind": "personalized", "query": {"kind": "median", "lo": 5, "hi": 1}},
     "mechanisms[0].query: A median needs a value column."),
]


@pytest.mark.parametrize("entry,message", OLD_MESSAGES, ids=[str(i) for i in range(len(OLD_MESSAGES))])
def test_bad_entries_give_the_old_messages(entry, message):
    with pytest.raises(ConfigError) as err:
        parse_config(_study(entry))
    assert str(err.value) == message


@pytest.mark.parametrize("part,kind,message", [
    ("thresholds", "unit_splitting", "unit splitting needs policy.thresholds and a workload."),
    ("budget", "prdp", "the PrDP framework needs policy.budget (the budget function E)."),
    ("specification", "personalized", "personalized DP needs policy.specification (each user's ε)."),
    ("tiers", "multitier", "a multi-tier release needs policy.tiers (each analyst's ε)."),
])
def test_a_kind_without_its_policy_part_is_refused(part, kind, message):
    assert RUN_KINDS[kind].POLICY_PART == part  # the part the app's import loads the entry with
    d = _study({"kind": kind, "column": "EMP"} if kind == "prdp" else {"kind": kind})
    del d["policy"][part]
    with pytest.raises(ConfigError, match=r"^mechanisms\[0\]: " + message.replace("(", r"\(").replace(")", r"\)")):
        parse_config(d)


def test_an_entry_describes_what_it_releases_and_granular_dp_has_no_policy_part():
    """The app's import names the entries no page designs (no policy part) by their description."""
    assert [c.kind for c in RUN_KINDS.values() if c.POLICY_PART is None] == ["granular", "legacy_sdc"]
    ctx = ParseContext(policy=POLICY)
    hist = parse_run({"kind": "granular", "attributes": ["STATE", "NAICS2"], "eps": 1.0}, 0, ctx)
    assert hist.describe() == "standard histogram of STATE, NAICS2"
    assert parse_run({"kind": "granular", "attributes": "STATE", "eps": 1.0, "label": "By state"}, 0,
                     ctx).describe() == "By state"
    assert parse_run({"kind": "prdp", "column": "EMP"}, 0, ctx).describe() == "prdp"


def test_records_held_by_an_engine_leave_out_the_sum_extension_by_default():
    ctx = ParseContext(policy=POLICY, engine="duckdb")
    assert parse_run({"kind": "prdp", "column": "EMP"}, 0, ctx).algorithms == ("framework", "naive")
    assert parse_run({"kind": "prdp", "column": "EMP"}, 0, ParseContext(policy=POLICY)).algorithms == \
        ("framework", "sum_extension", "naive")


def test_the_study_tooling_has_no_kind_ladders():
    """The parser, runner, reproduction script, tables and report never compare with a kind's name, nor does the
    app's study export, import and report (ui/study*.py)."""
    kinds = set(MECHANISM_KINDS)
    files = [ROOT / "prdp_core" / name for name in ("study/config/mechanisms.py", "study/config/study.py",
                                                    "study/runner.py", "study/reproduction.py",
                                                    "study/study_tables.py", "review/report.py")]
    files += sorted((ROOT / "ui").glob("study*.py"))
    assert len(files) > 7
    for path in files:
        name = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                consts = {c.value for part in [node.left, *node.comparators] for c in ast.walk(part)
                          if isinstance(c, ast.Constant)}
                assert not consts & kinds, f"{name}:{node.lineno} compares with a mechanism kind"


# ---------------------------------------------------------------------------
# A new kind: registered, parsed, run and reproduced without editing the tooling
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False, kw_only=True)
class CountByRun(RunConfig):
    """A kind made for this test: the Laplace counts of one column's public categories."""

    kind: ClassVar[str] = "count_by"
    KEYS: ClassVar[tuple[str, ...]] = ("column", "eps")
    REQUIRED: ClassVar[tuple[str, ...]] = ("column",)
    IMPORTS: ClassVar[tuple[str, ...]] = ("from prdp_core.mechanisms import granular",)

    column: str = ""
    eps: float = 1.0

    @classmethod
    def parse_fields(cls, d: Mapping[str, Any], path: str, context: ParseContext) -> dict[str, Any]:
        return {"column": _text(d["column"], f"{path}.column"),
                "eps": _number(d.get("eps", 1.0), f"{path}.eps", positive=True)}

    def config_fields(self) -> dict[str, Any]:
        return {"column": self.column, "eps": self.eps}

    def check_columns(self, need: Any, path: str) -> None:
        need(self.column, f"{path}.column")

    def run(self, study, ds, seed, reveal):
        from prdp_core.mechanisms import granular

        data = granular.encode_attributes(ds.table, [self.column], granular.sample_domains("cbp_like"))
        return [("", granular.standard_histogram(data, eps=self.eps, threshold=None, rng=np.random.default_rng(seed),
                                                 seed=seed, reveal=reveal))]

    def code(self, study, i, table):
        seed, label = self.noise_seed(study.seed, i), self.release_label(i)
        return [f"data = granular.encode_attributes(ds.table, [{self.column!r}], granular.sample_domains('cbp_like'))",
                f"rel = granular.standard_histogram(data, eps={self.eps!r}, threshold=None, "
                f"rng=np.random.default_rng({seed}), seed={seed}, reveal=REVEAL)",
                f"releases.append(({label!r}, rel))"]


@pytest.fixture
def count_by():
    register(CountByRun)
    try:
        yield CountByRun
    finally:
        RUN_KINDS.pop("count_by")


def test_a_new_kind_is_parsed_checked_run_and_reproduced(count_by, tmp_path):
    d = _study({"kind": "count_by", "column": "STATE", "eps": 0.5, "seed": 7}, {"kind": "unit_splitting"})
    study = parse_config(d)
    m = study.mechanisms[0]
    assert isinstance(m, CountByRun) and m.to_config() == {"kind": "count_by", "column": "STATE", "eps": 0.5, "seed": 7}
    assert parse_config(study.to_yaml()) == study
    with pytest.raises(ConfigError, match=r"mechanisms\[0\]\.bins: unknown key\. Allowed here: kind, label, seed, "
                                          r"column, eps, secure\."):
        parse_config(_study({"kind": "count_by", "column": "STATE", "bins": 3}))
    with pytest.raises(ConfigError, match=r"mechanisms\[0\]\.column: 'NOPE' is not a column of the data"):
        run_study(parse_config(_study({"kind": "count_by", "column": "NOPE"})))

    run = run_study(study)
    (label, rm, rel), _ = run.releases
    assert label == "1. count_by" and rm is m and rel.seed == 7 and rel.mechanism == "granular.standard_histogram"
    assert run.ledger.entries[0] is rel.entries[0]
    table = budget_table(run)
    assert list(table["release"]).count("1. count_by") == 1 and table["budget"].iloc[0] == pytest.approx(0.5)
    assert any("1. count_by: worst case" in str(v) for v in conversion_rows(run).iloc[:, 0])
    assert "1. count_by: per-record loss CDF" in render_html(run)

    script = reproduction_script(study)
    assert script.count("from prdp_core.mechanisms import granular") == 1
    assert "\n".join(mechanism_code(study, 0)) in script and mechanism_imports(study)[0] in script
    (tmp_path / "reproduce.py").write_text(script, encoding="utf-8")
    subprocess.run([sys.executable, str(tmp_path / "reproduce.py"), str(tmp_path / "out")], check=True,
                   cwd=ROOT, capture_output=True, timeout=300)
    expected = to_csv_bytes(results_frame(run.releases, teaching=run.teaching))
    assert (tmp_path / "out" / "results.csv").read_bytes() == expected


def test_registering_needs_a_new_kind():
    with pytest.raises(ValueError, match="already registered"):
        register(type("Again", (UnitSplittingRun,), {"kind": "unit_splitting"}))
    with pytest.raises(TypeError, match="must set its kind"):
        register(type("NoKind", (UnitSplittingRun,), {}))
    assert RUN_KINDS["unit_splitting"] is UnitSplittingRun


# ---------------------------------------------------------------------------
# mechanism_code: one mechanism's reproduction lines
# ---------------------------------------------------------------------------


def test_mechanism_code_is_the_scripts_code_and_accepts_an_entry():
    study = parse_config(_study(*ENTRIES))
    script = reproduction_script(study)
    for i, m in enumerate(study.mechanisms):
        lines = mechanism_code(study, i)
        assert f"# --- mechanism {i + 1} ---\n" + "\n".join(lines) + "\n" in script
        assert mechanism_code(study, i, m.to_config()) == lines  # an entry mapping is validated first
    assert mechanism_code(study, 2, table="ds") != mechanism_code(study, 2)  # records held by an engine
    assert mechanism_imports(study) == ["from prdp_core.core.noise_source import Noise",  # every kind's noise source
                                        *[line for c in CLASSES.values() for line in c.IMPORTS]]
    with pytest.raises(ConfigError, match=r"mechanisms\[0\]\.eps: must be at most 100"):
        mechanism_code(study, 0, {"kind": "granular", "attributes": ["STATE"], "eps": 1000})


def test_every_kind_says_what_it_runs_in_the_notebook():
    assert all(c.ABOUT.strip() for c in RUN_KINDS.values()), [k for k, c in RUN_KINDS.items() if not c.ABOUT]
