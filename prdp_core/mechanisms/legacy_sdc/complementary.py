"""Complementary suppression for one- and two-dimensional tables with published margins, and its audit.

Suppressing a sensitive cell alone protects nothing when the margins are published: the cell is the margin
minus its published neighbours. Complementary suppression withholds further cells until every sensitive cell
can only be narrowed to an interval that reaches at least its protection level above its value (and as far
below it, down to 0: a magnitude is never negative).

**The audit** (:func:`audit`) is what an intruder can compute: the published cells are known, every
suppressed cell is an unknown ≥ 0, and the table's additivity (interior cells add up to their margins, the
margins to the grand total) gives linear equations. For each suppressed cell two linear programs (scipy's
HiGHS) give the smallest and largest value it can take — the exact feasible interval for these shapes.

**The suppression** (:func:`suppress`) is a greedy heuristic checked by that audit: for each sensitive cell,
largest protection level first, while the audit finds it under-protected, it withholds one more cell of an
equation that pins it (a row, a column or a margin with a single unknown, else any equation of its unknowns),
preferring the smallest cell that covers the missing protection, else the largest; withholding more never
narrows any interval, so the loop ends with every sensitive cell protected, at worst with the whole table
suppressed. It does not minimise the suppressed total (an optimal pattern is an integer program:
τ-ARGUS's optimal method); it is exact in what it checks.

Tables of more than two dimensions have linked margins the equations here do not cover (a three-way table's
cells sit in three planes of margins, and published sub-tables link further): they are refused, naming what
they need (:data:`MAX_DIMS`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import linprog
from scipy.sparse import csr_matrix

from ...core.errors import ParameterError
from .cells import TOTAL, CellTable

#: Largest number of dimensions complementary suppression is computed for.
MAX_DIMS = 2
#: Relative tolerance of the audit's comparisons (linear programs are solved to about 1e-9).
TOL = 1e-7


@dataclass(frozen=True)
class Suppression:
    """The outcome of :func:`suppress`: ``status`` per cell of the table (``published``, ``primary`` or
    ``complementary``) and the final :func:`audit` of the suppressed cells."""

    status: pd.Series
    audit: pd.DataFrame

    @property
    def suppressed(self) -> np.ndarray:
        return (self.status != "published").to_numpy()

    @property
    def protected(self) -> bool:
        """True when the audit finds every suppressed cell protected."""
        return bool(self.audit["protected"].all()) if len(self.audit) else True


def equations(table: CellTable) -> csr_matrix:
    """The table's additivity as a sparse matrix A (one row per equation, one column per cell): A · values = 0.

    Two dimensions: each row's interior cells minus the row total, each column's minus the column total, the
    row totals minus the grand total and the column totals minus the grand total. One dimension: the cells
    minus the grand total. No dimension: none."""
    cells, dims = table.cells, table.dims
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    eq = 0

    def add(members: np.ndarray, total: int) -> None:
        nonlocal eq
        if len(members) == 0:
            return
        rows.extend([eq] * (len(members) + 1))
        cols.extend([*members.tolist(), total])
        vals.extend([1.0] * len(members) + [-1.0])
        eq += 1

    kind = cells["kind"].to_numpy()
    grand = int(np.flatnonzero(kind == "total")[0])
    if len(dims) == 1:
        add(np.flatnonzero(kind == "interior"), grand)
    elif len(dims) == 2:
        a, b = (cells[d].to_numpy() for d in dims)
        interior = kind == "interior"
        for this, other in ((a, b), (b, a)):
            margin = (kind == "margin") & (other == TOTAL) & (this != TOTAL)
            where = {v: int(i) for i, v in zip(np.flatnonzero(margin), this[margin])}
            for v, i in where.items():
                add(np.flatnonzero(interior & (this == v)), i)
            add(np.flatnonzero(margin), grand)
    return csr_matrix((vals, (rows, cols)), shape=(eq, len(cells)))


def _bounds(A: csr_matrix, values: np.ndarray, free: np.ndarray, cell: int) -> tuple[float, float]:
    """The smallest and largest value of ``cell`` (one of ``free``) given the other cells' values."""
    fidx = np.flatnonzero(free)
    pos = int(np.searchsorted(fidx, cell))
    As = A[:, fidx]
    used = np.flatnonzero(np.asarray(abs(As).sum(axis=1)).ravel() > 0)
    if len(used) == 0:
        return 0.0, float("inf")
    As = As[used]
    rhs = -(A[used][:, ~free] @ values[~free])
    c = np.zeros(len(fidx))
    out = []
    for sign in (1.0, -1.0):
        c[pos] = sign
        res = linprog(c, A_eq=As, b_eq=rhs, bounds=(0, None), method="highs")
        if res.status == 3:  # unbounded: the cell can grow without limit
            out.append(float("inf"))
        elif res.status != 0:
            raise ParameterError(f"The audit's linear program failed ({res.message}).",
                                 hint="The table's cells do not add up to its margins.")
        else:
            out.append(sign * float(res.fun))
    return max(out[0], 0.0), out[1]


