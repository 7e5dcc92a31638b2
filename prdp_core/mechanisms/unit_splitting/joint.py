"""The joint SUM release: one Gaussian release of the vector of SUMs of several measures over the same
split rows (ℓ2 sensitivity √Σ_a T(a)², isotropic or per-measure scaled σ, loss ρ·m(r)²)."""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from ...core.accounting import LedgerEntry
from ...core.errors import ParameterError, PolicyError
from ...core.noise_source import Noise, resolve
from ...core.provenance import KEYS_FROM_DATA, require_public_thresholds
from ...core.release import Release
from ...core.secure import SecureSampler, exact_cell_sums, to_units
from ...core.splitting import DEFAULT_KEY, Thresholds, as_thresholds, split_counts
from ...core.workload import Filter, Query, SplittingPolicy, Workload
from ...data.dataset import Dataset
from .stats import PublicKeys, QueryStats, workload_stats
from .workload_release import Z95, _policy_loss, _public_sensitivity_floor, _record_delta


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
                      allow_data_derived: bool = False, noise: Noise | None = None) -> Release:
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
    noise:
        Where the noise comes from: ``Noise.teaching(seed)`` (seeded teaching/review run) or
        ``Noise.secure()``; ``rng``/``seed``/``secure``/``sampler`` are its legacy spelling.
    rng, seed:
        Randomness of a seeded (teaching/review) run; not used in secure mode.
    secure, sampler:
        Secure mode: each coordinate is an exact discrete Gaussian (OpenDP) on the grid of the
        smallest threshold of its measure, the records' values quantised to that grid and summed
        exactly, at the coordinate's budget T(a)²/(2σ_a²) per cell — so the loss stays ρ·m(r)² (the
        unit sensitivity ⌈T(a)/g⌉ only adds noise). Cells come from ``public_keys`` (a secure
        release takes no keys from the data). Unseeded.
    threshold_source, allow_data_derived:
        Where each threshold came from (:mod:`prdp_core.core.provenance`); a secure release refuses
        thresholds computed from the data unless ``allow_data_derived`` (teaching).
    reveal:
        Attach true answers and errors (teaching mode).

    The release carries each record's policy loss ρ·m(r)² and its exact realized loss
    Σ_a Δ_a(r)²/(2σ_a²) (≤ the policy loss, since r(a) ≤ m(r)·T(a); in secure mode with the
    quantised Δ_a and the effective σ_a).
    """
    table = data.table if isinstance(data, Dataset) else data
    smp, rng, seed = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler).parts()
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
            est, sig[i], contrib, grids[s.query.measure] = _secure_joint_coordinate(  # type: ignore[index]  # a sum query names its measure (Query checks it)
                s, contrib, sig[i], smp, pol)
        else:
            est = truth + rng.normal(0.0, 1.0, s.n_cells) * sig[i]  # type: ignore[union-attr]  # rng is set when there is no exact sampler (NoiseSource.parts)
        cols: dict[str, Any] = {"query": pd.Categorical.from_codes(np.full(s.n_cells, i, dtype=np.int64),
                                                                   pd.Index(names))}
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
