"""The exit codes of the ``prdp`` command: one per kind of error, documented in ``prdp --help``."""

from __future__ import annotations

from ..core.errors import ConfigError, DataError, OutputError, PrdpError, ResourceLimitError, SchemaError

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_DATA = 4
EXIT_ERROR = 5

EXIT_CODES = {EXIT_OK: "success", EXIT_INTERNAL: "unexpected internal error", EXIT_USAGE: "usage error",
              EXIT_CONFIG: "invalid config", EXIT_DATA: "data problem", EXIT_ERROR: "other engine error"}


def exit_code(err: BaseException) -> int:
    """The documented exit code of an error."""
    if isinstance(err, ConfigError):
        return EXIT_CONFIG
    if isinstance(err, OutputError):
        return EXIT_USAGE
    if isinstance(err, (DataError, SchemaError, ResourceLimitError)):
        return EXIT_DATA
    if isinstance(err, PrdpError):
        return EXIT_ERROR
    return EXIT_INTERNAL


__all__ = ["EXIT_CODES", "EXIT_CONFIG", "EXIT_DATA", "EXIT_ERROR", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE",
           "exit_code"]
