"""The workshop board's store: submitted policies in a real database (SQLAlchemy Core).

SQLite by default (one file in the workshop folder), or any SQLAlchemy URL of a server
database (``postgresql+psycopg://…``) so that several app replicas share one board.

Tables (schema version :data:`SCHEMA_VERSION`)::

    schema_version (version)                       one row: the layout the database has
    boards   (id, title, created_at, archived_at)  the open board and the archived ones
    entries  (id, submission_id UNIQUE, board_id, participant, name, rationale, kind, dataset,
              config, summary, created_at)
    settings (key, value, updated_at)              the facilitator's choices (pinned dataset, mode, δ)
    sessions, uploads                              durable app sessions and their uploaded tables
                                                   (version 3, :mod:`prdp_core.board.sessions`)
    ledgers, ledger_entries                        privacy ledgers of sessions and of ``prdp run --ledger``
                                                   (version 3, :mod:`prdp_core.board.ledgers`), sealed by a
                                                   keyed hash chain (version 4, :mod:`.ledger_chain`)
    session_releases                               a session's recorded releases for its report
                                                   (version 6, :mod:`prdp_core.board.session_releases`)
    shared_designs, facilitator_unlocks            designs of short share links (:mod:`.shared_designs`) and
                                                   facilitator unlocks kept for a session
                                                   (:mod:`.facilitator_unlocks`), version 7

An entry holds the submitted study config (JSON; the schema of docs/config.md, which holds no
data values) and the summary computed from it (:mod:`prdp_core.board.summary`). ``participant``
is the SHA-256 of the participant's random token, never the token itself: whoever reads the
database cannot act as a participant.

Concurrency: a submission carries a client-generated ``submission_id`` under a UNIQUE
constraint, inserted with ``ON CONFLICT DO NOTHING``, so a retried or doubled submission is
stored once and concurrent ones are all kept. SQLite runs in WAL mode with a busy timeout and
takes its write lock at the start of each transaction (``BEGIN IMMEDIATE``), so writers queue
instead of failing. Opening a database runs the missing migrations (:data:`MIGRATIONS`) under
a lock (SQLite's write lock, PostgreSQL's advisory lock), so many processes may open a new
database at once. Version 3 adds durable sessions, uploaded tables by content hash and ledgers (their
modules define the tables; the step is here, in order); version 4 seals the ledgers; version 5 binds
sessions to their browser; version 6 keeps their recorded releases; version 7 keeps the designs of short share
links and the facilitator's unlock of a session. A SQLite file (and its WAL
files) is created 0600, in a folder created 0700, and tightened when looser (:mod:`prdp_core.io.private_files`).

Who may do what is enforced here, not only in the UI: a participant withdraws only entries
whose participant hash is theirs; the facilitator's actions (pin the dataset, set the board's
mode and δ, clear, archive, remove any entry) need the facilitator key given at launch
(``PRDP_FACILITATOR_KEY``), compared in constant time (:func:`hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.errors import AccessError, PrdpError, StoreError
from ..io.private_files import private_sqlite
from .canonical import canonical_json
from .sqlite_setup import SQLITE_BUSY_SECONDS, sqlite_setup

#: Layout this build writes and reads; older databases are migrated when opened.
SCHEMA_VERSION = 7

#: Limits of the text a participant types (characters).
MAX_NAME = 120
MAX_RATIONALE = 300
#: Limit of a stored study config and of a stored summary (bytes of JSON).
MAX_CONFIG_JSON = 1_000_000
MAX_SUMMARY_JSON = 2_000_000

#: Key of PostgreSQL's advisory lock taken while migrating.
_PG_MIGRATION_LOCK = 0x70726470  # "prdp"

MODES = ("teaching", "review")
#: Settings of a board and their defaults: no pinned dataset, the viewer's own mode, δ = 1e-6.
DEFAULT_SETTINGS: dict[str, Any] = {"dataset": None, "mode": "teaching", "delta": 1e-6}

def _entries_table(md: sa.MetaData, *, with_board: bool = True) -> sa.Table:
    """The entries table (version 1 had no board column)."""
    cols: list[Any] = [
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("submission_id", sa.String(64), nullable=False, unique=True),
        sa.Column("participant", sa.String(64), nullable=False),
        sa.Column("name", sa.String(MAX_NAME), nullable=False),
        sa.Column("rationale", sa.String(MAX_RATIONALE), nullable=False),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("dataset", sa.String(300), nullable=False),
        sa.Column("config", sa.Text, nullable=False),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    ]
    if with_board:
        cols.append(sa.Column("board_id", sa.Integer, nullable=True))
    return sa.Table("entries", md, *cols)


def _boards_table(md: sa.MetaData) -> sa.Table:
    return sa.Table("boards", md,
                    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                    sa.Column("title", sa.String(200), nullable=False),
                    sa.Column("created_at", sa.Float, nullable=False),
                    sa.Column("archived_at", sa.Float, nullable=True))


def _settings_table(md: sa.MetaData) -> sa.Table:
    return sa.Table("settings", md,
                    sa.Column("key", sa.String(100), primary_key=True),
                    sa.Column("value", sa.Text, nullable=False),
                    sa.Column("updated_at", sa.Float, nullable=False))


def _version_table(md: sa.MetaData) -> sa.Table:
    return sa.Table("schema_version", md, sa.Column("version", sa.Integer, nullable=False))


#: The current layout, for queries.
metadata = sa.MetaData()
schema_version = _version_table(metadata)
boards = _boards_table(metadata)
entries = _entries_table(metadata)
settings = _settings_table(metadata)


# ---------------------------------------------------------------------------
# Migrations: MIGRATIONS[i] brings a database at version i to version i + 1
# ---------------------------------------------------------------------------


def _to_v1(conn: Connection) -> None:
    """Version 1: the version table and the submitted entries."""
    md = sa.MetaData()
    _version_table(md)
    _entries_table(md, with_board=False)
    md.create_all(conn)
    conn.execute(sa.text("INSERT INTO schema_version (version) VALUES (0)"))


def _to_v2(conn: Connection) -> None:
    """Version 2: boards (archives) and the facilitator's settings; entries belong to a board."""
    md = sa.MetaData()
    b = _boards_table(md)
    _settings_table(md)
    md.create_all(conn)
    conn.execute(sa.text("ALTER TABLE entries ADD COLUMN board_id INTEGER"))
    first = _new_board(conn, b, "Workshop board", time.time())
    conn.execute(sa.text("UPDATE entries SET board_id = :b"), {"b": first})
    conn.execute(sa.text("CREATE INDEX ix_entries_board ON entries (board_id)"))


