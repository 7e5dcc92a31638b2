"""SQL for the engine statistics: one builder for every SQL engine, dialects kept in one place.

The DuckDB engine (and a Spark engine after it) computes prdp_core's statistics as SQL over a
relation. Everything that must give **the same numbers as numpy** is written here once:

* split counts m(r) = max_a ⌈r(a)/T(a)⌉ with the exact float guard of
  :func:`prdp_core.core.splitting._pieces` (k·t ≥ v in real arithmetic; Dekker's TwoProduct decides
  ties) — IEEE operations give the same bits in every engine;
* ⌈log₂ x⌉ exactly (the domain index of :class:`prdp_core.core.domains.DomainPartition`, the power-of-two
  bins of the clipped sum): an estimate from ``log2`` corrected by exact comparisons with powers
  of two;
* bucket indices over explicit edges (a balanced CASE tree: ``numpy.searchsorted`` semantics).

Budget functions E(r), privacy domains and value bins are compiled by :mod:`.sql_budget` (exact
comparisons with thresholds found on the driver, for engines whose ``log2`` is not numpy's:
:attr:`Dialect.exact_log2`).

User text — column names, group and filter values — reaches SQL only through :meth:`Dialect.ident`
and :meth:`Dialect.string`, which quote it; numbers only through :meth:`Dialect.double`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from ..core.errors import ParameterError, PolicyError
from ..core.splitting import DEFAULT_KEY, Thresholds
from ..core.workload import Filter

#: Each column's kind ("number", "text", "bool", "other"), read only.
ColumnKinds = Mapping[str, str]
#: Ascending bucket edges: a list or a numpy array.
Edges = Sequence[float] | npt.NDArray[np.floating]


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
    """:meth:`prdp_core.core.workload.Filter.mask` in SQL (never NULL): a numeric column compares numbers
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
    measure in ``per_measure`` — the numbers :func:`prdp_core.core.splitting.split_counts` gives.
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
    cols = [f"{joint} AS __m"] + [f"greatest({one}, __c{measures.index(a)}) AS __m_{i}"
                                  for i, a in enumerate(per_measure)]
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


def bucket_sql(d: Dialect, x: str, edges: Edges, *, side: str = "left") -> str:
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


def bucket_columns(d: Dialect, x: str, edges: Edges, name: str, *, side: str = "left",
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


__all__ = ["DUCKDB", "SPARK", "Bucket", "ColumnKinds", "Dialect", "SparkDialect", "SplitColumns", "bucket_columns",
           "bucket_sql", "ceil_log2_sql", "equals", "filter_sql", "split_columns", "threshold_sql"]
