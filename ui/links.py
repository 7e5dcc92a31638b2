"""Shareable links: the session's design in the page's URL, and a link's design restored.

The page is in the URL's path (``/policy_designer``, ``/board``…, from ``st.navigation``); the
design is in the ``policy`` query parameter (:mod:`prdp_core.board.links`: the data source, the
policy parts, the workload and the mechanisms — no view settings, no mode), rewritten after
every run by :func:`sync`. The address bar also holds the session key (``s``, :mod:`ui.durable`),
so sharing goes through :func:`share_url`, which leaves it out. The link shared is short: the same design
stored in the workshop store under a short random id (``d``, :mod:`prdp_core.board.shared_designs`); its long
form (the ``policy`` parameter) works without the store (offline, another server) and is offered beside it.

A session opened from either loads its design once, on its first run (:func:`restore`), with the validation of a
study import; a damaged link, or one naming a dataset this server does not have, leaves the default session and
says why. A link opened without a session key in a browser whose last session has a design reopens that session
(:func:`ui.durable.start`) and asks "Load this design into your session?" (:func:`offer`): loading keeps the
session's ledger; declining keeps the session as it was.

Keys in ``st.session_state``: ``link_checked`` (the first run looked at the URL), ``link_msg``
(what the restore did, shown on the page the link opened), ``link_offer`` (a link's design waiting for the
answer to "Load this design into your session?"), ``link_too_large``, ``link_short`` (the short id of the
design last shared).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import streamlit as st

from prdp_core.board import links, shared_designs
from prdp_core.core.errors import PrdpError, ResourceLimitError
from prdp_core.review.review_boundary import produce
from prdp_core.study.config import Study, parse_config

from . import state, study_export
from .common import md_escape

#: The query parameters of a shared link: the short id, and the long form.
PARAMS = (shared_designs.PARAM, links.PARAM)


def _linked() -> Study | None:
    """The design of the link the session was opened with (the short id first), validated; None without one.
    Raises PrdpError for a damaged link or one this server cannot open."""
    params = st.query_params
    if params.get(shared_designs.PARAM):
        from .board_store import store

        design_id = params.get(shared_designs.PARAM)
        del params[shared_designs.PARAM]  # the design is in the session now: the address keeps its long form
        return shared_designs.get(store(), design_id)
    text = params.get(links.PARAM)
    return links.decode(text) if text else None


def _failed(err: PrdpError) -> None:
    """A link's design that could not be loaded (a link is anyone's text: its values are shown, never rendered)."""
    st.session_state["link_msg"] = {"kind": "error", "notes": [],
                                    "text": f"**The link's design was not loaded.** {md_escape(err)}"}


def _load(study: Study) -> None:
    """Load a link's design into the session (:func:`ui.board.load_design`: the mode and ledger are kept)."""
    from . import board

    try:
        notes = board.load_design(study.to_dict())
    except PrdpError as err:
        _failed(err)
        return
    st.session_state["link_msg"] = {
        "kind": "success", "notes": [md_escape(n) for n in notes],
        "text": f"Loaded the design this link carries ({', '.join(study.policy) or 'no policy'} on "
                f"{md_escape(study.data.describe())}). Your mode and privacy ledger are your own."}


def restore() -> None:
    """On a session's first run: load the design of the link it was opened with, if any; in this browser's
    reopened session (``durable_for_link``), ask first (:func:`offer`)."""
    ss = st.session_state
    reopened = ss.pop("durable_for_link", False)
    if ss.get("link_checked") and not reopened:
        return
    ss["link_checked"] = True
    try:
        study = _linked()
    except PrdpError as err:
        _failed(err)
        return
    if study is None:
        return
    if reopened:
        ss["link_offer"] = study.to_dict()
        return
    _load(study)


def _accept() -> None:
    """The answer "Load it": the link's design into the reopened session (its ledger kept)."""
    cfg = st.session_state.pop("link_offer", None)
    if cfg is not None:
        st.session_state.pop("link_page", None)  # the outcome is shown on the page the answer was given
        _load(parse_config(cfg))


def _decline() -> None:
    st.session_state.pop("link_offer", None)


def offer() -> None:
    """The question for a link opened in this browser's existing session: load its design, or keep the session."""
    cfg = st.session_state.get("link_offer")
    if cfg is None:
        return
    study = parse_config(cfg)
    with st.container(border=True, key="link_offer_box"):
        st.markdown(f"**Load this design into your session?** The link you opened carries "
                    f"{md_escape(', '.join(study.policy) or 'no policy')} on {md_escape(study.data.describe())}. "
                    "Your session in this browser was reopened with its data, design and privacy ledger: loading "
                    "replaces the design's parts of the same kind and keeps your ledger.")
        c1, c2 = st.columns([1, 1])
        c1.button("Load this design", key="link_offer_load", type="primary", on_click=_accept)
        c2.button("Keep my session as it is", key="link_offer_keep", on_click=_decline)


