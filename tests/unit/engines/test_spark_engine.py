"""The Spark engine beyond the parity suite: how users reach it (config, CLI, a Spark DataFrame,
a catalog table, URIs), what it collects to the driver, and its messages when Spark is missing.

Tests that run Spark carry :data:`tests.spark.MARKS` (one shared local[2] session, in one xdist
worker); the others check the config and the messages without starting Spark.
"""

from __future__ import annotations

import builtins
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from prdp_core import engines
from prdp_core.commands.cli import EXIT_DATA, EXIT_ERROR, EXIT_OK, main
from prdp_core.core.errors import DataError, EngineError
from prdp_core.data import samples
from prdp_core.data.dataset import Schema
from prdp_core.engines import spark_engine as SE
from prdp_core.engines.spark_settings import ENV_ALLOWED
from prdp_core.study.config import ConfigError, parse_config
from tests import spark as spark_tests
from tests.unit.engines.test_engine_analysis import tables  # noqa: F401, F811 - the analysis suite's table (a fixture)
from tests.unit.engines.test_engines_study import STUDY

SPARK = spark_tests.MARKS
# with the parity suite's group: every Spark test of a run lands in the group "engines_spark", one worker
pytestmark = pytest.mark.xdist_group("engines")


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(argv, stdout=out, stderr=err), out.getvalue(), err.getvalue()


# ---------------------------------------------------------------------------
# Without Spark: config, environment, messages
# ---------------------------------------------------------------------------


def test_spark_keys_of_the_config_are_checked(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_ALLOWED, "sc://spark.example:15002")  # a server the administrator allows
    base = {"engine": "spark", "spark": {"master": "local[2]", "conf": {"spark.sql.shuffle.partitions": 8,
                                                                         "spark.executor.memory": "8g"}}}
    d = parse_config({"version": 1, "data": {"path": "x.parquet", **base}}).data
    assert d.engine == "spark" and d.spark == {"master": "local[2]", "conf": {"spark.sql.shuffle.partitions": 8,
                                                                                "spark.executor.memory": "8g"}}
    assert parse_config({"version": 1, "data": d.to_dict()}).data == d  # round trip
    t = parse_config({"version": 1, "data": {"table": "census.cbp", "engine": "spark",
                                             "spark": {"remote": "sc://spark.example:15002"}}}).data
    assert t.table == "census.cbp" and t.path is None and "Spark table 'census.cbp'" in t.describe()
    assert parse_config({"version": 1, "data": t.to_dict()}).data == t
    for uri in ("hdfs://nn:8020/cbp/*.parquet", "s3a://bucket/cbp/", "file:///data/cbp.parquet"):
        assert parse_config({"version": 1, "data": {"path": uri, "engine": "spark"}}).data.path == uri  # untouched
    bad = [
        ({"path": "x.parquet", "engine": "spark", "spark": {"master": "local[*]", "remote": "sc://h"}}, "not both"),
        ({"path": "x.parquet", "engine": "spark", "spark": {"master": "http://evil"}}, "data.spark.master"),
        ({"path": "x.parquet", "engine": "spark", "spark": {"remote": "http://h:1"}}, "data.spark.remote"),
        ({"path": "x.parquet", "engine": "spark", "spark": {"cores": 4}}, "unknown key"),
        ({"path": "x.parquet", "engine": "spark", "spark": {"conf": {"hadoop.x": "1"}}}, "start with 'spark.'"),
        ({"path": "x.parquet", "engine": "spark", "spark": {"conf": {"spark.x": "1"}}}, "may not give this Spark"),
        ({"path": "x.parquet", "engine": "spark", "spark": {"conf": {"spark.executor.memory": [1, 2]}}}, "a size"),
        ({"path": "x.parquet", "engine": "spark", "spark": {"conf": {"spark.executor.cores": True}}}, "whole number"),
        ({"path": "x.parquet", "engine": "spark", "spark": {"conf": {"spark.executor.memory": {"a": 1}}}}, "a size"),
        ({"path": "x.parquet", "engine": "spark", "spark": {"conf": {f"spark.k{i}": i for i in range(101)}}},
         "at most 100"),
        ({"path": "x.parquet", "engine": "duckdb", "spark": {"master": "local"}}, "spark engine only"),
        ({"table": "cbp", "engine": "duckdb"}, "data.table: applies to the spark engine only"),
        ({"table": "cbp; DROP TABLE x", "engine": "spark"}, "data.table"),
        ({"table": "cbp", "path": "x.parquet", "engine": "spark"}, "exactly one"),
        ({"path": "hdfs://nn/x.parquet", "engine": "duckdb"}, "read by the spark engine only"),
        ({"path": "hdfs://nn/x.parquet", "engine": "auto"}, "read by the spark engine only"),
        ({"path": "file://otherhost/x.parquet", "engine": "spark"}, "absolute path of this machine"),
        ({"path": "../x.parquet", "engine": "spark"}, "data.path"),
        ({"sample": "cbp_like", "spark": {"master": "local"}}, "applies to files only"),
    ]
    for data, msg in bad:
        with pytest.raises(ConfigError, match=msg):
            parse_config({"version": 1, "data": data}, base_dir=tmp_path)


