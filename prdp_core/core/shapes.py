"""Shapes of budget functions: the raw formula of E before the [ε̌, ε̂] cap, serialisable and checkable.

Constant, inverse (α/v), square root, logarithm, step table, expression and per-group shapes;
each evaluates E on record columns, says whether it decreases in the measure, bounds itself
on a range of values (used to assign the privacy-specified domains without reading records)
and round-trips through a dict (the study config format).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

import numpy as np
import pandas as pd

from .errors import ExpressionError, PolicyError
from .expressions import Columns, CompiledExpression, compile_expression
from .registry import Registry
from .validate import positive as _positive


def _fmt(x: float) -> str:
    return f"{x:.6g}"


# ---------------------------------------------------------------------------
# Shapes: the raw formula of a budget function (before the [ε̌, ε̂] cap)
# ---------------------------------------------------------------------------

_SHAPES: Registry[type["Shape"]] = Registry("budget-function")
_register_shape = _SHAPES.register


class Shape(ABC):
    """Raw formula of a budget function: record columns → ε (before capping to [ε̌, ε̂])."""

    kind: ClassVar[str] = "abstract"

    @property
    @abstractmethod
    def columns(self) -> tuple[str, ...]:
        """Columns the formula reads."""

    @property
    def value_column(self) -> str | None:
        """The measure v when the formula depends on one numeric column only, else None."""
        num = [c for c in self.columns if c not in self.text_columns]
        return num[0] if len(num) == 1 and not self.text_columns else None

    @property
    def text_columns(self) -> tuple[str, ...]:
        return ()

    @abstractmethod
    def raw(self, cols: Columns, n: int) -> np.ndarray:
        """Raw ε of each record (may be > ε̂, inf, or invalid)."""

    def decreasing(self) -> bool | None:
        """True when known to be non-increasing in v (None: check numerically)."""
        return None

    def upper(self, levels: np.ndarray, U: float) -> np.ndarray | None:
        """sup{v ∈ [0, U] : raw(v) > λ} for each level λ (−inf when no value qualifies), or None
        when it cannot be computed in closed form."""
        return None

    @abstractmethod
    def expression(self) -> str:
        """The formula as an expression accepted by :func:`parse_budget`."""

    @abstractmethod
    def params(self) -> dict[str, Any]:
        ...

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.params()}


def _shape_from_dict(d: Mapping[str, Any]) -> "Shape":
    return _SHAPES.get(d.get("kind")).from_params(d)  # type: ignore[attr-defined]  # Registry.get returns the class registered for the kind (it raises for an unknown one)


@_register_shape
@dataclass(frozen=True)
class Constant(Shape):
    """E(r) = c for every record (standard ε-DP)."""

    eps: float
    kind: ClassVar[str] = "constant"

    @property
    def columns(self) -> tuple[str, ...]:
        return ()

    def raw(self, cols: Columns, n: int) -> np.ndarray:
        return np.full(n, float(self.eps))

    def decreasing(self) -> bool:
        return True

    def upper(self, levels: np.ndarray, U: float) -> np.ndarray:
        return np.where(self.eps > np.asarray(levels), U, -np.inf)

    def expression(self) -> str:
        return _fmt(self.eps)

    def params(self) -> dict[str, Any]:
        return {"eps": float(self.eps)}

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> "Constant":
        return cls(float(d["eps"]))


@dataclass(frozen=True)
class _Univariate(Shape):
    alpha: float
    column: str

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def decreasing(self) -> bool:
        return True

    def params(self) -> dict[str, Any]:
        return {"alpha": float(self.alpha), "column": self.column}

    def _v(self, cols: Columns) -> np.ndarray:
        if self.column not in cols:
            raise ExpressionError(f"The budget uses column '{self.column}', which is not in the table.",
                                  hint=f"Columns: {', '.join(list(cols)[:12])}.")
        return np.asarray(cols[self.column], dtype=float)


def _outside_domain(v: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Values outside the domain [0, U] of the papers (negative or missing) get no budget (NaN), so the
    budget refuses them instead of granting them the weakest protection ε̂."""
    return np.where(np.isnan(v) | (v < 0), np.nan, e)


def _col(c: str) -> str:
    return c if c.isidentifier() else f"`{c}`"


