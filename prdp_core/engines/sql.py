"""SQL for the engine statistics: one builder for every SQL engine, dialects kept in one place.

The DuckDB engine (and a Spark engine after it) computes prdp_core's statistics as SQL over a
relation. Everything that must give **the same numbers as numpy** is written here once:

* split counts m(r) = max_a ⌈r(a)/T(a)⌉ with the exact float guard of
  :func:`prdp_core.splitting._pieces` (k·t ≥ v in real arithmetic; Dekker's TwoProduct decides
  ties) — IEEE operations give the same bits in every engine;
* ⌈log₂ x⌉ exactly (the domain index of :class:`prdp_core.budget.DomainPartition`, the power-of-two
  bins of the clipped sum): an estimate from ``log2`` corrected by exact comparisons with powers
  of two;
* budget functions E(r) compiled from the whitelisted syntax tree of :mod:`prdp_core.budget`,
  with numpy's NaN semantics (comparisons with NaN are false, min/max propagate NaN). Operations
  that IEEE rounds correctly (+ − × ÷, sqrt, abs, min, max, comparisons, ``where``) give the same
  bits as numpy; ``log``, ``exp`` and ``**`` come from each engine's math library and may differ
  in the last bit, so :func:`budget_sql` reports whether its SQL is exact and the engine decides
  (DuckDB then evaluates the numpy kernel itself inside the engine);
* bucket indices over explicit edges (a balanced CASE tree: ``numpy.searchsorted`` semantics).

User text — column names, group and filter values — reaches SQL only through :meth:`Dialect.ident`
and :meth:`Dialect.string`, which quote it; numbers only through :meth:`Dialect.double`.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..mechanisms.prdp.expressions import _quote_names
from ..mechanisms.prdp.shapes import Constant, Expression, Groups, Inverse, Log, Shape, Sqrt, Step
from ..errors import ExpressionError, ParameterError, PolicyError
from ..splitting import DEFAULT_KEY, Thresholds
from ..workload import Filter

ColumnKinds = dict[str, str]


# ---------------------------------------------------------------------------
# Dialect
# ---------------------------------------------------------------------------


class Dialect:
    """How an SQL engine spells identifiers, literals and the few functions that differ.

    This is DuckDB's; a Spark dialect overrides the methods whose spelling differs (backquoted
    identifiers, ``percentile`` functions, ``CAST(x AS STRING)``)."""

    name = "duckdb"
    text_type = "VARCHAR"

    def ident(self, name: str) -> str:
        s = str(name)
        if "\x00" in s:
            raise ParameterError("A column name contains a null character.")
        return '"' + s.replace('"', '""') + '"'

    def string(self, value: str) -> str:
        s = str(value)
        if "\x00" in s:
            raise ParameterError("A text value contains a null character.")
        return "'" + s.replace("'", "''") + "'"

    def double(self, x: float) -> str:
        """A DOUBLE literal that reads back as exactly ``x`` (shortest repr, exponent form)."""
        f = float(x)
        if math.isnan(f):
            return "CAST('nan' AS DOUBLE)"
        if math.isinf(f):
            return "CAST('inf' AS DOUBLE)" if f > 0 else "CAST('-inf' AS DOUBLE)"
        r = repr(f)
        return f"({r if 'e' in r else r + 'e0'})"

    def as_double(self, expr: str) -> str:
        return f"CAST({expr} AS DOUBLE)"

    def as_text(self, expr: str) -> str:
        return f"CAST({expr} AS {self.text_type})"

    def try_double(self, expr: str) -> str:
        return f"TRY_CAST({expr} AS DOUBLE)"

    def isnan(self, expr: str) -> str:
        return f"isnan({expr})"

    def isinf(self, expr: str) -> str:
        return f"isinf({expr})"

    def pow2(self, expr: str) -> str:
        """2^e for a whole number e (exact in DuckDB, and in Java's Math.pow)."""
        return f"pow(2.0e0, {expr})"

    def log2(self, expr: str) -> str:
        return f"log2({expr})"

    def count_if(self, cond: str) -> str:
        return f"count(*) FILTER (WHERE {cond})"

    def sum_if(self, expr: str, cond: str) -> str:
        return f"sum({expr}) FILTER (WHERE {cond})"

    def quantiles_disc(self, expr: str, qs: Sequence[float]) -> str:
        """Order statistics at fractions qs (DuckDB: element at floor(n·q))."""
        return f"quantile_disc({expr}, [{', '.join(self.double(q) for q in qs)}])"


DUCKDB = Dialect()


# ---------------------------------------------------------------------------
# Values and predicates
# ---------------------------------------------------------------------------


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def equals(d: Dialect, col: str, kind: str, value: Any) -> str | None:
    """SQL for "the column equals ``value``" with Python's equality across types (5 == 5.0,
    '5' != 5), or None when no value of a column of this kind can be equal."""
    c = d.ident(col)
    if kind == "text" and isinstance(value, str):
        return f"{c} = {d.string(value)}"
    if kind == "number" and _is_number(value):
        return f"{d.as_double(c)} = {d.double(float(value))}"
    if kind == "bool" and isinstance(value, (bool, np.bool_)):
        return f"{c} = {'true' if value else 'false'}"
    return None


def filter_sql(d: Dialect, f: Filter, kinds: ColumnKinds) -> str:
    """:meth:`prdp_core.workload.Filter.mask` in SQL (never NULL): a numeric column compares numbers
    (text values are converted; text that is not a number matches nothing), any other column
    compares text (booleans as ``True``/``False``)."""
    if f.column not in kinds:
        raise PolicyError(f"Filter column '{f.column}' is not in the table.")
    kind = kinds[f.column]
    c = d.ident(f.column)
    if kind == "number":
        nums = []
        for v in f.values:
            try:
                x = float(v)
            except (TypeError, ValueError):
                continue
            if not math.isnan(x):
                nums.append(x)
        if not nums:
            return "false"
        return f"COALESCE({d.as_double(c)} IN ({', '.join(d.double(x) for x in nums)}), false)"
    texts = ", ".join(d.string(str(v)) for v in f.values)
    if not texts:
        return "false"
    expr = f"(CASE WHEN {c} THEN 'True' ELSE 'False' END)" if kind == "bool" else d.as_text(c)
    return f"COALESCE({expr} IN ({texts}), false)"


def threshold_sql(d: Dialect, thr: Thresholds, measure: str, kinds: ColumnKinds) -> str:
    """T(a) of each record: a literal, or a CASE over the thresholds' group column (the ``*`` row,
    or NULL when there is none, for every other value)."""
    rows = thr.as_dict()
    default = rows.get(DEFAULT_KEY)
    if thr.group_col is None:
        return d.double(float(rows[DEFAULT_KEY][measure]))
    kind = kinds.get(thr.group_col, "other")
    whens = []
    for g, row in thr.rows:
        if g == DEFAULT_KEY:
            continue
        cond = equals(d, thr.group_col, kind, g)
        if cond is not None:
            whens.append(f"WHEN {cond} THEN {d.double(float(dict(row)[measure]))}")
    other = d.double(float(default[measure])) if default is not None else "NULL"
    if not whens:
        return other
    return f"(CASE {' '.join(whens)} ELSE {other} END)"


def _two_product_error(a: str, b: str, p: str, d: Dialect) -> str:
    """a·b − p exactly (Dekker's TwoProduct), the same operations as splitting._product_error."""
    split = d.double(134217729.0)

    def parts(x: str) -> tuple[str, str]:
        c = f"({split} * {x})"
        hi = f"({c} - ({c} - {x}))"
        return hi, f"({x} - {hi})"

    ah, al = parts(a)
    bh, bl = parts(b)
    return f"(((({ah} * {bh}) - {p}) + ({ah} * {bl})) + ({al} * {bh})) + ({al} * {bl})"


@dataclass(frozen=True)
class SplitColumns:
    """SQL that adds split-count columns to a relation: ``__m`` (joint) and ``__m_<i>`` (one per
    requested measure)."""

    sql: str
    joint: str
    per_measure: dict[str, str]


def split_columns(d: Dialect, source: str, thr: Thresholds, kinds: ColumnKinds,
                  per_measure: Sequence[str] = (), *, plain: set[str] | frozenset[str] = frozenset()) -> SplitColumns:
    """m(r) = max(1, max_a ⌈v_a/T_a⌉) with the exact guard, and ⌈v_a/T_a⌉ (at least 1) of each
    measure in ``per_measure`` — the numbers :func:`prdp_core.splitting.split_counts` gives.
    Measures in ``plain`` are known to need no guard (whole numbers divided by whole thresholds)."""
    measures = list(thr.measures)
    for a in per_measure:
        if a not in measures:
            raise PolicyError(f"No splitting threshold for '{a}'.")
    pieces = {a: (f"ceil({d.as_double(d.ident(a))} / {threshold_sql(d, thr, a, kinds)})" if a in plain else
                  _pieces_sql(d, d.as_double(d.ident(a)), threshold_sql(d, thr, a, kinds))) for a in measures}
    one = d.double(1.0)
    joint = f"greatest({one}, {', '.join(pieces.values())})"
    cols = [f"{joint} AS __m"] + [f"greatest({one}, {pieces[a]}) AS __m_{j}" for j, a in enumerate(per_measure)]
    return SplitColumns(f"SELECT *, {', '.join(cols)} FROM {source}", "__m",
                        {a: f"__m_{j}" for j, a in enumerate(per_measure)})


def _pieces_sql(d: Dialect, v: str, t: str) -> str:
    """⌈v/t⌉ corrected so that pieces·t ≥ v in real arithmetic (splitting._pieces): k = ⌈fl(v/t)⌉,
    one more when fl(k·t) < v, and on a tie fl(k·t) = v when the product's rounding error is
    negative. The correction can only apply when fl(v/t) is a whole number (otherwise v/t lies
    strictly between k − 1 and k, so k·t > v exactly), so the guard runs for those records only."""
    q = f"({v} / {t})"
    k = f"ceil({q})"
    p = f"({k} * {t})"
    err = _two_product_error(k, t, p, d)
    return (f"(CASE WHEN {q} <> floor({q}) THEN {k} WHEN {p} < {v} THEN {k} + 1 WHEN {p} > {v} THEN {k} "
            f"ELSE (CASE WHEN {err} < 0 THEN {k} + 1 ELSE {k} END) END)")


def ceil_log2_sql(d: Dialect, x: str) -> str:
    """⌈log₂ x⌉ of a positive finite x, exact: log2's estimate corrected by exact comparisons with
    2^(c−1) and 2^c (powers of two are exact doubles)."""
    c = f"CAST(ceil({d.log2(x)}) AS BIGINT)"
    return (f"(CASE WHEN {d.pow2(f'{c} - 1')} >= {x} THEN {c} - 1 "
            f"WHEN {d.pow2(c)} < {x} THEN {c} + 1 ELSE {c} END)")


def bucket_sql(d: Dialect, x: str, edges: Sequence[float], *, side: str = "left") -> str:
    """``numpy.searchsorted(edges, x, side)`` as a balanced CASE tree (edges ascending):
    the number of edges < x (``left``) or ≤ x (``right``)."""
    e = [float(v) for v in edges]
    op = "<=" if side == "left" else "<"  # x goes left of edge j when x <= e[j] (left side)

    def tree(lo: int, hi: int) -> str:  # answer in [lo, hi]
        if lo == hi:
            return str(lo)
        mid = (lo + hi) // 2  # is the answer ≤ mid? ⟺ x op e[mid]
        return f"(CASE WHEN {x} {op} {d.double(e[mid])} THEN {tree(lo, mid)} ELSE {tree(mid + 1, hi)} END)"

    return tree(0, len(e))


# ---------------------------------------------------------------------------
# Budget functions
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetSQL:
    """The raw formula of a budget function in SQL (before the [ε̌, ε̂] cap).

    ``exact``: the SQL gives numpy's bits for every record (only correctly rounded operations);
    ``unmatched``: for a per-group budget without default, the condition of records no part covers
    (their raw value is NULL)."""

    raw: str
    exact: bool
    unmatched: str | None = None


class _Budget:
    def __init__(self, d: Dialect, kinds: ColumnKinds) -> None:
        self.d = d
        self.kinds = kinds
        self.exact = True

    def nan(self) -> str:
        return self.d.double(float("nan"))

    def number(self, col: str) -> str:
        """A column as a DOUBLE with missing values as NaN (numpy's view of a column)."""
        if col not in self.kinds:
            raise ExpressionError(f"Unknown name '{col}' in the budget.",
                                  hint=f"Columns you can use: {', '.join(list(self.kinds)[:12])}.")
        c = self.d.ident(col)
        conv = self.d.try_double(c) if self.kinds[col] == "text" else self.d.as_double(c)
        return f"COALESCE({conv}, {self.nan()})"

    def bad(self, x: str) -> str:
        return f"({self.d.isnan(x)} OR {x} < 0)"

    # -- shapes ------------------------------------------------------------------------

    def shape(self, s: Shape) -> str:
        d = self.d
        if isinstance(s, Constant):
            return d.double(s.eps)
        if isinstance(s, Inverse):
            v = self.number(s.column)
            return (f"(CASE WHEN {self.bad(v)} THEN {self.nan()} WHEN {v} > 0 THEN {d.double(s.alpha)} / {v} "
                    f"ELSE {d.double(math.inf)} END)")
        if isinstance(s, Sqrt):
            v = self.number(s.column)
            return (f"(CASE WHEN {self.bad(v)} THEN {self.nan()} WHEN {v} > 0 THEN {d.double(s.alpha)} / sqrt({v}) "
                    f"ELSE {d.double(math.inf)} END)")
        if isinstance(s, Log):
            self.exact = False
            v = self.number(s.column)
            return (f"(CASE WHEN {self.bad(v)} THEN {self.nan()} WHEN {v} > 1 THEN {d.double(s.alpha)} / "
                    f"pow(ln({v}), {d.double(s.k)}) ELSE {d.double(math.inf)} END)")
        if isinstance(s, Step):
            v = self.number(s.column)
            whens = " ".join(f"WHEN {v} <= {d.double(b)} THEN {d.double(e)}" for b, e in zip(s.bounds, s.eps))
            return f"(CASE WHEN {d.isnan(v)} THEN {d.double(s.eps[-1])} {whens} ELSE {d.double(s.eps[-1])} END)"
        if isinstance(s, Expression):
            return self.expression(s.compiled.text)
        if isinstance(s, Groups):
            return self.groups(s)
        raise PolicyError(f"The budget shape '{s.kind}' cannot run in an SQL engine.")

    def group_match(self, col: str, value: Any) -> str:
        """Groups.raw's rule: the value equals the part's value, or its text does."""
        kind = self.kinds.get(col, "other")
        c = self.d.ident(col)
        conds = [x for x in (equals(self.d, col, kind, value),) if x]
        text = f"(CASE WHEN {c} THEN 'True' ELSE 'False' END)" if kind == "bool" else self.d.as_text(c)
        conds.append(f"{text} = {self.d.string(str(value))}")
        return "COALESCE(" + " OR ".join(f"({x})" for x in conds) + ", false)"

    def groups(self, s: Groups) -> str:
        if s.column not in self.kinds:
            raise ExpressionError(f"The budget is split by column '{s.column}', which is not in the table.")
        whens = " ".join(f"WHEN {self.group_match(s.column, v)} THEN {self.shape(p)}" for v, p in s.parts)
        other = self.shape(s.default) if s.default is not None else "NULL"
        return f"(CASE {whens} ELSE {other} END)" if whens else other

    # -- expressions -------------------------------------------------------------------

    def expression(self, text: str) -> str:
        src, quoted = _quote_names(text.strip())
        tree = ast.parse(src, mode="eval")
        self._quoted = quoted
        return self.node(tree.body)

    def name(self, ident: str) -> str:
        return self._quoted.get(ident, ident)

    def node(self, n: ast.AST) -> str:
        d = self.d
        if isinstance(n, ast.Constant):
            return d.double(float(n.value))
        if isinstance(n, ast.Name):
            return self.number(self.name(n.id))
        if isinstance(n, ast.UnaryOp):
            x = self.node(n.operand)
            if isinstance(n.op, ast.USub):
                return f"(-{x})"
            if isinstance(n.op, ast.UAdd):
                return x
            return f"(CASE WHEN {x} = 0 THEN {d.double(1.0)} ELSE {d.double(0.0)} END)"  # not: NaN == 0 is false
        if isinstance(n, ast.BinOp):
            a, b = self.node(n.left), self.node(n.right)
            if isinstance(n.op, ast.Pow):
                self.exact = False
                return f"pow({a}, {b})"
            op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}[type(n.op)]
            return f"({a} {op} {b})"
        if isinstance(n, ast.Compare):
            parts = [n.left, *n.comparators]
            conds = [self.compare(op, parts[i], parts[i + 1], parts) for i, op in enumerate(n.ops)]
            return f"(CASE WHEN {' AND '.join(conds)} THEN {d.double(1.0)} ELSE {d.double(0.0)} END)"
        if isinstance(n, ast.Call):
            fname = self.name(n.func.id)  # type: ignore[attr-defined]
            args = [self.node(a) for a in n.args]
            if fname in ("min", "max"):
                anynan = " OR ".join(d.isnan(a) for a in args)
                fn = "least" if fname == "min" else "greatest"
                return f"(CASE WHEN {anynan} THEN {self.nan()} ELSE {fn}({', '.join(args)}) END)"
            if fname == "abs":
                return f"abs({args[0]})"
            if fname == "sqrt":
                return f"sqrt({args[0]})"
            if fname == "where":
                c, a, b = args
                return f"(CASE WHEN {d.isnan(c)} OR {c} <> 0 THEN {a} ELSE {b} END)"
            self.exact = False
            if fname == "log":
                return f"ln({args[0]})" if len(args) == 1 else f"(ln({args[0]}) / ln({args[1]}))"
            return {"log2": "log2", "log10": "log10", "exp": "exp"}[fname] + f"({args[0]})"
        raise ExpressionError(f"{type(n).__name__} is not allowed in a budget expression.")

    def compare(self, op: ast.cmpop, left: ast.AST, right: ast.AST, parts: list[ast.AST]) -> str:
        d = self.d
        texty = any(isinstance(p, ast.Constant) and isinstance(p.value, str) for p in parts)
        if texty:
            return self.text_compare(op, left, right)
        a, b = self.node(left), self.node(right)
        sym = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "=", ast.NotEq: "<>"}[type(op)]
        if isinstance(op, ast.NotEq):
            return f"({d.isnan(a)} OR {d.isnan(b)} OR {a} <> {b})"
        return f"(NOT {d.isnan(a)} AND NOT {d.isnan(b)} AND {a} {sym} {b})"

    def text_compare(self, op: ast.cmpop, left: ast.AST, right: ast.AST) -> str:
        """numpy's object comparison of a column with text: equal only for text values; missing
        values and numbers are never equal (and always not-equal)."""
        d = self.d

        def side(x: ast.AST) -> tuple[str, str]:  # (sql, kind)
            if isinstance(x, ast.Constant) and isinstance(x.value, str):
                return d.string(x.value), "const"
            if isinstance(x, ast.Name):
                col = self.name(x.id)
                if col not in self.kinds:
                    raise ExpressionError(f"Unknown name '{col}' in the budget expression.")
                return d.ident(col), self.kinds[col]
            return self.node(x), "number"

        (a, ka), (b, kb) = side(left), side(right)
        eq = isinstance(op, ast.Eq)
        if ka in ("const", "text") and kb in ("const", "text"):
            return f"COALESCE({a} {'=' if eq else '<>'} {b}, {'false' if eq else 'true'})"
        return "false" if eq else "true"


