"""Durable app sessions in the workshop store: what a browser session needs to come back after a
server restart or a reconnect — its data source, its study config, its privacy ledger and the releases its
report renders (:mod:`.session_releases`, layout version 6).

Tables (schema version 5, created by :data:`prdp_core.board.store.MIGRATIONS`)::

    sessions (key_hash, ledger_id, source, upload_sha, config, created_at, seen_at, saved_at,
              browser_hash, transfer_hash, transfer_until, transfer_tries)      (the last four: version 5)
    uploads  (sha256, filename, size, created_at, used_at)

**The key.** A session is named by a random key (:func:`new_key`: 192 bits, URL-safe) that the app
keeps in its URL (query parameter ``s``). The store keeps its SHA-256 only (:func:`key_hash`), so
reading the database does not give anyone a working address.

**The browser it belongs to.** A key alone does not open a session: each session is bound to the
secret of the browser that created it (:func:`new_browser_secret`, kept by the browser in a cookie;
the store keeps its SHA-256, :func:`browser_hash`). :meth:`SessionStore.admit` opens a session only
for its own browser, and every write (:meth:`SessionStore.save`, :meth:`SessionStore.ledger_id`)
checks the binding, so an address planted in another browser neither shows that browser the
session nor receives what that browser does. A session stored before version 5 has no binding: the
first browser that opens or writes it takes it. The owner moves a session to another browser with
a transfer code (:meth:`SessionStore.new_transfer_code`, :meth:`SessionStore.transfer`): made by the
bound browser, kept hashed, valid :data:`TRANSFER_SECONDS` and for :data:`TRANSFER_TRIES` wrong
tries, used once; the browser that enters it becomes the session's only browser.

**What is stored.** The data source as the app's source record (JSON): a sample by name, size and
seed; a table of the data folder by name and content hash; a large table by its path or handle; an
uploaded table by the SHA-256 of its bytes — the bytes themselves stored once per content in the
uploads folder (mode 0700; file ``<sha256>``, mode 0600, written to a temporary file and renamed;
both tightened when found looser), with its roles and fixes in the source record. The study config
is the app's ``export_state`` (no data values). The ledger is a :mod:`.ledgers` ledger, appended entry by entry.

**Retention** (:class:`Retention`; applied when the app opens the store and after each new upload,
:meth:`SessionStore.apply_retention`): an uploaded table that no session has used for
``max_age_days`` is deleted; while the uploads together exceed ``max_bytes``, the least recently
used are deleted first. A table a live session uses (seen within ``live_hours``) is never deleted.
Sessions and their ledgers are kept (small rows; a ledger never resets): a session whose table was
deleted restores its ledger and says that its table is gone.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.errors import AccessError, StoreError
from ..io.private_files import DIR_MODE, FILE_MODE, private_dir, tighten
from . import session_releases
from .canonical import canonical_json
from .ledgers import LedgerStore, dialect_insert, jsonable

if TYPE_CHECKING:
    from .store import BoardStore

#: The query parameter of the app's URL that carries the session key.
KEY_PARAM = "s"
#: A session key as the app writes it (``secrets.token_urlsafe(24)``: 32 characters) or longer.
KEY_PATTERN = re.compile(r"[A-Za-z0-9_-]{32,86}")
#: Largest stored study config and source record (bytes of JSON).
MAX_CONFIG_JSON = 2_000_000

ENV_RETENTION_DAYS = "PRDP_UPLOAD_RETENTION_DAYS"
ENV_MAX_GB = "PRDP_UPLOAD_MAX_GB"
#: Files of the uploads folder that no row names (a crash between writing and recording) are
#: removed once they are this old (seconds).
ORPHAN_SECONDS = 86_400
_SHA = re.compile(r"[0-9a-f]{64}")

#: Seconds a transfer code stays valid, and how many wrong codes void it.
TRANSFER_SECONDS = 600
TRANSFER_TRIES = 5
#: Letters of a transfer code (no 0/O, 1/I/L) and its length: 10 of 31 letters, about 49 bits.
TRANSFER_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
TRANSFER_LENGTH = 10


def _binding_columns() -> list[sa.Column]:
    """The columns version 5 adds to ``sessions``: the browser's hash and the pending transfer code."""
    return [sa.Column("browser_hash", sa.String(64), nullable=True),
            sa.Column("transfer_hash", sa.String(64), nullable=True),
            sa.Column("transfer_until", sa.Float, nullable=True),
            sa.Column("transfer_tries", sa.Integer, nullable=True)]


