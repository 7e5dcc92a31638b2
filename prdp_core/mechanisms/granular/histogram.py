"""Histograms of granular DP as releases: Theorem 15's heavy-hitter histogram and the standard one.

Both return a :class:`~prdp_core.core.release.Release` with each record's whole-record loss; the
heavy-hitter histogram counts its listed cells with Lap(4/ε) after the calibrated PrivHeavyHitter,
the standard histogram adds Lap(2/ε) to every cell (lazily above 2^20 cells) and publishes those
above a public threshold. Also their accuracy against the truth and a side-by-side of cells.

Secure mode (``secure=True`` or a ``sampler``, :mod:`prdp_core.core.secure`): the counts are integers, so
the Laplace noise is replaced by OpenDP's exact discrete Laplace on the integer grid, unseeded. For
an integer change k of a count, DLap(b) has likelihood ratio at most e^{k/b}, the bound of Lap(b), so
the standard histogram and the counts keep their loss (OpenDP's map confirms it before the draw).
PrivHeavyHitter's threshold tests (d ≥ 2) are calibrated by the exact accountant of the discrete
noise (:mod:`.discrete`: a step-function tail; λ ≈ 6.0/ε0 instead of 5.70/ε0 at ν = 0.01), and the
release states the ε0 that accountant delivers. The standard histogram's lazy sampling of empty cells
(above 2^20 cells) draws continuous tails: refused in secure mode, as are domains read from the data
(such a release is teaching-only).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from ...core import noise as _noise
from ...core.accounting import FlatLoss, LedgerEntry
from ...core.errors import ParameterError, PolicyError, ResourceLimitError
from ...core.noise_source import Noise, resolve
from ...core.release import Release
from ...core.secure import SecureSampler
from ...core.validate import positive as _pos
from .calibration import CalibrationMethod, HeavyHitterCalibration, calibrate_heavy_hitter_histogram
from .data import AttributeData, TrueHistogram, _row_keys, true_histogram
from .discrete import calibrate_discrete
from .heavy_hitters import priv_heavy_hitters

#: Largest number of cells a standard histogram materialises densely.
DENSE_LIMIT: int = 2**20
#: Largest number of cells a histogram may release.
MAX_RELEASED: int = 1_000_000
#: Two-sided 95% half-width of Laplace(b) noise, in units of b: P[|Lap(b)| > b·ln 20] = 5%.
LAPLACE_CI95 = math.log(20.0)


# ---------------------------------------------------------------------------
# Histograms as releases
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HistogramPlan:
    """A granular-DP histogram before any data (:class:`prdp_core.mechanisms.contract.Plan`): its kind, per-attribute
    budget and number of attributes fix every record's whole-record ε.

    ``kind`` — ``"heavy_hitter"`` (Theorem 15) or ``"standard"`` (Laplace(2/ε) on every cell);
    ``eps`` — the per-attribute ε0 (heavy hitter; pure ∇0DP) or the ε of the standard histogram;
    ``d`` — the number of attributes (public); ``nu``, ``method`` — the heavy-hitter error target and
    calibration; ``threshold`` — the standard histogram's public release threshold (None: its default);
    ``secure`` — calibrated for the exact discrete noise of a secure run (heavy hitter).
    """

    kind: Literal["heavy_hitter", "standard"]
    eps: float
    d: int
    nu: float = 0.01
    method: CalibrationMethod = "exact"
    threshold: float | None = None
    secure: bool = False

    loss_kind: ClassVar[str] = "eps"
    #: record_loss is what the release's ledger entry charges every record.
    exact: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.kind not in ("heavy_hitter", "standard"):
            raise ParameterError(f"Unknown histogram '{self.kind}'.", hint="Use 'heavy_hitter' or 'standard'.")
        if isinstance(self.d, bool) or not isinstance(self.d, (int, np.integer)) or self.d < 1:
            raise ParameterError(f"The number of attributes must be a positive whole number (got {self.d!r}).")

    def calibration(self) -> HeavyHitterCalibration:
        """The heavy-hitter noise for ε0: the corrected calibration, or the discrete accountant's (secure)."""
        if self.kind != "heavy_hitter":
            raise ParameterError("Only the heavy-hitter histogram has a calibration.")
        if not self.secure:
            return calibrate_heavy_hitter_histogram(self.eps, self.nu, self.d, method=self.method)
        if self.method != "exact":
            raise ParameterError("A secure heavy-hitter histogram is calibrated by the exact accountant of its "
                                 "discrete noise.", hint="Use method='exact'.")
        return calibrate_discrete(self.eps, self.nu, self.d)

    @property
    def attribute_eps(self) -> float:
        """The delivered per-attribute ε (the heavy hitter's exact ε0 ≤ ``eps``; the standard histogram: ε)."""
        return self.calibration().delivered if self.kind == "heavy_hitter" else float(self.eps)

    @property
    def whole_record_eps(self) -> float:
        """The ε of a change of a whole record (group privacy over the d attributes for the lists)."""
        return self.calibration().whole_record(self.d) if self.kind == "heavy_hitter" else float(self.eps)

    def record_loss(self, records: AttributeData | int) -> np.ndarray:
        """Every record's whole-record ε (``records``: the attribute data, or its number of records)."""
        n = int(records) if isinstance(records, (int, np.integer)) else int(records.n)
        return np.full(n, self.whole_record_eps)


