"""The unit-splitting release of a workload: Gaussian (or, in secure mode, discrete Gaussian) answers
per cell, realized record and owner losses, in memory or on an engine's statistics."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd
from scipy import stats

from ...core import keysets
from ...core.accounting import LedgerEntry
from ...core.distribution import LossDistribution
from ...core.errors import PolicyError
from ...core.noise_source import Noise, resolve
from ...core.provenance import KEYS_FROM_DATA, KEYS_LISTED, require_public_thresholds
from ...core.release import Release
from ...core.secure import SecureSampler, exact_cell_sums, to_units
from ...core.splitting import split_counts
from ...core.workload import Query, SplittingPolicy, filters, joint_policy_loss
from ...data.codes import GroupCells as _Factorizer
from ...data.codes import OwnerCells as _OwnerCells
from ...data.codes import column_codes
from ...data.dataset import Dataset
from ...engines import EngineDataset, RealizedTerm, is_engine_data
from .selection import PartitionSelection, _select_cells, partition_record_delta, selection_cells, selection_plan
from .stats import (
    PublicKeys,
    QueryStats,
    _key_index,
    engine_workload_stats,
    listed_keys,
    policy_loss_of_histogram,
    table_kinds,
    workload_stats,
)

Z95 = float(stats.norm.ppf(0.975))


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
            sampler: SecureSampler | None = None, allow_data_derived: bool = False,
            noise: Noise | None = None) -> Release:
    """Release every query of ``policy.workload`` with Gaussian noise on split data.

    Parameters
    ----------
    data:
        The records (a Dataset, or a table with the measure/group columns).
    policy:
        Thresholds and workload; the release satisfies P-PRzCDP with P = ``policy``
        (plus the partition-selection δ(r) when ``workload.partition_rho > 0``).
    noise:
        Where the noise comes from (:class:`~prdp_core.core.noise_source.Noise`): ``Noise.teaching(seed)``, a
        seeded teaching/review run, or ``Noise.secure()``. ``rng``/``seed``/``secure``/``sampler`` are the
        legacy spelling of the same choice (:meth:`~prdp_core.core.noise_source.Noise.from_keywords`).
    secure, sampler:
        Secure mode (``Noise.secure()``, ``secure=True`` or a :class:`~prdp_core.core.secure.SecureSampler`): exact
        discrete Gaussian noise from OpenDP, answers on the grid 2^(⌊log₂ T⌋ − bits) (counts on
        the integers), per-record values quantised and summed exactly; σ is calibrated to the
        rounded-up sensitivity ⌈T/g⌉ grid steps, so every record still pays at most
        ρ_q·m(r)². The release has no seed and ``secure=True`` (see :mod:`prdp_core.core.secure`).
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
        set ``owner_realized=False`` to skip them. A release on an engine then keeps their terms (σ, scopes:
        no record value), and :func:`owner_realized_distribution` sums them when asked — on a large table the
        owners' sums cost more than the rest of the release.
    """
    smp, rng, seed = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler).parts()
    if smp is not None and not allow_data_derived:  # a real release takes no threshold computed from the data
        require_public_thresholds(policy.threshold_sources())
    kinds = data.engine.column_kinds() if is_engine_data(data) else \
        table_kinds(data.table if isinstance(data, Dataset) else data)
    public_keys = listed_keys(policy, kinds, public_keys)
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
        assert contrib is not None  # the records are here: one contribution each (_record_delta)
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
            if q.kind == "avg" and sig_c is not None:  # an AVG's count part has its own σ
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
        terms.append(_realized_term(s, policy, sig, sig_c, (public_keys or {}).get(s.query.group_by)))
    thr = policy.thresholds
    filters = tuple(dict.fromkeys(q.filter for q in wl.queries if q.filter is not None))
    own_measures = wl.split_measures()
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
    elif owner:  # left for later (owner_realized_distribution): what the owners' sums need, no record value
        extras[OWNER_TERMS] = OwnerRealizedTerms(tuple(terms), thr, float(wl.partition_rho), owner)
    dist = LossDistribution.from_counts(loss, hist.counts, "rho", base=wl.total_rho)
    return _finish(policy, frames, None, dist, extras, sts=sts, ps=ps, kept=kept, candidates=candidates,
                   public_keys=public_keys, partition_delta=partition_delta, smp=smp, grids={}, mechanism=mechanism,
                   seed=seed, reveal=reveal)


#: The extra of an engine release made with ``owner_realized=False``: what :func:`owner_realized_distribution`
#: needs to sum the owners' realized losses later (private: never in a review export).
OWNER_TERMS = "private_owner_realized_terms"


@dataclass(frozen=True)
class OwnerRealizedTerms:
    """The release's part of its owners' realized losses: each query's term (its σ, scope and group-by), the
    thresholds (the split counts of partition selection), the partition-selection ρ and the owner column."""

    terms: tuple[RealizedTerm, ...]
    thresholds: Any
    partition_rho: float
    owner_col: str


def owner_realized_distribution(data: Any, rel: Release) -> LossDistribution | None:
    """The distribution of the owners' realized losses of a release on ``data``: the one it carries, or — an
    engine release made with ``owner_realized=False`` (the owners' sums are the costly part of a large
    table's release) — summed now in ``data``'s engine from the terms the release kept: the numbers
    ``owner_realized=True`` gives (up to the last bits of an engine's parallel sums). None without an owner
    column.

    Confidential (every owner's loss depends on its records): for the designer, never in review mode."""
    own = rel.extras.get("private_owner_realized_distribution")
    if own is not None:
        return own
    later = rel.extras.get(OWNER_TERMS)
    if later is None or not is_engine_data(data):
        return None
    return data.engine.owner_realized_losses(list(later.terms), later.thresholds,
                                             partition_rho=later.partition_rho, owner_col=later.owner_col)


def _realized_term(s: QueryStats, policy: SplittingPolicy, sig: np.ndarray, sig_c: np.ndarray | None,
                   cells: pd.DataFrame | None = None) -> RealizedTerm:
    """What a record of query s adds to its realized loss: Δ(r)²/(2σ²) with its cell's σ; with a public
    key list (``cells``), only a record in a listed cell."""
    q = s.query
    by = policy.thresholds.group_col
    sigma_by: tuple[tuple[Any, float], ...] = ()
    if by is not None and by in s.keys.columns and s.n_cells and not np.all(sig == sig[0]):
        vals = s.keys[by].to_numpy(dtype=object)
        sigma_by = tuple(dict(zip(vals, (float(x) for x in sig))).items())
    measure = None if q.kind == "count" else q.measure
    clamp = None if (q.kind == "count" or q.split) else float(q.clamp)  # type: ignore[arg-type]  # a top-coded query has its clamp (Query checks it)
    return RealizedTerm(q.group_by, q.filter, measure, clamp, float(sig.max()) if s.n_cells else 1.0,
                        by if sigma_by else None, sigma_by, q.rho_count if q.kind == "avg" else 0.0,
                        float(sig_c[0]) if (q.kind == "avg" and sig_c is not None and len(sig_c)) else None,
                        filters(q.group_by, cells) or () if cells is not None else ())


def _check_key_source(policy: SplittingPolicy, smp: SecureSampler | None, public_keys: PublicKeys | None) -> None:
    wl = policy.workload
    unlisted = [q.group_by for q in wl.queries if q.group_by and not (public_keys and q.group_by in public_keys)]
    if smp is not None and wl.partition_rho <= 0 and unlisted:
        cols = ", ".join(dict.fromkeys(c for gb in unlisted for c in gb if c not in dict(wl.group_keys)))
        raise PolicyError(
            "A secure release cannot take its group keys from the data: which cells exist would reveal "
            f"records (no public key list for {cols}).", hint=KEY_LIST_HINT)


#: How to give a secure release its group keys (the refusal above; the Run page shows it too).
KEY_LIST_HINT = ("List the public keys of each group-by column — 'Public group keys' on the Run page, or "
                 "workload.group_keys in the study config (cells not listed are dropped, listed cells absent from "
                 "the data are released as noisy zeros) — or set a partition-selection ρ on the Policy designer "
                 "page (keys are then chosen privately), or release without group-by.")


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
        est, sd, sig, sig_c, contrib, grid = _secure_query(s, contrib, smp, policy)  # type: ignore[arg-type]  # the caller computes the contributions when smp is set
    elif q.kind == "avg":
        noisy_sum = s.total + rng.normal(0.0, 1.0, s.n_cells) * sig
        noisy_cnt = s.count + rng.normal(0.0, 1.0, s.n_cells) * sig_c
        denom = np.maximum(noisy_cnt, 1.0)
        est = noisy_sum / denom
        # delta-method standard error of the ratio (from released values only)
        sd = np.sqrt(sig**2 + est**2 * sig_c**2) / denom  # type: ignore[operator]  # _sigmas gives both σ of an avg query
    else:
        est = truth + rng.normal(0.0, 1.0, s.n_cells) * sig
        sd = sig
    keep = np.ones(s.n_cells, dtype=bool)
    if q.group_by and q.group_by in kept:
        keep = _key_index(s.keys).isin(kept[q.group_by])
    cols: dict[str, Any] = {"query": pd.Categorical.from_codes(np.full(int(keep.sum()), i, dtype=np.int64),
                                                               pd.Index(query_names))}
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
        KEYS_LISTED if public_keys else "none (no group-by)"
    params: dict[str, Any] = {"policy": policy.to_dict(), "partition_delta": partition_delta if ps else None,
                              "keys": key_source}
    if public_keys:
        params["public_keys"] = {",".join(k): int(len(v)) for k, v in public_keys.items()}
        params["group_keys_source"] = keysets.KEYS_SOURCE  # public lists, typed in: not read from the data
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
        return float(q.clamp)  # type: ignore[arg-type]  # a top-coded query has its clamp (Query checks it)
    return min(float(dict(r)[q.measure]) for _, r in policy.thresholds.rows)  # type: ignore[index]  # a sum or avg query names its measure (Query checks it)


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
        v = np.clip(v, 0.0, float(q.clamp))  # type: ignore[arg-type]  # a top-coded query has its clamp (Query checks it)
    inside = s.cell_of >= 0
    return v if inside.all() else np.where(inside, v, 0.0)  # never changed in place by the callers
