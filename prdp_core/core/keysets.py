"""Public key lists of group-by columns: the cells a release answers, fixed before any record is read.

Like Tumult Analytics' ``KeySet.from_dict``, ``group_keys`` maps a group-by column to a public list of
its values (``{STATE: ["01", "02"], NAICS: ["44-45"]}``); a group-by whose columns are all listed is
answered on the product of their lists — exactly those cells, in the lists' order (the first column
varying slowest):

* a record whose key is not listed takes part in no cell of that group-by (it is dropped);
* a listed cell no record falls in is answered too, as a noisy zero (its noise drawn like any other).

Which cells are released then says nothing about the records, so a secure release accepts them: without
a list the cells present in the data are used, and a secure release refuses them unless partition
selection chooses them privately. Values are matched by the column's type alone, as a filter's
(:class:`prdp_core.core.workload.Filter`): a numeric column compares numbers (a listed value that is not a
number is refused), any other column compares text. A group-by's product is at most
:data:`prdp_core.core.limits.MAX_KEY_CELLS` cells.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from .errors import PolicyError
from .limits import MAX_KEY_CELLS, check_limit

#: Normalised key lists: (column, its listed values) pairs, in the order given.
GroupKeys = tuple[tuple[str, tuple[Any, ...]], ...]

#: The source of a key list in a release's params: typed in as public values (:data:`prdp_core.core.provenance.TYPED`).
KEYS_SOURCE = "typed"


def _value(v: Any, col: str) -> Any:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(float(v)):
            raise PolicyError(f"The key list of '{col}' holds {v!r}: list finite numbers or text.")
        return float(v)
    if isinstance(v, str):
        if len(v) > 500 or "\x00" in v:
            raise PolicyError(f"The key list of '{col}' holds a value that is too long or contains NUL.")
        return v
    raise PolicyError(f"The key list of '{col}' holds {type(v).__name__} {str(v)[:40]!r}: list single values "
                      "(text or numbers).")


def normalize(group_keys: Any) -> GroupKeys:
    """``group_keys`` (column → list of values, or such pairs) as :data:`GroupKeys`: each list non-empty,
    its repeated values dropped; PolicyError naming the column otherwise."""
    if group_keys is None:
        return ()
    items = group_keys.items() if isinstance(group_keys, Mapping) else group_keys
    out: dict[str, tuple[Any, ...]] = {}
    try:
        pairs = [(c, v) for c, v in items]
    except (TypeError, ValueError):
        raise PolicyError("Group keys must map each group-by column to a list of its public values, "
                          "e.g. {STATE: ['01', '02']}.") from None
    for col, vals in pairs:
        if not isinstance(col, str) or not col:
            raise PolicyError(f"Group keys name columns by their names (got {col!r}).")
        if isinstance(vals, (str, bytes)) or not isinstance(vals, Iterable):
            raise PolicyError(f"The key list of '{col}' must be a list of values, e.g. ['01', '02'].")
        clean = tuple(dict.fromkeys(_value(v, col) for v in vals))
        if not clean:
            raise PolicyError(f"The key list of '{col}' is empty.", hint="List at least one value, or remove the "
                                                                       "column from the group keys.")
        check_limit(f"Values listed for '{col}'", len(clean), MAX_KEY_CELLS, "List fewer values.")
        out[col] = clean
    return tuple(out.items())


def as_mapping(keys: GroupKeys) -> dict[str, list[Any]]:
    """The key lists as a plain mapping (config, params, reproduction code)."""
    return {c: list(v) for c, v in keys}


def covers(group_by: tuple[str, ...], keys: GroupKeys) -> bool:
    """True when every column of a (non-empty) group-by has a key list."""
    listed = dict(keys)
    return bool(group_by) and all(c in listed for c in group_by)


def listed(workload: Any) -> tuple[tuple[str, ...], ...]:
    """The group-bys of a workload's queries whose cells its key lists give (each once)."""
    return tuple(dict.fromkeys(q.group_by for q in workload.queries if covers(q.group_by, workload.group_keys)))


def n_cells(group_by: tuple[str, ...], keys: GroupKeys) -> int:
    """Cells of a listed group-by: the product of its columns' list lengths."""
    listed = dict(keys)
    return math.prod(len(listed[c]) for c in group_by)


