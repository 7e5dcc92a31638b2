"""Personalized DP page: the note on the query's design defaults says where each one comes from (the same rule
that set it), and Sample's answer comes with its bias, quantified, wherever it is shown."""

from __future__ import annotations

from prdp_core.mechanisms import personalized

from .conftest import open_page, texts


def _defaults_warning(at) -> str:
    (w,) = [w.value for w in at.warning if "Design defaults" in w.value]
    return w


def test_the_cutoff_is_described_as_the_constant_it_is_not_as_a_percentile():
    at = open_page("personalized")
    assert at.session_state["pdp_cutoff"] == 10.0
    w = _defaults_warning(at)
    assert "**the count cut-off 10** is a fixed 10 or 1, chosen by the column's 99th percentile" in w
    hi = at.session_state["pdp_hi"]
    assert f"**the upper bound hi = {hi:g}** is the column's 99th percentile (rounded up" in w
    assert "were computed from the confidential data** (the column's 99th percentile, rounded up)" not in w
    at.radio(key="pdp_view").set_value("Run a release").run()
    at.button(key="pdp_run").click().run()  # a count: its cut-off is flagged in the release with its own origin
    assert not at.exception, at.exception
    note = at.session_state["ledger"].entries[-1].params["cutoff_source"]
    assert note.startswith("data: a fixed 10 or 1, chosen by the column's 99th percentile")


def test_the_note_and_the_value_come_from_one_rule(monkeypatch):
    """Change the rule: the value the page sets and the words it shows change together."""
    from prdp_core.mechanisms.personalized import DesignDefault

    monkeypatch.setitem(personalized.DESIGN_DEFAULTS, "cutoff",
                        DesignDefault("cutoff", "the count cut-off {:g}", lambda p99: 7.0, "a fixed 7", "always"))
    at = open_page("personalized")
    assert at.session_state["pdp_cutoff"] == 7.0
    assert "**the count cut-off 7** is a fixed 7 (always)" in _defaults_warning(at)


def test_samples_bias_is_stated_with_its_answer_in_both_modes():
    at = open_page("personalized")
    at.radio(key="pdp_view").set_value("Run a release").run()
    for mode in ("teaching", "review"):
        at.sidebar.radio(key="mode").set_value(mode).run()
        at.button(key="pdp_run").click().run()
        assert not at.exception, at.exception
        rel = at.session_state["pdp_last_release"]
        assert rel.params["mechanism"].startswith("Sample")
        share = 1 + rel.params["expected_bias"]
        assert 0.2 < share < 0.45  # the default tiers keep about 31% of the tuples: the count is ~ −69%
        (w,) = [w.value for w in at.warning if w.value.startswith("Biased low")]
        assert w.startswith(f"Biased low: on average its count is about {share:.0%} of the true one "
                            f"(−{(1 - share) * 100:.0f}%)")
        assert "mean π over the public roster" in w
    at.checkbox(key="pdp_rel_rescale").check().run()  # rescaled: no bias stated
    at.button(key="pdp_run").click().run()
    assert not any(w.value.startswith("Biased low") for w in at.warning), texts(at)
