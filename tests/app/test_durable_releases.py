"""The releases the Study page's report renders are saved with the durable session: after a restart the restored
session builds the same report (answers, parameters, ledger) without running a mechanism or charging the ledger
again; stored releases of another form are refused with a note while the rest of the session is restored; the
report's "out of date" key names releases by their ledger entries, not by object ids."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from prdp_core.board import session_releases as SR
from prdp_core.board import sessions as S
from prdp_core.board.store import BoardStore

from .conftest import texts
from .test_durable import _designed_session, _reopen

pytestmark = pytest.mark.usefixtures("one_browser")  # every session of a test from one browser


def _build(at) -> dict:
    at.switch_page("app_pages/study.py").run()
    assert not at.exception, at.exception
    at.button(key="study_build").click().run()
    assert not at.exception, at.exception
    return at.session_state["study_outputs"]


def _engine() -> sa.Engine:
    return BoardStore(f"sqlite:///{Path(os.environ['PRDP_WORKSHOP_DIR']) / 'board.sqlite'}").engine


def test_a_restored_session_builds_the_same_report_from_its_recorded_releases_and_charges_nothing():
    first = _designed_session()
    key = first.query_params[S.KEY_PARAM]
    before = _build(first)
    assert len(first.session_state["ledger"]) == 2  # the report ran nothing: the Run page's release is the study's

    again = _reopen(key, page="study")
    uids = list(again.session_state["ledger_uids"])
    assert again.button(key="study_build").proto.label == "Build the report"  # the recorded release is there
    after = _build(again)
    assert len(again.session_state["ledger"]) == 2 and again.session_state["ledger_uids"] == uids  # nothing charged
    assert after["results"] == before["results"] and after["budget_csv"] == before["budget_csv"]
    assert after["how"] == before["how"] and after["releases"] == before["releases"] == 1
    res = pd.read_csv(io.BytesIO(after["results"]))
    assert res["estimate"].tolist() == pd.read_csv(io.BytesIO(before["results"]))["estimate"].tolist()
    (rel,) = [r for _, r in again.session_state["recorded_releases"]["run"]["releases"]]
    assert all(any(e is x for x in again.session_state["ledger"].entries) for e in rel.entries)  # the ledger's own


def test_malformed_stored_releases_are_refused_with_a_note_and_the_rest_of_the_session_is_restored():
    first = _designed_session()
    key = first.query_params[S.KEY_PARAM]
    eng = _engine()
    with eng.begin() as conn:
        text = conn.execute(sa.select(SR.session_releases.c.payload)).scalar()
        d = json.loads(text)
        d["parts"]["run"]["releases"][0]["answers"]["rows"][0][0] = {"__reduce__": "os.system"}  # not a scalar
        d["parts"]["run"]["releases"][0]["answers"]["columns"][0]["type"] = "pickle"
        conn.execute(SR.session_releases.update().values(payload=json.dumps(d)))
    again = _reopen(key, page="study")
    assert "The releases recorded for the Study page's report are not restored" in again.first_texts
    assert "has an unknown type" in again.first_texts
    assert "Restored your saved session" in again.first_texts and len(again.session_state["ledger"]) == 2
    assert again.session_state["thr_sales"] == 250.0  # the design is restored all the same
    assert "No release of this study's mechanisms is recorded" in texts(again)


def test_the_report_is_out_of_date_when_its_releases_name_other_ledger_entries_even_as_the_same_object():
    at = _designed_session()
    _build(at)
    assert "Report built" in texts(at)
    kept = dict(at.session_state["recorded_releases"])
    run = dict(kept["run"])
    run["uids"] = [("0" * 32,)]  # another release (other ledger entries) in an object with the same id
    kept["run"] = run
    at.session_state["recorded_releases"] = kept
    at.run()
    assert "The study or its recorded releases changed since the last report" in texts(at)


def test_the_report_is_current_for_the_same_ledger_entries_in_another_object():
    from dataclasses import replace

    at = _designed_session()
    _build(at)
    kept = dict(at.session_state["recorded_releases"])
    run = dict(kept["run"])
    run["releases"] = [(label, replace(rel)) for label, rel in run["releases"]]  # a copy: the same releases
    kept["run"] = run
    at.session_state["recorded_releases"] = kept
    at.run()
    assert "Report built" in texts(at)


def test_a_labs_result_kept_with_the_releases_is_not_a_report_release_and_is_not_said_unsaved():
    at = _designed_session()
    at.switch_page("app_pages/concepts.py").run()
    at.radio(key="hl_source").set_value("dataset").run()
    at.multiselect(key="hl_columns").set_value(["sales"]).run()
    at.button(key="hl_run").click().run()
    assert not at.exception, at.exception
    assert "concepts" in at.session_state["recorded_releases"]  # the lab's result, on the active table
    at.run()  # what the save after the click found is said on the next run
    assert "durable_problem" not in at.session_state and "not saved for the report" not in texts(at)
    with _engine().begin() as conn:
        stored = json.loads(conn.execute(sa.select(SR.session_releases.c.payload)).scalar())
    assert set(stored["parts"]) == {"run"}


def test_releases_over_the_size_cap_are_left_out_and_the_pages_say_so(monkeypatch):
    monkeypatch.setattr(SR, "MAX_RELEASES_JSON", 200)
    at = _designed_session()
    at.run()  # what the save after the release found is said on the next run
    t = texts(at)
    assert "The recorded releases of run are not saved for the report" in t and "0.0002 MB" in t
    with _engine().begin() as conn:
        assert json.loads(conn.execute(sa.select(SR.session_releases.c.payload)).scalar())["parts"] == {}
    assert len(at.session_state["ledger"]) == 2  # the ledger entries are saved all the same
