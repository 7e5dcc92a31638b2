"""The study configuration: one versioned YAML schema for a whole study.

A *study* is everything a review needs to rerun what was discussed: the data source and
its column roles, the per-record policy (splitting thresholds, budget function E(r),
personalized specification Φ, analyst tiers), the workload, the mechanisms with their
parameters, the mode (teaching / review) and the seed. Every key is documented in
``docs/config.md``; the public entry points are re-exported by :mod:`prdp_core.report`.

* :func:`load_config` reads and validates a YAML file (a strict safe loader: plain values
  only, no anchors, aliases, merge keys or repeated keys, at most ``MAX_CONFIG_BYTES`` and
  ``MAX_CONFIG_DEPTH`` levels); a data path is resolved relative to the config file and may
  not leave its folder.
* :func:`parse_config` validates YAML text (or an already parsed mapping).
* :class:`Study` is the validated, normalised study; ``Study.to_dict()`` / ``to_yaml()``
  write it back (a round trip gives an equal study).

Every error is a :class:`~prdp_core.errors.ConfigError` whose message starts with the
offending key, e.g. ``policy.thresholds.EMP: must be a positive number (got -3).``
Unknown keys and unsupported versions are rejected, never ignored.
"""

from __future__ import annotations

import math
import os
import re
import reprlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Callable, Iterable, Mapping

import yaml

from .errors import ConfigError, DataError, PrdpError
from .provenance import is_data_derived

#: The schema version this build reads and writes.
SCHEMA_VERSION = 1

#: Largest config file accepted (bytes): a study is small; anything larger is a mistake.
MAX_CONFIG_BYTES = 1_000_000

#: Deepest nesting of mappings and lists in a config (a study needs 5 levels; the cap stops a
#: deeply nested file before the reader recurses into it).
MAX_CONFIG_DEPTH = 32

#: Longest piece of a config value or key quoted in an error message (characters; longer ones
#: are cut and end with "…"), so a message never formats a huge value.
MAX_QUOTED_CHARS = 80

MODES = ("teaching", "review")
MECHANISM_KINDS = ("unit_splitting", "prdp", "personalized", "multitier", "granular")
PREPARE_OPTIONS = {"non_numeric": ("error", "missing"), "missing": ("error", "drop"),
                   "negative": ("error", "shift"), "duplicate_ids": ("error", "regenerate")}
BUDGET_PRESETS = ("inverse", "log", "sqrt", "constant")
PRDP_QUERIES = ("count", "sum", "max", "distinct")
PRDP_ALGORITHMS = ("count", "framework", "sum_extension", "naive")
#: Engines a study's data can be read by (``data.engine``; see prdp_core.engines).
DATA_ENGINES = ("memory", "duckdb", "spark", "auto")
#: ``data.spark.master``: ``local``, ``local[N]``, ``local[*]``, ``spark://…``, ``yarn``, ``k8s://…``, ``mesos://…``.
_SPARK_MASTER = re.compile(r"^(local(\[(\d{1,4}|\*)(,\d{1,3})?\])?|yarn|(spark|k8s|mesos)://[^\s'\"]{1,300})$")
#: ``data.spark.remote``: a Spark Connect server.
_SPARK_REMOTE = re.compile(r"^sc://[^\s'\"]{1,300}$")
#: ``data.spark.conf`` keys: Spark setting names.
_SPARK_CONF_KEY = re.compile(r"^spark\.[A-Za-z0-9_.\-]{1,200}$")
#: ``data.table``: a table of the Spark catalog (``table``, ``db.table`` or ``catalog.db.table``).
_SPARK_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}(\.[A-Za-z_][A-Za-z0-9_]{0,127}){0,2}$")

#: PrDP algorithms that need the records themselves (not run on tables held by an engine).
RECORD_ALGORITHMS = ("sum_extension",)
_MEMORY_LIMIT = re.compile(r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)
PDP_MECHANISMS = ("minimum", "threshold", "sample", "pe", "stretching")
PDP_QUERIES = ("count", "sum", "mean", "median", "min")
MT_FAMILIES = ("geometric", "laplace", "gaussian", "multiscale_geometric")
MT_OPS = ("==", "!=", ">=", "<=", ">", "<")
MAX_SEED = 2**31 - 1


# ---------------------------------------------------------------------------
# Small validators: each names the offending key
# ---------------------------------------------------------------------------


def _err(path: str, message: str, hint: str | None = None) -> ConfigError:
    return ConfigError(f"{path}: {message}", hint=hint)


def _clip(s: str) -> str:
    return s if len(s) <= MAX_QUOTED_CHARS else s[:MAX_QUOTED_CHARS - 1] + "…"


class _ShortRepr(reprlib.Repr):
    """A repr that never formats more than a few items of a collection, two levels deep, and the
    first characters of a text (reprlib stops early instead of building the whole text)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxother = 2, MAX_QUOTED_CHARS

    def repr_str(self, x: str, level: int) -> str:
        return _clip(repr(x[:MAX_QUOTED_CHARS]))


_SHORT_REPR = _ShortRepr()


def _fmt(v: Any) -> str:
    """A value for an error message: its repr, at most ``MAX_QUOTED_CHARS`` characters."""
    return _clip(_SHORT_REPR.repr(v))


def _name(v: Any) -> str:
    """A key, column name or group value for an error message: its text, at most ``MAX_QUOTED_CHARS``
    characters."""
    return _clip(v if isinstance(v, str) else _SHORT_REPR.repr(v))


def _names_hint(names: Iterable[Any], most: int = 15) -> str:
    """The first ``most`` names of a list for a hint, each cut to ``MAX_QUOTED_CHARS``."""
    names = list(names)
    more = f", … ({len(names) - most} more)" if len(names) > most else ""
    return ", ".join(_name(n) for n in names[:most]) + more


def _mapping(v: Any, path: str, allowed: Iterable[str], required: Iterable[str] = ()) -> dict[str, Any]:
    if not isinstance(v, Mapping):
        raise _err(path, f"must be a mapping of keys to values (got {_fmt(v)}).")
    allowed = tuple(allowed)
    for k in v:
        if not isinstance(k, str):
            raise _err(path, f"keys must be text (got {_fmt(k)}).")
        if k not in allowed:
            raise _err(f"{path}.{_name(k)}" if path else _name(k), "unknown key.",
                       hint=f"Allowed here: {', '.join(allowed)}.")
    for k in required:
        if k not in v or v[k] is None:
            raise _err(f"{path}.{_name(k)}" if path else _name(k), "is required.")
    return dict(v)


def _number(v: Any, path: str, *, positive: bool = False, nonneg: bool = False, lo: float | None = None,
            hi: float | None = None, open_lo: bool = False) -> float:
    what = "a positive number" if positive else "a non-negative number" if nonneg else "a number"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        if isinstance(v, str):
            try:  # YAML reads 1e-6 (no dot) as text
                v = float(v.strip())
            except ValueError:
                raise _err(path, f"must be {what} (got {_fmt(v)}).") from None
        else:
            raise _err(path, f"must be {what} (got {_fmt(v)}).")
    x = float(v)
    if not math.isfinite(x):
        raise _err(path, f"must be {what} (got {_fmt(v)}).")
    if positive and x <= 0 or nonneg and x < 0:
        raise _err(path, f"must be {what} (got {_fmt(v)}).")
    if lo is not None and (x < lo or (open_lo and x <= lo)):
        raise _err(path, f"must be {'above' if open_lo else 'at least'} {lo:g} (got {_fmt(v)}).")
    if hi is not None and x > hi:
        raise _err(path, f"must be at most {hi:g} (got {_fmt(v)}).")
    return x


def _int(v: Any, path: str, *, lo: int = 0, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            raise _err(path, f"must be a whole number (got {_fmt(v)}).")
    if v < lo or (hi is not None and v > hi):
        rng = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise _err(path, f"must be a whole number {rng} (got {_fmt(v)}).")
    return int(v)


def _text(v: Any, path: str, *, max_len: int = 2000) -> str:
    if not isinstance(v, str) or not v.strip():
        raise _err(path, f"must be non-empty text (got {_fmt(v)}).")
    if len(v) > max_len:
        raise _err(path, f"is longer than {max_len:,} characters.")
    if "\x00" in v:
        raise _err(path, "contains a NUL character.")
    return v


def _bool(v: Any, path: str) -> bool:
    if not isinstance(v, bool):
        raise _err(path, f"must be true or false (got {_fmt(v)}).")
    return v


def _choice(v: Any, path: str, options: Iterable[str]) -> str:
    options = tuple(options)
    if not isinstance(v, str) or v not in options:
        raise _err(path, f"must be one of {', '.join(options)} (got {_fmt(v)}).")
    return v


def _names(v: Any, path: str) -> list[str]:
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, (list, tuple)):
        raise _err(path, f"must be a list of column names (got {_fmt(v)}).")
    return [_text(x, f"{path}[{i}]", max_len=500) for i, x in enumerate(v)]


def _scalar(v: Any, path: str) -> Any:
    """A plain value (text, number, boolean) such as a group value."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            raise _err(path, f"must be a finite value (got {_fmt(v)}).")
        return v
    if isinstance(v, str):
        if len(v) > 500 or "\x00" in v:
            raise _err(path, "is not a valid value (too long or contains NUL).")
        return v
    raise _err(path, f"must be a single value (text or number), got {_fmt(v)}.")


