"""Walking the pages with every sampler wrapped (tests/samplers.py): each draw of a release's noise happens inside a
release recorded in the session's ledger — the Run page, the Study report, Personalized DP, Analyst tiers, Budget
functions and the Concepts lab, seeded and secure."""

from __future__ import annotations

import pytest

from ..samplers import watch
from .conftest import open_page, upload

#: A table without group columns: a secure release on the Run page needs no public key list for it.
CSV = ("acct,balance\n" + "".join(f"a{i},{i}\n" for i in range(1, 501))).encode()

#: (page, the buttons that release, the secure toggle of the page)
ROUTES = [("run", ["run_go"], "run_secure"), ("personalized", ["pdp_run"], "pdp_secure"),
          ("analyst_tiers", ["mt_release_btn"], "mt_secure"), ("budget_functions", ["bf_run"], "bf_secure"),
          ("concepts", ["hl_run"], "hl_secure")]
#: Pages whose releases are not mechanisms of a study (the lab's histograms).
UNREPORTED = ("concepts",)


def _click(at, key: str) -> None:
    at.button(key=key).click().run()
    assert not at.exception, at.exception


#: Every route, seeded and secure.
CASES = [(*r, secure) for r in ROUTES for secure in (False, True)]


@pytest.mark.parametrize(("page", "buttons", "toggle", "secure"), CASES,
                         ids=[f"{c[0]}-{'secure' if c[3] else 'seeded'}" for c in CASES])
def test_a_page_draws_noise_only_inside_releases_recorded_in_the_session_ledger(monkeypatch, page, buttons, toggle,
                                                                              secure):
    draws = watch(monkeypatch)
    if page == "run" and secure:  # the sample's group keys come from its data: a secure release refuses them
        at = open_page("data")
        upload(at, "accounts.csv", CSV)
        at.switch_page("app_pages/run.py").run()
    else:
        at = open_page(page)
    if page == "personalized":
        at.radio(key="pdp_view").set_value("Run a release").run()
    if page == "concepts" and secure:  # the sample's attributes, declared categories (generated records: seeded)
        at.radio(key="hl_source").set_value("dataset").run()
    if secure:
        at.toggle(key=toggle).set_value(True).run()
    for key in buttons:
        _click(at, key)
    assert draws.count > 0, "the page released nothing"
    assert not draws.outside, "\n".join(draws.outside)
    assert draws.ledgers == {id(at.session_state["ledger"])}
    charged = len(at.session_state["ledger"])
    assert charged > 0
    at.switch_page("app_pages/study.py").run()  # the report renders what was recorded: no draw, no charge
    seen = draws.count
    built = [b for b in at.get("button") if b.proto.id.endswith("study_build")]
    assert (page in UNREPORTED) == (not built or built[0].proto.label != "Build the report")
    if page not in UNREPORTED:
        _click(at, "study_build")
        _click(at, "study_build")
        assert draws.count == seen and len(at.session_state["ledger"]) == charged


#: Other routes that draw noise on the records: (page, the radio choice that shows the button, the button).
OTHER_ROUTES = [("personalized", ("pdp_view", "PDP vs PrDP"), "pdp_prdp_go"), ("policy_designer", None, "psugg_apply"),
                ("personalized", ("pdp_view", "Run a release"), "pdp_psugg_apply"),
                ("analyst_tiers", ("mt_query", "sum"), "mt_psugg_apply")]


@pytest.mark.parametrize(("page", "view", "key"), OTHER_ROUTES, ids=[r[2] for r in OTHER_ROUTES])
def test_comparisons_and_private_suggestions_draw_inside_recorded_releases(monkeypatch, page, view, key):
    draws = watch(monkeypatch)
    at = open_page(page)
    if view is not None:
        at.radio(key=view[0]).set_value(view[1]).run()
    _click(at, key)
    assert draws.count > 0 and not draws.outside, "\n".join(draws.outside)
    assert draws.ledgers == {id(at.session_state["ledger"])} and len(at.session_state["ledger"]) > 0


def test_the_study_report_run_draws_inside_releases_recorded_in_the_session_ledger(monkeypatch):
    draws = watch(monkeypatch)
    at = open_page("policy_designer")
    at.switch_page("app_pages/study.py").run()
    _click(at, "study_build")
    assert draws.count > 0 and not draws.outside, "\n".join(draws.outside)
    assert draws.ledgers == {id(at.session_state["ledger"])}


def test_trade_offs_simulations_on_synthetic_data_draw_no_release_noise(monkeypatch):
    """The Trade-offs page's Monte Carlo draws from generators of its own: not the noise of a release."""
    draws = watch(monkeypatch)
    open_page("tradeoffs")
    assert not draws.outside, "\n".join(draws.outside)
