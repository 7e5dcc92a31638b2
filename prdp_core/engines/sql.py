"""SQL for the engine statistics: one builder for every SQL engine, dialects kept in one place.

The DuckDB engine (and a Spark engine after it) computes prdp_core's statistics as SQL over a
relation. Everything that must give **the same numbers as numpy** is written here once:

* split counts m(r) = max_a ⌈r(a)/T(a)⌉ with the exact float guard of
  :func:`prdp_core.splitting._pieces` (k·t ≥ v in real arithmetic; Dekker's TwoProduct decides
  ties) — IEEE operations give the same bits in every engine;
* ⌈log₂ x⌉ exactly (the domain index of :class:`prdp_core.mechanisms.prdp.domains.DomainPartition`, the power-of-two
  bins of the clipped sum): an estimate from ``log2`` corrected by exact comparisons with powers
  of two;
* budget functions E(r) compiled from the whitelisted syntax tree of :mod:`prdp_core.mechanisms.prdp.budget`,
  with numpy's NaN semantics (comparisons with NaN are false, min/max propagate NaN). Operations
  that IEEE rounds correctly (+ − × ÷, sqrt, abs, min, max, comparisons, ``where``) give the same
  bits as numpy; ``log``, ``exp`` and ``**`` come from each engine's math library and may differ
  in the last bit, so :func:`budget_sql` reports whether its SQL is exact and the engine decides
  (DuckDB then evaluates the numpy kernel itself inside the engine);
* bucket indices over explicit edges (a balanced CASE tree: ``numpy.searchsorted`` semantics);
* monotone step functions of one value computed by a numpy kernel (the log-grid bins of the
  maximum, the bins of a realized-loss histogram, the domain of a monotone budget) as exact
  comparisons with thresholds found on the driver by bisection over the doubles
  (:func:`step_edges`), for engines whose ``log2`` is not numpy's (:attr:`Dialect.exact_log2`).

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

    This is DuckDB's; :class:`SparkDialect` overrides the methods whose spelling or semantics
    differ (backquoted identifiers, ``CAST(x AS STRING)``, ``ceil`` returning an integer, division
    by zero refused in ANSI mode).

    ``exact_log2``: the engine's ``log2`` gives numpy's bits (both call the C library's), so log
    bins may be computed from it; otherwise they are found by comparisons with thresholds."""

    name = "duckdb"
    text_type = "VARCHAR"
    exact_log2 = True
    #: Long lists of bucket edges are searched from an estimate (see :func:`bucket_columns`).
    estimated_buckets = False

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

    def isfinite(self, expr: str) -> str:
        return f"isfinite({expr})"

    def ceil(self, expr: str) -> str:
        """⌈x⌉ as a DOUBLE (NaN and ±inf unchanged)."""
        return f"ceil({expr})"

    def floor(self, expr: str) -> str:
        """⌊x⌋ as a DOUBLE (NaN and ±inf unchanged)."""
        return f"floor({expr})"

    def div(self, a: str, b: str) -> str:
        """a / b of DOUBLEs with IEEE semantics (x/0 = ±inf, 0/0 = NaN), as numpy divides."""
        return f"({a} / {b})"

    def sorted_desc(self, expr: str) -> str:
        """The group's values of ``expr`` as a list sorted in descending order (an aggregate)."""
        return f"list({expr} ORDER BY {expr} DESC)"

    def broadcast(self, alias: str) -> str:
        """A hint that the small relation ``alias`` of a join is sent to every worker."""
        return ""

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

#: 2^52: every double of at least this magnitude is a whole number.
_WHOLE = 4503599627370496.0
#: Characters a Spark string literal may hold as they are (others go through hex-encoded UTF-8).
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.,:;+-*/=()#@!?%&|^~$<>[]{}")