def define_tables(md: sa.MetaData, *, with_binding: bool = False) -> tuple[sa.Table, sa.Table]:
    """The ``sessions`` and ``uploads`` tables in ``md``: as layout version 3 created them, or with the browser
    binding of version 5 (:func:`add_binding`)."""
    extra = _binding_columns() if with_binding else []
    ses = sa.Table("sessions", md,
                   sa.Column("key_hash", sa.String(64), primary_key=True),
                   sa.Column("ledger_id", sa.Integer, nullable=False),
                   sa.Column("source", sa.Text, nullable=True),
                   sa.Column("upload_sha", sa.String(64), nullable=True, index=True),
                   sa.Column("config", sa.Text, nullable=True),
                   sa.Column("created_at", sa.Float, nullable=False),
                   sa.Column("seen_at", sa.Float, nullable=False),
                   sa.Column("saved_at", sa.Float, nullable=True), *extra)
    up = sa.Table("uploads", md,
                  sa.Column("sha256", sa.String(64), primary_key=True),
                  sa.Column("filename", sa.String(300), nullable=False),
                  sa.Column("size", sa.BigInteger, nullable=False),
                  sa.Column("created_at", sa.Float, nullable=False),
                  sa.Column("used_at", sa.Float, nullable=False))
    return ses, up


_md = sa.MetaData()
sessions, uploads = define_tables(_md, with_binding=True)


def add_binding(conn: Connection) -> None:
    """Migration step to version 5: the browser binding and transfer code columns of ``sessions``."""
    for col in _binding_columns():
        kind = col.type.compile(dialect=conn.dialect)
        conn.execute(sa.text(f"ALTER TABLE sessions ADD COLUMN {col.name} {kind}"))


def new_key() -> str:
    """A new session key: 192 random bits, URL-safe (32 characters)."""
    return secrets.token_urlsafe(24)


def valid_key(text: Any) -> bool:
    """Whether ``text`` has the form of a session key (checked before any database look-up)."""
    return isinstance(text, str) and KEY_PATTERN.fullmatch(text) is not None