def budget_sql(d: Dialect, shape: Shape, kinds: ColumnKinds) -> BudgetSQL:
    """The raw budget formula of ``shape`` in SQL, and whether it gives numpy's bits exactly."""
    b = _Budget(d, kinds)
    raw = b.shape(shape)
    unmatched = None
    if isinstance(shape, Groups) and shape.default is None:
        unmatched = "NOT (" + " OR ".join(b.group_match(shape.column, v) for v, _ in shape.parts) + ")" \
            if shape.parts else "true"
    return BudgetSQL(raw, b.exact, unmatched)


def domain_index_sql(d: Dialect, eps: str, eps_min: float, L: int) -> str:
    """:meth:`prdp_core.budget.DomainPartition.index` of a capped budget ``eps`` ∈ [ε̌, ε̂]."""
    q = f"({eps} / {d.double(eps_min)})"
    return f"least(greatest({ceil_log2_sql(d, q)}, 1), {int(L)})"


def value_bin_sql(d: Dialect, v: str, bins: Any) -> str:
    """:func:`prdp_core.engines.memory.value_bins` in SQL."""
    if bins.kind == "pow2":
        e = ceil_log2_sql(d, v)
        return f"(CASE WHEN {v} <= 0 THEN 0 ELSE least(greatest({e}, {bins.j0}), {bins.J + 1}) - {bins.j0} END)"
    k = f"ceil(({d.log2(v)} - {d.double(float(bins.j0))}) * {d.double(float(bins.steps))}) + 1"
    return (f"(CASE WHEN {v} <= 0 THEN 0 WHEN {v} > {d.double(bins.U)} THEN {bins.m} "
            f"ELSE CAST(least(greatest({k}, 1), {bins.m - 1}) AS BIGINT) END)")


Compiler = Callable[[Shape], BudgetSQL]

__all__ = ["DUCKDB", "BudgetSQL", "Dialect", "SplitColumns", "bucket_sql", "budget_sql", "ceil_log2_sql",
           "domain_index_sql", "equals", "filter_sql", "split_columns", "threshold_sql", "value_bin_sql"]
