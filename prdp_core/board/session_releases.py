"""The recorded releases of a durable session that the Study page's report renders, kept in the workshop store
so that a restored session builds the same report without running a mechanism or charging its ledger again.

Table (layout version 6, created by :data:`prdp_core.board.store.MIGRATIONS`)::

    session_releases (key_hash, payload, saved_at)      one row per session (its key's SHA-256)

**What is stored** (``payload``, JSON; never pickle, never code): per page part (the page that recorded them),
the settings its releases were made with and when they were kept, and per release its label, the ids of its
ledger entries (``uids``: the entries themselves are the session ledger's, :mod:`.ledgers`), the mechanism's
name, the loss measure, the seed, the secure flag, whether true answers are included, its parameters, the
bias note of a biased mechanism, its answers table (column names and types from :data:`COLUMN_TYPES`, rows of
JSON scalars) and the distribution of its delivered per-record losses (counts per loss, as a table held by an
engine gives it: :class:`~prdp_core.core.distribution.LossDistribution`). Per-record arrays are not stored.

**Limits.** At most :data:`MAX_RELEASES_JSON` bytes per session: :func:`encode` leaves out the parts kept
longest ago until the rest fits, and says which (the app says so on its pages; their entries stay in the
ledger). Labels, column names and text cells have length limits (:data:`MAX_LABEL`, :data:`MAX_NAME`,
:data:`MAX_CELL`).

**Reading them back** (:func:`decode`, :func:`releases_of`): stored input is a shared input — the size is
checked before parsing, every key is checked against the form :func:`encode` writes (unknown or missing keys,
wrong types, unknown column types or measures are refused with a :class:`~prdp_core.core.errors.StoreError` saying
what is wrong), and a release whose entries are not in the restored ledger is not restored.
"""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any, Mapping

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.accounting import LedgerEntry
from ..core.distribution import LossDistribution
from ..core.errors import PrdpError, StoreError
from ..core.release import Release
from .ledgers import dialect_insert, jsonable

#: Largest stored payload of one session's releases (bytes of JSON).
MAX_RELEASES_JSON = 5_000_000
#: Longest label, mechanism name or column name, and longest text cell (characters).
MAX_LABEL = 300
MAX_NAME = 200
MAX_CELL = 2_000
#: Column types of a stored answers table.
COLUMN_TYPES = ("float", "int", "bool", "str", "object")
MEASURES = ("rho", "eps")
#: Version of the payload's form.
FORMAT = 1

_PART = re.compile(r"[a-z][a-z0-9_]{0,39}")
_UID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_PART_KEYS = {"settings", "at", "releases"}
_RELEASE_KEYS = {"label", "uids", "mechanism", "measure", "seed", "secure", "truth_included", "params", "bias",
                 "answers", "delivered"}
_HINT = "Its ledger is kept; build the Study page's report again (its releases are run and charged again)."


def define_table(md: sa.MetaData) -> sa.Table:
    """The ``session_releases`` table in ``md`` (layout version 6)."""
    return sa.Table("session_releases", md,
                    sa.Column("key_hash", sa.String(64), primary_key=True),
                    sa.Column("payload", sa.Text, nullable=False),
                    sa.Column("saved_at", sa.Float, nullable=False))


_md = sa.MetaData()
session_releases = define_table(_md)


def create(conn: Connection) -> None:
    """Migration step to version 6: the ``session_releases`` table."""
    md = sa.MetaData()
    define_table(md)
    md.create_all(conn)


# ---------------------------------------------------------------------------
# Writing: a release as JSON
# ---------------------------------------------------------------------------


def _scalar(v: Any) -> Any:
    """A cell as a JSON scalar (missing: None), or StoreError for anything else."""
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, str):
        if len(v) > MAX_CELL:
            raise StoreError(f"an answer's text is longer than {MAX_CELL} characters.")
        return v
    raise StoreError(f"an answer of type {type(v).__name__} cannot be stored.")