def _answers(data: AttributeData, codes: np.ndarray, estimate: np.ndarray, scale: float,
             true: np.ndarray | None) -> tuple[pd.DataFrame, np.ndarray]:
    """Answer table (largest estimates first) and the released cells' codes in the same order."""
    order = np.argsort(-np.asarray(estimate, dtype=float), kind="stable")
    codes, estimate = np.asarray(codes)[order], np.asarray(estimate, dtype=float)[order]
    df = data.labels(codes)
    df["estimate"] = estimate
    df["scale"] = scale
    df["ci_low"] = estimate - LAPLACE_CI95 * scale
    df["ci_high"] = estimate + LAPLACE_CI95 * scale
    if true is not None:
        df["true"] = np.asarray(true, dtype=float)[order]
        df["error"] = df["estimate"] - df["true"]
        df["abs_error"] = np.abs(df["error"])
    return df, codes


def _true_counts_of(data: AttributeData, codes: np.ndarray, truth: TrueHistogram) -> np.ndarray:
    keys = _row_keys(codes, data.domain_sizes)
    pos = np.searchsorted(truth.keys, keys)
    pos = np.minimum(pos, max(truth.keys.size - 1, 0))
    hit = truth.keys.size > 0
    found = (truth.keys[pos] == keys) if hit else np.zeros(keys.size, dtype=bool)
    return np.where(found, truth.counts[pos] if hit else 0, 0)


def _check_public_domains(smp: SecureSampler | None, data: AttributeData, what: str) -> None:
    """Refuse a secure histogram (``smp`` not None) over categories read from the data."""
    if smp is not None and not data.public_domains:
        raise PolicyError(f"A secure {what} needs declared (public) categories: these were read from the data.",
                          hint="Declare each attribute's categories, or run it as a seeded teaching run.")


def _noisy_counts(counts: np.ndarray, scale: float, rng: Any, smp: SecureSampler | None) -> np.ndarray:
    """Integer counts + Lap(scale) (seeded) or + DLap(scale) on the integers (secure: exact, OpenDP)."""
    if smp is None:
        return counts + _noise.laplace(scale, counts.size, rng=rng)
    return smp.laplace_answers(np.asarray(counts, dtype=np.int64), 1.0, 1.0, 1.0 / scale).estimate


