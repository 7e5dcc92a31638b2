"""Budget functions E(r) and privacy-specified domains (general PrDP framework, Secs. 3.3 and 5.1).

A **budget function** E maps a record to the pure-ε privacy budget it *requires*
(Def. 3.6): adding or removing record r may change the probability of any output by a
factor of at most e^{E(r)} (E-PrDP, Def. 3.7). E takes values in [ε̌, ε̂]:

* ε̌ (``eps_min``) — the strongest requirement any record of the universe [U] may
  have. By default ε̌ = E(U), the budget of a record at the domain bound U (Sec. 8.1).
* ε̂ (``eps_max``) — the weakest requirement; larger raw values are capped at ε̂.
  Default: 100 (the paper's experiments) or the largest value E takes on [0, U] if smaller.
* U — the bound of the value domain [U] = {0, …, U} of the measure v (default 10¹²).

Shapes (the raw formula before the [ε̌, ε̂] cap):

* :func:`constant` — E = c (standard ε-DP);
* :func:`inverse` — E = α / v (Eq. (1)); :func:`log_budget` — α / (ln v)^k;
  :func:`sqrt_budget` — α / √v; :func:`step_table` — value bands → ε;
* :func:`per_group` — a different shape per value of a group column;
* :func:`parse_budget` — any expression over record columns, e.g. ``1e4 / max(BALANCE, 1)``,
  parsed by a whitelist evaluator (numbers, column names, + − × ÷ **, comparisons, min,
  max, log, log2, log10, sqrt, exp, abs, where). Nothing is ever passed to eval/exec: the
  expression is parsed to a syntax tree, every node is checked against the whitelist, and
  evaluation applies numpy functions to float64 arrays (no I/O). Time and memory are bounded:
  an expression's cost per record (operands, operators, calls, text comparisons) times the
  number of records is checked against ``limits.MAX_EXPRESSION_COST`` before anything is
  evaluated, and records are evaluated in chunks of ``limits.EXPRESSION_CHUNK_ROWS`` into one
  preallocated float64 output. A text value is compared with one column at a time
  (``BRANCH == 'B01'``) and never turns a column of numbers into Python objects.

Evaluation is vectorised over a table (``budget(table)``) or over an array of values of
the measure (``budget(values)``, for plots). A record whose raw budget is below ε̌ (for a
decreasing E: a value above U) cannot be honoured and raises :class:`PolicyError` instead
of being silently raised to ε̌.

**Privacy-specified domains** (Sec. 5.1): the budget range [ε̌, ε̂] is cut into
L = ⌈log₂(ε̂/ε̌)⌉ ranges X_1 = [ε̌, 2ε̌], X_i = (2^{i−1}ε̌, min(2^iε̌, ε̂)]. Every record of
X_i may be charged 2^{i−1}ε̌ — at most a factor two stronger than it asked for
(:class:`DomainPartition`). For a budget that decreases with v each domain is a value
interval (:meth:`BudgetFunction.domain_table`).
"""

from __future__ import annotations

import ast
import difflib
import functools
import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import limits
from .errors import ConfigError, ExpressionError, ParameterError, PolicyError, ResourceLimitError
from .validate import positive as _positive

#: ε̂ used when none is given (the paper's experiments, Sec. 8.1).
DEFAULT_EPS_MAX: float = 100.0
#: Domain bound U of the measure used when none is given (Sec. 8.1: 10¹² for balances).
DEFAULT_U: float = 1e12
#: Largest number of syntax-tree nodes an expression may have.
MAX_EXPRESSION_NODES: int = 400
#: Deepest nesting of an expression's syntax tree.
MAX_EXPRESSION_DEPTH: int = 40
#: Largest absolute value of a constant exponent (``v ** 2`` is fine, ``v ** 1e6`` is not).
MAX_CONSTANT_EXPONENT: float = 64.0
#: Cost per record of the parts of an expression, in elementary float operations (an addition of two
#: float64 values, about 0.5 ns): operands, + − × ÷, signs and comparisons 1; ``**`` 4; exp, log,
#: log2, log10 and sqrt 2; where 2; abs 1; min and max 1 per argument; a comparison of a column
#: with text 40 (Python string comparisons). Cost × records must stay under
#: :data:`prdp_core.limits.MAX_EXPRESSION_COST`.
COST_POWER: int = 4
COST_TEXT_COMPARISON: int = 40
_COST_FUNCS: dict[str, int] = {"exp": 2, "log": 2, "log2": 2, "log10": 2, "sqrt": 2, "where": 2, "abs": 1}
#: Points of the grid used to check monotonicity and find extremes of a univariate budget.
_GRID_POINTS = 4001


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

