"""Integer codes of a table's columns (group keys, owners), computed once per dataset table.

Releases, previews and group summaries turn a column's values into dense integer codes before
counting (``numpy.bincount``). Factorising ten million text ids takes about two seconds and sorting
eight million distinct ones four more, while the Policy designer and the Run page need them on
every threshold change — so the codes of a dataset's table (immutable once prepared) are kept,
weakly referenced, after first use. Tables passed in by callers that may change them are not
cached (``cache=False``).

:class:`GroupCells` combines the codes of group-by columns into cells (the sorted combinations
present) and :class:`OwnerCells` pairs owners with cells, for releases and engines alike.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pandas as pd

_CACHE: dict[tuple[int, str, bool], tuple["weakref.ref[Any]", np.ndarray, pd.Index]] = {}
_MAX_ENTRIES = 32


def factorize(values: Any, *, sort: bool = True) -> tuple[np.ndarray, pd.Index]:
    """Codes (int64, −1 for missing) and labels of ``values``, the same as
    ``pandas.factorize(values, sort=sort)``.

    With ``sort`` the values are factorised in order of appearance and only the distinct values
    are sorted (by ``pandas.factorize`` itself, so the order is pandas' own), which is much faster
    than sorting inside one factorisation when there are few distinct values."""
    codes, uniques = pd.factorize(values, sort=False)
    codes = np.asarray(codes, dtype=np.int64)
    if sort and len(uniques) > 1:
        rank, sorted_uniques = pd.factorize(uniques, sort=True)
        rank = np.asarray(rank, dtype=np.int64)
        present = codes >= 0
        codes = np.where(present, rank[np.where(present, codes, 0)], -1) if not present.all() else rank[codes]
        uniques = sorted_uniques
    return codes, pd.Index(uniques)


def column_codes(table: pd.DataFrame, col: str, *, sort: bool = True, cache: bool = True
                 ) -> tuple[np.ndarray, pd.Index]:
    """Codes and labels of ``table[col]`` (see :func:`factorize`), kept for the life of ``table``
    when ``cache`` (pass False for a table the caller may still change)."""
    if not cache:
        return factorize(table[col], sort=sort)
    key = (id(table), col, sort)
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is table:
        return hit[1], hit[2]
    if sort:
        codes, labels = column_codes(table, col, sort=False)
        if len(labels) > 1:
            rank, sorted_labels = pd.factorize(labels, sort=True)
            rank = np.asarray(rank, dtype=np.int64)
            codes = np.where(codes >= 0, rank[np.maximum(codes, 0)], -1)
            labels = pd.Index(sorted_labels)
    else:
        codes, labels = factorize(table[col], sort=False)
    if len(_CACHE) >= _MAX_ENTRIES:
        for k in [k for k, v in _CACHE.items() if v[0]() is None] or list(_CACHE)[: _MAX_ENTRIES // 2]:
            _CACHE.pop(k, None)
    codes.flags.writeable = False  # shared by every caller: never changed in place
    _CACHE[key] = (weakref.ref(table), codes, labels)
    return codes, labels


class GroupCells:
    """Codes of group-by columns, factorised once per column and combined per group-by set.

    ``cache``: the table is a dataset's (immutable) table, so its column codes are kept for later
    releases (:func:`column_codes`)."""

    def __init__(self, table: pd.DataFrame, cache: bool = False) -> None:
        self.table = table
        self.cache = cache
        self._cols: dict[str, tuple[np.ndarray, pd.Index]] = {}
        self._cells: dict[tuple[str, ...], tuple[pd.DataFrame, np.ndarray]] = {}

    def column(self, c: str) -> tuple[np.ndarray, pd.Index]:
        if c not in self._cols:
            codes, uniq = column_codes(self.table, c, sort=True, cache=self.cache)
            if (codes < 0).any():
                from .errors import PolicyError
                from .workload import MISSING_GROUP_HINT

                raise PolicyError(f"Group-by column '{c}' has missing values.", hint=MISSING_GROUP_HINT)
            self._cols[c] = (codes, uniq)
        return self._cols[c]

    def all_cells(self, group_by: tuple[str, ...]) -> tuple[pd.DataFrame, np.ndarray]:
        """:meth:`cells` over every record, computed once per group-by set."""
        if group_by not in self._cells:
            self._cells[group_by] = self.cells(group_by, np.ones(len(self.table), dtype=bool))
        return self._cells[group_by]

    def cells(self, group_by: tuple[str, ...], mask: np.ndarray) -> tuple[pd.DataFrame, np.ndarray]:
        """Keys (sorted combinations present among masked records) and each record's cell (-1 outside)."""
        n = len(self.table)
        cell_of = np.full(n, -1, dtype=np.int64)
        if not group_by:
            cell_of[mask] = 0
            return pd.DataFrame(index=[0]), cell_of
        combined = np.zeros(n, dtype=np.int64)
        sizes = []
        for c in group_by:
            codes, uniq = self.column(c)
            combined = combined * np.int64(len(uniq)) + codes
            sizes.append(len(uniq))
        u, inv = sorted_unique(combined if mask.all() else combined[mask], int(np.prod(sizes, dtype=float)))
        cell_of[mask] = inv
        parts = {}
        rest = u
        for c, size in zip(reversed(group_by), reversed(sizes)):
            # categorical keys: codes plus the column's distinct values, no per-cell objects
            parts[c] = pd.Categorical.from_codes(rest % size, categories=self.column(c)[1])
            rest = rest // size
        return pd.DataFrame({c: parts[c] for c in group_by}), cell_of


def sorted_unique(codes: np.ndarray, space: float) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for non-negative codes below ``space``: by counting
    (O(n)) when the code space is small, else by sorting."""
    if codes.size and space <= max(4.0 * codes.size, 1 << 16):
        present = np.bincount(codes, minlength=int(space)) > 0
        u = np.flatnonzero(present).astype(np.int64)
        rank = np.cumsum(present, dtype=np.int64) - 1
        return u, rank[codes]
    u, inv = np.unique(codes, return_inverse=True)
    return u, inv.astype(np.int64, copy=False)


class OwnerCells:
    """(owner, cell) pairs of the records inside a query's scope, computed once per cell layout
    (``s`` has the records' cells ``cell_of``, −1 outside the scope, and ``n_cells``).

    An owner with one record has one pair: its sums are that record's contribution, so only the
    records of owners with several records are paired and sorted (a fifth of the establishments of
    CBP-like data); the others are scattered directly. Sums are taken in the same order as pairing
    every record would, so owner losses are the same to the last bit."""

    def __init__(self, own_codes: np.ndarray, n_own: int) -> None:
        self.own_codes = own_codes.astype(np.int64, copy=False)
        self.n_own = n_own
        self.multi = np.bincount(self.own_codes, minlength=n_own)[self.own_codes] > 1
        self._cache: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                     np.ndarray]] = {}

    def pairs(self, s: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                     np.ndarray]:
        """(records of multi-record owners in scope, their pair, each pair's owner and cell, records of
        single-record owners in scope, their owner and cell)."""
        key = id(s.cell_of)
        if key not in self._cache:
            inside = s.cell_of >= 0
            width = np.int64(max(s.n_cells, 1))
            multi = np.flatnonzero(inside & self.multi)
            pair = self.own_codes[multi] * width + s.cell_of[multi]
            uniq, idx = np.unique(pair, return_inverse=True)
            single = np.flatnonzero(inside & ~self.multi)
            self._cache[key] = (multi, idx, (uniq // width).astype(np.int64), (uniq % width).astype(np.int64),
                                single, self.own_codes[single], s.cell_of[single])
        return self._cache[key]

    def realized(self, s: Any, contrib: np.ndarray, sig: np.ndarray) -> np.ndarray:
        """Σ_cells (Σ_{r ∈ owner, cell} Δ(r))² / (2σ_cell²) for every owner."""
        multi, idx, owner, cell, single, s_owner, s_cell = self.pairs(s)
        out = np.zeros(self.n_own)
        if multi.size:
            sums = np.bincount(idx, weights=contrib[multi], minlength=owner.size)
            out += np.bincount(owner, weights=sums**2 / (2.0 * sig[cell] ** 2), minlength=self.n_own)
        if single.size:
            out[s_owner] = contrib[single] ** 2 / (2.0 * sig[s_cell] ** 2)
        return out


__all__ = ["GroupCells", "OwnerCells", "column_codes", "factorize", "sorted_unique"]