def _wrap(path: str, fn: Callable[[], Any]) -> Any:
    """Run an engine constructor; its PrdpError becomes a ConfigError naming ``path``."""
    try:
        return fn()
    except ConfigError:
        raise
    except PrdpError as err:
        raise _err(path, err.message, err.hint) from None


# ---------------------------------------------------------------------------
# Reading YAML: plain values only
# ---------------------------------------------------------------------------

_MERGE_TAG = "tag:yaml.org,2002:merge"


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader (plain values only, no Python objects) made stricter for shared configs.

    Refused with a :class:`ConfigError` naming the line, while the file is read and before any
    value is built: anchors (``&name``) and aliases (``*name``) — an alias chain multiplies a
    349-byte file into gigabytes of values ("billion laughs") —, merge keys (``<<``), a key given
    twice in one mapping (YAML would keep the last silently), nesting deeper than
    ``MAX_CONFIG_DEPTH``, and values YAML cannot build (a date that does not exist, an integer
    of more than 4,300 digits)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or event.anchor is not None:
            what = "an alias" if isinstance(event, yaml.AliasEvent) else "an anchor"
            sign = "*" if isinstance(event, yaml.AliasEvent) else "&"
            raise ConfigError(f"The config uses {what} ({sign}{_name(event.anchor)}) at {_at(event.start_mark)}: "
                              "anchors, aliases and merge keys are not allowed in a study config.",
                              hint="Write the value out in full where it is used.")
        nested = isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent))
        if nested:
            self._depth += 1
            if self._depth > MAX_CONFIG_DEPTH:
                raise ConfigError(f"The config is nested more than {MAX_CONFIG_DEPTH} levels deep at "
                                  f"{_at(event.start_mark)}.", hint="A study config needs a few levels only.")
        try:
            return super().compose_node(parent, index)
        finally:
            if nested:
                self._depth -= 1

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError):
            raise ConfigError(f"The value at {_at(node.start_mark)} cannot be read (a date that does not exist, a "
                              "number with too many digits or a tag that does not fit its value?).",
                              hint="Correct it, or quote it to make it text.") from None

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    raise ConfigError(f"The config uses a merge key (<<) at {_at(key_node.start_mark)}: anchors, "
                                      "aliases and merge keys are not allowed in a study config.",
                                      hint="Write the keys out in full.")
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = first.setdefault(key, key_node)
                except TypeError:  # an unhashable key: PyYAML refuses it below
                    continue
                if seen is not key_node:
                    raise ConfigError(f"The config repeats the key {_fmt(key)} at {_at(key_node.start_mark)} (first "
                                      f"given at line {seen.start_mark.line + 1}): a key may appear once in a "
                                      "mapping.", hint="Keep one of them.")
        return super().construct_mapping(node, deep=deep)


def _read_yaml(text: str) -> Any:
    """The plain value of a YAML document read by :class:`_StrictLoader` (ConfigError on anything else)."""
    loader = None
    try:
        loader = _StrictLoader(text)  # the reader checks the characters here
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or "invalid syntax"
        raise ConfigError(f"The config is not valid YAML{where}: {_clip(str(problem))}.",
                          hint="Check the indentation and the ':' after each key.") from None
    except RecursionError:
        raise ConfigError("The config is nested too deeply.") from None
    finally:
        if loader is not None:
            loader.dispose()


# ---------------------------------------------------------------------------
# Data source
# ---------------------------------------------------------------------------


def safe_data_path(path: str, base_dir: str | os.PathLike, *, key: str = "data.path",
                   where: str = "the config's folder") -> Path:
    """Resolve a data path written in a config, relative to ``base_dir`` (the config's folder).

    Refused (ConfigError naming ``key``): absolute paths, drive letters, ``~``, any ``..``
    component, and paths that leave ``base_dir`` once symbolic links are resolved. This keeps
    a shared config from reading files outside its own folder. ``where`` names ``base_dir`` in
    the messages (the app's data folder uses the same rules).
    """
    p = _check_relative(path, key, where)
    base = Path(base_dir).resolve()
    target = (base / Path(*PurePosixPath(p.replace("\\", "/")).parts)).resolve()
    try:
        target.relative_to(base)
    except ValueError:
        raise _err(key, f"resolves outside {where} (a symbolic link?): {_fmt(p)}.",
                   hint=f"Copy the data file into {where}.") from None
    return target


def _check_relative(path: Any, key: str, where: str = "the config's folder") -> str:
    """The static part of :func:`safe_data_path`: relative, no '~', no '..'."""
    p = _text(path, key, max_len=1000)
    place = "next to the config (or in a subfolder)" if where == "the config's folder" else f"in {where}"
    if p.startswith("~"):
        raise _err(key, f"must be relative to {where} (no '~').")
    if (p.startswith(("/", "\\")) or PurePosixPath(p).is_absolute() or PureWindowsPath(p).is_absolute()
            or PureWindowsPath(p).drive):
        raise _err(key, f"must be relative to {where}, not absolute (got {_fmt(p)}).",
                   hint=f"Put the data file {place} and give its relative path.")
    parts = PureWindowsPath(p).parts
    if any(part == ".." for part in parts):
        raise _err(key, f"may not leave {where} ('..' in {_fmt(p)}).",
                   hint=f"Put the data file {place}.")
    if not PurePosixPath(p.replace("\\", "/")).parts:
        raise _err(key, "names no file.")
    return p


@dataclass(frozen=True)
class DataSource:
    """Where the study's records come from (``data`` section).

    Either a sample (``sample``, optional ``n`` and ``seed``) or a file (``path``, relative
    to the config's folder). ``schema`` (column roles) and ``prepare`` (how bad input is
    fixed: the options of :func:`prdp_core.data.prepare_dataset`, with ``shift_by`` the public
    constant added to a measure with negative values) apply to files and may override a
    sample's documented roles. ``engine`` (``memory``, ``duckdb`` or ``auto``) says where the
    records are kept (:mod:`prdp_core.engines`); with DuckDB ``path`` may also name a folder, a
    glob or ``database.duckdb#table``, and ``duckdb`` holds its ``memory_limit`` and ``threads``.
    With Spark (``engine: spark``) ``path`` may also be a URI Spark reads (``hdfs://…``,
    ``s3a://…``: the cluster's business, passed untouched; ``file://`` only inside the config's
    folder), or ``table`` names a table of the Spark catalog instead, and ``spark`` holds the
    session's ``master``, ``remote`` (Spark Connect) and ``conf``.
    """

    sample: str | None = None
    n: int | None = None
    sample_seed: int = 0
    path: str | None = None
    schema: dict[str, Any] | None = None
    prepare: dict[str, Any] = field(default_factory=dict)
    engine: str = "memory"
    duckdb: dict[str, Any] = field(default_factory=dict)
    table: str | None = None
    spark: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        if self.sample:
            size = f", n = {self.n:,}" if self.n else ""
            return f"sample '{self.sample}'{size}, seed {self.sample_seed}"
        if self.table:
            return f"Spark table '{self.table}'"
        return f"file '{self.path}'"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        if self.sample:
            d["sample"] = self.sample
            if self.n is not None:
                d["n"] = self.n
            d["seed"] = self.sample_seed
        else:
            if self.table:
                d["table"] = self.table
            else:
                d["path"] = self.path
            if self.engine != "memory":
                d["engine"] = self.engine
            if self.duckdb:
                d["duckdb"] = dict(self.duckdb)
            if self.spark:
                d["spark"] = {k: dict(v) if isinstance(v, Mapping) else v for k, v in self.spark.items()}
        if self.schema is not None:
            s = self.schema
            d["schema"] = {"id": s.get("id_col"), "measures": list(s.get("measures") or ()),
                           "groups": list(s.get("groups") or ()), "owner": s.get("owner_col")}
        if self.prepare:
            d["prepare"] = {k: dict(v) if isinstance(v, Mapping) else v for k, v in self.prepare.items()}
        return d


