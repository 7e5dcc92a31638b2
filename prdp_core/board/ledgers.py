"""Privacy ledgers in the workshop store: each app session's ledger and the named ledgers of
``prdp run --ledger NAME``, so that losses keep adding up across server restarts and headless runs.

Tables (schema version 3, created by :data:`prdp_core.board.store.MIGRATIONS`; ``seal`` and ``hash``
added by version 4)::

    ledgers        (id, name UNIQUE NULL, fingerprint, created_at, seal)
                   a named ledger (``prdp run --ledger``) or, without a name, an app session's
    ledger_entries (id, ledger_id, uid UNIQUE, entry, fingerprint, origin, largest, total_rho,
                   total_eps, created_at, hash)

Every ledger is sealed by a keyed hash chain (:mod:`.ledger_chain`): each read and each append checks
it first, and a ledger changed in the store is refused (:class:`~.ledger_chain.TamperedLedger`, naming
the first entry that does not match), never used or appended to.

An entry is a :class:`~prdp_core.core.accounting.LedgerEntry` as ``to_dict`` writes it (label, mechanism,
the loss function's public form, params, seed, secure, neighbour notion). ``to_dict`` keeps only a
summary of a data-dependent loss (:class:`~prdp_core.core.accounting.RecordLoss`: note, bound, n), which
cannot be totalled again; the store keeps its per-record values too — exactly what the ledger held
in memory — packed (float64, zlib, base64) under ``values_z``, so that a restored ledger's
per-record totals equal the original's. They are confidential: the database is as confidential as
the data (docs/security.md, *Durability*). ``fingerprint`` says which data the entry ran on
(:func:`data_fingerprint`); ``uid`` makes an append idempotent (a retried append adds nothing).

A named ledger belongs to the data of its first run. An append for other data is refused
(:class:`~prdp_core.core.errors.StoreError`) unless ``new_data`` is given: the ledger then moves to the
new data and every earlier entry on other data counts at its worst case for every record (sound when
the records are the same people in another version of the table; never a reset). When a ledger is
appended with its table, the store also keeps the statistics ``prdp ledger show`` prints without the
data: the largest loss of a record in the entry and the largest per-record total so far (ρ; ε while
every entry is pure ε) — never a per-record value.
"""

from __future__ import annotations

import base64
import json
import math
import re
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core import splitting, workload  # noqa: F401 - register their loss kinds (split, splitting_policy)
from ..core.accounting import (
    DistributionLoss,
    FlatLoss,
    Ledger,
    LedgerEntry,
    LossFunction,
    ParallelLoss,
    RecordLoss,
    SumLoss,
    _plain,
)
from ..core.errors import ConfigError, DataError, ParameterError, StoreError
from . import ledger_chain
from .canonical import canonical_json
from .workshop import sha256_file

if TYPE_CHECKING:
    from ..study.config import Study
    from .store import BoardStore

#: Largest stored entry (bytes of JSON, packed per-record values included).
MAX_ENTRY_JSON = 64_000_000
#: A ledger name: letters, digits, '.', '_' and '-', 1–100 characters (it appears in commands and files).
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def define_tables(md: sa.MetaData, *, sealed: bool = True) -> tuple[sa.Table, sa.Table]:
    """The ``ledgers`` and ``ledger_entries`` tables in ``md``: as layout version 4 has them (``seal`` and ``hash``,
    :mod:`.ledger_chain`), or as version 3 created them (``sealed=False``)."""
    chain = [sa.Column("seal", sa.Text, nullable=True)] if sealed else []
    led = sa.Table("ledgers", md,
                   sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                   sa.Column("name", sa.String(100), nullable=True, unique=True),
                   sa.Column("fingerprint", sa.Text, nullable=True),
                   sa.Column("created_at", sa.Float, nullable=False), *chain)
    chain = [sa.Column("hash", sa.String(64), nullable=True)] if sealed else []
    ent = sa.Table("ledger_entries", md,
                   sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                   sa.Column("ledger_id", sa.Integer, nullable=False, index=True),
                   sa.Column("uid", sa.String(64), nullable=False, unique=True),
                   sa.Column("entry", sa.Text, nullable=False),
                   sa.Column("fingerprint", sa.Text, nullable=True),
                   sa.Column("origin", sa.String(300), nullable=False, default=""),
                   sa.Column("largest", sa.Float, nullable=True),
                   sa.Column("total_rho", sa.Float, nullable=True),
                   sa.Column("total_eps", sa.Float, nullable=True),
                   sa.Column("created_at", sa.Float, nullable=False), *chain)
    return led, ent


