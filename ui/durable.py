"""Durable sessions: a session's data source, study config and privacy ledger are kept in the
workshop store (:mod:`prdp_core.board.sessions`) and restored when the browser comes back after a
server restart or a reconnect.

**The key.** Each session has a random key (192 bits) in its URL, query parameter ``s``, written on
its first run and kept on every page. A new Streamlit session whose URL carries a key the store
knows restores that session on its first run (:func:`start`): the privacy ledger first — every
earlier release, whatever else fails —, then the data source and, through the Study import
(:func:`ui.study_import.import_state`), the policy and every page's settings: both through
:func:`ui.session_design.restore_design`, which app.py gives to :func:`start` (it is above this module). Links
for sharing a design never carry the key (:func:`ui.links.share_url`).

**The browser.** A key opens its session only in the browser that created it. Each browser holds a
secret of its own (192 bits) in the cookie :data:`COOKIE`, read when a session starts
(``st.context.cookies``); a browser without one is given a new one, which a small script in the page
stores as that cookie (:func:`_remember_browser`, which also renews the cookie of a browser in use:
Streamlit cannot set cookies itself). The store
binds every session to the SHA-256 of its browser's secret when the session is created, and opens or
writes it only for that browser (:meth:`prdp_core.board.sessions.SessionStore.admit`). An address
opened in another browser is not restored: the page says "This address belongs to another browser",
the session there is a new one with its own key (so nothing done there reaches the planted key's
session), and the owner can move their session to this browser with a one-time transfer code made in
the browser it belongs to (:func:`_transfer_panel`, :func:`_foreign_choice`). The tabs of one browser
share the secret and keep a key each in their address. The cookie :data:`LAST_COOKIE` holds the key of the last
session the browser opened: a shared link opened without a key reopens that session (when it has a design and
belongs to this browser), and :mod:`ui.links` offers to load the link's design into it, ledger kept.
What this protects against: an address
planted in, copied to or seen from another browser. What not: anyone who can run script in the
owner's browser or read its cookies (the cookie cannot be HttpOnly, as a script sets it), or who uses
the owner's browser itself (a shared laptop: its history holds the address and it holds the cookie).

**Writes.** A ledger entry is stored when the release is recorded (:func:`record`, from
:func:`ui.state.release`, the session's recorder) and any entry not stored yet is retried after every run
(:func:`save`); the data source, the study config and the releases kept for the Study page's report
(:mod:`ui.session_releases`, restored after the design) are written after every run in which they changed.
An uploaded table is stored once by content hash when it is used (:func:`keep_upload`).
A store that cannot be reached never stops the app: the pages say what is not saved.

**A ledger never silently resets.** When a restore fails, the page says so and the ledger sections
say that the releases shown are not the session's whole ledger; if the stored session could not be
read at all, nothing is written under its key in this session, so a later visit can still restore it.

Keys in ``st.session_state``: ``durable_key``; ``durable_msg`` (the restore's outcome, shown on the
page the session opened); ``durable_ledger_msg`` (a ledger that could not be restored, shown with the
ledger); ``durable_problem`` (why something is not being saved, shown on every page);
``durable_readonly`` (the stored session could not be read); ``durable_saved`` (hash of the last
saved source and config); ``durable_seen``; ``durable_ledger_id``; ``ledger_uids`` and ``ledger_fps``
(per ledger entry: its id in the store and the data it ran on); ``ledger_stored`` (how many entries,
from the first, are in the store); ``durable_browser`` (this browser's secret: from its cookie, or new);
``durable_foreign`` (the key of another browser's address this session was opened with), ``durable_transfer_code``
and ``durable_transfer_error`` (the code typed under that message, and why it did not open the session);
``durable_code`` (the transfer code this session made, and when it expires).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import IO, Any, Callable, Mapping

import streamlit as st

from prdp_core.board import workshop as W
from prdp_core.board.ledger_chain import TamperedLedger
from prdp_core.board.ledgers import jsonable
from prdp_core.board.sessions import (
    KEY_PARAM,
    TRANSFER_SECONDS,
    Retention,
    SavedSession,
    SessionStore,
    browser_hash,
    new_browser_secret,
    new_key,
    valid_key,
)
from prdp_core.board.store import canonical_json
from prdp_core.core.accounting import Ledger, LedgerEntry
from prdp_core.core.errors import AccessError, DataError, PrdpError

from . import board_store, session_releases, state
from .common import md_escape

#: Seconds between two marks of a session as alive (retention never deletes a live session's table).
TOUCH_SECONDS = 600
#: Seconds between two reruns of the sidebar's durability note (:func:`sidebar_note`).
HEARTBEAT_SECONDS = 120

#: The cookie that holds this browser's secret, and how long the browser keeps it (days; browsers cap at 400).
COOKIE = "prdp_browser"
COOKIE_DAYS = 400
#: The cookie that holds the key of the last session this browser opened (a shared link opened without a key is
#: offered to that session: :func:`_last_session`).
LAST_COOKIE = "prdp_last_session"

#: How to make a stored data source active again, by its ``kind`` (samples and files are built in; a data
#: source added later registers here: its record holds a path or handle, never rows).
RESTORERS: dict[str, Callable[[Mapping[str, Any], SessionStore], tuple[bytes | None, str | None]]] = {}


@st.cache_resource(show_spinner=False, max_entries=4)
def _session_store(url: str, upload_dir: str, retention: tuple[float, int, float]) -> SessionStore:
    """The server's session store, opened once (and the retention rule applied: at start-up)."""
    store = SessionStore(board_store.store(), upload_dir, Retention(*retention))
    store.apply_retention()
    return store


