"""The sufficient statistics of a unit-splitting release: per-cell counts, split rows and sums of
every query of a workload, in memory or computed by an engine, and the policy loss of a split-count
histogram."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from ...core import keysets
from ...core.errors import PolicyError
from ...core.splitting import DEFAULT_KEY, split_counts
from ...core.workload import Query, SplittingPolicy, filters, joint_policy_loss, summed_policy_loss
from ...data.codes import GroupCells as _Factorizer
from ...engines import Aggregate, CellTable, EngineDataset, SplitHistogram
from ...engines.memory import column_kind


@dataclass(frozen=True)
class QueryStats:
    """Per-cell sufficient statistics of one query (computed once, reused by releases and sweeps).

    ``cell_of`` maps each record to its cell (-1 when the record is outside the query's filter);
    ``count`` is the true number of records per cell, ``total`` the true (clamped, for flat
    SUM/AVG) sum, ``pieces`` the number of split rows per cell, and ``sens`` the per-cell
    sensitivity divided by nothing — i.e. Δ of one piece (1 for COUNT).
    """

    query: Query
    keys: pd.DataFrame
    cell_of: np.ndarray
    count: np.ndarray
    total: np.ndarray | None
    sens: np.ndarray
    pieces: np.ndarray

    @property
    def n_cells(self) -> int:
        return len(self.keys)

    def labels(self, rows: np.ndarray | None = None) -> pd.Series:
        """Cell labels ("01001 | 44-45"), optionally only for the cells selected by ``rows``."""
        keys = self.keys if rows is None else self.keys[rows]
        if keys.shape[1] == 0:
            return pd.Series(["all records"] * len(keys), index=keys.index, dtype=object)
        out = keys.iloc[:, 0].astype(str)
        for c in keys.columns[1:]:
            out = out + " | " + keys[c].astype(str)
        return out

    def true_answer(self) -> np.ndarray:
        q = self.query
        if q.kind == "count":
            return self.count.astype("float64")
        if q.kind == "sum":
            return self.total  # type: ignore[return-value]  # a sum query's statistics hold its total
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.total / np.maximum(self.count, 1)


def cell_sensitivity(q: Query, policy: SplittingPolicy, keys: pd.DataFrame) -> np.ndarray:
    """Data-independent sensitivity (per piece) of each cell of query q."""
    n_cells = len(keys)
    if q.kind == "count":
        return np.ones(n_cells)
    if not q.split:
        return np.full(n_cells, float(q.clamp))  # type: ignore[arg-type]  # a top-coded query has its clamp (Query checks it)
    thr = policy.thresholds
    a = q.measure
    rows = thr.as_dict()
    if thr.group_col is None:
        return np.full(n_cells, float(rows[DEFAULT_KEY][a]))  # type: ignore[index]  # a sum or avg query names its measure (Query checks it)
    if thr.group_col in keys.columns:
        default = rows.get(DEFAULT_KEY)
        out = np.empty(n_cells)
        for i, g in enumerate(keys[thr.group_col].to_numpy()):
            r = rows.get(g, default)
            if r is None:
                raise PolicyError(f"No thresholds for {thr.group_col} = {g!r}.",
                                  hint="Add a thresholds row for it or a '*' row for every other group (a listed "
                                       "key with no row needs one too), or remove it from the key list.")
            out[i] = float(r[a])  # type: ignore[index]  # a sum or avg query names its measure (Query checks it)
        return out
    return np.full(n_cells, max(float(r[a]) for r in rows.values()))  # type: ignore[index]  # a sum or avg query names its measure (Query checks it)


PublicKeys = Mapping[tuple[str, ...], pd.DataFrame]


def _public_cells(table: pd.DataFrame, group_by: tuple[str, ...], keys: pd.DataFrame, kinds: Mapping[str, str]
                  ) -> tuple[pd.DataFrame, np.ndarray]:
    """Cells from a public key list: each record's row in it (−1 when its key is not listed), values
    compared by the column's type (:func:`prdp_core.core.keysets.match`)."""
    missing = [c for c in group_by if c not in keys.columns]
    if missing:
        raise PolicyError(f"The public key list for {', '.join(group_by)} lacks the column(s) "
                          f"{', '.join(missing)}.")
    k = keys[list(group_by)].drop_duplicates().reset_index(drop=True)
    if len(k) == 0:
        raise PolicyError(f"The public key list for {', '.join(group_by)} is empty.")
    return k, keysets.match(table, group_by, k, kinds)


def table_kinds(table: pd.DataFrame) -> dict[str, str]:
    """Each column's kind (``number``, ``text``, ``bool``, ``other``): how listed keys are compared."""
    return {str(c): column_kind(table[c]) for c in table.columns}


def listed_keys(policy: SplittingPolicy, kinds: Mapping[str, str], public_keys: PublicKeys | None = None
                ) -> PublicKeys:
    """The public cells of the workload's group-bys: ``public_keys`` given by the caller, then those of the
    workload's key lists (``workload.group_keys``)."""
    wl = policy.workload
    return keysets.public_keys((q.group_by for q in wl.queries), wl.group_keys, kinds, public_keys)


def workload_stats(table: pd.DataFrame, policy: SplittingPolicy, pieces: np.ndarray | None = None,
                   public_keys: PublicKeys | None = None, *, factorizer: _Factorizer | None = None
                   ) -> list[QueryStats]:
    """Sufficient statistics of every query of the policy's workload.

    Group-by columns are factorised once; queries sharing a group-by and filter share cells.
    ``public_keys`` maps a group-by (tuple of columns) to a public list of its cells: those cells,
    and only those, are answered (records whose key is not listed take part in no cell of it).
    ``factorizer`` shares the factorised group keys with the caller (a release's partition selection).
    """
    policy.validate(table)
    kinds = table_kinds(table)
    public_keys = listed_keys(policy, kinds, public_keys)
    m = split_counts(table, policy.thresholds) if pieces is None else np.asarray(pieces)
    mf = m.astype("float64")
    fact = factorizer if factorizer is not None else _Factorizer(table)
    # The cells of a query are those of its group-by over ALL records, whatever its filter: whether
    # a cell is answered must not depend on whether some record passes the filter (a filtered-out
    # cell gets a noisy 0). Partition selection, when used, then picks among the same cells.
    cells: dict[tuple[str, ...], tuple[pd.DataFrame, np.ndarray]] = {}
    shared: dict[tuple, tuple[np.ndarray, np.ndarray, bool, np.ndarray, np.ndarray]] = {}
    out = []
    for q in policy.workload.queries:
        if q.group_by not in cells:
            if public_keys and q.group_by in public_keys:
                cells[q.group_by] = _public_cells(table, q.group_by, public_keys[q.group_by], kinds)
            else:
                cells[q.group_by] = fact.all_cells(q.group_by)
        keys, all_cells = cells[q.group_by]
        fkey = (q.group_by, None if q.filter is None else (q.filter.column, q.filter.values))
        if fkey not in shared:
            if q.filter is None:
                cell_of = all_cells
                everyone = bool((all_cells >= 0).all())
            else:
                cell_of = np.where(q.filter.mask(table), all_cells, -1)
                everyone = False
            inside = cell_of >= 0
            c = cell_of if everyone else cell_of[inside]
            shared[fkey] = (cell_of, inside, everyone, np.bincount(c, minlength=len(keys)),
                            np.bincount(c, weights=mf if everyone else mf[inside], minlength=len(keys)))
        cell_of, inside, everyone, count, pcs = shared[fkey]
        total = None
        if q.kind != "count":
            v = table[q.measure].to_numpy(dtype="float64")
            v = v if everyone else v[inside]
            if not q.split:
                # top-coding clamps from both sides: the sensitivity is the clamp whatever the values
                v = np.clip(v, 0.0, float(q.clamp))  # type: ignore[arg-type]  # a top-coded query has its clamp (Query checks it)
            total = np.bincount(cell_of if everyone else cell_of[inside], weights=v, minlength=len(keys))
        out.append(QueryStats(q, keys, cell_of, count, total, cell_sensitivity(q, policy, keys), pcs))
    return out


def engine_workload_stats(data: EngineDataset, policy: SplittingPolicy, public_keys: PublicKeys | None = None, *,
                          selection_sets: Iterable[tuple[str, ...]] = ()
                          ) -> tuple[list[QueryStats], dict[tuple[str, ...], tuple[pd.DataFrame, np.ndarray]]]:
    """:func:`workload_stats` computed by the dataset's engine: per-cell counts, split rows and sums
    of every query (one aggregation per group-by set), with no per-record array (``cell_of`` is
    None); and, for each of ``selection_sets``, the candidate cells and their split rows over all
    records (partition selection). Cells and their order are those of :func:`workload_stats`."""
    eng = data.engine
    eng.validate_policy(policy, data.schema.measures)
    kinds = eng.column_kinds()
    public_keys = listed_keys(policy, kinds, public_keys)
    for gb, cells in public_keys.items():
        if filters(gb, cells) is None:
            raise PolicyError(f"On a table held by an engine, the public keys of {', '.join(gb)} must be the product "
                              "of one list per column.", hint="Give them as workload.group_keys (one list per "
                                                              "column), or release a table held in memory.")
    thr = policy.thresholds
    plans: dict[tuple[str, ...], dict[str, Aggregate]] = {}

    def need(gb: tuple[str, ...], agg: Aggregate) -> str:
        plans.setdefault(gb, {}).setdefault(agg.name, agg)
        return agg.name

    names = []
    for q in policy.workload.queries:
        fk = "" if q.filter is None else repr((q.filter.column, q.filter.values))
        cnt = need(q.group_by, Aggregate(f"count|{fk}", "count", filter=q.filter))
        pcs = need(q.group_by, Aggregate(f"pieces|{fk}", "pieces", filter=q.filter))
        tot = None
        if q.kind != "count":
            clamp = None if q.split else float(q.clamp)  # type: ignore[arg-type]  # a top-coded query has its clamp (Query checks it)
            tot = need(q.group_by, Aggregate(f"sum|{q.measure}|{clamp}|{fk}", "sum", q.measure, clamp, q.filter))
        names.append((cnt, pcs, tot))
    sel = list(dict.fromkeys(selection_sets))
    for gb in sel:
        need(gb, Aggregate("pieces|all", "pieces"))
    tables = {gb: eng.cell_aggregates(gb, list(aggs.values()), thr) for gb, aggs in plans.items()}
    listed = {gb: on_cells(tables[gb], public_keys[gb], kinds) for gb in tables if gb in public_keys}
    out = []
    for q, (cnt, pcs, tot) in zip(policy.workload.queries, names):
        t = listed.get(q.group_by, tables[q.group_by])
        out.append(QueryStats(q, t.keys, None, t.values[cnt], None if tot is None else t.values[tot],  # type: ignore[arg-type]  # an engine's cells have no per-record cell index (cell_of)
                              cell_sensitivity(q, policy, t.keys), t.values[pcs]))
    return out, {gb: (tables[gb].keys, tables[gb].values["pieces|all"]) for gb in sel}


def on_cells(t: CellTable, cells: pd.DataFrame, kinds: Mapping[str, str]) -> CellTable:
    """An engine's cell table (the cells present) on a public key list: listed cells in the list's order,
    those absent from the data with zeros, unlisted ones dropped (each value copied, never re-summed)."""
    k = cells[list(t.group_by)].drop_duplicates().reset_index(drop=True)
    row = keysets.match(t.keys, t.group_by, k, kinds)
    inside = row >= 0
    values = {}
    for name, v in t.values.items():
        out = np.zeros(len(k), dtype=v.dtype)
        np.add.at(out, row[inside], v[inside])
        values[name] = out
    return CellTable(t.group_by, k, values)


def policy_loss_of_histogram(policy: SplittingPolicy, hist: SplitHistogram, *, summed: bool = False) -> np.ndarray:
    """P(r) of the records of each row of a split-count histogram — the same arithmetic, hence the
    same bits, as a release (or, with ``summed``, a policy preview) computes record by record."""
    n = len(hist.keys)
    if not policy.workload.joint:
        cols = policy.components_from(n, lambda q: hist.pieces(None if q is None else q.measure), hist.mask)
        return cols.to_numpy().sum(axis=1) if len(policy.workload.queries) else np.zeros(n)
    m = hist.column("m").astype(np.int64)
    if summed:
        return summed_policy_loss(policy, m, hist.mask)
    return joint_policy_loss(policy, m, hist.mask)


def _key_index(keys: pd.DataFrame) -> pd.Index:
    """The cells' keys as an index (MultiIndex for several group-by columns)."""
    cols = list(keys.columns)
    return pd.MultiIndex.from_frame(keys) if len(cols) > 1 else pd.Index(keys[cols[0]])
