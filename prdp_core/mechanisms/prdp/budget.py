"""Budget functions E(r) of the general PrDP framework (Sec. 3.3): the per-record budget, its bounds and presets.

A **budget function** E maps a record to the pure-ε privacy budget it *requires*
(Def. 3.6): adding or removing record r may change the probability of any output by a
factor of at most e^{E(r)} (E-PrDP, Def. 3.7). E takes values in [ε̌, ε̂]:

* ε̌ (``eps_min``) — the strongest requirement any record of the universe [U] may
  have. By default ε̌ = E(U), the budget of a record at the domain bound U (Sec. 8.1).
* ε̂ (``eps_max``) — the weakest requirement; larger raw values are capped at ε̂.
  Default: 100 (the paper's experiments) or the largest value E takes on [0, U] if smaller.
* U — the bound of the value domain [U] = {0, …, U} of the measure v (default 10¹²).

Constructors of the shapes (:mod:`.shapes`, the raw formula before the [ε̌, ε̂] cap):

* :func:`constant` — E = c (standard ε-DP);
* :func:`inverse` — E = α / v (Eq. (1)); :func:`log_budget` — α / (ln v)^k;
  :func:`sqrt_budget` — α / √v; :func:`step_table` — value bands → ε;
* :func:`per_group` — a different shape per value of a group column;
* :func:`parse_budget` — any expression over record columns, e.g. ``1e4 / max(BALANCE, 1)``,
  compiled by the whitelist evaluator of :mod:`.expressions` (never eval/exec).

Evaluation is vectorised over a table (``budget(table)``) or over an array of values of
the measure (``budget(values)``, for plots). A record whose raw budget is below ε̌ (for a
decreasing E: a value above U) cannot be honoured and raises :class:`PolicyError` instead
of being silently raised to ε̌. The privacy-specified domains are in :mod:`.domains`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ...core.domains import DomainPartition
from ...core.errors import ConfigError, ExpressionError, ParameterError, PolicyError
from ...core.expressions import MAX_CONSTANT_EXPONENT, Columns, _suggest
from ...core.shapes import Constant, Expression, Groups, Inverse, Log, Shape, Sqrt, Step, _shape_from_dict
from ...core.validate import positive as _positive

#: ε̂ used when none is given (the paper's experiments, Sec. 8.1).
DEFAULT_EPS_MAX: float = 100.0
#: Domain bound U of the measure used when none is given (Sec. 8.1: 10¹² for balances).
DEFAULT_U: float = 1e12


#: Points of the grid used to check monotonicity and find extremes of a univariate budget.
_GRID_POINTS = 4001


def value_grid(vmax: float, n: int = 400, *, vmin: float | None = None) -> np.ndarray:
    """Values 0 and a log-spaced grid up to ``vmax`` (for plots of E over the value range)."""
    top = _positive("The largest value", vmax)
    lo = vmin if vmin is not None and vmin > 0 else min(1.0, top / 1e6)
    lo = min(lo, top)
    return np.concatenate(([0.0], np.geomspace(lo, top, max(2, int(n)))))


def _search_grid(U: float) -> np.ndarray:
    """Dense value grid on [0, U] used to check a univariate budget numerically."""
    lo = min(1e-6, U / 1e12) or U  # U/1e12 underflows to 0 for a subnormal U
    g = np.geomspace(lo, U, _GRID_POINTS)
    return np.unique(np.concatenate(([0.0], g, np.linspace(0, U, 401), np.arange(0.0, min(U, 1000.0) + 1))))


# ---------------------------------------------------------------------------
# The budget function
# ---------------------------------------------------------------------------


def _as_columns(x: Any, shape: Shape) -> tuple[Columns, int]:
    """Columns to evaluate ``shape`` on, from a table, a mapping or an array of values."""
    if isinstance(x, pd.DataFrame):
        return _TableColumns(x, [c for c in shape.columns if c in x.columns]), len(x)
    if isinstance(x, Mapping):
        cols = {str(k): np.asarray(v) for k, v in x.items()}
        n = len(next(iter(cols.values()))) if cols else 0
        return cols, n
    arr = np.atleast_1d(np.asarray(x, dtype=float))
    if arr.ndim != 1:
        raise ParameterError("Values must be a one-dimensional array.")
    if not shape.columns:
        return {}, arr.size
    vc = shape.value_column
    if vc is None:
        raise ExpressionError("This budget depends on several columns "
                              f"({', '.join(shape.columns)}); evaluate it on a table, not on a list of values.")
    return {vc: arr}, arr.size


class _TableColumns(dict):
    """Columns of a DataFrame: holds only the columns a formula reads, but iterates over every
    column name so that unknown names get suggestions. Numeric columns are numpy views; other
    columns stay pandas Series, so an expression converts them chunk by chunk (text stored by
    Arrow is compared without making Python strings)."""

    def __init__(self, df: pd.DataFrame, need: Iterable[str]) -> None:
        super().__init__({c: df[c].to_numpy() if pd.api.types.is_numeric_dtype(df[c]) else df[c] for c in need})
        self._names = [str(c) for c in df.columns]

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _parts(shape: Shape) -> list[Shape]:
    return shape._all() if isinstance(shape, Groups) else [shape]


def _shape_decreasing(shape: Shape, U: float) -> bool:
    """Non-increasing in the measure v (closed form when known, else on a dense grid)."""
    if isinstance(shape, Groups):
        return all(_shape_decreasing(s, U) for s in shape._all())
    d = shape.decreasing()
    if d is not None:
        return d
    vc = shape.value_column
    if vc is None:
        return False
    g = _search_grid(U)
    with np.errstate(all="ignore"):
        e = shape.raw({vc: g}, g.size)
    e = np.where(e == np.inf, np.finfo(float).max, e)
    if not np.all(np.isfinite(e)):
        return False
    return bool(np.all(np.diff(e) <= 1e-12 * np.abs(e[:-1])))


def _shape_upper(shape: Shape, levels: np.ndarray, U: float) -> np.ndarray:
    """sup{v ∈ [0, U] : raw(v) > λ} (−inf when none): closed form, bisection or U."""
    if isinstance(shape, Groups):
        return np.maximum.reduce([_shape_upper(s, levels, U) for s in shape._all()])
    up = shape.upper(levels, U)
    if up is not None:
        return np.minimum(up, U)
    vc = shape.value_column
    if vc is None or not _shape_decreasing(shape, U):
        return np.full(np.shape(levels), float(U))

    def f(v: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return shape.raw({vc: np.asarray(v, dtype=float)}, np.size(v))

    lv = np.asarray(levels, dtype=float).ravel()
    lo = np.full(lv.size, min(1e-9, U * 1e-15))
    hi = np.full(lv.size, float(U))
    for _ in range(100):
        mid = np.sqrt(lo * hi)
        above = f(mid) > lv
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    out = hi.copy()  # E(hi) <= λ (or hi = U): every v with E(v) > λ lies at or below hi
    out[f(np.full(lv.size, float(U))) > lv] = U
    out[~(f(np.zeros(lv.size)) > lv) & ~(f(lo) > lv)] = -np.inf
    return out.reshape(np.shape(levels))


@dataclass(frozen=True)
class BudgetFunction:
    """A budget function E: records → [ε̌, ε̂] (Def. 3.6) with its domain bound U.

    ``budget(table)`` gives each record's requirement E(r) (confidential: it reveals the
    record's value); ``budget(values)`` evaluates a univariate budget on values of its
    measure. Create with :func:`parse_budget` or the preset constructors.

    Attributes
    ----------
    shape: the raw formula (see :class:`Shape` subclasses).
    eps_min: ε̌, the strongest requirement any record of [U] may have (default E(U)).
    eps_max: ε̂, the cap of E (default min(100, largest value of E on [0, U])).
    U: the bound of the value domain [U] of the measure.
    notes: how defaults were chosen (shown to the user).
    """

    shape: Shape
    eps_min: float
    eps_max: float
    U: float = DEFAULT_U
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _positive("ε̌ (the smallest budget)", self.eps_min)
        _positive("ε̂ (the largest budget)", self.eps_max)
        _positive("The domain bound U", self.U)
        if self.eps_max < self.eps_min:
            raise ParameterError(f"ε̂ = {self.eps_max:g} is below ε̌ = {self.eps_min:g}.",
                                 hint="Raise ε̂ or lower ε̌.")

    # -- evaluation -------------------------------------------------------------

    @property
    def columns(self) -> tuple[str, ...]:
        return self.shape.columns

    @property
    def value_column(self) -> str | None:
        """The measure v the budget depends on (None for constant or multi-column budgets)."""
        return self.shape.value_column

    def raw(self, table_or_values: Any) -> np.ndarray:
        """Raw formula values (before the [ε̌, ε̂] cap; may hold inf or NaN)."""
        cols, n = _as_columns(table_or_values, self.shape)
        with np.errstate(all="ignore"):
            return np.asarray(self.shape.raw(cols, n), dtype=float)

    def __call__(self, table_or_values: Any, *, strict: bool = True) -> np.ndarray:
        """E(r) of every record (or value): the raw formula capped to [ε̌, ε̂].

        With ``strict`` (the default) a record whose formula gives no valid budget (NaN,
        ≤ 0) or a budget below ε̌ raises :class:`PolicyError`: its requirement cannot be
        honoured by raising it. ``strict=False`` (plots) caps everything and keeps NaN.
        """
        r = self.raw(table_or_values)
        if r.base is not None or not r.flags.writeable:
            r = r.copy()
        lowest = float(np.min(r)) if r.size else 1.0  # one pass; NaN propagates
        if strict and r.size and not lowest >= self.eps_min * (1 - 1e-9):
            bad = ~(r > 0)  # NaN or <= 0
            if bad.any():
                k = int(bad.sum())
                raise PolicyError(f"The budget formula gives no valid ε (zero, negative or undefined) for {k:,} "
                                  "record(s).", hint="Guard divisions and logarithms, e.g. 1e4 / max(BALANCE, 1), "
                                                     "and keep values in the domain [0, U].")
            below = r < self.eps_min * (1 - 1e-9)
            k = int(below.sum())
            dom = f" above the domain bound U = {self.U:g}" if self.shape.decreasing() else ""
            raise PolicyError(f"{k:,} record(s) ask for a budget below ε̌ = {self.eps_min:.4g}; for this budget "
                              f"that means values{dom or ' outside the domain'}.",
                              hint="Raise U (or lower ε̌) so that every record's requirement can be honoured.")
        with np.errstate(invalid="ignore"):
            return np.clip(r, self.eps_min, self.eps_max, out=r)

    def curve(self, values: np.ndarray) -> np.ndarray:
        """E over a grid of values of the measure (for plots; never raises for out-of-range values)."""
        return self(np.asarray(values, dtype=float), strict=False)

    def check_columns(self, columns: Iterable[str]) -> None:
        """Raise :class:`ExpressionError` if the budget reads a column that is not in ``columns``."""
        cols = [str(c) for c in columns]
        for c in self.columns:
            if c not in cols:
                close = _suggest(c, cols)
                hint = f"Did you mean '{close}'? " if close else ""
                raise ExpressionError(f"Unknown name '{c}' in the budget.",
                                      hint=f"{hint}Columns you can use: {', '.join(cols[:12])}.")

    # -- domains ----------------------------------------------------------------

    def domains(self) -> DomainPartition:
        """The privacy-specified domains of [ε̌, ε̂] (Sec. 5.1)."""
        return DomainPartition(self.eps_min, self.eps_max)

    def decreasing(self) -> bool:
        """True when E does not increase with the measure v (checked on a dense grid for expressions)."""
        return _shape_decreasing(self.shape, self.U)

    def upper_values(self, levels: np.ndarray) -> np.ndarray:
        """sup{v ∈ [0, U] : E(v) > λ} for each level λ: every record with a budget above λ has a
        value at most this (−inf when no value qualifies).

        Closed form for presets, the maximum over parts for :func:`per_group`, bisection for
        univariate expressions that decrease on a dense grid; U otherwise (always safe).
        """
        return _shape_upper(self.shape, np.asarray(levels, dtype=float), self.U)

    def domain_table(self, table_or_values: Any | None = None, *, beta: float | None = None) -> pd.DataFrame:
        """Domains with budget ranges, value ranges (decreasing budgets), thresholds and, given a
        table (or a dataset held by an engine, which counts them), the number of records in each
        (confidential counts)."""
        dp = self.domains()
        df = dp.table(beta)
        if self.value_column is not None and not isinstance(self.shape, Groups) and self.decreasing():
            lo_v = self.upper_values(dp.hi)
            hi_v = self.upper_values(dp.lo)
            hi_v[0] = self.U
            lo_v[-1] = 0.0
            df["value_from"] = np.clip(lo_v, 0.0, self.U)
            df["value_to"] = np.clip(hi_v, 0.0, self.U)
            df.loc[df["value_to"] <= df["value_from"], ["value_from", "value_to"]] = np.nan
        engine = getattr(table_or_values, "engine", None)
        if engine is not None:  # a dataset held by an engine: counted there
            df["records"] = engine.domain_stats(self).counts
        elif table_or_values is not None:
            idx = dp.index(self(table_or_values))
            df["records"] = np.bincount(idx, minlength=dp.L + 1)[1:]
        return df

    # -- presentation and serialisation --------------------------------------------

    def expression(self) -> str:
        """The raw formula as an expression for :func:`parse_budget`."""
        return self.shape.expression()

    def describe(self) -> str:
        return (f"E(r) = {self.expression()}, capped to [ε̌ = {self.eps_min:.4g}, ε̂ = {self.eps_max:.4g}], "
                f"U = {self.U:.4g}")

    def with_bounds(self, *, eps_min: float | None = None, eps_max: float | None = None,
                    U: float | None = None) -> "BudgetFunction":
        """The same formula with other bounds (defaults recomputed for the ones not given)."""
        return _bounded(self.shape, eps_min=eps_min, eps_max=eps_max, U=U if U is not None else self.U)

    def scaled(self, factor: float) -> "BudgetFunction":
        """c·E with bounds c·ε̌, c·ε̂ (e.g. E/2 in Algorithm 2)."""
        c = _positive("The scale factor", factor)
        shape = Expression(f"{c!r} * ({self.expression()})") if not isinstance(self.shape, Constant) \
            else Constant(self.shape.eps * c)
        return BudgetFunction(shape, self.eps_min * c, self.eps_max * c, self.U, self.notes)

    def to_dict(self) -> dict[str, Any]:
        return {"budget": self.shape.to_dict(), "eps_min": float(self.eps_min), "eps_max": float(self.eps_max),
                "U": float(self.U)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "BudgetFunction":
        try:
            shape = _shape_from_dict(d["budget"])
            return cls(shape, float(d["eps_min"]), float(d["eps_max"]), float(d.get("U", DEFAULT_U)))
        except KeyError as exc:
            raise ConfigError(f"A budget function lacks the key {exc}.") from None
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"A budget function is malformed: {exc}.") from None


def budget_from_dict(d: Mapping[str, Any]) -> BudgetFunction:
    """Rebuild a budget serialised by :meth:`BudgetFunction.to_dict`."""
    return BudgetFunction.from_dict(d)


# ---------------------------------------------------------------------------
# Constructors (defaults for ε̌, ε̂)
# ---------------------------------------------------------------------------


def _at_u(shape: Shape, U: float) -> float | None:
    """E(U) for univariate and constant shapes; min over parts for per-group shapes."""
    if isinstance(shape, Groups):
        vals = [_at_u(s, U) for s in shape._all()]
        return None if any(v is None for v in vals) else min(vals)  # type: ignore[type-var]  # no value is None past the any() check, which mypy does not narrow
    if not shape.columns:
        return float(shape.raw({}, 1)[0])
    vc = shape.value_column
    if vc is None:
        return None
    with np.errstate(all="ignore"):
        return float(shape.raw({vc: np.array([float(U)])}, 1)[0])


def _grid_extremes(shape: Shape, U: float) -> tuple[float, float] | None:
    shapes = _parts(shape)
    lo, hi = math.inf, -math.inf
    g = _search_grid(U)
    for s in shapes:
        if not s.columns:
            v = s.raw({}, 1)
        elif s.value_column is None:
            return None
        else:
            with np.errstate(all="ignore"):
                v = s.raw({s.value_column: g}, g.size)
        v = v[np.isfinite(v) | (v == np.inf)]
        v = v[v > 0]
        if v.size:
            lo = min(lo, float(np.min(v)))
            hi = max(hi, float(np.max(v)))
    return (lo, hi) if math.isfinite(lo) else None


def _bounded(shape: Shape, *, eps_min: float | None, eps_max: float | None, U: float | None) -> BudgetFunction:
    u = DEFAULT_U if U is None else _positive("The domain bound U", U)
    notes: list[str] = []
    ext = _grid_extremes(shape, u)
    if eps_max is None:
        top = DEFAULT_EPS_MAX
        if ext is not None and ext[1] < top:
            top = ext[1]
            notes.append(f"ε̂ = {top:.4g}: the largest budget the formula gives on [0, U].")
        else:
            notes.append(f"ε̂ = {top:g} (default, as in the paper's experiments).")
        e_hi = top
    else:
        e_hi = _positive("ε̂ (the largest budget)", eps_max)
    if eps_min is None:
        at = _at_u(shape, u)
        if at is None:
            raise PolicyError("This budget depends on several columns "
                              f"({', '.join(shape.columns)}), so ε̌ cannot be taken as E(U).",
                              hint="State ε̌, the smallest budget any record may have, explicitly.")
        if not (at > 0) or not math.isfinite(at):
            raise PolicyError(f"The budget at the domain bound, E(U = {u:g}), is not a positive number ({at}).",
                              hint="Fix the formula or state ε̌ explicitly.")
        e_lo = at
        notes.append(f"ε̌ = E(U) = {at:.4g}.")
        if ext is not None and ext[0] < at * (1 - 1e-9):
            e_lo = ext[0]
            notes[-1] = (f"ε̌ = {e_lo:.4g}: the formula dips below E(U) = {at:.4g} inside [0, U], so the smallest "
                         "value on a dense grid is used.")
        if e_lo > e_hi:
            notes.append(f"E(U) exceeds ε̂: every record gets ε̂ = {e_hi:.4g}.")
            e_lo = e_hi
    else:
        e_lo = _positive("ε̌ (the smallest budget)", eps_min)
    if e_hi < e_lo:
        raise ParameterError(f"ε̂ = {e_hi:g} is below ε̌ = {e_lo:g}.", hint="ε̂ must be at least ε̌.")
    return BudgetFunction(shape, float(e_lo), float(e_hi), float(u), tuple(notes))


def parse_budget(text: str, *, eps_min: float | None = None, eps_max: float | None = None,
                 U: float | None = None) -> BudgetFunction:
    """A budget function from an expression over record columns, e.g. ``"1e4 / max(BALANCE, 1)"``.

    Parameters
    ----------
    text: the formula of E(r) in pure-ε units (whitelist: numbers, column names, + − × ÷ **,
        comparisons, min, max, log, log2, log10, sqrt, exp, abs, where). Column names that are
        not identifiers go in backticks.
    eps_min: ε̌, the strongest requirement of any record in [U] (default: E(U) for a formula of
        one column; required for formulas of several columns).
    eps_max: ε̂, the cap of E (default: min(100, largest value of E on [0, U])).
    U: bound of the value domain [U] of the measure (default 10¹²).

    Raises :class:`ExpressionError` for syntax errors, names or constructs outside the
    whitelist, and limits (length, nesting, exponents).
    """
    return _bounded(Expression(text), eps_min=eps_min, eps_max=eps_max, U=U)


def constant(eps: float, *, U: float | None = None) -> BudgetFunction:
    """E(r) = ε for every record: standard ε-DP as a budget function."""
    e = _positive("ε", eps)
    return BudgetFunction(Constant(e), e, e, DEFAULT_U if U is None else _positive("U", U))


def inverse(alpha: float, column: str, *, eps_min: float | None = None, eps_max: float | None = None,
            U: float | None = None) -> BudgetFunction:
    """E(r) = α / v (Eq. (1)): larger values get stronger protection; ε̌ = α/U by default."""
    return _bounded(Inverse(_positive("α", alpha), str(column)), eps_min=eps_min, eps_max=eps_max, U=U)


def log_budget(alpha: float, column: str, *, k: float = 1.0, eps_min: float | None = None,
               eps_max: float | None = None, U: float | None = None) -> BudgetFunction:
    """E(r) = α / (ln v)^k (Sec. 8.1 uses 500 / log⁴ v); v ≤ 1 gets ε̂."""
    kk = _positive("k", k)
    if kk > MAX_CONSTANT_EXPONENT:
        raise ParameterError(f"k = {kk:g} is too large (limit {MAX_CONSTANT_EXPONENT:g}).")
    return _bounded(Log(_positive("α", alpha), str(column), kk), eps_min=eps_min, eps_max=eps_max, U=U)


def sqrt_budget(alpha: float, column: str, *, eps_min: float | None = None, eps_max: float | None = None,
                U: float | None = None) -> BudgetFunction:
    """E(r) = α / √v (Sec. 8.1 uses 8 / √v)."""
    return _bounded(Sqrt(_positive("α", alpha), str(column)), eps_min=eps_min, eps_max=eps_max, U=U)


def step_table(column: str, bounds: Sequence[float], eps: Sequence[float], *, eps_min: float | None = None,
               eps_max: float | None = None, U: float | None = None) -> BudgetFunction:
    """Value bands → ε: v ≤ bounds[0] → eps[0], …, v > bounds[-1] → eps[-1]."""
    try:
        shape = Step(str(column), tuple(float(b) for b in bounds), tuple(float(e) for e in eps))
    except (TypeError, ValueError):
        raise PolicyError("Band boundaries and budgets of a step table must be numbers.") from None
    return _bounded(shape, eps_min=eps_min, eps_max=eps_max, U=U)


def per_group(column: str, parts: Mapping[Any, BudgetFunction | Shape | str], *,
              default: BudgetFunction | Shape | str | None = None, eps_min: float | None = None,
              eps_max: float | None = None, U: float | None = None) -> BudgetFunction:
    """A different budget per value of a group column (parallel parts of the record universe).

    ``parts`` maps a group value to a budget (a :class:`BudgetFunction`, its shape, or an
    expression text); ``default`` covers the other values. ε̌ defaults to the smallest
    E(U) over the parts.
    """
    def shape_of(b: BudgetFunction | Shape | str) -> Shape:
        if isinstance(b, BudgetFunction):
            return b.shape
        if isinstance(b, Shape):
            return b
        return Expression(str(b))

    if not parts and default is None:
        raise PolicyError("A per-group budget needs at least one part or a default.")
    shape = Groups(str(column), tuple((k, shape_of(v)) for k, v in parts.items()),
                   None if default is None else shape_of(default))
    return _bounded(shape, eps_min=eps_min, eps_max=eps_max, U=U)


#: Presets offered by the app: name → (label, parameters with defaults). ``value`` is the measure.
PRESETS: dict[str, tuple[str, dict[str, float]]] = {
    "inverse": ("Inverse: α / v", {"alpha": 1e4}),
    "log": ("Logarithmic: α / (ln v)^k", {"alpha": 500.0, "k": 4.0}),
    "sqrt": ("Square root: α / √v", {"alpha": 8.0}),
    "constant": ("Constant: ε for everyone", {"eps": 1.0}),
}


def preset(kind: str, column: str, *, eps_min: float | None = None, eps_max: float | None = None,
           U: float | None = None, **params: float) -> BudgetFunction:
    """A preset budget by name (``inverse``, ``log``, ``sqrt``, ``constant``) on measure ``column``."""
    if kind not in PRESETS:
        raise ParameterError(f"Unknown preset '{kind}'.", hint=f"Choose one of: {', '.join(PRESETS)}.")
    p = {**PRESETS[kind][1], **params}
    if kind == "inverse":
        return inverse(p["alpha"], column, eps_min=eps_min, eps_max=eps_max, U=U)
    if kind == "log":
        return log_budget(p["alpha"], column, k=p["k"], eps_min=eps_min, eps_max=eps_max, U=U)
    if kind == "sqrt":
        return sqrt_budget(p["alpha"], column, eps_min=eps_min, eps_max=eps_max, U=U)
    return constant(p["eps"], U=U)
