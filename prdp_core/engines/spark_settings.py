"""Which Spark settings come from where: the tuning settings a shared study may give (an allow-list,
each with the kind of value it takes), the masters and Spark Connect servers a study may name (those
the server allows), and the administrator's own settings (the file named by ``PRDP_SPARK_CONF``),
which may hold any setting and are applied when the engine starts a session.

A study travels between people: a setting that runs or loads code (``extraJavaOptions``, class
paths, jars and packages, extensions, plugins, listeners, Python workers, any class name) or that
chooses where the work goes (a master, a Spark Connect server) would let its author act on the
machine or the cluster of whoever runs it. So a study may set only the settings of
:data:`STUDY_SETTINGS`, with values of their kind (a size, a count, a switch, a duration, a
fraction), and name only a local master or a server the administrator allows; everything else is
refused with :class:`~prdp_core.core.errors.ConfigError` before PySpark is imported. Nothing here starts
Spark. Documented in docs/cluster.md (*Settings*) and docs/security.md (*Spark settings from a study*).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Mapping

from ..core.errors import ConfigError, EngineError

#: Environment variables by which an administrator enables the Spark source of the app (a master URL or a
#: Spark Connect address); a study may name the same master or server.
ENV_MASTER, ENV_REMOTE = "PRDP_SPARK_MASTER", "PRDP_SPARK_REMOTE"
#: Further masters and Spark Connect addresses a study may name (separated by commas or spaces).
ENV_ALLOWED = "PRDP_SPARK_ALLOWED_MASTERS"
#: Path of the administrator's settings file (``spark.name=value`` lines), applied to every session the
#: engine starts.
ENV_CONF = "PRDP_SPARK_CONF"

SIZE, COUNT, SWITCH, DURATION, FRACTION, SIZE_OR_OFF = "size", "count", "switch", "duration", "fraction", "size_or_off"

#: The Spark settings a study may give (``data.spark.conf``) and the kind of value each takes: tuning
#: of memory, cores, partitions, adaptive execution and joins. None of them names a class, a file,
#: a command, a host or a port.
STUDY_SETTINGS: Mapping[str, str] = {
    "spark.driver.memory": SIZE,
    "spark.driver.memoryOverhead": SIZE,
    "spark.driver.maxResultSize": SIZE,
    "spark.driver.cores": COUNT,
    "spark.executor.memory": SIZE,
    "spark.executor.memoryOverhead": SIZE,
    "spark.executor.pyspark.memory": SIZE,
    "spark.executor.cores": COUNT,
    "spark.executor.instances": COUNT,
    "spark.cores.max": COUNT,
    "spark.task.cpus": COUNT,
    "spark.task.maxFailures": COUNT,
    "spark.default.parallelism": COUNT,
    "spark.dynamicAllocation.enabled": SWITCH,
    "spark.dynamicAllocation.maxExecutors": COUNT,
    "spark.memory.fraction": FRACTION,
    "spark.memory.storageFraction": FRACTION,
    "spark.memory.offHeap.enabled": SWITCH,
    "spark.memory.offHeap.size": SIZE,
    "spark.network.timeout": DURATION,
    "spark.sql.shuffle.partitions": COUNT,
    "spark.sql.adaptive.enabled": SWITCH,
    "spark.sql.adaptive.coalescePartitions.enabled": SWITCH,
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": SIZE,
    "spark.sql.adaptive.skewJoin.enabled": SWITCH,
    "spark.sql.autoBroadcastJoinThreshold": SIZE_OR_OFF,
    "spark.sql.broadcastTimeout": DURATION,
    "spark.sql.files.maxPartitionBytes": SIZE,
    "spark.sql.files.openCostInBytes": SIZE,
    "spark.sql.execution.arrow.maxRecordsPerBatch": COUNT,
}

_PATTERNS = {
    SIZE: re.compile(r"^\d{1,15}([kmgtp]b?|b)?$", re.IGNORECASE),
    SIZE_OR_OFF: re.compile(r"^(-1|\d{1,15}([kmgtp]b?|b)?)$", re.IGNORECASE),
    COUNT: re.compile(r"^[1-9]\d{0,6}$"),
    SWITCH: re.compile(r"^(true|false)$", re.IGNORECASE),
    DURATION: re.compile(r"^\d{1,9}(us|ms|s|m|min|h|d)?$", re.IGNORECASE),
    FRACTION: re.compile(r"^(0?\.\d{1,9}|1(\.0{1,9})?)$"),
}
_EXPECTED = {SIZE: "a size such as 8g or 512m", SIZE_OR_OFF: "a size such as 10m, or -1 (off)",
             COUNT: "a whole number from 1 to 9,999,999", SWITCH: "true or false",
             DURATION: "a duration such as 120s or 10min", FRACTION: "a fraction between 0 and 1, such as 0.6"}
# Only for the wording of a refusal: the allow-list decides. Settings whose names say they run or load code.
_CODE = re.compile(r"javaoptions|classpath|librarypath|jars|packages|repositories|ivy|extensions|plugins|"
                   r"listeners|python|class|agent|script|command|executorenv|env\.|files|archives|serializer",
                   re.IGNORECASE)
_LOCAL = re.compile(r"^local(\[(\d{1,4}|\*)(,\d{1,3})?\])?$")
_ADMIN_LINE = re.compile(r"^(?P<key>spark\.[A-Za-z0-9_.\-]{1,200})\s*(?:=|\s)\s*(?P<value>.*)$")
_ON_THE_SERVER = (f"The administrator sets such settings on the server (the file named by the {ENV_CONF} "
                  "environment variable), never a shared study.")


def study_setting(key: str, value: Any) -> str | int | float:
    """The value of the Spark setting ``key`` given by a study (``data.spark.conf``), checked.

    Raises :class:`ConfigError` naming ``data.spark.conf.<key>`` when ``key`` is not one of
    :data:`STUDY_SETTINGS` (whatever its value: the message says that the administrator sets it on
    the server), or when ``value`` is not of the key's kind. Numbers and strings are kept as given;
    a switch given as true/false becomes ``"true"``/``"false"``."""
    path = f"data.spark.conf.{key}"
    kind = STUDY_SETTINGS.get(key)
    if kind is None:
        why = ("can run or load code" if _CODE.search(key) else
               "is not one of the tuning settings a study may give (docs/cluster.md, Settings)")
        raise ConfigError(f"{path}: a study may not give this Spark setting: it {why}.", hint=_ON_THE_SERVER)
    if isinstance(value, bool):
        if kind == SWITCH:
            return "true" if value else "false"
    elif isinstance(value, (int, float)):
        if kind == FRACTION and math.isfinite(value) and 0 < value <= 1:
            return value
        if isinstance(value, int) and _PATTERNS[kind].match(str(value)):
            return value
    elif isinstance(value, str) and len(value) <= 40 and _PATTERNS[kind].match(value.strip()):
        return value.strip()
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:59] + "…"
    raise ConfigError(f"{path}: must be {_EXPECTED[kind]} (got {shown}).")


def allowed_servers() -> frozenset[str]:
    """The masters and Spark Connect addresses a study may name besides a local master:
    ``PRDP_SPARK_MASTER``, ``PRDP_SPARK_REMOTE`` and the entries of ``PRDP_SPARK_ALLOWED_MASTERS``."""
    names = [os.environ.get(ENV_MASTER, ""), os.environ.get(ENV_REMOTE, "")]
    names += re.split(r"[\s,]+", os.environ.get(ENV_ALLOWED, ""))
    return frozenset(n.strip() for n in names if n.strip())


def study_server(key: str, address: str) -> str:
    """``address``, a master (``key`` ``data.spark.master``) or a Spark Connect server
    (``data.spark.remote``) named by a study, when the server allows it: a local master
    (``local``, ``local[N]``, ``local[*]``: this machine, no network) or one of
    :func:`allowed_servers`. Raises :class:`ConfigError` naming ``key`` otherwise: a study cannot send
    a run, its data or its settings to a cluster of its author's choosing."""
    if (key == "data.spark.master" and _LOCAL.match(address)) or address in allowed_servers():
        return address
    what = "master" if key == "data.spark.master" else "Spark Connect server"
    raise ConfigError(f"{key}: this server does not allow a study to choose the {what} '{address}'.",
                      hint=f"Leave it out to use the server's own ({ENV_MASTER} or {ENV_REMOTE}); the administrator "
                           f"lists the ones a study may name in {ENV_ALLOWED}.")


