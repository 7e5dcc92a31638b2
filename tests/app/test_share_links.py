"""Short share links (AppTest): the Board page shares a short link (``?d=<id>``, the design kept in the workshop
store) with the long form beside it; either opens the design in a new session; and a link opened in a browser whose
last session has a design asks "Load this design into your session?" instead of starting a new, empty session —
loading keeps that session's privacy ledger."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from streamlit.testing.v1 import AppTest

from prdp_core.board import links, shared_designs
from prdp_core.board.store import BoardStore
from ui import durable

from .conftest import ROOT, small_sample, texts

pytestmark = pytest.mark.usefixtures("one_browser")  # every session of a test from one browser
SMALL = {"sample": "cbp_like", "n": 4000, "seed": 1}
THEIRS = {"version": 1, "seed": 0, "data": SMALL, "policy": {"thresholds": {"EMP": 77}},
          "workload": {"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.5}]},
          "mechanisms": [{"kind": "unit_splitting"}]}


@pytest.fixture
def store(tmp_path) -> BoardStore:
    """The board store of the test's workshop folder (tests/app/conftest.py)."""
    return BoardStore(f"sqlite:///{tmp_path / 'workshop' / 'board.sqlite'}")


def _mine(emp: float = 42.0, release: bool = False) -> AppTest:
    """A session on the small sample with T(EMP) = ``emp`` (and, with ``release``, one release in its ledger)."""
    at = small_sample()
    at.switch_page("app_pages/policy_designer.py").run()
    at.number_input(key="thr_EMP").set_value(emp).run()
    if release:
        at.switch_page("app_pages/run.py").run()
        at.button(key="run_go").click().run()
        assert len(at.session_state["ledger"]) == 1
    assert not at.exception, at.exception
    return at


def _open(params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def _param(at: AppTest, name: str) -> str:
    v = at.query_params[name]
    return v[0] if isinstance(v, list) else v


def test_the_board_shares_a_short_link_and_keeps_the_long_one_for_offline_use(store):
    at = _mine(42.0)
    at.switch_page("app_pages/board.py").run()
    shown = [c.value for c in at.code]
    short = next(u for u in shown if "?d=" in u)
    long = next(u for u in shown if "?policy=" in u)
    assert len(short) < 80 < 200 < len(long) and "s=" not in urlparse(short).query  # never the session key
    design_id = parse_qs(urlparse(short).query)["d"][0]
    assert shared_designs.get(store, design_id).to_dict() == links.decode(parse_qs(urlparse(long).query)["policy"][0]
                                                                          ).to_dict()
    at.switch_page("app_pages/board.py").run()  # a rerun stores nothing new
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM shared_designs").scalar() == 1

    fresh = _open({"d": design_id})  # a new browser session: the design is loaded
    assert fresh.session_state["thr_EMP"] == 42.0 and fresh.session_state["dataset"].n == 4000
    assert "Loaded the design this link carries" in texts(fresh)
    assert "d" not in fresh.query_params


@pytest.mark.parametrize("bad, says", [("short", "damaged"), ("A" * 16, "no design under the link's id")])
def test_a_bad_short_link_says_why_and_keeps_the_default_session(bad, says):
    at = _open({"d": bad})
    assert says in at.error[0].value and "link's design was not loaded" in at.error[0].value
    assert at.session_state["dataset"].name == "cbp_like" and at.session_state["dataset"].n != 4000


@pytest.mark.parametrize("form", ["short", "long"])
def test_a_link_opened_in_this_browsers_session_asks_before_loading_and_keeps_the_ledger(store, monkeypatch, form):
    mine = _mine(42.0, release=True)
    key = _param(mine, "s")
    monkeypatch.setattr(durable, "last_session_cookie", lambda: key)  # the browser's last session
    params = {"d": shared_designs.put(store, links.encode(THEIRS))} if form == "short" else \
        {"policy": links.encode(THEIRS)}

    at = _open(params)
    assert _param(at, "s") == key and len(at.session_state["ledger"]) == 1  # the existing session, its ledger
    assert at.session_state["thr_EMP"] == 42.0  # not loaded yet: asked first
    assert "Load this design into your session?" in texts(at)
    at.button(key="link_offer_load").click().run()
    assert not at.exception, at.exception
    assert at.session_state["thr_EMP"] == 77 and len(at.session_state["ledger"]) == 1  # loaded, ledger kept
    assert "Loaded the design this link carries" in texts(at) and "link_offer_load" not in {b.key for b in at.button}

    kept = _open(params)  # the same link again, declined: the session keeps its design
    assert "Load this design into your session?" in texts(kept)
    kept.button(key="link_offer_keep").click().run()
    assert kept.session_state["thr_EMP"] == 77 and "Load this design" not in texts(kept)


def test_a_link_opens_a_new_session_when_the_browsers_last_one_is_not_its_own(store, monkeypatch, one_browser):
    mine = _mine(42.0, release=True)
    key = _param(mine, "s")
    monkeypatch.setattr(durable, "last_session_cookie", lambda: key)
    one_browser.cookie = "another-browser-secret-of-32-chars-x"  # the key planted in another browser's cookie
    at = _open({"policy": links.encode(THEIRS)})
    assert _param(at, "s") != key and len(at.session_state["ledger"]) == 0
    assert at.session_state["thr_EMP"] == 77 and "Load this design into your session?" not in texts(at)


def test_the_durable_restore_is_unchanged_for_a_reload():
    """A reload (the session key in the address) restores the session and asks nothing, even with a design in the
    address (its own)."""
    mine = _mine(42.0)
    again = _open({"s": _param(mine, "s"), "policy": _param(mine, "policy")})
    assert again.session_state["thr_EMP"] == 42.0 and "Load this design" not in texts(again)