def _data(v: Any) -> DataSource:
    d = _mapping(v, "data", ("sample", "n", "seed", "path", "table", "schema", "prepare", "engine", "duckdb", "spark"))
    if sum(k in d for k in ("sample", "path", "table")) != 1:
        raise _err("data", "give exactly one of 'sample' (a built-in sample), 'path' (a file next to the config) or "
                           "'table' (a table of the Spark catalog).")
    schema = None
    if "schema" in d:
        s = _mapping(d["schema"], "data.schema", ("id", "measures", "groups", "owner"), required=("measures",))
        measures = _names(s["measures"], "data.schema.measures")
        if not measures:
            raise _err("data.schema.measures", "needs at least one measure column.")
        schema = {"id_col": None if s.get("id") is None else _text(s["id"], "data.schema.id", max_len=500),
                  "measures": measures, "groups": _names(s.get("groups") or [], "data.schema.groups"),
                  "owner_col": None if s.get("owner") is None else _text(s["owner"], "data.schema.owner",
                                                                          max_len=500)}
    prepare: dict[str, Any] = {}
    if "prepare" in d and d["prepare"] is not None:
        p = _mapping(d["prepare"], "data.prepare", (*PREPARE_OPTIONS, "shift_by"))
        for k, val in p.items():
            if k == "shift_by":
                continue
            val = _choice(val, f"data.prepare.{k}", PREPARE_OPTIONS[k])
            if val != "error":
                prepare[k] = val
        if p.get("shift_by") is not None:
            shifts = p["shift_by"]
            if not isinstance(shifts, Mapping):
                raise _err("data.prepare.shift_by", f"must map measure names to constants (got {_fmt(shifts)}).")
            if prepare.get("negative") != "shift":
                raise _err("data.prepare.shift_by", "applies only with 'negative: shift'.",
                           hint="Add 'negative: shift' to data.prepare, or remove shift_by.")
            prepare["shift_by"] = {
                _text(m, "data.prepare.shift_by", max_len=500):
                    _number(c, f"data.prepare.shift_by.{_name(m)}", nonneg=True, hi=1e15)
                for m, c in shifts.items()}
    if "sample" in d:
        from . import samples

        for k in ("engine", "duckdb", "spark"):
            if k in d and not (k == "engine" and d[k] == "memory"):
                raise _err(f"data.{k}", "applies to files only (a sample is generated in memory).")

        name = _text(d["sample"], "data.sample", max_len=200)
        if name not in samples.names():
            raise _err("data.sample", f"unknown sample {_fmt(name)}.", hint=f"Choose one of: {', '.join(samples.names())}.")
        n = None if d.get("n") is None else _int(d["n"], "data.n", lo=1, hi=20_000_000)
        return DataSource(sample=name, n=n, sample_seed=_int(d.get("seed", 0), "data.seed", hi=MAX_SEED),
                          schema=schema, prepare=prepare)
    for k in ("n", "seed"):
        if k in d:
            raise _err(f"data.{k}", "applies to samples only.")
    engine = _choice(d.get("engine", "memory"), "data.engine", DATA_ENGINES)
    duck: dict[str, Any] = {}
    if d.get("duckdb") is not None:
        o = _mapping(d["duckdb"], "data.duckdb", ("memory_limit", "threads"))
        if "memory_limit" in o:
            lim = _text(o["memory_limit"], "data.duckdb.memory_limit", max_len=20)
            if not _MEMORY_LIMIT.match(lim):
                raise _err("data.duckdb.memory_limit", f"must be a size such as 3GB or 500MB (got {_fmt(lim)}).")
            duck["memory_limit"] = lim.strip()
        if "threads" in o:
            duck["threads"] = _int(o["threads"], "data.duckdb.threads", lo=1, hi=256)
    spark = _spark_options(d["spark"]) if d.get("spark") is not None else {}
    if (spark or "table" in d) and engine != "spark":
        raise _err("data.spark" if spark else "data.table", "applies to the spark engine only.",
                   hint="Add 'engine: spark' to data.")
    if "table" in d:
        name = _text(d["table"], "data.table", max_len=400)
        if not _SPARK_TABLE.match(name):
            raise _err("data.table", f"must name a table of the Spark catalog, e.g. census.cbp (got {_fmt(name)}).")
        return DataSource(table=name, schema=schema, prepare=prepare, engine=engine, duckdb=duck, spark=spark)
    return DataSource(path=_data_path(d["path"], engine), schema=schema, prepare=prepare, engine=engine, duckdb=duck,
                      spark=spark)


def _is_uri(spec: Any) -> bool:
    from .engines.spark_engine import is_uri

    return is_uri(spec)


def _data_path(v: Any, engine: str) -> str:
    """``data.path``: relative to the config's folder; with Spark also a URI (``hdfs://``,
    ``s3a://``: the cluster's file systems, passed untouched; ``file://``: a file of this machine,
    which must lie in the config's folder — checked when the data is read, see :func:`load_data`)."""
    p = _text(v, "data.path", max_len=1000)
    if not _is_uri(p):
        return _check_relative(p, "data.path")
    if engine != "spark":
        raise _err("data.path", f"a URI ({_fmt(p)}) is read by the spark engine only.", hint="Add 'engine: spark'.")
    if any(ch.isspace() or ord(ch) < 32 for ch in p):
        raise _err("data.path", "a URI may not hold spaces or control characters.")
    if p.lower().startswith("file:"):
        from urllib.parse import unquote, urlparse

        u = urlparse(p)
        if u.netloc not in ("", "localhost") or not PurePosixPath(unquote(u.path)).is_absolute():
            raise _err("data.path", f"a file:// URI must name an absolute path of this machine (got {_fmt(p)}).")
    return p


def _spark_options(v: Any) -> dict[str, Any]:
    """``data.spark``: ``master`` or ``remote`` (not both) and ``conf`` (Spark settings: names
    ``spark.…``, values strings or numbers)."""
    o = _mapping(v, "data.spark", ("master", "remote", "conf"))
    out: dict[str, Any] = {}
    if "master" in o and "remote" in o:
        raise _err("data.spark", "give 'master' (a classic session) or 'remote' (Spark Connect), not both.")
    if "master" in o:
        m = _text(o["master"], "data.spark.master", max_len=320).strip()
        if not _SPARK_MASTER.match(m):
            raise _err("data.spark.master", f"must be local[*], local[N], spark://host:port, yarn or k8s://… "
                                            f"(got {_fmt(m)}).")
        out["master"] = m
    if "remote" in o:
        r = _text(o["remote"], "data.spark.remote", max_len=320).strip()
        if not _SPARK_REMOTE.match(r):
            raise _err("data.spark.remote", f"must be a Spark Connect address sc://host:port (got {_fmt(r)}).")
        out["remote"] = r
    if o.get("conf") is not None:
        c = o["conf"]
        if not isinstance(c, Mapping):
            raise _err("data.spark.conf", f"must map Spark settings to values (got {_fmt(c)}).")
        if len(c) > 100:
            raise _err("data.spark.conf", f"holds at most 100 settings (got {len(c)}).")
        conf: dict[str, Any] = {}
        for k, val in c.items():
            key = _text(k, "data.spark.conf", max_len=210)
            if not _SPARK_CONF_KEY.match(key):
                raise _err("data.spark.conf", f"setting names start with 'spark.' (got {_fmt(key)}).")
            if isinstance(val, bool) or not isinstance(val, (str, int, float)):
                raise _err(f"data.spark.conf.{key}", f"must be a string or a number (got {_fmt(val)}).")
            if isinstance(val, str):
                val = _text(val, f"data.spark.conf.{key}", max_len=1000)
            elif not math.isfinite(float(val)):
                raise _err(f"data.spark.conf.{key}", "must be a finite number.")
            conf[key] = val
        out["conf"] = conf
    return out


# ---------------------------------------------------------------------------
# Policy and workload
# ---------------------------------------------------------------------------


def _thresholds(v: Any) -> dict[str, Any]:
    path = "policy.thresholds"
    if not isinstance(v, Mapping) or not v:
        raise _err(path, "must map each measure to its splitting threshold, e.g. {EMP: 100}.")
    if "rows" in v or "group_column" in v:
        d = _mapping(v, path, ("group_column", "rows"), required=("group_column", "rows"))
        col = _text(d["group_column"], f"{path}.group_column", max_len=500)
        if not isinstance(d["rows"], Mapping) or not d["rows"]:
            raise _err(f"{path}.rows", "must map group values ('*' = every other group) to thresholds.")
        rows: dict[str, dict[str, float]] = {}
        for g, row in d["rows"].items():
            key = str(_scalar(g, f"{path}.rows"))
            rp = f"{path}.rows.{_name(key)}"
            if not isinstance(row, Mapping) or not row:
                raise _err(rp, "must map each measure to its threshold.")
            rows[key] = {str(m): _number(t, f"{rp}.{_name(m)}", positive=True) for m, t in row.items()}
        return {"group_column": col, "rows": rows}
    return {str(m): _number(t, f"{path}.{_name(m)}", positive=True) for m, t in v.items()}


def _threshold_source(v: Any, thresholds: Mapping[str, Any] | None) -> dict[str, str]:
    """``policy.threshold_source``: measure → where its threshold came from (``typed``, ``data: …`` when
    it was computed from the confidential data, ``private: …`` when a private suggestion released it).
    Optional; a measure not listed was typed in."""
    path = "policy.threshold_source"
    if thresholds is None:
        raise _err(path, "needs policy.thresholds.")
    if not isinstance(v, Mapping):
        raise _err(path, "must map measures to the source of their threshold, e.g. {EMP: 'data: p99'}.")
    measures = set(thresholds) if "rows" not in thresholds else {m for r in thresholds["rows"].values() for m in r}
    out: dict[str, str] = {}
    for m, src in v.items():
        key = f"{path}.{m}"
        if str(m) not in measures:
            raise _err(key, f"{_fmt(m)} has no threshold in policy.thresholds.")
        src = _text(src, key, max_len=200)
        if src.strip() != "typed" and not is_data_derived(src) and not src.strip().startswith("private:"):
            raise _err(key, f"must be 'typed', or start with 'data:' or 'private:' (got {_fmt(src)}).",
                       hint="e.g. 'data: p99' for a threshold computed from the data's 99th percentile, "
                            "'private: DP p97, ε = 0.1' for one suggested privately (its cost in the ledger).")
        if src.strip() != "typed":
            out[str(m)] = src.strip()
    return out


