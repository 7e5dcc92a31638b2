"""Analyst tiers page at edge values: empty coalition, huge clipping bound."""

from __future__ import annotations

from .conftest import open_page, texts


def test_empty_coalition_says_which_tiers_are_shown():
    at = open_page("analyst_tiers")
    at.multiselect(key="mt_coalition").set_value([]).run()
    assert not at.exception, at.exception
    assert "No tier is selected" in texts(at)


def test_huge_clipping_bound_gives_a_message():
    at = open_page("analyst_tiers")
    at.radio(key="mt_query").set_value("sum").run()
    at.number_input(key="mt_clip").set_value(1e300).run()
    assert not at.exception, at.exception
    assert any("clipping bound U" in e.value for e in at.error)
    at.number_input(key="mt_clip").set_value(100.0).run()  # the page recovers
    assert not at.error and not at.exception


def _edit_public_tier(at, eps):
    key = f"mt_tiers_editor_{at.session_state['mt_editor_version']}"
    at.session_state[key] = {"edited_rows": {0: {"eps": eps}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert "**public** ε = 3" in texts(at)


def test_edited_tiers_survive_another_page_and_are_exported():
    at = open_page("analyst_tiers")
    _edit_public_tier(at, 3.0)
    at.switch_page("app_pages/study.py")
    at.run()
    at.run()  # a second run of the other page (Streamlit has dropped the editor's state by now)
    yaml_text = next(c.value for c in at.code if "version: 1" in c.value)
    assert "public: 3.0" in yaml_text
    at.switch_page("app_pages/analyst_tiers.py")
    at.run()
    assert not at.exception, at.exception
    assert "**public** ε = 3" in texts(at)
    at.run()  # edits are applied once, not again on every rerun
    assert "**public** ε = 3" in texts(at) and "**researchers** ε = 2" in texts(at)


def test_a_preset_replaces_edited_tiers():
    at = open_page("analyst_tiers")
    _edit_public_tier(at, 3.0)
    at.switch_page("app_pages/study.py")
    at.run()
    at.switch_page("app_pages/analyst_tiers.py")
    at.run()
    at.selectbox(key="mt_preset").set_value("Two tiers far apart: 5 and 0.1").run()
    at.button(key="mt_preset_apply").click().run()
    assert "**insiders** ε = 5" in texts(at) and "public" not in texts(at).split("Tiers are ordered")[1][:200]