def _column_type(col: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(col) and col.dtype != object:
        return "bool"
    if pd.api.types.is_integer_dtype(col) and col.dtype.kind in "iu":
        return "int"
    if pd.api.types.is_float_dtype(col):
        return "float"
    if all(v is None or isinstance(v, str) or (isinstance(v, float) and math.isnan(v)) for v in col):
        return "str"
    return "object"


def answers_record(df: pd.DataFrame) -> dict[str, Any]:
    """An answers table as stored: ``columns`` (name and type) and ``rows`` of JSON scalars."""
    cols = []
    for name in df.columns:
        if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME:
            raise StoreError(f"the answer column {str(name)[:40]!r} has no name that can be stored.")
        cols.append({"name": name, "type": _column_type(df[name])})
    rows = [[_scalar(v) for v in row] for row in df.itertuples(index=False, name=None)]
    return {"columns": cols, "rows": rows}


def _distribution_record(rel: Release) -> dict[str, Any] | None:
    d = rel.loss_distribution
    if d is None and rel.loss is not None:
        try:
            d = LossDistribution.from_values(rel.loss, rel.measure)
        except (ValueError, PrdpError) as err:
            raise StoreError(f"the delivered losses cannot be stored ({err}).") from None
    if d is None:
        return None
    return {"values": [float(v) for v in d.values], "counts": [int(c) for c in d.counts],
            "edges": None if d.edges is None else [float(v) for v in d.edges],
            "total": None if d.total is None else float(d.total)}


def release_record(label: str | None, rel: Release, uids: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """What the store keeps of a recorded release whose ledger entries have the ids ``uids``; StoreError when it
    holds something that cannot be stored."""
    bias = rel.extras.get("bias")
    return {"label": label, "uids": list(uids), "mechanism": rel.mechanism, "measure": rel.measure,
            "seed": None if rel.seed is None else int(rel.seed), "secure": bool(rel.secure),
            "truth_included": bool(rel.truth_included), "params": jsonable(rel.params),
            "bias": bias if isinstance(bias, str) else None, "answers": answers_record(rel.answers),
            "delivered": _distribution_record(rel)}


def encode(parts: Mapping[str, Mapping[str, Any]], *, limit: int | None = None) -> tuple[str, list[str]]:
    """The stored payload of ``parts`` (page part → ``{"settings", "at", "releases": [release_record, …]}``) and
    the parts left out because the whole would exceed ``limit`` bytes (default :data:`MAX_RELEASES_JSON`; those
    kept longest ago first)."""
    limit = MAX_RELEASES_JSON if limit is None else limit
    kept = dict(parts)
    dropped: list[str] = []
    while True:
        text = json.dumps({"format": FORMAT, "parts": kept}, sort_keys=True, separators=(",", ":"))
        if len(text.encode("utf-8")) <= limit or not kept:
            return text, dropped
        oldest = min(kept, key=lambda p: (float(kept[p].get("at") or 0.0), p))
        dropped.append(oldest)
        del kept[oldest]


# ---------------------------------------------------------------------------
# Reading: refused unless it has the form encode writes
# ---------------------------------------------------------------------------


def _bad(what: str) -> StoreError:
    return StoreError(f"The recorded releases stored with this session are damaged: {what}", hint=_HINT)


def _check_keys(obj: Any, keys: set[str], what: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise _bad(f"{what} is not a record.")
    if set(obj) != keys:
        odd = sorted(set(obj) ^ keys)
        raise _bad(f"{what} has unknown or missing fields ({', '.join(str(k)[:40] for k in odd[:5])}).")
    return obj


def _text(v: Any, what: str, limit: int, *, optional: bool = False) -> str | None:
    if v is None and optional:
        return None
    if not isinstance(v, str) or len(v) > limit:
        raise _bad(f"{what} is not a text of at most {limit} characters.")
    return v


def _number(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _bad(f"{what} is not a number.")
    return float(v)


def _cell(v: Any, kind: str, what: str) -> Any:
    ok = {"float": v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)),
          "int": isinstance(v, int) and not isinstance(v, bool),
          "bool": isinstance(v, bool),
          "str": v is None or (isinstance(v, str) and len(v) <= MAX_CELL),
          "object": v is None or isinstance(v, (bool, int, float)) or (isinstance(v, str) and len(v) <= MAX_CELL)}
    if not ok[kind]:
        raise _bad(f"{what} holds a value that is not of its type ({kind}).")
    return v


def answers_from_record(rec: Any, what: str = "an answers table") -> pd.DataFrame:
    """An answers table from its stored form (:func:`answers_record`), checked."""
    rec = _check_keys(rec, {"columns", "rows"}, what)
    cols, rows = rec["columns"], rec["rows"]
    if not isinstance(cols, list) or not isinstance(rows, list):
        raise _bad(f"{what} has no column list or no row list.")
    names, kinds = [], []
    for c in cols:
        c = _check_keys(c, {"name", "type"}, f"a column of {what}")
        names.append(_text(c["name"], f"a column name of {what}", MAX_NAME))
        if c["type"] not in COLUMN_TYPES:
            raise _bad(f"the column {str(c['name'])[:40]!r} of {what} has an unknown type.")
        kinds.append(c["type"])
    if len(set(names)) != len(names):
        raise _bad(f"{what} names a column twice.")
    for r in rows:
        if not isinstance(r, list) or len(r) != len(names):
            raise _bad(f"a row of {what} does not have one value per column.")
    data: dict[str, Any] = {}
    for j, (name, kind) in enumerate(zip(names, kinds)):
        vals = [_cell(r[j], kind, f"the column {str(name)[:40]!r} of {what}") for r in rows]
        if kind == "float":
            data[str(name)] = pd.Series([np.nan if v is None else float(v) for v in vals], dtype=float)
        elif kind == "int":
            data[str(name)] = pd.Series(vals, dtype="int64")
        elif kind == "bool":
            data[str(name)] = pd.Series(vals, dtype=bool)
        elif kind == "str":  # pandas' own text type, as a table of text columns gets it
            data[str(name)] = pd.Series([np.nan if v is None else v for v in vals], dtype=None if vals else object)
        else:
            data[str(name)] = pd.Series(vals, dtype=object)
    return pd.DataFrame(data, columns=names)


def _distribution(rec: Any, measure: str, what: str) -> LossDistribution | None:
    if rec is None:
        return None
    rec = _check_keys(rec, {"values", "counts", "edges", "total"}, f"the delivered losses of {what}")
    values, counts, edges = rec["values"], rec["counts"], rec["edges"]
    if not isinstance(values, list) or not isinstance(counts, list) or len(values) != len(counts):
        raise _bad(f"the delivered losses of {what} have no values with one count each.")
    vs = [_number(v, f"a delivered loss of {what}") for v in values]
    if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in counts):
        raise _bad(f"the delivered losses of {what} have a count that is not a whole number ≥ 0.")
    total = None if rec["total"] is None else _number(rec["total"], f"the total loss of {what}")
    try:
        if edges is None:
            return LossDistribution(np.asarray(vs, dtype=float), np.asarray(counts, dtype=np.int64),
                                    measure, total=total)  # type: ignore[arg-type]  # checked against MEASURES
        if not isinstance(edges, list) or len(edges) != len(vs) + 1:
            raise _bad(f"the delivered losses of {what} have bin edges that do not fit their bins.")
        es = [_number(v, f"a bin edge of {what}") for v in edges]
        return LossDistribution.binned(es, counts, measure, total=total)  # type: ignore[arg-type]  # as above
    except (ValueError, TypeError, PrdpError) as err:
        raise _bad(f"the delivered losses of {what} are not a distribution ({err}).") from None


def decode(text: str | None, *, limit: int | None = None) -> dict[str, dict[str, Any]]:
    """The stored parts (page part → ``{"settings", "at", "releases"}``) with their releases still as records,
    their form checked; StoreError (saying what is wrong) for a payload of another form or over ``limit`` (default
    :data:`MAX_RELEASES_JSON`)."""
    limit = MAX_RELEASES_JSON if limit is None else limit
    if text is None:
        return {}
    if len(text.encode("utf-8")) > limit:
        raise _bad(f"they are larger than the {limit / 1e6:g} MB kept per session.")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        raise _bad("they are not JSON.") from None
    obj = _check_keys(obj, {"format", "parts"}, "the stored releases")
    if obj["format"] != FORMAT or not isinstance(obj["parts"], dict):
        raise _bad(f"they have another form (format {str(obj['format'])[:20]}).")
    out: dict[str, dict[str, Any]] = {}
    for part, rec in obj["parts"].items():
        if not _PART.fullmatch(part):
            raise _bad(f"the page part {part[:40]!r} is not one the app names.")
        rec = _check_keys(rec, _PART_KEYS, f"the releases of {part}")
        _text(rec["settings"], f"the settings of {part}", MAX_RELEASES_JSON, optional=True)
        _number(rec["at"], f"the time of {part}")
        if not isinstance(rec["releases"], list):
            raise _bad(f"the releases of {part} are not a list.")
        for i, r in enumerate(rec["releases"], 1):
            _check_release(r, f"release {i} of {part}")
        out[part] = rec
    return out


def _check_release(r: Any, what: str) -> None:
    r = _check_keys(r, _RELEASE_KEYS, what)
    _text(r["label"], f"the label of {what}", MAX_LABEL, optional=True)
    _text(r["mechanism"], f"the mechanism of {what}", MAX_NAME)
    _text(r["bias"], f"the bias note of {what}", MAX_CELL, optional=True)
    if not isinstance(r["uids"], list) or not all(isinstance(u, str) and _UID.fullmatch(u) for u in r["uids"]):
        raise _bad(f"{what} does not name its ledger entries.")
    if r["measure"] not in MEASURES:
        raise _bad(f"{what} has an unknown loss measure.")
    if r["seed"] is not None and (isinstance(r["seed"], bool) or not isinstance(r["seed"], int)):
        raise _bad(f"the seed of {what} is not a whole number.")
    if not isinstance(r["secure"], bool) or not isinstance(r["truth_included"], bool):
        raise _bad(f"{what} has a flag that is not true or false.")
    if not isinstance(r["params"], dict):
        raise _bad(f"the parameters of {what} are not a record.")
    answers_from_record(r["answers"], f"the answers of {what}")
    _distribution(r["delivered"], r["measure"], what)


def releases_of(rec: Mapping[str, Any], entries: Mapping[str, LedgerEntry]) -> list[tuple[str | None, Release]]:
    """The releases of a stored part (checked by :func:`decode`) as (label, :class:`Release`) pairs, their
    entries taken from the restored ledger (``entries``: uid → entry); StoreError when one of their entries is not
    in it or a table or distribution is damaged."""
    out: list[tuple[str | None, Release]] = []
    for i, r in enumerate(rec["releases"], 1):
        what = f"release {i} ({str(r['label'] or r['mechanism'])[:60]})"
        missing = [u for u in r["uids"] if u not in entries]
        if missing or not r["uids"]:
            raise StoreError(f"The recorded {what} is not in the restored ledger.", hint=_HINT)
        rel = Release(mechanism=r["mechanism"], answers=answers_from_record(r["answers"], f"the answers of {what}"),
                      measure=r["measure"], loss=None, entries=tuple(entries[u] for u in r["uids"]),
                      params=dict(r["params"]), seed=r["seed"], secure=r["secure"],
                      truth_included=r["truth_included"], extras={"bias": r["bias"]} if r["bias"] else {},
                      loss_distribution=_distribution(r["delivered"], r["measure"], what))
        out.append((r["label"], rel))
    return out


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------


def write(conn: Connection, key_hash: str, payload: str) -> None:
    """Keep ``payload`` (:func:`encode`) as the releases of the session whose key hash is ``key_hash`` (replacing
    those kept before)."""
    if len(payload.encode("utf-8")) > MAX_RELEASES_JSON:
        raise StoreError(f"The recorded releases are larger than the {MAX_RELEASES_JSON / 1e6:g} MB kept per "
                         "session.")
    now = time.time()
    insert = dialect_insert(conn)
    if insert is not None:
        conn.execute(insert(session_releases).values(key_hash=key_hash, payload=payload, saved_at=now)
                     .on_conflict_do_update(index_elements=["key_hash"], set_={"payload": payload, "saved_at": now}))
        return
    done = conn.execute(session_releases.update().where(session_releases.c.key_hash == key_hash)
                        .values(payload=payload, saved_at=now))
    if done.rowcount == 0:
        conn.execute(session_releases.insert().values(key_hash=key_hash, payload=payload, saved_at=now))


def read(conn: Connection, key_hash: str) -> str | None:
    """The stored payload of the session whose key hash is ``key_hash`` (None: none stored)."""
    row = conn.execute(sa.select(session_releases.c.payload).where(session_releases.c.key_hash == key_hash)).first()
    return None if row is None else str(row.payload)


__all__ = ["COLUMN_TYPES", "MAX_RELEASES_JSON", "answers_from_record", "answers_record", "create", "decode",
           "define_table", "encode", "read", "release_record", "releases_of", "write"]
