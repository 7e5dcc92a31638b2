"""AppTest of the large-dataset flow's roles: an id column guessed as the record id and never offered as a measure,
role edits that compute nothing, one check of the roles chosen (served from the result cache in a new session),
the flow's buttons disabled while a step runs, a failed step's message and way on, and the server's queue of heavy
steps (ui.large_roles, ui.memory.heavy_step)."""

from __future__ import annotations

import threading

import duckdb
import numpy as np
import pandas as pd
import pytest
import streamlit as st

from prdp_core.data.heavy_steps import QUEUE
from prdp_core.data.loading import GENERATED_ID
from prdp_core.engines import EngineDataset
from prdp_core.engines import result_cache as rc
from prdp_core.engines.duckdb_engine import DuckDBEngine
from ui import data as udata
from ui import large
from ui.common import md_escape

from .conftest import open_page, texts

pytestmark = pytest.mark.xdist_group("large")

N = 3_000
OOM = "Out of Memory Error: failed to allocate data of size 256.0 MiB (1.5 GiB/1.8 GiB used)"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """An agency-like table: a shuffled unique integer id EID, two skewed measures, a state and a firm owner."""
    data = tmp_path_factory.mktemp("agency-data")
    rng = np.random.default_rng(5)
    pd.DataFrame({"EID": rng.permutation(N) * 7 + 100_000, "EMP": np.floor(rng.pareto(1.2, N) * 10) + 1,
                  "PAY": rng.pareto(1.1, N) * 30_000, "STATE": rng.choice(["CA", "NY", "TX", "WA"], N),
                  "FIRM": rng.integers(0, N // 3, N)}).to_parquet(data / "agency.parquet")
    return data


@pytest.fixture
def at(folder, monkeypatch):
    monkeypatch.setenv("PRDP_DATA_DIR", str(folder))
    monkeypatch.setenv("PRDP_SERVER_MEMORY_MB", "18000")  # the shares below are those of an 18 GB server
    monkeypatch.delenv("PRDP_DUCKDB_MEMORY_LIMIT", raising=False)
    monkeypatch.delenv("PRDP_HEAVY_STEPS", raising=False)
    return open_page("data")


@pytest.fixture
def queries(monkeypatch):
    """The SQL the DuckDB engines run (not answered by the result cache)."""
    ran: list[str] = []
    real = DuckDBEngine._run

    def run(self, sql, params):
        ran.append(sql)
        return real(self, sql, params)

    monkeypatch.setattr(DuckDBEngine, "_run", run)
    return ran


def _connect(at):
    at.selectbox(key="large_file").set_value("agency.parquet").run()
    at.button(key="large_connect_go").click().run()
    assert not at.exception, at.exception
    return at.session_state["raw"]["id"]


def _raw_engine(at):
    """The engine over the connected (not yet used) table."""
    from ui import large_roles

    return large_roles.raw_engine(at.session_state["raw"])


def _selects(sql: list[str]) -> list[str]:
    return [s for s in sql if s.lstrip().upper().startswith(("SELECT", "WITH"))]


def test_an_id_column_is_guessed_as_the_record_id_and_never_offered_as_a_measure(at):
    rid = _connect(at)
    assert at.selectbox(key=f"map_id_{rid}").value == "EID"
    assert at.selectbox(key=f"map_owner_{rid}").value == "FIRM"
    measures = at.multiselect(key=f"map_measures_{rid}")
    assert measures.value == ["EMP", "PAY"] and "EID" not in measures.options
    at.selectbox(key=f"map_id_{rid}").set_value(None).run()  # a generated id: EID is still no measure
    assert "EID" not in at.multiselect(key=f"map_measures_{rid}").options


def test_roles_given_with_an_id_like_measure_keep_it_offered(at):
    """Roles that come with the table (a study's, a restored session's) may name an id-like column as a measure:
    the editor offers it (a choice it does not offer would stop the page)."""
    from prdp_core.data import Schema

    rid = _connect(at)
    raw = at.session_state["raw"]
    at.session_state["raw"] = {**raw, "schema": Schema(id_col=None, measures=("EMP", "EID"), groups=(),
                                                       owner_col="FIRM")}
    at.run()
    assert not at.exception, at.exception
    measures = at.multiselect(key=f"map_measures_{rid}")
    assert "EID" in measures.options and "PAY" in measures.options


def test_role_edits_check_nothing_and_one_check_makes_the_table_active(at, queries, monkeypatch, tmp_path):
    monkeypatch.setenv(rc.ENV_CACHE_DIR, str(tmp_path / "cache"))  # the app's result cache, as in production
    rid = _connect(at)
    queries.clear()
    at.multiselect(key=f"map_groups_{rid}").set_value([]).run()
    at.multiselect(key=f"map_measures_{rid}").set_value(["EMP"]).run()
    at.multiselect(key=f"map_measures_{rid}").set_value(["EMP", "PAY"]).run()
    at.multiselect(key=f"map_groups_{rid}").set_value(["STATE"]).run()
    assert queries == []  # four role edits: nothing computed
    assert "The roles are not checked yet" in texts(at)
    button = at.button(key=f"apply_{rid}")
    assert button.label == "Check and use this table" and not button.disabled
    button.click().run()
    assert not at.exception, at.exception
    ds = at.session_state["dataset"]
    assert isinstance(ds, EngineDataset) and ds.name == "agency.parquet" and ds.schema.id_col == "EID"
    assert ds.n == N and at.session_state["data_tab"] == udata.PROFILE_TAB
    assert "Active dataset: agency.parquet" in texts(at)
    statements = _selects(queries)
    assert statements and len(statements) == len(set(statements))  # one check: no statement ran twice
    # a new session on the unchanged file: the check, the preparation and the profile come from the cache on disk
    rc.clear(memory_only=True)
    queries.clear()
    again = open_page("data")
    rid2 = _connect(again)
    again.button(key=f"apply_{rid2}").click().run()
    assert not again.exception, again.exception
    assert again.session_state["dataset"].schema.id_col == "EID"
    assert _selects(queries) == []


def test_the_flows_buttons_are_disabled_while_a_check_runs(at, monkeypatch):
    rid = _connect(at)

    def still_running(self, schema):
        st.stop()  # the page as it stands while the engine counts: the run ends here

    monkeypatch.setattr(DuckDBEngine, "check", still_running)
    at.button(key=f"apply_{rid}").click().run()
    assert at.button(key="large_connect_go").disabled  # no stale Connect
    assert at.button(key=f"apply_{rid}").disabled  # nor Check and use this table
    assert at.multiselect(key=f"map_measures_{rid}").disabled and at.selectbox(key=f"map_id_{rid}").disabled
    monkeypatch.undo()


def test_a_check_out_of_memory_says_what_to_change_keeps_the_roles_and_offers_a_way_on(at, monkeypatch):
    rid = _connect(at)
    at.multiselect(key=f"map_measures_{rid}").set_value(["PAY"]).run()
    real = DuckDBEngine.check

    def out_of_memory(self, schema):
        if schema.id_col is not None:
            raise self._out_of_memory(duckdb.OutOfMemoryException(OOM))
        return real(self, schema)

    monkeypatch.setattr(DuckDBEngine, "check", out_of_memory)
    at.button(key=f"apply_{rid}").click().run()
    assert not at.exception, at.exception
    err = at.error[0].value
    assert "DuckDB ran out of memory within its limit of 1907MiB" in err  # the 2GB default, within its share
    assert "asked for 256.0 MiB more with 1.5 GiB of 1.8 GiB in use" in err  # what the step asked for, measured
    assert "PRDP_DUCKDB_MEMORY_LIMIT=3814MiB" in err and "GB free" in err  # what the operator can change
    assert at.session_state["dataset"].name == "cbp_like"  # nothing changed
    assert at.multiselect(key=f"map_measures_{rid}").value == ["PAY"]  # the roles chosen stay
    assert not at.button(key=f"apply_{rid}").disabled and not at.button(key="large_connect_go").disabled
    at.button(key="large_retry").click().run()  # the same step again: the same message, nothing lost
    assert "ran out of memory" in at.error[0].value and at.multiselect(key=f"map_measures_{rid}").value == ["PAY"]
    at.button(key="large_generated_id").click().run()  # the way on: ids from row numbers
    assert not at.exception, at.exception
    ds = at.session_state["dataset"]
    assert isinstance(ds, EngineDataset) and ds.schema.id_col == GENERATED_ID and ds.schema.measures == ("PAY",)
    assert at.session_state["map_id_" + rid] is None


def test_a_check_waits_for_the_servers_heavy_steps_then_runs(at, monkeypatch):
    monkeypatch.setenv("PRDP_HEAVY_STEPS", "1")
    rid = _connect(at)
    held, done = threading.Event(), threading.Event()

    def other_session() -> None:
        with QUEUE.slot():
            held.set()
            done.wait(1.5)  # another session's release

    said: list[str] = []  # the stages a status names (ui.large.stats escapes each one)
    monkeypatch.setattr(large, "md_escape", lambda text: said.append(str(text)) or md_escape(text))
    t = threading.Thread(target=other_session)
    t.start()
    assert held.wait(10)
    at.button(key=f"apply_{rid}").click().run()
    t.join(10)
    assert not at.exception, at.exception
    waiting = [x for x in said if x.startswith("waiting for 1 other heavy step on this server to finish")]
    assert waiting and said.index(waiting[0]) < said.index(next(x for x in said if x.startswith("counting missing")))
    assert at.session_state["dataset"].name == "agency.parquet"  # it waited, then ran: never refused
    assert QUEUE.running == 0


def test_the_apps_engine_works_within_a_heavy_steps_share_and_a_failure_names_the_settings(at, monkeypatch):
    from prdp_core.core.errors import ResourceLimitError
    from ui import memory as umem

    monkeypatch.setenv("PRDP_DUCKDB_MEMORY_LIMIT", "8GB")  # asked 7,629 MiB; an 18 GB server's share for 2 steps
    rid = _connect(at)
    eng = _raw_engine(at)
    assert at.session_state["raw"]["id"] == rid and eng.options.memory_limit == "4500MiB"
    (setting,) = eng.con.execute("SELECT current_setting('memory_limit')").fetchone()
    assert setting.startswith("4.3 GiB")  # DuckDB itself holds the step to its share
    note = umem.operator_note(eng._out_of_memory(duckdb.OutOfMemoryException(OOM)))
    assert "limit of 4.4 GiB" in note and "share of the server's 17.6 GiB (PRDP_SERVER_MEMORY_MB)" in note
    assert "PRDP_HEAVY_STEPS=1 gives 7.5 GiB" in note
    assert umem.operator_note(ResourceLimitError("The server is short of memory.")) == ""  # not the engine's


def test_a_preparation_that_fails_returns_to_the_roles_with_a_way_on(at, monkeypatch):
    rid = _connect(at)
    real = large.open_source

    def fails(source):
        raise _raw_engine(at)._out_of_memory(duckdb.OutOfMemoryException(OOM))

    monkeypatch.setattr(large, "open_source", fails)
    at.button(key=f"apply_{rid}").click().run()  # the check passes, the preparation runs out of memory
    assert not at.exception, at.exception
    assert at.session_state["data_tab"] == udata.ROLES_TAB and "ran out of memory" in at.error[0].value
    assert at.session_state["dataset"].name == "cbp_like"
    assert at.button(key=f"apply_{rid}").label == "Use this table"  # checked once: not checked again
    monkeypatch.setattr(large, "open_source", real)
    at.button(key="large_retry").click().run()
    assert not at.exception, at.exception
    assert at.session_state["dataset"].name == "agency.parquet"
    assert at.session_state["data_tab"] == udata.PROFILE_TAB


def test_a_release_out_of_memory_names_the_settings_and_the_run_button_tries_again(at, monkeypatch):
    from ui import run as urun

    rid = _connect(at)
    at.button(key=f"apply_{rid}").click().run()
    eng = at.session_state["dataset"].engine
    at.switch_page("app_pages/run.py").run()
    real = urun.release

    def out_of_memory(*args, **kwargs):
        raise eng._out_of_memory(duckdb.OutOfMemoryException(OOM))

    monkeypatch.setattr(urun, "release", out_of_memory)
    at.button(key="run_go").click().run()
    assert not at.exception, at.exception
    t = texts(at)
    assert "ran out of memory" in at.error[0].value and "PRDP_DUCKDB_MEMORY_LIMIT=3814MiB" in t
    assert "**Run release** tries again" in t, t
    assert len(at.session_state["ledger"]) == 0
    monkeypatch.setattr(urun, "release", real)
    at.button(key="run_go").click().run()
    assert not at.exception and at.session_state.get("run_error") is None and len(at.session_state["ledger"]) == 1
