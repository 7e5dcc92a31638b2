"""The budget-expression compiler: a whitelist evaluator of formulas over record columns (no eval/exec).

:func:`compile_expression` parses a budget expression such as ``1e4 / max(BALANCE, 1)`` to a
syntax tree and checks every node against the whitelist (numbers, column names, + − × ÷ **,
comparisons, min, max, log, log2, log10, sqrt, exp, abs, where); evaluation applies numpy
functions to float64 arrays (no I/O). Time and memory are bounded: an expression's cost per
record (operands, operators, calls, text comparisons) times the number of records is checked
against ``limits.MAX_EXPRESSION_COST`` before anything is evaluated, and records are evaluated
in chunks of ``limits.EXPRESSION_CHUNK_ROWS`` into one preallocated float64 output. A text
value is compared with one column at a time (``BRANCH == 'B01'``) and never turns a column of
numbers into Python objects. The expression text is user input: it reaches no generated
code except as a ``repr`` literal.
"""

from __future__ import annotations

import ast
import difflib
import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from . import limits
from .errors import ExpressionError, ResourceLimitError

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
#: :data:`prdp_core.core.limits.MAX_EXPRESSION_COST`.
COST_POWER: int = 4
COST_TEXT_COMPARISON: int = 40
_COST_FUNCS: dict[str, int] = {"exp": 2, "log": 2, "log2": 2, "log10": 2, "sqrt": 2, "where": 2, "abs": 1}


Columns = Mapping[str, np.ndarray]


def _suggest(name: str, options: list[str]) -> str | None:
    """The option closest to ``name`` (case-insensitive), if any is close."""
    low = {o.lower(): o for o in options}
    close = difflib.get_close_matches(name.lower(), list(low), n=1, cutoff=0.6)
    return low[close[0]] if close else None


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
    "where": (3, 3, lambda c, a, b: np.asarray(np.where(np.asarray(c) != 0, a, b))),
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
        raise ExpressionError("A column name in backticks is not closed.",
                              hint="Write `column name` with two backticks.")
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
            return lambda cols, n: const  # type: ignore[return-value]  # a scalar broadcasts like a column
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
                    res &= np.asarray(f(left, right), dtype=bool)  # type: ignore[misc]  # no f is None past the check above (refused), which mypy does not narrow
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
            starred = [a for a in node.args if isinstance(a, ast.Starred)]
            if starred:
                raise _unsupported(starred[0])
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