def _to_v3(conn: Connection) -> None:
    """Version 3: durable app sessions, their uploaded tables (by content hash) and privacy ledgers."""
    from . import ledgers, sessions

    md = sa.MetaData()
    sessions.define_tables(md)
    ledgers.define_tables(md, sealed=False)
    md.create_all(conn)


def _to_v4(conn: Connection) -> None:
    """Version 4: each ledger entry's hash and each ledger's seal; the ledgers stored before are sealed once."""
    from .ledgers import seal_stored
    seal_stored(conn)


def _to_v5(conn: Connection) -> None:
    """Version 5: each durable session is bound to its browser (:func:`.sessions.add_binding`)."""
    from .sessions import add_binding
    add_binding(conn)


def _to_v6(conn: Connection) -> None:
    """Version 6: the recorded releases of durable sessions (:func:`.session_releases.create`)."""
    from .session_releases import create
    create(conn)


def _to_v7(conn: Connection) -> None:
    """Version 7: the designs of short share links and the facilitator unlocks kept for sessions."""
    from . import facilitator_unlocks, shared_designs
    shared_designs.create(conn)
    facilitator_unlocks.create(conn)


def _new_board(conn: Connection, table: sa.Table, title: str, now: float) -> int:
    """Insert a board row; its id."""
    key = conn.execute(table.insert().values(title=title, created_at=now)).inserted_primary_key
    assert key is not None
    return int(key[0])


#: Every migration step in order; step i takes a database from version i to i + 1.
MIGRATIONS: tuple[Callable[[Connection], None], ...] = (_to_v1, _to_v2, _to_v3, _to_v4, _to_v5, _to_v6, _to_v7)
assert len(MIGRATIONS) == SCHEMA_VERSION


