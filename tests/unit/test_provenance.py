"""Parameters computed from the confidential data are flagged everywhere, and refused by a secure review release.

A threshold read off the records (the data's 99th percentile, a percentile or loss-cap suggestion) is
a design aid: the policy records its source (``threshold_source``), the config round-trips it, every
output names it (ledger CSV/JSON, results CSV, budget table, HTML report), and a secure release refuses
it unless it is a teaching run. Every answers export says the app mode, the secure marker and the seed.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import prdp_core
from prdp_core.commands.cli import EXIT_ERROR, main
from prdp_core.core.accounting import Ledger
from prdp_core.core.errors import ConfigError, PolicyError
from prdp_core.core.provenance import DATA_DERIVED_COLUMN, data_derived, data_source, is_data_derived, stamp_answers
from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Query, SplittingPolicy, Workload
from prdp_core.mechanisms.personalized import DATA_DEFAULT_NOTE
from prdp_core.mechanisms.unit_splitting import release
from prdp_core.review import report as R

P99 = data_source("p99 (rounded)")


@pytest.fixture(scope="module")
def ds():
    return prdp_core.data.samples.load_dataset("cbp_like", n=3000, seed=1)


def _policy(source: dict | None = None, group_by: tuple = ()) -> SplittingPolicy:
    wl = Workload((Query("count", rho=0.25, group_by=group_by), Query("sum", "EMP", rho=0.5, group_by=group_by)),
                  partition_rho=0.1 if group_by else 0.0)
    return SplittingPolicy(as_thresholds({"EMP": 100.0}), wl, threshold_source=source or {})


def test_a_secure_release_refuses_thresholds_computed_from_the_data(ds):
    pol = _policy({"EMP": P99})
    with pytest.raises(PolicyError) as exc:
        release(ds, pol, secure=True)
    msg = str(exc.value)
    assert "computed from the confidential data" in msg and "T(EMP) (data: p99 (rounded))" in msg
    assert "Type public values in" in msg
    # a teaching run may use them; the release then names them
    rel = release(ds, pol, secure=True, allow_data_derived=True)
    assert rel.secure and data_derived(rel.params) == ["T(EMP): data: p99 (rounded)"]
    assert rel.entries[0].params["policy"]["threshold_source"] == {"EMP": P99}
    # typed-in thresholds (no source, or "typed") are released as before
    assert release(ds, _policy(), secure=True).secure
    assert release(ds, _policy({"EMP": "typed"}), secure=True).params["policy"].get("threshold_source") is None
    # seeded runs are never refused, and say where their thresholds came from
    seeded = release(ds, pol, rng=np.random.default_rng(0), seed=0)
    assert data_derived(seeded.params) == ["T(EMP): data: p99 (rounded)"]


def test_threshold_source_round_trips_and_is_checked(ds):
    pol = _policy({"EMP": P99, "X": "typed"})
    assert pol.threshold_sources() == {"EMP": P99}
    back = SplittingPolicy.from_dict(json.loads(json.dumps(pol.to_dict())))
    assert back == pol and back.threshold_sources() == {"EMP": P99}
    assert "threshold_source" not in _policy().to_dict()  # policies without sources serialise as before
    with pytest.raises(PolicyError, match="PAYANN"):
        _policy({"PAYANN": P99}).validate(ds.table, ds.schema.measures)
    with pytest.raises(PolicyError, match="source"):
        _policy({"EMP": 3})


def test_data_derived_lists_every_kind_of_flag():
    assert is_data_derived("data: p97.5") and not is_data_derived("typed") and not is_data_derived(None)
    params = {"policy": {"threshold_source": {"EMP": "data: loss cap 10ρ"}}, "keys": "public (the cells present in "
              "the data)", "hi_source": DATA_DEFAULT_NOTE, "spec_source": "column 'EPS'",
              "domains": "read from the data — teaching only"}
    assert data_derived(params) == ["T(EMP): data: loss cap 10ρ", "group keys: the cells present in the data",
                                    "hi: data: the column's 99th percentile", "attribute domains: read from the data"]
    assert data_derived({"keys": "none (no group-by)", "policy": {}}) == []


def test_keys_are_flagged_as_data_derived_only_with_a_group_by(ds):
    rng = np.random.default_rng(0)
    no_group = release(ds, _policy(), rng=rng, seed=0)
    assert no_group.params["keys"] == "none (no group-by)" and data_derived(no_group.params) == []
    wl = Workload((Query("sum", "EMP", rho=0.5, group_by=("STATE",)),))
    grouped = release(ds, SplittingPolicy(as_thresholds({"EMP": 100.0}), wl), rng=rng, seed=0)
    assert data_derived(grouped.params) == ["group keys: the cells present in the data"]


def test_ledger_summary_names_data_derived_parameters(ds):
    led = Ledger(list(release(ds, _policy({"EMP": P99}), rng=np.random.default_rng(0), seed=0).entries))
    led.extend(release(ds, _policy(), rng=np.random.default_rng(1), seed=1).entries)
    s = led.summary()
    assert list(s[DATA_DERIVED_COLUMN]) == ["T(EMP): data: p99 (rounded)", ""]
    table = R.ledger_table(led, teaching=True)
    assert list(table["app mode"]) == ["teaching", "teaching"] and {"seed", "secure", "mode"} <= set(table.columns)


def test_stamped_answers_carry_mode_secure_and_seed():
    a = pd.DataFrame({"query": ["q"], "estimate": [1.0], "true": [1.5]})
    t = stamp_answers(a, teaching=True, secure=False, seed=7, derived=["T(EMP): data: p99"])
    assert t.loc[0, "app mode"] == "teaching" and not t.loc[0, "secure"] and t.loc[0, "seed"] == 7
    assert t.loc[0, DATA_DERIVED_COLUMN] == "T(EMP): data: p99" and "true" in t.columns
    s = stamp_answers(a.drop(columns="true"), teaching=False, secure=True, seed=3)
    assert s.loc[0, "app mode"] == "review" and s.loc[0, "secure"] and pd.isna(s.loc[0, "seed"])
    assert s.loc[0, DATA_DERIVED_COLUMN] == ""


STUDY = """version: 1
mode: {mode}
seed: 4
data: {{sample: cbp_like, n: 3000, seed: 1}}
policy:
  thresholds: {{EMP: 100, PAYANN: 10000}}
  threshold_source: {{EMP: "data: p99 (rounded)", PAYANN: typed}}