Columns = Mapping[str, np.ndarray]


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def ceil_log2(x: np.ndarray) -> np.ndarray:
    """⌈log₂ x⌉ of positive finite numbers, exact, as int64 (from the IEEE-754 bits: the exponent of
    the next double below x, plus one). Zero and negative numbers give ≤ −1023, inf gives 1024."""
    a = np.ascontiguousarray(x, dtype=np.float64)
    b = a.view(np.int64) - 1
    b >>= 52
    b -= 1022
    return b


def _ceil_log2_inplace(a: np.ndarray) -> np.ndarray:
    """:func:`ceil_log2` reusing the buffer of a float64 array the caller owns (no allocation)."""
    b = a.view(np.int64)
    b -= 1
    b >>= 52
    b -= 1022
    return b


def _suggest(name: str, options: list[str]) -> str | None:
    """The option closest to ``name`` (case-insensitive), if any is close."""
    low = {o.lower(): o for o in options}
    close = difflib.get_close_matches(name.lower(), list(low), n=1, cutoff=0.6)
    return low[close[0]] if close else None


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
# The whitelist expression evaluator
# ---------------------------------------------------------------------------

Evaluator = Callable[[Columns, int], np.ndarray]

_BINOPS: dict[type, tuple[str, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = {
    ast.Add: ("+", np.add), ast.Sub: ("−", np.subtract), ast.Mult: ("×", np.multiply),
    ast.Div: ("÷", np.divide), ast.Pow: ("**", np.power),
}
_CMPOPS: dict[type, Callable[[Any, Any], np.ndarray]] = {
    ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater, ast.GtE: np.greater_equal,
    ast.Eq: np.equal, ast.NotEq: np.not_equal,
}
#: function name → (min args, max args, implementation on float arrays)
_FUNCS: dict[str, tuple[int, int, Callable[..., np.ndarray]]] = {
    # pairwise, in order (the result of reduce over the arguments) without stacking them into one array
    "min": (2, 16, lambda *a: functools.reduce(np.minimum, a)),
    "max": (2, 16, lambda *a: functools.reduce(np.maximum, a)),
    "log": (1, 2, lambda x, b=None: np.log(x) if b is None else np.log(x) / np.log(b)),
    "log2": (1, 1, np.log2),
    "log10": (1, 1, np.log10),
    "sqrt": (1, 1, np.sqrt),
    "exp": (1, 1, np.exp),
    "abs": (1, 1, np.abs),
    "where": (3, 3, lambda c, a, b: np.where(np.asarray(c) != 0, a, b)),
}
ALLOWED_FUNCTIONS: tuple[str, ...] = tuple(_FUNCS)

_NODE_NAMES = {
    ast.Attribute: "attribute access (a.b)", ast.Subscript: "indexing (a[b])", ast.Lambda: "lambda",
    ast.ListComp: "comprehensions", ast.GeneratorExp: "comprehensions", ast.DictComp: "comprehensions",
    ast.SetComp: "comprehensions", ast.List: "lists", ast.Tuple: "tuples", ast.Dict: "dictionaries",
    ast.Set: "sets", ast.JoinedStr: "f-strings", ast.NamedExpr: "assignment (:=)", ast.Starred: "* unpacking",
    ast.IfExp: "'a if c else b' (use where(c, a, b))", ast.Await: "await", ast.Yield: "yield",
    ast.Slice: "slices",
}


def _unsupported(node: ast.AST) -> ExpressionError:
    what = _NODE_NAMES.get(type(node))
    if what is None:
        if isinstance(node, ast.BinOp):
            what = f"the operator '{type(node.op).__name__}'"
        elif isinstance(node, ast.UnaryOp):
            what = f"the operator '{type(node.op).__name__}'"
        elif isinstance(node, ast.BoolOp):
            what = "'and'/'or' (use min/max of comparisons, or nested where)"
        else:
            what = type(node).__name__
    return ExpressionError(f"{what} is not allowed in a budget expression.",
                           hint="Use numbers, column names, + - * / **, comparisons and "
                                f"the functions {', '.join(ALLOWED_FUNCTIONS)}.")


def _equal_to_text(column: np.ndarray | pd.Series, text: str, col: str) -> np.ndarray:
    """Which cells of a column equal ``text``, as booleans, without making Python objects of numbers:
    numbers, booleans, dates and bytes never equal text; text stored by Arrow is compared by Arrow;
    other text cell by cell. A missing cell equals no text."""
    if isinstance(column, pd.Series):
        if isinstance(column.dtype, pd.StringDtype):
            return (column == text).to_numpy(dtype=bool, na_value=False)
        column = column.to_numpy()
    values = np.asarray(column)
    if values.ndim > 1:
        raise ExpressionError(f"Column '{col}' holds values that cannot be compared with text.")
    if values.dtype.kind == "U":
        return np.asarray(values == text, dtype=bool)
    if values.dtype.kind != "O":
        return np.zeros(values.shape, dtype=bool)
    try:
        return np.asarray(values == text, dtype=bool)
    except (TypeError, ValueError):  # e.g. pd.NA, whose comparison is undecided: missing is not equal
        pass
    try:
        return (pd.Series(values, copy=False) == text).to_numpy(dtype=bool)
    except (TypeError, ValueError):
        raise ExpressionError(f"Column '{col}' holds values that cannot be compared with text.") from None


@dataclass(frozen=True)
class CompiledExpression:
    """A checked expression: its text, the columns it reads, its cost per record (see
    :data:`COST_TEXT_COMPARISON`) and a vectorised evaluator."""

    text: str
    columns: tuple[str, ...]
    text_columns: tuple[str, ...]  # columns only compared with text (group labels)
    evaluate: Evaluator = field(repr=False, compare=False)
    cost: int = 1

    def __call__(self, cols: Columns, n: int) -> np.ndarray:
        """The expression on ``n`` records, in chunks of ``limits.EXPRESSION_CHUNK_ROWS`` records into one
        float64 array; refused with :class:`ResourceLimitError` when cost × n exceeds
        ``limits.MAX_EXPRESSION_COST``."""
        missing = [c for c in self.columns + self.text_columns if c not in cols]
        if missing:
            name = missing[0]
            close = _suggest(name, list(cols))
            hint = f"Did you mean '{close}'? " if close else ""
            avail = ", ".join(list(cols)[:12]) + (" …" if len(cols) > 12 else "")
            raise ExpressionError(f"Unknown name '{name}' in the budget expression.",
                                  hint=f"{hint}Columns you can use: {avail or '(none)'}.")
        work = self.cost * max(int(n), 0)
        if work > limits.MAX_EXPRESSION_COST:
            raise ResourceLimitError(
                f"Evaluating the expression on {n:,} records takes about {work:,} operations ({self.cost:,} per "
                f"record), over the limit of {limits.MAX_EXPRESSION_COST:,} operations.",
                hint=f"Simplify it: a comparison with text costs {COST_TEXT_COMPARISON}, '**' {COST_POWER}, other "
                     "parts 1 or 2; a per-group budget replaces many text comparisons.")
        arrays = {c: v if isinstance(v, pd.Series) else np.asarray(v)
                  for c in dict.fromkeys(self.columns + self.text_columns) for v in (cols[c],)}
        out = np.empty(n, dtype=np.float64)
        step = max(1, int(limits.EXPRESSION_CHUNK_ROWS))
        with np.errstate(all="ignore"):
            for start in range(0, max(n, 1), step):
                stop = min(n, start + step)
                part = {c: a.iloc[start:stop] if isinstance(a, pd.Series) else a[start:stop] if a.ndim else a
                        for c, a in arrays.items()}
                res = np.asarray(self.evaluate(part, stop - start))
                if res.dtype == object:
                    raise ExpressionError("The expression must give a number for every record, not text.")
                try:
                    out[start:stop] = res
                except (TypeError, ValueError):
                    raise ExpressionError("The columns of the expression must hold one number per record.") from None
                del res, part  # freed before the next chunk's temporaries: the allocator reuses their memory
        return out


def _quote_names(text: str) -> tuple[str, dict[str, str]]:
    """Replace `quoted column names` by placeholder identifiers."""
    mapping: dict[str, str] = {}

    def repl(m: re.Match[str]) -> str:
        name = m.group(1)
        key = f"__col{len(mapping)}__"
        for k, v in mapping.items():
            if v == name:
                return k
        mapping[key] = name
        return key

    out = re.sub(r"`([^`]*)`", repl, text)
    if "`" in out:
        raise ExpressionError("A column name in backticks is not closed.", hint="Write `column name` with two backticks.")
    return out, mapping


def compile_expression(text: str) -> CompiledExpression:
    """Parse and check a budget expression (whitelist only); raise :class:`ExpressionError`.

    Column names that are not Python identifiers can be written in backticks
    (`` `annual pay` ``). Text constants are allowed only in a single ``==``/``!=`` comparison
    with a column (``where(BRANCH == "B01", 1, 0.1)``), not in a chain (``a == 'x' == b``).
    The compiled expression carries its cost per record (see :data:`COST_TEXT_COMPARISON`).
    """
    if not isinstance(text, str):
        raise ExpressionError("A budget expression must be text.")
    if len(text) > limits.MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"The expression is {len(text):,} characters long; the limit is "
                              f"{limits.MAX_EXPRESSION_CHARS:,}.", hint="Shorten it (use a step table or per-group "
                                                                 "budget for long case lists).")
    if not text.strip():
        raise ExpressionError("The budget expression is empty.", hint="Example: 1e4 / max(BALANCE, 1)")
    if "\x00" in text:
        raise ExpressionError("The expression contains a null character.")
    src, quoted = _quote_names(text.strip())
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as exc:
        col = f" at character {exc.offset}" if exc.offset else ""
        msg = (exc.msg or "invalid syntax").replace("invalid syntax. Perhaps you forgot a comma?",
                                                    "invalid syntax (a missing operator or comma?)")
        raise ExpressionError(f"Syntax error{col}: {msg}.",
                              hint="Example of a valid expression: 1e4 / max(BALANCE, 1)") from None
    except (RecursionError, MemoryError, ValueError, OverflowError):
        raise ExpressionError("The expression is nested too deeply or is too large to read.",
                              hint=f"Keep nesting under {MAX_EXPRESSION_DEPTH} levels.") from None
    nodes = 0
    cost = 0
    columns: list[str] = []
    text_columns: list[str] = []

    def name_of(ident: str) -> str:
        if ident in quoted:
            return quoted[ident]
        glued = re.search(r"__col(\d+)__", ident)
        if quoted and glued and f"__col{glued.group(1)}__" in quoted:
            raise ExpressionError(f"`{quoted[f'__col{glued.group(1)}__']}` is joined to other text without an "
                                  "operator.", hint="Put an operator between a `quoted column` and "
                                                    "what follows it, e.g. `annual pay` * 2.")
        return ident

    def text_comparison(node: ast.Compare) -> Evaluator:
        """``column == 'text'``, ``'text' != column`` or text with text: one operator, no chain."""
        nonlocal nodes, cost
        parts = [node.left, *node.comparators]
        if not all(isinstance(o, (ast.Eq, ast.NotEq)) for o in node.ops):
            raise ExpressionError("Text can only be compared with == or !=.")
        if len(node.ops) > 1:
            raise ExpressionError("A text value is compared with one column at a time, e.g. BRANCH == 'B01'.",
                                  hint="Combine several comparisons with where(), min() or max() instead of "
                                       "chaining them.")
        for p in parts:
            if isinstance(p, ast.Constant) and isinstance(p.value, str) and len(p.value) > 200:
                raise ExpressionError("A text value in the expression is too long.")
        texts = [p.value for p in parts if isinstance(p, ast.Constant) and isinstance(p.value, str)]
        names = [p for p in parts if isinstance(p, ast.Name)]
        if len(texts) + len(names) < 2:
            v = texts[0]
            raise ExpressionError(f"Text ('{v[:20]}') may only be compared with a column, e.g. "
                                  f"where(BRANCH == '{v[:20]}', 1, 0.1).")
        equal = isinstance(node.ops[0], ast.Eq)
        cost += COST_TEXT_COMPARISON
        if not names:
            same = np.asarray(float((texts[0] == texts[1]) == equal))
            return lambda cols, n: same
        nodes += 1
        col = name_of(names[0].id)
        if col not in text_columns and col not in columns:
            text_columns.append(col)
        s = texts[0]

        def compare(cols: Columns, n: int) -> np.ndarray:
            hit = _equal_to_text(cols[col], s, col)
            return np.broadcast_to(hit if equal else ~hit, (n,)).astype(float)
        return compare

    def build(node: ast.AST, depth: int) -> Evaluator:
        nonlocal nodes, cost
        nodes += 1
        cost += 1
        if nodes > MAX_EXPRESSION_NODES:
            raise ExpressionError(f"The expression has more than {MAX_EXPRESSION_NODES} parts.",
                                  hint="Simplify it, or use a step table / per-group budget.")
        if depth > MAX_EXPRESSION_DEPTH:
            raise ExpressionError(f"The expression is nested more than {MAX_EXPRESSION_DEPTH} levels deep.")
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                if isinstance(v, str):
                    raise ExpressionError(f"Text ('{v[:20]}') may only be compared with a column, e.g. "
                                          f"where(BRANCH == '{v[:20]}', 1, 0.1).")
                raise _unsupported(node)
            try:
                f = float(v)
            except OverflowError:
                raise ExpressionError("A number in the expression is too large.") from None
            if not math.isfinite(f):
                raise ExpressionError("A number in the expression is too large.")
            const = np.float64(f)
            return lambda cols, n: const
        if isinstance(node, ast.Name):
            col = name_of(node.id)
            if col in _FUNCS:
                raise ExpressionError(f"'{col}' is a function: call it with arguments, e.g. {col}(BALANCE).")
            if col not in columns:
                columns.append(col)

            def get(cols: Columns, n: int, col: str = col) -> np.ndarray:
                arr = np.asarray(cols[col])
                if arr.dtype.kind not in "biuf":
                    try:
                        return arr.astype(float)
                    except (TypeError, ValueError):
                        raise ExpressionError(f"Column '{col}' holds text; compare it with a text value, e.g. "
                                              f"{col} == 'A'.") from None
                return arr.astype(float, copy=False)
            return get
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, (ast.USub, ast.UAdd)):
                inner = build(node.operand, depth + 1)
                if isinstance(node.op, ast.USub):
                    return lambda cols, n: np.negative(inner(cols, n))
                return inner
            if isinstance(node.op, ast.Not):
                inner = build(node.operand, depth + 1)
                return lambda cols, n: (np.asarray(inner(cols, n)) == 0).astype(float)
            raise _unsupported(node)
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise _unsupported(node)
            if isinstance(node.op, ast.Pow):
                exp_node = node.right
                if isinstance(exp_node, ast.UnaryOp) and isinstance(exp_node.op, (ast.USub, ast.UAdd)):
                    exp_node = exp_node.operand
                if isinstance(exp_node, ast.Constant) and isinstance(exp_node.value, (int, float)) and \
                        not isinstance(exp_node.value, bool):
                    try:
                        big = abs(float(exp_node.value)) > MAX_CONSTANT_EXPONENT
                    except OverflowError:
                        big = True
                    if big:
                        raise ExpressionError(f"The exponent {exp_node.value} is too large (limit "
                                              f"±{MAX_CONSTANT_EXPONENT:g}).")
                cost += COST_POWER - 1
            left = build(node.left, depth + 1)
            right = build(node.right, depth + 1)
            fn = op[1]
            return lambda cols, n: fn(left(cols, n), right(cols, n))
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            if any(isinstance(p, ast.Constant) and isinstance(p.value, str) for p in parts):
                return text_comparison(node)
            fns = [_CMPOPS.get(type(o)) for o in node.ops]
            if any(f is None for f in fns):
                raise ExpressionError("Only <, <=, >, >=, == and != comparisons are allowed.")
            evs = [build(p, depth + 1) for p in parts]
            cost += len(fns) - 1

            def cmp(cols: Columns, n: int) -> np.ndarray:
                res = np.ones(n, dtype=bool)
                left = evs[0](cols, n)
                for k, f in enumerate(fns):  # a chain a < b < c keeps one operand at a time
                    right = evs[k + 1](cols, n)
                    res &= np.asarray(f(left, right), dtype=bool)  # type: ignore[misc]
                    left = right
                return res.astype(float)
            return cmp
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise ExpressionError("Only the functions " + ", ".join(ALLOWED_FUNCTIONS) + " can be called.")
            fname = name_of(node.func.id)
            if fname in quoted.values():
                raise ExpressionError(f"`{fname}` is a column, not a function.",
                                      hint="Put an operator between the column and the bracket, e.g. `a b` * (1 + c).")
            if fname not in _FUNCS:
                close = difflib.get_close_matches(fname, list(_FUNCS), n=1)
                hint = f"Did you mean {close[0]}? " if close else ""
                raise ExpressionError(f"'{fname}' is not an allowed function.",
                                      hint=f"{hint}Allowed: {', '.join(ALLOWED_FUNCTIONS)}.")
            if node.keywords:
                raise ExpressionError(f"{fname}() takes plain arguments only (no name=value).")
            lo, hi, impl = _FUNCS[fname]
            if any(isinstance(a, ast.Starred) for a in node.args):
                raise _unsupported(ast.Starred())
            if not lo <= len(node.args) <= hi:
                want = f"{lo}" if lo == hi else f"{lo} to {hi}"
                raise ExpressionError(f"{fname}() takes {want} arguments, got {len(node.args)}.")
            args = [build(a, depth + 1) for a in node.args]
            cost += _COST_FUNCS.get(fname, len(node.args)) - 1
            return lambda cols, n: impl(*[a(cols, n) for a in args])
        raise _unsupported(node)

    ev = build(tree.body, 0)
    return CompiledExpression(text=text.strip(), columns=tuple(columns), text_columns=tuple(text_columns),
                              evaluate=ev, cost=cost)