def audit(table: CellTable, suppressed: np.ndarray, protection: np.ndarray) -> pd.DataFrame:
    """The interval each suppressed cell can be narrowed to from the published cells and the table's
    additivity: ``cell`` (row of ``table.cells``), ``value``, ``protection`` (the level asked of it; 0 for a
    complementary cell), ``lower``, ``upper`` and ``protected`` (upper ≥ value + protection and lower ≤ value −
    min(protection, value))."""
    A = equations(table)
    values = table.cells["value"].to_numpy(dtype=float)
    free = np.asarray(suppressed, dtype=bool)
    rows = []
    for cell in np.flatnonzero(free):
        lo, hi = _bounds(A, values, free, int(cell))
        v, p = values[cell], float(protection[cell])
        rows.append({"cell": int(cell), "value": v, "protection": p, "lower": lo, "upper": hi,
                     "protected": _covers(v, p, lo, hi)})
    return pd.DataFrame(rows, columns=["cell", "value", "protection", "lower", "upper", "protected"])


def _covers(v: float, p: float, lo: float, hi: float) -> bool:
    tol = TOL * max(abs(v), 1.0)
    return hi >= v + p - tol and lo <= v - min(p, v) + tol


def suppress(table: CellTable, sensitive: np.ndarray, protection: np.ndarray) -> Suppression:
    """Withhold the sensitive cells and enough complementary cells that the audit finds every sensitive cell
    protected (the greedy of the module's description). ``sensitive`` and ``protection`` come from
    :func:`prdp_core.mechanisms.legacy_sdc.primary_suppression`. Tables of more than :data:`MAX_DIMS` dimensions
    are refused."""
    if len(table.dims) > MAX_DIMS:
        raise ParameterError(
            f"Complementary suppression is computed here for tables of one or two dimensions with their margins; "
            f"this table has {len(table.dims)} ({', '.join(table.dims)}).",
            hint="A table of three or more dimensions, or several linked tables, needs a method that models every "
                 "linked margin (e.g. τ-ARGUS's modular or optimal method): group by at most two columns here.")
    A = equations(table).tocsc()
    values = table.cells["value"].to_numpy(dtype=float)
    sens = np.asarray(sensitive, dtype=bool)
    prot = np.where(sens, np.asarray(protection, dtype=float), 0.0)
    free = sens.copy()
    member = [set(A[:, j].indices.tolist()) for j in range(A.shape[1])]  # the equations each cell is in
    cells_of = A.T.tocsc()
    margin = (table.cells["kind"] != "interior").to_numpy() if table.dims else np.zeros(len(values), dtype=bool)
    for cell in sorted(np.flatnonzero(sens), key=lambda i: -prot[i]):
        for _ in range(len(values)):
            lo, hi = _bounds(A.tocsr(), values, free, int(cell))
            v, p = values[cell], prot[cell]
            if _covers(v, p, lo, hi):
                break
            extra = _next_cell(cell, free, values, member, cells_of, need=max(v + p - hi, 0.0), margin=margin)
            if extra is None:
                break  # nothing left to withhold: the audit reports the cell
            free[extra] = True
    status = pd.Series(np.where(sens, "primary", np.where(free, "complementary", "published")), name="status")
    return Suppression(status=status, audit=audit(table, free, prot))


def _next_cell(cell: int, free: np.ndarray, values: np.ndarray, member: list[set[int]], cells_of: csr_matrix,
               need: float, margin: np.ndarray) -> int | None:
    """The next cell to withhold for ``cell``: from the equations pinning the suppressed cells linked to it (an
    equation with a single unknown), else from any equation of them; interior cells before margins (a published
    margin is what users read most); the smallest cell covering ``need``, else the largest (a zero cell last: it
    only lets others grow downwards)."""
    linked = _component(cell, free, member, cells_of)
    eqs = set().union(*(member[c] for c in linked))
    pinned = [e for e in eqs if sum(free[c] for c in cells_of[:, e].indices) == 1]
    for group, margins in ((pinned, False), (sorted(eqs), False), (pinned, True), (sorted(eqs), True)):
        cand = np.array(sorted({int(c) for e in group for c in cells_of[:, e].indices
                                if not free[c] and margin[c] == margins}), dtype=int)
        if len(cand) == 0:
            continue
        vals = values[cand]
        covering = cand[vals >= need]
        if len(covering):
            return int(covering[np.argmin(values[covering])])
        return int(cand[np.argmax(vals)])
    return None


def _component(cell: int, free: np.ndarray, member: list[set[int]], cells_of: csr_matrix) -> list[int]:
    """The suppressed cells linked to ``cell`` through equations holding suppressed cells."""
    seen, todo = {cell}, [cell]
    while todo:
        c = todo.pop()
        for e in member[c]:
            for d in cells_of[:, e].indices:
                if free[d] and d not in seen:
                    seen.add(int(d))
                    todo.append(int(d))
    return sorted(seen)