@_register_shape
@dataclass(frozen=True)
class Inverse(_Univariate):
    """E(r) = α / v (Eq. (1) of the paper; v = 0 gets ε̂; a negative or missing v has no budget)."""

    kind: ClassVar[str] = "inverse"

    def raw(self, cols: Columns, n: int) -> np.ndarray:
        v = self._v(cols)
        out = np.full(v.shape, np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            np.divide(self.alpha, v, out=out, where=v > 0)
        return _outside_domain(v, out)

    def upper(self, levels: np.ndarray, U: float) -> np.ndarray:
        lv = np.asarray(levels, dtype=float)
        with np.errstate(divide="ignore"):
            return np.minimum(np.where(lv > 0, self.alpha / np.where(lv > 0, lv, 1.0), np.inf), U)

    def expression(self) -> str:
        return f"{_fmt(self.alpha)} / {_col(self.column)}"

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> "Inverse":
        return cls(float(d["alpha"]), str(d["column"]))


@_register_shape
@dataclass(frozen=True)
class Sqrt(_Univariate):
    """E(r) = α / √v (v = 0 gets ε̂; a negative or missing v has no budget)."""

    kind: ClassVar[str] = "sqrt"

    def raw(self, cols: Columns, n: int) -> np.ndarray:
        v = self._v(cols)
        with np.errstate(divide="ignore", invalid="ignore"):
            return _outside_domain(v, np.where(v > 0, self.alpha / np.sqrt(np.where(v > 0, v, 1.0)), np.inf))

    def upper(self, levels: np.ndarray, U: float) -> np.ndarray:
        lv = np.asarray(levels, dtype=float)
        with np.errstate(divide="ignore", over="ignore"):
            return np.minimum(np.where(lv > 0, (self.alpha / np.where(lv > 0, lv, 1.0)) ** 2, np.inf), U)

    def expression(self) -> str:
        return f"{_fmt(self.alpha)} / sqrt({_col(self.column)})"

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> "Sqrt":
        return cls(float(d["alpha"]), str(d["column"]))


@_register_shape
@dataclass(frozen=True)
class Log(_Univariate):
    """E(r) = α / (ln v)^k for v > e^0 = 1; records with v ≤ 1 get ε̂ (natural log, as in Sec. 8.1's
    ``500 / log⁴ v``; the paper does not name the base)."""

    k: float = 1.0
    kind: ClassVar[str] = "log"

    def raw(self, cols: Columns, n: int) -> np.ndarray:
        v = self._v(cols)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lg = np.log(np.where(v > 1, v, np.e))
            return _outside_domain(v, np.where(v > 1, self.alpha / lg ** self.k, np.inf))

    def upper(self, levels: np.ndarray, U: float) -> np.ndarray:
        lv = np.asarray(levels, dtype=float)
        with np.errstate(divide="ignore", over="ignore"):
            t = np.where(lv > 0, (self.alpha / np.where(lv > 0, lv, 1.0)) ** (1.0 / self.k), np.inf)
            return np.minimum(np.exp(np.minimum(t, 1e3)), U)

    def expression(self) -> str:
        pw = "" if self.k == 1 else f" ** {_fmt(self.k)}"
        return f"where({_col(self.column)} > 1, {_fmt(self.alpha)} / log(max({_col(self.column)}, 1)){pw}, 1e300)"

    def params(self) -> dict[str, Any]:
        return {"alpha": float(self.alpha), "column": self.column, "k": float(self.k)}

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> "Log":
        return cls(float(d["alpha"]), str(d["column"]), float(d.get("k", 1.0)))


@_register_shape
@dataclass(frozen=True)
class Step(Shape):
    """Value bands → ε: v ≤ bounds[0] gets eps[0], bounds[j−1] < v ≤ bounds[j] gets eps[j], and
    v > bounds[-1] gets eps[-1] (``len(eps) == len(bounds) + 1``)."""

    column: str
    bounds: tuple[float, ...]
    eps: tuple[float, ...]
    kind: ClassVar[str] = "step"

    def __post_init__(self) -> None:
        b = np.asarray(self.bounds, dtype=float)
        if len(self.eps) != len(self.bounds) + 1:
            raise PolicyError("A step table needs one more ε than band boundaries (the last band is open).")
        if b.size and (not np.all(np.isfinite(b)) or np.any(np.diff(b) <= 0)):
            raise PolicyError("Band boundaries of a step table must be finite and strictly increasing.")
        for e in self.eps:
            _positive("Every ε of a step table", e)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def raw(self, cols: Columns, n: int) -> np.ndarray:
        if self.column not in cols:
            raise ExpressionError(f"The budget uses column '{self.column}', which is not in the table.")
        v = np.asarray(cols[self.column], dtype=float)
        idx = np.searchsorted(np.asarray(self.bounds, dtype=float), v, side="left")
        return np.asarray(self.eps, dtype=float)[idx]

    def decreasing(self) -> bool:
        return bool(np.all(np.diff(np.asarray(self.eps, dtype=float)) <= 0))

    def upper(self, levels: np.ndarray, U: float) -> np.ndarray:
        eps = np.asarray(self.eps, dtype=float)
        tops = np.concatenate((np.minimum(np.asarray(self.bounds, dtype=float), U), [U]))
        out = np.full(np.asarray(levels).shape, -np.inf)
        for e, t in zip(eps, tops):
            out = np.where(e > np.asarray(levels), np.maximum(out, t), out)
        return out

    def expression(self) -> str:
        c = _col(self.column)
        expr = _fmt(self.eps[-1])
        for b, e in zip(reversed(self.bounds), reversed(self.eps[:-1])):
            expr = f"where({c} <= {_fmt(b)}, {_fmt(e)}, {expr})"
        return expr

    def params(self) -> dict[str, Any]:
        return {"column": self.column, "bounds": [float(b) for b in self.bounds], "eps": [float(e) for e in self.eps]}

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> "Step":
        return cls(str(d["column"]), tuple(float(b) for b in d["bounds"]), tuple(float(e) for e in d["eps"]))


@_register_shape
@dataclass(frozen=True)
class Expression(Shape):
    """A user expression over record columns (whitelist evaluator)."""

    text: str
    compiled: CompiledExpression = field(repr=False, compare=False, default=None)  # type: ignore[assignment]  # compiled in __post_init__: None only until the instance is built
    kind: ClassVar[str] = "expression"

    def __post_init__(self) -> None:
        if self.compiled is None:
            object.__setattr__(self, "compiled", compile_expression(self.text))

    @property
    def columns(self) -> tuple[str, ...]:
        return self.compiled.columns + tuple(c for c in self.compiled.text_columns if c not in self.compiled.columns)

    @property
    def text_columns(self) -> tuple[str, ...]:
        return self.compiled.text_columns

    def raw(self, cols: Columns, n: int) -> np.ndarray:
        return self.compiled(cols, n)

    def expression(self) -> str:
        return self.compiled.text

    def params(self) -> dict[str, Any]:
        return {"text": self.compiled.text}

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> "Expression":
        return cls(str(d["text"]))


@_register_shape
@dataclass(frozen=True)
class Groups(Shape):
    """Per-group piecewise budget: records with ``column == value`` use that part's shape;
    other records use ``default`` (a missing default is an error for uncovered groups)."""

    column: str
    parts: tuple[tuple[Any, Shape], ...]
    default: Shape | None = None
    kind: ClassVar[str] = "groups"

    def _all(self) -> list[Shape]:
        return [s for _, s in self.parts] + ([self.default] if self.default is not None else [])

    @property
    def columns(self) -> tuple[str, ...]:
        out = [self.column]
        for s in self._all():
            out += [c for c in s.columns if c not in out]
        return tuple(out)

    @property
    def text_columns(self) -> tuple[str, ...]:
        return (self.column,)

    @property
    def value_column(self) -> str | None:
        vals = {s.value_column for s in self._all() if s.columns}
        return vals.pop() if len(vals) == 1 else None

    def raw(self, cols: Columns, n: int) -> np.ndarray:
        if self.column not in cols:
            raise ExpressionError(f"The budget is split by column '{self.column}', which is not in the table.")
        key = pd.Series(np.asarray(cols[self.column]))
        out = np.full(n, np.nan)
        done = np.zeros(n, dtype=bool)
        for value, shape in self.parts:
            m = (key == value).to_numpy() | (key.astype(str) == str(value)).to_numpy()
            m &= ~done
            if m.any():
                sub = {c: np.asarray(a)[m] for c, a in cols.items() if c in shape.columns}
                out[m] = shape.raw(sub, int(m.sum()))
                done |= m
        if not done.all():
            if self.default is None:
                missing = pd.unique(key[~done])[:3]
                raise PolicyError(f"No budget is given for {self.column} = {', '.join(map(str, missing))}.",
                                  hint="Add a part for these values or a default budget.")
            m = ~done
            sub = {c: np.asarray(a)[m] for c, a in cols.items() if c in self.default.columns}
            out[m] = self.default.raw(sub, int(m.sum()))
        return out

    def decreasing(self) -> bool | None:
        flags = [s.decreasing() for s in self._all()]
        if all(f is True for f in flags):
            return True
        return None

    def upper(self, levels: np.ndarray, U: float) -> np.ndarray | None:
        ups = [s.upper(levels, U) for s in self._all()]
        if any(u is None for u in ups):
            return None
        return np.maximum.reduce(ups)  # type: ignore[arg-type]  # no upper is None past the any() check, which mypy does not narrow

    def expression(self) -> str:
        expr = self.default.expression() if self.default is not None else "0"
        c = _col(self.column)
        for value, shape in reversed(self.parts):
            expr = f"where({c} == {str(value)!r}, {shape.expression()}, {expr})"
        return expr

    def params(self) -> dict[str, Any]:
        return {"column": self.column, "parts": [{"value": v, "budget": s.to_dict()} for v, s in self.parts],
                "default": None if self.default is None else self.default.to_dict()}

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> "Groups":
        return cls(str(d["column"]), tuple((p["value"], _shape_from_dict(p["budget"])) for p in d.get("parts", [])),
                   None if d.get("default") is None else _shape_from_dict(d["default"]))