def store() -> SessionStore | None:
    """The server's session store, or None (with ``durable_problem`` saying why) when it cannot be opened."""
    try:
        r = Retention.from_env()
        return _session_store(W.board_url(), str(W.upload_dir()), (r.max_age_days, r.max_bytes, r.live_hours))
    except PrdpError as err:
        _problem(f"Sessions are not saved on this server: {md_escape(err)}")
        return None


def _problem(text: str) -> None:
    st.session_state["durable_problem"] = text


def _say(kind: str, text: str, notes: list[str] | None = None) -> None:
    """The restore's outcome (``kind``: ``success``, ``error`` or ``foreign``), shown on the page the session opened
    (:func:`show_message`), with ``notes`` under it."""
    st.session_state["durable_msg"] = {"kind": kind, "text": text, "notes": list(notes or [])}


def key() -> str | None:
    """This session's key (None before :func:`start`)."""
    return st.session_state.get("durable_key")


def browser_cookie() -> str | None:
    """The browser secret this session's browser sent (the cookie :data:`COOKIE`), or None when it sent none
    or one of another form."""
    held = st.context.cookies.get(COOKIE)
    return held if valid_key(held) else None


def _browser() -> str:
    """The SHA-256 of this session's browser secret (what the store binds its sessions to)."""
    return browser_hash(st.session_state["durable_browser"])


def browser() -> str | None:
    """The SHA-256 of this session's browser secret (None before :func:`start`): what the store ties this browser's
    things to (its sessions, the facilitator's unlock of one)."""
    return _browser() if "durable_browser" in st.session_state else None


#: Stores the browser secret as the cookie :data:`COOKIE` (or renews its expiry) unless the browser holds another
#: one (another tab of a new browser may have been first), and this session's key as :data:`LAST_COOKIE`, then hides
#: its own (empty) element.
_REMEMBER_JS = """<script>(() => {{
  const name = "{name}", held = document.cookie.split("; ").find((c) => c.startsWith(name + "="));
  const old = held ? held.slice(name.length + 1) : "";
  const secure = location.protocol === "https:" ? "; secure" : "";
  if (old === "{value}" || !/^[A-Za-z0-9_-]{{32,86}}$/.test(old)) {{
    document.cookie = name + "={value}; path=/; max-age={age}; samesite=strict" + secure;
  }}
  document.cookie = "{last}={key}; path=/; max-age={age}; samesite=strict" + secure;
  const box = document.currentScript && document.currentScript.closest('[data-testid="stElementContainer"]');
  if (box) box.style.display = "none";
}})();</script>"""


