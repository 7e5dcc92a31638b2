"""Integer codes of a table's columns (group keys, owners), computed once per dataset table.

Releases, previews and group summaries turn a column's values into dense integer codes before
counting (``numpy.bincount``). Factorising ten million text ids takes about two seconds and sorting
eight million distinct ones four more, while the Policy designer and the Run page need them on
every threshold change — so the codes of a dataset's table (immutable once prepared) are kept,
weakly referenced, after first use. Tables passed in by callers that may change them are not
cached (``cache=False``). Fixed-width text ids are coded by counting instead of hashing
(:func:`fixed_width_codes`: ten million in well under a second, already sorted), and a prepared
dataset codes its owner column that way at once.

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
    """Codes (int64, −1 for missing) and labels of ``values``: with ``sort`` the same as
    ``pandas.factorize(values, sort=True)``; without, labels in an unspecified order (first
    appearance, or sorted when that is cheaper).

    Fixed-width text ids (the usual form of establishment and firm ids) are coded by counting
    (:func:`fixed_width_codes`), already sorted; other values by hashing (:func:`_hashed`)."""
    fast = fixed_width_codes(values)
    return fast if fast is not None else _hashed(values, sort)


def _hashed(values: Any, sort: bool) -> tuple[np.ndarray, pd.Index]:
    """Factorised in order of appearance; with ``sort`` only the distinct values are then sorted
    (by ``pandas.factorize`` itself, so the order is pandas' own), which is much faster than
    sorting inside one factorisation when there are few distinct values."""
    codes, uniques = pd.factorize(values, sort=False)
    codes = np.asarray(codes, dtype=np.int64)
    if sort and len(uniques) > 1:
        rank, sorted_uniques = pd.factorize(uniques, sort=True)
        rank = np.asarray(rank, dtype=np.int64)
        present = codes >= 0
        codes = np.where(present, rank[np.where(present, codes, 0)], -1) if not present.all() else rank[codes]
        uniques = sorted_uniques
    return codes, pd.Index(uniques)


#: Rows per block when building fixed-width keys (keeps the temporaries in cache).
_BLOCK = 1 << 14


def fixed_width_codes(values: Any) -> tuple[np.ndarray, pd.Index] | None:
    """Sorted codes and labels of Arrow-backed text whose values all have the same length in
    bytes and no missing value, by counting instead of hashing — or None when that does not apply.

    Each byte position is a digit in a mixed radix whose base is the number of distinct bytes at
    that position (constant positions drop out), so a value's key is its rank in byte order
    among the values the positions allow; when that key space is at most four times the number
    of values, the codes are the ranks of the keys present (O(n), no sort). Byte order of equal-
    length UTF-8 strings is their code-point order, i.e. the order ``pandas.factorize(sort=True)``
    gives. Ten million ids such as ``F00547329`` take a fraction of a second this way, against
    seconds for hashing and sorting the strings."""
    import pyarrow as pa

    arr = getattr(values, "array", values)
    chunked = getattr(arr, "_pa_array", None)
    if chunked is None or not isinstance(chunked, (pa.ChunkedArray, pa.Array)):
        return None
    if not (pa.types.is_string(chunked.type) or pa.types.is_large_string(chunked.type)):
        return None
    n = len(chunked)
    if n < 2 or chunked.null_count:
        return None
    import pyarrow.compute as pc

    mm = pc.min_max(pc.binary_length(chunked))
    width = mm["min"].as_py()
    if width is None or width != mm["max"].as_py() or not 0 < width <= 64:
        return None
    a = chunked.combine_chunks() if isinstance(chunked, pa.ChunkedArray) else chunked
    odt = np.int64 if pa.types.is_large_string(a.type) else np.int32
    start = int(np.frombuffer(a.buffers()[1], dtype=odt)[a.offset])
    mat = np.frombuffer(a.buffers()[2], dtype=np.uint8)[start: start + width * n].reshape(n, width)
    space_cap = max(4 * n, 1 << 16)
    counts = np.zeros((width, 256), dtype=np.int64)
    for lo in range(0, n, _BLOCK):
        block = mat[lo: lo + _BLOCK].T.copy()  # one contiguous row per byte position
        for j in range(width):
            counts[j] += np.bincount(block[j], minlength=256)
    digits: list[tuple[int, np.ndarray, np.ndarray]] = []  # (position, byte → digit, digit → byte)
    space = 1
    for j in range(width):
        present = counts[j] > 0
        k = int(present.sum())
        if k == 1:
            continue
        space *= k
        if space > space_cap:
            return None
        digits.append((j, (np.cumsum(present) - 1).astype(np.int64), np.flatnonzero(present).astype(np.uint8)))
    key = np.zeros(n, dtype=np.int64)
    for lo in range(0, n, _BLOCK):
        blk = key[lo: lo + _BLOCK]
        for j, to_digit, bytes_ in digits:
            blk *= len(bytes_)
            blk += to_digit[mat[lo: lo + _BLOCK, j]]
    seen = np.zeros(space, dtype=bool)
    seen[key] = True
    keys = np.flatnonzero(seen)
    codes = (np.cumsum(seen, dtype=np.int64) - 1)[key]
    labels = np.repeat(mat[:1], len(keys), axis=0)  # constant positions as in every value
    rest = keys
    for j, _, bytes_ in reversed(digits):
        rest, digit = np.divmod(rest, len(bytes_))
        labels[:, j] = bytes_[digit]
    offsets = np.arange(len(keys) + 1, dtype=np.int64) * width
    text = pa.Array.from_buffers(pa.large_string(), len(keys),
                                 [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(labels.tobytes())])
    return codes, pd.Index(pd.array(text, dtype=values.dtype))


def column_codes(table: pd.DataFrame, col: str, *, sort: bool = True, cache: bool = True
                 ) -> tuple[np.ndarray, pd.Index]:
    """Codes and labels of ``table[col]`` (see :func:`factorize`), kept for the life of ``table``
    when ``cache`` (pass False for a table the caller may still change). Sorted codes also serve
    callers that accept any order."""
    if not cache:
        return factorize(table[col], sort=sort)
    hit = _cached(table, col, sort)
    if hit is not None:
        return hit
    fast = fixed_width_codes(table[col])
    if fast is not None:
        return _keep(table, col, True, *fast)
    if sort:
        codes, labels = column_codes(table, col, sort=False)
        if len(labels) > 1:
            rank, sorted_labels = pd.factorize(labels, sort=True)
            rank = np.asarray(rank, dtype=np.int64)
            codes = np.where(codes >= 0, rank[np.maximum(codes, 0)], -1)
            labels = pd.Index(sorted_labels)
        return _keep(table, col, True, codes, labels)
    return _keep(table, col, False, *_hashed(table[col], False))


def code_fixed_width(table: pd.DataFrame, col: str) -> bool:
    """Code ``table[col]`` now (kept for the life of ``table``) if it is fixed-width text, which
    costs a fraction of a second even for ten million ids: datasets do this for their owner
    column when they are prepared, so the first release and the first owner-loss chart do not.
    Returns whether the column was coded."""
    if _cached(table, col, True) is not None:
        return True
    fast = fixed_width_codes(table[col])
    if fast is not None:
        _keep(table, col, True, *fast)
    return fast is not None


def _cached(table: pd.DataFrame, col: str, sort: bool) -> tuple[np.ndarray, pd.Index] | None:
    for key in ((id(table), col, True),) if sort else ((id(table), col, False), (id(table), col, True)):
        hit = _CACHE.get(key)
        if hit is not None and hit[0]() is table:
            return hit[1], hit[2]
    return None


def _keep(table: pd.DataFrame, col: str, sort: bool, codes: np.ndarray, labels: pd.Index
          ) -> tuple[np.ndarray, pd.Index]:
    if len(_CACHE) >= _MAX_ENTRIES:
        for k in [k for k, v in _CACHE.items() if v[0]() is None] or list(_CACHE)[: _MAX_ENTRIES // 2]:
            _CACHE.pop(k, None)
    codes.flags.writeable = False  # shared by every caller: never changed in place
    key = (id(table), col, sort)
    _CACHE[key] = (weakref.ref(table, lambda ref: _forget(key, ref)), codes, labels)
    return codes, labels


def _forget(key: tuple[int, str, bool], ref: "weakref.ref[Any]") -> None:
    """A coded table was collected: drop its codes and labels at once (for a 10⁶-record table's owners, about
    20 MB), not when the cache is next full: an ended session's tables leave nothing behind."""
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is ref:  # not a newer table that took the same id
        _CACHE.pop(key, None)


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
                from ..core.errors import PolicyError
                from ..core.workload import MISSING_GROUP_HINT

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


__all__ = ["GroupCells", "OwnerCells", "code_fixed_width", "column_codes", "factorize", "fixed_width_codes",
           "sorted_unique"]
