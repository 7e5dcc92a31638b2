"""CSV exports neutralise spreadsheet formulas and keep numbers as numbers."""

from __future__ import annotations

import io

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from prdp_core.io.export import neutralise, to_csv_bytes


def test_formula_cells_are_prefixed():
    df = pd.DataFrame({"name": ["=1+1", "+cmd", "-2+3", "@SUM(A1)", "safe", "\t=x"], "v": [-1.5, 2, 3, 4, 5, 6]})
    out = pd.read_csv(io.BytesIO(to_csv_bytes(df)), keep_default_na=False)
    assert out["name"].tolist() == ["'=1+1", "'+cmd", "'-2+3", "'@SUM(A1)", "safe", "'\t=x"]
    assert out["v"].tolist() == [-1.5, 2, 3, 4, 5, 6]  # negative numbers stay numbers


@given(st.text(max_size=20))
def test_no_text_cell_starts_with_a_formula_character(s):
    v = neutralise(s)
    assert not (isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r", "\u2212", "\uff1d", "\uff0b",
                                                  "\uff0d", "\uff20"))


def test_column_names_neutralised():
    df = pd.DataFrame({"=evil": [1]})
    assert to_csv_bytes(df).decode().splitlines()[0] == "'=evil"


def test_unicode_minus_and_full_width_formula_characters_are_prefixed():
    cells = ["\u22121+2", "\uff1dSUM(A1)", "\uff0bcmd", "\uff0d2", "\uff20A1", "1\u22122"]
    out = pd.read_csv(io.BytesIO(to_csv_bytes(pd.DataFrame({"c": cells}))), keep_default_na=False)
    assert out["c"].tolist() == ["'" + c for c in cells[:5]] + ["1\u22122"]


def test_tables_offer_no_unneutralised_csv_download():
    """Streamlit's table toolbar writes CSV without the formula guard: the app switches it off."""
    import tomllib
    from pathlib import Path

    cfg = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    assert cfg["client"]["disableDataExport"] is True


def test_csvs_end_their_lines_with_a_newline_on_every_system(monkeypatch):
    import os

    from prdp_core.board.export import board_csv
    from prdp_core.core.accounting import FlatLoss, Ledger, LedgerEntry
    from prdp_core.review.review_boundary import produce

    monkeypatch.setattr(os, "linesep", "\r\n")  # as on Windows, where pandas would end lines with CR LF
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y\nz"]})
    led = Ledger([LedgerEntry("sum", "baseline", FlatLoss(0.5), seed=1)])
    for data in (to_csv_bytes(df), produce("session ledger (CSV)", led, teaching=True),
                 board_csv([], review=True, delta=1e-6)):
        assert b"\r" not in data and data.endswith(b"\n")
