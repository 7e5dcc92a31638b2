"""Resource limits shared by the engine and the app.

They keep a workshop laptop responsive and a shared server safe. Each limit is
enforced where the data enters (loader, expression parser, sweep builder) with a
message that names the limit and how to stay under it. The upload limit must agree
with ``server.maxUploadSize`` in ``.streamlit/config.toml`` (a test checks it).
"""

from __future__ import annotations

#: Largest file the loader accepts, in megabytes (Streamlit's upload limit too).
MAX_UPLOAD_MB: int = 200

#: Largest number of rows a loaded table may have.
MAX_ROWS: int = 20_000_000

#: Largest number of columns a loaded table may have.
MAX_COLUMNS: int = 2_000

#: Largest length (characters) of a user expression such as a budget function.
MAX_EXPRESSION_CHARS: int = 2_000

#: Largest number of rows a materialised split table may have (Algorithm 1 output).
MAX_SPLIT_ROWS: int = 20_000_000

#: Largest number of grid points in a parameter sweep (thresholds x budgets x ...).
MAX_SWEEP_POINTS: int = 100_000


#: Largest number of noisy answers one secure release draws. Exact samplers (OpenDP) take about
#: 20 µs per answer, so this keeps a secure release under about half a minute.
MAX_SECURE_ANSWERS: int = 1_000_000


def check_limit(what: str, value: int | float, limit: int, hint: str) -> None:
    """Raise :class:`~prdp_core.errors.ResourceLimitError` naming the limit when ``value`` exceeds it."""
    if value > limit:
        from .errors import ResourceLimitError

        raise ResourceLimitError(f"{what}: {value:,} is over the limit of {limit:,}.", hint=hint)


def max_upload_bytes() -> int:
    """The upload limit in bytes."""
    return MAX_UPLOAD_MB * 1024 * 1024