def show_message(page: str) -> None:
    """The question of :func:`offer`, and the restore's outcome on the page the link opened (until another page is
    visited)."""
    ss = st.session_state
    offer()
    m = ss.get("link_msg")
    if not m:
        return
    ss.setdefault("link_page", page)
    if ss["link_page"] != page:
        ss.pop("link_msg", None)
        return
    (st.success if m["kind"] == "success" else st.error)(m["text"])
    for note in m.get("notes", []):
        st.info(note)


def sync() -> dict[str, Any] | None:
    """Write the session's design into the URL (after the page ran, so edits are included); returns the
    session's study config (None when it cannot be exported), which :func:`ui.durable.save` stores."""
    ss = st.session_state
    try:
        cfg = study_export.export_state()
    except PrdpError:
        return None
    params = st.query_params
    if not cfg.get("policy"):
        if links.PARAM in params:
            del params[links.PARAM]
        return cfg
    try:
        text = produce("share link", cfg, teaching=state.teaching()).decode("ascii")
        ss.pop("link_too_large", None)
    except ResourceLimitError:
        ss["link_too_large"] = True  # the Board page says so; the URL keeps no stale design
        if links.PARAM in params:
            del params[links.PARAM]
        return cfg
    if params.get(links.PARAM) != text:
        params[links.PARAM] = text
    return cfg


def share_url(here: str = "", *, short: bool = False) -> str | None:
    """The link that shares this session's design: the address of the design's page (the Policy designer for
    thresholds…; ``here`` is the url path of the page asking, replaced) with the ``policy`` parameter only, or with
    ``short`` the ``d`` parameter of the same design stored in the workshop store — never the session key (``s``),
    which the address bar also carries and which opens this session's own data and ledger. None when there is no
    design to share, it is too large for a link, or (``short``) the store cannot keep it. (Built from the
    session, not read from the URL: a page change clears the URL's parameters until the run ends.)"""
    try:
        cfg = study_export.export_state()
        if not cfg.get("policy"):
            return None
        text = produce("share link", cfg, teaching=state.teaching()).decode("ascii")
        param = {links.PARAM: text} if not short else {shared_designs.PARAM: _short_id(text)}
    except ResourceLimitError:
        st.session_state["link_too_large"] = True
        return None
    except PrdpError:
        return None
    base = (st.context.url or "").rstrip("/")
    if here and base.endswith(f"/{here}"):
        base = base[: -len(here) - 1]  # the app's root, where the page of the design is added
    page = next((PART_PAGES[p] for p in cfg["policy"] if p in PART_PAGES), "")
    return f"{base}/{page}?{urlencode(param)}"


def _short_id(text: str) -> str:
    """The short id of the design the long link parameter ``text`` carries (stored once; remembered per
    session, so a rerun writes nothing)."""
    from .board_store import store

    ss = st.session_state
    known = ss.get("link_short")
    if not known or known[0] != text:
        ss["link_short"] = (text, shared_designs.put(store(), text))
    return str(ss["link_short"][1])


#: The page a shared design opens on, by its first policy part.
PART_PAGES = {"thresholds": "policy_designer", "budget": "budget_functions", "specification": "personalized",
              "tiers": "analyst_tiers"}


def share_box() -> None:
    """The Board page's *Share your design* box: the link to copy, and why the address bar is not it."""
    st.subheader("Share your design")
    url = share_url(here="board")
    if url is None:
        st.caption("Design a policy (Policy designer, Budget functions, Personalized DP or Analyst tiers) to get a "
                   "link that opens it." if not st.session_state.get("link_too_large") else
                   ":material/link_off: Your design is too large for a link: share it as a study file (Study page).")
    else:
        short = share_url(here="board", short=True)
        st.code(short or url, language=None, wrap_lines=True)
        if short is None:
            st.caption("The workshop store cannot keep a short link now: this is the long one.")
        else:
            with st.expander("Long link (opens without this server's store: offline, or on another server)"):
                st.code(url, language=None, wrap_lines=True)
    st.caption(":material/key: Copy this link, **not the address bar**: the address bar also holds your session key "
               "(`s=…`), which reopens your own session — your table, design and privacy ledger — in your browser "
               "(another browser opening it gets nothing of it). "
               "This link carries the design only (no data values, no view settings, no mode).")
