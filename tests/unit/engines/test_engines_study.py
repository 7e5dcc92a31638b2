"""Studies on tables held by an engine: data.engine in configs, the CLI, paths and the reports."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from prdp_core import engines
from prdp_core.commands.cli import EXIT_CONFIG, EXIT_DATA, EXIT_ERROR, EXIT_OK, EXIT_USAGE, main
from prdp_core.data import samples
from prdp_core.study.config import ConfigError, load_config, load_data, parse_config

pytestmark = pytest.mark.xdist_group("engines")

STUDY = """
version: 1
title: CBP-like held by DuckDB
mode: teaching
seed: 4
data:
  path: {path}
  engine: {engine}
  duckdb: {{memory_limit: 1GB, threads: 2}}
  schema: {{id: ESTAB_ID, measures: [EMP, PAYANN], groups: [STATE, NAICS2], owner: FIRM_ID}}
policy:
  thresholds:
    group_column: STATE
    rows:
      "*": {{EMP: 100, PAYANN: 10000}}
      CA: {{EMP: 40, PAYANN: 4000}}
  budget: {{preset: log, column: PAYANN, alpha: 500, k: 4, eps_max: 100}}
workload:
  partition_rho: 0.1
  queries:
    - {{kind: count, group_by: [STATE], rho: 0.5}}
    - {{kind: sum, measure: EMP, group_by: [STATE, NAICS2], rho: 0.5}}
    - {{kind: avg, measure: PAYANN, rho: 0.2, rho_count: 0.1, split: false, clamp: 5000,
       filter: {{column: STATE, values: [CA, TX]}}}}
mechanisms:
  - kind: unit_splitting
  - kind: prdp
    query: max
    column: PAYANN
