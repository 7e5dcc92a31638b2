"""Numbers in words: ordinals ("the 98.3rd percentile") and shares as "1 in N" only where that is true.

Read-outs of the engine and the app say how many records or owners pay a loss and where a threshold sits in
a measure's distribution; these helpers keep that wording exact: an ordinal's suffix follows the number as
it is read (1st, 2nd, 3rd, 11th, 12th, 13th, 21st, 98.3rd), and a share is written "1 in N" only when it is
1/N (or "about 1 in N" when it is within 5% of it) — 62% is never "1 in 2" — and as a percentage otherwise.
"""

from __future__ import annotations

import math

from .errors import ParameterError

#: A share within this relative distance of 1/N is written "about 1 in N".
ABOUT = 0.05


def ordinal(x: float, digits: int = 1) -> str:
    """``x`` rounded to ``digits`` decimals (trailing zeros dropped) with its English ordinal suffix: 1st, 2nd,
    3rd, 4th, 11th, 12th, 13th, 21st, 101st, 111th, 97.5th, 98.3rd, 99.9th."""
    v = float(x)
    if not math.isfinite(v):
        raise ParameterError(f"An ordinal needs a finite number, got {x!r}.")
    text = f"{v:.{max(0, int(digits))}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0", ""):
        text = "0"
    last = text[-1]
    if "." not in text and text[-2:] in ("11", "12", "13"):
        return text + "th"
    return text + {"1": "st", "2": "nd", "3": "rd"}.get(last, "th")


def percent(share: float) -> str:
    """A share as a percentage (whole percents from 10% to 99.5%, one decimal otherwise) that never reads 0% or
    100% unless it is: 0.04%, 0.4%, 5%, 62%, 99.5%, over 99.9%."""
    p = 100 * share
    if p in (0, 100):
        return f"{p:.0f}%"
    if p < 0.05:
        return f"{p:.1g}%"
    if p > 99.95:
        return "over 99.9%"
    return (f"{p:.0f}" if 10 <= p < 99.5 else f"{p:.1f}".removesuffix(".0")) + "%"


def share_in_words(share: float, noun: str, *, singular: str, plural: str) -> str:
    """"1 in 100 records pays", "about 1 in 81 records pays", "62% of records pay": a share of ``noun`` with the
    verb that agrees (``singular`` after "1 in N", ``plural`` after a percentage).

    "1 in N" is used for shares of at most one half that are 1/N exactly; "about 1 in N" for those within
    :data:`ABOUT` (relative) of 1/N; any other share is a percentage (:func:`percent`)."""
    s = float(share)
    if not (math.isfinite(s) and 0 <= s <= 1):
        raise ParameterError(f"A share must be between 0 and 1, got {share!r}.")
    if 0 < s <= 0.5:
        n = round(1 / s)
        if abs(n * s - 1) <= 1e-9:
            return f"1 in {n:,} {noun} {singular}"
        if abs(1 / n - s) <= ABOUT * s:
            return f"about 1 in {n:,} {noun} {singular}"
    return f"{percent(s)} of {noun} {plural}"


def readable(x: object) -> str:
    """A number for tables and chart summaries: thousands separators for large values, 4 significant digits
    otherwise ("–" for NaN; text that is not a number as it is)."""
    try:
        v = float(x)  # type: ignore[arg-type]  # anything float() takes; the rest is shown as text
    except (TypeError, ValueError):
        return str(x)
    if v != v:
        return "–"
    if abs(v) >= 1e4:
        return f"{v:,.0f}"
    return f"{v:.4g}"


__all__ = ["ABOUT", "ordinal", "percent", "readable", "share_in_words"]