def key_hash(key: str) -> str:
    """What the store keeps of a session key (SHA-256, hex)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_browser_secret() -> str:
    """A new browser secret (192 random bits, URL-safe; the same form as a key, :func:`valid_key`)."""
    return secrets.token_urlsafe(24)


def browser_hash(secret: str) -> str:
    """What the store keeps of a browser secret (SHA-256, hex)."""
    return hashlib.sha256(b"browser:" + secret.encode("utf-8")).hexdigest()


def _code_hash(code: str) -> str:
    return hashlib.sha256(b"transfer:" + code.encode("utf-8")).hexdigest()


def normal_code(text: Any) -> str | None:
    """A transfer code as typed (any case, spaces and dashes) in its stored form, or None if it cannot be one."""
    if not isinstance(text, str):
        return None
    code = re.sub(r"[\s-]", "", text).upper()
    ok = len(code) == TRANSFER_LENGTH and all(c in TRANSFER_ALPHABET for c in code)
    return code if ok else None


def _same(stored: str | None, given: str) -> bool:
    return stored is not None and hmac.compare_digest(stored, given)


def _positive(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw.strip().replace("_", ""))
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise StoreError(f"The environment variable {name} must be a positive number, not {raw[:40]!r}.",
                         hint="Unset it for the default, or give e.g. 30 (days) or 0.5 (GB).")
    return value


@dataclass(frozen=True)
class Retention:
    """How long and how much of the uploaded tables the server keeps.

    ``max_age_days``: a table no session has used for this long is deleted (``PRDP_UPLOAD_RETENTION_DAYS``,
    default 30); ``max_bytes``: beyond this total the least recently used tables are deleted first
    (``PRDP_UPLOAD_MAX_GB``, default 10 GB); ``live_hours``: a table of a session seen this recently is never
    deleted (24 hours)."""

    max_age_days: float = 30.0
    max_bytes: int = 10_000_000_000
    live_hours: float = 24.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Retention":
        env = os.environ if env is None else env
        return cls(max_age_days=_positive(env, ENV_RETENTION_DAYS, 30.0),
                   max_bytes=int(_positive(env, ENV_MAX_GB, 10.0) * 1e9))

    def describe(self) -> str:
        return (f"uploaded tables are kept {self.max_age_days:g} days after their last use and at most "
                f"{self.max_bytes / 1e9:g} GB in all (least recently used deleted first); a table of a session "
                f"seen in the last {self.live_hours:g} hours is never deleted")


@dataclass(frozen=True)
class SavedSession:
    """A stored session: its data source record, study config (None before the first save) and ledger."""

    source: dict[str, Any] | None
    config: dict[str, Any] | None
    ledger_id: int
    created_at: float
    seen_at: float
    saved_at: float | None
    browser_hash: str | None = None


class SessionStore:
    """Durable sessions in the workshop store ``store``, uploaded tables in the folder ``upload_dir``."""

    def __init__(self, store: BoardStore, upload_dir: str | os.PathLike, retention: Retention | None = None) -> None:
        self.store = store
        self.upload_dir = Path(upload_dir)
        self.retention = retention or Retention()
        self.ledgers = LedgerStore(store)

    @property
    def where(self) -> str:
        return self.store.where

    # -- sessions ------------------------------------------------------------------------------

    def load(self, key: str) -> SavedSession | None:
        """The stored session of ``key``, or None when the store has none (or ``key`` is not a key)."""
        if not valid_key(key):
            return None
        with self.store._tx() as conn:
            row = conn.execute(sa.select(sessions).where(sessions.c.key_hash == key_hash(key))).first()
        if row is None:
            return None
        try:
            source = None if row.source is None else json.loads(row.source)
            config = None if row.config is None else json.loads(row.config)
        except ValueError:
            raise StoreError("The stored session is damaged (its design cannot be read).",
                             hint="Its ledger is kept; start from a new session.") from None
        return SavedSession(source=source, config=config, ledger_id=int(row.ledger_id),
                            created_at=float(row.created_at), seen_at=float(row.seen_at),
                            saved_at=None if row.saved_at is None else float(row.saved_at),
                            browser_hash=row.browser_hash)

    def ledger_id(self, key: str, *, browser: str | None = None) -> int:
        """The ledger of the session ``key``, the session (and its ledger) created if the store has none, bound
        to the browser whose hash is ``browser``; AccessError when the session belongs to another browser."""
        with self.store._tx() as conn:
            return self._ensure(conn, key, time.time(), browser)

    def _ensure(self, conn: Connection, key: str, now: float, browser: str | None = None) -> int:
        if not valid_key(key):
            raise StoreError("That is not a session key.")
        h = key_hash(key)
        found = conn.execute(sa.select(sessions.c.ledger_id, sessions.c.browser_hash)
                             .where(sessions.c.key_hash == h)).first()
        if found is not None:
            if browser is not None and not self._claim(conn, h, found.browser_hash, browser):
                raise AccessError("This session now belongs to another browser (it was moved there with a transfer "
                                  "code), so nothing of it is saved from here.",
                                  hint="Reload the page to start a new session in this browser.")
            return int(found[0])
        ledger_id = self.ledgers._insert(conn, None, None)
        row = {"key_hash": h, "ledger_id": ledger_id, "created_at": now, "seen_at": now}
        insert = dialect_insert(conn)
        if insert is not None:
            conn.execute(insert(sessions).values(**row).on_conflict_do_nothing(index_elements=["key_hash"]))
        else:
            conn.execute(sessions.insert().values(**row))
        found = conn.execute(sa.select(sessions.c.ledger_id, sessions.c.browser_hash)
                             .where(sessions.c.key_hash == h)).one()
        if browser is not None and not self._claim(conn, h, found.browser_hash, browser):  # bound now, unless
            raise AccessError("This address belongs to another browser.")  # another browser created it at once
        return int(found.ledger_id)

    @staticmethod
    def _claim(conn: Connection, h: str, bound: str | None, browser: str) -> bool:
        """Whether the session of key hash ``h``, bound to ``bound``, belongs to ``browser``; a session without
        a binding (stored before version 5) is bound to ``browser`` now, unless another browser just took it."""
        if bound is not None:
            return _same(bound, browser)
        done = conn.execute(sessions.update().where(sessions.c.key_hash == h, sessions.c.browser_hash.is_(None))
                            .values(browser_hash=browser))
        return done.rowcount == 1

    def admit(self, key: str, browser: str) -> bool:
        """Whether the browser whose hash is ``browser`` may open the stored session ``key``: it is the browser
        the session is bound to (a session without a binding is bound to it now). False also when the store has
        no such session."""
        if not valid_key(key):
            return False
        h = key_hash(key)
        with self.store._tx() as conn:
            row = conn.execute(sa.select(sessions.c.browser_hash).where(sessions.c.key_hash == h)).first()
            return row is not None and self._claim(conn, h, row.browser_hash, browser)

    def new_transfer_code(self, key: str, browser: str, *, now: float | None = None) -> tuple[str, float]:
        """A one-time code that moves the session ``key`` to another browser, made by the browser it belongs to
        (hash ``browser``; AccessError for any other); returns the code and the time it expires. A new code
        replaces the previous one."""
        now = time.time() if now is None else now
        code = "".join(secrets.choice(TRANSFER_ALPHABET) for _ in range(TRANSFER_LENGTH))
        until = now + TRANSFER_SECONDS
        with self.store._tx() as conn:
            self._ensure(conn, key, now, browser)
            conn.execute(sessions.update().where(sessions.c.key_hash == key_hash(key))
                         .values(transfer_hash=_code_hash(code), transfer_until=until, transfer_tries=0))
        return code, until

    def transfer(self, key: str, code: str, browser: str, *, now: float | None = None) -> None:
        """Bind the session ``key`` to the browser whose hash is ``browser``, given the session's transfer code
        (:meth:`new_transfer_code`): valid once, before it expires and within :data:`TRANSFER_TRIES` wrong tries.
        The browser it was bound to loses it. AccessError (saying what to do) when the code does not move it."""
        now = time.time() if now is None else now
        wrong = AccessError("This transfer code does not open this address: it is mistyped, used already, or "
                            f"older than {TRANSFER_SECONDS // 60} minutes.",
                            hint="Make a new code in the browser this session belongs to (sidebar: \"Open this "
                                 "session in another browser\") and type it here.")
        given = normal_code(code)
        if not valid_key(key) or given is None:
            raise wrong
        h = key_hash(key)
        with self.store._tx() as conn:
            row = conn.execute(sa.select(sessions.c.transfer_hash, sessions.c.transfer_until,
                                         sessions.c.transfer_tries).where(sessions.c.key_hash == h)).first()
            if row is None or row.transfer_hash is None:
                raise wrong
            live = float(row.transfer_until or 0) >= now and int(row.transfer_tries or 0) < TRANSFER_TRIES
            if live and _same(row.transfer_hash, _code_hash(given)):
                moved = conn.execute(sessions.update().where(sessions.c.key_hash == h,
                                                             sessions.c.transfer_hash == row.transfer_hash)
                                     .values(browser_hash=browser, transfer_hash=None, transfer_until=None,
                                             transfer_tries=None))
                if moved.rowcount == 1:
                    return
            tries = int(row.transfer_tries or 0) + 1
            void = not live or tries >= TRANSFER_TRIES
            conn.execute(sessions.update().where(sessions.c.key_hash == h).values(
                transfer_tries=tries, **({"transfer_hash": None, "transfer_until": None} if void else {})))
        raise wrong

    def save(self, key: str, *, source: Mapping[str, Any], config: Mapping[str, Any] | None,
             browser: str | None = None) -> None:
        """Store the session's data source record and study config (the session is created if new, bound to the
        browser whose hash is ``browser``; AccessError when it belongs to another) and mark its uploaded table, if
        any, as used now."""
        src, cfg = canonical_json(jsonable(dict(source))), None if config is None else canonical_json(jsonable(config))
        if len(src) + len(cfg or "") > MAX_CONFIG_JSON:
            raise StoreError("This session's design is too large to be saved.", hint="Export it as a study file.")
        sha = source.get("upload")
        now = time.time()
        with self.store._tx() as conn:
            self._ensure(conn, key, now, browser)
            conn.execute(sessions.update().where(sessions.c.key_hash == key_hash(key))
                         .values(source=src, config=cfg, upload_sha=sha if isinstance(sha, str) else None,
                                 saved_at=now, seen_at=now))
            if isinstance(sha, str):
                conn.execute(uploads.update().where(uploads.c.sha256 == sha).values(used_at=now))

    def save_releases(self, key: str, payload: str, *, browser: str | None = None) -> None:
        """Store the session's recorded releases (:func:`.session_releases.encode`; the session is created if new,
        bound to ``browser``; AccessError when it belongs to another)."""
        with self.store._tx() as conn:
            self._ensure(conn, key, time.time(), browser)
            session_releases.write(conn, key_hash(key), payload)

    def load_releases(self, key: str) -> str | None:
        """The stored recorded releases of the session ``key`` (None: none stored), to be checked by
        :func:`.session_releases.decode`."""
        if not valid_key(key):
            return None
        with self.store._tx() as conn:
            return session_releases.read(conn, key_hash(key))

    def touch(self, key: str) -> None:
        """The session is alive: its time and its uploaded table's are now (retention keeps them)."""
        now = time.time()
        with self.store._tx() as conn:
            h = key_hash(key)
            conn.execute(sessions.update().where(sessions.c.key_hash == h).values(seen_at=now))
            sha = conn.execute(sa.select(sessions.c.upload_sha).where(sessions.c.key_hash == h)).scalar()
            if sha:
                conn.execute(uploads.update().where(uploads.c.sha256 == sha).values(used_at=now))

    # -- uploaded tables ------------------------------------------------------------------------

    def upload_path(self, sha: str) -> Path | None:
        """Where the bytes of an uploaded table are stored, or None when the server no longer has them (or
        ``sha`` is not a SHA-256: nothing else of the folder is ever named)."""
        if not isinstance(sha, str) or not _SHA.fullmatch(sha):
            return None
        p = self.upload_dir / sha
        return p if p.is_file() else None

    def read_upload(self, sha: str) -> bytes | None:
        """The stored bytes of an uploaded table (checked against their SHA-256), or None when the server no
        longer has them; StoreError when they cannot be read or were changed."""
        p = self.upload_path(sha)
        if p is None:
            return None
        try:
            data = p.read_bytes()
        except OSError as err:
            raise StoreError(f"Cannot read the stored table: {err.strerror or err}.",
                             hint="Check the uploads folder (PRDP_UPLOAD_DIR).") from None
        if hashlib.sha256(data).hexdigest() != sha:
            raise StoreError("The stored table was changed on the server since it was uploaded.",
                             hint="Upload it again.")
        return data

    def put_upload(self, data: bytes | IO[bytes], filename: str) -> str:
        """Store an uploaded table's bytes once per content; returns their SHA-256. A table new to the server
        starts the retention rule (never deleting this one)."""
        try:
            private_dir(self.upload_dir)  # 0700, or tightened to it
        except StoreError as err:
            raise StoreError(f"Cannot keep the uploaded table: {err.message}",
                             hint="Make the uploads folder writable (PRDP_UPLOAD_DIR).") from None
        try:
            digest, size, tmp = self._write_temp(data)
        except OSError as err:
            raise StoreError(f"Cannot keep the uploaded table in {self.upload_dir}: {err.strerror or err}.",
                             hint="Make the uploads folder writable (PRDP_UPLOAD_DIR).") from None
        final = self.upload_dir / digest
        try:
            if final.is_file() and final.stat().st_size == size:
                os.unlink(tmp)
            else:
                os.replace(tmp, final)
        except OSError as err:
            raise StoreError(f"Cannot keep the uploaded table in {self.upload_dir}: {err.strerror or err}.",
                             hint="Make the uploads folder writable (PRDP_UPLOAD_DIR).") from None
        now = time.time()
        with self.store._tx() as conn:
            known = conn.execute(sa.select(uploads.c.sha256).where(uploads.c.sha256 == digest)).first() is not None
            if known:
                conn.execute(uploads.update().where(uploads.c.sha256 == digest).values(used_at=now))
            else:
                conn.execute(uploads.insert().values(sha256=digest, filename=str(filename)[:300], size=size,
                                                     created_at=now, used_at=now))
        if not known:
            self.apply_retention(keep=(digest,))
        return digest

    def _write_temp(self, data: bytes | IO[bytes]) -> tuple[str, int, str]:
        """Write ``data`` to a temporary file of the uploads folder (mode 0600), hashing it on the way."""
        digest = hashlib.sha256()
        size = 0
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.upload_dir)
        try:
            with os.fdopen(fd, "wb") as out:
                if isinstance(data, (bytes, bytearray, memoryview)):
                    chunks: Any = [bytes(data)]
                else:
                    if hasattr(data, "seek"):
                        data.seek(0)
                    chunks = iter(lambda: data.read(1 << 20), b"")
                for chunk in chunks:
                    digest.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
        except BaseException:
            os.unlink(tmp)
            raise
        return digest.hexdigest(), size, tmp

    def apply_retention(self, *, keep: tuple[str, ...] = (), now: float | None = None) -> list[str]:
        """Delete the uploaded tables the retention rule lets go (see :class:`Retention`), never one a live
        session uses or one of ``keep``; returns their SHA-256, least recently used first."""
        now = time.time() if now is None else now
        r = self.retention
        with self.store._tx() as conn:
            live = {s for (s,) in conn.execute(sa.select(sessions.c.upload_sha).where(
                sessions.c.seen_at >= now - r.live_hours * 3600, sessions.c.upload_sha.is_not(None))).all()}
            rows = conn.execute(sa.select(uploads.c.sha256, uploads.c.size, uploads.c.used_at)
                                .order_by(uploads.c.used_at, uploads.c.sha256)).all()
            total = sum(int(x.size) for x in rows)
            doomed = []
            for x in rows:
                if x.sha256 in live or x.sha256 in keep:
                    continue
                if x.used_at < now - r.max_age_days * 86_400 or total > r.max_bytes:
                    doomed.append(x.sha256)
                    total -= int(x.size)
            if doomed:
                conn.execute(uploads.delete().where(uploads.c.sha256.in_(doomed)))
            known = {x.sha256 for x in rows} - set(doomed)
        for sha in doomed:
            (self.upload_dir / sha).unlink(missing_ok=True)
        self._remove_orphans(known | set(keep), now)
        return doomed

    def _remove_orphans(self, known: set[str], now: float) -> None:
        """Tables of the uploads folder no row names and temporary files left by a crash, once a day old; the
        folder (0700) and the tables kept (0600) tightened when their modes are looser. Only names this module
        writes (``<sha256>``, ``.tmp-…``) are ever considered."""
        if not self.upload_dir.is_dir():
            return
        tighten(self.upload_dir, DIR_MODE)
        for p in self.upload_dir.iterdir():
            ours = _SHA.fullmatch(p.name) is not None or p.name.startswith(".tmp-")
            if ours and p.is_file() and not p.is_symlink():
                tighten(p, FILE_MODE)
            try:
                if ours and p.name not in known and p.is_file() and now - p.stat().st_mtime > ORPHAN_SECONDS:
                    p.unlink()
            except OSError:
                continue

    def uploads_size(self) -> int:
        """Total size of the uploaded tables the store keeps."""
        with self.store._tx() as conn:
            return int(conn.execute(sa.select(sa.func.coalesce(sa.func.sum(uploads.c.size), 0))).scalar() or 0)


__all__ = ["KEY_PARAM", "TRANSFER_SECONDS", "TRANSFER_TRIES", "Retention", "SavedSession", "SessionStore",
           "add_binding", "browser_hash", "define_tables", "key_hash", "new_browser_secret", "new_key", "normal_code",
           "valid_key"]