QUERY_KEYS = ("kind", "measure", "rho", "split", "group_by", "filter", "clamp", "rho_count", "label")


def _workload(v: Any) -> dict[str, Any]:
    from .workload import Filter, Query, Workload

    d = _mapping(v, "workload", ("queries", "partition_rho", "joint"), required=("queries",))
    qs = d["queries"]
    if not isinstance(qs, list) or not qs:
        raise _err("workload.queries", "must be a non-empty list of queries.")
    out = []
    for i, q in enumerate(qs):
        p = f"workload.queries[{i}]"
        qd = _mapping(q, p, QUERY_KEYS, required=("kind",))
        kind = _choice(qd["kind"], f"{p}.kind", ("count", "sum", "avg"))
        norm: dict[str, Any] = {"kind": kind, "rho": _number(qd.get("rho", 1.0), f"{p}.rho", nonneg=True)}
        if kind != "count":
            if qd.get("measure") is None:
                raise _err(f"{p}.measure", f"a {kind} query needs a measure.")
            norm["measure"] = _text(qd["measure"], f"{p}.measure", max_len=500)
            norm["split"] = _bool(qd.get("split", True), f"{p}.split")
            if qd.get("clamp") is not None:
                norm["clamp"] = _number(qd["clamp"], f"{p}.clamp", positive=True)
            if kind == "avg":
                norm["rho_count"] = _number(qd.get("rho_count", 0.0), f"{p}.rho_count", nonneg=True)
        elif qd.get("measure") is not None:
            raise _err(f"{p}.measure", "a count query has no measure.")
        if qd.get("group_by"):
            norm["group_by"] = _names(qd["group_by"], f"{p}.group_by")
        if qd.get("filter") is not None:
            f = _mapping(qd["filter"], f"{p}.filter", ("column", "values"), required=("column", "values"))
            vals = f["values"] if isinstance(f["values"], list) else [f["values"]]
            if not vals:
                raise _err(f"{p}.filter.values", "needs at least one value.")
            norm["filter"] = {"column": _text(f["column"], f"{p}.filter.column", max_len=500),
                              "values": [_scalar(x, f"{p}.filter.values[{j}]") for j, x in enumerate(vals)]}
        if qd.get("label"):
            norm["label"] = _text(qd["label"], f"{p}.label", max_len=200)
        _wrap(p, lambda n=norm: Query(kind=n["kind"], measure=n.get("measure"), rho=n["rho"],
                                      split=n.get("split", True), group_by=tuple(n.get("group_by", ())),
                                      filter=Filter.from_dict(n["filter"]) if "filter" in n else None,
                                      clamp=n.get("clamp"), rho_count=n.get("rho_count", 0.0),
                                      label=n.get("label", "")))
        out.append(norm)
    norm_wl = {"queries": out,
               "partition_rho": _number(d.get("partition_rho", 0.0), "workload.partition_rho", nonneg=True),
               "joint": _bool(d.get("joint", True), "workload.joint")}
    _wrap("workload", lambda: Workload((), norm_wl["partition_rho"], norm_wl["joint"]))
    return norm_wl


def _budget(v: Any) -> dict[str, Any]:
    path = "policy.budget"
    d = _mapping(v, path, ("preset", "column", "alpha", "k", "eps", "expression", "steps", "groups", "eps_min",
                           "eps_max", "U"))
    forms = [k for k in ("preset", "expression", "steps", "groups") if k in d]
    if len(forms) != 1:
        raise _err(path, "give exactly one of 'preset', 'expression', 'steps' or 'groups'.")
    out: dict[str, Any] = {}
    form = forms[0]
    if form == "preset":
        out["preset"] = _choice(d["preset"], f"{path}.preset", BUDGET_PRESETS)
        if out["preset"] == "constant":
            out["eps"] = _number(d.get("eps", 1.0), f"{path}.eps", positive=True)
        else:
            if d.get("column") is None:
                raise _err(f"{path}.column", "is required for this preset (the measure v).")
            out["column"] = _text(d["column"], f"{path}.column", max_len=500)
            out["alpha"] = _number(d.get("alpha", {"inverse": 1e4, "log": 500.0, "sqrt": 8.0}[out["preset"]]),
                                   f"{path}.alpha", positive=True)
            if out["preset"] == "log":
                out["k"] = _number(d.get("k", 4.0), f"{path}.k", positive=True, hi=16.0)
    elif form == "expression":
        out["expression"] = _text(d["expression"], f"{path}.expression")
    elif form == "steps":
        s = _mapping(d["steps"], f"{path}.steps", ("column", "bounds", "eps"), required=("column", "eps"))
        eps = s["eps"]
        if not isinstance(eps, list) or not eps:
            raise _err(f"{path}.steps.eps", "must be a non-empty list of budgets.")
        bounds = s.get("bounds") or []
        if not isinstance(bounds, list) or len(bounds) != len(eps) - 1:
            raise _err(f"{path}.steps.bounds", f"must list {len(eps) - 1} upper value(s): one per band but the last "
                                               "(which is open).")
        out["steps"] = {"column": _text(s["column"], f"{path}.steps.column", max_len=500),
                        "bounds": [_number(b, f"{path}.steps.bounds[{i}]") for i, b in enumerate(bounds)],
                        "eps": [_number(e, f"{path}.steps.eps[{i}]", positive=True) for i, e in enumerate(eps)]}
    else:
        g = _mapping(d["groups"], f"{path}.groups", ("column", "parts", "default"), required=("column",))
        parts = g.get("parts") or {}
        if not isinstance(parts, Mapping):
            raise _err(f"{path}.groups.parts", "must map group values to budget expressions.")
        out["groups"] = {"column": _text(g["column"], f"{path}.groups.column", max_len=500),
                         "parts": {str(_scalar(k, f"{path}.groups.parts")): _text(str(e) if isinstance(e, (int, float))
                                                                                   and not isinstance(e, bool) else e,
                                                                                   f"{path}.groups.parts.{_name(k)}")
                                   for k, e in parts.items()},
                         "default": None if g.get("default") is None else _text(
                             str(g["default"]) if isinstance(g["default"], (int, float)) else g["default"],
                             f"{path}.groups.default")}
        if not out["groups"]["parts"] and out["groups"]["default"] is None:
            raise _err(f"{path}.groups", "needs at least one part or a default.")
    out["eps_min"] = None if d.get("eps_min") is None else _number(d["eps_min"], f"{path}.eps_min", positive=True)
    out["eps_max"] = None if d.get("eps_max") is None else _number(d["eps_max"], f"{path}.eps_max", positive=True)
    out["U"] = None if d.get("U") is None else _number(d["U"], f"{path}.U", positive=True)
    _wrap(path, lambda: build_budget(out))
    return out


def build_budget(b: Mapping[str, Any]) -> Any:
    """The :class:`~prdp_core.mechanisms.prdp.budget.BudgetFunction` of a normalised ``policy.budget`` section."""
    from .mechanisms import prdp

    kw = {"eps_min": b.get("eps_min"), "eps_max": b.get("eps_max"), "U": b.get("U")}
    if "preset" in b:
        if b["preset"] == "constant":
            return prdp.constant(b["eps"], U=b.get("U"))
        params = {"alpha": b["alpha"], **({"k": b["k"]} if b["preset"] == "log" else {})}
        return prdp.preset(b["preset"], b["column"], **kw, **params)
    if "expression" in b:
        return prdp.parse_budget(b["expression"], **kw)
    if "steps" in b:
        s = b["steps"]
        return prdp.step_table(s["column"], s["bounds"], s["eps"], **kw)
    g = b["groups"]
    return prdp.per_group(g["column"], dict(g["parts"]), default=g.get("default"), **kw)