def heavy_hitter_histogram(data: AttributeData, *, eps0: float, nu: float = 0.01,
                           rng: np.random.Generator | None = None, method: CalibrationMethod = "exact",
                           tau: float | None = None, seed: int | None = None, reveal: bool = False,
                           secure: bool = False, sampler: SecureSampler | None = None,
                           noise: Noise | None = None) -> Release:
    """The Theorem 15 histogram: PrivHeavyHitter, then Laplace counts on its final list.

    ``data`` must have public domains (:func:`encode_attributes` with declared categories): with
    one attribute every category of the domain is listed, so a domain read from the data would
    publish which values occur (such a release is marked teaching-only).

    Per attribute: ``eps0``-∇0DP (pure) with the corrected calibration (``method="exact"``
    or ``"lemma28"``); the release states the exact delivered ε0 and the whole-record bound
    (group privacy over the d attributes for the lists, plus the counts). Cells not listed
    are estimated as 0.

    ``nu`` — error target ν (heavy hitters have count ≥ νn; µ = λ·ln(16/ν)); ``tau`` —
    base threshold, default ½νn (Lemma 30; a utility knob that must not depend on the data
    beyond n); ``reveal`` — attach true counts and errors (teaching mode only); ``secure``,
    ``sampler`` — exact discrete Laplace lists and counts, unseeded, calibrated by the discrete
    accountant (:func:`~prdp_core.mechanisms.granular.discrete.calibrate_discrete`). ``noise`` — the noise
    source (``Noise.teaching(seed)`` or ``Noise.secure()``); ``rng``/``seed``/``secure``/``sampler`` are its
    legacy spelling.
    """
    smp, rng, seed = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler).parts()
    _check_public_domains(smp, data, "heavy-hitter histogram")
    cal = HistogramPlan("heavy_hitter", eps0, data.d, nu=nu, method=method, secure=smp is not None).calibration()
    t = 0.5 * cal.nu * data.n if tau is None else float(tau)
    start = time.perf_counter()
    if cal.levels == 0:
        size = data.domain_sizes[0]
        codes = np.arange(size)[:, None]
        counts = np.bincount(data.codes[:, 0].astype(np.int64), minlength=size)
        level_sizes: tuple[int, ...] = (size,)
    else:
        run = priv_heavy_hitters(data, lam=cal.lam, mu=cal.mu, tau=t, rng=rng, sampler=smp)
        codes, counts, level_sizes = run.codes, run.counts, run.level_sizes
    est = _noisy_counts(counts, cal.count_scale, rng, smp) if counts.size else np.zeros(0)
    seconds = time.perf_counter() - start
    whole = cal.whole_record(data.d)
    answers, cells = _answers(data, codes, est, cal.count_scale, counts.astype(float) if reveal else None)
    params = {"eps0": cal.eps0, "nu": cal.nu, "tau": t, "d": data.d, "n": data.n, "attributes": list(data.names),
              "domains": data.domain_source,
              **{f"cal_{k}": v for k, v in cal.as_dict().items() if k not in ("eps0", "nu")}}
    if smp is not None:
        params["secure"] = smp.describe()
    entry = LedgerEntry(
        label=f"Heavy-hitter histogram on {data.d} attribute(s), ε0 = {cal.delivered:.3g} per attribute"
              + _teaching_only(data),
        mechanism="granular.heavy_hitter_histogram", loss=FlatLoss(whole, "eps"), params=params, seed=seed,
        secure=smp is not None)
    return Release(
        mechanism="granular.heavy_hitter_histogram", answers=answers, measure="eps", loss=np.full(data.n, whole),
        entries=(entry,), params=params, seed=seed, secure=smp is not None, truth_included=reveal,
        extras={"calibration": cal, "eps0_delivered": cal.delivered, "whole_record": whole, "cells": cells,
                "level_sizes": level_sizes, "seconds": seconds, "notes": data.notes,
                "teaching_only": not data.public_domains})


def _teaching_only(data: AttributeData) -> str:
    return "" if data.public_domains else " — TEACHING ONLY: categories read from the data (not DP for their set)"