class SparkDialect(Dialect):
    """Spark SQL (3.5+, classic or Spark Connect), correct with and without ANSI mode.

    Identifiers are backquoted; text that is not plain ASCII letters, digits and punctuation is
    written as ``decode(unhex('<UTF-8 bytes>'), 'UTF-8')`` so that no parser setting (escaped
    string literals, backslashes) can change its meaning; ``ceil``/``floor`` return integers in
    Spark (and fail on overflow in ANSI mode), so they are applied only below 2^52, where every
    double is whole; division by zero fails in ANSI mode and gives NULL otherwise, so ``div``
    spells IEEE's ±inf and NaN out. Spark's ``log2`` is ln(x)/ln(2) in Java, not numpy's."""

    name = "spark"
    text_type = "STRING"
    exact_log2 = False
    estimated_buckets = True

    def ident(self, name: str) -> str:
        s = str(name)
        if "\x00" in s:
            raise ParameterError("A column name contains a null character.")
        return "`" + s.replace("`", "``") + "`"

    def string(self, value: str) -> str:
        s = str(value)
        if "\x00" in s:
            raise ParameterError("A text value contains a null character.")
        if all(ch in _PLAIN for ch in s):
            return "'" + s + "'"
        return f"decode(unhex('{s.encode('utf-8').hex().upper()}'), 'UTF-8')"

    def try_double(self, expr: str) -> str:
        return f"try_cast({expr} AS DOUBLE)"

    def isinf(self, expr: str) -> str:
        return f"(abs({expr}) = {self.double(math.inf)})"

    def isfinite(self, expr: str) -> str:
        return f"(NOT isnan({expr}) AND abs({expr}) < {self.double(math.inf)})"

    def ceil(self, expr: str) -> str:
        return f"(CASE WHEN abs({expr}) < {self.double(_WHOLE)} THEN CAST(ceil({expr}) AS DOUBLE) ELSE {expr} END)"

    def floor(self, expr: str) -> str:
        return f"(CASE WHEN abs({expr}) < {self.double(_WHOLE)} THEN CAST(floor({expr}) AS DOUBLE) ELSE {expr} END)"

    def div(self, a: str, b: str) -> str:
        # b = ±0: NaN for 0/0 and NaN/0, else ±inf by the signs (atan2(−0, −1) = −π tells −0 from +0)
        inf = self.double(math.inf)
        zero = (f"(CASE WHEN isnan({a}) OR {a} = 0 THEN {self.double(math.nan)} "
                f"WHEN ({a} > 0) = (atan2({b}, -1.0e0) > 0) THEN {inf} ELSE -{inf} END)")
        return f"(CASE WHEN {b} = 0 THEN {zero} ELSE {a} / {b} END)"

    def sorted_desc(self, expr: str) -> str:
        return f"sort_array(collect_list({expr}), false)"

    def broadcast(self, alias: str) -> str:
        return f"/*+ BROADCAST({alias}) */"

    def quantiles_disc(self, expr: str, qs: Sequence[float]) -> str:
        raise PolicyError("Spark computes exact order statistics by selection, not with quantile_disc.")


