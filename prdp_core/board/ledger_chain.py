"""The seal of a stored privacy ledger: a keyed hash chain over its entries, so that an entry edited,
removed, added or moved in the store is found before the ledger is used.

Each stored entry carries ``hash`` = HMAC-SHA-256 under the server's ledger key of a canonical
serialisation of everything the store keeps of it — the ledger it belongs to, its position, its id
(``uid``), the entry as stored (label, mechanism, loss function with its per-record values, params,
seed, secure marker, neighbour notion), the data it ran on, who appended it, the statistics ``prdp ledger
show`` prints and its time — and of the previous entry's hash (the first entry's: the ledger's genesis,
bound to the ledger's id). The ledger keeps its **seal** (``ledgers.seal``, JSON): the number of entries
sealed, the **head** — HMAC over the ledger's id, name, the data it belongs to, that number and the last
entry's hash — the key's id (which key sealed it, for the message when another key is in use) and, for a
ledger that was stored before ledgers were sealed, how many of its entries were sealed by the upgrade and
when. :func:`verify` walks the chain and names the first entry that does not match (its position and id)
or says that entries are missing from the end.

**The key** (:func:`server_key`): ``PRDP_LEDGER_KEY`` when set, else the file ``ledger.key`` (32 random
bytes, mode 0600, created on first use) beside the SQLite database, or in the workshop folder for a server
database. Every process that writes or reads the store must use the same key (app replicas, ``prdp run
--ledger`` on another machine): set ``PRDP_LEDGER_KEY`` for them all. Whoever can write the database but
cannot read the key cannot make an edited ledger pass; whoever holds the key can (docs/security.md,
*Ledgers that detect tampering*).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import sqlalchemy as sa

from ..core.errors import StoreError
from ..io.private_files import FILE_MODE, private_dir, private_file, tighten

ENV_LEDGER_KEY = "PRDP_LEDGER_KEY"
KEY_FILE = "ledger.key"
#: Shortest key accepted from ``PRDP_LEDGER_KEY`` (characters).
MIN_KEY_CHARS = 16
_CHAIN_VERSION = "prdp-ledger-chain-1"


class TamperedLedger(StoreError):
    """A stored ledger that does not match its seal: changed in the store after it was written (or sealed with
    another key). It is refused, never used."""

    title = "Ledger integrity check failed"


def key_path(url: str | sa.URL, env: Mapping[str, str] | None = None) -> Path:
    """Where the key file of the store at ``url`` is: beside a SQLite database, else in the workshop folder."""
    from .workshop import workshop_dir

    u = sa.make_url(url)
    if u.get_backend_name() == "sqlite" and u.database:
        return Path(u.database).expanduser().resolve().parent / KEY_FILE
    return workshop_dir(env) / KEY_FILE


def server_key(url: str | sa.URL, env: Mapping[str, str] | None = None) -> bytes:
    """The ledger key of the store at ``url``: ``PRDP_LEDGER_KEY``, else its key file (created, 0600, on first use;
    tightened to 0600 when looser)."""
    env = os.environ if env is None else env
    given = env.get(ENV_LEDGER_KEY)
    if given:
        if len(given) < MIN_KEY_CHARS:
            raise StoreError(f"{ENV_LEDGER_KEY} is too short ({len(given)} characters; at least {MIN_KEY_CHARS}).",
                             hint="Use a long random value, e.g. python -c 'import secrets; "
                                  "print(secrets.token_hex(32))'.")
        return given.encode("utf-8")
    path = key_path(url, env)
    if not path.exists():
        if not path.parent.exists():
            private_dir(path.parent)
        _create_key(path)
    tighten(path, FILE_MODE)
    try:
        text = path.read_text(encoding="ascii").strip()
        key = bytes.fromhex(text)
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise StoreError(f"Cannot read the ledger key {path}: {getattr(err, 'strerror', None) or err}.",
                         hint=f"Restore the file from a backup, or set {ENV_LEDGER_KEY}.") from None
    if len(key) < 16:
        raise StoreError(f"The ledger key {path} is damaged (too short).",
                         hint=f"Restore the file from a backup, or set {ENV_LEDGER_KEY}.")
    return key


def _create_key(path: Path) -> None:
    """Write a new random key to ``path`` unless another process got there first (temporary file, then a link
    that fails when ``path`` exists: never a half-written key)."""
    tmp = path.with_name(f".{KEY_FILE}.{secrets.token_hex(6)}")
    try:
        private_file(tmp)
        tmp.write_text(secrets.token_hex(32) + "\n", encoding="ascii")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    except OSError as err:
        raise StoreError(f"Cannot create the ledger key {path}: {err.strerror or err}.",
                         hint=f"Make the folder writable, or set {ENV_LEDGER_KEY}.") from None
    finally:
        tmp.unlink(missing_ok=True)


def key_id(key: bytes) -> str:
    """A short public name of a key (which key sealed a ledger), from which the key cannot be found."""
    return hmac.new(key, b"prdp ledger key id", hashlib.sha256).hexdigest()[:16]


def _number(v: Any) -> str | None:
    """A float as its exact hexadecimal form (∞ and NaN included), None as None."""
    return None if v is None else float(v).hex()


def _mac(key: bytes, obj: Mapping[str, Any]) -> str:
    text = json.dumps({"v": _CHAIN_VERSION, **obj}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def genesis(key: bytes, ledger_id: int) -> str:
    """The "previous hash" of a ledger's first entry."""
    return _mac(key, {"genesis": int(ledger_id)})