_md = sa.MetaData()
ledgers, ledger_entries = define_tables(_md)


def seal_stored(conn: Connection) -> None:
    """Layout version 4: add the chain's columns and seal every ledger stored before (once, with the server's key;
    each seal records how many entries the upgrade sealed and when, and ``prdp ledger show`` says so)."""
    conn.execute(sa.text("ALTER TABLE ledgers ADD COLUMN seal TEXT"))
    conn.execute(sa.text("ALTER TABLE ledger_entries ADD COLUMN hash VARCHAR(64)"))
    key = ledger_chain.server_key(conn.engine.url)
    now = time.time()
    for led in conn.execute(sa.select(ledgers).order_by(ledgers.c.id)).all():
        rows = conn.execute(sa.select(ledger_entries).where(ledger_entries.c.ledger_id == led.id)
                            .order_by(ledger_entries.c.id)).all()
        hashes = ledger_chain.seal_rows(key, led.id, rows)
        for r, h in zip(rows, hashes):
            conn.execute(ledger_entries.update().where(ledger_entries.c.id == r.id).values(hash=h))
        last = hashes[-1] if hashes else ledger_chain.genesis(key, led.id)
        seal = ledger_chain.head(key, led, len(rows), last, upgraded=len(rows), upgraded_at=now)
        conn.execute(ledgers.update().where(ledgers.c.id == led.id).values(seal=seal.to_json()))


# ---------------------------------------------------------------------------
# Which data a ledger ran on
# ---------------------------------------------------------------------------


def data_fingerprint(identity: Mapping[str, Any], *, id_col: str | None = None,
                     prepare: Mapping[str, Any] | None = None, name: str | None = None) -> dict[str, Any]:
    """The data a release ran on: ``identity`` of the rows (a sample's name, size and seed; a file's
    SHA-256 and size; a large table's path, size and modification time), the record id column and the
    fixes applied (``prepare``: which rows are kept and how values are shifted). ``name`` is shown in
    messages only and never compared."""
    return {"identity": jsonable(dict(identity)), "id": id_col, "prepare": jsonable(dict(prepare or {})),
            "name": name}