SPARK = SparkDialect()


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
    Measures in ``plain`` are known to need no guard (whole numbers divided by whole thresholds).

    The parts are computed one layer at a time — T(a), v/T, ⌈v/T⌉, ⌈v/T⌉·T, the guarded count —
    each a column of its own (``__t<j>``, ``__q<j>``, ``__k<j>``, ``__p<j>``, ``__c<j>``), so no
    expression is written twice: the SQL stays short for any number of measures and groups."""
    measures = list(thr.measures)
    for a in per_measure:
        if a not in measures:
            raise PolicyError(f"No splitting threshold for '{a}'.")
    v = [d.as_double(d.ident(a)) for a in measures]
    js = range(len(measures))

    def layer(rel: str, cols: list[str]) -> str:
        return f"SELECT *, {', '.join(cols)} FROM {rel}" if cols else f"SELECT * FROM {rel}"

    rel = layer(source, [f"{threshold_sql(d, thr, a, kinds)} AS __t{j}" for j, a in enumerate(measures)])
    rel = layer(f"({rel})", [f"({v[j]} / __t{j}) AS __q{j}" for j in js])
    rel = layer(f"({rel})", [f"{d.ceil(f'__q{j}')} AS __k{j}" for j in js])
    guarded = [j for j, a in enumerate(measures) if a not in plain]
    rel = layer(f"({rel})", [f"(__k{j} * __t{j}) AS __p{j}" for j in guarded])
    rel = layer(f"({rel})", [f"{_pieces_sql(d, v[j], j) if j in guarded else f'__k{j}'} AS __c{j}" for j in js])
    one = d.double(1.0)
    joint = f"greatest({one}, {', '.join(f'__c{j}' for j in js)})"
    cols = [f"{joint} AS __m"] + [f"greatest({one}, __c{measures.index(a)}) AS __m_{i}" for i, a in enumerate(per_measure)]
    return SplitColumns(f"SELECT *, {', '.join(cols)} FROM ({rel})", "__m",
                        {a: f"__m_{i}" for i, a in enumerate(per_measure)})


def _pieces_sql(d: Dialect, v: str, j: int) -> str:
    """⌈v/t⌉ corrected so that pieces·t ≥ v in real arithmetic (splitting._pieces): k = ⌈fl(v/t)⌉,
    one more when fl(k·t) < v, and on a tie fl(k·t) = v when the product's rounding error is
    negative. The correction can only apply when fl(v/t) is a whole number (otherwise v/t lies
    strictly between k − 1 and k, so k·t > v exactly), so the guard runs for those records only.
    t, q = fl(v/t), k and p = fl(k·t) are the columns ``__t<j>``, ``__q<j>``, ``__k<j>``, ``__p<j>``."""
    q, k, t, p = f"__q{j}", f"__k{j}", f"__t{j}", f"__p{j}"
    err = _two_product_error(k, t, p, d)
    return (f"(CASE WHEN {q} <> {d.floor(q)} THEN {k} WHEN {p} < {v} THEN {k} + 1 WHEN {p} > {v} THEN {k} "
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


#: Edge lists longer than this are searched from an estimate where the dialect prefers it.
ESTIMATE_EDGES = 32


@dataclass(frozen=True)
class Bucket:
    """:func:`bucket_columns`' answer: ``items`` to add to the SELECT list (may be empty) and
    ``value``, the SQL of the bucket index in that SELECT list."""

    items: str
    value: str

    def select(self, *more: str) -> str:
        """The select-list items, followed by ``more``."""
        return ", ".join(x for x in (self.items, *more) if x)


def bucket_columns(d: Dialect, x: str, edges: Sequence[float], name: str, *, side: str = "left",
                   estimate: str | None = None) -> Bucket:
    """:func:`bucket_sql` (``numpy.searchsorted``) for use in one SELECT list.

    For a dialect with :attr:`Dialect.estimated_buckets` (Spark: a CASE tree of hundreds of edges
    costs seconds to compile) and more than :data:`ESTIMATE_EDGES` edges, ``estimate`` — SQL of a
    number within one of the answer, e.g. from a logarithm — is corrected by comparing ``x`` with
    the edges around it: three columns of the same SELECT, referred to by name (an array of the
    edges ``__E_<name>``, the estimate ``__c_<name>``, the answer ``name``); where the estimate is
    off by more than one the answer is −1, and the caller counts again with ``estimate=None``.
    Exact either way. Otherwise the answer is the CASE tree itself (no column)."""
    e = [float(v) for v in edges]
    if estimate is None or not d.estimated_buckets or len(e) <= ESTIMATE_EDGES:
        return Bucket("", bucket_sql(d, x, e, side=side))
    n = len(e)
    op = "<" if side == "left" else "<="
    arr, c = f"__E_{name}", f"__c_{name}"

    def counted(i: str) -> str:  # edge i (0-based) is counted: edges[i] < x (left) or ≤ x (right)
        return f"(try_element_at({arr}, greatest({i} + 1, 1)) {op} {x})"

    # the estimate as an integer in [0, n] (NaN and ±inf clamped before the cast, which ANSI mode checks)
    c0 = (f"least(greatest(CAST(least(greatest(COALESCE({estimate}, {d.double(0.0)}), {d.double(-1.0)}), "
          f"{d.double(n + 1.0)}) AS INT), 0), {n})")
    before = f"({c} = 0 OR {counted(f'{c} - 1')})"       # every edge below c is counted
    at = f"({c} < {n} AND {counted(c)})"                  # edge c is counted too
    fixed = (f"(CASE WHEN {before} AND NOT {at} THEN {c} "
             f"WHEN NOT {before} AND ({c} = 1 OR {counted(f'{c} - 2')}) THEN {c} - 1 "
             f"WHEN {at} AND NOT ({c} + 1 < {n} AND {counted(f'{c} + 1')}) THEN {c} + 1 ELSE -1 END)")
    return Bucket(f"array({', '.join(d.double(v) for v in e)}) AS {arr}, {c0} AS {c}, {fixed} AS {name}", name)


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
            if isinstance(n.op, ast.Div):
                return d.div(a, b)
            op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}[type(n.op)]
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


@dataclass(frozen=True)
class BudgetCategories:
    """Each record's standing against a budget function E, as SQL: ``invalid`` (no valid ε: E(r)
    missing, NaN or ≤ 0), ``below`` (E(r) < ε̌·(1 − 10⁻⁹)), ``index`` (the domain 1..L of the capped
    E(r), for the other records) and ``unmatched`` (a per-group budget without default: the
    records no part covers) — the checks of :meth:`prdp_core.mechanisms.prdp.budget.BudgetFunction.__call__` and
    :meth:`~prdp_core.mechanisms.prdp.domains.DomainPartition.index`. ``standing``, when given, is
    one expression of all three (−1: no valid ε, 0: below ε̌, else the domain)."""

    invalid: str
    below: str
    index: str
    unmatched: str | None = None
    standing: str | None = None


def budget_categories(d: Dialect, raw: str, budget: Any, unmatched: str | None = None) -> BudgetCategories:
    """:class:`BudgetCategories` from SQL ``raw`` giving each record's raw budget exactly."""
    lo_ok = d.double(budget.eps_min * (1 - 1e-9))
    eps = f"least(greatest({raw}, {d.double(budget.eps_min)}), {d.double(budget.eps_max)})"
    return BudgetCategories(f"{raw} IS NULL OR {d.isnan(raw)} OR {raw} <= 0", f"{raw} < {lo_ok}",
                            domain_index_sql(d, eps, budget.eps_min, budget.domains().L), unmatched)


