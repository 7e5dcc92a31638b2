"""Short share links: a design kept in the workshop store under a short random id, the link being ``?d=<id>``.

Table (layout version 7, created by :data:`prdp_core.board.store.MIGRATIONS`)::

    shared_designs (id, digest UNIQUE, config, created_at)

:func:`put` takes the long form of a share link (:func:`prdp_core.board.links.encode`, made through the review
boundary like every output), unpacks it within its size limits, validates it as a study config and stores the
design it carries as canonical JSON (:func:`~prdp_core.board.canonical.canonical_json`; at most
:data:`MAX_DESIGN_JSON` bytes) once per content: the same design shared again gets the same id (``digest``, the
SHA-256 of that JSON, is UNIQUE; concurrent shares of one design store it once). The id is random
(:data:`ID_BYTES` random bytes, URL-safe: 16 characters), never derived from the design, so ids cannot be guessed
from designs.

:func:`get` reads a short link back as the shared input it is: the id's form is checked before any look-up
(:data:`ID_PATTERN`), the stored text's size before it is parsed, and the JSON goes through the study import's
parser (:func:`prdp_core.study.config.parse_config`: every key checked against its allow-list, nothing evaluated)
— exactly as the long form, which stays for offline use (it needs no store).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.errors import ConfigError, ResourceLimitError
from ..study.config import Study, parse_config
from . import links
from .canonical import canonical_json
from .ledgers import dialect_insert

if TYPE_CHECKING:
    from .store import BoardStore

#: The query parameter of a short link.
PARAM = "d"
#: Random bytes of an id (96 bits) and the form of an id (URL-safe base64 of them).
ID_BYTES = 12
ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{16}")
#: Largest stored design (bytes of canonical JSON): what a long link may unpack into.
MAX_DESIGN_JSON = links.MAX_JSON_BYTES


def define_table(md: sa.MetaData) -> sa.Table:
    """The ``shared_designs`` table in ``md`` (layout version 7)."""
    return sa.Table("shared_designs", md,
                    sa.Column("id", sa.String(32), primary_key=True),
                    sa.Column("digest", sa.String(64), nullable=False, unique=True),
                    sa.Column("config", sa.Text, nullable=False),
                    sa.Column("created_at", sa.Float, nullable=False))


_md = sa.MetaData()
shared_designs = define_table(_md)


def create(conn: Connection) -> None:
    """Migration step to version 7 (with :func:`.facilitator_unlocks.create`): the ``shared_designs`` table."""
    md = sa.MetaData()
    define_table(md)
    md.create_all(conn)


def valid_id(text: Any) -> bool:
    """Whether ``text`` has the form of a short link's id (checked before any database look-up)."""
    return isinstance(text, str) and ID_PATTERN.fullmatch(text) is not None


def put(store: BoardStore, link_text: str) -> str:
    """Store the design the long link parameter ``link_text`` carries (validated first; ConfigError when it is not
    a design, ResourceLimitError when too large); its short id (the same design: the same id)."""
    design = links.unpack(link_text)
    parse_config(design)  # a design that could not be opened is not stored
    text = canonical_json(design)
    if len(text.encode("utf-8")) > MAX_DESIGN_JSON:
        raise ResourceLimitError("This design is too large for a short link.",
                                 hint="Share the study file instead (Study page).")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    row = {"id": secrets.token_urlsafe(ID_BYTES), "digest": digest, "config": text, "created_at": time.time()}
    with store._tx() as conn:
        insert = dialect_insert(conn)
        if insert is not None:
            conn.execute(insert(shared_designs).values(**row).on_conflict_do_nothing(index_elements=["digest"]))
        elif conn.execute(sa.select(shared_designs.c.id).where(shared_designs.c.digest == digest)).first() is None:
            conn.execute(shared_designs.insert().values(**row))
        return str(conn.execute(sa.select(shared_designs.c.id).where(shared_designs.c.digest == digest)).scalar_one())


def get(store: BoardStore, design_id: Any) -> Study:
    """The study a short link's id names, validated like a study import; ConfigError when the id is not one or the
    store has no such design, or when the stored design is damaged or not a study config."""
    if not valid_id(design_id):
        raise ConfigError("The link's design id is damaged (it was cut or changed).", hint="Copy the whole link again.")
    with store._tx() as conn:
        text = conn.execute(sa.select(shared_designs.c.config).where(shared_designs.c.id == design_id)).scalar()
    if text is None:
        raise ConfigError("This server has no design under the link's id.",
                          hint="The link may come from another server: ask for its long form or the study file.")
    if len(text.encode("utf-8")) > MAX_DESIGN_JSON:
        raise ConfigError(f"The link's design is larger than {MAX_DESIGN_JSON:,} bytes.",
                          hint="Ask for the study file instead.")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        raise ConfigError("The link's stored design is damaged.", hint="Ask for the study file instead.") from None
    if not isinstance(obj, dict):
        raise ConfigError("The link's stored design is not a study config.")
    return parse_config(obj)


__all__ = ["ID_PATTERN", "MAX_DESIGN_JSON", "PARAM", "create", "define_table", "get", "put", "valid_id"]
