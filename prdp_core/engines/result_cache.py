"""Statistics of unchanged files computed once: the small results of a DuckDB engine's queries, kept by what they
were computed from.

A file does not change between two runs of ``prdp run`` or two sessions of the app, yet the checks of its roles
(row count, duplicate and missing ids, non-numeric, missing and negative values) and the statistics of a policy
read every record again each time — at 10⁸ rows, most of a run. Here a query's result is kept under a key made of

* the **content** of the relation it reads (:func:`source_key`): the engine's files by path, size, modification
  time (ns), inode and change time, the table of a database file, the reader; a view derived from it
  (:func:`derived_key`) by its parent's key and its SQL with the parent's name left out;
* the query's SQL with the relation's own name left out (names differ between connections), its parameters,
  DuckDB's version and :data:`CACHE_VERSION`.

A query is kept only when it is a ``SELECT``/``WITH``/``DESCRIBE`` of that relation alone and deterministic: SQL
naming any other relation, table, materialised result or function of the engine (``prdp_<kind>_<n>``), or a
volatile function (``random()``, ``now()``, …) is never kept, nor a result of more than :data:`MAX_ROWS` rows or
with values other than numbers, text, booleans, nulls and lists of them. A changed file changes its key, so
it is read again; an unchanged one is answered from the cache.

Results live in the process (:data:`MEMORY_ENTRIES` most recent) and on disk, one JSON file each, in
``PRDP_CACHE_DIR`` (default ``$XDG_CACHE_HOME/prdp-explorer/results``, i.e. ``~/.cache/…``), a folder of mode
0700 with files of mode 0600: they are statistics of confidential tables (counts, minima, quantiles, a few
duplicate ids named in messages), kept as privately as the server's other stores (docs/security.md). A file read
back is checked to be a list of rows of such values (else it is ignored and replaced). ``PRDP_CACHE_DIR=off``
turns the cache off; :func:`clear` empties it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

from ..io.private_files import FILE_MODE, private_dir

#: Layout of the kept results; a change makes every earlier result unused.
CACHE_VERSION = 1
#: Environment variable naming the cache folder ("off": no cache).
ENV_CACHE_DIR = "PRDP_CACHE_DIR"
#: Results of more rows are not kept (statistics are small; tables of values are not).
MAX_ROWS = 2_000
#: Largest file of a kept result read back (bytes).
MAX_FILE_BYTES = 4_000_000
#: Results kept in the process.
MEMORY_ENTRIES = 4_096

_OTHER_RELATION = re.compile(r"\bprdp_[a-z]+_\d+\b")
_VOLATILE = re.compile(r"\b(random|setseed|uuid|gen_random_uuid|now|current_date|current_time|current_timestamp|"
                       r"get_current_time|today|nextval|currval)\b", re.IGNORECASE)
_KEPT_STATEMENTS = ("SELECT", "WITH", "DESCRIBE")
_lock = threading.Lock()
_memory: OrderedDict[str, list[tuple]] = OrderedDict()


def folder(env: dict[str, str] | None = None) -> Path | None:
    """The cache folder (None: the cache is off)."""
    env = dict(os.environ) if env is None else env
    given = env.get(ENV_CACHE_DIR, "").strip()
    if given.lower() == "off":
        return None
    if given:
        return Path(given).expanduser()
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "prdp-explorer" / "results"


def enabled() -> bool:
    """Whether results are kept (``PRDP_CACHE_DIR`` is not ``off``)."""
    return folder() is not None


def _sha(parts: Sequence[Any]) -> str:
    return hashlib.sha256(json.dumps(list(parts), default=str, sort_keys=True).encode("utf-8")).hexdigest()


def source_key(kind: str, files: Sequence[str], table: str | None = None) -> str | None:
    """The content key of the files an engine reads (None when one cannot be described: then nothing is kept)."""
    described = []
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            return None
        described.append([os.path.realpath(f), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns])
    return _sha(["source", CACHE_VERSION, kind, table, described])


def _without(sql: str, relation: str) -> str:
    return re.sub(rf"\b{re.escape(relation)}\b", "<relation>", sql)


def derived_key(parent_key: str | None, parent_relation: str, select_sql: str) -> str | None:
    """The content key of a view ``select_sql`` over the relation ``parent_relation`` whose key is ``parent_key``
    (None when the parent has none or the view reads anything else)."""
    if parent_key is None:
        return None
    text = _without(select_sql, parent_relation)
    if _OTHER_RELATION.search(text) or _VOLATILE.search(text):
        return None
    return _sha(["view", parent_key, text])


def statement_key(content_key: str | None, relation: str, sql: str, params: Sequence[Any] | None = None,
                  engine_version: str = "") -> str | None:
    """The key of the result of ``sql`` over ``relation`` (whose content key is ``content_key``), or None when the
    result must not be kept (see the module docstring)."""
    if content_key is None or not sql.lstrip().upper().startswith(_KEPT_STATEMENTS):
        return None
    text = _without(sql, relation)
    if _OTHER_RELATION.search(text) or _VOLATILE.search(text):
        return None
    return _sha(["result", CACHE_VERSION, engine_version, content_key, text, list(params or [])])


def _scalar_ok(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, str)) or isinstance(v, float)


def _value_ok(v: Any) -> bool:
    return _scalar_ok(v) or (isinstance(v, list) and all(_scalar_ok(x) for x in v))


def _encode(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return {"f": repr(v)}  # nan, inf, -inf
    if isinstance(v, list):
        return [_encode(x) for x in v]
    return v


def _decode(v: Any) -> Any:
    if isinstance(v, dict):
        text = v.get("f")
        if set(v) != {"f"} or text not in ("nan", "inf", "-inf"):
            raise ValueError("not a kept value")
        return float(text)
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


def _keepable(rows: list[tuple]) -> list[tuple] | None:
    if len(rows) > MAX_ROWS:
        return None
    out = []
    for row in rows:
        vals = [list(v) if isinstance(v, tuple) else v for v in row]
        if not all(_value_ok(v) for v in vals):
            return None
        out.append(tuple(vals))
    return out


def _path(key: str) -> Path | None:
    base = folder()
    return None if base is None else base / key[:2] / f"{key}.json"


def get(key: str | None) -> list[tuple] | None:
    """The kept result of ``key`` (None: not kept, or the cache is off)."""
    if key is None or not enabled():
        return None
    with _lock:
        if key in _memory:
            _memory.move_to_end(key)
            return list(_memory[key])
    path = _path(key)
    try:
        if path is None or path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        if not (isinstance(data, dict) and data.get("v") == CACHE_VERSION and isinstance(data.get("rows"), list)):
            return None
        rows = [tuple(_decode(v) for v in row) for row in data["rows"] if isinstance(row, list)]
        if len(rows) != len(data["rows"]) or _keepable(rows) != rows:
            return None
    except (OSError, ValueError, TypeError):
        return None  # missing, unreadable or not ours: computed again and written anew
    _remember(key, rows)
    return list(rows)


def _remember(key: str, rows: list[tuple]) -> None:
    with _lock:
        _memory[key] = rows
        _memory.move_to_end(key)
        while len(_memory) > MEMORY_ENTRIES:
            _memory.popitem(last=False)


def put(key: str | None, rows: list[tuple]) -> None:
    """Keep the result ``rows`` of ``key`` (nothing when it may not be kept or the cache is off). A disk that
    cannot be written only loses the copy on disk."""
    if key is None or not enabled():
        return
    kept = _keepable(rows)
    if kept is None:
        return
    _remember(key, kept)
    path = _path(key)
    if path is None:
        return
    try:
        private_dir(path.parent.parent)
        private_dir(path.parent)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"v": CACHE_VERSION, "rows": [[_encode(v) for v in row] for row in kept]}, fh)
        os.replace(tmp, path)
    except Exception:  # noqa: BLE001 - a full or read-only disk keeps the result in memory only
        return


def clear(memory_only: bool = False) -> int:
    """Forget every kept result (in the process; on disk too unless ``memory_only``); the number of files
    removed."""
    with _lock:
        _memory.clear()
    base = folder()
    if memory_only or base is None or not base.exists():
        return 0
    removed = 0
    for f in base.glob("??/*.json"):
        try:
            f.unlink()
            removed += 1
        except OSError:
            pass
    return removed


__all__ = ["CACHE_VERSION", "ENV_CACHE_DIR", "MAX_ROWS", "clear", "derived_key", "enabled", "folder", "get", "put",
           "source_key", "statement_key"]
