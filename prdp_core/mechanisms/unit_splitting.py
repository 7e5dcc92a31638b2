"""Unit-splitting releases: Gaussian answers of a workload under per-record zCDP.

Per-record zCDP paper, Secs. 5.2–6. A :class:`~prdp_core.workload.SplittingPolicy`
(thresholds + workload) is released query by query:

* **COUNT** — COUNT DISTINCT of record ids per cell, sensitivity 1, Gaussian σ = 1/√(2ρ_q);
  every record in the query's scope pays ρ_q.
* **SUM on split data** — the sum over the split table equals the sum of the original values
  (Lemma 8: no bias); each piece is ≤ T(a), so the sensitivity of a cell is the threshold that
  applies to it: T_g(a) when the thresholds' group column is among the group-by keys, else the
  largest T(a) over all groups (a data-independent bound). σ = Δ/√(2ρ_q); a record in m(r)
  pieces pays ρ_q·m(r)² (group privacy, Lemma 7 as proved).
* **SUM before splitting** (top-coding, the Table 7 baseline) — values clamped at c,
  sensitivity c, σ = c/√(2ρ_q); biased, every record pays ρ_q.
* **AVG** — noisy SUM / noisy COUNT DISTINCT (post-processing), the count with ``rho_count``.
* **Group keys** — either treated as public (the cells present in the data are declared
  public: fine for teaching, a real release needs a public key list) or found by **partition
  selection on split data** (Gaussian thresholding): a cell is kept when its number of split
  rows plus N(0, σ_ps²) exceeds τ = 1 + σ_ps·Φ⁻¹(1 − δ_ps), σ_ps = 1/√(2ρ_ps). Its noisy counts
  cost ρ_ps·m(r)²; in addition the appearance of a cell is an (approximate) event: a record
  whose m(r) pieces are alone in their cell makes it appear with probability
  δ(r) = Φ̄((τ − m(r))/σ_ps), which is small for small records and *large for large ones* —
  the price of finding groups made of few large records (the paper states only the ρ part).
  The budget ρ_ps is split evenly across the workload's distinct group-by sets.

Realized loss (Sec. 6.1) is exact for Gaussian answers: for a record r,
RealizedLoss = Σ_q Δ_q(r)² / (2σ_q²), where Δ_q(r) is the change of q's answer when r is
removed (its value, clamped or not, for a SUM; 1 for a COUNT). It never exceeds P(r)
because r(a) ≤ m(r)·T(a). Owner-level realized loss removes all of an owner's records at
once: Σ_q Σ_cells (Σ_{r ∈ owner, cell} Δ_q(r))² / (2σ_cell²).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import stats

from ..accounting import LedgerEntry
from ..codes import GroupCells as _Factorizer
from ..codes import OwnerCells as _OwnerCells
from ..codes import column_codes
from ..data import Dataset
from ..distribution import LossDistribution
from ..engines import Aggregate, EngineDataset, RealizedTerm, SplitHistogram, is_engine_data
from ..errors import ParameterError, PolicyError
from ..provenance import KEYS_FROM_DATA, require_public_thresholds
from ..release import Release
from ..secure import SecureSampler, exact_cell_sums, to_units
from ..splitting import DEFAULT_KEY, Thresholds, as_thresholds, split_counts
from ..workload import Filter, Query, SplittingPolicy, Workload, joint_policy_loss, summed_policy_loss

Z95 = float(stats.norm.ppf(0.975))


# ---------------------------------------------------------------------------
# Sufficient statistics
# ---------------------------------------------------------------------------


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
            return self.total  # type: ignore[return-value]
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.total / np.maximum(self.count, 1)  # type: ignore[operator]


def _cell_sensitivity(q: Query, policy: SplittingPolicy, keys: pd.DataFrame) -> np.ndarray:
    """Data-independent sensitivity (per piece) of each cell of query q."""
    n_cells = len(keys)
    if q.kind == "count":
        return np.ones(n_cells)
    if not q.split:
        return np.full(n_cells, float(q.clamp))  # type: ignore[arg-type]
    thr = policy.thresholds
    a = q.measure
    rows = thr.as_dict()
    if thr.group_col is None:
        return np.full(n_cells, float(rows[DEFAULT_KEY][a]))  # type: ignore[index]
    if thr.group_col in keys.columns:
        default = rows.get(DEFAULT_KEY)
        out = np.empty(n_cells)
        for i, g in enumerate(keys[thr.group_col].to_numpy()):
            r = rows.get(g, default)
            if r is None:
                raise PolicyError(f"No thresholds for {thr.group_col} = {g!r}.")
            out[i] = float(r[a])  # type: ignore[index]
        return out
    return np.full(n_cells, max(float(r[a]) for r in rows.values()))  # type: ignore[index]


PublicKeys = Mapping[tuple[str, ...], pd.DataFrame]


def _public_cells(table: pd.DataFrame, group_by: tuple[str, ...], keys: pd.DataFrame
                  ) -> tuple[pd.DataFrame, np.ndarray]:
    """Cells from a public key list: each record's row in it (−1 when its key is not listed)."""
    missing = [c for c in group_by if c not in keys.columns]
    if missing:
        raise PolicyError(f"The public key list for {', '.join(group_by)} lacks the column(s) "
                          f"{', '.join(missing)}.")
    k = keys[list(group_by)].drop_duplicates().reset_index(drop=True)
    if len(k) == 0:
        raise PolicyError(f"The public key list for {', '.join(group_by)} is empty.")
    if len(group_by) == 1:
        idx = pd.Index(k[group_by[0]]).get_indexer(table[group_by[0]])
    else:
        idx = pd.MultiIndex.from_frame(k).get_indexer(pd.MultiIndex.from_frame(table[list(group_by)]))
    return k, np.asarray(idx, dtype=np.int64)


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
                cells[q.group_by] = _public_cells(table, q.group_by, public_keys[q.group_by])
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
                v = np.clip(v, 0.0, float(q.clamp))  # type: ignore[arg-type]
            total = np.bincount(cell_of if everyone else cell_of[inside], weights=v, minlength=len(keys))
        out.append(QueryStats(q, keys, cell_of, count, total, _cell_sensitivity(q, policy, keys), pcs))
    return out


