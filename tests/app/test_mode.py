"""The mode is sticky (ui.mode): review mode is left for teaching mode only by the reader's confirmed choice in
the sidebar, never by a study import. The other routes that load a config — a share link, a board entry, a
restored session — are checked with their pages' tests (test_board.py, test_durable.py)."""

from __future__ import annotations

from .conftest import open_page, texts

TEACHING_STUDY = """
version: 1
mode: teaching
seed: 3
data: {sample: cbp_like, n: 4000, seed: 1}
policy:
  thresholds: {EMP: 50, PAYANN: 5000, PAYQTR1: 2000}
workload:
  queries:
    - {kind: count, group_by: [STATE], rho: 0.5}
mechanisms:
  - {kind: unit_splitting}
"""


def _review_session(page: str = "study"):
    at = open_page(page)
    at.sidebar.radio(key="mode").set_value("review").run()
    assert at.session_state["mode"] == "review" and not at.exception
    return at


def test_a_teaching_study_imported_into_a_review_session_stays_in_review_and_says_so():
    at = _review_session()
    at.text_area(key="study_paste").set_value(TEACHING_STUDY).run()
    at.button(key="study_load_paste").click().run()
    assert not at.exception, at.exception
    assert at.session_state["thr_EMP"] == 50 and at.session_state["seed"] == 3  # the study was loaded
    assert at.session_state["mode"] == "review"
    shown = texts(at)
    assert "cbp_like" in shown and "review mode, seed 3" in shown
    assert "This session stays in review mode: the study's config is in teaching mode" in shown
    at.switch_page("app_pages/policy_designer.py").run()
    assert "Hidden in review mode" in texts(at)


def test_a_teaching_session_takes_the_mode_of_the_study_it_imports():
    at = open_page("study")
    at.text_area(key="study_paste").set_value(TEACHING_STUDY.replace("mode: teaching", "mode: review")).run()
    at.button(key="study_load_paste").click().run()
    assert at.session_state["mode"] == "review" and "stays in review mode" not in texts(at)


def test_choosing_teaching_mode_in_review_asks_for_a_confirmation():
    at = _review_session("policy_designer")
    at.sidebar.radio(key="mode").set_value("teaching").run()
    assert not at.exception, at.exception
    assert at.session_state["mode"] == "review"  # not yet: the page still hides the records' statistics
    assert "Hidden in review mode" in texts(at) and "Show the true values?" in texts(at)
    at.sidebar.button(key="mode_stay_review").click().run()
    assert at.session_state["mode"] == "review" and "Show the true values?" not in texts(at)

    at.sidebar.radio(key="mode").set_value("teaching").run()
    at.sidebar.button(key="mode_confirm_teaching").click().run()
    assert not at.exception, at.exception
    assert at.session_state["mode"] == "teaching" and at.sidebar.radio(key="mode").value == "teaching"
    assert "Show the true values?" not in texts(at) and "Hidden in review mode" not in texts(at)

    at.sidebar.radio(key="mode").set_value("review").run()  # entering review mode needs no confirmation
    assert at.session_state["mode"] == "review" and "Show the true values?" not in texts(at)
