"""Integer codes of a table's columns (group keys, owners), computed once per dataset table.

Releases, previews and group summaries turn a column's values into dense integer codes before
counting (``numpy.bincount``). Factorising ten million text ids takes about two seconds and sorting
eight million distinct ones four more, while the Policy designer and the Run page need them on
every threshold change — so the codes of a dataset's table (immutable once prepared) are kept,
weakly referenced, after first use. Tables passed in by callers that may change them are not
cached (``cache=False``).
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


__all__ = ["column_codes", "factorize"]
