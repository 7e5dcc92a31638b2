"""Shareable links: the session's design in the page's URL, and a link's design restored.

The page is in the URL's path (``/policy_designer``, ``/board``…, from ``st.navigation``); the
design is in the ``policy`` query parameter (:mod:`prdp_core.board.links`: the data source, the
policy parts, the workload and the mechanisms — no view settings, no mode), rewritten after
every run by :func:`sync`. The address bar also holds the session key (``s``, :mod:`ui.durable`),
so sharing goes through :func:`share_url`, which leaves it out. A session opened from such a link
loads its design once, on its first run (:func:`restore`), with the validation of a study import;
a damaged link, or one naming a dataset this server does not have, leaves the default session and
says why.

Keys in ``st.session_state``: ``link_checked`` (the first run looked at the URL), ``link_msg``
(what the restore did, shown on the page the link opened), ``link_too_large``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import streamlit as st

from prdp_core.board import links
from prdp_core.core.errors import PrdpError, ResourceLimitError
from prdp_core.review.review_boundary import produce

from . import state, study_export
from .common import md_escape


def restore() -> None:
    """On a session's first run: load the design of the link it was opened with, if any."""
    ss = st.session_state
    if ss.get("link_checked"):
        return
    ss["link_checked"] = True
    text = st.query_params.get(links.PARAM)
    if not text:
        return
    from . import board

    try:
        study = links.decode(text)
        notes = board.load_design(study.to_dict())
    except PrdpError as err:  # a link is anyone's text: its values are shown, never rendered
        ss["link_msg"] = {"kind": "error", "text": f"**The link's design was not loaded.** {md_escape(err)}",
                          "notes": []}
        return
    ss["link_msg"] = {"kind": "success", "notes": [md_escape(n) for n in notes],
                      "text": f"Loaded the design this link carries ({', '.join(study.policy) or 'no policy'} on "
                              f"{md_escape(study.data.describe())}). Your mode and privacy ledger are your own."}


def show_message(page: str) -> None:
    """The restore's outcome, on the page the link opened (until another page is visited)."""
    ss = st.session_state
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


def share_url(here: str = "") -> str | None:
    """The link that shares this session's design: the address of the design's page (the Policy designer for
    thresholds…; ``here`` is the url path of the page asking, replaced) with the ``policy`` parameter only —
    never the session key (``s``), which the address bar also carries and which opens this session's own
    data and ledger. None when there is no design to share or it is too large for a link. (Built from the
    session, not read from the URL: a page change clears the URL's parameters until the run ends.)"""
    try:
        cfg = study_export.export_state()
        if not cfg.get("policy"):
            return None
        text = produce("share link", cfg, teaching=state.teaching()).decode("ascii")
    except ResourceLimitError:
        st.session_state["link_too_large"] = True
        return None
    except PrdpError:
        return None
    base = (st.context.url or "").rstrip("/")
    if here and base.endswith(f"/{here}"):
        base = base[: -len(here) - 1]  # the app's root, where the page of the design is added
    page = next((PART_PAGES[p] for p in cfg["policy"] if p in PART_PAGES), "")
    return f"{base}/{page}?{urlencode({links.PARAM: text})}"


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
        st.code(url, language=None, wrap_lines=True)
    st.caption(":material/key: Copy this link, **not the address bar**: the address bar also holds your session key "
               "(`s=…`), which reopens your own session — your table, design and privacy ledger — in your browser "
               "(another browser opening it gets nothing of it). "
               "This link carries the design only (no data values, no view settings, no mode).")