def standard_threshold(eps: float, cells: int) -> float:
    """Default public release threshold of the standard histogram: about one empty cell expected.

    t = max(½, b·ln(K/2)) with b = 2/ε and K cells (P[Lap(b) > t] = ½e^{−t/b}). Depends
    only on ε and the domain, never on the data.
    """
    b = 2.0 / _pos("ε", eps)
    return max(0.5, b * (_log_cells(cells) - math.log(2.0)))


def _log_cells(cells: int) -> float:
    return math.log(cells) if cells < 2**1000 else float(cells.bit_length()) * math.log(2.0)


def standard_histogram(data: AttributeData, *, eps: float, rng: np.random.Generator | None = None,
                       threshold: float | None = None, seed: int | None = None, reveal: bool = False,
                       dense_limit: int = DENSE_LIMIT, max_released: int = MAX_RELEASED, secure: bool = False,
                       sampler: SecureSampler | None = None, noise: Noise | None = None) -> Release:
    """The canonical ε-DP histogram (§5): Laplace(2/ε) on every one of the Π|X_j| cells.

    The K cells, the default threshold and ``cells_log10`` are functions of the domains, which
    must be public (declared; a data-derived domain makes the release teaching-only).
    Replacement neighbours move one record between two cells (L1 sensitivity 2), hence
    Lap(2/ε); its per-attribute parameter is the same ε (no granular gain). Only cells
    whose noisy count exceeds the public ``threshold`` are published (post-processing;
    default :func:`standard_threshold`); ``threshold=-inf`` publishes every cell of a small
    domain.

    Up to ``dense_limit`` cells every cell is drawn. Above, the same output distribution is
    drawn lazily: occupied cells get their Laplace noise; the number of empty cells above
    t ≥ 0 is Binomial(K_empty, ½e^{−t/b}) (Poisson with that mean once K_empty ≥ 2^62 —
    total-variation error ≤ ½e^{−t/b}, negligible), their values t + Exponential(b) and
    their positions uniform among empty cells.

    ``secure``, ``sampler``: every cell gets exact discrete Laplace DLap(2/ε) on its integer count
    (OpenDP certifies ε at L1 sensitivity 2), unseeded; dense domains only (≤ ``dense_limit`` cells).
    ``noise``: the noise source (``Noise.teaching(seed)`` or ``Noise.secure()``); ``rng``/``seed``/``secure``/
    ``sampler`` are its legacy spelling.
    """
    smp, rng, seed = resolve(noise, rng=rng, seed=seed, secure=secure, sampler=sampler).parts()
    _check_public_domains(smp, data, "standard histogram")
    e = _pos("ε", eps)
    b = 2.0 / e
    K = data.cells
    t = standard_threshold(e, K) if threshold is None else float(threshold)
    truth = true_histogram(data)
    start = time.perf_counter()
    sizes = data.domain_sizes
    if smp is not None and K > dense_limit:
        raise PolicyError(f"A secure standard histogram draws every one of its cells (at most {dense_limit:,}; this "
                          "domain has more).", hint="Use fewer attributes or categories, or a seeded teaching run.")
    if K <= dense_limit:
        idx = _row_keys(truth.codes, sizes) if truth.codes.size else np.zeros(0, dtype=np.int64)
        allc = np.zeros(K, dtype=np.int64)
        allc[idx] = truth.counts
        if smp is None:
            assert rng is not None  # a teaching run: resolve gave its generator
            noisy = allc + _noise.laplace(b, K, rng=rng)
        else:
            noisy = smp.laplace_answers(allc, 1.0, 2.0, e).estimate  # DLap(2/ε): L1 sensitivity 2, ε certified
        keep = np.flatnonzero(noisy > t)
        if keep.size > max_released:
            raise ResourceLimitError(f"{keep.size:,} cells would be published (limit {max_released:,}).",
                                     hint="Raise the release threshold.")
        codes = np.stack(np.unravel_index(keep, sizes), axis=1) if keep.size else np.zeros((0, data.d), dtype=int)
        est, true = noisy[keep], allc[keep].astype(float)
        empty_released = int(np.sum(allc[keep] == 0))
    else:
        if not math.isfinite(t) or t < 0:
            raise ParameterError("With this many cells the release threshold must be ≥ 0.",
                                 hint="Leave it at its default.")
        k_empty = K - truth.counts.size
        p = 0.5 * math.exp(-t / b)
        mean = k_empty * p
        if mean > max_released:
            raise ResourceLimitError(f"About {mean:,.0f} empty cells would pass the threshold (limit "
                                     f"{max_released:,}).", hint="Raise the release threshold.")
        assert rng is not None  # the lazy path is seeded only
        occ = truth.counts + _noise.laplace(b, truth.counts.size, rng=rng)
        ko = np.flatnonzero(occ > t)
        m_empty = int(rng.binomial(k_empty, p)) if k_empty < 2**62 else int(rng.poisson(mean))
        ecodes = _sample_empty_cells(sizes, truth.keys, m_empty, rng)
        evals = t + rng.exponential(b, m_empty)
        codes = np.vstack((truth.codes[ko], ecodes)) if m_empty else truth.codes[ko]
        est = np.concatenate((occ[ko], evals))
        true = np.concatenate((truth.counts[ko].astype(float), np.zeros(m_empty)))
        empty_released = m_empty
    seconds = time.perf_counter() - start
    answers, cells = _answers(data, codes, est, b, true if reveal else None)
    params: dict[str, Any] = {"eps": e, "threshold": t, "d": data.d, "n": data.n, "attributes": list(data.names),
                              "scale": b, "cells_log10": _log_cells(K) / math.log(10.0), "domains": data.domain_source}
    if smp is not None:
        params["secure"] = smp.describe()
    entry = LedgerEntry(label=f"Standard Laplace histogram on {data.d} attribute(s), ε = {e:.3g}"
                              + _teaching_only(data),
                        mechanism="granular.standard_histogram", loss=FlatLoss(e, "eps"), params=params, seed=seed,
                        secure=smp is not None)
    return Release(mechanism="granular.standard_histogram", answers=answers, measure="eps", loss=np.full(data.n, e),
                   entries=(entry,), params=params, seed=seed, secure=smp is not None, truth_included=reveal,
                   extras={"threshold": t, "scale": b, "seconds": seconds, "whole_record": e, "eps0_delivered": e,
                           "cells": cells,
                           "private_empty_released": empty_released, "notes": data.notes,
                           "teaching_only": not data.public_domains})


