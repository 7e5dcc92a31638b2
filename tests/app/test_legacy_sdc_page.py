"""AppTest of the Run page's comparison with today's methods: cell suppression and noise infusion beside the
policy's release — every cell in teaching mode, only the number of cells withheld in review mode."""

from __future__ import annotations

from .conftest import open_page, texts


def _compare(at):
    at.button(key="legacy_go").click()
    at.run()
    assert not at.exception, at.exception
    return at


def _frames(at):
    return [df.value for df in at.dataframe]


def test_teaching_mode_sets_each_method_beside_the_release():
    at = open_page("run")
    at.button(key="run_go").click()
    at.run()
    at = _compare(at)
    result = at.session_state["legacy_result"]
    rel = result["release"]
    assert rel.entries == () and rel.truth_included
    assert len(at.session_state["ledger"]) == 1  # the comparison adds nothing to the ledger
    summaries = [df for df in _frames(at) if "method" in df.columns]
    assert summaries, texts(at)
    methods = list(summaries[-1]["method"])
    assert methods[:2] == ["cell suppression", "noise infusion"] and methods[2].startswith("DP")
    assert any({"suppression", "noise_flag", "dp_estimate"} <= set(df.columns) for df in _frames(at))
    assert "Confidential" in texts(at)


def test_review_mode_shows_only_how_many_cells_each_method_withholds():
    at = open_page("run")
    at.sidebar.radio(key="mode").set_value("review")
    at.run()
    at = _compare(at)
    rel = at.session_state["legacy_result"]["release"]
    assert not rel.truth_included and "private_legacy" not in rel.extras
    counts = [df for df in _frames(at) if "withheld" in df.columns]
    assert counts and set(counts[-1]["method"]) == {"cell suppression"}  # no noise drawn in review mode
    for df in _frames(at):
        assert not {"true", "suppression", "noisy", "noise_flag", "owners"} & set(df.columns)
    assert "Hidden in review mode:** which cells cell suppression and noise infusion would withhold" in texts(at)


def test_a_teaching_comparison_seen_after_switching_to_review_mode_shows_counts_only():
    at = open_page("run")
    at = _compare(at)
    assert at.session_state["legacy_result"]["release"].truth_included
    at.sidebar.radio(key="mode").set_value("review")
    at.run()
    assert not at.exception, at.exception
    assert [df for df in _frames(at) if "withheld" in df.columns]
    for df in _frames(at):
        assert not {"true", "suppression", "suppression_value", "noisy", "noise_flag", "owners"} & set(df.columns)


def test_impossible_rules_leave_a_message_and_the_page_intact():
    at = open_page("run")
    at.number_input(key="legacy_low").set_value(0.5)
    at.number_input(key="legacy_high").set_value(0.2)
    at = _compare(at)
    assert "is not 0 ≤ low ≤ high < 1" in texts(at)
    at.number_input(key="legacy_high").set_value(0.6)
    at = _compare(at)
    assert isinstance(at.session_state["legacy_result"], dict)  # fixed: the comparison is made