workload:
  queries:
    - {{kind: count, rho: 0.25}}
    - {{kind: sum, measure: EMP, rho: 0.5}}
mechanisms:
  - {{kind: unit_splitting{secure}}}
"""


def test_config_round_trips_the_optional_threshold_source():
    study = R.parse_config(STUDY.format(mode="teaching", secure=""))
    assert study.policy["threshold_source"] == {"EMP": "data: p99 (rounded)"}  # "typed" is the default
    assert R.parse_config(study.to_yaml()) == study
    assert study.splitting_policy().threshold_sources() == {"EMP": "data: p99 (rounded)"}
    plain = R.parse_config(STUDY.format(mode="teaching", secure="").replace(
        '  threshold_source: {EMP: "data: p99 (rounded)", PAYANN: typed}\n', ""))
    assert "threshold_source" not in plain.policy and "threshold_source" not in plain.to_yaml()
    for bad, where in (('{EMP: "guessed"}', "policy.threshold_source.EMP"),
                       ('{BOGUS: "data: p99"}', "policy.threshold_source.BOGUS"),
                       ('[EMP]', "policy.threshold_source")):
        with pytest.raises(ConfigError, match=where.replace(".", r"\.")):
            R.parse_config(STUDY.format(mode="teaching", secure="").replace(
                '{EMP: "data: p99 (rounded)", PAYANN: typed}', bad))
    with pytest.raises(ConfigError, match="needs policy.thresholds"):
        R.parse_config('version: 1\ndata: {sample: cbp_like}\npolicy: {threshold_source: {EMP: "data: p99"}}\n')


def test_a_secure_review_study_refuses_data_derived_thresholds(tmp_path):
    cfg = tmp_path / "study.yaml"
    cfg.write_text(STUDY.format(mode="review", secure=", secure: true"), encoding="utf-8")
    with pytest.raises(PolicyError, match=r"T\(EMP\) \(data: p99 \(rounded\)\)"):
        R.run_study(R.load_config(cfg))
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(cfg), "--out", str(tmp_path / "o")], stdout=out, stderr=err)
    assert code == EXIT_ERROR and "computed from the confidential data" in err.getvalue()  # a PolicyError
    # a teaching run may use them, and says so
    cfg.write_text(STUDY.format(mode="teaching", secure=", secure: true"), encoding="utf-8")
    run = R.run_study(R.load_config(cfg))
    assert run.releases[0][2].secure
    # thresholds released by a private suggestion (its cost in the ledger) are public: the review run goes ahead
    cfg.write_text(STUDY.format(mode="review", secure=", secure: true").replace(
        '"data: p99 (rounded)"', '"private: DP p99, ε = 0.1"'), encoding="utf-8")
    run = R.run_study(R.load_config(cfg))
    assert run.releases[0][2].secure and data_derived(run.releases[0][2].params) == []


def test_every_output_names_the_data_derived_threshold_and_teaching_answers_carry_mode_and_seed(tmp_path):
    cfg = tmp_path / "study.yaml"
    cfg.write_text(STUDY.format(mode="teaching", secure=""), encoding="utf-8")
    files = R.write_outputs(R.run_study(R.load_config(cfg)), tmp_path / "out")
    text = {k: p.read_text(encoding="utf-8") for k, p in files.items()}
    for name in ("results.csv", "ledger.csv", "ledger.json", "budget.csv", "report.html", "study.yaml"):
        assert "data: p99 (rounded)" in text[name], name
    res = pd.read_csv(io.StringIO(text["results.csv"]))
    assert {"true", "error"} <= set(res.columns)
    assert set(res["app mode"]) == {"teaching"} and set(res["seed"]) == {4} and not res["secure"].any()
    assert set(res[DATA_DERIVED_COLUMN]) == {"T(EMP): data: p99 (rounded)"}
    assert "Computed from the data." in text["report.html"]
    led = pd.read_csv(io.StringIO(text["ledger.csv"]))
    assert set(led["app mode"]) == {"teaching"} and set(led["seed"]) == {4}
    # the reproduction script rebuilds the same flagged policy: the same results.csv, byte for byte
    subprocess.run([sys.executable, str(files["reproduce.py"]), str(tmp_path / "again")], check=True,
                   capture_output=True, timeout=300)
    assert (tmp_path / "again" / "results.csv").read_bytes() == files["results.csv"].read_bytes()
