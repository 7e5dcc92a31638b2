"""AppTest of the Large dataset source: a Parquet file of the server's data folder read in place by DuckDB.

The session keeps the engine dataset (never the table); every page works on it — the Data page's roles,
checks and fixes, the Policy designer's CDFs, a release, the Trade-offs sweep, the Budget functions'
central mechanisms, the Study export, import and report — with the numbers of the same table in memory;
pages that need the records offer a labelled sample; nothing outside the data folder can be named.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

import prdp_core
from prdp_core.data.dataset import prepare_dataset
from prdp_core.engines import EngineDataset
from prdp_core.mechanisms.preview import preview_policy
from prdp_core.mechanisms.unit_splitting import owner_realized_distribution, release
from ui import data as udata
from ui import large

from .conftest import chart_traces, open_page, texts

pytestmark = pytest.mark.xdist_group("large")

N = 4_000


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    data = tmp_path_factory.mktemp("large-data")
    prdp_core.data.samples.write_sample("cbp_like", data / "cbp.parquet", rows=N, seed=3)
    rng = np.random.default_rng(1)
    messy = pd.DataFrame({"rec": np.arange(500), "grp": rng.choice(["a", "b"], 500),
                          "sales": rng.uniform(-50, 5000, 500)})
    messy.loc[[3, 7, 11], "sales"] = np.nan
    messy.to_parquet(data / "messy.parquet")
    return data


@pytest.fixture
def at(folder, monkeypatch):
    monkeypatch.setenv("PRDP_DATA_DIR", str(folder))
    return open_page("data")


def _connect(at, name: str, *, use: bool = True):
    at.selectbox(key="large_file").set_value(name).run()
    at.button(key="large_connect_go").click().run()
    assert not at.exception, at.exception
    if use:
        at.button(key=f"apply_{at.session_state['raw']['id']}").click().run()
        assert not at.exception, at.exception
    return at


def _memory_twin(folder, ds: EngineDataset):
    """The same table, prepared in memory with the roles the app confirmed."""
    return prepare_dataset(pd.read_parquet(folder / "cbp.parquet"), ds.schema, name="cbp.parquet")


def test_connect_confirm_roles_and_profile_without_uploading(at, folder):
    assert at.selectbox(key="large_file").options == ["cbp.parquet", "messy.parquet"]
    _connect(at, "cbp.parquet", use=False)
    # connected, not in use: the roles view with guessed roles, the previous dataset still active
    assert at.session_state["dataset"].name == "cbp_like"
    assert at.session_state["data_tab"] == udata.ROLES_TAB
    raw = at.session_state["raw"]
    assert raw["large"] and raw["n"] == N and "cbp.parquet is not in use yet" in texts(at)
    assert at.multiselect(key=f"map_measures_{raw['id']}").value == ["EMP", "PAYANN", "PAYQTR1"]
    assert len(raw["df"]) == N  # the guess read a sample of at most GUESS_ROWS rows (all of a small table)
    at.button(key=f"apply_{raw['id']}").click().run()
    ds = at.session_state["dataset"]
    assert isinstance(ds, EngineDataset) and ds.engine.name == "duckdb" and ds.n == N
    src = at.session_state["dataset_source"]
    assert src["kind"] == "large" and src["path"] == "cbp.parquet" and src["engine"] == "duckdb"
    assert json.loads(json.dumps(src)) == src  # a plain JSON-able dict: a session can persist and restore it
    assert large.open_source(src)[0] is ds  # rebuilt from the dict: the same server-wide dataset
    assert at.session_state["data_tab"] == udata.PROFILE_TAB
    t = texts(at)
    assert "Active dataset: cbp.parquet" in t and "Its records stay in the file" in t
    assert "top 1% of records hold" in t and "Large dataset: its records stay in the engine" in t
    # the profile equals the in-memory one
    mem = prdp_core.data.profile.profile_dataset(_memory_twin(folder, ds)).table()
    shown = at.dataframe[0].value
    assert shown.loc["EMP", "count"] == N and shown.loc["EMP", "max"] == mem.loc["EMP", "max"]
    assert abs(shown.loc["PAYANN", "p99"] - mem.loc["PAYANN", "p99"]) <= 1e-9 * mem.loc["PAYANN", "p99"]
    code = at.code[-1].value  # the Reproduce-in-Python code reads the file in place, confined to the folder
    assert "DATA = 'cbp.parquet'" in code and "open_dataset(DATA, engine='duckdb'" in code and "confine=True" in code
    ns: dict = {}
    exec(compile(code, "<snippet>", "exec"), ns)
    assert ns["ds"].n == N and ns["profile"].table().loc["EMP", "max"] == mem.loc["EMP", "max"]


@pytest.mark.parametrize("path, words", [("../x.parquet", "may not leave the data folder"),
                                         ("/etc/passwd", "not absolute"),
                                         ("link.parquet", "outside the data folder"),
                                         ("nothing.parquet", "No data file")])
def test_nothing_outside_the_data_folder_can_be_named(at, folder, tmp_path, path, words):
    outside = tmp_path / "secret.parquet"
    pd.DataFrame({"x": [1.0]}).to_parquet(outside)
    link = folder / "link.parquet"
    if not link.exists():
        link.symlink_to(outside)
    assert "link.parquet" not in large.sources()  # a link leading out is not even listed
    at.text_input(key="large_path").set_value(path).run()
    at.button(key="large_connect_go").click().run()
    assert not at.exception
    assert at.error and words in at.error[0].value, at.error
    assert at.session_state["dataset"].name == "cbp_like" and not at.session_state.get("raw", {}).get("large")


def test_row_checks_and_fixes_run_in_the_engine(at):
    _connect(at, "messy.parquet", use=False)
    rid = at.session_state["raw"]["id"]
    at.multiselect(key=f"map_measures_{rid}").set_value(["sales"]).run()
    assert "Negative values in sales" not in texts(at)  # a role edit computes nothing
    at.button(key=f"apply_{rid}").click().run()  # "Check and use this table": the one check finds rows to fix
    t = texts(at)
    assert "3 row(s) have a missing" in t and "Negative values in sales" in t and "found rows to fix" in t
    assert at.session_state["dataset"].name == "cbp_like"
    at.checkbox(key=f"fix_missing_{rid}").check().run()
    at.radio(key=f"fix_neg_{rid}").set_value("shift").run()
    at.button(key=f"apply_{rid}").click().run()
    assert "No public constant is typed for 'sales'" in at.error[0].value  # refused before the engine works
    assert at.session_state["dataset"].name == "cbp_like"
    at.number_input(key=udata.shift_key(rid, "sales")).set_value(100.0).run()
    at.button(key=f"apply_{rid}").click().run()
    ds = at.session_state["dataset"]
    assert isinstance(ds, EngineDataset) and ds.n == 497 and ds.shifts == {"sales": 100.0}
    assert "sales shifted by +100 (public constant)" in texts(at)


def test_policy_designer_threshold_change_updates_the_records_cdf(at, folder):
    _connect(at, "cbp.parquet")
    at.switch_page("app_pages/policy_designer.py").run()
    assert not at.exception, at.exception
    ds = at.session_state["dataset"]
    pol = at.session_state["policy"]
    mem = _memory_twin(folder, ds)
    x0, y0 = preview_policy(mem, pol).record_cdf()
    tr = chart_traces(at, "cdf_records")[-1]
    assert np.allclose(tr["x"], x0) and np.allclose(np.asarray(tr["y"]) / 100.0, y0)
    # the owners' losses are computed on demand on a large table
    assert "Compute the owners' losses" in " ".join(t.label for t in at.toggle)
    at.number_input(key="thr_EMP").set_value(7.0).run()
    assert not at.exception, at.exception
    pol2 = at.session_state["policy"]
    assert dict(pol2.thresholds.rows[0][1])["EMP"] == 7.0
    x1, y1 = preview_policy(mem, pol2).record_cdf()
    tr = chart_traces(at, "cdf_records")[-1]
    assert np.allclose(tr["x"], x1) and np.allclose(np.asarray(tr["y"]) / 100.0, y1) and len(x1) != len(x0)
    at.toggle(key="policy_large_owners").set_value(True).run()
    own = chart_traces(at, "cdf_owners")[-1]
    assert np.allclose(own["x"], preview_policy(mem, pol2).owners.ecdf()[0])
    # the percentile suggestion reads the engine's order statistics
    at.button(key="sugg_pct_apply").click().run()
    assert not at.exception, at.exception
    assert at.session_state["thr_EMP"] >= float(np.quantile(mem.table["EMP"], 0.97))


def test_run_page_releases_the_same_answers_as_the_table_in_memory(at, folder):
    _connect(at, "cbp.parquet")
    at.switch_page("app_pages/run.py").run()
    at.button(key="run_go").click().run()
    assert not at.exception, at.exception
    rel = at.session_state["run_release"]
    assert rel.loss is None and rel.loss_distribution is not None
    ds = at.session_state["dataset"]
    ref = release(_memory_twin(folder, ds), at.session_state["run_policy"], rng=np.random.default_rng(0), reveal=True,
                  seed=0)
    assert np.allclose(rel.answers["estimate"].to_numpy(), ref.answers["estimate"].to_numpy(), rtol=1e-9)
    assert len(at.session_state["ledger"]) == 1
    assert chart_traces(at, "run_cdf_records")
    # the owners' realized losses of a large table are summed on demand, after the release
    assert "private_owner_realized_distribution" not in rel.extras
    assert not any(el.proto.id.endswith("run_cdf_owners") for el in at.get("plotly_chart"))
    assert "Compute the owners' realized losses" in texts(at)
    at.toggle(key="run_large_owners").set_value(True).run()
    assert not at.exception, at.exception
    realized = next(t for t in chart_traces(at, "run_cdf_owners") if t["name"] == "realized loss")
    want = ref.extras["private_owner_realized"].to_numpy()
    assert realized["x"] and want.min() * (1 - 1e-9) <= min(realized["x"]) <= max(realized["x"]) <= want.max()
    got = owner_realized_distribution(ds, rel)  # what the chart drew: the memory engine's numbers
    assert np.allclose(np.repeat(got.values, got.counts), np.sort(want), rtol=1e-9)
    assert len(at.session_state["ledger"]) == 1  # summing the owners' losses releases nothing


def test_tradeoffs_budget_functions_and_study_on_a_large_dataset(at, folder):
    _connect(at, "cbp.parquet")
    at.switch_page("app_pages/tradeoffs.py").run()
    assert not at.exception, at.exception
    assert chart_traces(at, "tr_sweep_chart") and chart_traces(at, "tr_sweep_cdf")
    at.switch_page("app_pages/budget_functions.py").run()
    assert not at.exception, at.exception
    assert "Sec. 5.2 sum extension" in texts(at)  # needs the records: offered on a sample
    at.button(key="bf_run").click().run()
    res = at.session_state["bf_result"]
    assert list(res["rows"]["mechanism"]) == ["PrDP framework (Alg. 2)", "naive ε̌"]
    assert res["skipped"] == ["PrDP extension (Sec. 5.2)"]
    at.button(key="large_sample_on_budget_functions").click().run()
    at.button(key="bf_run").click().run()
    assert not at.exception, at.exception
    rows = at.session_state["bf_result"]["rows"]
    assert "PrDP extension (Sec. 5.2) [sample of 100,000 rows asked]" in list(rows["mechanism"])
    labels = at.session_state["ledger"].summary()["release"].tolist()
    assert any("[uniform sample (100,000 rows asked) of cbp.parquet, seed 0]" in x for x in labels)
    at.switch_page("app_pages/study.py").run()
    assert not at.exception, at.exception
    cfg = yaml.safe_load(at.code[0].value)
    assert cfg["data"]["path"] == "cbp.parquet" and cfg["data"]["engine"] == "duckdb"
    assert cfg["data"]["schema"]["measures"] == ["EMP", "PAYANN", "PAYQTR1"]
    assert all("sum_extension" not in m.get("algorithms", []) for m in cfg["mechanisms"])
    at.button(key="study_build").click().run()
    assert not at.exception, at.exception
    assert at.session_state["study_outputs"]["releases"] >= 3
    # the config loads back into a fresh session: the same large dataset, read from the data folder
    fresh = open_page("study")
    fresh.text_area(key="study_paste").set_value(at.code[0].value).run()
    fresh.button(key="study_load_paste").click().run()
    assert not fresh.exception, fresh.exception
    assert fresh.session_state["dataset_source"]["kind"] == "large"
    assert fresh.session_state["dataset"] is at.session_state["dataset"]  # one server-wide dataset, same roles


def test_pages_that_need_the_records_work_on_a_labelled_sample(at):
    _connect(at, "cbp.parquet")
    at.switch_page("app_pages/personalized.py").run()
    assert not at.exception, at.exception
    assert "need the records themselves" in texts(at)
    assert at.session_state["dataset"].name == "cbp.parquet"
    at.number_input(key="large_sample_rows_personalized").set_value(1_000).run()
    at.button(key="large_sample_on_personalized").click().run()
    assert not at.exception, at.exception
    t = texts(at)
    assert "Working on a sample" in t and "uniform random sample of 1,000 rows of cbp.parquet" in t
    assert "This page works on a uniform sample of 1,000 rows" in t  # the sidebar says so too
    assert isinstance(at.session_state["dataset"], EngineDataset)  # the session keeps the whole table
    at.switch_page("app_pages/policy_designer.py").run()
    assert not at.exception and "Working on a sample" not in texts(at)


def test_review_mode_hides_the_large_tables_statistics(at):
    at.sidebar.radio(key="mode").set_value("review").run()
    _connect(at, "cbp.parquet")
    t = texts(at)
    assert "Hidden in review mode" in t and "4,000" not in t
    at.switch_page("app_pages/policy_designer.py").run()
    assert not at.exception and "Hidden in review mode" in texts(at)
    assert not [c for c in at.get("plotly_chart") if c.proto.id.endswith("cdf_records")]


def test_engine_work_is_not_refused_by_the_records_number(at, monkeypatch):
    monkeypatch.setenv("PRDP_SESSION_MEMORY_MB", "1")  # far below any row-count model of a release
    _connect(at, "cbp.parquet")
    at.switch_page("app_pages/run.py").run()
    at.button(key="run_go").click().run()
    assert not at.exception and at.session_state.get("run_error") is None
    monkeypatch.setenv("PRDP_SERVER_MEMORY_MB", "10")  # no room for the engine's memory limit: refused, said so
    at.button(key="run_go").click().run()
    assert "engine's work on a large table" in str(at.session_state["run_error"])


def test_a_session_on_a_large_dataset_is_restored_by_its_path_with_its_ledger(one_browser, at, folder):
    from prdp_core.board import sessions as S

    from .test_durable import _reopen

    _connect(at, "cbp.parquet")
    at.switch_page("app_pages/policy_designer.py").run()
    at.switch_page("app_pages/run.py").run()
    at.button(key="run_go").click().run()
    assert not at.exception, at.exception
    key = at.query_params[S.KEY_PARAM]
    again = _reopen(key)
    assert "cannot reopen" not in " ".join(again.first_texts)
    ds = again.session_state["dataset"]
    assert isinstance(ds, EngineDataset) and ds.engine.n_rows() == N  # read in place again, never uploaded
    assert len(again.session_state["ledger"]) == 1
    again.button(key="run_go").click().run()
    assert not again.exception, again.exception
    assert len(again.session_state["ledger"]) == 2
