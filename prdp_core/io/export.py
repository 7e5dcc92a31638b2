"""Safe exports: CSV that spreadsheets cannot execute (review-mode stripping is in ``release``/``report``).

A cell starting with ``=``, ``+``, ``-``, ``@`` (or a tab / carriage return) is read as a
formula by spreadsheet programs; exported text cells that start so are prefixed with a
single quote (the OWASP "CSV injection" mitigation). As a precaution the minus sign ``−``
(U+2212) and the full-width ``＝ ＋ － ＠`` are prefixed too: they read as formula characters, and
input methods of some spreadsheet set-ups turn them into their ASCII forms. Numbers are written
as numbers.
"""

from __future__ import annotations

import io

import pandas as pd

_DANGEROUS = ("=", "+", "-", "@", "\t", "\r", "\u2212", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def neutralise(value: object) -> object:
    """Prefix a text cell that a spreadsheet would evaluate as a formula."""
    if isinstance(value, str) and value.startswith(_DANGEROUS):
        return "'" + value
    return value


def safe_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy whose text cells (and column names) cannot be evaluated as formulas."""
    out = df.copy()
    for c in out.columns:
        col = out[c]
        if not (pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col)):
            out[c] = col.astype(object).map(neutralise)
    out.columns = [neutralise(str(c)) for c in out.columns]
    return out


def to_csv_bytes(df: pd.DataFrame) -> bytes:
    """UTF-8 CSV of ``df`` with formula injection neutralised, its lines ending in ``\\n`` on every system (pandas'
    default is the system's own line ending): every CSV prdp writes — results, budget, ledger, answers, board —
    is made here."""
    buf = io.StringIO()
    safe_frame(df).to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue().encode("utf-8")
