"""Spark settings from a shared study are an allow-list: a study cannot run or load code through
``data.spark.conf``, nor send a run to a master or Spark Connect server of its author's choosing;
the administrator's own settings (``PRDP_SPARK_CONF``) may hold anything. Refusals happen before
PySpark is imported: no JVM starts (checked with a ``java`` that records being started).

None of these tests starts Spark.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from prdp_core.commands.cli import EXIT_CONFIG, main
from prdp_core.core.errors import EngineError
from prdp_core.engines import EngineOptions
from prdp_core.engines import spark_session as session_module
from prdp_core.engines import spark_settings as SS
from prdp_core.study.config import ConfigError, load_config, load_data, parse_config

ROOT = Path(__file__).resolve().parents[3]
HOSTILE_OPTIONS = "-XX:MaxMetaspaceSize=24m -XX:OnOutOfMemoryError='touch {mark}'"

#: Settings a study must not give: they run or load code, choose where the work goes, or open ports
#: and folders (each refused whatever its value, with the administrator named as the one who sets it).
REFUSED = [
    "spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions", "spark.driver.defaultJavaOptions",
    "spark.executor.defaultJavaOptions", "spark.driver.extraClassPath", "spark.executor.extraClassPath",
    "spark.driver.extraLibraryPath", "spark.executor.extraLibraryPath", "spark.jars", "spark.jars.packages",
    "spark.jars.repositories", "spark.jars.ivy", "spark.jars.ivySettings", "spark.jars.excludes",
    "spark.sql.extensions", "spark.plugins", "spark.executor.plugins", "spark.extraListeners",
    "spark.sql.queryExecutionListeners", "spark.sql.streaming.streamingQueryListeners",
    "spark.python.daemon.module", "spark.python.worker.module", "spark.python.worker.reuse",
    "spark.pyspark.python", "spark.pyspark.driver.python", "spark.serializer", "spark.shuffle.manager",
    "spark.io.compression.codec", "spark.sql.catalog.spark_catalog", "spark.sql.catalogImplementation",
    "spark.sql.adaptive.customCostEvaluatorClass", "spark.sql.sources.commitProtocolClass",
    "spark.hadoop.fs.s3a.aws.credentials.provider", "spark.hadoop.fs.file.impl", "spark.kryo.registrator",
    "spark.driver.resource.gpu.discoveryScript", "spark.executor.resource.gpu.discoveryScript",
    "spark.executorEnv.LD_PRELOAD", "spark.yarn.appMasterEnv.LD_PRELOAD", "spark.files", "spark.archives",
    "spark.submit.pyFiles", "spark.yarn.dist.jars", "spark.kubernetes.container.image", "spark.r.command",
    "spark.master", "spark.remote", "spark.submit.deployMode", "spark.driver.host", "spark.driver.bindAddress",
    "spark.ui.enabled", "spark.ui.port", "spark.local.dir", "spark.sql.warehouse.dir",
    "spark.eventLog.dir", "spark.redaction.regex", "spark.Driver.ExtraJavaOptions", "spark.driver.memory.x",
]

#: A value of each kind a study setting takes.
GOOD = {SS.SIZE: "8g", SS.SIZE_OR_OFF: -1, SS.COUNT: 4, SS.SWITCH: True, SS.DURATION: "120s", SS.FRACTION: 0.6}


def _cli(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue()


def _study(folder: Path, conf: dict[str, object] | None = None, spark: str | None = None) -> Path:
    """A study reading ``x.csv`` with the spark engine and ``data.spark`` (given as YAML, or built from ``conf``)."""
    pd.DataFrame({"v": [1.0, 2.0, 3.0]}).to_csv(folder / "x.csv", index=False)
    if spark is None:
        import json

        spark = "{conf: " + json.dumps(conf or {}) + "}"
    cfg = folder / "study.yaml"
    cfg.write_text("version: 1\n"
                   f"data: {{path: x.csv, engine: spark, schema: {{measures: [v]}}, spark: {spark}}}\n"
                   "policy: {thresholds: {v: 2}}\nworkload: {queries: [{kind: count, rho: 0.5}]}\n",
                   encoding="utf-8")
    return cfg


@pytest.fixture
def no_spark_start(monkeypatch):
    """Record any attempt to start Spark (every session goes through require_spark first)."""
    started: list[object] = []

    def refuse(*args: object, **kw: object) -> None:
        started.append(args)
        raise AssertionError("Spark was started")

    monkeypatch.setattr(session_module, "require_spark", refuse)
    for name in (SS.ENV_MASTER, SS.ENV_REMOTE, SS.ENV_ALLOWED, SS.ENV_CONF):
        monkeypatch.delenv(name, raising=False)
    return started


# ---------------------------------------------------------------------------
# The hostile study of the report, through the real CLI: refused, and no JVM starts
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "run"])
def test_the_hostile_study_is_refused_before_any_jvm_starts(tmp_path, command):
    mark, started = tmp_path / "oom-command-ran", tmp_path / "java-started"
    java_home = tmp_path / "jdk"
    (java_home / "bin").mkdir(parents=True)
    java = java_home / "bin" / "java"  # the java PySpark would start: it records that it was started
    java.write_text(f"#!/bin/sh\necho \"$@\" >> '{started}'\nexit 1\n", encoding="utf-8")
    java.chmod(0o755)
    cfg = _study(tmp_path, {"spark.driver.extraJavaOptions": HOSTILE_OPTIONS.format(mark=mark)})
    argv = [command, str(cfg)] + (["--out", str(tmp_path / "out")] if command == "run" else [])
    probe = ("import sys\nfrom prdp_core.commands.cli import main\ncode = main(sys.argv[1:])\n"
             "print('imported:', sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'py4j'}))\n"
             "sys.exit(code)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRDP_SPARK", "PYSPARK", "SPARK_"))}
    env.update(JAVA_HOME=str(java_home), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == EXIT_CONFIG, done.stdout + done.stderr
    assert "data.spark.conf.spark.driver.extraJavaOptions" in done.stderr
    assert "PRDP_SPARK_CONF" in done.stderr and "never a shared study" in done.stderr
    assert "imported: []" in done.stdout  # PySpark (and its Java gateway) never loaded
    assert not started.exists(), started.read_text()  # no java process
    assert not mark.exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("key", REFUSED)
def test_every_setting_that_runs_code_or_chooses_a_server_is_refused(tmp_path, no_spark_start, key, command):
    cfg = _study(tmp_path, {key: "x"})
    argv = [command, str(cfg)] + (["--out", str(tmp_path / "out")] if command == "run" else [])
    code, text = _cli(argv)
    assert code == EXIT_CONFIG, text
    assert f"data.spark.conf.{key}: a study may not give this Spark setting" in text
    assert "PRDP_SPARK_CONF" in text and "never a shared study" in text
    assert no_spark_start == []


def test_the_tuning_settings_are_accepted_with_values_of_their_kind(no_spark_start):
    conf = {key: GOOD[kind] for key, kind in SS.STUDY_SETTINGS.items()}
    d = parse_config({"version": 1, "data": {"path": "x.parquet", "engine": "spark", "spark": {"conf": conf}}}).data
    assert d.spark["conf"] == {k: ("true" if v is True else v) for k, v in conf.items()}
    assert parse_config({"version": 1, "data": d.to_dict()}).data == d  # round trip
    bad = {"spark.executor.memory": "8g -javaagent:/tmp/a.jar", "spark.driver.memory": "-Xmx1g",
           "spark.sql.shuffle.partitions": 0, "spark.default.parallelism": "4; rm -rf /",
           "spark.sql.adaptive.enabled": "yes", "spark.network.timeout": 1.5, "spark.memory.fraction": 1.5,
           "spark.executor.cores": True, "spark.driver.maxResultSize": [1, 2], "spark.sql.files.maxPartitionBytes": -2}
    for key, value in bad.items():
        with pytest.raises(ConfigError, match=rf"^data\.spark\.conf\.{key.replace('.', '[.]')}: must be "):
            parse_config({"version": 1, "data": {"path": "x.parquet", "engine": "spark",
                                                 "spark": {"conf": {key: value}}}})


def test_a_study_names_only_a_local_master_or_one_the_server_allows(monkeypatch, no_spark_start):
    def spark_of(**spark: object) -> dict[str, object]:
        return parse_config({"version": 1, "data": {"path": "x.parquet", "engine": "spark", "spark": spark}}).data.spark

    for local in ("local", "local[1]", "local[*]", "local[2,3]"):
        assert spark_of(master=local) == {"master": local}
    for key, address in [("master", "spark://attacker.example:7077"), ("master", "yarn"),
                         ("master", "k8s://https://attacker.example"), ("remote", "sc://attacker.example:15002")]:
        with pytest.raises(ConfigError, match=rf"^data\.spark\.{key}: this server does not allow a study"):
            spark_of(**{key: address})
    monkeypatch.setenv(SS.ENV_MASTER, "spark://head:7077")
    monkeypatch.setenv(SS.ENV_ALLOWED, "yarn, sc://head:15002  k8s://https://k8s.internal")
    assert spark_of(master="spark://head:7077") == {"master": "spark://head:7077"}
    assert spark_of(master="yarn") == {"master": "yarn"}
    assert spark_of(remote="sc://head:15002") == {"remote": "sc://head:15002"}
    with pytest.raises(ConfigError, match="PRDP_SPARK_ALLOWED_MASTERS"):
        spark_of(master="spark://head:7078")
    monkeypatch.setenv(SS.ENV_REMOTE, "sc://connect:15002")
    assert spark_of(remote="sc://connect:15002") == {"remote": "sc://connect:15002"}


def test_a_study_built_in_code_is_checked_again_before_spark_starts(tmp_path, no_spark_start):
    study = load_config(_study(tmp_path, {"spark.sql.shuffle.partitions": 4}))
    for spark, key in [({"conf": {"spark.jars.packages": "org.evil:agent:1.0"}}, "data.spark.conf.spark.jars"),
                       ({"master": "spark://attacker.example:7077"}, "data.spark.master")]:
        hostile = replace(study, data=replace(study.data, spark=spark))
        with pytest.raises(ConfigError, match=key):
            load_data(hostile)
    assert no_spark_start == []


def test_the_allow_list_is_the_one_docs_cluster_md_lists():
    text = (ROOT / "docs" / "cluster.md").read_text(encoding="utf-8")
    section = text.split("**`data.spark.conf`: tuning settings only**")[1].split("Every other setting")[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `spark.")]
    listed = [name for row in rows for name in re.findall(r"`(spark\.[^`]+)`", row)]
    assert sorted(listed) == sorted(SS.STUDY_SETTINGS) and len(listed) == len(set(listed))
    assert f"**allow-list** of {len(SS.STUDY_SETTINGS)} tuning settings" in (ROOT / "docs" / "security.md").read_text()


# ---------------------------------------------------------------------------
# The administrator's settings: PRDP_SPARK_CONF
# ---------------------------------------------------------------------------


def test_the_administrators_file_may_hold_any_setting(tmp_path, monkeypatch):
    conf = tmp_path / "spark.conf"
    conf.write_text("# the site's settings\n\nspark.driver.extraJavaOptions = -Dsite=a -Dother=b\n"
                    "spark.jars.packages   org.apache.hadoop:hadoop-aws:3.3.4\nspark.driver.memory=4g\n",
                    encoding="utf-8")
    monkeypatch.setenv(SS.ENV_CONF, str(conf))
    assert SS.admin_conf() == {"spark.driver.extraJavaOptions": "-Dsite=a -Dother=b",
                               "spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.3.4",
                               "spark.driver.memory": "4g"}
    conf.write_text("spark.driver.memory=4g\nhadoop.x=1\n", encoding="utf-8")
    with pytest.raises(EngineError, match=r"spark\.conf, line 2 \(PRDP_SPARK_CONF\): not a Spark setting"):
        SS.admin_conf()
    monkeypatch.setenv(SS.ENV_CONF, str(tmp_path / "missing.conf"))
    with pytest.raises(EngineError, match="PRDP_SPARK_CONF names .*missing.conf, which cannot be read"):
        SS.admin_conf()
    monkeypatch.setenv(SS.ENV_CONF, " ")
    assert SS.admin_conf() == {}


def test_the_session_applies_the_administrators_settings_under_the_studys(tmp_path, monkeypatch):
    """spark_session with a stand-in for PySpark's builder: what it would be given, no JVM."""
    given: dict[str, str] = {}

    class Builder:
        def appName(self, name: str) -> Builder:
            return self

        def master(self, master: str) -> Builder:
            given["master"] = master
            return self

        def config(self, key: str, value: str) -> Builder:
            given[key] = value
            return self

        def getOrCreate(self) -> object:
            return SimpleNamespace(sparkContext=SimpleNamespace(setLogLevel=lambda level: None))

    import pyspark.sql

    monkeypatch.setattr(pyspark.sql, "SparkSession", SimpleNamespace(builder=Builder(),
                                                                     getActiveSession=lambda: None))
    monkeypatch.setattr(session_module, "require_spark", lambda **kw: None)
    conf = tmp_path / "spark.conf"
    conf.write_text("spark.driver.extraJavaOptions=-Dsite=a\nspark.driver.memory 4g\n", encoding="utf-8")
    monkeypatch.setenv(SS.ENV_CONF, str(conf))
    study = SS.study_options({"master": "local[1]", "conf": {"spark.driver.memory": "2g"}})
    session_module.spark_session(study)
    assert given["master"] == "local[1]" and given["spark.driver.extraJavaOptions"] == "-Dsite=a"
    assert given["spark.driver.memory"] == "2g"  # the study's tuning over the administrator's
    with pytest.raises(ConfigError, match="spark.driver.extraJavaOptions"):
        SS.study_options({"conf": {"spark.driver.extraJavaOptions": "-Dx=1"}})
    assert isinstance(study, EngineOptions)