def _remember_browser(secret: str, key: str) -> None:
    """Have the browser keep ``secret`` in its cookie (a new browser's secret is stored, a known one's expiry
    renewed: a browser in use keeps it) and ``key`` as its last session (:func:`_last_session`). On every run of
    the session, so that the script surely ran once; the browser runs it again only when the page's element is
    new (a new key)."""
    assert valid_key(secret) and valid_key(key)  # URL-safe letters only: nothing in them can leave the script's string
    st.sidebar.html(_REMEMBER_JS.format(name=COOKIE, value=secret, age=COOKIE_DAYS * 86_400, last=LAST_COOKIE,
                                        key=key), unsafe_allow_javascript=True)


def last_session_cookie() -> str | None:
    """The key of the last session this browser opened (the cookie :data:`LAST_COOKIE`), or None."""
    held = st.context.cookies.get(LAST_COOKIE)
    return held if valid_key(held) else None


def _last_session(link_params: tuple[str, ...]) -> str | None:
    """For a first run opened with a shared link (one of ``link_params`` in the URL) and no session key: the key of
    this browser's last session, when the store holds it with a design and it belongs to this browser — the
    session the link's design is offered to (:mod:`ui.links`) instead of a new, empty one."""
    if not any(st.query_params.get(p) for p in link_params):
        return None
    key, sessions = last_session_cookie(), store()
    if key is None or sessions is None:
        return None
    try:
        saved = sessions.load(key)
        if saved is None or not (saved.config or {}).get("policy") or not sessions.admit(key, _browser()):
            return None
    except PrdpError:
        return None
    return key


# ---------------------------------------------------------------------------
# The data a release ran on
# ---------------------------------------------------------------------------


def entry_fingerprints() -> list[dict[str, Any] | None]:
    """The data each entry of the session ledger ran on (entries recorded before this module knew them: the
    active data)."""
    align()
    return list(st.session_state["ledger_fps"])


def align(data: Mapping[str, Any] | None = None, last: int = 0) -> None:
    """Give every ledger entry a store id and its data: the ``last`` entries ran on ``data`` (a fingerprint),
    others added without :func:`record` on the active data."""
    ss = st.session_state
    n = len(state.ledger().entries)
    uids, fps = ss.setdefault("ledger_uids", []), ss.setdefault("ledger_fps", [])
    while len(uids) < n:
        uids.append(uuid.uuid4().hex)
    while len(fps) < n:
        fps.append(dict(data) if data is not None and len(fps) >= n - last else state.fingerprint())


# ---------------------------------------------------------------------------
# Start of a session: the key, and the restore of a stored session
# ---------------------------------------------------------------------------


#: Makes a stored session's data source active and imports its study config, returning the import's notes; raises
#: PrdpError (:func:`ui.session_design.restore_design`, given to :func:`start` by app.py: the import is above this
#: module).
DesignRestore = Callable[[SessionStore, SavedSession], list[str]]


def start(restore_design: DesignRestore, link_params: tuple[str, ...] = ()) -> None:
    """Every run, before the pages: on a session's first run read the browser's secret (a new browser gets one)
    and the URL's key, and restore the key's stored session when it belongs to this browser (its ledger here, its
    data and design through ``restore_design``) — for a shared link opened without a key (one of ``link_params``
    in the URL), this browser's last session with a design, to which :mod:`ui.links` offers the link's design
    (``durable_for_link``); then keep the key in the URL (page changes drop query parameters)."""
    ss = st.session_state
    if "durable_browser" not in ss:
        ss["durable_browser"] = browser_cookie() or new_browser_secret()
    if "durable_key" not in ss:
        given = st.query_params.get(KEY_PARAM)
        if not given and (given := _last_session(link_params)):
            ss["durable_for_link"] = True  # this browser's session reopened for a shared link: ui.links offers it
        ss["durable_key"] = given if valid_key(given) else new_key()
        if given and not valid_key(given):
            _say("error", "**This address's session key is not one this app writes**, so no saved session was "
                          "restored. This is a new session with its own address.")
        elif given:
            _restore(given, restore_design)
    _remember_browser(ss["durable_browser"], ss["durable_key"])
    if st.query_params.get(KEY_PARAM) != ss["durable_key"]:
        st.query_params[KEY_PARAM] = ss["durable_key"]


