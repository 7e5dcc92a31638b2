"""Complementary suppression for one- and two-dimensional tables with published margins, and its audit.

Suppressing a sensitive cell alone protects nothing when the margins are published: the cell is the margin
minus its published neighbours. Complementary suppression withholds further cells until every sensitive cell
can only be narrowed to an interval that reaches at least its protection level above its value (and as far
below it, down to 0: a magnitude is never negative).

**The audit** (:func:`audit`) is what an intruder can compute: the published cells are known, every
suppressed cell is an unknown ≥ 0, and the table's additivity (interior cells add up to their margins, the
margins to the grand total) gives linear equations. For each suppressed cell two linear programs (scipy's
HiGHS) give the smallest and largest value it can take — the exact feasible interval for these shapes.

**The suppression** (:func:`suppress`) protects interior cells by patterns that are safe by construction (other
cells of the row in one dimension; the cheapest rectangle in two) and falls back to a greedy heuristic checked
by that audit: for each sensitive cell left, largest protection level first, while the audit finds it
under-protected, it withholds one more cell of an equation that pins it (a row, a column or a margin with a
single unknown, else any equation of its unknowns), preferring the smallest cell that covers the missing
protection, else the largest; withholding more never
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
from .cells import MARGIN, CellTable

#: Largest number of dimensions complementary suppression is computed for.
MAX_DIMS = 2
#: Relative tolerance of the audit's comparisons (linear programs are solved to about 1e-9).
TOL = 1e-7


@dataclass(frozen=True)
class Suppression:
    """The outcome of :func:`suppress`: ``status`` per cell of the table (``published``, ``primary`` or
    ``complementary``) and the final :func:`audit` of the sensitive cells."""

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
        a, b = table.codes[:, 0], table.codes[:, 1]
        interior = kind == "interior"
        for this, other in ((a, b), (b, a)):
            margin = (kind == "margin") & (other == MARGIN) & (this != MARGIN)
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


def audit(table: CellTable, suppressed: np.ndarray, protection: np.ndarray,
          only: np.ndarray | None = None) -> pd.DataFrame:
    """The interval each suppressed cell (of ``only``, default every one) can be narrowed to from the published
    cells and the table's additivity: ``cell`` (row of ``table.cells``), ``value``, ``protection`` (the level
    asked of it; 0 for a complementary cell), ``lower``, ``upper`` and ``protected`` (upper ≥ value + protection
    and lower ≤ value − min(protection, value))."""
    A = equations(table)
    values = table.cells["value"].to_numpy(dtype=float)
    free = np.asarray(suppressed, dtype=bool)
    rows = []
    for cell in np.flatnonzero(free if only is None else free & np.asarray(only, dtype=bool)):
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
    protected. ``sensitive`` and ``protection`` come from
    :func:`prdp_core.mechanisms.legacy_sdc.primary_suppression`. Tables of more than :data:`MAX_DIMS` dimensions
    are refused.

    First by patterns that protect by construction: in one dimension, other cells of the row whose values add up
    to the protection level (each can fall to 0 while the sensitive cell rises); in two dimensions, the cheapest
    rectangles through the cell (:class:`_Grid`: interior cells (i, j), (i, j′), (i′, j), (i′, j′) move +d, −d,
    −d, +d and keep every margin; margins take part by the same rule, at a higher cost); cells already withheld
    cost nothing, so patterns share cells. A cell no pattern covers (a sensitive grand total of a one-dimensional
    table, say) then gets the greedy of the module's description, checked by the audit."""
    if len(table.dims) > MAX_DIMS:
        raise ParameterError(
            f"Complementary suppression is computed here for tables of one or two dimensions with their margins; "
            f"this table has {len(table.dims)} ({', '.join(table.dims)}).",
            hint="A table of three or more dimensions, or several linked tables, needs a method that models every "
                 "linked margin (e.g. τ-ARGUS's modular or optimal method): group by at most two columns here.")
    values = table.cells["value"].to_numpy(dtype=float)
    sens = np.asarray(sensitive, dtype=bool)
    prot = np.where(sens, np.asarray(protection, dtype=float), 0.0)
    free = sens.copy()
    interior = table.interior() if table.dims else np.zeros(len(values), dtype=bool)
    order = [int(i) for i in sorted(np.flatnonzero(sens), key=lambda i: -prot[i])]
    covered = np.zeros(len(values), dtype=bool)
    if len(table.dims) == 1:
        for cell in order:
            if interior[cell]:
                covered[cell] = _row_pattern(cell, free, values, interior, prot[cell])
    elif len(table.dims) == 2:
        grid = _Grid(table)
        for cell in order:
            covered[cell] = grid.protect(cell, free, values, prot[cell])
    rest = [c for c in order if not covered[c]]
    if rest:
        _greedy(table, rest, free, values, prot)
    status = pd.Series(np.where(sens, "primary", np.where(free, "complementary", "published")), name="status")
    return Suppression(status=status, audit=audit(table, free, prot, only=sens))


def _row_pattern(cell: int, free: np.ndarray, values: np.ndarray, interior: np.ndarray, need: float) -> bool:
    """One dimension: withhold other cells until the withheld others add up to ``need`` (the cell can then rise
    by their sum); the smallest cell covering what is missing, else the largest. False if the row falls short."""
    others = interior.copy()
    others[cell] = False
    while True:
        missing = need - values[others & free].sum()
        if missing <= TOL * max(values[cell], 1.0) and (others & free).any():
            return True
        cand = np.flatnonzero(others & ~free)
        if len(cand) == 0:
            return False
        covering = cand[values[cand] >= missing]
        pick = covering[np.argmin(values[covering])] if len(covering) else cand[np.argmax(values[cand])]
        free[pick] = True


