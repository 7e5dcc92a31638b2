"""AppTest of the Policy designer: thresholds, group table, workload edits, errors keep the last valid policy."""

from __future__ import annotations

import pytest

from .conftest import chart_traces as chart_data
from .conftest import open_page, texts


def current_curve(at, key: str = "cdf_records") -> tuple[list, list]:
    tr = [t for t in chart_data(at, key) if t.get("name") == "current policy"][0]
    return tr["x"], tr["y"]


@pytest.fixture
def page():
    return open_page("policy_designer")


def test_default_policy_renders(page):
    at = page
    pol = at.session_state["policy"]
    assert pol.workload.total_rho == pytest.approx(1.0)
    assert [m.label for m in at.metric][:2] == ["Base loss (unsplit records)", "Records split"]
    t = texts(at)
    assert "records pays more than 1ρ" in t and "Owners (FIRM_ID)" in t
    assert "Confidential" in t
    assert "Unit splitting" in at.session_state["policy_summary"]
    assert any("SplittingPolicy" in c.value for c in at.code)


def test_threshold_edit_changes_cdf(page):
    at = page
    x0, y0 = current_curve(at)
    at.number_input(key="thr_EMP").set_value(5.0)
    at.run()
    assert not at.exception
    x1, y1 = current_curve(at)
    assert (x1, y1) != (x0, y0)
    assert at.session_state["policy"].thresholds.as_dict()["*"]["EMP"] == 5.0
    # EMP 5 is the ≈66th percentile: about a third of establishments are now split
    assert 100 - y1[0] > 25


def test_invalid_threshold_keeps_last_valid_policy(page):
    at = page
    at.number_input(key="thr_EMP").set_value(50.0)
    at.run()
    good = at.session_state["policy"]
    x_good = current_curve(at)
    at.number_input(key="thr_EMP").set_value(0.0)
    at.run()
    assert not at.exception
    assert "threshold of 'EMP' must be a positive finite number" in at.error[0].value
    assert "last valid policy" in texts(at)
    assert at.session_state["policy"] == good
    assert current_curve(at) == x_good


def test_group_thresholds_table_changes_cdf(page):
    at = page
    x0 = current_curve(at)
    at.toggle(key="policy_per_group").set_value(True)
    at.run()
    at.selectbox(key="policy_group_col").set_value("NAICS2")
    at.run()
    assert not at.exception
    # retail gets much smaller thresholds than the default row
    at.session_state["thr_table"] = {"edited_rows": {}, "deleted_rows": [],
                                     "added_rows": [{"group": "44-45", "EMP": 2, "PAYANN": 50, "PAYQTR1": 10}]}
    at.run()
    assert not at.exception, at.exception
    pol = at.session_state["policy"]
    assert pol.thresholds.group_col == "NAICS2"
    assert pol.thresholds.for_group("44-45")["EMP"] == 2
    assert current_curve(at) != x0
    # a group value that does not exist is reported, and the last valid policy stays
    at.session_state["thr_table"] = {"edited_rows": {}, "deleted_rows": [],
                                     "added_rows": [{"group": "99-99", "EMP": 2, "PAYANN": 50, "PAYQTR1": 10}]}
    at.run()
    assert "'99-99' is not a value of 'NAICS2'" in at.error[0].value
    assert at.session_state["policy"] == pol


