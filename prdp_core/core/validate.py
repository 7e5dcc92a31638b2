"""Checks of numeric parameters shared by every module, with messages a user can act on.

Each check converts the value (so numpy scalars and numeric strings from widgets work),
rejects NaN and infinities, and raises a :class:`~prdp_core.core.errors.PrdpError` subclass
(``ParameterError`` by default) naming the parameter: "ρ must be a positive finite number
(got -1)."
"""

from __future__ import annotations

import math
from typing import Any

from .errors import ParameterError, PrdpError


def _number(name: str, value: Any, error: type[PrdpError], hint: str | None) -> float:
    if isinstance(value, bool):
        raise error(f"{name} must be a number (got {value!r}).", hint=hint)
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise error(f"{name} must be a number (got {value!r}).", hint=hint) from None


def positive(name: str, value: Any, *, error: type[PrdpError] = ParameterError, hint: str | None = None) -> float:
    """``value`` as a float, or an error unless it is finite and > 0."""
    v = _number(name, value, error, hint)
    if not math.isfinite(v) or v <= 0:
        raise error(f"{name} must be a positive finite number (got {value!r}).", hint=hint)
    return v


def non_negative(name: str, value: Any, *, error: type[PrdpError] = ParameterError,
                 hint: str | None = None) -> float:
    """``value`` as a float, or an error unless it is finite and ≥ 0."""
    v = _number(name, value, error, hint)
    if not math.isfinite(v) or v < 0:
        raise error(f"{name} must be a non-negative finite number (got {value!r}).", hint=hint)
    return v


def probability(name: str, value: Any, *, open_low: bool = True, error: type[PrdpError] = ParameterError) -> float:
    """A probability strictly between 0 and 1 (``open_low=False`` also accepts 0)."""
    v = non_negative(name, value, error=error)
    if v >= 1 or (open_low and v <= 0):
        raise error(f"{name} must be strictly between 0 and 1 (got {value!r}).")
    return v


def whole_number(name: str, value: Any, lo: int, hi: int | None = None, *,
                 error: type[PrdpError] = ParameterError) -> int:
    """An integer in [lo, hi] (a float with an integral value is accepted)."""
    if isinstance(value, bool):
        raise error(f"{name} must be a whole number (got {value!r}).")
    try:
        v = int(value)
    except (TypeError, ValueError, OverflowError):
        raise error(f"{name} must be a whole number (got {value!r}).") from None
    if v != value or v < lo or (hi is not None and v > hi):
        rng = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise error(f"{name} must be a whole number {rng} (got {value!r}).")
    return v