def _specification(v: Any, study_seed: int) -> dict[str, Any]:
    path = "policy.specification"
    d = _mapping(v, path, ("tiers", "seed", "user", "column", "default_eps", "labels"))
    if ("tiers" in d) == ("column" in d):
        raise _err(path, "give exactly one of 'tiers' (generated, paper Sec. V) or 'column' (read from the data).")
    out: dict[str, Any] = {"user": None if d.get("user") is None else _text(d["user"], f"{path}.user", max_len=500)}
    if "tiers" in d:
        t = _mapping(d["tiers"] or {}, f"{path}.tiers", ("f_c", "f_m", "eps_c", "eps_m", "eps_l"))
        from .mechanisms.personalized import TierConfig

        base = TierConfig()
        tiers = {k: _number(t.get(k, getattr(base, k)), f"{path}.tiers.{k}", nonneg=k.startswith("f_"),
                            positive=k.startswith("eps")) for k in ("f_c", "f_m", "eps_c", "eps_m", "eps_l")}
        _wrap(f"{path}.tiers", lambda: TierConfig(**tiers))
        out["tiers"] = tiers
        out["seed"] = _int(d.get("seed", study_seed), f"{path}.seed", hi=MAX_SEED)
        for k in ("default_eps", "labels"):
            if k in d:
                raise _err(f"{path}.{k}", "applies to a specification read from a column.")
        return out
    if "seed" in d:
        raise _err(f"{path}.seed", "applies to generated tiers only.")
    out["column"] = _text(d["column"], f"{path}.column", max_len=500)
    out["default_eps"] = _number(d.get("default_eps", 1.0), f"{path}.default_eps", positive=True)
    labels = d.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise _err(f"{path}.labels", "must map labels to ε.")
    out["labels"] = {str(_scalar(k, f"{path}.labels")): _number(e, f"{path}.labels.{_name(k)}", positive=True)
                     for k, e in labels.items()}
    return out


def _tiers(v: Any) -> dict[str, float]:
    from .mechanisms import multitier as mt

    path = "policy.tiers"
    if not isinstance(v, Mapping) or not v:
        raise _err(path, "must map each analyst tier's name to its budget ε, e.g. {public: 0.5, agency: 8}.")
    out = {str(_scalar(k, path)): _number(e, f"{path}.{_name(k)}", positive=True) for k, e in v.items()}
    _wrap(path, lambda: mt.tiers_from(out))
    return out


# ---------------------------------------------------------------------------
# Mechanisms
# ---------------------------------------------------------------------------


def _granular(d: Mapping[str, Any], p: str) -> dict[str, Any]:
    """The keys of a ``granular`` mechanism: a histogram of attributes under granular (per-attribute) DP."""
    from .mechanisms.granular.data import MAX_ATTRIBUTES

    out: dict[str, Any] = {"histogram": _choice(d.get("histogram", "standard"), f"{p}.histogram",
                                                ("standard", "heavy_hitter"))}
    attrs = d["attributes"]
    if isinstance(attrs, str):
        attrs = [attrs]
    if not isinstance(attrs, list) or not 1 <= len(attrs) <= MAX_ATTRIBUTES:
        raise _err(f"{p}.attributes", f"must list 1 to {MAX_ATTRIBUTES} columns (the histogram's attributes).")
    out["attributes"] = [_text(a, f"{p}.attributes[{j}]", max_len=500) for j, a in enumerate(attrs)]
    if len(set(out["attributes"])) != len(out["attributes"]):
        raise _err(f"{p}.attributes", "lists a column twice.")
    cats = d.get("categories") or {}
    if not isinstance(cats, Mapping):
        raise _err(f"{p}.categories", "must map an attribute to its declared public categories (a list or text).")
    decl: dict[str, Any] = {}
    for k, c in cats.items():
        key = f"{p}.categories.{_name(k)}"
        if str(k) not in out["attributes"]:
            raise _err(key, "is not one of the attributes.")
        if isinstance(c, str):
            decl[str(k)] = _text(c, key, max_len=200_000)
        elif isinstance(c, list) and c:
            decl[str(k)] = [_scalar(x, key) for x in c]
        else:
            raise _err(key, "must be a non-empty list of categories or text with one per comma.")
    if decl:
        out["categories"] = decl
    out["eps"] = _number(d["eps"], f"{p}.eps", positive=True, hi=100.0)
    if out["histogram"] == "heavy_hitter":
        out["nu"] = _number(d.get("nu", 0.01), f"{p}.nu", lo=0.0, open_lo=True, hi=0.5)
        out["method"] = _choice(d.get("method", "exact"), f"{p}.method", ("exact", "lemma28"))
        if "threshold" in d:
            raise _err(f"{p}.threshold", "applies to the standard histogram only.")
    else:
        for k in ("nu", "method"):
            if k in d:
                raise _err(f"{p}.{k}", "applies to the heavy-hitter histogram only.")
        if d.get("threshold") is not None:
            out["threshold"] = _number(d["threshold"], f"{p}.threshold")
    return out


def _mechanism(v: Any, i: int, policy: Mapping[str, Any], has_workload: bool, engine: str = "memory"
               ) -> dict[str, Any]:
    p = f"mechanisms[{i}]"
    if not isinstance(v, Mapping) or "kind" not in v:
        raise _err(p, f"must be a mapping with a 'kind' ({', '.join(MECHANISM_KINDS)}).")
    kind = _choice(v["kind"], f"{p}.kind", MECHANISM_KINDS)
    common = ("kind", "label", "seed")
    out: dict[str, Any] = {"kind": kind}
    if kind == "unit_splitting":
        d = _mapping(v, p, common + ("partition_delta", "secure"))
        if "thresholds" not in policy or not has_workload:
            raise _err(p, "unit splitting needs policy.thresholds and a workload.")
        out["partition_delta"] = _number(d.get("partition_delta", 1e-6), f"{p}.partition_delta", positive=True,
                                         hi=0.1)
    elif kind == "prdp":
        d = _mapping(v, p, common + ("model", "query", "column", "beta", "threshold", "algorithms", "secure"))
        if "budget" not in policy:
            raise _err(p, "the PrDP framework needs policy.budget (the budget function E).")
        model = _choice(d.get("model", "central"), f"{p}.model", ("central", "local"))
        query = _choice(d.get("query", "sum"), f"{p}.query", PRDP_QUERIES)
        if model == "local" and query not in ("count", "sum"):
            raise _err(f"{p}.query", "the local model answers count and sum only.")
        out.update(model=model, query=query,
                   beta=_number(d.get("beta", 0.1), f"{p}.beta", lo=0.0, open_lo=True, hi=0.5))
        if query != "count":
            if d.get("column") is None:
                raise _err(f"{p}.column", f"a {query} query needs a column.")
            out["column"] = _text(d["column"], f"{p}.column", max_len=500)
        if model == "local":
            out["threshold"] = _choice(d.get("threshold", "paper"), f"{p}.threshold", ("paper", "bernstein"))
        allowed = {"count": ("count",) if query == "count" else (), "framework": ("framework",),
                   "sum_extension": ("sum_extension",) if query == "sum" and model == "central" else (),
                   "naive": ("naive",)}
        default = [a for a in PRDP_ALGORITHMS if allowed[a]]
        if engine != "memory":  # the records stay in the engine: algorithms that need them are left out
            default = [a for a in default if a not in RECORD_ALGORITHMS]
        algs = d.get("algorithms", default)
        if isinstance(algs, str):
            algs = [algs]
        if not isinstance(algs, list) or not algs:
            raise _err(f"{p}.algorithms", f"must be a non-empty list from {', '.join(default)}.")
        for j, a in enumerate(algs):
            _choice(a, f"{p}.algorithms[{j}]", PRDP_ALGORITHMS)
            if not allowed[a]:
                raise _err(f"{p}.algorithms[{j}]", f"'{a}' does not apply to a {model} {query} query.",
                           hint=f"Use some of: {', '.join(default)}.")
        out["algorithms"] = list(algs)  # every model and algorithm has a secure path (secure: true)
    elif kind == "granular":
        d = _mapping(v, p, common + ("histogram", "attributes", "categories", "eps", "nu", "method", "threshold",
                                     "secure"), required=("attributes", "eps"))
        out.update(_granular(d, p))
    elif kind == "personalized":
        d = _mapping(v, p, common + ("mechanism", "t", "rescale", "query", "design_defaults", "secure"))
        if "specification" not in policy:
            raise _err(p, "personalized DP needs policy.specification (each user's ε).")
        out["mechanism"] = _choice(d.get("mechanism", "sample"), f"{p}.mechanism", PDP_MECHANISMS)
        t = d.get("t", "max")
        out["t"] = t if t in ("max", "mean") else _number(t, f"{p}.t", positive=True)
        out["rescale"] = _bool(d.get("rescale", False), f"{p}.rescale")
        dd = d.get("design_defaults") or []
        if not isinstance(dd, list) or any(x not in ("hi", "cutoff") for x in dd):
            raise _err(f"{p}.design_defaults", "must list the query parameters whose value is a design default "
                       "computed from the data: hi and/or cutoff.", hint="e.g. design_defaults: [hi]")
        if dd:
            out["design_defaults"] = sorted(set(dd))
        q = _mapping(d.get("query") or {}, f"{p}.query", ("kind", "column", "cutoff", "lo", "hi", "median_score",
                                                         "integer"))
        qn: dict[str, Any] = {"kind": _choice(q.get("kind", "count"), f"{p}.query.kind", PDP_QUERIES),
                              "column": None if q.get("column") is None else _text(q["column"], f"{p}.query.column",
                                                                                    max_len=500),
                              "cutoff": _number(q.get("cutoff", 1.0), f"{p}.query.cutoff"),
                              "lo": _number(q.get("lo", 0.0), f"{p}.query.lo"),
                              "hi": None if q.get("hi") is None else _number(q["hi"], f"{p}.query.hi"),
                              "median_score": _choice(q.get("median_score", "rank"), f"{p}.query.median_score",
                                                      ("rank", "changes")),
                              "integer": _bool(q.get("integer", False), f"{p}.query.integer")}
        from .mechanisms.personalized import PersonalizedQuery

        _wrap(f"{p}.query", lambda: PersonalizedQuery(**qn))
        out["query"] = qn
    else:
        d = _mapping(v, p, common + ("model", "query", "measure", "clip", "family", "delta", "filter", "d", "scale",
                                     "top", "variant", "secure"))
        if "tiers" not in policy:
            raise _err(p, "a multi-tier release needs policy.tiers (each analyst's ε).")
        model = _choice(d.get("model", "central"), f"{p}.model", ("central", "local"))
        out["model"] = model
        if d.get("filter") is not None:
            f = _mapping(d["filter"], f"{p}.filter", ("column", "op", "value"), required=("column", "value"))
            out["filter"] = {"column": _text(f["column"], f"{p}.filter.column", max_len=500),
                             "op": _choice(f.get("op", "=="), f"{p}.filter.op", MT_OPS),
                             "value": _scalar(f["value"], f"{p}.filter.value")}
        if model == "central":
            out["query"] = _choice(d.get("query", "count"), f"{p}.query", ("count", "sum"))
            fams = MT_FAMILIES if out["query"] == "sum" else MT_FAMILIES[:3]
            out["family"] = _choice(d.get("family", "geometric"), f"{p}.family", fams)
            if out["query"] == "sum":
                if d.get("measure") is None:
                    raise _err(f"{p}.measure", "a sum needs a measure.")
                out["measure"] = _text(d["measure"], f"{p}.measure", max_len=500)
                from .mechanisms.multitier.noise_families import MAX_SENSITIVITY

                out["clip"] = _number(d.get("clip", 100.0), f"{p}.clip", positive=True, hi=MAX_SENSITIVITY)
            out["delta"] = _number(d.get("delta", 1e-6), f"{p}.delta", positive=True, hi=0.1)
            for k in ("d", "scale", "top", "variant"):
                if k in d:
                    raise _err(f"{p}.{k}", "applies to the local model only.")
        else:
            if d.get("measure") is None:
                raise _err(f"{p}.measure", "the local model categorises a measure: name it.")
            out["measure"] = _text(d["measure"], f"{p}.measure", max_len=500)
            out["d"] = _int(d.get("d", 16), f"{p}.d", lo=2, hi=256)
            out["scale"] = _choice(d.get("scale", "log"), f"{p}.scale", ("log", "linear"))
            out["top"] = _number(d.get("top", 1e6), f"{p}.top", positive=True, hi=1e300)  # public top of the bins
            out["variant"] = _choice(d.get("variant", "subset2"), f"{p}.variant", ("subset2", "subset1"))
            for k in ("query", "clip", "family", "delta"):
                if k in d:
                    raise _err(f"{p}.{k}", "applies to the central model only.")
    if d.get("label") is not None:
        out["label"] = _text(d["label"], f"{p}.label", max_len=200)
    if d.get("seed") is not None:
        out["seed"] = _int(d["seed"], f"{p}.seed", hi=MAX_SEED)
    if "secure" in d and _bool(d["secure"], f"{p}.secure"):
        if "seed" in out:
            raise _err(f"{p}.seed", "a secure release is unseeded: drop the seed or the secure flag.")
        out["secure"] = True
    return out