def _sample_empty_cells(sizes: Sequence[int], occupied: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """m distinct cells drawn uniformly among the cells whose key is not in ``occupied``."""
    out = np.zeros((0, len(sizes)), dtype=np.int64)
    if m == 0:
        return out
    seen = occupied
    for _ in range(100):
        need = m - out.shape[0]
        if need <= 0:
            break
        cand = np.stack([rng.integers(0, s, size=2 * need + 8) for s in sizes], axis=1)
        keys = _row_keys(cand, sizes)
        _, first = np.unique(keys, return_index=True)
        first.sort()
        cand, keys = cand[first], keys[first]
        fresh = ~np.isin(keys, seen)
        cand, keys = cand[fresh][:need], keys[fresh][:need]
        out = np.vstack((out, cand))
        seen = np.concatenate((seen, keys))
    if out.shape[0] < m:
        raise ResourceLimitError("Could not place the released empty cells.", hint="Raise the release threshold.")
    return out


def histogram_accuracy(data: AttributeData, release: Release, nu: float) -> dict[str, Any]:
    """How a histogram release compares with the truth (confidential; teaching mode only).

    * ``heavy`` / ``heavy_found`` — cells with true count ≥ νn, and how many were released;
    * ``released`` / ``released_empty`` / ``released_small`` — cells published, and how many
      of them hold no record, or one or two records (small cells are the privacy risk);
    * ``linf_error`` — max over *all* cells of |estimate − true| (unlisted cells count as 0);
    * ``small_round_back`` — share of released 1–2-record cells whose rounded estimate equals
      the true count (the paper's rounding attack, §5).
    """
    nu = _pos("ν", nu)
    truth = true_histogram(data)
    codes = np.asarray(release.extras["cells"])
    est = release.answers["estimate"].to_numpy(dtype=float)
    true_rel = _true_counts_of(data, codes, truth).astype(float)
    err_rel = np.abs(est - true_rel)
    listed = (np.isin(truth.keys, _row_keys(codes, data.domain_sizes)) if codes.shape[0]
              else np.zeros(truth.keys.size, dtype=bool))
    unlisted_max = float(truth.counts[~listed].max()) if (~listed).any() else 0.0
    heavy = truth.counts >= nu * data.n
    small = (true_rel >= 1) & (true_rel <= 2)
    return {
        "released": int(codes.shape[0]),
        "heavy": int(heavy.sum()),
        "heavy_found": int((heavy & listed).sum()),
        "released_empty": int((true_rel == 0).sum()),
        "released_small": int(small.sum()),
        "small_round_back": float(np.mean(np.round(est[small]) == true_rel[small])) if small.any() else math.nan,
        "linf_error": max(float(err_rel.max()) if err_rel.size else 0.0, unlisted_max),
        "max_error_released": float(err_rel.max()) if err_rel.size else 0.0,
        "occupied_cells": int(truth.counts.size),
        "singletons": int((truth.counts == 1).sum()),
    }


def cell_labels(data: AttributeData, codes: np.ndarray, *, max_chars: int = 40) -> list[str]:
    """Short labels of cells: "value · value · …", or the bit pattern for binary data."""
    codes = np.asarray(codes)
    if all(s == 2 for s in data.domain_sizes) and all(dm == (0, 1) for dm in data.domains):
        out = ["".join(map(str, r)) for r in codes.astype(np.uint8)]
    else:
        out = [" · ".join(str(data.domains[j][int(c)]) for j, c in enumerate(r)) for r in codes]
    return [s if len(s) <= max_chars else s[: max_chars - 1] + "…" for s in out]


def compare_cells(data: AttributeData, releases: Mapping[str, Release], *, top: int = 20,
                  truth: bool = False) -> pd.DataFrame:
    """The ``top`` cells with the largest estimates across releases, one column per release.

    A cell a release did not publish shows 0 (its implicit estimate). ``truth`` adds the
    exact counts (confidential: teaching mode only).
    """
    blocks = []
    for name, rel in releases.items():
        cells = np.asarray(rel.extras["cells"])
        if cells.shape[0]:
            blocks.append((name, cells, rel.answers["estimate"].to_numpy(dtype=float)))
    if not blocks:
        return pd.DataFrame(columns=["cell", *releases.keys()])
    allc = np.vstack([b[1] for b in blocks])
    keys = _row_keys(allc, data.domain_sizes)
    uk, first = np.unique(keys, return_index=True)
    table = pd.DataFrame(index=range(uk.size))
    for name, cells, est in blocks:
        pos = np.searchsorted(uk, _row_keys(cells, data.domain_sizes))
        col = np.zeros(uk.size)
        col[pos] = est
        table[name] = col
    for name in releases:
        if name not in table:
            table[name] = 0.0
    table["_max"] = table[list(releases)].max(axis=1)
    order = table["_max"].to_numpy().argsort(kind="stable")[::-1][: int(top)]
    codes = allc[first][order]
    out = pd.DataFrame({"cell": cell_labels(data, codes, max_chars=28)})
    for name in releases:
        out[name] = table[name].to_numpy()[order]
    if truth:
        out["true"] = _true_counts_of(data, codes, true_histogram(data)).astype(float)
    return out
