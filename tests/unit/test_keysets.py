"""Public key lists (``workload.group_keys``, :mod:`prdp_core.core.keysets`): the listed cells and only them,
absent cells as noisy zeros, a secure release that accepts them, the config key, its limit and messages,
provenance, and the reproduction script that carries them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from prdp_core.commands.cli import EXIT_OK, main
from prdp_core.core import keysets
from prdp_core.core.errors import ConfigError, PolicyError, ResourceLimitError
from prdp_core.core.limits import MAX_KEY_CELLS
from prdp_core.core.provenance import data_derived
from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Query, SplittingPolicy, Workload
from prdp_core.mechanisms.unit_splitting import release
from prdp_core.study.config import parse_config

TABLE = pd.DataFrame({"g": ["a", "a", "b", "c", "c", "c"], "h": [1, 2, 2, 1, 3, 3],
                      "v": [1.0, 30.0, 2.0, 5.0, 7.0, 60.0]})


def _policy(group_keys=None, partition_rho: float = 0.0) -> SplittingPolicy:
    wl = Workload((Query("count", rho=0.5, group_by=("g",)), Query("sum", "v", rho=0.5, group_by=("g", "h"))),
                  partition_rho=partition_rho, group_keys=group_keys or {})
    return SplittingPolicy(as_thresholds({"v": 10.0}), wl)


def test_listed_cells_only_with_absent_ones_as_noisy_zeros():
    pol = _policy({"g": ["c", "a", "zz"], "h": [1, "3", 9]})
    rel = release(TABLE, pol, rng=np.random.default_rng(0), reveal=True)
    count = rel.answers[rel.answers["query"] == "1. COUNT(*) BY g"]
    assert list(count["g"]) == ["c", "a", "zz"]  # the list's order; b (present in the data) is dropped
    assert list(count["true"]) == [3.0, 2.0, 0.0]
    zz = count[count["g"] == "zz"].iloc[0]
    assert zz["estimate"] != 0.0 and zz["n_records"] == 0  # noise drawn for the absent cell too
    sums = rel.answers[rel.answers["query"] == "2. SUM(v) BY g, h"]
    assert len(sums) == 9 and list(sums["h"][:3]) == [1, 3, 9]  # "3" typed as text matches the numeric column
    assert dict(zip(zip(sums["g"], sums["h"]), sums["true"]))[("c", 3)] == 67.0
    # a record in no listed cell (b; a with h = 2) loses nothing from the sum: its realized loss is the count's
    realized = rel.extras["private_realized"]
    assert realized[2] == 0.0  # b is not listed: in no cell of either query
    assert realized[1] == pytest.approx(0.5)  # counted (a is listed), its SUM cell (a, 2) is not listed


def test_the_same_seed_gives_the_same_answers_whatever_the_data_holds_beyond_the_list():
    pol = _policy({"g": ["a", "c"], "h": [1, 2, 3]})
    more = pd.concat([TABLE, pd.DataFrame({"g": ["q"] * 50, "h": [7] * 50, "v": [1e6] * 50})], ignore_index=True)
    a = release(TABLE, pol, rng=np.random.default_rng(5))
    b = release(more, pol, rng=np.random.default_rng(5))
    pd.testing.assert_frame_equal(a.answers, b.answers)  # the extra records are in no listed cell


def test_secure_release_accepts_listed_keys_and_names_what_to_list_otherwise():
    rel = release(TABLE, _policy({"g": ["a", "b", "c", "zz"], "h": [1, 2, 3]}), secure=True)
    assert rel.secure and rel.params["keys"] == "public (a listed key set)"
    assert rel.params["group_keys_source"] == "typed" and rel.entries[0].params["group_keys_source"] == "typed"
    assert rel.params["policy"]["workload"]["group_keys"] == {"g": ["a", "b", "c", "zz"], "h": [1, 2, 3]}
    assert data_derived(rel.params) == []
    with pytest.raises(PolicyError) as err:  # h has no list: the (g, h) cells would come from the data
        release(TABLE, _policy({"g": ["a", "b"]}), secure=True)
    text = str(err.value)
    assert "no public key list for h" in text and "workload.group_keys" in text and "Public group keys" in text
    # a teaching release without lists says its keys came from the data
    assert "group keys: the cells present in the data" in data_derived(release(TABLE, _policy(), seed=1).params)


def test_partition_selection_skips_listed_group_bys():
    wl = Workload((Query("count", rho=0.5, group_by=("g",)), Query("count", rho=0.5, group_by=("h",))),
                  partition_rho=0.2, group_keys={"g": ["a", "b"]})
    rel = release(TABLE, SplittingPolicy(as_thresholds({"v": 10.0}), wl), secure=True)
    assert list(rel.extras["partition_selection"]["kept"]) == ["h"]
    assert list(rel.answers.loc[rel.answers["query"] == "1. COUNT(*) BY g", "g"]) == ["a", "b"]


def test_bad_lists_get_messages_naming_the_column():
    with pytest.raises(PolicyError, match="'h' is a numeric column"):
        release(TABLE, _policy({"h": [1, "north"], "g": ["a"]}), seed=0)
    with pytest.raises(PolicyError, match="key list of 'g' is empty"):
        _policy({"g": []})
    with pytest.raises(PolicyError, match="list single values"):
        _policy({"g": [["a"]]})
    with pytest.raises(PolicyError, match="must be a list of values"):
        _policy({"g": "a"})
    with pytest.raises(ResourceLimitError, match=f"over the limit of {MAX_KEY_CELLS:,}"):
        _policy({"g": list(range(2000)), "h": list(range(1000))})
    # a list of a column no query groups by is dropped: it changes nothing
    assert _policy({"zz": [1]}).workload.group_keys == ()


def test_workload_round_trip_and_listed_group_bys():
    wl = _policy({"g": ["a", "a", "b"], "h": [1]}).workload
    assert wl.group_keys == (("g", ("a", "b")), ("h", (1,)))
    assert Workload.from_dict(wl.to_dict()) == wl and "group_keys" not in _policy().workload.to_dict()
    assert keysets.listed(wl) == (("g",), ("g", "h"))
    assert keysets.listed(_policy({"g": ["a"]}).workload) == (("g",),)


STUDY = """
version: 1
mode: review
seed: 7
data: {sample: cbp_like, n: 2000, seed: 0}
policy:
  thresholds: {EMP: 100, PAYANN: 10000}
