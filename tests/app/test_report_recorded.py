"""The Study page's report renders the releases recorded in the session: building it never runs a mechanism again,
charges nothing, and says how the recorded releases were made (secure or seeded)."""

from __future__ import annotations

import io

import pandas as pd

from .conftest import open_page, texts, upload

CSV = ("acct,balance\n" + "".join(f"a{i},{i}\n" for i in range(1, 501))).encode()


def _secure_review_release():
    at = open_page("data")
    upload(at, "accounts.csv", CSV)
    at.switch_page("app_pages/run.py").run()
    at.session_state["mode"] = "review"
    at.run()
    at.number_input(key="run_pub_balance").set_value(600.0).run()
    at.button(key="run_pub_apply").click().run()
    at.toggle(key="run_secure").set_value(True).run()
    at.button(key="run_go").click().run()
    assert not at.exception, at.exception
    rel = at.session_state["run_release"]
    assert rel.secure
    return at, rel


def _build(at) -> dict:
    at.button(key="study_build").click().run()
    assert not at.exception, at.exception
    return at.session_state["study_outputs"]


def test_report_built_twice_renders_the_recorded_secure_release_and_charges_nothing():
    at, rel = _secure_review_release()
    charged = len(at.session_state["ledger"])
    at.switch_page("app_pages/study.py").run()
    assert not at.exception, at.exception
    first = _build(at)
    second = _build(at)
    assert len(at.session_state["ledger"]) == charged  # building the report released nothing
    assert first["results"] == second["results"]
    res = pd.read_csv(io.BytesIO(first["results"]))
    assert res["estimate"].tolist() == rel.answers["estimate"].tolist()  # the numbers of the recorded release
    assert res["secure"].all()
    html = first["html"].decode()
    assert "Seeded run" not in html and "Secure release" in html
    shown = texts(at)
    assert "Seeded run" not in shown and "Secure release" in shown


def test_without_a_recorded_release_the_report_runs_once_and_records_it():
    at = open_page("policy_designer")
    at.switch_page("app_pages/study.py").run()
    assert "No release of this study's mechanisms is recorded" in texts(at)
    before = len(at.session_state.get("ledger") or [])
    first = _build(at)
    charged = len(at.session_state["ledger"])
    assert charged > before  # the releases the report renders are in the ledger
    assert "No release of this study's mechanisms is recorded" not in texts(at)
    second = _build(at)
    assert len(at.session_state["ledger"]) == charged and first["results"] == second["results"]
    assert "Seeded run (seed 0)" in first["html"].decode()


def test_a_release_of_settings_changed_since_is_not_rendered_as_the_study():
    at, _ = _secure_review_release()
    at.toggle(key="run_secure").set_value(False).run()  # the study now says seeded: the secure release is not its
    at.switch_page("app_pages/study.py").run()
    assert not at.exception, at.exception
    assert "No release of this study's mechanisms is recorded" in texts(at)
    at.switch_page("app_pages/run.py").run()
    at.toggle(key="run_secure").set_value(True).run()
    at.switch_page("app_pages/study.py").run()
    assert "No release of this study's mechanisms is recorded" not in texts(at)
    assert at.button(key="study_build").proto.label == "Build the report"