def _restore(given: str, restore_design: DesignRestore) -> None:
    ss = st.session_state
    sessions = store()
    try:
        if sessions is None:
            raise DataError(ss.get("durable_problem") or "The session store cannot be opened.")
        saved = sessions.load(given)
        foreign = saved is not None and not sessions.admit(given, _browser())
        stored = None if saved is None or foreign else sessions.ledgers.entries(saved.ledger_id)
    except TamperedLedger as err:  # refused, never used: nothing is written under its key either
        ss["durable_readonly"] = True
        _say("error", f"**Your saved session's privacy ledger was changed on the server**: {md_escape(err)} Its "
                      "data and design are not restored either, and nothing of this session is saved. Tell the "
                      "workshop's organiser.")
        ss["durable_ledger_msg"] = ("**The earlier releases of this session are missing from the ledger below** (its "
                                    "stored ledger fails its integrity check and is refused). They still count.")
        return
    except PrdpError as err:  # nothing of this session can be read now: write nothing under its key
        ss["durable_readonly"] = True
        text = (f"**Your saved session could not be read**: {md_escape(err)} Its data, design and privacy ledger are "
                "kept in the store; reload this address later to restore them. Until then nothing of this session is "
                "saved, and its ledger below holds only the releases made from now on.")
        _say("error", text)
        ss["durable_ledger_msg"] = ("**The earlier releases of this session are missing from the ledger below** "
                                    "(the saved session could not be read). They still count.")
        return
    if foreign:
        _foreign(given)
        return
    if saved is None or stored is None:
        ss["durable_key"] = new_key()  # the old address may name a session of another store: left alone
        _say("error", "**This address names a session this server does not have** (its store was reset, or the "
                      "address is another server's), so its data, design and privacy ledger are not here. This is a "
                      "new session with its own address.")
        ss["durable_ledger_msg"] = ("**This ledger is new**: the releases of the session the address named are not "
                                    "on this server, and they are not in the totals below.")
        return
    ss["ledger"] = Ledger([s.entry for s in stored])
    ss["ledger_uids"] = [s.uid for s in stored]
    ss["ledger_fps"] = [s.fingerprint for s in stored]
    ss["ledger_stored"] = len(stored)
    ss["durable_ledger_id"] = saved.ledger_id
    releases = f"{len(stored)} earlier release{'' if len(stored) == 1 else 's'}"
    if saved.config is not None and saved.config.get("mode") == "review":
        ss["mode"] = "review"  # kept even when the data or design below cannot be restored (ui.mode)
    try:
        notes = restore_design(sessions, saved)
    except PrdpError as err:
        _say("error", f"**Restored your privacy ledger ({releases}), but not your data and design**: "
                      f"{md_escape(err)}")
        ss["durable_ledger_msg"] = (f"The ledger holds the session's {releases}; those on a table that is not active "
                                    "are not in the totals below.")
        return
    ss["link_checked"] = True  # the session's own design, not the one of the URL's policy parameter
    notes += session_releases.restore(sessions, given)
    _say("success", f"Restored your saved session: **{md_escape(state.dataset().name)}**, your design and your "
                    f"privacy ledger ({releases}).", [md_escape(n) for n in notes])