# ---------------------------------------------------------------------------
# Partition selection
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionSelection:
    """Gaussian thresholding on split data (see the module docstring).

    ``rho`` is the zCDP budget of one selection (its noisy piece counts cost ρ·m(r)² per
    record); ``delta`` sets the threshold so that a cell holding a single one-piece record
    appears with probability at most δ.
    """

    rho: float
    delta: float = 1e-6

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rho) and self.rho > 0):
            raise ParameterError("The partition-selection budget must be positive.")
        if not (0 < self.delta < 0.5):
            raise ParameterError("The partition-selection δ must be in (0, 0.5).")

    @property
    def sigma(self) -> float:
        return 1.0 / math.sqrt(2.0 * self.rho)

    @property
    def tau(self) -> float:
        return 1.0 + self.sigma * float(stats.norm.isf(self.delta))

    def keep_probability(self, pieces: np.ndarray | float) -> np.ndarray:
        """P(a cell with this many split rows is kept) = Φ̄((τ − pieces)/σ)."""
        return stats.norm.sf((self.tau - np.asarray(pieces, dtype=float)) / self.sigma)

    def record_delta(self, m: np.ndarray | float) -> np.ndarray:
        """δ(r): probability that a record alone in its cell makes that cell appear."""
        return self.keep_probability(m)

    def select(self, pieces: np.ndarray, rng: np.random.Generator | None,
               sampler: SecureSampler | None = None) -> np.ndarray:
        """Cells kept: pieces + N(0, σ²) > τ. With a secure ``sampler`` the noise is OpenDP's discrete
        Gaussian on the grid 2^−bits (sensitivity one piece = 2^bits grid steps, so σ maps exactly)."""
        if sampler is not None:
            g = sampler.grid(1.0)
            units = to_units(np.asarray(pieces, dtype=float), g)
            noisy = sampler.gaussian_answers(units, g, 1.0, self.rho).estimate
            return noisy.reshape(np.shape(pieces)) > self.tau
        noise = rng.normal(0.0, self.sigma, size=np.shape(pieces))  # type: ignore[union-attr]
        return pieces + noise > self.tau


def partition_record_delta(policy: SplittingPolicy, pieces: np.ndarray | float, partition_delta: float = 1e-6,
                           public: Iterable[tuple[str, ...]] = ()) -> np.ndarray:
    """δ(r) added by partition selection for a record cut into ``pieces`` pieces (public function of m).

    The workload's ρ_ps is split over its k distinct group-by sets; a record alone in its cells can
    make one cell appear in each: δ(r) = min(1, k·Φ̄((τ − m(r))/σ)) (basic composition). Zero when the
    workload has no partition selection or no group-by. Group-bys in ``public`` (with a public key
    list) need no selection.
    """
    wl = policy.workload
    sets, ps = selection_plan((q.group_by for q in wl.queries), wl.partition_rho, partition_delta, public)
    m = np.asarray(pieces, dtype=float)
    if ps is None:
        return np.zeros_like(m)
    return np.minimum(1.0, len(sets) * ps.record_delta(m))


def selection_plan(group_bys: Iterable[tuple[str, ...]], partition_rho: float, partition_delta: float,
                   public: Iterable[tuple[str, ...]] = ()) -> tuple[list[tuple[str, ...]], PartitionSelection | None]:
    """The group-by sets whose keys are found by partition selection, and the selection each runs.

    Every distinct non-empty group-by not in ``public`` (sets with a public key list) is selected
    once; ρ_ps = ``partition_rho`` is split evenly over them (basic composition). ``(sets, None)``
    when nothing is selected. The one rule the release, δ(r) and the error analysis share."""
    skip = set(public or ())
    sets = list(dict.fromkeys(gb for gb in group_bys if gb and gb not in skip))
    if partition_rho <= 0 or not sets:
        return sets, None
    return sets, PartitionSelection(partition_rho / len(sets), partition_delta)


def selection_cells(table: pd.DataFrame, group_by: tuple[str, ...], *, factorizer: _Factorizer | None = None
                    ) -> tuple[pd.DataFrame, np.ndarray]:
    """Candidate cells of a partition selection over ``group_by``: the keys present among all records
    (whatever a query's filter) and each record's cell."""
    return (factorizer if factorizer is not None else _Factorizer(table)).all_cells(group_by)


# ---------------------------------------------------------------------------
# Releases
# ---------------------------------------------------------------------------


def _sigmas(st_: QueryStats) -> tuple[np.ndarray, np.ndarray | None]:
    """σ of the sum (or count) part per cell, and σ of the AVG's count part."""
    q = st_.query
    if q.rho <= 0:
        raise PolicyError(f"{q.name()} has no budget (ρ = 0).", hint="Give every query a positive ρ.")
    s = st_.sens / math.sqrt(2.0 * q.rho)
    sc = None
    if q.kind == "avg":
        sc = np.full(st_.n_cells, 1.0 / math.sqrt(2.0 * q.rho_count))
    return s, sc