"""


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(argv, stdout=out, stderr=err), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("study")
    samples.write_sample("cbp_like", d / "cbp.parquet", rows=30_000, seed=2, chunk_rows=10_000)
    (d / "parts").mkdir()
    df = pd.read_parquet(d / "cbp.parquet")
    for i in range(3):
        df.iloc[i * 10_000:(i + 1) * 10_000].to_parquet(d / "parts" / f"part-{i}.parquet")
    return d


def _config(folder: Path, path: str, engine: str, name: str = "study.yaml") -> Path:
    cfg = folder / name
    cfg.write_text(STUDY.format(path=path, engine=engine), encoding="utf-8")
    return cfg


@pytest.mark.parametrize("path", ["cbp.parquet", "parts", "parts/part-*.parquet"])
def test_run_on_duckdb_gives_the_results_of_the_memory_engine(folder, path):
    ref = _config(folder, "cbp.parquet", "memory", "memory.yaml")
    cfg = _config(folder, path, "duckdb", "duckdb.yaml")
    code, _, err = _run(["run", str(ref), "--out", str(folder / "out-memory"), "-q"])
    assert code == EXIT_OK, err
    code, _, err = _run(["run", str(cfg), "--out", str(folder / "out-duckdb"), "-q"])
    assert code == EXIT_OK, err
    a = (folder / "out-memory" / "results.csv").read_bytes()
    assert (folder / "out-duckdb" / "results.csv").read_bytes() == a  # estimates and true values (teaching)
    html = (folder / "out-duckdb" / "report.html").read_text(encoding="utf-8")
    assert "Policy-loss CDF" in html and "records held by" not in html
    # the reproduction script reruns the study through the engine, bit for bit
    rep = folder / "rep"
    subprocess.run([sys.executable, str(folder / "out-duckdb" / "reproduce.py"), str(rep)], check=True,
                   capture_output=True, cwd=folder, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])})
    assert (rep / "results.csv").read_bytes() == a
    assert "prdp_core.engines.open_dataset" in (folder / "out-duckdb" / "reproduce.py").read_text()


def test_engine_option_and_validate(folder):
    ref = _config(folder, "cbp.parquet", "memory", "v.yaml")
    code, out, err = _run(["validate", str(ref), "--engine", "duckdb"])
    assert code == EXIT_OK and "fits its data" in out, err
    code, _, err = _run(["validate", str(ref), "--engine", "duckdb", "--data", str(folder / "parts")])
    assert code == EXIT_OK, err
    study = load_config(_config(folder, "cbp.parquet", "auto", "auto.yaml"))
    assert not hasattr(load_data(study), "engine")  # a small file: auto keeps it in memory
    assert isinstance(load_data(study, engine="duckdb"), engines.EngineDataset)


def test_mechanisms_that_need_the_records_are_refused_on_duckdb(folder):
    cfg = folder / "pdp.yaml"
    cfg.write_text("version: 1\ndata: {path: cbp.parquet, engine: duckdb}\npolicy:\n  tiers: {public: 0.5, agency: 8}\n"
                   "mechanisms:\n  - kind: multitier\n    query: count\n", encoding="utf-8")
    code, _, err = _run(["run", str(cfg), "--out", str(folder / "o"), "-q"])
    assert code == EXIT_ERROR and "works on the records themselves" in err and "data.engine: memory" in err


def test_config_keys_of_engines_are_checked(tmp_path):
    base = {"version": 1, "data": {"path": "x.parquet", "engine": "duckdb"}}
    assert parse_config(base).data.engine == "duckdb"
    for bad, msg in [({"engine": "spark2"}, "data.engine"), ({"duckdb": {"memory_limit": "lots"}}, "memory_limit"),
                     ({"duckdb": {"threads": 0}}, "data.duckdb.threads"), ({"duckdb": {"spill": "/"}}, "unknown key")]:
        with pytest.raises(ConfigError, match=msg):
            parse_config({"version": 1, "data": {"path": "x.parquet", **bad}})
    with pytest.raises(ConfigError, match="applies to files only"):
        parse_config({"version": 1, "data": {"sample": "cbp_like", "engine": "duckdb"}})
    for path in ("../x.parquet", "/etc/*.parquet", "parts/../../*.parquet", "~/db.duckdb#t"):
        with pytest.raises(ConfigError, match="data.path"):
            parse_config({"version": 1, "data": {"path": path, "engine": "duckdb"}}, base_dir=tmp_path)
    d = parse_config(base).to_dict()["data"]
    assert d["engine"] == "duckdb" and "duckdb" not in d


def test_a_symbolic_link_leaving_the_folder_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    pd.DataFrame({"v": [1.0]}).to_parquet(outside / "secret.parquet")
    study = tmp_path / "study"
    (study / "parts").mkdir(parents=True)
    os.symlink(outside / "secret.parquet", study / "parts" / "link.parquet")
    cfg = study / "s.yaml"
    cfg.write_text("version: 1\ndata: {path: 'parts/*.parquet', engine: duckdb, schema: {measures: [v]}}\n",
                   encoding="utf-8")
    code, _, err = _run(["validate", str(cfg)])
    assert code == EXIT_DATA and "outside the data folder" in err


def test_database_tables_are_read(tmp_path):
    import duckdb

    con = duckdb.connect(str(tmp_path / "agency.duckdb"))
    con.execute("CREATE TABLE est AS SELECT range AS id, (range % 17) * 3.5 AS v, range % 3 AS g FROM range(5000)")
    con.close()
    ds = engines.open_dataset("agency.duckdb#est", engine="duckdb", base_dir=tmp_path,
                              schema={"id_col": "id", "measures": ["v"], "groups": ["g"]})
    assert ds.n == 5000 and ds.engine.name == "duckdb"
    from prdp_core.core.errors import DataError

    with pytest.raises(DataError, match="Cannot read the table 'nope'"):
        engines.open_dataset("agency.duckdb#nope", engine="duckdb", base_dir=tmp_path, schema={"measures": ["v"]})
    with pytest.raises(DataError, match="name its table"):
        engines.open_dataset("agency.duckdb", engine="duckdb", base_dir=tmp_path, schema={"measures": ["v"]})


def test_samples_write_streams_chunks_and_keeps_ids_sorted(tmp_path):
    out = tmp_path / "big.parquet"
    code, text, err = _run(["samples", "write", "cbp_like", "--rows", "2.5e4", "--out", str(out), "-q"])
    assert code == EXIT_OK and "25,000 records" in text, err
    df = pd.read_parquet(out)
    assert len(df) == 25_000 and df["ESTAB_ID"].is_monotonic_increasing and df["ESTAB_ID"].is_unique
    assert samples.load("cbp_like", n=1000, seed=5).equals(
        pd.read_parquet(samples.write_sample("cbp_like", tmp_path / "one.parquet", rows=1000, seed=5)))
    for argv, code_ in ([["samples", "write", "cbp_like", "--rows", "1.5", "--out", str(out)], EXIT_ERROR],
                        [["samples", "write", "world_cities", "--rows", "10", "--out", str(out)], EXIT_ERROR],
                        [["samples", "write", "cbp_like", "--rows", "10", "--out", str(tmp_path / "x.txt")],
                         EXIT_ERROR],
                        [["samples", "write", "cbp_like", "--rows", "10", "--out", str(tmp_path / "no" / "x.csv")],
                         EXIT_USAGE]):
        assert _run(argv)[0] == code_, argv


def test_engine_datasets_refuse_per_record_access_with_a_way_out(folder):
    ds = engines.open_dataset(str(folder / "cbp.parquet"), engine="duckdb",
                              schema={"id_col": "ESTAB_ID", "measures": ["EMP"], "groups": ["STATE"]})
    from prdp_core.core.errors import DataError

    with pytest.raises(DataError, match="take a labelled uniform sample"):
        ds.table  # noqa: B018
    s = ds.sample(500, seed=1)
    assert s.n == 500 and "Uniform random sample of 500 of the 30,000 records" in s.notes[-1]
    assert np.isfinite(s.table["EMP"]).all()


def test_missing_sources_are_data_problems(folder):
    code, _, err = _run(["validate", str(_config(folder, "nope/*.parquet", "duckdb", "n.yaml"))])
    assert code == EXIT_DATA and "No file matches" in err
    code, _, err = _run(["validate", str(_config(folder, "cbp.parquet", "duckdb", "c.yaml")), "--engine", "memory",
                         "--data", str(folder / "parts")])
    assert code == EXIT_DATA and "is a folder, not a data file" in err
    assert _run(["validate", str(folder / "missing.yaml")])[0] == EXIT_CONFIG
