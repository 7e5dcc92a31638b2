"""Session addresses cannot be planted (issue 28): a session key opens its session only in the browser that
created it (AppTest: the browser is the cookie ``ui.durable.browser_cookie`` reads, see ``one_browser``).
Another browser opening the address gets nothing of it and is told so; a key planted by an attacker does not
receive what the victim does under it; the owner moves a session to another browser with a one-time code."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from prdp_core.board import links
from prdp_core.board import sessions as S
from prdp_core.board.store import BoardStore

from .conftest import ROOT, open_page, texts, upload
from .test_durable import _csv, _designed_session, _reopen

FOREIGN = "This address belongs to another browser"


def _secret() -> str:
    """Another browser's secret (as ``prdp_core.board.sessions.new_browser_secret`` makes one)."""
    return secrets.token_urlsafe(24)


def _stored_binding(key: str) -> str | None:
    url = f"sqlite:///{Path(os.environ['PRDP_WORKSHOP_DIR']) / 'board.sqlite'}"
    bs = BoardStore(url)
    try:
        with bs.engine.connect() as conn:
            return conn.execute(sa.text("SELECT browser_hash FROM sessions WHERE key_hash = :h"),
                                {"h": S.key_hash(key)}).scalar()
    finally:
        bs.dispose()


def test_another_browser_opening_the_address_gets_no_table_design_or_ledger(one_browser):
    owner = _designed_session()  # an uploaded table, a typed threshold, two releases
    key = owner.query_params[S.KEY_PARAM]
    one_browser.cookie = _secret()  # another browser
    other = _reopen(key)
    assert FOREIGN in other.first_texts and "Restored your saved session" not in other.first_texts
    ds = other.session_state["dataset"]
    assert ds.name != "shop.csv" and "upload" not in other.session_state["dataset_source"]
    assert "thr_sales" not in other.session_state and len(other.session_state["ledger"]) == 0
    assert other.query_params[S.KEY_PARAM] != key  # a session of its own: nothing done here reaches the key's
    assert "This ledger is new" in texts(other)
    one_browser.cookie = None  # a browser without any secret yet (its first visit)
    fresh = _reopen(key)
    assert FOREIGN in fresh.first_texts and len(fresh.session_state["ledger"]) == 0


def test_the_choice_to_start_a_new_session_dismisses_the_message(one_browser):
    owner = open_page("data")
    key = owner.query_params[S.KEY_PARAM]
    one_browser.cookie = _secret()
    other = _reopen(key, page="data")
    assert FOREIGN in other.first_texts
    other.button(key="durable_start_new").click().run()
    assert not other.exception and FOREIGN not in texts(other) and "This ledger is new" not in texts(other)
    assert other.query_params[S.KEY_PARAM] != key


def test_a_planted_address_does_not_give_the_attacker_the_victims_table(one_browser):
    attacker_browser = one_browser.cookie
    attacker = open_page("policy_designer")  # the attacker's session: its key is saved, bound to its browser
    planted = attacker.query_params[S.KEY_PARAM]
    one_browser.cookie = _secret()  # the victim's browser opens the planted address
    victim = _reopen(planted, page="data")
    assert FOREIGN in victim.first_texts and "Restored your saved session" not in victim.first_texts
    upload(victim, "confidential.csv", _csv(250))
    victim.switch_page("app_pages/policy_designer.py").run()
    victim.number_input(key="thr_sales").set_value(777.0).run()
    assert victim.session_state["dataset"].name == "confidential.csv"
    one_browser.cookie = attacker_browser  # the attacker reopens its key
    again = _reopen(planted, page="policy_designer")
    assert again.session_state["dataset"].name != "confidential.csv"
    assert "upload" not in again.session_state["dataset_source"] and "thr_sales" not in again.session_state
    assert "confidential.csv" not in texts(again)


