"""Review-ready outputs of a study: re-loadable configs, HTML reports, reproduction scripts.

Public entry point of the study tooling (the CLI ``prdp`` and the app's Study page use it):

* :func:`load_config` / :func:`parse_config` — read and validate a study config (YAML,
  schema version 1, documented in docs/config.md); errors are
  :class:`~prdp_core.errors.ConfigError` naming the offending key.
"""

from __future__ import annotations

from .config import (SCHEMA_VERSION, ConfigError, DataSource, Study, load_config, load_data, parse_config,
                     resolve_data_path, safe_data_path, study_from_dict)

__all__ = ["ConfigError", "DataSource", "SCHEMA_VERSION", "Study", "load_config", "load_data", "parse_config",
           "resolve_data_path", "safe_data_path", "study_from_dict"]