def test_workload_edit_and_error(page):
    at = page
    base = at.session_state["policy"].workload.total_rho
    at.session_state["wl_table"] = {"edited_rows": {"0": {"rho": 1.25}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception
    assert at.session_state["policy"].workload.total_rho == pytest.approx(base + 1.0)
    at.session_state["wl_table"] = {"edited_rows": {"1": {"measure": ""}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert "needs a measure" in at.error[0].value


def test_keep_for_comparison_overlays(page):
    at = page
    at.button(key="policy_keep").click()
    at.run()
    at.number_input(key="thr_PAYANN").set_value(500.0)
    at.run()
    names = [t.get("name") for t in chart_data(at, "cdf_records")]
    assert "policy 1" in names and "current policy" in names


def test_suggestions_fill_thresholds(page):
    at = page
    at.slider(key="sugg_pct").set_value(80.0)
    at.button(key="sugg_pct_apply").click()
    at.run()
    assert not at.exception
    t_emp = at.session_state["policy"].thresholds.as_dict()["*"]["EMP"]
    assert t_emp < 100  # the 80th percentile of EMP is far below Table 8's conservative 100
    at.number_input(key="sugg_cap").set_value(10.0)
    at.button(key="sugg_cap_apply").click()
    at.run()
    assert at.session_state["policy"].workload.total_rho == pytest.approx(1.0)
    prev_max = max(current_curve(at)[0])
    assert prev_max <= 10.0 + 1e-9


def test_losses_by_group_computed_when_opened(page, monkeypatch):
    """The collapsed *Losses by group* expander computes nothing on a threshold change; opened, it shows the
    losses per group and the ten largest record losses."""
    import ui.policy_designer as pstate

    calls = []
    real = pstate.by_group
    monkeypatch.setattr(pstate, "by_group", lambda *a, **k: calls.append(a[1:]) or real(*a, **k))
    at = page
    at.number_input(key="thr_EMP").set_value(77.0)
    at.run()
    assert not at.exception and calls == []
    assert "ten largest record losses" not in texts(at)
    at.session_state["policy_by_group_open"] = True
    at.run()
    assert not at.exception and len(calls) == 1
    assert "ten largest record losses" in texts(at)
    assert any("max" in df.value.columns for df in at.dataframe)


def test_review_mode_hides_largest_records(page):
    at = page
    at.session_state["policy_by_group_open"] = True  # the expander opened
    at.run()
    assert "ten largest record losses" in texts(at)
    at.sidebar.radio(key="mode").set_value("review")
    at.run()
    assert "ten largest record losses" not in texts(at)
    assert "Hidden in review mode:** losses by group and the records with the largest losses" in texts(at)
    # no statistic of the records: metrics, loss charts and read-outs of real records are gone; the public
    # policy function and the (ε, δ) reading of its loss levels stay
    assert [m.label for m in at.metric] == ["Base loss (unsplit records)"]
    charts = [el.proto.id for el in at.get("plotly_chart")]
    assert not any(c.endswith(("cdf_records", "cdf_owners")) for c in charts) and any(c.endswith("public_fn")
                                                                                     for c in charts)
    assert "a record cut into 10 pieces loses" in texts(at) and "percentile of" not in texts(at)
    table = next(d.value for d in at.dataframe if "ρ (zCDP)" in d.value.columns)
    assert "a record cut into 100 pieces" in set(table.iloc[:, 0]) and "largest record" not in set(table.iloc[:, 0])


def test_conversion_table_has_its_confidentiality_note(page):
    at = page
    notes = [c.value for c in at.caption if "Confidential" in c.value]
    assert any("Every row but the base loss" in n for n in notes)


def test_overflowing_budget_or_threshold_is_refused_and_the_page_survives():
    """A ρ of 1e308 (owner losses overflow) or a threshold of 1e-300 (more than 2^53 pieces) is an input
    error: the message says what to change, the last valid policy stays, and later edits still work."""
    at = open_page("policy_designer")
    good = at.session_state["policy"]
    at.session_state["wl_table"] = {"edited_rows": {"0": {"rho": 1e308}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception
    assert "too large to compute" in at.error[0].value
    assert at.session_state["policy"] == good
    assert [m.label for m in at.metric][:1] == ["Base loss (unsplit records)"]
    at.session_state["wl_table"] = {"edited_rows": {}, "added_rows": [], "deleted_rows": []}
    at.number_input(key="thr_EMP").set_value(1e-300)
    at.run()
    assert not at.exception
    assert "2^53 pieces" in at.error[0].value
    assert at.session_state["policy"] == good
    at.number_input(key="thr_EMP").set_value(50.0)
    at.run()
    assert not at.exception and not at.error
    assert at.session_state["policy"].thresholds.as_dict()["*"]["EMP"] == 50.0


@pytest.mark.parametrize("mode", ["teaching", "review"])
def test_private_threshold_suggestion_is_charged_and_offered_in_review_mode(page, mode):
    """The private suggestion shows its cost before use, writes private (not data-derived) thresholds and
    adds its ledger entry; review mode offers it (exact sampler) while hiding the data-derived ones."""
    at = page
    at.sidebar.radio(key="mode").set_value(mode).run()
    assert not at.exception, at.exception
    shown = " ".join(c.value for c in at.caption)
    assert "Cost when adopted: **ε = 0.1**" in shown
    assert (mode == "review") == (not any(b.key == "sugg_pct_apply" for b in at.button))
    before = len(at.session_state["ledger"])
    at.number_input(key="psugg_lo_EMP").set_value(1.0)
    at.number_input(key="psugg_hi_EMP").set_value(1e5)
    at.button(key="psugg_apply").click().run()
    assert not at.exception, at.exception
    led = at.session_state["ledger"]
    assert len(led) == before + 1
    entry = led.entries[-1]
    assert entry.mechanism == "dp_quantile" and entry.loss.value == pytest.approx(0.1)
    assert entry.secure == (mode == "review")
    pol = at.session_state["policy"]
    assert all(src.startswith("private:") for src in pol.threshold_sources().values())
    assert set(pol.threshold_sources()) == set(pol.thresholds.measures)
    assert any("Adopted private thresholds" in s.value for s in at.success)


def test_a_rerun_that_changes_no_chart_builds_no_figure(page, monkeypatch):
    """The loss CDFs are built once per content (ui.figures.chart): the Learn switch rebuilds none, a threshold
    change both (records and owners), and the figures drawn are the same as when built afresh."""
    import functools

    import prdp_core.charts.policy as charts

    built = []
    real = charts.loss_cdf_figure

    @functools.wraps(real)
    def counting(*a, **k):
        built.append(k["title"])
        return real(*a, **k)

    monkeypatch.setattr(charts, "loss_cdf_figure", counting)
    at = page
    before = current_curve(at)
    at.sidebar.toggle(key="learn").set_value(True).run()
    assert not at.exception and built == [] and current_curve(at) == before
    at.number_input(key="thr_EMP").set_value(64.0).run()
    assert len(built) == 2 and current_curve(at) != before