def release(data: Dataset | pd.DataFrame, policy: SplittingPolicy, *, rng: np.random.Generator | None = None,
            reveal: bool = False, seed: int | None = None, partition_delta: float = 1e-6,
            stats_: list[QueryStats] | None = None, pieces: np.ndarray | None = None,
            owner_col: str | None = None, owner_realized: bool = True, public_keys: PublicKeys | None = None,
            mechanism: str = "unit_splitting.gaussian", secure: bool = False,
            sampler: SecureSampler | None = None, allow_data_derived: bool = False) -> Release:
    """Release every query of ``policy.workload`` with Gaussian noise on split data.

    Parameters
    ----------
    data:
        The records (a Dataset, or a table with the measure/group columns).
    policy:
        Thresholds and workload; the release satisfies P-PRzCDP with P = ``policy``
        (plus the partition-selection δ(r) when ``workload.partition_rho > 0``).
    rng:
        Randomness of a seeded (teaching/review) run; not used in secure mode.
    secure, sampler:
        Secure mode (``secure=True`` or a :class:`~prdp_core.secure.SecureSampler`): exact
        discrete Gaussian noise from OpenDP, answers on the grid 2^(⌊log₂ T⌋ − bits) (counts on
        the integers), per-record values quantised and summed exactly; σ is calibrated to the
        rounded-up sensitivity ⌈T/g⌉ grid steps, so every record still pays at most
        ρ_q·m(r)². The release has no seed and ``secure=True`` (see :mod:`prdp_core.secure`).
    allow_data_derived:
        Secure mode only. By default a secure release refuses thresholds whose
        ``policy.threshold_source`` says they were computed from the confidential data (a
        threshold read off the records leaks through the release, whatever its noise); True lets
        a teaching run use them — the release's params and ledger entry still name them.
    reveal:
        Attach true answers and errors (teaching mode). Never in review exports.
    partition_delta:
        δ of partition selection (ignored when the keys are treated as public).
    stats_, pieces:
        Precomputed sufficient statistics / split counts (caches).
    public_keys:
        A public list of cells per group-by (tuple of columns → DataFrame of key combinations):
        exactly these cells are answered, whatever the data holds. Without it, the cells present in
        the data are used (fine for teaching; a secure release refuses that) unless partition
        selection is on.
    owner_col, owner_realized:
        Column of owners (firms) for owner-level realized losses (defaults to the dataset's);
        set ``owner_realized=False`` to skip them.
    """
    smp, seed = _run_mode(rng, seed, secure, sampler)
    if smp is not None and not allow_data_derived:  # a real release takes no threshold computed from the data
        require_public_thresholds(policy.threshold_sources())
    _check_key_source(policy, smp, public_keys)
    if is_engine_data(data):
        return _release_on_engine(data, policy, rng=rng, smp=smp, reveal=reveal, seed=seed,
                                  partition_delta=partition_delta, owner_col=owner_col, owner_realized=owner_realized,
                                  public_keys=public_keys, mechanism=mechanism)
    table = data.table if isinstance(data, Dataset) else data
    if owner_col is None and isinstance(data, Dataset):
        owner_col = data.schema.owner_col
    wl = policy.workload
    m = split_counts(table, policy.thresholds) if pieces is None else np.asarray(pieces)
    cacheable = isinstance(data, Dataset)  # a dataset's table is immutable: its column codes are kept
    fact = _Factorizer(table, cache=cacheable)
    sts = workload_stats(table, policy, m, public_keys, factorizer=fact) if stats_ is None else stats_
    sets, ps = selection_plan((s.query.group_by for s in sts), wl.partition_rho, partition_delta, public_keys or ())

    def set_pieces(gb: tuple[str, ...]) -> tuple[pd.DataFrame, np.ndarray]:
        keys, cell_of = selection_cells(table, gb, factorizer=fact)
        return keys, np.bincount(cell_of, weights=m.astype("float64"), minlength=len(keys))

    kept, candidates = _select_cells(sets, ps, set_pieces, rng, smp)
    frames = []
    query_names = [f"{i + 1}. {s.query.name()}" for i, s in enumerate(sts)]
    realized = np.zeros(len(table))
    grids: dict[str, float] = {}
    own_real = None
    if owner_col and owner_realized:
        own_codes, own_uniques = column_codes(table, owner_col, sort=False, cache=cacheable)
        own_real = np.zeros(len(own_uniques))
        owner_cells = _OwnerCells(own_codes, len(own_uniques))
    for i, s in enumerate(sts):
        q = s.query
        frame, sig, sig_c, contrib, grid = _answer(i, s, query_names, kept, rng, smp, policy, reveal,
                                                   _record_delta(s, table))
        frames.append(frame)
        if grid is not None:
            grids[query_names[i]] = grid
        inside = s.cell_of >= 0
        if s.n_cells and np.all(sig == sig[0]) and inside.all():  # one σ, no filter: no gathers or copies
            tmp = np.square(contrib)
            tmp /= 2.0 * sig[0] ** 2
            realized += tmp
            del tmp
        else:
            realized[inside] += contrib[inside] ** 2 / (2.0 * sig[s.cell_of[inside]] ** 2)
        if q.kind == "avg":
            realized[inside] += q.rho_count
        if own_real is not None:
            own_real += owner_cells.realized(s, contrib, sig)
            if q.kind == "avg":
                own_real += owner_cells.realized(s, inside.astype("float64"), sig_c)
    if wl.partition_rho > 0:
        realized += wl.partition_rho * m.astype("float64") ** 2
        if own_real is not None:
            pc = np.bincount(own_codes, weights=m.astype("float64"), minlength=len(own_uniques))
            own_real += wl.partition_rho * pc**2
    extras: dict[str, Any] = {"private_realized": realized, "private_pieces": m}
    if ps is not None:
        extras["private_record_delta"] = _by_pieces(m, lambda k: partition_record_delta(policy, k, partition_delta,
                                                                                    public_keys or ()))
    if own_real is not None:
        extras["private_owner_realized"] = pd.Series(own_real, index=own_uniques, name="owner_realized")
    return _finish(policy, frames, _policy_loss(policy, table, m), None, extras, sts=sts, ps=ps, kept=kept,
                   candidates=candidates, public_keys=public_keys, partition_delta=partition_delta, smp=smp,
                   grids=grids, mechanism=mechanism, seed=seed, reveal=reveal)


