"""Resource limits shared by the engine and the app.

They keep a workshop laptop responsive and a shared server safe. Each limit is
enforced where the data enters (loader, expression parser, sweep builder) with a
message that names the limit and how to stay under it. The upload limit must agree
with ``server.maxUploadSize`` in ``.streamlit/config.toml`` (a test checks it).

The limits of uploads and expressions can be changed by an operator with environment variables
``PRDP_<NAME>`` (e.g. ``PRDP_MAX_ROWS=5000000``), read once when ``prdp_core`` is imported; a value
that is not a positive whole number stops the import with a message naming the variable. They are
listed with their defaults in docs/security.md, "Resource limits".
"""

from __future__ import annotations

import os


def _env(name: str, default: int) -> int:
    """The positive whole number in the environment variable ``PRDP_<name>``, else ``default``."""
    raw = os.environ.get(f"PRDP_{name}")
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"The environment variable PRDP_{name} must be a positive whole number, not {raw[:40]!r}.")
    return value


#: Largest file the loader accepts, in megabytes (Streamlit's upload limit too).
MAX_UPLOAD_MB: int = 200

#: Largest number of rows a loaded table may have (readers stop at one row more and refuse).
MAX_ROWS: int = _env("MAX_ROWS", 20_000_000)

#: Largest number of columns a loaded table may have (checked on the header or the file's metadata).
MAX_COLUMNS: int = _env("MAX_COLUMNS", 2_000)

#: Largest header row of a text table, in bytes: a header that does not end within it is refused.
MAX_HEADER_BYTES: int = _env("MAX_HEADER_BYTES", 1_048_576)

#: Largest cell of an uploaded table, in bytes as written in the file (quotes included).
MAX_CELL_BYTES: int = _env("MAX_CELL_BYTES", 1_048_576)

#: Largest total uncompressed size of an .xlsx file's parts, in megabytes (read from its zip directory).
MAX_XLSX_UNCOMPRESSED_MB: int = _env("MAX_XLSX_UNCOMPRESSED_MB", 100)

#: Largest compression ratio of a part of an .xlsx file over 1 MB uncompressed (a zip bomb's is ~1000).
MAX_XLSX_RATIO: int = _env("MAX_XLSX_RATIO", 100)

#: Largest number of cells of an .xlsx sheet: stored cells, rows, and last row x last column, counted from what the
#: sheet holds (not its declared dimension); also the entries of its shared-strings table (``prdp_core.data.xlsxscan``).
MAX_XLSX_CELLS: int = _env("MAX_XLSX_CELLS", 2_000_000)

#: Largest number of parts (files in the zip) of an .xlsx file; a workbook has a few dozen.
MAX_XLSX_PARTS: int = _env("MAX_XLSX_PARTS", 10_000)

#: Longest cell text shown in a table preview; longer cells are cut and end with "…".
MAX_PREVIEW_CHARS: int = _env("MAX_PREVIEW_CHARS", 200)

#: Largest length (characters) of a user expression such as a budget function.
MAX_EXPRESSION_CHARS: int = 2_000

#: Largest work of one expression evaluation: its cost per record (operands, operators and calls count
#: 1 to 4, a text comparison 40; see ``prdp_core.core.expressions``) times the number of records. About
#: 1 s on an idle 2-core machine; on 20,000,000 records it leaves 100 per record (1e4 / max(v, 1) costs 6).
MAX_EXPRESSION_COST: int = _env("MAX_EXPRESSION_COST", 2_000_000_000)

#: Records evaluated at once by an expression (a float64 chunk of 512 KB per intermediate result).
EXPRESSION_CHUNK_ROWS: int = _env("EXPRESSION_CHUNK_ROWS", 65_536)

#: Largest number of rows a materialised split table may have (Algorithm 1 output).
MAX_SPLIT_ROWS: int = 20_000_000

#: Largest number of grid points in a parameter sweep (thresholds x budgets x ...).
MAX_SWEEP_POINTS: int = 100_000


#: Largest number of cells a public key list may give one group-by (the product of its columns' lists): each
#: listed cell is answered, present in the data or not, so the list sets how many answers a release draws.
MAX_KEY_CELLS: int = 1_000_000


#: Largest number of noisy answers one secure release draws. Exact samplers (OpenDP) take about
#: 20 µs per answer, so this keeps a secure release under about half a minute.
MAX_SECURE_ANSWERS: int = 1_000_000

#: Largest number of exact coins (Bernoulli draws from the system random source, 8 bytes each) one call of
#: a secure local multi-tier release flips (about n per category and tier); drawn in chunks of 4 MB.
MAX_SECURE_COINS: int = 50_000_000


def check_limit(what: str, value: int | float, limit: int, hint: str) -> None:
    """Raise :class:`~prdp_core.core.errors.ResourceLimitError` naming the limit when ``value`` exceeds it."""
    if value > limit:
        from .errors import ResourceLimitError

        raise ResourceLimitError(f"{what}: {value:,} is over the limit of {limit:,}.", hint=hint)


def max_upload_bytes() -> int:
    """The upload limit in bytes."""
    return MAX_UPLOAD_MB * 1024 * 1024