def study_options(spark: Mapping[str, Any]) -> Any:
    """The :class:`~prdp_core.engines.base.EngineOptions` of a study's ``data.spark`` (``master``,
    ``remote``, ``conf``), every part checked again by :func:`study_server` and :func:`study_setting`."""
    from .base import EngineOptions

    master, remote = spark.get("master"), spark.get("remote")
    return EngineOptions(master=None if master is None else study_server("data.spark.master", str(master)),
                         remote=None if remote is None else study_server("data.spark.remote", str(remote)),
                         conf={str(k): study_setting(str(k), v) for k, v in dict(spark.get("conf") or {}).items()})


def admin_conf() -> dict[str, str]:
    """The administrator's Spark settings: the file named by ``PRDP_SPARK_CONF`` (none when it is unset).

    The file is UTF-8 text, one setting a line: ``spark.name=value`` or ``spark.name value`` (Spark's
    spark-defaults.conf form: the first ``=`` or run of spaces after the name ends it; the value is the
    rest of the line, outer spaces removed). Blank lines and lines starting with ``#`` are skipped. Any
    setting may be given. Raises :class:`EngineError` naming the file (and line) when it cannot be
    read or a line is not a setting."""
    name = os.environ.get(ENV_CONF, "").strip()
    if not name:
        return {}
    try:
        text = Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise EngineError(f"{ENV_CONF} names {name}, which cannot be read: {why}.",
                          hint=f"Point {ENV_CONF} at a readable file of spark.name=value lines.") from None
    conf: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _ADMIN_LINE.match(line)
        if m is None:
            raise EngineError(f"{name}, line {number} ({ENV_CONF}): not a Spark setting.",
                              hint="Write one setting a line: spark.name=value (or spark.name value).")
        conf[m["key"]] = m["value"].strip()
    return conf


__all__ = ["ENV_ALLOWED", "ENV_CONF", "ENV_MASTER", "ENV_REMOTE", "STUDY_SETTINGS", "admin_conf", "allowed_servers",
           "study_options", "study_server", "study_setting"]