def test_a_file_uri_outside_the_config_folder_is_refused(tmp_path):
    outside = tmp_path / "outside.parquet"
    pd.DataFrame({"v": [1.0]}).to_parquet(outside)
    study = tmp_path / "study"
    study.mkdir()
    cfg = study / "s.yaml"
    cfg.write_text(f"version: 1\ndata: {{path: '{outside.as_uri()}', engine: spark, schema: {{measures: [v]}}}}\n",
                   encoding="utf-8")
    code, _, err = _run(["validate", str(cfg)])
    assert code == EXIT_DATA and "lies outside the config's folder" in err


def test_the_app_offers_spark_only_when_the_administrator_enables_it(monkeypatch):
    monkeypatch.delenv(SE.ENV_MASTER, raising=False)
    monkeypatch.delenv(SE.ENV_REMOTE, raising=False)
    assert not engines.spark_enabled() and "spark" not in engines.available_engines()
    monkeypatch.setenv(SE.ENV_MASTER, "   ")
    assert not engines.spark_enabled()
    monkeypatch.setenv(SE.ENV_MASTER, "spark://head:7077")
    assert engines.spark_enabled() and engines.available_engines() == ("memory", "duckdb", "spark")
    assert SE.env_options().master == "spark://head:7077"
    monkeypatch.setenv(SE.ENV_REMOTE, "sc://head:15002")
    o = SE.env_options()
    assert o.remote == "sc://head:15002" and o.master is None  # Spark Connect wins