workload:
  queries:
    - {kind: count, group_by: [STATE], rho: 0.25}
    - {kind: sum, measure: EMP, group_by: [STATE, NAICS2], rho: 0.25}
  group_keys: {STATE: [NV, MD, ZZ], NAICS2: ['44', '99']}
mechanisms:
  - {kind: unit_splitting}
"""


def test_config_key_is_read_written_back_and_checked():
    study = parse_config(STUDY)
    assert study.workload["group_keys"] == {"STATE": ["NV", "MD", "ZZ"], "NAICS2": ["44", "99"]}
    assert parse_config(study.to_yaml()) == study
    bad = {"STATE: [NV, MD, ZZ], NAICS2: ['44', '99']": "COUNTY: ['01001']",
           "NAICS2: ['44', '99']}": "NAICS2: []}", "STATE: [NV, MD, ZZ]": "STATE: NV"}
    messages = ["workload.group_keys.COUNTY: no query groups by 'COUNTY'",
                "workload.group_keys.NAICS2: must be a non-empty list",
                "workload.group_keys.STATE: must be a non-empty"]
    for (old, new), msg in zip(bad.items(), messages):
        with pytest.raises(ConfigError, match=msg):
            parse_config(STUDY.replace(old, new))
    with pytest.raises(ConfigError, match="workload.group_keys: .*over the limit"):
        parse_config(STUDY.replace("{STATE: [NV, MD, ZZ], NAICS2: ['44', '99']}",
                                   "{STATE: [" + ", ".join(map(str, range(1001))) + "], NAICS2: ["
                                   + ", ".join(map(str, range(1000))) + "]}"))


def test_validate_names_a_listed_value_of_the_wrong_type(tmp_path):
    from prdp_core.data.samples import generate_cbp_like

    generate_cbp_like(300, 0).assign(ZONE=lambda t: t.index % 4).to_csv(tmp_path / "d.csv", index=False)
    source = "{path: d.csv, schema: {id: ESTAB_ID, measures: [EMP, PAYANN], groups: [ZONE, STATE, NAICS2]}}"
    study = parse_config(STUDY.replace("{sample: cbp_like, n: 2000, seed: 0}", source)
                         .replace("group_by: [STATE], rho", "group_by: [ZONE], rho")
                         .replace("group_keys: {", "group_keys: {ZONE: [0, north], "), base_dir=str(tmp_path))
    from prdp_core.study.runner import load_data

    with pytest.raises(ConfigError, match="workload.group_keys: The key list of 'ZONE' holds 'north', but 'ZONE' is a "
                                          "numeric column"):
        study.check_against(load_data(study))


def test_error_analysis_of_listed_cells_is_the_same_on_an_engine(tmp_path):
    from prdp_core import engines
    from prdp_core.data.dataset import Schema, prepare_dataset
    from prdp_core.mechanisms import analysis

    rng = np.random.default_rng(0)
    t = pd.DataFrame({"id": np.arange(3000), "g": rng.choice(list("abc"), 3000),
                      "v": np.floor(rng.pareto(1.1, 3000) * 10)})
    schema = Schema(id_col="id", measures=("v",), groups=("g",))
    t.to_parquet(tmp_path / "t.parquet")
    wl = Workload((Query("count", rho=0.5, group_by=("g",)),
                   Query("sum", "v", rho=0.5, split=False, clamp=50.0, group_by=("g",))),
                  group_keys={"g": ["a", "b", "zz"]})
    pol = SplittingPolicy(as_thresholds({"v": 20.0}), wl)
    ref = analysis.workload_errors(prepare_dataset(t, schema).table, pol)
    got = analysis.workload_errors(engines.open_dataset(str(tmp_path / "t.parquet"), engine="duckdb", schema=schema),
                                   pol)
    assert len(ref) == 4  # listed cells with records (zz has none; c is not listed)
    pd.testing.assert_frame_equal(ref, got)


def test_cli_run_with_key_lists_is_reproduced_bit_for_bit_and_secure_runs(tmp_path, capsys):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(STUDY)
    assert main(["run", str(cfg), "--out", str(tmp_path / "o"), "-q"]) == EXIT_OK
    results = pd.read_csv(tmp_path / "o" / "results.csv", keep_default_na=False)
    assert list(results["STATE"][:3]) == ["NV", "MD", "ZZ"] and len(results) == 3 + 6
    script = (tmp_path / "o" / "reproduce.py").read_text()
    assert "'group_keys': {'STATE': ['NV', 'MD', 'ZZ'], 'NAICS2': ['44', '99']}" in script
    r = subprocess.run([sys.executable, str(tmp_path / "o" / "reproduce.py"), str(tmp_path / "again")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "again" / "results.csv").read_bytes() == (tmp_path / "o" / "results.csv").read_bytes()
    cfg.write_text(STUDY.replace("{kind: unit_splitting}", "{kind: unit_splitting, secure: true}"))
    assert main(["run", str(cfg), "--out", str(tmp_path / "sec"), "-q"]) == EXIT_OK
    assert '"group_keys_source": "typed"' in (tmp_path / "sec" / "ledger.json").read_text()