# ---------------------------------------------------------------------------
# The study
# ---------------------------------------------------------------------------

TOP_KEYS = ("version", "title", "mode", "seed", "data", "policy", "workload", "mechanisms", "report", "app")
APP_PAGES = ("data", "concepts", "policy_designer", "personalized", "budget_functions", "tradeoffs", "run",
             "analyst_tiers", "study")


@dataclass(frozen=True)
class Study:
    """A validated study (see ``docs/config.md`` for every key).

    ``policy`` holds the normalised ``thresholds`` / ``budget`` / ``specification`` /
    ``tiers`` sections that are present; ``workload`` the normalised workload (or None);
    ``mechanisms`` one normalised mapping per mechanism. ``base_dir`` is the folder data
    paths are resolved against (the config file's folder; None for pasted text).
    """

    data: DataSource
    mode: str = "review"
    seed: int = 0
    title: str = ""
    policy: dict[str, Any] = field(default_factory=dict)
    workload: dict[str, Any] | None = None
    mechanisms: tuple[dict[str, Any], ...] = ()
    report: dict[str, Any] = field(default_factory=dict)
    app: dict[str, dict[str, Any]] = field(default_factory=dict)
    base_dir: str | None = field(default=None, compare=False)

    # -- engine objects ---------------------------------------------------------------

    def mechanism_seed(self, i: int) -> int:
        """Seed of mechanism ``i``: its own ``seed`` key, else the study seed + i (distinct noise per release)."""
        m = self.mechanisms[i]
        return int(m["seed"]) if "seed" in m else (self.seed + i) % (MAX_SEED + 1)

    def mechanism_label(self, i: int) -> str:
        m = self.mechanisms[i]
        return m.get("label") or f"{i + 1}. {m['kind']}"

    def thresholds(self, table: Any = None) -> Any:
        """Splitting thresholds T(a); with ``table`` group values typed as text are matched to the data."""
        import pandas as pd

        from .splitting import as_thresholds, thresholds_from_frame

        t = self.policy["thresholds"]
        if "rows" not in t:
            return as_thresholds(t)
        frame = pd.DataFrame([{"group": g, **row} for g, row in t["rows"].items()])
        return _wrap("policy.thresholds", lambda: thresholds_from_frame(frame, group_col=t["group_column"],
                                                                          table=table))

    def splitting_policy(self, table: Any = None) -> Any:
        """The :class:`~prdp_core.workload.SplittingPolicy` (thresholds + workload)."""
        from .workload import SplittingPolicy, Workload

        if "thresholds" not in self.policy or self.workload is None:
            raise ConfigError("policy.thresholds: unit splitting needs thresholds and a workload.")
        wl = Workload.from_dict(self.workload)
        return SplittingPolicy(self.thresholds(table), wl, threshold_source=self.policy.get("threshold_source") or {})

    def budget_function(self) -> Any:
        if "budget" not in self.policy:
            raise ConfigError("policy.budget: this study has no budget function.")
        return _wrap("policy.budget", lambda: build_budget(self.policy["budget"]))

    def privacy_spec(self, table: Any) -> Any:
        """The personalized DP specification Φ over the users of ``table``."""
        import numpy as np
        import pandas as pd

        from .mechanisms import personalized

        s = self.policy.get("specification")
        if s is None:
            raise ConfigError("policy.specification: this study has no personalized DP specification.")

        def build() -> Any:
            if "tiers" in s:
                return personalized.generate_tiers_for(table, personalized.TierConfig(**s["tiers"]),
                                                       rng=np.random.default_rng(s["seed"]), user_col=s["user"])
            col = s["column"]
            if s["labels"]:
                tab = pd.DataFrame({col: table[col].astype(str)})
                if s["user"]:
                    tab[s["user"]] = table[s["user"]].to_numpy()
                return personalized.spec_from_labels(tab, col, dict(s["labels"]), user_col=s["user"],
                                          default_eps=s["default_eps"])
            return personalized.spec_from_column(table, col, user_col=s["user"], default_eps=s["default_eps"])

        if s.get("column") and s["column"] not in table.columns:
            raise ConfigError(f"policy.specification.column: '{_name(s['column'])}' is not a column of the data.")
        if s.get("user") and s["user"] not in table.columns:
            raise ConfigError(f"policy.specification.user: '{_name(s['user'])}' is not a column of the data.")
        return _wrap("policy.specification", build)

    def tiers(self) -> Any:
        from .mechanisms import multitier as mt

        if "tiers" not in self.policy:
            raise ConfigError("policy.tiers: this study has no analyst tiers.")
        return _wrap("policy.tiers", lambda: mt.tiers_from(self.policy["tiers"]))

    # -- checks against the data -----------------------------------------------------

    def check_against(self, ds: Any) -> None:
        """Check every column the study names exists in ``ds`` (a Dataset); ConfigError names the key."""
        cols = set(data_columns(ds))
        measures = set(ds.schema.measures)
        for m in self.data.prepare.get("shift_by", {}):
            if m not in measures:
                raise _err(f"data.prepare.shift_by.{_name(m)}", f"'{_name(m)}' is not a measure of the data.",
                           hint=f"Measures: {_names_hint(ds.schema.measures)}.")

        def need(col: str | None, key: str, *, measure: bool = False) -> None:
            if col is None:
                return
            if col not in cols:
                raise _err(key, f"'{_name(col)}' is not a column of the data.",
                           hint=f"Columns: {_names_hint(sorted(cols))}.")
            if measure and col not in measures:
                raise _err(key, f"'{_name(col)}' is not a measure of the data.",
                           hint=f"Measures: {_names_hint(ds.schema.measures)}.")

        t = self.policy.get("thresholds")
        if t is not None:
            if "rows" in t:
                need(t["group_column"], "policy.thresholds.group_column")
                for g, row in t["rows"].items():
                    for m in row:
                        need(m, f"policy.thresholds.rows.{_name(g)}.{_name(m)}", measure=True)
            else:
                for m in t:
                    need(m, f"policy.thresholds.{_name(m)}", measure=True)
        if self.workload is not None:
            for i, q in enumerate(self.workload["queries"]):
                p = f"workload.queries[{i}]"
                need(q.get("measure"), f"{p}.measure", measure=True)
                for g in q.get("group_by", ()):
                    need(g, f"{p}.group_by")
                if "filter" in q:
                    need(q["filter"]["column"], f"{p}.filter.column")
        if t is not None and self.workload is not None:
            _wrap("policy", lambda: self.validate_policy(ds))
        if "budget" in self.policy:
            b = self.budget_function()
            _wrap("policy.budget", lambda: b.check_columns(data_columns(ds)))
        s = self.policy.get("specification")
        if s is not None:
            need(s.get("column"), "policy.specification.column")
            need(s.get("user"), "policy.specification.user")
        for i, m in enumerate(self.mechanisms):
            p = f"mechanisms[{i}]"
            if m["kind"] == "prdp":
                need(m.get("column"), f"{p}.column", measure=m["query"] in ("sum", "max"))
            elif m["kind"] == "personalized":
                need(m["query"].get("column"), f"{p}.query.column")
            elif m["kind"] == "granular":
                for j, a in enumerate(m["attributes"]):
                    need(a, f"{p}.attributes[{j}]")
            elif m["kind"] == "multitier":
                need(m.get("measure"), f"{p}.measure", measure=True)
                if "filter" in m:
                    need(m["filter"]["column"], f"{p}.filter.column")

    def dataset_policy(self, ds: Any) -> Any:
        """The splitting policy, group values typed as text matched to the dataset's values."""
        t = self.policy.get("thresholds") or {}
        return self.splitting_policy(group_values(ds, t.get("group_column")))

    def validate_policy(self, ds: Any) -> Any:
        """The splitting policy checked against the dataset (in memory, or by its engine)."""
        policy = self.dataset_policy(ds)
        if getattr(ds, "engine", None) is not None:
            ds.engine.validate_policy(policy, ds.schema.measures)
        else:
            policy.validate(ds.table, ds.schema.measures)
        return policy

    # -- serialisation ----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The study as a plain mapping in the documented schema (``parse_config`` reads it back)."""
        d: dict[str, Any] = {"version": SCHEMA_VERSION}
        if self.title:
            d["title"] = self.title
        d.update(mode=self.mode, seed=self.seed, data=self.data.to_dict())
        if self.policy:
            d["policy"] = _policy_out(self.policy)
        if self.workload is not None:
            d["workload"] = _workload_out(self.workload)
        d["mechanisms"] = [dict(m) for m in self.mechanisms]
        if self.report:
            d["report"] = dict(self.report)
        if self.app:
            d["app"] = {k: dict(v) for k, v in self.app.items()}
        return d

    def to_yaml(self) -> str:
        """YAML text of :meth:`to_dict`, with a header naming the schema."""
        head = ("# PrDP Explorer study (schema version 1; every key is described in docs/config.md).\n"
                "# Validate: prdp validate FILE    Run: prdp run FILE --out DIR\n")
        return head + yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=100)


