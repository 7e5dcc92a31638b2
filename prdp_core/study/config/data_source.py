"""The data section of a study config: where the table is (sample, file, folder, glob, database table,
Spark path or catalog table), which engine reads it, its column roles and preparation options; paths
confined to the config's folder."""


from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Mapping

from .fields import _choice, _err, _fmt, _int, _mapping, _name, _names, _number, _text
from .keys import (
    _MEMORY_LIMIT,
    _SPARK_CONF_KEY,
    _SPARK_MASTER,
    _SPARK_REMOTE,
    _SPARK_TABLE,
    DATA_ENGINES,
    MAX_SEED,
    MAX_SHIFT,
    PREPARE_OPTIONS,
)


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
            d["prepare"] = prepare_section(self.prepare)
        return d


def prepare_section(options: Mapping[str, Any]) -> dict[str, Any]:
    """The ``data.prepare`` section for the options of :func:`prdp_core.data.prepare_dataset` (as the Data page
    and a parsed config hold them): every option that is not its default, in the order of
    :data:`~prdp_core.study.config.keys.PREPARE_OPTIONS`, and ``shift_by`` as measure → constant.
    :func:`parse_prepare` reads it back to the same options."""
    out: dict[str, Any] = {k: options[k] for k, values in PREPARE_OPTIONS.items()
                           if options.get(k) not in (None, values[0])}
    if options.get("shift_by"):
        out["shift_by"] = {str(m): float(c) for m, c in options["shift_by"].items()}
    return out


def parse_prepare(v: Any) -> dict[str, Any]:
    """``data.prepare``: the options of :func:`prdp_core.data.prepare_dataset` it chooses (defaults left out, so
    ``{}`` is the default preparation); ConfigError naming the key for anything else."""
    prepare: dict[str, Any] = {}
    if v is None:
        return prepare
    p = _mapping(v, "data.prepare", (*PREPARE_OPTIONS, "shift_by"))
    for k, val in p.items():
        if k == "shift_by":
            continue
        val = _choice(val, f"data.prepare.{k}", PREPARE_OPTIONS[k])
        if val != PREPARE_OPTIONS[k][0]:
            prepare[k] = val
    if p.get("shift_by") is not None:
        shifts = p["shift_by"]
        if not isinstance(shifts, Mapping):
            raise _err("data.prepare.shift_by", f"must map measure names to constants (got {_fmt(shifts)}).")
        if prepare.get("negative") != "shift":
            raise _err("data.prepare.shift_by", "applies only with 'negative: shift'.",
                       hint="Add 'negative: shift' to data.prepare, or remove shift_by.")
        given = {_text(m, "data.prepare.shift_by", max_len=500):
                 _number(c, f"data.prepare.shift_by.{_name(m)}", nonneg=True, hi=MAX_SHIFT) for m, c in shifts.items()}
        if given:  # no constant is the same preparation as no shift_by
            prepare["shift_by"] = given
    return prepare


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
    prepare = parse_prepare(d.get("prepare"))
    if "sample" in d:
        from ...data import samples

        for k in ("engine", "duckdb", "spark"):
            if k in d and not (k == "engine" and d[k] == "memory"):
                raise _err(f"data.{k}", "applies to files only (a sample is generated in memory).")

        name = _text(d["sample"], "data.sample", max_len=200)
        if name not in samples.names():
            raise _err("data.sample", f"unknown sample {_fmt(name)}.",
                       hint=f"Choose one of: {', '.join(samples.names())}.")
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
    from ...engines.spark_engine import is_uri

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
    """``data.spark``: ``master`` or ``remote`` (not both), each only one the server allows, and
    ``conf``: only the tuning settings a study may give, with values of their kind
    (:mod:`prdp_core.engines.spark_settings`; everything else is the administrator's, on the server)."""
    from ...engines.spark_settings import study_server, study_setting

    o = _mapping(v, "data.spark", ("master", "remote", "conf"))
    out: dict[str, Any] = {}
    if "master" in o and "remote" in o:
        raise _err("data.spark", "give 'master' (a classic session) or 'remote' (Spark Connect), not both.")
    if "master" in o:
        m = _text(o["master"], "data.spark.master", max_len=320).strip()
        if not _SPARK_MASTER.match(m):
            raise _err("data.spark.master", f"must be local[*], local[N], spark://host:port, yarn or k8s://… "
                                            f"(got {_fmt(m)}).")
        out["master"] = study_server("data.spark.master", m)
    if "remote" in o:
        r = _text(o["remote"], "data.spark.remote", max_len=320).strip()
        if not _SPARK_REMOTE.match(r):
            raise _err("data.spark.remote", f"must be a Spark Connect address sc://host:port (got {_fmt(r)}).")
        out["remote"] = study_server("data.spark.remote", r)
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
            conf[key] = study_setting(key, val)
        out["conf"] = conf
    return out
