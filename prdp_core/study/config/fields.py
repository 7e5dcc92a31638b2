"""Small validators of config values: each names the offending key in its ConfigError."""


from __future__ import annotations

import math
import reprlib
from typing import Any, Callable, Iterable, Mapping

from ...core.errors import ConfigError, PrdpError
from .keys import MAX_QUOTED_CHARS


def _err(path: str, message: str, hint: str | None = None) -> ConfigError:
    return ConfigError(f"{path}: {message}", hint=hint)


def _clip(s: str) -> str:
    return s if len(s) <= MAX_QUOTED_CHARS else s[:MAX_QUOTED_CHARS - 1] + "…"


class _ShortRepr(reprlib.Repr):
    """A repr that never formats more than a few items of a collection, two levels deep, and the
    first characters of a text (reprlib stops early instead of building the whole text)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxother = 2, MAX_QUOTED_CHARS

    def repr_str(self, x: str, level: int) -> str:
        return _clip(repr(x[:MAX_QUOTED_CHARS]))


_SHORT_REPR = _ShortRepr()


def _fmt(v: Any) -> str:
    """A value for an error message: its repr, at most ``MAX_QUOTED_CHARS`` characters."""
    return _clip(_SHORT_REPR.repr(v))


def _name(v: Any) -> str:
    """A key, column name or group value for an error message: its text, at most ``MAX_QUOTED_CHARS``
    characters."""
    return _clip(v if isinstance(v, str) else _SHORT_REPR.repr(v))


def _names_hint(names: Iterable[Any], most: int = 15) -> str:
    """The first ``most`` names of a list for a hint, each cut to ``MAX_QUOTED_CHARS``."""
    names = list(names)
    more = f", … ({len(names) - most} more)" if len(names) > most else ""
    return ", ".join(_name(n) for n in names[:most]) + more


def _mapping(v: Any, path: str, allowed: Iterable[str], required: Iterable[str] = ()) -> dict[str, Any]:
    if not isinstance(v, Mapping):
        raise _err(path, f"must be a mapping of keys to values (got {_fmt(v)}).")
    allowed = tuple(allowed)
    for k in v:
        if not isinstance(k, str):
            raise _err(path, f"keys must be text (got {_fmt(k)}).")
        if k not in allowed:
            raise _err(f"{path}.{_name(k)}" if path else _name(k), "unknown key.",
                       hint=f"Allowed here: {', '.join(allowed)}.")
    for k in required:
        if k not in v or v[k] is None:
            raise _err(f"{path}.{_name(k)}" if path else _name(k), "is required.")
    return dict(v)


def _number(v: Any, path: str, *, positive: bool = False, nonneg: bool = False, lo: float | None = None,
            hi: float | None = None, open_lo: bool = False) -> float:
    what = "a positive number" if positive else "a non-negative number" if nonneg else "a number"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        if isinstance(v, str):
            try:  # YAML reads 1e-6 (no dot) as text
                v = float(v.strip())
            except ValueError:
                raise _err(path, f"must be {what} (got {_fmt(v)}).") from None
        else:
            raise _err(path, f"must be {what} (got {_fmt(v)}).")
    x = float(v)
    if not math.isfinite(x):
        raise _err(path, f"must be {what} (got {_fmt(v)}).")
    if positive and x <= 0 or nonneg and x < 0:
        raise _err(path, f"must be {what} (got {_fmt(v)}).")
    if lo is not None and (x < lo or (open_lo and x <= lo)):
        raise _err(path, f"must be {'above' if open_lo else 'at least'} {lo:g} (got {_fmt(v)}).")
    if hi is not None and x > hi:
        raise _err(path, f"must be at most {hi:g} (got {_fmt(v)}).")
    return x


def _int(v: Any, path: str, *, lo: int = 0, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            raise _err(path, f"must be a whole number (got {_fmt(v)}).")
    if v < lo or (hi is not None and v > hi):
        rng = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise _err(path, f"must be a whole number {rng} (got {_fmt(v)}).")
    return int(v)


def _text(v: Any, path: str, *, max_len: int = 2000) -> str:
    if not isinstance(v, str) or not v.strip():
        raise _err(path, f"must be non-empty text (got {_fmt(v)}).")
    if len(v) > max_len:
        raise _err(path, f"is longer than {max_len:,} characters.")
    if "\x00" in v:
        raise _err(path, "contains a NUL character.")
    return v


def _bool(v: Any, path: str) -> bool:
    if not isinstance(v, bool):
        raise _err(path, f"must be true or false (got {_fmt(v)}).")
    return v


def _choice(v: Any, path: str, options: Iterable[str]) -> str:
    options = tuple(options)
    if not isinstance(v, str) or v not in options:
        raise _err(path, f"must be one of {', '.join(options)} (got {_fmt(v)}).")
    return v


def _names(v: Any, path: str) -> list[str]:
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, (list, tuple)):
        raise _err(path, f"must be a list of column names (got {_fmt(v)}).")
    return [_text(x, f"{path}[{i}]", max_len=500) for i, x in enumerate(v)]


def _scalar(v: Any, path: str) -> Any:
    """A plain value (text, number, boolean) such as a group value."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            raise _err(path, f"must be a finite value (got {_fmt(v)}).")
        return v
    if isinstance(v, str):
        if len(v) > 500 or "\x00" in v:
            raise _err(path, "is not a valid value (too long or contains NUL).")
        return v
    raise _err(path, f"must be a single value (text or number), got {_fmt(v)}.")


def _wrap(path: str, fn: Callable[[], Any]) -> Any:
    """Run an engine constructor; its PrdpError becomes a ConfigError naming ``path``."""
    try:
        return fn()
    except ConfigError:
        raise
    except PrdpError as err:
        raise _err(path, err.message, err.hint) from None