def monotone_budget_categories(d: Dialect, budget: Any, kinds: ColumnKinds) -> BudgetCategories | None:
    """:class:`BudgetCategories` of a budget of one numeric column v that is declared
    non-increasing (the presets α/v, α/√v, α/(ln v)^k) and refuses values outside [0, ∞), as
    comparisons of v with thresholds found on the driver by the numpy kernel itself
    (:func:`step_edges`): exact whatever the engine's ``log``, ``exp`` and ``pow``. A record's
    standing — no valid ε, below ε̌, or domain i — is a non-increasing step function of v, so it
    is L + 1 comparisons at most. None for other budgets (or when the kernel is seen not to be
    monotone on a dense grid)."""
    shape = budget.shape
    col = shape.value_column
    if col is None or shape.decreasing() is not True or kinds.get(col) != "number":
        return None
    dp = budget.domains()
    lo_ok = budget.eps_min * (1 - 1e-9)

    def score(v: np.ndarray) -> np.ndarray:  # −1: no valid budget, 0: below ε̌, else the domain
        v = np.asarray(v, dtype=float)
        with np.errstate(all="ignore"):
            r = np.asarray(shape.raw({col: v}, v.size), dtype=float)
            s = dp.index(np.clip(np.nan_to_num(r, nan=budget.eps_min), budget.eps_min, budget.eps_max))
        s = s.astype(np.int64)
        s[r < lo_ok] = 0
        s[~(r > 0)] = -1
        return s

    if not np.all(score(np.array([math.nan, -5e-324, -1.0, -1e300, -math.inf])) == -1):
        return None
    grid = np.concatenate(([0.0], np.geomspace(5e-324, 1.7e308, 200_001), [math.inf]))
    if np.any(np.diff(score(grid)) > 0):
        return None
    top, bottom = int(score(np.array([0.0]))[0]), int(score(np.array([math.inf]))[0])
    try:
        edges = step_edges(lambda x: -score(x), 0.0, math.inf, range(-top + 1, -bottom + 1))
    except ParameterError:
        return None
    v = f"COALESCE({d.as_double(d.ident(col))}, {d.double(math.nan)})"
    sc = f"(CASE WHEN {d.isnan(v)} OR {v} < 0 THEN -1 ELSE {top} - {bucket_sql(d, v, edges, side='right')} END)"
    return BudgetCategories(f"{sc} = -1", f"{sc} = 0", sc, standing=sc)


def domain_index_sql(d: Dialect, eps: str, eps_min: float, L: int) -> str:
    """:meth:`prdp_core.mechanisms.prdp.domains.DomainPartition.index` of a capped budget ``eps`` ∈ [ε̌, ε̂]."""
    q = f"({eps} / {d.double(eps_min)})"
    return f"least(greatest({ceil_log2_sql(d, q)}, 1), {int(L)})"


