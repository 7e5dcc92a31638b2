"""The magnitude table of a query: cells, margins and each cell's contributions aggregated per owner.

A magnitude table publishes, for every combination of its dimensions' values (the *interior* cells), the sum
of a measure, and its margins: for two dimensions the row totals, the column totals and the grand total; for
one dimension the grand total. The disclosure rules of :mod:`.primary` judge a cell by its *contributors*: the
owners (firms) of its records, each owner's records in the cell added up — the rules are about what a firm
can learn of another firm, so two establishments of one firm are one contributor. Without an owner column
every record is its own contributor.

:func:`cell_table` builds the table once; every margin's contributions are aggregated from the records (not
from the interior cells), so a firm present in several cells of a row is one contributor of the row total.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...core.errors import ParameterError

#: The label of a margin in a dimension's column (the row or column total), for readers only.
TOTAL = "(total)"
#: The code of a margin in a dimension (:attr:`CellTable.codes`).
MARGIN = -1


@dataclass(frozen=True)
class CellTable:
    """A magnitude table: ``cells`` (one row per cell: the dimensions' values as text, :data:`TOTAL` in a margin's
    dimension, ``kind``, ``value`` the cell's sum, ``owners`` its number of contributors) and ``contributions``
    (``cell`` — the row of ``cells`` — and ``x``, one owner's total in that cell, largest first within a cell).

    ``contributions`` also holds ``owner`` (the contributor's number, 0, 1, …; one owner's rows in different cells
    are the same company). ``dims`` are the table's dimensions (0, 1 or 2 columns), ``measure`` the summed column."""

    dims: tuple[str, ...]
    measure: str
    cells: pd.DataFrame
    contributions: pd.DataFrame
    #: Each cell's code in each dimension (its value's rank), :data:`MARGIN` in a margin's dimension: what tells a
    #: margin from a cell, never the label (a group may well be called "(total)").
    codes: np.ndarray

    def top(self, n: int) -> np.ndarray:
        """The sum of each cell's ``n`` largest contributions (aligned with :attr:`cells`)."""
        c = self.contributions
        rank = c.groupby("cell", sort=False).cumcount().to_numpy()
        keep = rank < n
        return np.bincount(c["cell"].to_numpy()[keep], weights=c["x"].to_numpy()[keep], minlength=len(self.cells))

    def largest(self, i: int) -> np.ndarray:
        """Each cell's (i+1)-th largest contribution (0 where the cell has fewer contributors)."""
        c = self.contributions
        rank = c.groupby("cell", sort=False).cumcount().to_numpy()
        out = np.zeros(len(self.cells))
        pick = rank == i
        out[c["cell"].to_numpy()[pick]] = c["x"].to_numpy()[pick]
        return out

    def interior(self) -> np.ndarray:
        """A boolean mask of the interior cells."""
        return (self.cells["kind"] == "interior").to_numpy()


def cell_table(frame: pd.DataFrame, dims: list[str] | tuple[str, ...], measure: str,
               owner: str | None = None) -> CellTable:
    """The magnitude table of ``SUM(measure) GROUP BY dims`` with its margins, from the records in ``frame``.

    ``owner`` names the column whose value identifies a contributor (a firm); None makes every record its own
    contributor. Measures must be finite and non-negative (a prepared dataset's are); ParameterError names what
    is wrong otherwise."""
    dims = tuple(dims)
    for col in (*dims, measure, *((owner,) if owner else ())):
        if col not in frame.columns:
            raise ParameterError(f"The table has no column '{col}'.", hint="Name a column of the dataset.")
    if len(set(dims)) != len(dims):
        raise ParameterError("A dimension is named twice.", hint="Name each dimension once.")
    x = pd.to_numeric(frame[measure], errors="coerce").to_numpy(dtype=float)
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ParameterError(f"'{measure}' has missing, infinite or negative values.",
                             hint="Prepare the dataset first (the Data page's fixes, or data.prepare in a study).")
    codes = {d: pd.factorize(frame[d], sort=True, use_na_sentinel=False) for d in dims}  # a missing key: a cell
    base = pd.DataFrame({d: codes[d][0] for d in dims})
    labels = {d: np.asarray(codes[d][1].astype(str), dtype=object) for d in dims}
    base["_owner"] = pd.factorize(frame[owner], use_na_sentinel=False)[0] if owner else np.arange(len(frame))
    base["_x"] = x
    levels: list[tuple[tuple[str, ...], str]] = []  # (the dimensions kept, kind)
    if len(dims) == 2:
        levels = [(dims, "interior"), ((dims[0],), "margin"), ((dims[1],), "margin"), ((), "total")]
    elif len(dims) == 1:
        levels = [(dims, "interior"), ((), "total")]
    else:
        levels = [((), "total")]
    cell_parts, contrib_parts, offset = [], [], 0
    finest = base.groupby([*dims, "_owner"], sort=False)["_x"].sum().reset_index()  # one row per owner and cell
    for kept, kind in levels:  # a margin's contributions: the owner's interior contributions in its row, added
        per_owner = (finest if len(kept) == len(dims) else
                     finest.groupby([*kept, "_owner"], sort=False)["_x"].sum().reset_index())
        if kept:
            cells = per_owner.groupby(list(kept), sort=True).agg(value=("_x", "sum"),
                                                                 owners=("_owner", "size")).reset_index()
            key = np.zeros(len(per_owner), dtype=np.int64)
            cell_key = np.zeros(len(cells), dtype=np.int64)
            for d in kept:  # one integer per cell: the codes of its dimensions in mixed radix
                key = key * len(labels[d]) + per_owner[d].to_numpy()
                cell_key = cell_key * len(labels[d]) + cells[d].to_numpy()
            where = np.searchsorted(cell_key, key)  # cells are sorted by their codes, so by cell_key
            for d in kept:
                cells[f"__code_{d}"] = cells[d].to_numpy()
                cells[d] = labels[d][cells[d].to_numpy()]
        else:
            cells = pd.DataFrame({"value": [float(per_owner["_x"].sum())], "owners": [len(per_owner)]})
            where = np.zeros(len(per_owner), dtype=np.int64)
        for d in dims:
            if d not in kept:
                cells[d] = TOTAL
                cells[f"__code_{d}"] = MARGIN
        cells["kind"] = kind
        cell_parts.append(cells[[*dims, "kind", "value", "owners", *(f"__code_{d}" for d in dims)]])
        contrib_parts.append(pd.DataFrame({"cell": where + offset, "owner": per_owner["_owner"].to_numpy(),
                                           "x": per_owner["_x"].to_numpy()}))
        offset += len(cells)
    cells = pd.concat(cell_parts, ignore_index=True)
    cell_codes = cells[[f"__code_{d}" for d in dims]].to_numpy(dtype=np.int64).reshape(len(cells), len(dims))
    cells = cells.drop(columns=[f"__code_{d}" for d in dims])
    cells["owners"] = cells["owners"].astype(int)
    contrib = pd.concat(contrib_parts, ignore_index=True)
    order = np.lexsort((-contrib["x"].to_numpy(), contrib["cell"].to_numpy()))  # by cell, largest first
    contrib = contrib.iloc[order].reset_index(drop=True)
    return CellTable(dims=dims, measure=measure, cells=cells, contributions=contrib, codes=cell_codes)