class _Grid:
    """A two-dimensional table with its margins as one (rows + 1) × (columns + 1) matrix: the interior cells, the
    row totals in the last column, the column totals in the last row and the grand total in the corner.

    A rectangle through the sensitive cell (a, b) and another row a′ and column b′ of this matrix moves its
    corners by ±d and keeps every equation: along a row, two cells of the same type (both interior or both
    totals) move oppositely and an interior cell moves with its total; the same along a column. The cell can
    rise by d as far as every corner moving down allows (each ≥ d) and fall as far as every corner moving down
    then allows; rectangles through different rows and columns add their room."""

    #: A withheld margin costs this many times its value (users read the margins most).
    MARGIN_COST = 10.0

    def __init__(self, table: CellTable) -> None:
        c = table.cells
        a, b = table.codes[:, 0], table.codes[:, 1]
        rows = np.unique(a[a != MARGIN])
        cols = np.unique(b[b != MARGIN])
        ri = np.where(a == MARGIN, len(rows), np.searchsorted(rows, a))
        ci = np.where(b == MARGIN, len(cols), np.searchsorted(cols, b))
        self.index = np.full((len(rows) + 1, len(cols) + 1), -1, dtype=np.int64)
        self.index[ri, ci] = np.arange(len(c))
        self.where = {int(cell): (int(i), int(j)) for cell, (i, j) in enumerate(zip(ri, ci))}
        self.total_row = np.arange(len(rows) + 1) == len(rows)
        self.total_col = np.arange(len(cols) + 1) == len(cols)

    def protect(self, cell: int, free: np.ndarray, values: np.ndarray, need: float) -> bool:
        """Withhold rectangles through ``cell`` until it can rise by ``need`` and fall by min(need, its value);
        cheapest first, cells already withheld free. False (nothing withheld) when the rectangles fall short."""
        a, b = self.where[cell]
        idx = self.index
        present = idx >= 0
        val = np.where(present, values[np.maximum(idx, 0)], np.nan)
        cost = np.where(present & ~free[np.maximum(idx, 0)], val, 0.0)
        cost = np.where(self.total_row[:, None] | self.total_col[None, :], cost * self.MARGIN_COST, cost)
        s_row = np.where(self.total_col == self.total_col[b], -1.0, 1.0)  # corners (a, b′)
        s_col = np.where(self.total_row == self.total_row[a], -1.0, 1.0)  # corners (a′, b)
        s_diag = s_col[:, None] * s_row[None, :]  # corners (a′, b′)
        inf = np.inf
        row_v, col_v = val[a, :], val[:, b]
        def room(sign: float) -> np.ndarray:  # how far the corners moving down (sign) allow
            return np.minimum(np.minimum(np.where(s_row == sign, row_v, inf)[None, :],
                                         np.where(s_col == sign, col_v, inf)[:, None]),
                              np.where(s_diag == sign, val, inf))

        up, down = room(-1.0), np.minimum(room(1.0), values[cell])
        valid = present & present[a, :][None, :] & present[:, b][:, None]
        valid[a, :] = False
        valid[:, b] = False
        up, down = np.where(valid, np.nan_to_num(up, nan=0.0), 0.0), np.where(valid, np.nan_to_num(down, nan=0.0), 0.0)
        price = cost + cost[a, :][None, :] + cost[:, b][:, None]
        need_up, need_down = need, min(need, values[cell])
        tol = TOL * max(need, 1.0)
        chosen: list[tuple[int, int]] = []
        got_up = got_down = 0.0
        while got_up < need_up - tol or got_down < need_down - tol:
            rem_up, rem_down = max(need_up - got_up, 0.0), max(need_down - got_down, 0.0)
            usable = valid & ((up > tol) | (rem_up <= tol)) & ((down > tol) | (rem_down <= tol))
            if not usable.any():
                return False
            enough = usable & (up >= rem_up - tol) & (down >= rem_down - tol)
            if enough.any():
                pick = np.where(enough, price, inf)
            else:  # the most room per unit of cost
                score = np.minimum(up / max(rem_up, tol), 1.0) + np.minimum(down / max(rem_down, tol), 1.0)
                pick = np.where(usable, -score / (price + 1.0), inf)
            xi, yi = np.unravel_index(int(np.argmin(pick)), pick.shape)
            chosen.append((int(xi), int(yi)))
            got_up += up[xi, yi]
            got_down += down[xi, yi]
            valid[xi, :] = False  # the next rectangle through other rows and columns: their room adds
            valid[:, yi] = False
        for x, y in chosen:
            for cell_ in (idx[a, y], idx[x, b], idx[x, y]):
                free[cell_] = True
        return True


def _greedy(table: CellTable, cells: list[int], free: np.ndarray, values: np.ndarray, prot: np.ndarray) -> None:
    """The audited greedy for ``cells``: withhold one more cell while the audit finds the cell under-protected."""
    A = equations(table).tocsc()
    Ar = A.tocsr()
    member = [set(A[:, j].indices.tolist()) for j in range(A.shape[1])]  # the equations each cell is in
    cells_of = A.T.tocsc()
    margin = (table.cells["kind"] != "interior").to_numpy() if table.dims else np.zeros(len(values), dtype=bool)
    for cell in cells:
        for _ in range(len(values)):
            lo, hi = _bounds(Ar, values, free, int(cell))
            v, p = values[cell], prot[cell]
            if _covers(v, p, lo, hi):
                break
            extra = _next_cell(cell, free, values, member, cells_of, need=max(v + p - hi, 0.0), margin=margin)
            if extra is None:
                break  # nothing left to withhold: the audit reports the cell
            free[extra] = True


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