def test_missing_pyspark_or_java_is_one_sentence_saying_what_to_install(monkeypatch, tmp_path):
    real_import = builtins.__import__

    def no_pyspark(name, *args, **kw):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError(f"No module named '{name}'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_pyspark)
    with pytest.raises(EngineError) as e:
        SE.require_spark()
    assert str(e.value) == ("The spark engine needs PySpark, which is not installed: run "
                            "`pip install prdp-explorer[spark]`.")
    monkeypatch.setattr(builtins, "__import__", real_import)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    with pytest.raises(EngineError, match=r"needs Java 17, which was not found: install Debian's "
                                          r"openjdk-17-jre-headless"):
        SE.spark_session(SE.EngineOptions(master="local[1]"))
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert SE.java_executable() is None
    # through the CLI: the sentence and the exit code of an engine problem, no traceback
    pd.DataFrame({"v": [1.0, 2.0]}).to_parquet(tmp_path / "x.parquet")
    (tmp_path / "s.yaml").write_text("version: 1\ndata: {path: x.parquet, engine: spark, schema: {measures: [v]}}\n",
                                     encoding="utf-8")
    code, _, err = _run(["validate", str(tmp_path / "s.yaml")])
    assert code == EXIT_ERROR and "openjdk-17-jre-headless" in err and "Traceback" not in err


# ---------------------------------------------------------------------------
# With Spark (one shared local[2] session)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("spark-study")
    samples.write_sample("cbp_like", d / "cbp.parquet", rows=100_000, seed=5, chunk_rows=50_000)
    return d


@SPARK[0]
@SPARK[1]
def test_run_on_spark_gives_the_results_csv_of_the_memory_engine(spark, folder):
    ref = _write(folder / "memory.yaml", STUDY.format(path="cbp.parquet", engine="memory"))
    spark_study = STUDY.replace("duckdb: {{memory_limit: 1GB, threads: 2}}",
                                "spark: {{conf: {{spark.sql.shuffle.partitions: 4}}}}")
    cfg = _write(folder / "spark.yaml", spark_study.format(path="cbp.parquet", engine="spark"))
    code, _, err = _run(["run", str(ref), "--out", str(folder / "out-memory"), "-q"])
    assert code == EXIT_OK, err
    code, _, err = _run(["run", str(cfg), "--out", str(folder / "out-spark"), "-q"])
    assert code == EXIT_OK, err
    a = (folder / "out-memory" / "results.csv").read_bytes()
    assert (folder / "out-spark" / "results.csv").read_bytes() == a  # estimates and true values (teaching mode)
    script = (folder / "out-spark" / "reproduce.py").read_text()
    assert "engine='spark'" in script and "'spark.sql.shuffle.partitions': 4" in script
    # a file:// URI inside the config's folder is the same file
    uri = _write(folder / "uri.yaml", spark_study.format(path=(folder / "cbp.parquet").as_uri(), engine="spark"))
    code, out, err = _run(["validate", str(uri)])
    assert code == EXIT_OK and "fits its data" in out, err


@SPARK[0]
@SPARK[1]
def test_a_spark_dataframe_and_a_catalog_table_are_sources(spark, folder):
    from prdp_core.core.splitting import as_thresholds
    from prdp_core.core.workload import Query, SplittingPolicy, Workload
    from prdp_core.mechanisms.preview import preview_policy
    from prdp_core.mechanisms.unit_splitting import release
    from tests.unit.engines.test_engine_parity import _table

    df = _table(3, 20_000)
    schema = Schema(id_col="id", measures=("v", "w"), groups=("g",), owner_col="o")
    import pyarrow as pa

    sdf = spark.createDataFrame(pa.Table.from_pandas(df, preserve_index=False))  # no pandas conversion of PySpark
    ds = engines.open_dataset(sdf, schema=schema)
    assert isinstance(ds, engines.EngineDataset) and ds.engine.name == "spark" and ds.n == len(df)
    mem = engines.open_dataset(df, schema=schema)
    pol = SplittingPolicy(as_thresholds({"v": 10.0, "w": 40.0}),
                          Workload((Query("count", rho=0.5, group_by=("g",)), Query("sum", "v", rho=0.5)),
                                   partition_rho=0.1))
    a = release(mem, pol, rng=np.random.default_rng(7), reveal=True)
    ds.engine.collected.reset()
    b = release(ds, pol, rng=np.random.default_rng(7), reveal=True)
    pd.testing.assert_frame_equal(a.answers, b.answers, check_exact=False, rtol=1e-9)
    got = ds.engine.collected

    # aggregates only, never the records: fewer rows than the table (the largest result is the exact
    # realized-loss distribution, one row per distinct loss) and a fraction of its bytes
    assert 0 < got.rows < len(df) / 2 and got.bytes * 4 < pa.Table.from_pandas(df).nbytes
    a_own, b_own = preview_policy(mem, pol).owners, preview_policy(ds, pol).owners  # Lemma 4 sums per owner
    np.testing.assert_allclose(np.repeat(b_own.values, b_own.counts), np.repeat(a_own.values, a_own.counts),
                               rtol=1e-9, atol=1e-12)
    sdf.write.mode("overwrite").saveAsTable("prdp_test_table")
    try:
        cat = engines.open_dataset(engines.CatalogTable("prdp_test_table"), engine="spark", schema=schema)
        assert cat.n == len(df) and cat.name == "prdp_test_table"
    finally:
        spark.sql("DROP TABLE IF EXISTS prdp_test_table")
    with pytest.raises(DataError, match="No table 'nope_nope' in the Spark catalog"):
        engines.open_dataset(engines.CatalogTable("nope_nope"), engine="spark", schema=schema)
    with pytest.raises(DataError, match="Spark cannot read 'hdfs://"):
        engines.open_dataset("hdfs://127.0.0.1:1/nothing.parquet", engine="spark", schema=schema)


def _write(p: Path, text: str) -> Path:
    p.write_text(text, encoding="utf-8")
    return p


@SPARK[0]
@SPARK[1]
def test_config_table_source_and_unknown_master_message(spark, folder):
    spark.read.parquet((folder / "cbp.parquet").as_uri()).limit(5000).write.mode("overwrite") \
        .saveAsTable("prdp_cbp_small")
    try:
        cfg = _write(folder / "table.yaml", "version: 1\ndata:\n  table: prdp_cbp_small\n  engine: spark\n"
                                            "  schema: {id: ESTAB_ID, measures: [EMP, PAYANN], groups: [STATE]}\n")
        code, out, err = _run(["validate", str(cfg)])
        assert code == EXIT_OK and "fits its data" in out, err
        bad = _write(folder / "badtable.yaml", "version: 1\ndata: {table: prdp_none, engine: spark, "
                                               "schema: {measures: [EMP]}}\n")
        code, _, err = _run(["validate", str(bad)])
        assert code == EXIT_DATA and "No table 'prdp_none' in the Spark catalog" in err
    finally:
        spark.sql("DROP TABLE IF EXISTS prdp_cbp_small")


@SPARK[0]
@SPARK[1]
def test_quantiles_and_the_error_analysis_on_spark(spark, tables):  # noqa: F811
    from prdp_core.mechanisms import analysis
    from tests.unit.engines.test_engine_analysis import SCHEMA as ANALYSIS_SCHEMA
    from tests.unit.engines.test_engine_analysis import _policy, _same

    mem = tables[0]
    df = mem.table
    sp = engines.open_dataset(df, engine="spark", schema=ANALYSIS_SCHEMA)
    qs = [0.0, 0.1, 0.3, 0.5, 0.9, 0.975, 0.99, 0.999, 1.0]
    for m in ("v", "w"):  # exact order statistics by selection, interpolated by numpy itself
        assert np.array_equal(sp.engine.quantiles(m, qs), np.quantile(df[m].to_numpy(), qs))
    v = df["v"].to_numpy()
    assert sp.engine.threshold_quantiles("v", [0.1])[0] == v[v > 0].min()
    pol = _policy(0.5, filtered=True)
    _same(analysis.workload_errors(mem.table, pol, min_count=5, rng=np.random.default_rng(1)),
          analysis.workload_errors(sp, pol, min_count=5, rng=np.random.default_rng(1)))
