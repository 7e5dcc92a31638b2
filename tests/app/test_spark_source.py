"""AppTest of the Spark source of the Data page: offered only when the administrator enables Spark
(``PRDP_SPARK_MASTER`` or ``PRDP_SPARK_REMOTE``); then a Parquet file of the data folder is read in place
by the Spark engine (the shared local[2] test session), with the Large dataset's confinement rules."""

from __future__ import annotations

import pandas as pd
import pytest

import prdp_core
from prdp_core.data.dataset import prepare_dataset
from prdp_core.engines import EngineDataset
from tests import spark as spark_tests
from ui import large

from .conftest import open_page, texts

pytestmark = [*spark_tests.MARKS, pytest.mark.xdist_group("engines")]

N = 2_000


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    data = tmp_path_factory.mktemp("spark-data")
    prdp_core.data.samples.write_sample("cbp_like", data / "cbp.parquet", rows=N, seed=5)
    return data


def test_without_the_administrators_setting_no_spark_engine_is_offered(folder, monkeypatch):
    monkeypatch.setenv("PRDP_DATA_DIR", str(folder))
    for var in ("PRDP_SPARK_MASTER", "PRDP_SPARK_REMOTE"):
        monkeypatch.delenv(var, raising=False)
    at = open_page("data")
    assert "spark" not in at.selectbox(key="large_engine").options
    assert "Spark" not in (at.selectbox(key="large_engine").help or "")


def test_with_spark_enabled_a_data_folder_file_is_read_by_spark(folder, monkeypatch, spark):
    monkeypatch.setenv("PRDP_DATA_DIR", str(folder))
    monkeypatch.setenv("PRDP_SPARK_MASTER", "local[2]")
    at = open_page("data")
    box = at.selectbox(key="large_engine")
    assert box.options == ["duckdb", "spark"] and "Spark (enabled on this server)" in box.help
    box.set_value("spark").run()
    at.selectbox(key="large_file").set_value("cbp.parquet").run()
    at.button(key="large_connect_go").click().run()
    assert not at.exception, at.exception
    raw = at.session_state["raw"]
    assert raw["large"] and raw["engine"] == "spark" and raw["n"] == N
    assert "read in place by spark" in texts(at)
    at.button(key=f"apply_{raw['id']}").click().run()
    assert not at.exception, at.exception
    ds = at.session_state["dataset"]
    assert isinstance(ds, EngineDataset) and ds.engine.name == "spark" and ds.n == N
    src = at.session_state["dataset_source"]
    assert src["kind"] == "large" and src["engine"] == "spark" and src["path"] == "cbp.parquet"
    assert large.open_source(src)[0] is ds
    # the profile computed by Spark is the one of the same table in memory
    mem = prepare_dataset(pd.read_parquet(folder / "cbp.parquet"), ds.schema, name="cbp.parquet")
    want = prdp_core.data.profile.profile_dataset(mem).table()
    shown = at.dataframe[0].value
    assert shown.loc["EMP", "count"] == N and shown.loc["EMP", "max"] == want.loc["EMP", "max"]
    assert shown.loc["PAYANN", "p99"] == want.loc["PAYANN", "p99"]
    assert "DATA = 'cbp.parquet'" in at.code[-1].value and "open_dataset(DATA, engine='spark'" in at.code[-1].value


@pytest.mark.parametrize("path, words", [("../x.parquet", "may not leave the data folder"),
                                         ("nothing.parquet", "No data file")])
def test_spark_names_nothing_outside_the_data_folder(folder, monkeypatch, spark, path, words):
    monkeypatch.setenv("PRDP_DATA_DIR", str(folder))
    monkeypatch.setenv("PRDP_SPARK_MASTER", "local[2]")
    at = open_page("data")
    at.selectbox(key="large_engine").set_value("spark").run()
    at.text_input(key="large_path").set_value(path).run()
    at.button(key="large_connect_go").click().run()
    assert not at.exception
    assert at.error and words in at.error[0].value, at.error
    assert at.session_state["dataset"].name == "cbp_like"


def test_a_spark_engine_is_refused_once_the_administrator_disables_it(folder, monkeypatch):
    monkeypatch.setenv("PRDP_DATA_DIR", str(folder))
    for var in ("PRDP_SPARK_MASTER", "PRDP_SPARK_REMOTE"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(prdp_core.core.errors.DataError, match="spark engine is not available on this server"):
        large._engine.__wrapped__("cbp.parquet", "[]", "spark", "")