def _foreign(given: str) -> None:
    """The URL's key belongs to another browser: nothing of its session is shown here, and this session gets a
    key of its own (so that nothing done here reaches the other browser's session); the design in the address
    (``policy``, :mod:`ui.links`) is not loaded either: it is that session's, not a shared link."""
    ss = st.session_state
    ss["durable_key"] = new_key()
    ss["durable_foreign"] = given
    ss["link_checked"] = True  # the design the address carries is that session's too: not loaded
    _say("foreign", "**This address belongs to another browser**, so its session is not opened here: its data, "
                    "design (also the one in the address) and privacy ledger stay with the browser that created it. "
                    "This is a new session with its own address.")
    ss["durable_ledger_msg"] = ("**This ledger is new**: the address you opened belongs to another browser, and "
                                "the releases of its session are not here.")


def _start_new() -> None:
    """The choice "Start a new session": the session already is a new one; the message goes."""
    for k in ("durable_foreign", "durable_msg", "durable_ledger_msg", "durable_transfer_error"):
        st.session_state.pop(k, None)


def _take_over() -> None:
    """The choice "Open my session here" with a transfer code: bind the address's session to this browser, then
    start this session again from that address (its first run restores it, as for a reconnect)."""
    ss = st.session_state
    given, code = ss.get("durable_foreign"), ss.get("durable_transfer_code", "")
    sessions = store()
    try:
        if sessions is None or not given:
            raise DataError(ss.get("durable_problem") or "The session store cannot be opened.")
        sessions.transfer(given, code, _browser())
    except PrdpError as err:
        ss["durable_transfer_error"] = md_escape(err)
        return
    browser = ss["durable_browser"]
    for k in list(ss.keys()):
        del ss[k]
    ss["durable_browser"] = browser
    st.query_params[KEY_PARAM] = given


def _foreign_choice(text: str) -> None:
    """The message of an address of another browser, with its choices: a new session (this one), or the owner's
    transfer code."""
    ss = st.session_state
    st.error(text, icon=":material/no_accounts:")
    st.button("Start a new session", key="durable_start_new", on_click=_start_new, type="primary")
    with st.expander("It is my session, from my other browser or device"):
        st.markdown("In the browser this session belongs to, open the sidebar's **Open this session in another "
                    f"browser** and make a transfer code; type it here within {TRANSFER_SECONDS // 60} minutes. "
                    "The session then belongs to this browser only. Type only a code you made yourself: someone "
                    "else's code would open their session, with their data and design, in your browser.")
        with st.form("durable_transfer", border=False):
            st.text_input("Transfer code", key="durable_transfer_code", max_chars=20, placeholder="ABCDE-FGHJK")
            st.form_submit_button("Open my session here", on_click=_take_over)
        if ss.get("durable_transfer_error"):
            st.error(ss["durable_transfer_error"])


# ---------------------------------------------------------------------------
# Writes
# ---------------------------------------------------------------------------


def keep_upload(data: bytes | IO[bytes], filename: str | None) -> dict[str, str]:
    """Store an uploaded table once by content hash; ``{"upload": sha256}`` for its source record, or ``{}``
    (with a message on every page) when the store cannot keep it."""
    ss = st.session_state
    sessions = store()
    try:
        if sessions is None:
            raise DataError("the session store cannot be opened.")
        sha = sessions.put_upload(data, filename or "data.csv")
    except PrdpError as err:
        ss["durable_upload_problem"] = md_escape(err)
        return {}
    ss.pop("durable_upload_problem", None)
    return {"upload": sha}


def add_entries(entries: tuple[LedgerEntry, ...], data: Mapping[str, Any] | None = None) -> list[str]:
    """Add ledger entries to the session ledger and store them (:func:`record`); their ids. The ``add_entries`` hook of
    :func:`ui.state.record_entries`, registered below."""
    align()  # earlier entries keep the data they ran on
    state.ledger().extend(entries)
    return record(entries, data=data)


def _table_unsaved() -> bool:
    """Whether the active table is an upload the store does not hold (a restart would lose it)."""
    src = state.source()
    return src.get("kind") == "file" and not src.get("upload") and not src.get("shared")


