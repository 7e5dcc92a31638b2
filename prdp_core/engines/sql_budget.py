"""SQL of budget functions, privacy domains and value bins, for every SQL engine.

Budget functions E(r) are compiled from the whitelisted syntax tree of
:mod:`prdp_core.mechanisms.prdp.budget` with numpy's NaN semantics (comparisons with NaN are false,
min/max propagate NaN). Operations that IEEE rounds correctly (+ − × ÷, sqrt, abs, min, max,
comparisons, ``where``) give the same bits as numpy; ``log``, ``exp`` and ``**`` come from each
engine's math library and may differ in the last bit, so :func:`budget_sql` reports whether its SQL is
exact and the engine decides. Monotone step functions of one value computed by a numpy kernel (the
log-grid bins of the maximum, the bins of a realized-loss histogram, the domain of a monotone budget)
become exact comparisons with thresholds found on the driver by bisection over the doubles
(:func:`step_edges`). The dialects and the other SQL builders are in :mod:`prdp_core.engines.sql`.
"""


from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..core.errors import ExpressionError, ParameterError, PolicyError
from ..core.expressions import _quote_names
from ..core.shapes import Constant, Expression, Groups, Inverse, Log, Shape, Sqrt, Step
from .sql import ColumnKinds, Dialect, bucket_columns, bucket_sql, ceil_log2_sql, equals


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
            return d.double(float(n.value))  # type: ignore[arg-type]  # a number: text goes to text_compare
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
            fname = self.name(n.func.id)  # type: ignore[attr-defined]  # the whitelist compiled the expression first: a call is of a plain name
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

    def compare(self, op: ast.cmpop, left: ast.AST, right: ast.AST, parts: Sequence[ast.AST]) -> str:
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
    :meth:`~prdp_core.core.domains.DomainPartition.index`. ``standing``, when given, is
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
    """:meth:`prdp_core.core.domains.DomainPartition.index` of a capped budget ``eps`` ∈ [ε̌, ε̂]."""
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


__all__ = ["BudgetCategories", "BudgetSQL", "budget_categories", "budget_sql", "domain_index_sql",
           "monotone_budget_categories", "step_edges", "value_bin_columns"]