def _stored_version(conn: Connection) -> int:
    if not sa.inspect(conn).has_table("schema_version"):
        return 0
    row = conn.execute(sa.select(schema_version.c.version)).first()
    return int(row[0]) if row is not None else 0


def migrate(conn: Connection) -> int:
    """Bring the database of ``conn`` (inside a transaction holding the write or advisory lock)
    to :data:`SCHEMA_VERSION`; returns the version found before. A database written by a newer
    build is refused (StoreError) rather than misread."""
    found = _stored_version(conn)
    if found > SCHEMA_VERSION:
        raise StoreError(f"The board database has layout version {found}, newer than this build reads "
                         f"({SCHEMA_VERSION}).", hint="Upgrade PrDP Explorer, or use another board database.")
    for step in range(found, SCHEMA_VERSION):
        MIGRATIONS[step](conn)
        conn.execute(schema_version.update().values(version=step + 1))
    return found


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------


def participant_hash(token: str) -> str:
    """What the store keeps of a participant's token (SHA-256, hex)."""
    return hashlib.sha256(str(token).encode("utf-8")).hexdigest()


def new_participant_code() -> str:
    """A random participant code (72 bits, URL-safe): who may withdraw an entry."""
    return secrets.token_urlsafe(9)


def submission_id(participant: str, name: str, rationale: str, config: Mapping[str, Any]) -> str:
    """The id of a submission: a hash of who submits what, so the same submission sent twice
    (a double click, a retried command) is stored once."""
    text = canonical_json({"p": participant_hash(participant), "n": name, "r": rationale, "c": config})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Entry:
    """One submitted policy on a board."""

    id: int
    board_id: int
    submission_id: str
    participant: str  # SHA-256 of the participant's token
    name: str
    rationale: str
    kind: str
    dataset: str
    config: dict[str, Any]
    summary: dict[str, Any]
    created_at: float

    def owned_by(self, token: str | None) -> bool:
        """Whether ``token`` is the token of the participant who submitted this entry."""
        return token is not None and hmac.compare_digest(participant_hash(token), self.participant)


@dataclass(frozen=True)
class Board:
    """A board: the open one (``archived_at`` None) or an archived one."""

    id: int
    title: str
    created_at: float
    archived_at: float | None
    entries: int = 0


def _entry(row: Any) -> Entry:
    return Entry(id=int(row.id), board_id=int(row.board_id), submission_id=row.submission_id,
                 participant=row.participant, name=row.name, rationale=row.rationale, kind=row.kind,
                 dataset=row.dataset, config=json.loads(row.config), summary=json.loads(row.summary),
                 created_at=float(row.created_at))


def _clean_text(value: Any, what: str, limit: int, *, required: bool) -> str:
    text = " ".join(str(value or "").split())  # one line: no newlines or runs of blanks
    if required and not text:
        raise StoreError(f"Give the {what}.", hint="A short name others will recognise.")
    if len(text) > limit:
        raise StoreError(f"The {what} is {len(text)} characters long; at most {limit} are kept on the board.",
                         hint="Shorten it.")
    return text


# ---------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------


def redact(url: str | sa.URL) -> str:
    """A database URL without its password, for messages and the UI."""
    try:
        return sa.make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - not a URL at all: show nothing of it
        return "(not a database URL)"