def record(entries: tuple[LedgerEntry, ...] | list[LedgerEntry], data: Mapping[str, Any] | None = None) -> list[str]:
    """A release was added to the session ledger (its ``entries`` last): give them the data they ran on (``data``, a
    fingerprint; default: the active data) and store them now (a failure is retried after the run); their ids."""
    if not entries:
        return []
    align(data, len(entries))
    uids = list(st.session_state["ledger_uids"][-len(entries):])
    sessions = store()
    if sessions is not None:
        _sync_ledger(sessions)
    return uids


def _ledger_id(sessions: SessionStore) -> int:
    """The session's ledger in the store (the session created, bound to this browser, if new); AccessError when
    the session belongs to another browser (moved there with a transfer code)."""
    ss = st.session_state
    ss["durable_ledger_id"] = sessions.ledger_id(ss["durable_key"], browser=_browser())
    return int(ss["durable_ledger_id"])


def _sync_ledger(sessions: SessionStore) -> None:
    """Store the ledger entries not stored yet; when the store holds more (another tab with this address
    released too), take the store's ledger, which is the whole truth."""
    ss = st.session_state
    if ss.get("durable_readonly") or not ss.get("durable_key"):
        return
    led = state.ledger()
    align()
    done = int(ss.get("ledger_stored", 0))
    try:
        lid = ss.get("durable_ledger_id")
        if lid is None or done < len(led.entries):
            lid = _ledger_id(sessions)
        for i in range(done, len(led.entries)):
            sessions.ledgers.append(lid, [(ss["ledger_uids"][i], led.entries[i])], fingerprint=ss["ledger_fps"][i],
                                    origin="app session")
            ss["ledger_stored"] = i + 1
        if sessions.ledgers.count(lid) > len(led.entries):
            _ledger_id(sessions)  # still this browser's session before its ledger is read
            stored = sessions.ledgers.entries(lid)
            ss["ledger"] = Ledger([s.entry for s in stored])
            ss["ledger_uids"], ss["ledger_fps"] = [s.uid for s in stored], [s.fingerprint for s in stored]
            ss["ledger_stored"] = len(stored)
    except AccessError as err:
        _problem(f"**Nothing of this session is saved any more**: {md_escape(err)}")
    except PrdpError as err:
        _problem(f"**{len(led.entries) - int(ss.get('ledger_stored', 0))} release(s) of your ledger are not saved "
                 f"yet**: {md_escape(err)} They are retried after every action; a server restart before then would "
                 "lose them from the saved ledger.")


def source_record() -> dict[str, Any]:
    """The active data source as stored: the app's source record (roles and fixes included; never rows)."""
    return dict(state.source())


def save(config: Mapping[str, Any] | None) -> None:
    """After every run: store ledger entries not stored yet, and the data source, study config and recorded releases
    (:mod:`ui.session_releases`) when they changed since the last save (else, every :data:`TOUCH_SECONDS`, mark the
    session alive)."""
    ss = st.session_state
    if ss.get("durable_readonly") or not ss.get("durable_key"):
        return
    sessions = store()
    if sessions is None:
        return
    ss.pop("durable_problem", None)
    _sync_ledger(sessions)
    if config is None:
        return
    src = source_record()
    digest = hashlib.sha256(canonical_json(jsonable({"source": src, "config": config})).encode()).hexdigest()
    now = time.time()
    try:
        if ss.get("durable_saved") != digest:
            sessions.save(ss["durable_key"], source=src, config=config, browser=_browser())
            ss["durable_saved"], ss["durable_seen"] = digest, now
        elif now - float(ss.get("durable_seen", 0)) > TOUCH_SECONDS:
            sessions.touch(ss["durable_key"])
            ss["durable_seen"] = now
        unsaved = session_releases.save(sessions, ss["durable_key"], _browser())
        if unsaved:
            _problem(unsaved)
    except AccessError as err:
        _problem(f"**Nothing of this session is saved any more**: {md_escape(err)}")
    except PrdpError as err:
        _problem(f"**Your design is not saved on the server**: {md_escape(err)} It is retried after every action.")