def same_data(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether two fingerprints name the same records (identity, id column and fixes; not the name)."""
    if not a or not b:
        return False
    key = lambda f: canonical_json({k: f.get(k) for k in ("identity", "id", "prepare")})  # noqa: E731
    return key(a) == key(b)


def describe_data(fp: Mapping[str, Any] | None) -> str:
    """A fingerprint in words: "sample 'cbp_like', n = 5,000, seed 0" or "firms.csv (SHA-256 1a2b3c4d5e6f…)"."""
    if not fp:
        return "unknown data"
    ident = fp.get("identity") or {}
    if "sample" in ident:
        size = f", n = {int(ident['n']):,}" if ident.get("n") else ""
        text = f"sample '{ident['sample']}'{size}, seed {int(ident.get('seed') or 0)}"
    elif "sha256" in ident:
        text = f"{fp.get('name') or 'a table'} (SHA-256 {str(ident['sha256'])[:12]}…)"
    elif "files" in ident:
        files = ident.get("files") or []
        nbytes = sum(int(f[1]) for f in files)
        text = f"{fp.get('name') or 'a table'} ({len(files)} file(s), {nbytes:,} bytes, as last modified)"
    else:
        text = str(fp.get("name") or ident.get("path") or "a table")
    extra = [f"id column {fp['id']}"] if fp.get("id") else []
    extra += [f"fixes {canonical_json(fp['prepare'])}"] if fp.get("prepare") else []
    return text + (f" ({'; '.join(extra)})" if extra else "")


def study_fingerprint(study: "Study", data: str | Path | None = None) -> dict[str, Any]:
    """The fingerprint of the data a study reads (``data`` replaces its source, as ``prdp run --data`` does):
    a sample by name, size and seed; a file read into memory by the SHA-256 of its bytes (the same table
    under another name or path, or uploaded to the app, is the same data); a source an engine keeps where
    it lives (a large file, a folder, a glob, ``database.duckdb#table``: :func:`prdp_core.study.config.load_data`)
    by its files' paths, sizes and modification times, which change when the data does — never read."""
    from ..engines import choose_engine
    from ..study.config import resolve_data_path

    src = study.data
    id_col = (src.schema or {}).get("id_col")
    if data is None and src.sample is not None:
        return data_fingerprint({"sample": src.sample, "n": src.n, "seed": src.sample_seed}, id_col=id_col,
                                prepare=src.prepare, name=src.sample)
    spec, base = (str(data), None) if data is not None else (str(src.path), study.base_dir)
    if src.engine != "memory" and choose_engine(spec, src.engine, base_dir=base) != "memory":  # type: ignore[arg-type]  # data.engine is a str checked against the engine names when the config is parsed
        return data_fingerprint(_stat_identity(spec, base), id_col=id_col, prepare=src.prepare, name=Path(spec).name)
    path = Path(data) if data is not None else resolve_data_path(study)
    try:
        ident = {"sha256": sha256_file(path)}
    except OSError as err:
        raise DataError(f"Cannot read the data file {path}: {err.strerror or err}.", hint="Check the path.") from None
    return data_fingerprint(ident, id_col=id_col, prepare=src.prepare, name=path.name)


def _stat_identity(spec: str, base: Path | str | None) -> dict[str, Any]:
    """A source held by an engine, by what the file system says of its files (resolved paths, sizes,
    modification times) and the table it names: cheap for 10⁸ rows, and different once a file changes."""
    from ..engines.duckdb_engine import resolve_source

    source = resolve_source(spec, base_dir=base)
    files = []
    for f in source.files:
        try:
            st = Path(f).stat()
        except OSError as err:
            raise DataError(f"Cannot read the data file {f}: {err.strerror or err}.", hint="Check the path.") from None
        files.append([str(Path(f).resolve()), int(st.st_size), int(st.st_mtime_ns)])
    return {"files": files, "table": source.table}


# ---------------------------------------------------------------------------
# Stored form of an entry
# ---------------------------------------------------------------------------


def jsonable(obj: Any) -> Any:
    """Plain JSON values: numpy numbers and arrays as Python ones (the ledger's own conversion), tuples as
    lists, any other object as its text."""
    return json.loads(json.dumps(_plain(obj), default=str))


def _pack(values: Any, dtype: str = "<f8") -> str:
    raw = np.ascontiguousarray(np.asarray(values, dtype=dtype)).tobytes()
    return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def _unpack(text: str, n: int, dtype: str = "<f8") -> np.ndarray:
    size = np.dtype(dtype).itemsize * n
    raw = zlib.decompressobj().decompress(base64.b64decode(text), size + 1)
    if len(raw) != size:
        raise StoreError("A stored ledger entry's per-record losses are damaged.",
                         hint="The database was changed outside PrDP Explorer; restore it from a backup.")
    return np.frombuffer(raw, dtype=dtype).astype(np.dtype(dtype).newbyteorder("="))


def _pack_loss(fn: LossFunction) -> dict[str, Any]:
    """``fn.to_dict()`` with the per-record values of every data-dependent part packed in ``values_z`` (and the
    counts per loss of a loss known as a distribution, a table held by an engine, in ``distribution``)."""
    if isinstance(fn, RecordLoss):
        return {**fn.to_dict(), "values_z": _pack(fn.values)}
    if isinstance(fn, DistributionLoss):
        dist = fn.distribution
        edges = getattr(dist, "edges", None)
        return {**fn.to_dict(), "distribution": {
            "n_values": int(len(dist.values)), "values_z": _pack(dist.values), "counts_z": _pack(dist.counts, "<i8"),
            "edges_z": None if edges is None else _pack(edges), "total": dist.total, "label": dist.label,
            "base": dist.base, "measure": dist.measure}}
    if isinstance(fn, SumLoss):
        return {**fn.to_dict(), "parts": [_pack_loss(p) for p in fn.parts]}
    if isinstance(fn, ParallelLoss):
        return {**fn.to_dict(), "parts": [{"value": v, "loss": _pack_loss(f)} for v, f in fn.parts],
                "default": None if fn.default is None else _pack_loss(fn.default)}
    return fn.to_dict()


def _unpack_values(obj: Any) -> Any:
    """The inverse of the packing: ``values_z`` back to a float64 array under ``values``."""
    if isinstance(obj, list):
        return [_unpack_values(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: _unpack_values(v) for k, v in obj.items() if k != "values_z"}
    if "values_z" in obj:
        out["values"] = _unpack(obj["values_z"], int(obj.get("n") or 0))
    return out


def _distribution_loss(d: Mapping[str, Any]) -> DistributionLoss:
    """A stored loss known as a distribution (the counts per loss of a table held by an engine)."""
    from ..core.distribution import LossDistribution

    p = d["distribution"]
    k = int(p["n_values"])
    dist = LossDistribution(_unpack(p["values_z"], k), _unpack(p["counts_z"], k, "<i8"), p.get("measure", "eps"),
                            edges=None if p.get("edges_z") is None else _unpack(p["edges_z"], k + 1),
                            total=p.get("total"), label=p.get("label") or "", base=p.get("base"))
    b = d.get("bound")
    return DistributionLoss(dist, d.get("measure", "eps"), d.get("note", ""), math.inf if b is None else float(b))


def pack_entry(entry: LedgerEntry) -> str:
    """The stored JSON of a ledger entry (its per-record values of data-dependent losses included)."""
    d = entry.to_dict()
    d["loss"] = _pack_loss(entry.loss)
    text = canonical_json(jsonable(d))
    if len(text) > MAX_ENTRY_JSON:
        raise StoreError(f"The ledger entry '{entry.label[:80]}' is too large to store "
                         f"({len(text) / 1e6:.0f} MB; at most {MAX_ENTRY_JSON / 1e6:.0f} MB).",
                         hint="Its per-record losses take too much room: release on a smaller table.")
    return text


def unpack_entry(text: str) -> LedgerEntry:
    """A stored entry back as a :class:`LedgerEntry` (StoreError when it cannot be read)."""
    try:
        d = json.loads(text)
        if isinstance(d.get("loss"), dict) and d["loss"].get("kind") == DistributionLoss.kind:
            loss = _distribution_loss(d["loss"])
            return replace(LedgerEntry.from_dict({**d, "loss": FlatLoss(0.0).to_dict()}), loss=loss)
        return LedgerEntry.from_dict(_unpack_values(d))
    except (ValueError, TypeError, KeyError, ConfigError, ParameterError) as err:
        raise StoreError(f"A stored ledger entry cannot be read ({err}).",
                         hint="The database was written by another build or changed by hand.") from None


@dataclass(frozen=True)
class StoredEntry:
    """One entry of a stored ledger, in order (``seq`` from 1), with the data it ran on and, for entries
    appended with their table, the statistics ``prdp ledger show`` prints."""

    seq: int
    uid: str
    entry: LedgerEntry
    fingerprint: dict[str, Any] | None
    origin: str
    created_at: float
    largest: float | None = None
    total_rho: float | None = None
    total_eps: float | None = None


def dialect_insert(conn: Connection) -> Any:
    """The INSERT of SQLite or PostgreSQL (with ``on_conflict_do_nothing``), or None for other databases."""
    from sqlalchemy.dialects import postgresql, sqlite

    return {"sqlite": sqlite.insert, "postgresql": postgresql.insert}.get(conn.dialect.name)


def valid_name(name: str) -> str:
    """A ledger name, checked (StoreError naming the rule otherwise)."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise StoreError("A ledger name is 1–100 letters, digits, '.', '_' or '-', starting with a letter or digit.",
                         hint="For example: --ledger cbp-2024.")
    return name


def _num(v: Any) -> float | None:
    """A statistic as stored: NaN (not defined, e.g. mixed neighbour notions) as NULL; ∞ kept."""
    return None if v is None or math.isnan(float(v)) else float(v)


def record_stats(led: Ledger, table: pd.DataFrame, here: Sequence[bool], start: int) -> list[dict[str, float | None]]:
    """The statistics a stored entry keeps, for the entries of ``led`` from ``start`` on: the largest loss of a
    record in it and the largest per-record total so far (``here[i]``: entry i ran on ``table``'s records)."""
    tot = led.running_totals(table, on_table=here, others="worst").iloc[start:]
    return [{"largest": _num(r["largest record loss"]), "total_rho": _num(r["largest record total (ρ)"]),
             "total_eps": _num(r["largest record total (ε)"])} for _, r in tot.iterrows()]


@dataclass(frozen=True)
class NamedLedger:
    """A named ledger as ``prdp ledger show`` and ``prdp run --ledger`` print it (the review boundary's subject
    ``"named ledger"``): its ``name``, the store's ``where``, its ``data`` (described), ``seal``, stored
    ``entries`` and how many the last append ``added``."""

    name: str
    where: str
    data: str
    entries: list[StoredEntry]
    seal: Any = None
    added: int = 0

    def for_review(self) -> NamedLedger:
        """Without the statistics of the records (largest record loss and totals): public forms only."""
        return replace(self, entries=[replace(s, largest=None, total_rho=None, total_eps=None) for s in self.entries])

    @classmethod
    def of_run(cls, name: str, ledger: Ledger, table: pd.DataFrame | None, *, where: str = "(memory)",
               data: str = "(the run's data)") -> NamedLedger:
        """The ledger a run's entries would make, stored with ``table``'s statistics (nothing is written)."""
        stats = record_stats(ledger, table, [True] * len(ledger.entries), 0) if table is not None else \
            [{} for _ in ledger.entries]
        now = time.time()
        entries = [StoredEntry(seq=i, uid=f"run-{i}", entry=e, fingerprint=None, origin="prdp run", created_at=now,
                               **st) for i, (e, st) in enumerate(zip(ledger.entries, stats), 1)]
        return cls(name=name, where=where, data=data, entries=entries, added=len(entries))


class LedgerStore:
    """Ledgers in the workshop store (the database of ``store``), each sealed by a keyed hash chain
    (:mod:`.ledger_chain`): every read and every append checks it first and refuses a ledger changed in the store
    (StoreError naming the first entry that does not match)."""

    def __init__(self, store: BoardStore) -> None:
        self.store = store
        self._key: bytes | None = None

    @property
    def where(self) -> str:
        return self.store.where

    @property
    def key(self) -> bytes:
        """The server's ledger key (:func:`.ledger_chain.server_key`), read once."""
        if self._key is None:
            self._key = ledger_chain.server_key(self.store.url)
        return self._key

    # -- ledgers -------------------------------------------------------------------------------

    def create(self, *, name: str | None = None, fingerprint: Mapping[str, Any] | None = None) -> int:
        """A new ledger (a session's, without a name); its id."""
        with self.store._tx() as conn:
            return self._insert(conn, name, fingerprint)

    def _insert(self, conn: Connection, name: str | None, fingerprint: Mapping[str, Any] | None) -> int:
        fp = None if fingerprint is None else canonical_json(fingerprint)
        key = conn.execute(ledgers.insert().values(name=name, fingerprint=fp, created_at=time.time())
                           ).inserted_primary_key
        assert key is not None
        self._reseal(conn, int(key[0]), 0, None)
        return int(key[0])

    def _reseal(self, conn: Connection, ledger_id: int, entries: int, last: str | None,
                before: ledger_chain.Seal | None = None) -> None:
        """Write the seal of a ledger holding ``entries`` entries whose last hash is ``last`` (None: empty), keeping
        the upgrade note of its seal ``before``."""
        row = conn.execute(sa.select(ledgers).where(ledgers.c.id == int(ledger_id))).one()
        last = ledger_chain.genesis(self.key, ledger_id) if last is None else last
        seal = ledger_chain.head(self.key, row, entries, last, upgraded=None if before is None else before.upgraded,
                                 upgraded_at=None if before is None else before.upgraded_at)
        conn.execute(ledgers.update().where(ledgers.c.id == int(ledger_id)).values(seal=seal.to_json()))

    def _verified(self, conn: Connection, ledger_id: int) -> tuple[Any, Sequence[Any], str]:
        """The ledger's row, its entries' rows in order and its last hash, once its chain and seal are checked
        (StoreError otherwise); (None, [], "") for a ledger the store does not have."""
        led = conn.execute(sa.select(ledgers).where(ledgers.c.id == int(ledger_id))).first()
        rows = conn.execute(sa.select(ledger_entries).where(ledger_entries.c.ledger_id == int(ledger_id))
                            .order_by(ledger_entries.c.id)).all()
        if led is None:
            if rows:
                raise ledger_chain.TamperedLedger(f"A ledger was removed from the store but {len(rows)} of its "
                                                  "entries are left.", hint="Restore the database from a backup.")
            return None, [], ""
        return led, rows, ledger_chain.verify(self.key, led, rows)

    def seal(self, ledger_id: int) -> ledger_chain.Seal | None:
        """The ledger's seal once checked with its entries (StoreError when they do not match); None when there is
        no such ledger."""
        with self.store._tx() as conn:
            led, _, _ = self._verified(conn, ledger_id)
        return None if led is None else ledger_chain.Seal.from_json(led.seal)

    def find(self, name: str) -> int | None:
        """The id of the named ledger, or None."""
        with self.store._tx() as conn:
            row = conn.execute(sa.select(ledgers.c.id).where(ledgers.c.name == valid_name(name))).first()
        return None if row is None else int(row[0])

    def names(self) -> list[tuple[str, int]]:
        """Every named ledger and its number of entries, by name."""
        n = sa.func.count(ledger_entries.c.id)
        q = (sa.select(ledgers.c.name, n.label("n"))
             .select_from(ledgers.outerjoin(ledger_entries, ledger_entries.c.ledger_id == ledgers.c.id))
             .where(ledgers.c.name.is_not(None)).group_by(ledgers.c.name).order_by(ledgers.c.name))
        with self.store._tx() as conn:
            return [(r.name, int(r.n)) for r in conn.execute(q).all()]

    def fingerprint(self, ledger_id: int) -> dict[str, Any] | None:
        """The data a ledger belongs to (None for a session's ledger)."""
        with self.store._tx() as conn:
            row = conn.execute(sa.select(ledgers.c.fingerprint).where(ledgers.c.id == int(ledger_id))).first()
        return None if row is None or row[0] is None else json.loads(row[0])

    def check_named(self, name: str, fingerprint: Mapping[str, Any], *, new_data: bool = False) -> None:
        """Refuse (StoreError) before a run when the named ledger belongs to other data and ``new_data`` is not
        given. A name not used yet passes (the ledger is created by the first append)."""
        with self.store._tx() as conn:
            self._named(conn, name, fingerprint, new_data=new_data, create=False)

    def _named(self, conn: Connection, name: str, fingerprint: Mapping[str, Any], *, new_data: bool,
               create: bool) -> int | None:
        q = sa.select(ledgers.c.id, ledgers.c.fingerprint, ledgers.c.seal).where(ledgers.c.name == valid_name(name))
        if conn.dialect.name == "postgresql":
            q = q.with_for_update()  # concurrent appends to one ledger queue here (SQLite: BEGIN IMMEDIATE)
        row = conn.execute(q).first()
        if row is None:
            if not create:
                return None
            insert = dialect_insert(conn)  # two first runs at once: one creates it, the other finds it
            values = {"name": name, "fingerprint": canonical_json(fingerprint), "created_at": time.time()}
            if insert is None:
                return self._insert(conn, name, fingerprint)
            made = conn.execute(insert(ledgers).values(**values).on_conflict_do_nothing(index_elements=["name"])
                                .returning(ledgers.c.id)).first()
            if made is not None:
                self._reseal(conn, int(made[0]), 0, None)
            row = conn.execute(q).first()
            if row is None:
                raise StoreError(f"The ledger '{name}' could not be created.", hint="Run it again.")
        _, rows, last = self._verified(conn, int(row.id))
        stored = None if row.fingerprint is None else json.loads(row.fingerprint)
        if stored is not None and not same_data(stored, fingerprint):
            if not new_data:
                raise StoreError(
                    f"The ledger '{name}' belongs to {describe_data(stored)}; this run reads "
                    f"{describe_data(fingerprint)}. Per-record losses on other data do not add up record by "
                    "record.", hint="Use another ledger name, or pass --ledger-new-data if these are the same "
                                    "records in a new version of the table (earlier releases then count at their "
                                    "worst case for every record).")
            if create:
                conn.execute(ledgers.update().where(ledgers.c.id == row.id)
                             .values(fingerprint=canonical_json(fingerprint)))
                self._reseal(conn, int(row.id), len(rows), last, ledger_chain.Seal.from_json(row.seal))
        return int(row.id)

    # -- entries -------------------------------------------------------------------------------

    def append(self, ledger_id: int, items: Sequence[tuple[str, LedgerEntry]], *,
               fingerprint: Mapping[str, Any] | None = None, origin: str = "",
               table: pd.DataFrame | None = None) -> int:
        """Append ``(uid, entry)`` pairs to a ledger, in order; returns how many were new (an entry whose uid is
        stored already is not added again). With ``table`` (the records of ``fingerprint``) each new entry
        keeps the largest loss of a record in it and the largest per-record total so far."""
        with self.store._tx() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(sa.select(ledgers.c.id).where(ledgers.c.id == int(ledger_id)).with_for_update())
            return self._append(conn, int(ledger_id), items, fingerprint, origin, table)

    def append_named(self, name: str, items: Sequence[tuple[str, LedgerEntry]], *, fingerprint: Mapping[str, Any],
                     table: pd.DataFrame | None, origin: str = "", new_data: bool = False) -> int:
        """Append to the named ledger (created on first use), checking its data as :meth:`check_named`; the id."""
        with self.store._tx() as conn:
            ledger_id = self._named(conn, name, fingerprint, new_data=new_data, create=True)
            assert ledger_id is not None
            self._append(conn, ledger_id, items, fingerprint, origin, table)
        return ledger_id

    def _append(self, conn: Connection, ledger_id: int, items: Sequence[tuple[str, LedgerEntry]],
                fingerprint: Mapping[str, Any] | None, origin: str, table: pd.DataFrame | None) -> int:
        fresh = [(uid, e) for uid, e in items
                 if conn.execute(sa.select(ledger_entries.c.id).where(ledger_entries.c.uid == uid)).first() is None]
        if not fresh:
            return 0
        led_row, rows, last = self._verified(conn, ledger_id)  # never append to a ledger changed in the store
        if led_row is None:
            raise StoreError(f"There is no ledger #{ledger_id} in the store.", hint="Start a new session or ledger.")
        stats: list[dict[str, float | None]] = [{} for _ in fresh]
        if table is not None:
            before = self._stored(rows)
            led = Ledger([s.entry for s in before] + [e for _, e in fresh])
            here = [same_data(s.fingerprint, fingerprint) for s in before] + [True] * len(fresh)
            stats = record_stats(led, table, here, len(before))
        fp = None if fingerprint is None else canonical_json(fingerprint)
        now = time.time()
        for seq, ((uid, e), st) in enumerate(zip(fresh, stats), len(rows) + 1):
            values = {"ledger_id": ledger_id, "uid": str(uid)[:64], "entry": pack_entry(e), "fingerprint": fp,
                      "origin": str(origin)[:300], "created_at": now, "largest": None, "total_rho": None,
                      "total_eps": None, **st}
            last = ledger_chain.entry_hash(self.key, ledger_id, seq, SimpleNamespace(**values), last)
            conn.execute(ledger_entries.insert().values(**values, hash=last))
        self._reseal(conn, ledger_id, len(rows) + len(fresh), last, ledger_chain.Seal.from_json(led_row.seal))
        return len(fresh)

    def _entries(self, conn: Connection, ledger_id: int) -> list[StoredEntry]:
        return self._stored(self._verified(conn, ledger_id)[1])

    @staticmethod
    def _stored(rows: Sequence[Any]) -> list[StoredEntry]:
        return [StoredEntry(seq=i, uid=r.uid, entry=unpack_entry(r.entry),
                            fingerprint=None if r.fingerprint is None else json.loads(r.fingerprint),
                            origin=r.origin or "", created_at=float(r.created_at), largest=r.largest,
                            total_rho=r.total_rho, total_eps=r.total_eps) for i, r in enumerate(rows, 1)]

    def entries(self, ledger_id: int) -> list[StoredEntry]:
        """The ledger's entries, oldest first, once its seal is checked (StoreError naming the first entry that
        does not match when the ledger was changed in the store)."""
        with self.store._tx() as conn:
            return self._entries(conn, ledger_id)

    def count(self, ledger_id: int) -> int:
        """How many entries the ledger holds."""
        with self.store._tx() as conn:
            return int(conn.execute(sa.select(sa.func.count(ledger_entries.c.id))
                                    .where(ledger_entries.c.ledger_id == int(ledger_id))).scalar() or 0)


__all__ = ["LedgerStore", "NAME_PATTERN", "NamedLedger", "StoredEntry", "data_fingerprint", "define_tables",
           "describe_data", "jsonable", "pack_entry", "record_stats", "same_data", "study_fingerprint", "unpack_entry",
           "valid_name"]