def engine_workload_stats(data: EngineDataset, policy: SplittingPolicy, public_keys: PublicKeys | None = None, *,
                          selection_sets: Iterable[tuple[str, ...]] = ()
                          ) -> tuple[list[QueryStats], dict[tuple[str, ...], tuple[pd.DataFrame, np.ndarray]]]:
    """:func:`workload_stats` computed by the dataset's engine: per-cell counts, split rows and sums
    of every query (one aggregation per group-by set), with no per-record array (``cell_of`` is
    None); and, for each of ``selection_sets``, the candidate cells and their split rows over all
    records (partition selection). Cells and their order are those of :func:`workload_stats`."""
    eng = data.engine
    eng.validate_policy(policy, data.schema.measures)
    if public_keys:
        raise PolicyError("A public key list is not available for tables held by an engine yet.",
                          hint="Use partition selection, or release a sample held in memory with the list.")
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
            clamp = None if q.split else float(q.clamp)  # type: ignore[arg-type]
            tot = need(q.group_by, Aggregate(f"sum|{q.measure}|{clamp}|{fk}", "sum", q.measure, clamp, q.filter))
        names.append((cnt, pcs, tot))
    sel = list(dict.fromkeys(selection_sets))
    for gb in sel:
        need(gb, Aggregate("pieces|all", "pieces"))
    tables = {gb: eng.cell_aggregates(gb, list(aggs.values()), thr) for gb, aggs in plans.items()}
    out = []
    for q, (cnt, pcs, tot) in zip(policy.workload.queries, names):
        t = tables[q.group_by]
        out.append(QueryStats(q, t.keys, None, t.values[cnt], None if tot is None else t.values[tot],  # type: ignore[arg-type]
                              _cell_sensitivity(q, policy, t.keys), t.values[pcs]))
    return out, {gb: (tables[gb].keys, tables[gb].values["pieces|all"]) for gb in sel}


def _release_on_engine(data: EngineDataset, policy: SplittingPolicy, *, rng: Any, smp: SecureSampler | None,
                       reveal: bool, seed: int | None, partition_delta: float, owner_col: str | None,
                       owner_realized: bool, public_keys: PublicKeys | None, mechanism: str) -> Release:
    """:func:`release` of a table held by an engine: the same answers for the same seed (the same
    statistics, cells in the same order, noise drawn in the same order), with the per-record and
    per-owner losses as distributions computed in the engine."""
    if smp is not None:
        raise PolicyError("Secure releases of tables held by an engine are not available yet.",
                          hint="Run the secure release on a table in memory, or a seeded run here.")
    eng = data.engine
    wl = policy.workload
    owner = owner_col if owner_col is not None else data.schema.owner_col
    group_bys = [q.group_by for q in wl.queries]
    sets, ps = selection_plan(group_bys, wl.partition_rho, partition_delta, public_keys or ())
    sts, sel = engine_workload_stats(data, policy, public_keys, selection_sets=sets if ps is not None else ())
    kept, candidates = _select_cells(sets, ps, sel.__getitem__, rng, smp)
    query_names = [f"{i + 1}. {s.query.name()}" for i, s in enumerate(sts)]
    frames, terms = [], []
    for i, s in enumerate(sts):
        frame, sig, sig_c, _, _ = _answer(i, s, query_names, kept, rng, smp, policy, reveal, None)
        frames.append(frame)
        terms.append(_realized_term(s, policy, sig, sig_c))
    thr = policy.thresholds
    filters = tuple(dict.fromkeys(q.filter for q in wl.queries if q.filter is not None))
    own_measures = () if wl.joint else tuple(dict.fromkeys(q.measure for q in wl.queries  # type: ignore[misc]
                                                           if q.split and q.kind != "count"))
    hist = eng.split_histogram(thr, measures=own_measures, filters=filters)
    loss = policy_loss_of_histogram(policy, hist)
    # a record's realized loss never exceeds its policy loss: the largest one bounds the histogram
    realized, own_real = eng.realized_losses(terms, thr, partition_rho=wl.partition_rho,
                                             owner_col=owner if owner_realized else None,
                                             upper=float(loss.max()) * (1 + 1e-9) if loss.size else None)
    extras: dict[str, Any] = {"private_realized_distribution": realized, "private_pieces_histogram": hist}
    if ps is not None:
        delta = partition_record_delta(policy, hist.pieces(), partition_delta, public_keys or ())
        extras["private_record_delta_distribution"] = LossDistribution.from_counts(delta, hist.counts)
    if own_real is not None:
        extras["private_owner_realized_distribution"] = own_real
    dist = LossDistribution.from_counts(loss, hist.counts, "rho", base=wl.total_rho)
    return _finish(policy, frames, None, dist, extras, sts=sts, ps=ps, kept=kept, candidates=candidates,
                   public_keys=public_keys, partition_delta=partition_delta, smp=smp, grids={}, mechanism=mechanism,
                   seed=seed, reveal=reveal)


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


def _realized_term(s: QueryStats, policy: SplittingPolicy, sig: np.ndarray, sig_c: np.ndarray | None
                   ) -> RealizedTerm:
    """What a record of query s adds to its realized loss: Δ(r)²/(2σ²) with its cell's σ."""
    q = s.query
    by = policy.thresholds.group_col
    sigma_by: tuple[tuple[Any, float], ...] = ()
    if by is not None and by in s.keys.columns and s.n_cells and not np.all(sig == sig[0]):
        vals = s.keys[by].to_numpy(dtype=object)
        sigma_by = tuple(dict(zip(vals, (float(x) for x in sig))).items())
    measure = None if q.kind == "count" else q.measure
    clamp = None if (q.kind == "count" or q.split) else float(q.clamp)  # type: ignore[arg-type]
    return RealizedTerm(q.group_by, q.filter, measure, clamp, float(sig.max()) if s.n_cells else 1.0,
                        by if sigma_by else None, sigma_by, q.rho_count if q.kind == "avg" else 0.0,
                        float(sig_c[0]) if (q.kind == "avg" and sig_c is not None and len(sig_c)) else None)


