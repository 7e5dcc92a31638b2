"""The app's report in review mode (issue 29): after adopting private thresholds on the Policy designer, the Study
page's report and budget table list the ε they cost, and the report holds no distribution of the records'
losses."""

from __future__ import annotations

import pytest

from .conftest import open_page


def test_the_review_report_lists_adopted_private_thresholds_and_no_loss_distribution():
    at = open_page("policy_designer")
    at.sidebar.radio(key="mode").set_value("review").run()
    at.number_input(key="psugg_lo_EMP").set_value(1.0)
    at.number_input(key="psugg_hi_EMP").set_value(1e5)
    at.button(key="psugg_apply").click().run()
    assert not at.exception, at.exception
    measures = at.session_state["policy"].thresholds.measures
    at.switch_page("app_pages/study.py").run()
    at.button(key="study_build").click().run()
    assert not at.exception, at.exception
    out = at.session_state["study_outputs"]
    budget = out["budget"]
    private = budget[budget["release"].str.startswith("Private threshold")]
    assert sorted(private["release"].str.extract(r"T\((\w+)\)")[0]) == sorted(measures), budget
    assert private["budget"].sum() == pytest.approx(0.1, abs=1e-3)  # ε = 0.1 in all, split over the measures
    html = out["html"].decode("utf-8")
    assert "Private threshold T(EMP)" in html
    for marker in ("Policy-loss CDF", "paying more than", "per-record loss CDF", "cut before the last"):
        assert marker not in html, marker