def test_a_new_browser_is_given_a_secret_that_its_cookie_keeps(one_browser):
    one_browser.cookie = None  # the first visit of a browser: no cookie yet
    first = open_page("data")
    key = first.query_params[S.KEY_PARAM]
    (script,) = [h.proto.body for h in first.get("html") if "prdp_browser" in h.proto.body]
    secret = re.search(r'"=([A-Za-z0-9_-]{32,86}); path=/', script).group(1)
    assert S.valid_key(secret) and first.get("html")[0].proto.unsafe_allow_javascript
    assert "samesite=strict" in script and "max-age=" in script
    assert _stored_binding(key) == S.browser_hash(secret) != secret  # the store keeps the hash only
    one_browser.cookie = secret  # the browser sends its cookie back on a reload: the session is restored
    again = _reopen(key, page="data")
    assert FOREIGN not in again.first_texts and again.query_params[S.KEY_PARAM] == key
    (renew,) = [h.proto.body for h in again.get("html") if "prdp_browser" in h.proto.body]
    assert f'"={secret}; path=/' in renew  # a browser that has a secret keeps it (its cookie's expiry renewed)


def test_the_owner_moves_the_session_to_a_new_browser_with_a_one_time_code(one_browser):
    owner = _designed_session()
    key = owner.query_params[S.KEY_PARAM]
    owner.sidebar.button(key="durable_make_code").click().run()
    assert not owner.exception, owner.exception
    (shown,) = [c.value for c in owner.sidebar.code]
    assert re.fullmatch(r"[A-Z2-9]{5}-[A-Z2-9]{5}", shown)
    owner_browser, one_browser.cookie = one_browser.cookie, _secret()  # the owner's new device
    new = _reopen(key, page="data")
    assert FOREIGN in new.first_texts
    new.text_input(key="durable_transfer_code").input("AAAAA-AAAAA")
    new.button(key="FormSubmitter:durable_transfer-Open my session here").click().run()
    assert "This transfer code does not open this address" in texts(new) and len(new.session_state["ledger"]) == 0
    new.text_input(key="durable_transfer_code").input(shown.lower())
    new.button(key="FormSubmitter:durable_transfer-Open my session here").click().run()
    assert not new.exception, new.exception
    assert "Restored your saved session: **shop.csv**, your design and your privacy ledger (2 earlier releases)" \
        in texts(new)
    assert new.query_params[S.KEY_PARAM] == key and len(new.session_state["ledger"]) == 2
    assert new.session_state["thr_sales"] == 250.0
    # the old browser lost it: its saves are refused, and a reload there does not open it
    owner.switch_page("app_pages/policy_designer.py").run()
    owner.number_input(key="thr_sales").set_value(300.0).run()
    owner.run()  # the refused save is said from the next run on
    assert "Nothing of this session is saved any more" in texts(owner)
    one_browser.cookie = owner_browser
    assert FOREIGN in _reopen(key).first_texts
    # the code worked once
    third = _secret()
    one_browser.cookie = third
    late = _reopen(key, page="data")
    late.text_input(key="durable_transfer_code").input(shown)
    late.button(key="FormSubmitter:durable_transfer-Open my session here").click().run()
    assert "This transfer code does not open this address" in texts(late) and len(late.session_state["ledger"]) == 0


def test_a_session_saved_before_browsers_were_bound_goes_to_the_first_browser_that_opens_it(one_browser):
    owner = open_page("data")
    key = owner.query_params[S.KEY_PARAM]
    url = f"sqlite:///{Path(os.environ['PRDP_WORKSHOP_DIR']) / 'board.sqlite'}"
    bs = BoardStore(url)
    with bs.engine.begin() as conn:  # as a session stored by an earlier version: no binding
        conn.execute(sa.text("UPDATE sessions SET browser_hash = NULL"))
    bs.dispose()
    first = one_browser.cookie
    assert FOREIGN not in _reopen(key, page="data").first_texts
    assert _stored_binding(key) == S.browser_hash(first)
    one_browser.cookie = _secret()
    assert FOREIGN in _reopen(key, page="data").first_texts


def test_the_design_in_another_browsers_address_is_not_loaded_either(one_browser):
    owner = _designed_session()
    address = {k: owner.query_params[k] for k in (S.KEY_PARAM, links.PARAM)}  # the whole address bar
    one_browser.cookie = _secret()
    other = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in address.items():
        other.query_params[k] = v
    other.run()
    assert not other.exception, other.exception
    assert FOREIGN in texts(other) and "shop.csv" not in texts(other) and "link_msg" not in other.session_state
    assert "thr_sales" not in other.session_state and other.query_params[S.KEY_PARAM] != address[S.KEY_PARAM]