def _run_mode(rng: Any, seed: int | None, secure: bool, sampler: SecureSampler | None
              ) -> tuple[SecureSampler | None, int | None]:
    """The secure sampler of a run (None for a seeded one, which needs a numpy Generator) and its seed."""
    smp = sampler if sampler is not None else (SecureSampler() if secure else None)
    if smp is None and not isinstance(rng, np.random.Generator):
        raise ParameterError("Pass a numpy random Generator as rng (seeded run) or secure=True (real release).")
    return smp, (None if smp is not None else seed)  # secure runs are unseeded


def _check_key_source(policy: SplittingPolicy, smp: SecureSampler | None, public_keys: PublicKeys | None) -> None:
    wl = policy.workload
    unlisted = [q.group_by for q in wl.queries if q.group_by and not (public_keys and q.group_by in public_keys)]
    if smp is not None and wl.partition_rho <= 0 and unlisted:
        raise PolicyError(
            "A secure release cannot take its group keys from the data: which cells exist would reveal "
            "records.", hint="Set a partition-selection ρ on the Policy designer page (keys are then chosen "
                             "privately), give a public list of keys, or release without group-by.")


def _select_cells(sets: list[tuple[str, ...]], ps: PartitionSelection | None, set_pieces: Any, rng: Any,
                  smp: SecureSampler | None) -> tuple[dict[tuple[str, ...], pd.Index], dict[tuple[str, ...], int]]:
    """Partition selection: the cells kept in each selected group-by set (noise drawn set by set, in
    order), from ``set_pieces(gb)`` = (candidate keys, split rows per candidate)."""
    kept: dict[tuple[str, ...], pd.Index] = {}
    candidates: dict[tuple[str, ...], int] = {}
    if ps is not None:
        for gb in sets:
            keys, pcs = set_pieces(gb)
            kept[gb] = _key_index(keys[ps.select(pcs, rng, smp)])
            candidates[gb] = len(keys)
    return kept, candidates


def _answer(i: int, s: QueryStats, query_names: list[str], kept: Mapping[tuple[str, ...], pd.Index], rng: Any,
            smp: SecureSampler | None, policy: SplittingPolicy, reveal: bool, contrib: np.ndarray | None
            ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray | None, np.ndarray | None, float | None]:
    """Query i's noisy answers (its rows of the answers table), σ of its sum or count part per cell,
    σ of an AVG's count part, the records' contributions (quantised in secure mode) and the grid."""
    q = s.query
    sig, sig_c = _sigmas(s)
    truth = s.true_answer()
    grid = None
    if smp is not None:
        est, sd, sig, sig_c, contrib, grid = _secure_query(s, contrib, smp, policy)  # type: ignore[arg-type]
    elif q.kind == "avg":
        noisy_sum = s.total + rng.normal(0.0, 1.0, s.n_cells) * sig  # type: ignore[operator]
        noisy_cnt = s.count + rng.normal(0.0, 1.0, s.n_cells) * sig_c  # type: ignore[operator]
        denom = np.maximum(noisy_cnt, 1.0)
        est = noisy_sum / denom
        # delta-method standard error of the ratio (from released values only)
        sd = np.sqrt(sig**2 + est**2 * sig_c**2) / denom  # type: ignore[operator]
    else:
        est = truth + rng.normal(0.0, 1.0, s.n_cells) * sig
        sd = sig
    keep = np.ones(s.n_cells, dtype=bool)
    if q.group_by and q.group_by in kept:
        keep = _key_index(s.keys).isin(kept[q.group_by])
    cols: dict[str, Any] = {"query": pd.Categorical.from_codes(np.full(int(keep.sum()), i), query_names)}
    for c in s.keys.columns:
        cols[c] = s.keys[c].array[keep]
    cols.update({"estimate": est[keep], "sigma": sd[keep], "ci_low": (est - Z95 * sd)[keep],
                 "ci_high": (est + Z95 * sd)[keep]})
    if reveal:
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(truth != 0, np.abs(est - truth) / np.abs(truth), np.nan)
        cols.update({"true": truth[keep], "n_records": s.count[keep], "error": (est - truth)[keep],
                     "rel_error": rel[keep]})
    return pd.DataFrame(cols), sig, sig_c, contrib, grid


def _finish(policy: SplittingPolicy, frames: list[pd.DataFrame], loss: np.ndarray | None,
            loss_distribution: LossDistribution | None, extras: dict[str, Any], *, sts: list[QueryStats],
            ps: PartitionSelection | None, kept: Mapping[tuple[str, ...], pd.Index],
            candidates: Mapping[tuple[str, ...], int], public_keys: PublicKeys | None, partition_delta: float,
            smp: SecureSampler | None, grids: Mapping[str, float], mechanism: str, seed: int | None,
            reveal: bool) -> Release:
    """The Release of a unit-splitting run: answers, parameters, the public parts of extras, the
    ledger entry (the policy P as its loss)."""
    answers = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    unlisted = [q.group_by for q in policy.workload.queries
                if q.group_by and not (public_keys and q.group_by in public_keys)]
    key_source = "partition selection" if ps else KEYS_FROM_DATA if unlisted else \
        "public (a listed key set)" if public_keys else "none (no group-by)"
    params: dict[str, Any] = {"policy": policy.to_dict(), "partition_delta": partition_delta if ps else None,
                              "keys": key_source}
    if public_keys:
        params["public_keys"] = {",".join(k): int(len(v)) for k, v in public_keys.items()}
    if ps is not None:
        params["partition_selection"] = {
            "selections": len(kept), "rho_each": ps.rho, "sigma": ps.sigma, "tau": ps.tau,
            "record_delta": "δ(r) = min(1, k·Φ̄((τ − m(r))/σ)) on top of P(r): approximate, not pure zCDP"}
    if smp is not None:
        params["secure"] = smp.describe()
    extras["partition_selection"] = None if ps is None else {
        "rho_each": ps.rho, "sigma": ps.sigma, "tau": ps.tau, "delta": ps.delta,
        "kept": {",".join(k): len(v) for k, v in kept.items()},
        "candidates": {",".join(k): n for k, n in candidates.items()}}
    if smp is not None:
        extras["grid"] = dict(grids)
    label = f"Unit splitting: {len(sts)} quer{'y' if len(sts) == 1 else 'ies'}"
    if ps is not None:
        label += " + partition selection (adds δ(r) per record)"
    entry = LedgerEntry(label=label,
                        mechanism=mechanism, loss=policy, params=params, seed=seed, secure=smp is not None)
    return Release(mechanism=mechanism, answers=answers, measure="rho", loss=loss, entries=(entry,),
                   params=params, seed=seed, secure=smp is not None, truth_included=reveal, extras=extras,
                   loss_distribution=loss_distribution)


