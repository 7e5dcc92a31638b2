"""Walking the pages with every sampler wrapped (tests/samplers.py): each draw of a release's noise happens inside a
release recorded in the session's ledger — the Run page, the Study report, Personalized DP, Analyst tiers, Budget
functions and the Concepts lab, seeded and secure — or, in teaching mode only, inside a declared teaching simulation
(the board's error figures, the Personalized DP comparison and oracle curve); a walk of every page in both modes
presses every button that computes something."""

from __future__ import annotations

import pytest

from ..samplers import watch
from .conftest import open_page, small_sample, texts, upload

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


#: Buttons the walk leaves alone: they start another session, load a study or a sample, change the mode, or are the
#: facilitator's (the walk releases what the pages release; the Board page's submit is pressed for every part).
LEFT_ALONE = ("durable_", "mode_", "large_", "board_", "study_load", "load_sample", "apply_")
#: The teaching simulations of the walk (:func:`prdp_core.recorder.simulation` labels).
SIMULATIONS = {"the board's error estimate", "Compare mechanisms", "The oracle threshold curve",
               "noise infusion beside the policy"}
#: Every page, in the order of the app's navigation.
PAGES = ["start_here", "data", "policy_designer", "budget_functions", "personalized", "tradeoffs", "run",
         "analyst_tiers", "study", "board", "concepts"]


def _press_every_button(at) -> None:
    """Press each button on screen once (new buttons a press shows included), but those :data:`LEFT_ALONE`."""
    pressed: set[str] = set()
    while True:
        keys = [b.key for b in at.button if b.key and b.key not in pressed and not b.key.startswith(LEFT_ALONE)]
        if not keys:
            return
        pressed.add(keys[0])
        _click(at, keys[0])


def _oracle_curves(at) -> None:
    """The Threshold explorer's curve of every query, computed from the private data when the mode offers it."""
    for kind in at.selectbox(key="pdp_tq").options:
        at.selectbox(key="pdp_tq").set_value(kind).run()
        assert not at.exception, at.exception
        curve = [r for r in at.radio if r.key == f"pdp_mode_{kind}"]
        if curve and "oracle" in curve[0].options:
            curve[0].set_value("oracle").run()
            assert not at.exception, at.exception


def _submit_every_part(at) -> None:
    at.text_input(key="board_name").input("walk")
    for part in at.selectbox(key="board_part").options:
        at.selectbox(key="board_part").set_value(part).run()
        _click(at, "board_submit")
        assert at.success or at.info, f"{part} was not submitted"


@pytest.mark.parametrize("mode", ["teaching", "review"])
def test_every_page_draws_noise_only_in_recorded_releases_or_in_teaching_simulations(monkeypatch, mode):
    """Every page and every view, every button pressed, the Board page's submit for every policy part: teaching
    mode draws inside releases recorded in the session's ledger or inside declared teaching simulations; review
    mode only inside recorded releases, and the board's entries carry no error figure."""
    from prdp_core.board import summary as S
    from prdp_core.board.store import BoardStore
    from prdp_core.board.workshop import board_url

    draws = watch(monkeypatch)
    at = small_sample(3000, seed=None)  # a small sample: the board's simulations run 30 times
    at.session_state["mode"] = mode
    at.run()
    assert not at.exception, at.exception
    for page in PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, at.exception
        for view in at.radio(key="pdp_view").options if page == "personalized" else [None]:
            if view is not None:
                at.radio(key="pdp_view").set_value(view).run()
                assert not at.exception, at.exception
            if view == "Threshold explorer":
                _oracle_curves(at)
            _press_every_button(at)
        if page == "board":
            _submit_every_part(at)
            said = "a submission carries no error figures" in texts(at)
            assert said == (mode == "review")
    assert at.session_state["mode"] == mode
    assert draws.count > 0 and not draws.outside, "\n".join(draws.outside)
    assert draws.ledgers == {id(at.session_state["ledger"])}  # every release in the session's ledger
    entries = BoardStore(board_url()).entries()
    assert {e.summary["part"] for e in entries} == set(S.PARTS)
    errors = [e.summary["records"]["median_rel_error"] for e in entries]
    if mode == "teaching":
        assert draws.simulated == SIMULATIONS, draws.simulated
        assert all(v is not None for v in errors)
    else:
        assert draws.simulations == 0 and errors == [None] * len(entries)
        assert all(e.summary["records"]["error_method"] == S.REVIEW_ERRORS for e in entries)