def check_cells(group_by: tuple[str, ...], keys: GroupKeys) -> None:
    """Refuse a listed group-by of more than :data:`~prdp_core.core.limits.MAX_KEY_CELLS` cells."""
    if covers(group_by, keys):
        check_limit(f"Cells of the public key list of {', '.join(group_by)} (the product of its lists)",
                    n_cells(group_by, keys), MAX_KEY_CELLS,
                    "List fewer values, or group by fewer columns: every listed cell is answered.")


def _canonical(values: Iterable[Any], kind: str, col: str) -> list[Any]:
    """Listed values in the comparison type of a column of ``kind`` (numbers for a numeric one, else text)."""
    if kind != "number":
        return [str(v) for v in values]
    out = []
    for v in values:
        try:
            x = float(v) if not isinstance(v, bool) else math.nan
        except (TypeError, ValueError):
            x = math.nan
        if not math.isfinite(x):
            raise PolicyError(f"The key list of '{col}' holds {v!r}, but '{col}' is a numeric column.",
                              hint=f"List numbers for '{col}' (its values are compared as numbers).")
        out.append(x)
    return out


def _data_canonical(values: Any, kind: str) -> pd.Index:
    s = pd.Series(np.asarray(values, dtype=object))
    if kind == "number":
        return pd.Index(pd.to_numeric(s, errors="coerce").astype("float64"))
    return pd.Index(s.astype(str))


def key_frame(group_by: tuple[str, ...], keys: GroupKeys, kinds: Mapping[str, str]) -> pd.DataFrame:
    """The cells of a listed group-by: the product of its columns' lists (first column slowest), each
    column in its comparison type (whole numbers as int64, other numbers float64, else text)."""
    listed = dict(keys)
    check_cells(group_by, keys)
    cols = []
    for c in group_by:
        vals = list(dict.fromkeys(_canonical(listed[c], kinds.get(c, "text"), c)))
        if kinds.get(c) == "number":
            arr = np.asarray(vals, dtype="float64")
            cols.append(arr.astype(np.int64) if np.all(arr == np.round(arr)) and np.all(np.abs(arr) < 2**53) else arr)
        else:
            cols.append(np.asarray(vals, dtype=object))
    return pd.MultiIndex.from_product(cols, names=list(group_by)).to_frame(index=False)


def public_keys(group_bys: Iterable[tuple[str, ...]], keys: GroupKeys, kinds: Mapping[str, str],
                given: Mapping[tuple[str, ...], pd.DataFrame] | None = None) -> dict[tuple[str, ...], pd.DataFrame]:
    """Group-by → its public cells: those ``given`` (a caller's lists), then every group-by the key lists
    cover (:func:`key_frame`). Group-bys left out take their cells from the data or partition selection."""
    out = dict(given or {})
    for gb in dict.fromkeys(tuple(g) for g in group_bys):
        if gb not in out and covers(gb, keys):
            out[gb] = key_frame(gb, keys, kinds)
    return out


def match(records: pd.DataFrame, group_by: tuple[str, ...], cells: pd.DataFrame, kinds: Mapping[str, str]
          ) -> np.ndarray:
    """Each row of ``records`` → its row in ``cells`` (−1 when its key is not listed), values compared in
    the column's type (:func:`key_frame`)."""
    rec_pos, cell_pos = [], []
    for c in group_by:
        kind = kinds.get(c, "text")
        listed = pd.Index(_canonical(cells[c].tolist(), kind, c))
        distinct = listed.unique()
        codes, uniques = pd.factorize(records[c], use_na_sentinel=True)
        upos = distinct.get_indexer(_data_canonical(uniques, kind)) if len(uniques) else np.zeros(0, np.int64)
        rec_pos.append(np.where(codes >= 0, upos[codes] if len(upos) else -1, -1))
        cell_pos.append(distinct.get_indexer(listed))
    if len(group_by) == 1:
        return np.asarray(pd.Index(cell_pos[0]).get_indexer(rec_pos[0]), dtype=np.int64)
    unlisted = np.any(np.stack(rec_pos) < 0, axis=0)
    idx = pd.MultiIndex.from_arrays(cell_pos).get_indexer(pd.MultiIndex.from_arrays(rec_pos))
    return np.where(unlisted, -1, idx).astype(np.int64)


__all__ = ["KEYS_SOURCE", "GroupKeys", "as_mapping", "check_cells", "covers", "key_frame", "listed", "match",
           "n_cells", "normalize", "public_keys"]
