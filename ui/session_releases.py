"""The recorded releases a durable session keeps for the Study page's report (:func:`ui.state.keep_recorded`), saved
with the session and restored with it (:mod:`prdp_core.board.session_releases`): after a restart, "Build the report"
renders the same releases — answers, parameters, the ledger entries the restored ledger holds — without running a
mechanism or charging the ledger again.

Saved after every run in which they changed (:func:`save`, from :func:`ui.durable.save`): the releases each page part
last recorded on the active dataset, each named by the ids of its ledger entries. Parts over the store's limit are
left out, those kept longest ago first, and the pages say so; a part whose answers cannot be stored is left out too.

Restored after the session's ledger and design (:func:`restore`, from :func:`ui.durable.start`): stored releases of
another form are refused as a whole with a note (the rest of the session is restored); a part whose releases name
entries the restored ledger lacks, or ran on other data than the restored table, is not restored.

Keys in ``st.session_state``: ``durable_releases_saved`` (hash of the last saved payload).
"""

from __future__ import annotations

import hashlib
from typing import Any

import streamlit as st

from prdp_core.board import session_releases as SR
from prdp_core.board.ledgers import jsonable
from prdp_core.board.sessions import SessionStore
from prdp_core.board.store import canonical_json
from prdp_core.core.errors import PrdpError
from prdp_core.core.release import Release

from . import state
from .common import md_escape

SAVED_KEY = "durable_releases_saved"


def payload() -> tuple[str, list[str]]:
    """The stored form of the session's recorded releases on the active dataset, and the page parts left out (a
    release that cannot be stored, or over the size limit)."""
    parts: dict[str, Any] = {}
    left: list[str] = []
    for part, rec in (st.session_state.get(state.RECORDED_KEY) or {}).items():
        if rec["token"] != state.active_token() or not rec["releases"]:
            continue  # a part's releases on another table are not the active table's report
        ids = rec.get("uids", [])
        if len(ids) != len(rec["releases"]) or not all(ids) or \
                not all(isinstance(rel, Release) for _, rel in rec["releases"]):
            continue  # not a mechanism's release (a lab's result), or one whose ledger entries are not known
        try:
            rels = [SR.release_record(label, rel, uid) for (label, rel), uid in zip(rec["releases"], ids)]
        except PrdpError:
            left.append(part)
            continue
        parts[part] = {"settings": rec.get("settings"), "at": float(rec.get("at") or 0.0), "releases": rels}
    text, dropped = SR.encode(parts)
    return text, left + dropped


def save(sessions: SessionStore, key: str, browser: str) -> str | None:
    """Store the session's recorded releases when they changed since the last save; what is not saved of them (a
    sentence for the pages), or None."""
    ss = st.session_state
    if not ss.get(state.RECORDED_KEY) and SAVED_KEY not in ss:
        return None
    text, left = payload()
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if ss.get(SAVED_KEY) != digest:
        sessions.save_releases(key, text, browser=browser)
        ss[SAVED_KEY] = digest
    if not left:
        return None
    return (f"**The recorded releases of {md_escape(', '.join(left))} are not saved for the report** (larger than the "
            f"{SR.MAX_RELEASES_JSON / 1e6:g} MB the server keeps per session, or not storable). Their ledger entries "
            "are saved; after a restart the Study page's report would run them again.")


def restore(sessions: SessionStore, key: str) -> list[str]:
    """Keep the stored recorded releases of session ``key`` as their pages' recorded releases on the restored
    dataset, their entries from the restored ledger; notes on what is not restored."""
    ss = st.session_state
    try:
        parts = SR.decode(sessions.load_releases(key))
    except PrdpError as err:
        return [f"The releases recorded for the Study page's report are not restored: {err.message} {err.hint or ''}"
                .strip()]
    entries = dict(zip(ss.get("ledger_uids", []), state.ledger().entries))
    fps = {u: canonical_json(jsonable(fp)) for u, fp in zip(ss.get("ledger_uids", []), ss.get("ledger_fps", []))}
    here = canonical_json(jsonable(state.fingerprint()))
    notes: list[str] = []
    for part, rec in parts.items():
        uids = [tuple(r["uids"]) for r in rec["releases"]]
        if any(fps.get(u, here) != here for ids in uids for u in ids):
            continue  # releases on other data than the restored table: not its report's
        try:
            rels = SR.releases_of(rec, entries)
        except PrdpError as err:
            notes.append(f"The releases {part} recorded for the report are not restored: {err.message}")
            continue
        state.keep_recorded(part, rels, rec["settings"], uids=uids)
        kept = ss[state.RECORDED_KEY]
        kept[part]["at"] = float(rec["at"])
    if parts:
        ss[SAVED_KEY] = hashlib.sha256(payload()[0].encode("utf-8")).hexdigest()
    return notes


__all__ = ["payload", "restore", "save"]