# ---------------------------------------------------------------------------
# On the page
# ---------------------------------------------------------------------------


def show_message(page: str) -> None:
    """The restore's outcome on the page the session opened (until another page is visited), and on every page
    what is not being saved."""
    ss = st.session_state
    m = ss.get("durable_msg")
    if m:
        ss.setdefault("durable_page", page)
        if ss["durable_page"] != page:
            ss.pop("durable_msg", None)
        elif m["kind"] == "foreign":
            _foreign_choice(m["text"])
        else:
            (st.success if m["kind"] == "success" else st.error)(m["text"])
            for note in m.get("notes", []):
                st.info(note)
    if ss.get("durable_problem"):
        st.warning(ss["durable_problem"], icon=":material/cloud_off:")
    if _table_unsaved():
        why = ss.get("durable_upload_problem") or "it was made active without being stored."
        st.warning(f"**Your uploaded table is not saved on the server**: {why} A server restart would lose it (your "
                   "design and ledger are saved); upload it again to keep it.", icon=":material/cloud_off:")


def ledger_notice() -> None:
    """Above a ledger: when the session's earlier releases could not be restored, say so (loudly)."""
    text = st.session_state.get("durable_ledger_msg")
    if text:
        st.error(text, icon=":material/history:")


@st.fragment(run_every=HEARTBEAT_SECONDS)
def sidebar_note() -> None:
    """The sidebar's line on durability (the address reopens the session in this browser) and the transfer code
    panel (:func:`_transfer_panel`), rerun
    every :data:`HEARTBEAT_SECONDS` on its own. That periodic rerun marks the session alive for the retention rule
    and, above all, makes the browser rerun the whole page as soon as it reconnects to a restarted server, with
    its address: the new session restores the saved one without waiting for the participant's next action (and
    a page change, which drops the address's parameters, cannot come first)."""
    ss = st.session_state
    if ss.get("durable_readonly") or ss.get("durable_problem"):
        st.caption(":material/cloud_off: This session is not (entirely) saved: see the message on the page.")
        return
    st.caption(":material/bookmark: Your work is saved on this server: the address in your browser's address bar "
               "reopens it in this browser after a restart (another browser needs a transfer code). To share a "
               "design, use the link on the Board page.")
    _transfer_panel()
    if ss.get("durable_key") and time.time() - float(ss.get("durable_seen", 0)) > TOUCH_SECONDS:
        sessions = store()
        try:
            if sessions is not None and ss.get("durable_saved"):
                sessions.touch(ss["durable_key"])
                ss["durable_seen"] = time.time()
        except PrdpError:
            pass  # the next save says what is wrong


def _transfer_panel() -> None:
    """In the sidebar: make a one-time code that moves this session to another browser or device."""
    ss = st.session_state
    with st.expander("Open this session in another browser", icon=":material/devices:"):
        st.caption(f"Open this page's address in the other browser and type this code there, within "
                   f"{TRANSFER_SECONDS // 60} minutes. It works once; then the session belongs to that browser "
                   "only, and this one saves nothing more of it.")
        if st.button("Make a transfer code", key="durable_make_code"):
            sessions = store()
            try:
                if sessions is None:
                    raise DataError(ss.get("durable_problem") or "The session store cannot be opened.")
                ss["durable_code"] = sessions.new_transfer_code(ss["durable_key"], _browser())
            except PrdpError as err:
                ss["durable_code"] = None
                st.error(md_escape(err))
        made = ss.get("durable_code")
        if made and made[1] > time.time():
            code, until = made
            st.code(f"{code[:5]}-{code[5:]}", language=None)
            st.caption(f"Valid for {max(1, round((until - time.time()) / 60))} more minute(s), once.")


state.register("add_entries", add_entries)

__all__ = ["RESTORERS", "add_entries", "align", "browser", "entry_fingerprints", "keep_upload", "key", "ledger_notice",
           "record", "save", "show_message", "sidebar_note", "source_record", "start", "store"]
