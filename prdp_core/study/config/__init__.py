"""The study configuration: one versioned YAML schema for a whole study.

A *study* is everything a review needs to rerun what was discussed: the data source and
its column roles, the per-record policy (splitting thresholds, budget function E(r),
personalized specification Φ, analyst tiers), the workload, the mechanisms with their
parameters, the mode (teaching / review) and the seed. Every key is documented in
``docs/config.md``; the public entry points are re-exported by :mod:`prdp_core.review.report`.

* :func:`load_config` reads and validates a YAML file (a strict safe loader: plain values
  only, no anchors, aliases, merge keys or repeated keys, at most ``MAX_CONFIG_BYTES`` and
  ``MAX_CONFIG_DEPTH`` levels); a data path is resolved relative to the config file and may
  not leave its folder.
* :func:`parse_config` validates YAML text (or an already parsed mapping).
* :class:`Study` is the validated, normalised study; ``Study.to_dict()`` / ``to_yaml()``
  write it back (a round trip gives an equal study).

Every error is a :class:`~prdp_core.core.errors.ConfigError` whose message starts with the
offending key, e.g. ``policy.thresholds.EMP: must be a positive number (got -3).``
Unknown keys and unsupported versions are rejected, never ignored.

The package, one concept per module: :mod:`.keys` (version, limits, allowed values),
:mod:`.fields` (validators naming the key), :mod:`.yaml_reader` (the strict loader),
:mod:`.data_source`, :mod:`.policy`, :mod:`.mechanisms` (the sections), :mod:`.study` (the
study, parsed and written back) and :mod:`.study_data` (the study's table loaded).
"""

from __future__ import annotations

from ...core.errors import ConfigError
from .data_source import DataSource, parse_prepare, prepare_section, safe_data_path
from .keys import (
    BUDGET_PRESETS,
    DATA_ENGINES,
    MAX_CONFIG_BYTES,
    MAX_CONFIG_DEPTH,
    MAX_QUOTED_CHARS,
    MAX_SEED,
    MAX_SHIFT,
    MECHANISM_KINDS,
    MODES,
    MT_FAMILIES,
    MT_OPS,
    PDP_MECHANISMS,
    PDP_QUERIES,
    PRDP_ALGORITHMS,
    PRDP_QUERIES,
    PREPARE_OPTIONS,
    RECORD_ALGORITHMS,
    SCHEMA_VERSION,
)
from .policy import build_budget
from .study import APP_PAGES, TOP_KEYS, Study, load_config, parse_config, study_from_dict
from .study_data import data_columns, group_values, load_data, resolve_data_path
from .yaml_reader import _read_yaml, _StrictLoader

__all__ = ["APP_PAGES", "BUDGET_PRESETS", "ConfigError", "DATA_ENGINES", "DataSource", "MAX_CONFIG_BYTES",
           "MAX_CONFIG_DEPTH", "MAX_QUOTED_CHARS", "MAX_SEED", "MAX_SHIFT", "MECHANISM_KINDS", "MODES", "MT_FAMILIES",
           "MT_OPS",
           "PDP_MECHANISMS", "PDP_QUERIES", "PRDP_ALGORITHMS", "PRDP_QUERIES", "PREPARE_OPTIONS", "RECORD_ALGORITHMS",
           "SCHEMA_VERSION", "Study", "TOP_KEYS", "_StrictLoader", "_read_yaml", "build_budget", "data_columns",
           "group_values", "load_config", "load_data", "parse_config", "parse_prepare", "prepare_section",
           "resolve_data_path", "safe_data_path",
           "study_from_dict"]