def _public_sensitivity_floor(q: Query, policy: SplittingPolicy) -> float:
    """The smallest sensitivity a cell of q can have, from the policy alone (never from the data):
    1 for COUNT, the clamp for a top-coded sum, the smallest T(a) over every thresholds row."""
    if q.kind == "count":
        return 1.0
    if not q.split:
        return float(q.clamp)  # type: ignore[arg-type]
    return min(float(dict(r)[q.measure]) for _, r in policy.thresholds.rows)  # type: ignore[index]


def _secure_query(s: QueryStats, contrib: np.ndarray, smp: SecureSampler, policy: SplittingPolicy
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, float]:
    """Secure answers of one query: (estimate, sd, σ of the sum/count part, σ of an AVG's count part,
    each record's quantised contribution in value units, grid step).

    COUNT: integer counts + discrete Gaussian (Δ = 1). SUM/AVG: each record's contribution is
    quantised to the grid of the smallest sensitivity the policy allows (a public value: which groups
    are present must not change the grid) and summed exactly; the noise per cell is calibrated to
    ⌈T_cell/g⌉ grid steps."""
    q = s.query
    if q.kind == "count":
        a = smp.gaussian_answers(s.count.astype(np.int64), 1.0, 1.0, q.rho)
        return a.estimate, a.scale, a.scale, None, contrib, 1.0
    g = smp.grid(_public_sensitivity_floor(q, policy))
    units = to_units(contrib, g)
    inside = s.cell_of >= 0
    totals = exact_cell_sums(s.cell_of[inside], units[inside], s.n_cells)
    a = smp.gaussian_answers(totals, g, s.sens, q.rho)
    quantised = units.astype(np.float64) * g
    if q.kind == "sum":
        return a.estimate, a.scale, a.scale, None, quantised, g
    c = smp.gaussian_answers(s.count.astype(np.int64), 1.0, 1.0, q.rho_count)
    denom = np.maximum(c.estimate, 1.0)
    est = a.estimate / denom
    sd = np.sqrt(a.scale**2 + est**2 * c.scale**2) / denom
    return est, sd, a.scale, c.scale, quantised, g


def _policy_loss(policy: SplittingPolicy, table: pd.DataFrame, m: np.ndarray) -> np.ndarray:
    """P(r) for every record: the public policy function evaluated on the table.

    A joint workload's P depends on a record only through its split count m(r) (ρ_q·m(r)² for
    split queries, ρ_q for flat ones, filters exempting records), so the split counts at hand are
    reused instead of splitting the table again; other workloads evaluate ``policy(table)``.
    tests/audit/test_unit_splitting_loss_audit.py checks both give the same losses."""
    if not policy.workload.joint:
        return policy(table)
    return joint_policy_loss(policy, m, lambda f: f.mask(table))


def _by_pieces(m: np.ndarray, f: Any) -> np.ndarray:
    """``f(m)`` for a function of the split count alone, evaluated once per distinct count and
    gathered (elementwise functions give the same values either way)."""
    m = np.asarray(m)
    if m.size and m.dtype.kind in "iu" and 0 <= int(m.min()) and int(m.max()) <= 4 * m.size:
        return np.asarray(f(np.arange(int(m.max()) + 1, dtype=m.dtype)))[m]
    return np.asarray(f(m))


def _record_delta(s: QueryStats, table: pd.DataFrame) -> np.ndarray:
    """Δ_q(r): change of the record's cell answer (sum part) when r is removed."""
    q = s.query
    if q.kind == "count":
        return (s.cell_of >= 0).astype("float64")
    v = table[q.measure].to_numpy(dtype="float64")
    if not q.split:
        v = np.clip(v, 0.0, float(q.clamp))  # type: ignore[arg-type]
    inside = s.cell_of >= 0
    return v if inside.all() else np.where(inside, v, 0.0)  # never changed in place by the callers


def _key_index(keys: pd.DataFrame) -> pd.Index:
    """The cells' keys as an index (MultiIndex for several group-by columns)."""
    cols = list(keys.columns)
    return pd.MultiIndex.from_frame(keys) if len(cols) > 1 else pd.Index(keys[cols[0]])


# ---------------------------------------------------------------------------
# Baselines and joint releases
# ---------------------------------------------------------------------------


def topcode_workload(workload: Workload, clamps: Mapping[str, float]) -> Workload:
    """The same workload with every SUM/AVG answered before splitting, top-coded at ``clamps``
    (the Table 7 schemes): flat losses, sensitivity = the clamp, biased sums."""
    qs = []
    for q in workload.queries:
        if q.kind == "count":
            qs.append(q)
            continue
        if q.measure not in clamps:
            raise PolicyError(f"No top-coding bound for '{q.measure}'.")
        qs.append(replace(q, split=False, clamp=float(clamps[q.measure])))
    return Workload(tuple(qs), partition_rho=0.0, joint=workload.joint)


