"""Thresholds computed from the data are labelled on the pages, carried by the policy and its exports, and a
secure release in review mode refuses them until public values are typed in."""

from __future__ import annotations

import yaml

from prdp_core.core.provenance import DATA_DERIVED_COLUMN

from .conftest import open_page, texts, upload

# balances 1 … 500: the 99th percentile is 495.01, so the page's default threshold is 500 (rounded)
CSV = ("acct,balance\n" + "".join(f"a{i},{i}\n" for i in range(1, 501))).encode()


def _uploaded(page: str):
    at = open_page("data")
    upload(at, "accounts.csv", CSV)
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, at.exception
    return at


def test_default_thresholds_of_an_upload_are_labelled_as_computed_from_the_data():
    at = _uploaded("policy_designer")
    assert at.number_input(key="thr_balance").value == 500.0
    assert "computed from the data (p99 (rounded))" in texts(at)
    assert "Computed from the confidential data:** T(balance) = 500 (p99 (rounded))" in texts(at)
    assert at.session_state["policy"].threshold_sources() == {"balance": "data: p99 (rounded)"}
    assert "computed from the data: T(balance)" in at.session_state["policy_summary"]  # the sidebar
    # typing another value makes it a typed (public) value
    at.number_input(key="thr_balance").set_value(800.0).run()
    assert at.session_state["policy"].threshold_sources() == {}
    assert "computed from the data" not in texts(at)
    # a suggestion is flagged with how it was computed; confirming it as public clears the flag
    at.slider(key="sugg_pct").set_value(90.0).run()
    at.button(key="sugg_pct_apply").click().run()
    assert at.session_state["policy"].threshold_sources() == {"balance": "data: p90"}
    at.button(key="policy_confirm_public").click().run()
    assert at.session_state["policy"].threshold_sources() == {} and at.number_input(key="thr_balance").value == 451


def test_secure_review_release_is_refused_then_runs_with_typed_thresholds():
    at = _uploaded("run")
    at.session_state["mode"] = "review"
    at.run()
    assert "Thresholds computed from the confidential data:** T(balance) = 500 (p99 (rounded))" in texts(at)
    at.toggle(key="run_secure").set_value(True).run()
    at.button(key="run_go").click().run()
    assert not at.exception, at.exception
    assert "A secure release cannot use splitting thresholds computed from the confidential data" in texts(at)
    assert at.session_state.get("run_release") is None and len(at.session_state["ledger"]) == 0
    # the typed-in route
    at.number_input(key="run_pub_balance").set_value(600.0).run()
    at.button(key="run_pub_apply").click().run()
    pol = at.session_state["policy"]
    assert pol.thresholds.as_dict()["*"] == {"balance": 600.0} and pol.threshold_sources() == {}
    assert "Thresholds computed from the confidential data" not in texts(at)
    at.button(key="run_go").click().run()
    assert not at.exception, at.exception
    rel = at.session_state["run_release"]
    assert rel.secure and rel.params["policy"].get("threshold_source") is None
    at.switch_page("app_pages/policy_designer.py")
    at.run()
    assert at.number_input(key="thr_balance").value == 600.0 and "computed from the data" not in texts(at)


def test_teaching_release_keeps_the_flag_in_the_ledger_and_the_answers_csv():
    from ui.run import answers_export

    at = _uploaded("run")
    at.button(key="run_go").click().run()
    rel = at.session_state["run_release"]
    assert "T(balance): data: p99 (rounded)" in texts(at)
    assert at.session_state["ledger"].summary()[DATA_DERIVED_COLUMN].tolist() == ["T(balance): data: p99 (rounded)"]
    csv = answers_export(rel, teaching=True)
    assert {"true", "error", "app mode", "secure", "seed", DATA_DERIVED_COLUMN} <= set(csv.columns)
    assert set(csv["app mode"]) == {"teaching"} and set(csv["seed"]) == {0} and not csv["secure"].any()
    review = answers_export(rel, teaching=False)
    assert not {"true", "error"} & set(review.columns) and set(review["app mode"]) == {"review"}


def test_the_flag_round_trips_through_the_study_config():
    at = _uploaded("policy_designer")  # the study holds the policy once a page has made it
    at.switch_page("app_pages/study.py")
    at.run()
    text = next(c.value for c in at.code if c.value.startswith("# PrDP Explorer study"))  # the config preview
    cfg = yaml.safe_load(text)
    assert cfg["policy"]["threshold_source"] == {"balance": "data: p99 (rounded)"}
    # a fresh session loads it back (with the file) and the Policy designer shows the flag again
    fresh = open_page("study")
    fresh.file_uploader(key="study_data_upload").set_value(("accounts.csv", CSV, "text/csv"))
    fresh.text_area(key="study_paste").set_value(text).run()
    fresh.button(key="study_load_paste").click().run()
    assert not fresh.exception, fresh.exception
    assert "Loaded the study" in texts(fresh), texts(fresh)
    assert fresh.session_state["policy"].threshold_sources() == {"balance": "data: p99 (rounded)"}
    fresh.switch_page("app_pages/policy_designer.py")
    fresh.run()
    assert "computed from the data (p99 (rounded))" in texts(fresh)
    # without the key the thresholds load as typed values (configs written before load as they did)
    del cfg["policy"]["threshold_source"]
    again = open_page("study")
    again.file_uploader(key="study_data_upload").set_value(("accounts.csv", CSV, "text/csv"))
    again.text_area(key="study_paste").set_value(yaml.safe_dump(cfg)).run()
    again.button(key="study_load_paste").click().run()
    assert not again.exception and "Loaded the study" in texts(again), texts(again)
    assert again.session_state["policy"].threshold_sources() == {}