def _policy_out(p: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in ("thresholds", "threshold_source", "budget", "specification", "tiers"):
        if k not in p or (k == "threshold_source" and not p[k]):
            continue
        v = p[k]
        if k == "budget":
            v = {kk: vv for kk, vv in v.items() if vv is not None}
        elif k == "specification":
            v = {kk: vv for kk, vv in v.items() if vv is not None and not (kk == "labels" and not vv)}
        out[k] = v
    return out


def _workload_out(w: Mapping[str, Any]) -> dict[str, Any]:
    return {"queries": [dict(q) for q in w["queries"]], "partition_rho": w["partition_rho"], "joint": w["joint"]}


def _report(v: Any) -> dict[str, Any]:
    d = _mapping(v or {}, "report", ("delta", "min_records", "title"))
    out: dict[str, Any] = {}
    if "delta" in d:
        out["delta"] = _number(d["delta"], "report.delta", positive=True, hi=0.1)
    if "min_records" in d:
        out["min_records"] = _int(d["min_records"], "report.min_records", lo=1)
    if "title" in d:
        out["title"] = _text(d["title"], "report.title", max_len=200)
    return out


def _app(v: Any) -> dict[str, dict[str, Any]]:
    """Settings of the app's pages that are not part of the engine's study (views, sweeps):
    page → setting → plain value. The app checks the setting names when it imports them."""
    d = _mapping(v or {}, "app", APP_PAGES)
    out: dict[str, dict[str, Any]] = {}
    for page, settings in d.items():
        if settings is None:
            continue
        if not isinstance(settings, Mapping):
            raise _err(f"app.{page}", "must map settings to values.")
        clean: dict[str, Any] = {}
        for k, val in settings.items():
            key = f"app.{page}.{_name(k)}"
            if not isinstance(k, str) or not k.replace("_", "").isalnum() or len(k) > 80:
                raise _err(key, "is not a valid setting name.")
            if isinstance(val, list):
                if len(val) > 1000:
                    raise _err(key, "is too long a list.")
                clean[k] = [_scalar(x, f"{key}[{j}]") for j, x in enumerate(val)]
            else:
                clean[k] = _scalar(val, key)
        out[page] = clean
    return out


def study_from_dict(d: Any, *, base_dir: str | os.PathLike | None = None) -> Study:
    """Validate a parsed config mapping and return the :class:`Study` (ConfigError otherwise)."""
    if not isinstance(d, Mapping):
        raise ConfigError("The config must be a YAML mapping (key: value lines) at its top level.",
                          hint="Start from one of the examples in examples/.")
    if "version" not in d:
        raise _err("version", f"is required (this build reads version {SCHEMA_VERSION}).",
                   hint=f"Add 'version: {SCHEMA_VERSION}' at the top of the file.")
    ver = d["version"]
    if isinstance(ver, bool) or not isinstance(ver, int) or ver != SCHEMA_VERSION:
        raise _err("version", f"unsupported version {_fmt(ver)}: this build reads version {SCHEMA_VERSION} only.",
                   hint="Export the study again from this version of the app, or update the file by hand "
                        "(docs/config.md).")
    top = _mapping(d, "", TOP_KEYS, required=("data",))
    seed = _int(top.get("seed", 0), "seed", hi=MAX_SEED)
    mode = _choice(top.get("mode", "review"), "mode", MODES)
    title = "" if top.get("title") is None else _text(top["title"], "title", max_len=200)
    data = _data(top["data"])
    if data.path is not None and base_dir is not None:
        safe_data_path(data.path, base_dir)
    policy: dict[str, Any] = {}
    if top.get("policy") is not None:
        pd_ = _mapping(top["policy"], "policy", ("thresholds", "threshold_source", "budget", "specification",
                                                 "tiers"))
        if pd_.get("thresholds") is not None:
            policy["thresholds"] = _thresholds(pd_["thresholds"])
        if pd_.get("threshold_source") is not None:
            policy["threshold_source"] = _threshold_source(pd_["threshold_source"], policy.get("thresholds"))
        if pd_.get("budget") is not None:
            policy["budget"] = _budget(pd_["budget"])
        if pd_.get("specification") is not None:
            policy["specification"] = _specification(pd_["specification"], seed)
        if pd_.get("tiers") is not None:
            policy["tiers"] = _tiers(pd_["tiers"])
    workload = None if top.get("workload") is None else _workload(top["workload"])
    if workload is not None and "thresholds" in policy:
        th = policy["thresholds"]
        measures = set(th) if "rows" not in th else {m for r in th["rows"].values() for m in r}
        for i, q in enumerate(workload["queries"]):
            if q["kind"] != "count" and q.get("split", True) and q["measure"] not in measures:
                raise _err(f"workload.queries[{i}].measure", f"'{_name(q['measure'])}' is summed on split data but "
                           "has no splitting threshold in policy.thresholds.",
                           hint="Add a threshold for it, or set split: false with a clamp (top-coding).")
    mechs = top.get("mechanisms") or []
    if not isinstance(mechs, list):
        raise _err("mechanisms", "must be a list of mechanisms.")
    mechanisms = tuple(_mechanism(m, i, policy, workload is not None, data.engine) for i, m in enumerate(mechs))
    return Study(data=data, mode=mode, seed=seed, title=title, policy=policy, workload=workload,
                 mechanisms=mechanisms, report=_report(top.get("report")), app=_app(top.get("app")),
                 base_dir=None if base_dir is None else str(base_dir))


def parse_config(text: str | bytes | Mapping[str, Any], *, base_dir: str | os.PathLike | None = None) -> Study:
    """Validate a study config given as YAML text (or an already parsed mapping).

    ``base_dir`` is the folder a ``data.path`` is resolved against (None: the path can only
    be used once a data file is supplied separately, as in the app). YAML is read by a strict
    safe loader (plain values only; anchors, aliases, merge keys, repeated keys and nesting deeper
    than ``MAX_CONFIG_DEPTH`` are refused with the line). Raises :class:`ConfigError`.
    """
    if isinstance(text, Mapping):
        return study_from_dict(text, base_dir=base_dir)
    if isinstance(text, bytes):
        if len(text) > MAX_CONFIG_BYTES:
            raise ConfigError(f"The config is larger than {MAX_CONFIG_BYTES:,} bytes.",
                              hint="A study config is a short text file.")
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ConfigError("The config is not UTF-8 text.", hint="Save it as UTF-8 YAML.") from None
    if not isinstance(text, str):
        raise ConfigError("The config must be YAML text.")
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"The config is larger than {MAX_CONFIG_BYTES:,} characters.",
                          hint="A study config is a short text file.")
    if not text.strip():
        raise ConfigError("The config is empty.", hint="Start from one of the examples in examples/.")
    return study_from_dict(_read_yaml(text), base_dir=base_dir)