def topcode_policy(policy: SplittingPolicy, clamps: Mapping[str, float]) -> SplittingPolicy:
    """A flat (global zCDP) policy: the workload top-coded at ``clamps``; thresholds are unused."""
    return replace(policy, workload=topcode_workload(policy.workload, clamps))


def joint_sum_sigmas(thresholds: Mapping[str, float], rho: float, *, scaled: bool = True) -> dict[str, float]:
    """σ per measure of a joint Gaussian release of SUM(a) for several measures of the same split rows.

    One piece changes the vector of sums by at most (T(a))_a. With ``scaled=False`` the noise is
    isotropic with the ℓ2 sensitivity √(Σ_a T(a)²): σ = √(Σ T²)/√(2ρ) on every coordinate. With
    ``scaled=True`` each coordinate is divided by T(a) first (ℓ2 sensitivity √k), i.e.
    σ_a = T(a)·√k/√(2ρ) — the same as k separate releases at ρ/k each. Both forms have the same
    total variance k·Σ_a T(a)²/(2ρ); the scaled one gives every measure the same relative noise
    σ_a/T(a), the isotropic one favours measures with large thresholds. Either way a record in
    m(r) pieces pays ρ·m(r)².
    """
    t = {a: float(v) for a, v in thresholds.items()}
    if not t or rho <= 0:
        raise ParameterError("Give at least one threshold and a positive ρ.")
    if scaled:
        k = len(t)
        return {a: v * math.sqrt(k) / math.sqrt(2.0 * rho) for a, v in t.items()}
    l2 = math.sqrt(sum(v * v for v in t.values()))
    return {a: l2 / math.sqrt(2.0 * rho) for a in t}