# ---------------------------------------------------------------------------
# Shapes: the raw formula of a budget function (before the [ε̌, ε̂] cap)
# ---------------------------------------------------------------------------

_SHAPES: dict[str, type["Shape"]] = {}


def _register_shape(cls: type["Shape"]) -> type["Shape"]:
    _SHAPES[cls.kind] = cls
    return cls


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
    kind = d.get("kind")
    if kind not in _SHAPES:
        raise ConfigError(f"Unknown budget-function kind '{kind}'.", hint=f"Known kinds: {', '.join(sorted(_SHAPES))}.")
    return _SHAPES[kind].from_params(d)  # type: ignore[attr-defined]


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
    compiled: CompiledExpression = field(repr=False, compare=False, default=None)  # type: ignore[assignment]
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
        return np.maximum.reduce(ups)  # type: ignore[arg-type]

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


# ---------------------------------------------------------------------------
# Privacy-specified domains (Sec. 5.1)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DomainPartition:
    """The L = ⌈log₂(ε̂/ε̌)⌉ privacy-specified domains of the budget range [ε̌, ε̂] (Sec. 5.1).

    Domain i (1-based) holds the records with E(r) ∈ (2^{i−1}ε̌, min(2^iε̌, ε̂)] (the first
    also holds E(r) = ε̌). Each of its records may be charged ``lo[i-1]`` = 2^{i−1}ε̌.
    """

    eps_min: float
    eps_max: float

    def __post_init__(self) -> None:
        lo = _positive("ε̌ (the smallest budget)", self.eps_min)
        hi = _positive("ε̂ (the largest budget)", self.eps_max)
        if hi < lo:
            raise ParameterError(f"ε̂ = {hi:g} is below ε̌ = {lo:g}.", hint="ε̂ must be at least ε̌.")
        if not math.isfinite(hi / lo) or self.L > 2000:
            raise ParameterError("ε̂/ε̌ is astronomically large.", hint="Use a larger ε̌ or a smaller ε̂.")

    @property
    def L(self) -> int:
        """Number of domains, at least 1."""
        r = self.eps_max / self.eps_min
        L = math.ceil(math.log2(r)) if r > 1 else 1
        if L > 1 and self.eps_min * 2.0 ** (L - 1) >= self.eps_max * (1 - 1e-12):  # log2 rounded up
            L -= 1
        return max(1, L)

    @property
    def lo(self) -> np.ndarray:
        """2^{i−1}ε̌ for i = 1..L: the budget every record of domain i is charged."""
        return self.eps_min * np.exp2(np.arange(self.L, dtype=float))

    @property
    def hi(self) -> np.ndarray:
        """min(2^iε̌, ε̂): the upper end of domain i's budget range."""
        hi = np.minimum(self.eps_min * np.exp2(np.arange(1, self.L + 1, dtype=float)), self.eps_max)
        hi[-1] = self.eps_max
        return hi

    def index(self, eps: np.ndarray) -> np.ndarray:
        """Domain (1..L) of each budget. Budgets must lie in [ε̌, ε̂] (cap them first).

        Boundaries are handled so that a record is never charged more than its budget:
        ``lo[index(e) - 1] <= e`` always holds.
        """
        e = np.asarray(eps, dtype=float)
        L = self.L
        k = _ceil_log2_inplace(np.divide(e, self.eps_min))
        np.clip(k, 1, L, out=k)
        # No record is charged more than its budget: with r = fl(e/ε̌) and i = ⌈log2 r⌉ (exact),
        # 2^{i−1} < r, and since 2^{i−1} is a double and rounding is monotone, 2^{i−1} ≤ e/ε̌ exactly;
        # ε̌·2^{i−1} is computed exactly, so lo[i−1] ≤ e (clipping to 1..L only lowers the charge
        # for budgets in [ε̌, ε̂]). Tests check the invariant on boundary values.
        return k.astype(np.int16 if L < 30000 else np.int32)

    def thresholds(self, beta: float, *, scale: float = 1.0) -> np.ndarray:
        """T_i = ln(L/β) / (2^{i−1}ε̌) (Algorithm 1, line 9); ``scale`` multiplies them (√(8n) for PrLDP)."""
        b = float(beta)
        if not 0 < b < 1:
            raise ParameterError(f"The failure rate β must be strictly between 0 and 1 (got {beta!r}).")
        return scale * math.log(self.L / b) / self.lo

    def table(self, beta: float | None = None) -> pd.DataFrame:
        """One row per domain: index, budget range, charged budget and (with β) threshold T_i."""
        df = pd.DataFrame({"domain": np.arange(1, self.L + 1), "eps_low": self.lo, "eps_high": self.hi,
                           "charged": self.lo})
        if beta is not None:
            df["threshold"] = self.thresholds(beta)
        return df


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


class _TableColumns(dict):  # type: ignore[type-arg]
    """Columns of a DataFrame: holds only the columns a formula reads, but iterates over every
    column name so that unknown names get suggestions. Numeric columns are numpy views; other
    columns stay pandas Series, so an expression converts them chunk by chunk (text stored by
    Arrow is compared without making Python strings)."""

    def __init__(self, df: pd.DataFrame, need: Iterable[str]) -> None:
        super().__init__({c: df[c].to_numpy() if pd.api.types.is_numeric_dtype(df[c]) else df[c] for c in need})
        self._names = [str(c) for c in df.columns]

    def __iter__(self):  # type: ignore[no-untyped-def]
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
        if getattr(table_or_values, "engine", None) is not None:  # a dataset held by an engine: counted there
            df["records"] = table_or_values.engine.domain_stats(self).counts
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
        return None if any(v is None for v in vals) else min(vals)  # type: ignore[type-var]
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
