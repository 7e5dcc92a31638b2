"""The facilitator's unlock, kept for a durable session: a reload (or a reconnect after a restart) of the session
stays unlocked in the browser that unlocked it, until the facilitator locks again.

Table (layout version 7, created by :data:`prdp_core.board.store.MIGRATIONS`)::

    facilitator_unlocks (key_hash, browser_hash, proof, created_at)      one row per unlocked session

A row names a durable session by its key's SHA-256 (:func:`.sessions.key_hash`) and the browser it was unlocked in
by its secret's hash (:func:`.sessions.browser_hash`); ``proof`` is an HMAC-SHA256, keyed by the facilitator key,
of both. :func:`recall` gives the facilitator key back only to that session in that browser, and only while the
server's facilitator key is the one that made the proof: neither the database (which holds no key) nor an address
opened in another browser unlocks anything, and a server started with another key (or none) forgets every unlock.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .sessions import key_hash, valid_key

if TYPE_CHECKING:
    from .store import BoardStore


def define_table(md: sa.MetaData) -> sa.Table:
    """The ``facilitator_unlocks`` table in ``md`` (layout version 7)."""
    return sa.Table("facilitator_unlocks", md,
                    sa.Column("key_hash", sa.String(64), primary_key=True),
                    sa.Column("browser_hash", sa.String(64), nullable=False),
                    sa.Column("proof", sa.String(64), nullable=False),
                    sa.Column("created_at", sa.Float, nullable=False))


_md = sa.MetaData()
facilitator_unlocks = define_table(_md)


def create(conn: Connection) -> None:
    """Migration step to version 7 (with :func:`.shared_designs.create`): the ``facilitator_unlocks`` table."""
    md = sa.MetaData()
    define_table(md)
    md.create_all(conn)


def _proof(facilitator_key: str, session: str, browser: str) -> str:
    return hmac.new(facilitator_key.encode("utf-8"), f"unlock:{session}:{browser}".encode(), hashlib.sha256).hexdigest()


def remember(store: BoardStore, key: str | None, session_key: str, browser: str) -> None:
    """Keep the unlock of the durable session ``session_key`` in the browser whose hash is ``browser``, made with
    the facilitator key ``key`` (AccessError when it is not the facilitator key)."""
    store._check_facilitator(key)
    assert key is not None and valid_key(session_key)
    h = key_hash(session_key)
    row = {"key_hash": h, "browser_hash": browser, "proof": _proof(key, h, browser), "created_at": time.time()}
    with store._tx() as conn:
        conn.execute(facilitator_unlocks.delete().where(facilitator_unlocks.c.key_hash == h))
        conn.execute(facilitator_unlocks.insert().values(**row))


def recall(store: BoardStore, session_key: str | None, browser: str) -> str | None:
    """The facilitator key, when the durable session ``session_key`` was unlocked in the browser whose hash is
    ``browser`` with the server's current facilitator key; else None."""
    fkey = store.facilitator_key
    if fkey is None or not valid_key(session_key):
        return None
    assert session_key is not None
    h = key_hash(session_key)
    with store._tx() as conn:
        row = conn.execute(sa.select(facilitator_unlocks.c.browser_hash, facilitator_unlocks.c.proof)
                           .where(facilitator_unlocks.c.key_hash == h)).first()
    if row is None or not hmac.compare_digest(row.browser_hash, browser):
        return None
    return fkey if hmac.compare_digest(row.proof, _proof(fkey, h, browser)) else None


def forget(store: BoardStore, session_key: str | None) -> None:
    """The session locked again: its unlock is not kept."""
    if valid_key(session_key):
        assert session_key is not None
        with store._tx() as conn:
            conn.execute(facilitator_unlocks.delete().where(facilitator_unlocks.c.key_hash == key_hash(session_key)))


__all__ = ["create", "define_table", "forget", "recall", "remember"]