def joint_sum_release(data: Dataset | pd.DataFrame, thresholds: Mapping[Any, Any] | Thresholds,
                      measures: Iterable[str], *, rho: float, rng: np.random.Generator | None = None,
                      group_col: str | None = None, group_by: tuple[str, ...] = (), filter: Filter | None = None,
                      scaled: bool = True, reveal: bool = False, seed: int | None = None,
                      public_keys: PublicKeys | None = None, secure: bool = False,
                      sampler: SecureSampler | None = None, threshold_source: Mapping[str, str] | None = None,
                      allow_data_derived: bool = False) -> Release:
    """One joint Gaussian release of the vector (SUM(a))_a, a ∈ ``measures``, per cell of split data.

    Per-record zCDP paper, Sec. 5.2 (notes: ℓ2 sensitivity of a vector of sums). The table is split
    once on ``measures`` (m(r) = max over them of ⌈r(a)/T(a)⌉); one piece changes the cell's vector
    of sums by at most (T(a))_a, so its ℓ2 sensitivity is √(Σ_a T(a)²) (per cell: the thresholds row
    of the cell's group when ``group_col`` is a group-by key, else the largest T(a) of every row).

    Parameters
    ----------
    thresholds, group_col:
        Splitting thresholds T(a) (``{measure: T}``, or per group with ``group_col``). Only the
        ``measures`` released are used for splitting.
    measures:
        The measures whose sums are released together (at least one).
    rho:
        zCDP budget of the whole vector release. Every record passing ``filter`` pays ρ·m(r)²
        (Lemma 7 as proved); records outside it pay nothing.
    scaled:
        True (default): each coordinate gets σ_a = T(a)·√k/√(2ρ) (k measures; the vector divided by
        T(a) has ℓ2 sensitivity √k), the same relative noise for every measure. False: one σ =
        √(Σ_a T(a)²)/√(2ρ) on every coordinate (the textbook ℓ2 calibration). Both have the same
        total variance and the same loss.
    group_by, filter, public_keys:
        Cells as in :func:`release` (public keys, or the cells present in the data for teaching).
    rng, seed:
        Randomness of a seeded (teaching/review) run; not used in secure mode.
    secure, sampler:
        Secure mode: each coordinate is an exact discrete Gaussian (OpenDP) on the grid of the
        smallest threshold of its measure, the records' values quantised to that grid and summed
        exactly, at the coordinate's budget T(a)²/(2σ_a²) per cell — so the loss stays ρ·m(r)² (the
        unit sensitivity ⌈T(a)/g⌉ only adds noise). Cells come from ``public_keys`` (a secure
        release takes no keys from the data). Unseeded.
    threshold_source, allow_data_derived:
        Where each threshold came from (:mod:`prdp_core.provenance`); a secure release refuses
        thresholds computed from the data unless ``allow_data_derived`` (teaching).
    reveal:
        Attach true answers and errors (teaching mode).

    The release carries each record's policy loss ρ·m(r)² and its exact realized loss
    Σ_a Δ_a(r)²/(2σ_a²) (≤ the policy loss, since r(a) ≤ m(r)·T(a); in secure mode with the
    quantised Δ_a and the effective σ_a).
    """
    table = data.table if isinstance(data, Dataset) else data
    smp, seed = _run_mode(rng, seed, secure, sampler)
    if smp is not None and not allow_data_derived:
        require_public_thresholds(dict(threshold_source or {}))
    if smp is not None and group_by and not (public_keys and tuple(group_by) in public_keys):
        raise PolicyError("A secure joint release cannot take its group keys from the data: which cells exist "
                          "would reveal records.", hint="Give a public list of keys, or release without group-by.")
    ms = tuple(dict.fromkeys(str(a) for a in measures))
    if not ms:
        raise PolicyError("Choose at least one measure for the joint release.")
    if not (isinstance(rho, (int, float)) and math.isfinite(rho) and rho > 0):
        raise ParameterError("The budget ρ of the joint release must be a positive number.")
    thr = as_thresholds(thresholds, group_col=group_col)
    missing = [a for a in ms if a not in thr.measures]
    if missing:
        raise PolicyError(f"'{missing[0]}' has no splitting threshold.", hint="Give a threshold for every measure "
                                                                              "released.")
    rows = {g: {a: dict(r)[a] for a in ms} for g, r in thr.rows}
    sub = as_thresholds(rows, group_col=thr.group_col) if thr.group_col else as_thresholds(rows[DEFAULT_KEY])
    k = len(ms)
    # the same loss as k SUMs at ρ/k each on one split table: Σ_a (ρ/k)·m(r)² = ρ·m(r)²
    pol = SplittingPolicy(sub, Workload(tuple(Query("sum", a, rho=rho / k, split=True, group_by=tuple(group_by),
                                                    filter=filter) for a in ms), joint=True))
    m = split_counts(table, sub)
    sts = workload_stats(table, pol, m, public_keys)
    sens = np.vstack([s.sens for s in sts])  # k × cells, per-piece T(a) of each cell
    if scaled:
        sig = sens * math.sqrt(k) / math.sqrt(2.0 * rho)
    else:
        sig = np.broadcast_to(np.sqrt(np.square(sens).sum(axis=0)) / math.sqrt(2.0 * rho), sens.shape)
    names = [f"{i + 1}. {s.query.name()} (joint)" for i, s in enumerate(sts)]
    frames = []
    realized = np.zeros(len(table))
    cell_of = sts[0].cell_of
    inside = cell_of >= 0
    grids: dict[str, float] = {}
    sig = np.array(sig, dtype=float)
    for i, s in enumerate(sts):
        truth = s.true_answer()
        contrib = _record_delta(s, table)
        if smp is not None:
            est, sig[i], contrib, grids[s.query.measure] = _secure_joint_coordinate(  # type: ignore[index]
                s, contrib, sig[i], smp, pol)
        else:
            est = truth + rng.normal(0.0, 1.0, s.n_cells) * sig[i]  # type: ignore[union-attr]
        cols: dict[str, Any] = {"query": pd.Categorical.from_codes(np.full(s.n_cells, i), names)}
        for c in s.keys.columns:
            cols[c] = s.keys[c].array
        cols.update({"estimate": est, "sigma": np.array(sig[i]), "ci_low": est - Z95 * sig[i],
                     "ci_high": est + Z95 * sig[i]})
        if reveal:
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.where(truth != 0, np.abs(est - truth) / np.abs(truth), np.nan)
            cols.update({"true": truth, "n_records": s.count, "error": est - truth, "rel_error": rel})
        frames.append(pd.DataFrame(cols))
        realized[inside] += contrib[inside] ** 2 / (2.0 * sig[i][cell_of[inside]] ** 2)
    loss = _policy_loss(pol, table, m)
    params: dict[str, Any] = {
        "policy": pol.to_dict(), "measures": list(ms), "rho": float(rho), "scaled": bool(scaled),
        "sigma": "σ_a = T(a)·√k/√(2ρ)" if scaled else "σ = √(Σ_a T(a)²)/√(2ρ)",
        "keys": "public (a listed key set)" if public_keys else KEYS_FROM_DATA if group_by else "none (no group-by)"}
    if threshold_source:
        params["policy"]["threshold_source"] = dict(threshold_source)
    extras: dict[str, Any] = {"private_realized": realized, "private_pieces": m}
    if smp is not None:
        params["secure"] = smp.describe()
        extras["grid"] = grids
    entry = LedgerEntry(label=f"Unit splitting: joint SUM of {', '.join(ms)}",
                        mechanism="unit_splitting.joint_gaussian", loss=pol, params=params, seed=seed,
                        secure=smp is not None)
    return Release(mechanism="unit_splitting.joint_gaussian", answers=pd.concat(frames, ignore_index=True),
                   measure="rho", loss=loss, entries=(entry,), params=params, seed=seed, truth_included=reveal,
                   secure=smp is not None, extras=extras)


def _secure_joint_coordinate(s: QueryStats, contrib: np.ndarray, sig: np.ndarray, smp: SecureSampler,
                             policy: SplittingPolicy) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One coordinate of a secure joint release: (estimate, effective σ per cell, quantised contributions,
    grid). Each cell's budget is T_cell²/(2σ_cell²) (the coordinate's share of ρ, σ from the public
    thresholds), noise from OpenDP's discrete Gaussian at ⌈T_cell/g⌉ grid steps."""
    g = smp.grid(_public_sensitivity_floor(s.query, policy))
    units = to_units(contrib, g)
    inside = s.cell_of >= 0
    totals = exact_cell_sums(s.cell_of[inside], units[inside], s.n_cells)
    budget = np.square(np.asarray(s.sens, dtype=float)) / (2.0 * np.square(sig))
    est, eff = np.empty(s.n_cells), np.empty(s.n_cells)
    for b in np.unique(budget):  # cells of one thresholds row share a budget
        rows = np.flatnonzero(budget == b)
        a = smp.gaussian_answers(totals[rows], g, np.asarray(s.sens)[rows], float(b))
        est[rows], eff[rows] = a.estimate, a.scale
    return est, eff, units.astype(np.float64) * g, g


def policy_for_thresholds(policy: SplittingPolicy, thresholds: Mapping[str, float]) -> SplittingPolicy:
    """The same workload with other (single-row) thresholds — for sweeps."""
    return SplittingPolicy(as_thresholds(dict(thresholds)), policy.workload)


__all__ = ["PartitionSelection", "QueryStats", "engine_workload_stats", "joint_sum_release", "joint_sum_sigmas", "policy_for_thresholds",
           "policy_loss_of_histogram", "release", "selection_cells", "selection_plan", "topcode_policy", "topcode_workload", "workload_stats"]