def entry_hash(key: bytes, ledger_id: int, seq: int, row: Any, prev: str) -> str:
    """The hash of a stored entry at position ``seq`` (from 1), given the previous one. ``row`` has the columns of
    ``ledger_entries`` (a database row or an object with those attributes)."""
    return _mac(key, {"ledger": int(ledger_id), "seq": int(seq), "prev": prev, "uid": row.uid, "entry": row.entry,
                      "fingerprint": row.fingerprint, "origin": row.origin or "", "largest": _number(row.largest),
                      "total_rho": _number(row.total_rho), "total_eps": _number(row.total_eps),
                      "created_at": _number(row.created_at)})


@dataclass(frozen=True)
class Seal:
    """What a ledger keeps of its chain: ``entries`` sealed, the ``head``, the ``key`` id, and for a ledger stored
    before ledgers were sealed, ``upgraded`` (how many of its entries the upgrade sealed) and ``upgraded_at``."""

    entries: int
    head: str
    key: str
    upgraded: int | None = None
    upgraded_at: float | None = None

    def to_json(self) -> str:
        return json.dumps({"entries": self.entries, "head": self.head, "key": self.key, "upgraded": self.upgraded,
                           "upgraded_at": self.upgraded_at}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> "Seal | None":
        if not text:
            return None
        try:
            d = json.loads(text)
            return cls(int(d["entries"]), str(d["head"]), str(d["key"]),
                       None if d.get("upgraded") is None else int(d["upgraded"]),
                       None if d.get("upgraded_at") is None else float(d["upgraded_at"]))
        except (ValueError, TypeError, KeyError):
            return None


def head(key: bytes, ledger: Any, entries: int, last: str, *, upgraded: int | None = None,
         upgraded_at: float | None = None) -> Seal:
    """The seal of a ledger (``ledger`` has the columns of ``ledgers``) holding ``entries`` entries, the last one's
    hash ``last`` (the genesis when empty)."""
    h = _mac(key, {"head": int(ledger.id), "name": ledger.name, "fingerprint": ledger.fingerprint,
                   "entries": int(entries), "last": last, "upgraded": upgraded, "upgraded_at": _number(upgraded_at)})
    return Seal(int(entries), h, key_id(key), upgraded, upgraded_at)


def seal_rows(key: bytes, ledger_id: int, rows: Sequence[Any], prev: str | None = None,
              start: int = 1) -> list[str]:
    """The hashes of ``rows`` appended at positions ``start``, ``start + 1``, … after ``prev`` (default: the
    genesis)."""
    prev = genesis(key, ledger_id) if prev is None else prev
    out = []
    for i, r in enumerate(rows, start):
        prev = entry_hash(key, ledger_id, i, r, prev)
        out.append(prev)
    return out


_HINT = ("It is not used: its totals could be wrong. Restore the database from a backup taken before the change "
         "(docs/security.md, Ledgers that detect tampering).")


def verify(key: bytes, ledger: Any, rows: Sequence[Any]) -> str:
    """Check a ledger's chain and seal: the last entry's hash (the genesis when empty), or a :class:`TamperedLedger`
    naming the first entry that does not match (its position and id), or saying which entries are missing from the
    end or that the seal was changed. ``rows`` are its ``ledger_entries`` rows in order."""
    what = f"The ledger '{ledger.name}'" if ledger.name else "This session's privacy ledger"
    changed = f"{what} was changed in the store:"
    seal = Seal.from_json(getattr(ledger, "seal", None))
    if seal is None:
        raise TamperedLedger(f"{changed} its seal (the head kept with the ledger) was removed, so its {len(rows)} "
                             "entries cannot be checked.", hint=_HINT)
    other_key = TamperedLedger(
        f"{what} was sealed with another ledger key (key id {seal.key}; this server's is {key_id(key)}).",
        hint=f"Set {ENV_LEDGER_KEY} (or the key file {KEY_FILE}) to the key it was sealed with; if no one changed the "
             "key, treat the ledger as changed in the store.")
    wanted = seal_rows(key, ledger.id, rows)  # the chain as sealing these rows makes it
    for i, (r, want) in enumerate(zip(rows, wanted), 1):
        if not isinstance(r.hash, str) or not hmac.compare_digest(want, r.hash):
            if seal.key != key_id(key):
                raise other_key
            raise TamperedLedger(f"{changed} entry #{i} of {len(rows)} (id {r.uid}) does not match its seal — it, or "
                                 "its place in the order, or an entry before it was edited, removed or inserted.",
                                 hint=_HINT)
    prev = wanted[-1] if wanted else genesis(key, ledger.id)
    good = head(key, ledger, len(rows), prev, upgraded=seal.upgraded, upgraded_at=seal.upgraded_at)
    if hmac.compare_digest(good.head, seal.head) and seal.entries == len(rows):
        return prev
    if seal.key != key_id(key):
        raise other_key
    if seal.entries > len(rows):
        missing = f"#{len(rows) + 1}" if seal.entries == len(rows) + 1 else f"#{len(rows) + 1}–#{seal.entries}"
        after = f" (after entry #{len(rows)}, id {rows[-1].uid})" if rows else " (the ledger has no entry left)"
        raise TamperedLedger(f"{changed} entry {missing}{after} was removed — the seal counts {seal.entries} entries "
                             f"and {len(rows)} are left.", hint=_HINT)
    raise TamperedLedger(f"{changed} its seal (the head kept with the ledger, over its {len(rows)} entries and the "
                         "data it belongs to) does not match.", hint=_HINT)


__all__ = ["ENV_LEDGER_KEY", "KEY_FILE", "Seal", "TamperedLedger", "entry_hash", "genesis", "head", "key_id",
           "key_path", "seal_rows", "server_key", "verify"]
