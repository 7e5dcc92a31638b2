"""One exception family for everything prdp_core refuses to do.

Every message is written for a workshop participant: it names what is wrong and
what to do about it. Callers (the app, the CLI) show ``str(err)`` as is; they never
need to show a traceback. Raw pandas/pyarrow/numpy exceptions never escape the
public entry points: they are translated into one of these.
"""

from __future__ import annotations


class PrdpError(Exception):
    """Base class of every error prdp_core raises on purpose."""

    #: short label shown before the message in the UI
    title = "Problem"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message} {hint}")


class DataError(PrdpError):
    """A file or table could not be used as a dataset (type, encoding, content)."""

    title = "Data problem"


class SchemaError(PrdpError):
    """The mapping of columns to roles (id, measures, groups, owner) is invalid."""

    title = "Schema problem"


class PolicyError(PrdpError):
    """A privacy policy (thresholds, budget function, tiers) is invalid."""

    title = "Policy problem"


class ExpressionError(PolicyError):
    """A user expression could not be parsed or evaluated safely."""

    title = "Expression problem"


class ParameterError(PrdpError, ValueError):
    """A numeric parameter is impossible (negative budget, empty range, ...). Also a ``ValueError``, so code
    written against numpy/scipy conventions catches it too."""

    title = "Parameter problem"


class ConfigError(PrdpError):
    """A study configuration file is invalid."""

    title = "Configuration problem"


class ResourceLimitError(PrdpError):
    """A request exceeds a configured limit (file size, rows, sweep size, ...)."""

    title = "Limit reached"


class EngineError(PrdpError):
    """The engine that holds the records cannot be started or reached (a missing PySpark or Java, an
    unreachable cluster)."""

    title = "Engine problem"


class OutputError(PrdpError):
    """Outputs cannot be written safely into a folder (a symbolic link or a file prdp did not write is
    in the way)."""

    title = "Output folder problem"


class StoreError(PrdpError):
    """The workshop store (the board, durable sessions and ledgers) cannot be opened, read or written, or
    refuses an action (e.g. an append to a ledger of other data)."""

    title = "Store problem"


class AccessError(PrdpError):
    """An action the caller is not allowed to take (another participant's entry, a facilitator action)."""

    title = "Not allowed"


class SimulationRefused(AccessError):
    """A teaching simulation (an error estimate computed by drawing a mechanism's noise on the records,
    :func:`prdp_core.core.recorder.simulation`) asked for in review mode, where no noise is drawn on the records
    outside a recorded release."""

    title = "Not in review mode"