def load_config(path: str | os.PathLike) -> Study:
    """Read and validate the study config at ``path`` (YAML, read as by :func:`parse_config`).

    A ``data.path`` in the file is resolved relative to the file's folder and may not leave
    it (no absolute paths, no ``..``, no symbolic links pointing outside). Raises
    :class:`~prdp_core.errors.ConfigError` (invalid or unreadable config) with a message
    naming the offending key, e.g. ``policy.thresholds.EMP: must be a positive number``.
    """
    p = Path(path)
    try:
        if p.exists() and not p.is_dir() and not p.is_file():
            raise ConfigError(f"{p} is not a regular file.", hint="Give the path of a YAML file.")
        if p.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{p.name} is larger than {MAX_CONFIG_BYTES:,} bytes.",
                              hint="A study config is a short text file.")
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"No config file at {p}.", hint="Check the path.") from None
    except IsADirectoryError:
        raise ConfigError(f"{p} is a folder, not a config file.") from None
    except OSError as exc:
        raise ConfigError(f"The config {p} cannot be read: {exc.strerror or exc}.") from None
    return parse_config(raw, base_dir=p.resolve().parent)


def resolve_data_path(study: Study) -> Path:
    """The data file of a study (``data.path`` under the config's folder); DataError if missing.

    With an engine beyond memory the path may name a folder, a glob or ``database.duckdb#table``;
    every file it names must exist and lie inside the config's folder."""
    if study.data.table is not None:
        raise ConfigError("data.table: this study reads a table of the Spark catalog, not a file.")
    if study.data.path is None:
        raise ConfigError("data.path: this study reads a sample, not a file.")
    if _is_uri(study.data.path):
        raise ConfigError(f"data.path: {_name(study.data.path)} is a URI read by Spark, not a file of this machine.")
    if study.base_dir is None:
        raise DataError(f"data.path: the study reads '{_name(study.data.path)}', but it was not loaded from a file, so "
                        "the data's folder is unknown.", hint="Supply the data file (--data FILE, or upload it).")
    p = safe_data_path(study.data.path, study.base_dir)
    if study.data.engine != "memory" and not p.is_file():
        from .engines.duckdb_engine import resolve_source

        try:
            resolve_source(study.data.path, base_dir=study.base_dir, confine=True)
        except DataError as err:
            raise DataError(f"data.path: {err.message}", hint=err.hint or "Pass --data to use another source.") \
                from None
        return p
    if not p.is_file():
        raise DataError(f"data.path: no data file '{_name(study.data.path)}' next to the config (looked for {p}).",
                        hint="Copy the file there, or pass --data FILE.")
    return p


def load_data(study: Study, data: str | os.PathLike | None = None, *, engine: str | None = None) -> Any:
    """The study's :class:`~prdp_core.data.Dataset`: its sample, its file, or ``data`` (overrides).

    Column roles come from ``data.schema`` (or the sample's documented roles, or a guess for
    an override file without a schema); ``data.prepare`` says how bad input is fixed.
    ``engine`` (default: ``data.engine``) other than ``memory`` gives an
    :class:`~prdp_core.engines.EngineDataset` when the source goes to DuckDB (``auto``: beyond
    the upload size, or a folder, glob or database table): the records stay in the engine.
    Raises DataError / SchemaError for data problems.
    """
    from . import samples
    from .data import Schema, guess_schema, load_table, prepare_dataset

    src = study.data
    opts = dict(src.prepare)
    kind = engine or src.engine
    if kind not in DATA_ENGINES:
        raise ConfigError(f"data.engine: must be one of {', '.join(DATA_ENGINES)} (got {_fmt(kind)}).")
    if kind != "memory" and (data is not None or src.path is not None or src.table is not None):
        ds = _engine_data(study, data, kind, opts)
        if ds is not None:
            return ds
    if data is not None or src.path is not None:
        path = Path(data) if data is not None else resolve_data_path(study)
        if path.is_dir():
            raise DataError(f"{path} is a folder, not a data file.", hint="Name the table file itself (CSV, TSV, "
                                                                         "Parquet or Excel).")
        if not path.is_file():
            raise DataError(f"No data file at {path}.", hint="Check the path.")
        df = load_table(path)
        if src.schema is not None:
            schema = Schema.from_dict(src.schema)
        elif src.sample is not None:
            schema = samples.info(src.sample).schema
        else:
            schema = guess_schema(df)
        return prepare_dataset(df, schema, name=path.name, **opts)
    if src.schema is None and not opts:
        return samples.load_dataset(src.sample or "", n=src.n, seed=src.sample_seed)
    df = samples.load(src.sample or "", n=src.n, seed=src.sample_seed)
    schema = Schema.from_dict(src.schema) if src.schema is not None else samples.info(src.sample or "").schema
    return prepare_dataset(df, schema, name=src.sample or "sample", **opts)


def _engine_data(study: Study, data: str | os.PathLike | None, kind: str, opts: dict[str, Any]) -> Any:
    """The study's data held by DuckDB, or None when ``auto`` keeps it in memory. A config's path is
    confined to the config's folder; ``--data`` is the caller's own (resolved from the working folder)."""
    from . import engines, samples
    from .data import Schema
    from .engines.duckdb_engine import default_options

    src = study.data
    spec: Any
    if data is not None:
        spec, base, confine = str(data), None, False
    elif src.table is not None:
        spec, base, confine = engines.CatalogTable(src.table), None, False
    elif _is_uri(str(src.path)):
        spec, base, confine = _spark_uri(study), study.base_dir, True
    else:
        resolve_data_path(study)
        spec, base, confine = str(src.path), study.base_dir, True
    chosen = engines.choose_engine(spec, kind, base_dir=base)  # type: ignore[arg-type]
    if chosen == "memory":
        return None
    schema = (Schema.from_dict(src.schema) if src.schema is not None else
              samples.info(src.sample).schema if src.sample is not None else None)
    if chosen == "spark":
        sp = src.spark
        options = engines.EngineOptions(master=sp.get("master"), remote=sp.get("remote"), conf=dict(sp.get("conf") or {}))
        return engines.open_dataset(spec, schema=schema, engine="spark", base_dir=base, confine=confine,
                                    options=options, **opts)
    d = default_options()
    options = engines.EngineOptions(memory_limit=src.duckdb.get("memory_limit") or d.memory_limit,
                                    temp_directory=d.temp_directory, threads=src.duckdb.get("threads") or d.threads)
    return engines.open_dataset(spec, schema=schema, engine="duckdb", name=Path(spec).name, base_dir=base,
                                confine=confine, options=options, **opts)


def _spark_uri(study: Study) -> str:
    """``data.path`` as Spark reads it: a cluster URI untouched; a ``file://`` URI as the path of
    its file relative to the config's folder, which it must lie in (DataError otherwise)."""
    from .engines.spark_engine import file_uri_path

    spec = str(study.data.path)
    local = file_uri_path(spec)
    if local is None:
        return spec
    base = Path(study.base_dir or ".").resolve()
    try:
        return str(Path(os.path.normpath(local)).relative_to(base))
    except ValueError:
        raise DataError(f"data.path: {_name(spec)} lies outside the config's folder.",
                        hint="Name a file in the config's folder, or a cluster URI (hdfs://, s3a://).") from None


def data_columns(ds: Any) -> list[str]:
    """Column names of a dataset (in memory, or held by an engine)."""
    if getattr(ds, "engine", None) is not None:
        return [str(c) for c in ds.columns]
    return [str(c) for c in ds.table.columns]


def group_values(ds: Any, column: str | None) -> Any:
    """A small table of a dataset's values of ``column`` (for matching group values typed as text):
    the table itself in memory, the distinct values for a dataset held by an engine."""
    if getattr(ds, "engine", None) is None:
        return ds.table
    return None if column is None else ds.engine.distinct([column])


__all__ = ["ConfigError", "DATA_ENGINES", "DataSource", "SCHEMA_VERSION", "Study", "build_budget", "data_columns",
           "group_values", "load_config", "load_data",
           "parse_config", "resolve_data_path", "safe_data_path", "study_from_dict"]
