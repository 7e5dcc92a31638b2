"""The in-memory engine: a pandas DataFrame and numpy kernels.

The default for uploads, samples and small files. Its statistics are computed with the same
kernels as the per-record paths of prdp_core (``split_counts``, ``Filter.mask``, the group-cell
codes of :mod:`prdp_core.data.codes`, ``owner_losses``, the profile of :mod:`prdp_core.data.profile`), so
an engine-backed release on a :class:`MemoryEngine` gives the answers, and the loss distributions
of, the per-record release on the same table. The kernels that bin the values of the general
PrDP framework (:func:`domain_histogram`) live here and are used by :mod:`prdp_core.mechanisms.prdp`
itself.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Literal, Sequence

import numpy as np
import pandas as pd

from ..core.distribution import MAX_EXACT_VALUES, LossDistribution, log_edges
from ..core.domains import ceil_log2
from ..core.errors import ParameterError
from ..core.loss_profile import owner_losses
from ..core.splitting import Thresholds, as_thresholds, restrict_thresholds, split_counts
from ..core.workload import Filter
from ..data.codes import GroupCells, OwnerCells, column_codes, sorted_unique
from ..data.dataset import Schema, TableCheck, check_table
from ..data.profile import DatasetProfile, log_histogram, lorenz_from_sorted, profile_sorted
from .base import Aggregate, Bins, CellTable, ColumnKind, DomainStats, Engine, RealizedTerm, SplitHistogram

# ---------------------------------------------------------------------------
# Kernels shared with the mechanisms
# ---------------------------------------------------------------------------


def value_bins(v: np.ndarray, bins: Bins) -> np.ndarray:
    """The bin of each value (int64), see :class:`~prdp_core.engines.base.Bins`."""
    if bins.kind == "pow2":
        e = ceil_log2(v)                    # one new int64 array, then everything in place
        np.clip(e, bins.j0, bins.J + 1, out=e)  # smallest j with v ≤ 2^j (J + 1: above 2^J)
        if bins.j0:
            e -= bins.j0
        return e
    m = bins.m
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.log2(v)
    k -= bins.j0
    k *= bins.steps
    np.ceil(k, out=k)
    k += 1
    np.clip(k, 1, m - 1, out=k, where=np.isfinite(k))
    b = np.nan_to_num(k, nan=0.0, neginf=0.0, posinf=m - 1).astype(np.int64)
    b[v <= 0] = 0
    b[v > bins.U] = m
    return b


def domain_histogram(v: np.ndarray, idx: np.ndarray, L: int, bins: Bins, *, sums: bool = True
                     ) -> tuple[np.ndarray, np.ndarray | None]:
    """Counts (and sums of v) per (domain − 1, bin) as two (L, bins.size) arrays: one pass of
    ``bincount`` over key = (domain − 1)·B + bin."""
    B = bins.size
    key = value_bins(v, bins)
    key += (idx.astype(np.int64) - 1) * B
    cnt = np.bincount(key, minlength=L * B).reshape(L, B)
    sm = np.bincount(key, weights=v, minlength=L * B).reshape(L, B) if sums else None
    return cnt, sm


def distinct_max_domain(codes: np.ndarray, idx: np.ndarray, L: int) -> np.ndarray:
    """Distinct values (``codes``) counted by the largest domain among their records, (L,)."""
    k = int(codes.max()) + 1 if codes.size else 0
    top = np.zeros(k, dtype=np.int64)
    if codes.size:
        np.maximum.at(top, codes, idx.astype(np.int64))
    return np.bincount(top[top > 0], minlength=L + 1)[1:]


def column_kind(s: pd.Series) -> ColumnKind:
    if pd.api.types.is_bool_dtype(s):
        return "bool"
    if pd.api.types.is_numeric_dtype(s):
        return "number"
    if pd.api.types.is_string_dtype(s) or s.dtype == object:
        return "text"
    return "other"


def distribution_of(values: np.ndarray, measure: str = "rho", *, bins: int = 400,
                    upper: float | None = None) -> LossDistribution:
    """Exact distribution of per-unit losses, binned on a log grid when they take more than
    :data:`~prdp_core.core.distribution.MAX_EXACT_VALUES` distinct values. With ``upper`` (a bound
    every loss respects, e.g. the largest policy loss for realized losses) and more units than
    that limit, the grid is :func:`bound_edges` — the rule a SQL engine applies in one pass."""
    v = np.asarray(values, dtype=float)
    total = float(v.sum()) if v.size else 0.0
    if upper is not None and v.size > MAX_EXACT_VALUES:
        edges = bound_edges(upper)
        b = bound_bins(v, edges)
        return LossDistribution.binned(edges, np.bincount(b, minlength=edges.size - 1), measure,  # type: ignore[arg-type]  # measure is "rho" or "eps", typed str by the engine interface
                                       total=total)
    u, c = np.unique(v, return_counts=True)
    if u.size <= MAX_EXACT_VALUES:
        return LossDistribution(u, c, measure, total=total)  # type: ignore[arg-type]  # measure is "rho" or "eps", typed str by the engine interface
    return _binned(v, _binned_edges(float(u[0]), float(u[-1]), bins), measure, total)


def _binned(v: np.ndarray, edges: np.ndarray, measure: str, total: float) -> LossDistribution:
    counts = np.bincount(np.clip(np.searchsorted(edges, v, side="left") - 1, 0, edges.size - 2),
                         minlength=edges.size - 1)
    return LossDistribution.binned(edges, counts, measure, total=total)  # type: ignore[arg-type]  # measure is "rho" or "eps", typed str by the engine interface


def bound_bins(v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bin of each loss on :func:`bound_edges` ``edges``: ⌈log₂(v / edges[1])·BOUND_STEPS⌉,
    clipped to the bins (0 for v ≤ 0 and NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.ceil(np.log2(v / edges[1]) * BOUND_STEPS)
    return np.clip(np.nan_to_num(b, nan=0.0, neginf=0.0), 0, edges.size - 2).astype(np.int64)


#: Bins per doubling of :func:`bound_edges`.
BOUND_STEPS = 8


def bound_edges(upper: float, *, doublings: int = 64) -> np.ndarray:
    """Bin edges for losses known to lie in [0, ``upper``]: 0, then lo·2^(j/8), j = 0 … 8·doublings,
    lo = upper·2^−doublings. A loss x > 0 falls in bin ⌈8·log₂(x/lo)⌉ (clipped; 0 for x ≤ lo): one
    logarithm per unit in every engine (a value within rounding of an edge may land one bin over)."""
    u = float(upper) if upper > 0 else 1.0
    return np.concatenate(([0.0], u * np.exp2(-np.arange(BOUND_STEPS * doublings, -1, -1) / BOUND_STEPS)))


def _binned_edges(lo: float, hi: float, bins: int) -> np.ndarray:
    pos_lo = lo if lo > 0 else max(hi * 1e-12, 1e-300)
    e = log_edges(pos_lo, max(hi, pos_lo), bins)
    return np.concatenate(([0.0], e)) if lo <= 0 else e


# ---------------------------------------------------------------------------
# The engine
# ---------------------------------------------------------------------------


class MemoryEngine(Engine):
    """Records in a pandas DataFrame (the default for uploads, samples and small files).

    ``cache``: the table is never changed (a prepared dataset's), so column codes and the
    records' split-count keys are kept between calls."""

    name = "memory"

    def __init__(self, table: pd.DataFrame, *, cache: bool = True) -> None:
        if not isinstance(table, pd.DataFrame):
            raise ParameterError("The memory engine holds a pandas DataFrame.")
        self.table = table
        self.cache = cache
        self._rows: OrderedDict[tuple, tuple[SplitHistogram, np.ndarray]] = OrderedDict()

    # -- description -------------------------------------------------------------------

    def column_kinds(self) -> dict[str, ColumnKind]:
        return {str(c): column_kind(self.table[c]) for c in self.table.columns}

    def n_rows(self) -> int:
        return len(self.table)

    def distinct(self, columns: Sequence[str], *, limit: int | None = None) -> pd.DataFrame:
        cols = list(columns)
        if not cols:
            return pd.DataFrame(index=[0])
        codes = []
        labels = []
        for c in cols:
            k, lab = column_codes(self.table, c, sort=True, cache=self.cache)
            codes.append(np.where(k < 0, len(lab), k))  # missing values sort last
            labels.append(lab)
        combined = np.zeros(len(self.table), dtype=np.int64)
        for k, lab in zip(codes, labels):
            combined = combined * np.int64(len(lab) + 1) + k
        u = np.unique(combined)
        if limit is not None:
            u = u[: int(limit)]
        out: dict[str, Any] = {}
        for c, lab in zip(reversed(cols), reversed(labels)):
            k = u % (len(lab) + 1)
            vals = np.empty(k.size, dtype=object)
            vals[k < len(lab)] = lab.to_numpy(dtype=object)[k[k < len(lab)]]
            vals[k == len(lab)] = None
            out[c] = vals
            u = u // (len(lab) + 1)
        return pd.DataFrame({c: out[c] for c in cols})

    def null_counts(self, columns: Sequence[str]) -> dict[str, int]:
        return {c: int(self.table[c].isna().sum()) for c in columns}

    def check(self, schema: Schema) -> TableCheck:
        return check_table(self.table, schema)

    def sample(self, n: int, seed: int) -> pd.DataFrame:
        pos = sample_positions(len(self.table), n, seed)
        return self.table.iloc[pos].reset_index(drop=True)

    # -- statistics ----------------------------------------------------------------------

    def profile(self, measures: Sequence[str], *, bins: int = 40, lorenz_points: int = 201) -> DatasetProfile:
        profs, hists, lor = {}, {}, {}
        for m in measures:
            s = np.sort(self.table[m].to_numpy(dtype="float64"), kind="quicksort")
            profs[m] = profile_sorted(m, s)
            lor[m] = lorenz_from_sorted(s, lorenz_points)
            hists[m] = log_histogram(s, bins=bins)
        return DatasetProfile(profs, hists, lor)

    def _record_keys(self, thresholds: Thresholds, measures: Sequence[str], filters: Sequence[Filter],
                     by: Sequence[str]) -> tuple[SplitHistogram, np.ndarray]:
        """The split-count histogram and the row of it each record falls in (kept for later calls)."""
        spec = (thresholds, tuple(measures), tuple(filters), tuple(by))
        hit = self._rows.get(spec) if self.cache else None
        if hit is not None:
            return hit
        t = self.table
        parts: list[tuple[str, np.ndarray, np.ndarray]] = []  # (name, codes, sorted labels)
        cols: dict[str, np.ndarray] = {"m": split_counts(t, thresholds)}
        for a in measures:
            sub = restrict_thresholds(thresholds, (a,))
            if sub is None:
                raise ParameterError(f"No splitting threshold for '{a}'.")
            cols[f"m:{a}"] = split_counts(t, sub)
        for i, f in enumerate(filters):
            cols[f"in:{i}"] = np.asarray(f.mask(t), dtype=bool)
        for name, arr in cols.items():
            parts.append((name, *_dense_codes(arr)))
        for c in by:
            k, uniques = column_codes(t, c, sort=True, cache=self.cache)
            labels = uniques.to_numpy(dtype=object)
            if (k < 0).any():  # missing values: a group of their own, sorted last
                k, labels = np.where(k < 0, len(labels), k), np.append(labels, [None])
            parts.append((c, k, labels))
        space = float(np.prod([len(lab) for _, _, lab in parts], dtype=float))
        if space >= 2.0**62:
            raise ParameterError("Too many distinct split counts and groups to count together.",
                                 hint="Group by fewer columns.")
        combined = np.zeros(len(t), dtype=np.int64)
        for _, k, lab in parts:
            combined = combined * np.int64(len(lab)) + k
        u, row_of = sorted_unique(combined, space)
        keys: dict[str, Any] = {}
        for name, _, lab in reversed(parts):
            keys[name] = lab[u % len(lab)]
            u = u // len(lab)
        frame = pd.DataFrame({name: keys[name] for name, _, _ in parts})
        hist = SplitHistogram(frame, np.bincount(row_of, minlength=len(frame)).astype(np.int64), thresholds,
                              tuple(measures), tuple(filters), tuple(by))
        if self.cache:
            self._rows[spec] = (hist, row_of)
            while len(self._rows) > 4:
                self._rows.popitem(last=False)
        return hist, row_of

    def split_histogram(self, thresholds: Any, *, measures: Sequence[str] = (), filters: Sequence[Filter] = (),
                        by: Sequence[str] = ()) -> SplitHistogram:
        return self._record_keys(as_thresholds(thresholds), measures, filters, by)[0]

    def _rows_of(self, key: SplitHistogram) -> np.ndarray:
        """The row of ``key.keys`` each record falls in (``key`` from :meth:`split_histogram`)."""
        for hist, row_of in self._rows.values():
            if hist is key:
                return row_of
        hist, row_of = self._record_keys(key.thresholds, key.measures, key.filters, key.by)
        if not hist.keys.equals(key.keys):
            raise ParameterError("This split-count histogram was not computed by this engine.")
        return row_of

    def cell_aggregates(self, group_by: Sequence[str], aggregates: Sequence[Aggregate],
                        thresholds: Thresholds | None = None) -> CellTable:
        gb = tuple(group_by)
        cells = GroupCells(self.table, cache=self.cache)
        keys, all_cells = cells.all_cells(gb)
        n_cells = len(keys)
        m: np.ndarray | None = None
        out: dict[str, np.ndarray] = {}
        for a in aggregates:
            if a.filter is None:
                cell_of, inside, everyone = all_cells, None, bool((all_cells >= 0).all())
            else:
                cell_of = np.where(a.filter.mask(self.table), all_cells, -1)
                everyone = False
            if not everyone:
                inside = cell_of >= 0
            c = cell_of if everyone else cell_of[inside]
            if a.kind == "count":
                out[a.name] = np.bincount(c, minlength=n_cells)
                continue
            if a.kind == "pieces":
                if m is None:
                    if thresholds is None:
                        raise ParameterError("Counting split rows needs the splitting thresholds.")
                    m = split_counts(self.table, thresholds).astype("float64")
                w = m
            else:
                w = self.table[a.measure].to_numpy(dtype="float64")
                if a.clamp is not None:
                    w = np.clip(w, 0.0, float(a.clamp))
            out[a.name] = np.bincount(c, weights=w if everyone else w[inside], minlength=n_cells)
        return CellTable(gb, keys, out)

    def owner_losses(self, key: SplitHistogram, losses: np.ndarray, owner_col: str,
                     method: Literal["lemma4", "lemma5"] = "lemma4") -> LossDistribution:
        values = np.asarray(losses, dtype=float)[self._rows_of(key)]
        codes, _ = column_codes(self.table, owner_col, sort=True, cache=self.cache)
        owners = codes if (codes >= 0).all() else self.table[owner_col]  # missing ids: owner_losses says so
        with np.errstate(over="ignore", invalid="ignore"):
            ol = owner_losses(values, owners, measure="rho", method=method).to_numpy()
        return distribution_of(ol)

    def realized_losses(self, terms: Sequence[RealizedTerm], thresholds: Thresholds, *, partition_rho: float = 0.0,
                        owner_col: str | None = None, upper: float | None = None
                        ) -> tuple[LossDistribution, LossDistribution | None]:
        t = self.table
        n = len(t)
        realized = np.zeros(n)
        cells = GroupCells(t, cache=self.cache)
        owner_cells = own_real = own_codes = None
        if owner_col is not None:
            own_codes, own_uniques = column_codes(t, owner_col, sort=False, cache=self.cache)
            own_real = np.zeros(len(own_uniques))
            owner_cells = OwnerCells(own_codes, len(own_uniques))
        layouts: dict[tuple, _Layout] = {}  # kept alive: OwnerCells caches pairs by the cells' identity
        for term in terms:
            keys, all_cells = cells.all_cells(term.group_by)
            lk = (term.group_by, term.scope())
            if lk not in layouts:
                inside_scope = np.ones(len(t), dtype=bool)
                for f in lk[1]:
                    inside_scope &= f.mask(t)
                layouts[lk] = _Layout(np.where(inside_scope, all_cells, -1) if lk[1] else all_cells, len(keys))
            layout = layouts[lk]
            cell_of = layout.cell_of
            inside = cell_of >= 0
            if term.measure is None:
                contrib = inside.astype("float64")
            else:
                v = t[term.measure].to_numpy(dtype="float64")
                if term.clamp is not None:
                    v = np.clip(v, 0.0, float(term.clamp))
                contrib = v if inside.all() else np.where(inside, v, 0.0)
            sig = _cell_sigmas(term, keys)
            if len(keys) and np.all(sig == sig[0]) and inside.all():
                tmp = np.square(contrib)
                tmp /= 2.0 * sig[0] ** 2
                realized += tmp
            else:
                realized[inside] += contrib[inside] ** 2 / (2.0 * sig[cell_of[inside]] ** 2)
            if term.extra:
                realized[inside] += term.extra
            if owner_cells is not None:
                own_real += owner_cells.realized(layout, contrib, sig)
                if term.extra_sigma is not None:
                    own_real += owner_cells.realized(layout, inside.astype("float64"),
                                                     np.full(len(keys), term.extra_sigma))
        if partition_rho > 0:
            m = split_counts(t, thresholds).astype("float64")
            realized += partition_rho * m ** 2
            if own_real is not None and own_codes is not None:
                pc = np.bincount(own_codes, weights=m, minlength=own_real.size)
                own_real += partition_rho * pc ** 2
        return distribution_of(realized, upper=upper), (None if own_real is None else distribution_of(own_real))

    def domain_stats(self, budget: Any, *, column: str | None = None, bins: Bins | None = None,
                     distinct: bool = False) -> DomainStats:
        eps = budget(self.table)
        dp = budget.domains()
        idx = dp.index(eps)
        L = dp.L
        counts = np.bincount(idx, minlength=L + 1)[1:]
        hc = hs = dist = None
        mx = None
        if column is not None and distinct:
            codes, _ = pd.factorize(self.table[column], use_na_sentinel=False)
            dist = distinct_max_domain(codes.astype(np.int64), idx, L)
        elif column is not None:
            v = measure_values(self.table, column)
            mx = float(v.max()) if v.size else 0.0
            if bins is not None:
                hc, hs = domain_histogram(v, idx, L, bins)
        return DomainStats(counts, hc, hs, dist, mx)

    def count_above(self, column: str, values: Sequence[float]) -> np.ndarray:
        v = np.sort(measure_values(self.table, column))
        return v.size - np.searchsorted(v, np.asarray(values, dtype=float), side="right")

    def order_statistics(self, column: str, ranks: Sequence[int]) -> np.ndarray:
        v = measure_values(self.table, column)
        r = np.asarray(ranks, dtype=np.int64)
        if r.size and (r.min() < 0 or r.max() >= v.size):
            raise ParameterError(f"Ranks must lie in [0, {v.size - 1}].")
        return np.partition(v, r)[r] if r.size else np.zeros(0)


class _Layout:
    """The records' cells of one query (``cell_of``, −1 outside its scope) for :class:`OwnerCells`."""

    def __init__(self, cell_of: np.ndarray, n_cells: int) -> None:
        self.cell_of = cell_of
        self.n_cells = n_cells


def _cell_sigmas(term: RealizedTerm, keys: pd.DataFrame) -> np.ndarray:
    """σ of each cell of a realized-loss term (one σ, or one per value of the thresholds' group)."""
    sig = np.full(len(keys), float(term.sigma))
    if term.by is not None and term.sigma_by and term.by in keys.columns:
        lookup = dict(term.sigma_by)
        vals = keys[term.by].to_numpy(dtype=object)
        sig = np.array([float(lookup.get(g, term.sigma)) for g in vals]) if len(vals) else sig
    return sig


def measure_values(table: pd.DataFrame, column: str) -> np.ndarray:
    """A column as finite, non-negative float values, or ParameterError (the papers' measures)."""
    if column not in table.columns:
        raise ParameterError(f"Column '{column}' is not in the table.")
    col = table[column]
    v = col.to_numpy(dtype=float) if pd.api.types.is_numeric_dtype(col) else \
        pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
    lowest = float(np.min(v)) if v.size else 0.0
    if v.size and not (lowest >= 0 and np.isfinite(np.max(v))):
        raise ParameterError(f"Column '{column}' must hold finite non-negative numbers to be summed "
                             "or maximised (the papers assume non-negative measures).")
    return v


def sample_positions(n_rows: int, n: int, seed: int) -> np.ndarray:
    """Row positions of a uniform sample without replacement, ascending (shared by every engine)."""
    if n < 1:
        raise ParameterError("A sample needs at least one row.")
    if n >= n_rows:
        return np.arange(n_rows)
    return np.sort(np.random.default_rng(seed).choice(n_rows, size=int(n), replace=False))


def _dense_codes(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each element's index among the sorted distinct values, and those values (O(n) for booleans
    and small whole numbers)."""
    a = np.asarray(arr)
    if a.dtype == bool:
        return a.astype(np.int64), np.array([False, True])
    if a.dtype.kind in "iu" and a.size and int(a.min()) >= 0:
        u, inv = sorted_unique(a.astype(np.int64, copy=False), float(a.max()) + 1.0)
        return inv, u.astype(a.dtype)
    u, inv = np.unique(a, return_inverse=True)
    return inv.astype(np.int64), u


__all__ = ["BOUND_STEPS", "MemoryEngine", "bound_bins", "bound_edges", "column_kind", "distinct_max_domain",
           "distribution_of", "domain_histogram", "measure_values", "sample_positions", "value_bins"]