def value_bin_columns(d: Dialect, v: str, bins: Any, name: str, *, estimate: bool = True) -> str:
    """Select-list items adding the column ``name`` = :func:`prdp_core.engines.memory.value_bins`
    (−1 where an estimated search missed: count again with ``estimate=False``, see
    :func:`bucket_columns`)."""
    if bins.kind == "pow2":
        e = ceil_log2_sql(d, v)
        return (f"(CASE WHEN {v} <= 0 THEN 0 ELSE least(greatest({e}, {bins.j0}), {bins.J + 1}) - {bins.j0} END) "
                f"AS {name}")
    k = f"ceil(({d.log2(v)} - {d.double(float(bins.j0))}) * {d.double(float(bins.steps))})"
    if not d.exact_log2:  # the numpy kernel's bins of (0, U]: comparisons with their lower ends
        from .memory import value_bins

        edges = step_edges(lambda x: value_bins(x, bins), 5e-324, float(bins.U), range(2, bins.m))
        n = bucket_columns(d, v, edges, f"{name}_n", side="right", estimate=k if estimate else None)
        missed = f"WHEN {n.value} < 0 THEN -1 " if n.items else ""
        return n.select(f"(CASE WHEN {v} <= 0 THEN 0 WHEN {v} > {d.double(bins.U)} THEN {bins.m} "
                        f"{missed}ELSE 1 + {n.value} END) AS {name}")
    return (f"(CASE WHEN {v} <= 0 THEN 0 WHEN {v} > {d.double(bins.U)} THEN {bins.m} "
            f"ELSE CAST(least(greatest({k} + 1, 1), {bins.m - 1}) AS BIGINT) END) AS {name}")


def step_edges(f: Callable[[np.ndarray], np.ndarray], lo: float, hi: float, levels: Sequence[int]) -> np.ndarray:
    """For a step function ``f`` (numpy kernel: doubles → integers) non-decreasing on [lo, hi]
    (0 ≤ lo ≤ hi, ``hi`` may be inf), the smallest double x ∈ [lo, hi] with f(x) ≥ k for each
    level k, ascending — levels that f does not reach on [lo, hi] are left out. Then, for every
    x in [lo, hi], f(x) = f(lo) + #{edges ≤ x} when the levels are f(lo) + 1, f(lo) + 2, …

    Found by bisection over the doubles (the bits of non-negative doubles are ordered as their
    values), with f itself: the edges are exact, whatever f's rounding. ParameterError when f is
    seen to decrease (then it cannot be written as comparisons)."""
    ks = np.asarray(list(levels), dtype=np.int64)
    if not ks.size:
        return np.zeros(0)
    bits = lambda x: np.asarray(x, dtype=np.float64).view(np.int64)  # noqa: E731
    val = lambda b: np.asarray(b, dtype=np.int64).view(np.float64)  # noqa: E731
    lo_b, hi_b = int(bits(np.float64(lo))), int(bits(np.float64(hi)))
    with np.errstate(all="ignore"):
        at_lo = int(np.asarray(f(np.array([float(lo)])))[0])
        at_hi = int(np.asarray(f(np.array([float(hi)])))[0])
        ks = ks[(ks > at_lo) & (ks <= at_hi)]
        a = np.full(ks.size, lo_b, dtype=np.int64)   # f(a) < k
        b = np.full(ks.size, hi_b, dtype=np.int64)   # f(b) ≥ k
        while ks.size and np.any(b - a > 1):
            mid = a + (b - a) // 2
            up = np.asarray(f(val(mid))) >= ks
            b = np.where(up, mid, b)
            a = np.where(up, a, mid)
        edges = val(b)
        if edges.size and (np.any(np.diff(edges) < 0) or np.any(np.asarray(f(edges)) < ks)
                           or np.any(np.asarray(f(val(b - 1))) >= ks)):
            raise ParameterError("This function is not monotone, so its steps cannot be found by comparisons.")
    return edges


Compiler = Callable[[Shape], BudgetSQL]

__all__ = ["DUCKDB", "SPARK", "Bucket", "BudgetCategories", "BudgetSQL", "Dialect", "SparkDialect", "SplitColumns", "bucket_sql",
           "bucket_columns", "budget_categories", "budget_sql", "ceil_log2_sql", "domain_index_sql", "equals", "filter_sql",
           "monotone_budget_categories", "split_columns", "step_edges", "threshold_sql", "value_bin_columns"]
