"""The study config's vocabulary: the schema version, size limits and the allowed values of its keys."""


from __future__ import annotations

import re

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
MECHANISM_KINDS = ("unit_splitting", "prdp", "personalized", "multitier", "granular", "legacy_sdc")
#: ``data.prepare``: each option of :func:`prdp_core.data.prepare_dataset` and its values, the default first
#: (a default is never written: ``{}`` prepares as the defaults do).
PREPARE_OPTIONS = {"non_numeric": ("error", "missing"), "missing": ("error", "drop"),
                   "negative": ("error", "shift"), "duplicate_ids": ("error", "regenerate"),
                   "missing_groups": ("keep", "label")}
#: Largest public constant ``data.prepare.shift_by`` adds to a measure (the Data page's input stops there too).
MAX_SHIFT = 1e15
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