class BoardStore:
    """The board of a workshop in one database.

    ``url``: an SQLAlchemy URL (``sqlite:///workshop/board.sqlite``,
    ``postgresql+psycopg://user@host/db``); a SQLite file's folder is created if missing.
    ``facilitator_key``: the key given at launch (``PRDP_FACILITATOR_KEY``); None turns the
    facilitator's actions off. Opening runs the missing migrations. Every error is a
    :class:`~prdp_core.core.errors.StoreError` (or :class:`~prdp_core.core.errors.AccessError` for an
    action the caller may not take) whose message says what to fix.
    """

    def __init__(self, url: str, *, facilitator_key: str | None = None) -> None:
        try:
            u = sa.make_url(url)
        except Exception:  # noqa: BLE001 - sqlalchemy raises ArgumentError (and others) on junk
            raise StoreError("The board database URL is not an SQLAlchemy URL.",
                             hint="Use e.g. sqlite:///workshop/board.sqlite or "
                                  "postgresql+psycopg://user@host/dbname.") from None
        self.url = u
        self.facilitator_key = facilitator_key or None
        kwargs: dict[str, Any] = {}
        if u.get_backend_name() == "sqlite":
            db = u.database or ""
            if db in ("", ":memory:") or db.startswith("file:"):
                raise StoreError("The board needs a SQLite file, not an in-memory database.",
                                 hint="Use sqlite:///path/to/board.sqlite.")
            try:
                Path(db).expanduser().parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as err:
                raise StoreError(f"Cannot create the folder of the board database {db}: {err.strerror or err}.",
                                 hint="Choose a writable workshop folder (PRDP_WORKSHOP_DIR).") from None
            private_sqlite(Path(db).expanduser())  # it holds per-record losses: 0600, its journal files too
            kwargs["connect_args"] = {"timeout": SQLITE_BUSY_SECONDS}
        else:
            kwargs["pool_pre_ping"] = True
        try:
            self.engine = sa.create_engine(u, **kwargs)
        except Exception as err:  # noqa: BLE001 - unknown dialect or driver not installed
            raise StoreError(f"Cannot use the board database {redact(u)}: {err}.",
                             hint="PostgreSQL needs the psycopg driver (pip install 'prdp-explorer[postgres]') "
                                  "and a URL starting postgresql+psycopg://.") from None
        if u.get_backend_name() == "sqlite":
            sqlite_setup(self.engine)
        with self._tx() as conn:
            if self.engine.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
            self.migrated_from = migrate(conn)

    # -- plumbing -------------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"BoardStore({redact(self.url)!r})"

    @property
    def where(self) -> str:
        """The database, without its password (for messages)."""
        return redact(self.url)

    def _tx(self) -> Any:
        return _Transaction(self)

    def dispose(self) -> None:
        """Close the database connections."""
        self.engine.dispose()

    def version(self) -> int:
        with self._tx() as conn:
            return _stored_version(conn)

    def _check_facilitator(self, key: str | None) -> None:
        if self.facilitator_key is None:
            raise AccessError("Facilitator actions are off on this server.",
                              hint="Start the app with PRDP_FACILITATOR_KEY set to a passphrase.")
        if not isinstance(key, str) or not hmac.compare_digest(key.encode("utf-8"),
                                                                self.facilitator_key.encode("utf-8")):
            raise AccessError("That is not the facilitator key.", hint="Ask the facilitator.")

    def is_facilitator(self, key: str | None) -> bool:
        """Whether ``key`` is the facilitator key (constant-time comparison)."""
        try:
            self._check_facilitator(key)
        except AccessError:
            return False
        return True

    @staticmethod
    def _open_board(conn: Connection, *, lock: bool = False) -> int:
        q = sa.select(boards.c.id).where(boards.c.archived_at.is_(None)).order_by(boards.c.id.desc()).limit(1)
        if lock and conn.dialect.name == "postgresql":
            q = q.with_for_update(read=True)  # an archive waits for submissions in flight, and vice versa
        row = conn.execute(q).first()
        if row is not None:
            return int(row[0])
        return _new_board(conn, boards, "Workshop board", time.time())

    # -- participants -----------------------------------------------------------------------

    def submit(self, *, participant: str, name: str, config: Mapping[str, Any], summary: Mapping[str, Any],
               kind: str, dataset: str, rationale: str = "", sub_id: str | None = None) -> tuple[Entry, bool]:
        """Put a policy on the open board; returns (the entry, whether it is new).

        ``participant`` is the submitter's token (stored hashed). ``sub_id`` defaults to
        :func:`submission_id` of (participant, name, rationale, config): sending the same
        submission again returns the stored entry and adds nothing."""
        if not participant:
            raise StoreError("A submission needs the participant's token.")
        name = _clean_text(name, "name of the policy", MAX_NAME, required=True)
        rationale = _clean_text(rationale, "rationale", MAX_RATIONALE, required=False)
        cfg, summ = canonical_json(config), canonical_json(summary)
        if len(cfg.encode("utf-8")) > MAX_CONFIG_JSON:
            raise StoreError("The study config is too large for the board.", hint="Submit a shorter policy.")
        if len(summ.encode("utf-8")) > MAX_SUMMARY_JSON:
            raise StoreError("The policy's summary is too large for the board.")
        sid = sub_id or submission_id(participant, name, rationale, config)
        row = {"submission_id": sid, "participant": participant_hash(participant), "name": name,
               "rationale": rationale, "kind": str(kind)[:40], "dataset": str(dataset)[:300], "config": cfg,
               "summary": summ, "created_at": time.time()}
        with self._tx() as conn:
            row["board_id"] = self._open_board(conn, lock=True)
            dialect = conn.dialect.name
            if dialect in ("sqlite", "postgresql"):
                from sqlalchemy.dialects import postgresql, sqlite

                insert: Any = sqlite.insert if dialect == "sqlite" else postgresql.insert
                ins = insert(entries).values(**row).on_conflict_do_nothing(index_elements=["submission_id"])
                created = conn.execute(ins.returning(entries.c.id)).first() is not None
            else:  # other databases: the UNIQUE constraint refuses the second insert
                try:
                    with conn.begin_nested():
                        conn.execute(entries.insert().values(**row))
                    created = True
                except sa.exc.IntegrityError:
                    created = False
            got = conn.execute(sa.select(entries).where(entries.c.submission_id == sid)).first()
        return _entry(got), created

    def entries(self, board_id: int | None = None) -> list[Entry]:
        """The entries of a board (default: the open one), oldest first."""
        with self._tx() as conn:
            b = self._open_board(conn) if board_id is None else int(board_id)
            rows = conn.execute(sa.select(entries).where(entries.c.board_id == b).order_by(entries.c.id)).all()
        return [_entry(r) for r in rows]

    def entry(self, entry_id: int) -> Entry:
        with self._tx() as conn:
            row = conn.execute(sa.select(entries).where(entries.c.id == int(entry_id))).first()
        if row is None:
            raise StoreError(f"There is no entry #{entry_id} on the board (withdrawn or cleared).")
        return _entry(row)

    def withdraw(self, entry_id: int, participant: str | None) -> None:
        """Remove one's own entry; AccessError when it is someone else's."""
        with self._tx() as conn:
            row = conn.execute(sa.select(entries.c.participant).where(entries.c.id == int(entry_id))).first()
            if row is None:
                raise StoreError(f"There is no entry #{entry_id} on the board (withdrawn or cleared).")
            if participant is None or not hmac.compare_digest(participant_hash(participant), row.participant):
                raise AccessError("You can withdraw only your own entries.",
                                  hint="This entry was submitted by another participant.")
            conn.execute(entries.delete().where(entries.c.id == int(entry_id)))

    # -- settings ----------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        """The facilitator's settings, with defaults for those never set."""
        with self._tx() as conn:
            rows = conn.execute(sa.select(settings.c.key, settings.c.value)).all()
        out = dict(DEFAULT_SETTINGS)
        out.update({r.key: json.loads(r.value) for r in rows if r.key in DEFAULT_SETTINGS})
        return out

    def _put(self, key: str, value: Any) -> None:
        with self._tx() as conn:
            conn.execute(settings.delete().where(settings.c.key == key))
            conn.execute(settings.insert().values(key=key, value=canonical_json(value), updated_at=time.time()))

    # -- facilitator ---------------------------------------------------------------------------

    def pin_dataset(self, dataset: Mapping[str, Any] | None, *, key: str | None) -> None:
        """Pin the workshop dataset for everyone (``{"sample": name, "n": …, "seed": …}`` or
        ``{"file": name}`` of the data folder, with its ``schema`` and ``prepare``:
        :func:`.workshop.normal_pin`), or unpin it (None)."""
        from .workshop import normal_pin

        self._check_facilitator(key)
        self._put("dataset", normal_pin(dataset))

    def set_mode(self, mode: str, *, key: str | None) -> None:
        """The board's mode: ``review`` hides every statistic of the records for every viewer;
        ``teaching`` lets each viewer's own mode decide (the stricter wins)."""
        self._check_facilitator(key)
        if mode not in MODES:
            raise StoreError(f"The board's mode is one of {', '.join(MODES)}.")
        self._put("mode", mode)

    def set_delta(self, delta: float, *, key: str | None) -> None:
        """The workshop's δ: the (ε, δ) column of the board converts zCDP losses at it."""
        self._check_facilitator(key)
        try:
            d = float(delta)
        except (TypeError, ValueError):
            d = float("nan")
        if not 0.0 < d <= 0.1:
            raise StoreError("The workshop's δ must be in (0, 0.1].", hint="Typical values: 1e-6 to 1e-10.")
        self._put("delta", d)

    def remove(self, entry_id: int, *, key: str | None) -> None:
        """The facilitator removes any entry (e.g. a test or an unsuitable name)."""
        self._check_facilitator(key)
        with self._tx() as conn:
            conn.execute(entries.delete().where(entries.c.id == int(entry_id)))

    def clear(self, *, key: str | None) -> int:
        """Delete every entry of the open board; returns how many."""
        self._check_facilitator(key)
        with self._tx() as conn:
            b = self._open_board(conn, lock=True)
            return int(conn.execute(entries.delete().where(entries.c.board_id == b)).rowcount or 0)

    def archive(self, *, key: str | None, title: str = "Workshop board") -> Board:
        """Close the open board (its entries are kept, readable by id) and open a new, empty one."""
        self._check_facilitator(key)
        title = _clean_text(title, "board title", 200, required=True)
        now = time.time()
        with self._tx() as conn:
            b = self._open_board(conn)
            if conn.dialect.name == "postgresql":
                conn.execute(sa.select(boards.c.id).where(boards.c.id == b).with_for_update())
            conn.execute(boards.update().where(boards.c.id == b).values(archived_at=now))
            new = _new_board(conn, boards, title, now)
        return Board(new, title, now, None, 0)

    def boards(self) -> list[Board]:
        """Every board, newest first, with its number of entries."""
        n = sa.func.count(entries.c.id)
        q = (sa.select(boards, n.label("n")).select_from(boards.outerjoin(entries, entries.c.board_id == boards.c.id))
             .group_by(boards.c.id, boards.c.title, boards.c.created_at, boards.c.archived_at)
             .order_by(boards.c.id.desc()))
        with self._tx() as conn:
            self._open_board(conn)
            rows = conn.execute(q).all()
        return [Board(int(r.id), r.title, float(r.created_at), None if r.archived_at is None else float(r.archived_at),
                      int(r.n)) for r in rows]


