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