class _Transaction:
    """``with store._tx() as conn``: one transaction; database failures become StoreError."""

    def __init__(self, store: BoardStore) -> None:
        self.store = store
        self._cm: Any = None

    def __enter__(self) -> Connection:
        try:
            self._cm = self.store.engine.begin()
            return self._cm.__enter__()
        except sa.exc.SQLAlchemyError as err:
            raise _store_error(self.store, err) from None

    def __exit__(self, *exc: Any) -> None:
        try:
            self._cm.__exit__(*exc)
        except sa.exc.SQLAlchemyError as err:
            raise _store_error(self.store, err) from None
        if exc[0] is not None and issubclass(exc[0], sa.exc.SQLAlchemyError):
            raise _store_error(self.store, exc[1]) from None


def _store_error(store: BoardStore, err: BaseException) -> PrdpError:
    reason = getattr(err, "orig", None) or err
    text = str(reason).strip().splitlines()[0] if str(reason).strip() else type(reason).__name__
    return StoreError(f"The board database {store.where} cannot be used: {text}.",
                      hint="Check that the database is reachable and writable (PRDP_BOARD_URL, --board).")


__all__ = ["Board", "BoardStore", "DEFAULT_SETTINGS", "Entry", "MIGRATIONS", "SCHEMA_VERSION", "canonical_json",
           "migrate", "new_participant_code", "participant_hash", "redact", "submission_id"]
