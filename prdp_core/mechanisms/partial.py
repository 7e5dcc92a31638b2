"""Granular (per-attribute) differential privacy: partial DP, its accounting and its histogram.

Paper: Ghazi, Kumar, Manurangsi and Steinke, "Algorithms with More Granular Differential
Privacy Guarantees" (partial DP, ∇DP). Neighbours are *replacements* (n is public): a
guarantee ε0-∇0DP says that changing **one attribute** of one person's record moves every
output probability by a factor at most e^{ε0} (Def. 5); ε0-∇0CDP says the same in zCDP
with ρ = ½ε0² (Def. 6). A per-attribute guarantee *supplements* the whole-record one — it
never replaces it (§7).

What is here:

* **Per-attribute vs whole-record accounting** (Prop. 8, Lemma 10, Thm 11): see
  :func:`granularity_table` and :func:`record_cost_table`; the group-privacy and subset
  accountants themselves live in :mod:`prdp_core.accounting`
  (:func:`~prdp_core.accounting.per_attribute_to_record`,
  :func:`~prdp_core.accounting.attribute_subset_rho`), with the illustrative 2020 Census
  allocation in :func:`census_2020_illustrative`.
* **Attribute data with public domains**: :func:`encode_attributes` (declared categories plus
  "(other)", public decade size classes for numbers; :data:`SAMPLE_DOMAINS` documents the
  registered samples' categories), :func:`synthetic_attribute_data` (binary, public by construction).
* **Gaussian workloads** (Thm 11): exact L2 sensitivities of k-way conjunctions, k-way
  marginal tables and parities for a change of s attributes (:func:`workload_sensitivity`),
  hence ε/ε0 = √(d/k) for conjunctions and marginals.
* **PrivHeavyHitter** (Algorithm 2) and the **histogram of Theorem 15** with a *corrected*
  calibration (:func:`calibrate_heavy_hitter_histogram`, :func:`heavy_hitter_histogram`),
  next to the **standard Laplace histogram** (:func:`standard_histogram`), both returning
  a :class:`~prdp_core.release.Release`. The privacy of Algorithm 2 is computed by an
  exact worst-case accountant (:func:`hh_epsilon_exact`), checked against exact
  enumeration of output distributions in tests/audit/test_partial_audit.py.

Deviations from the paper (see docs/architecture.md): the proof of Thm 15 sets λ = 3/ε and
counts with Lap(2/ε) and calls each half 0.5ε; the heavy-hitter stage then costs ≈0.92ε
(exact) and the counts cost ε (one-attribute changes move a record between two listed
cells: L1 sensitivity 2). We calibrate λ with the exact accountant (λ ≈ 5.70/ε for
ν = 0.01) or with Lemma 28 (λ ≈ 8.0/ε), and count with Lap(4/ε).
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from .. import noise
from ..accounting import (AttributeRelease, FlatLoss, LedgerEntry, attribute_subset_rho,
                          per_attribute_to_record, zcdp_to_approx_dp)
from ..errors import ParameterError, ResourceLimitError
from ..validate import positive as _pos
from ..validate import whole_number as _int_param
from ..release import Release

WorkloadKind = Literal["conjunctions", "marginals", "parities"]
CalibrationMethod = Literal["exact", "lemma28", "paper"]

#: Largest number of candidate strings one node of PrivHeavyHitter may test.
MAX_CANDIDATES: int = 4_000_000
#: Largest domain of one categorical attribute in the histogram lab.
MAX_DOMAIN: int = 5_000
#: Largest number of attributes of a histogram.
MAX_ATTRIBUTES: int = 1_024
#: Largest number of cells a standard histogram materialises densely.
DENSE_LIMIT: int = 2**20
#: Largest number of cells a histogram may release.
MAX_RELEASED: int = 1_000_000
#: Two-sided 95% half-width of Laplace(b) noise, in units of b: P[|Lap(b)| > b·ln 20] = 5%.
LAPLACE_CI95 = math.log(20.0)

# ---------------------------------------------------------------------------
# Per-attribute vs whole-record accounting (Prop. 8, Lemma 10, Thm 11)
# ---------------------------------------------------------------------------


def workload_size(kind: WorkloadKind, d: int, k: int) -> int:
    """Number of released numbers m of the k-way workload on d binary attributes (Thm 11).

    Conjunctions and parities: one number per attribute set T, |T| = k (m = C(d, k)).
    Marginal tables: the 2^k cells of every k-way table (m = C(d, k)·2^k).
    """
    d = _int_param("The number of attributes d", d, 1)
    k = _int_param("The order k", k, 1, d)
    m = math.comb(d, k)
    if kind == "marginals":
        return m * 2**k
    if kind in ("conjunctions", "parities"):
        return m
    raise ParameterError(f"Unknown workload '{kind}'.", hint="Use conjunctions, marginals or parities.")


def _odd_overlaps(d: int, k: int, t: int) -> int:
    """Number of k-sets T with |T ∩ W| odd, for a fixed set W of t attributes."""
    return sum(math.comb(t, j) * math.comb(d - t, k - j) for j in range(1, min(t, k) + 1, 2))


def workload_sensitivity(kind: WorkloadKind, d: int, k: int, s: int) -> float:
    """Exact L2 sensitivity Δ_S of one record's answer vector Q(u) for a change of ≤ s attributes.

    Thm 11 (Gaussian projection mechanism): the release is ½(Δ_S/(σn))²-zCDP against a
    change confined to s attributes; s = 1 gives the per-attribute Δ0 (ε0 = Δ0/(σn)),
    s = d the whole-record Δ (ε = Δ/(σn)). Queries are 0/1-valued on {0,1}^d:

    * ``"conjunctions"`` q_T(u) = Π_{t∈T} u_t: Δ_S² = C(d,k) − C(d−s,k) (flip s attributes
      from 1 to 0; every set meeting them changes);
    * ``"marginals"`` — the one-hot cell of u in each k-way table: Δ_S² = 2(C(d,k) − C(d−s,k));
    * ``"parities"`` q_T(u) = ⊕_{t∈T} u_t: Δ_S² = max_{1≤t≤s} #{T : |T ∩ W_t| odd}. For even
      k and s = d this is below C(d,k): the paper's "Δ = √m in both cases" holds for
      conjunctions and odd-k parities only (notes ⚠️ I10).
    """
    d = _int_param("The number of attributes d", d, 1)
    k = _int_param("The order k", k, 1, d)
    s = _int_param("The number of changed attributes", s, 0, d)
    if s == 0:
        return 0.0
    if kind == "conjunctions":
        return math.sqrt(math.comb(d, k) - math.comb(d - s, k))
    if kind == "marginals":
        return math.sqrt(2 * (math.comb(d, k) - math.comb(d - s, k)))
    if kind == "parities":
        return math.sqrt(max(_odd_overlaps(d, k, t) for t in range(1, s + 1)))
    raise ParameterError(f"Unknown workload '{kind}'.", hint="Use conjunctions, marginals or parities.")


def workload_ratio(kind: WorkloadKind, d: int, k: int) -> float:
    """Whole-record ε over per-attribute ε0 of the Gaussian k-way workload: Δ/Δ0 (= √(d/k))."""
    return workload_sensitivity(kind, d, k, d) / workload_sensitivity(kind, d, k, 1)


@dataclass(frozen=True)
class WorkloadCalibration:
    """Gaussian noise for a k-way workload calibrated to a per-attribute ε0 (Thm 11).

    ``sigma`` is the noise on the *normalised* answers Q(x) = (1/n)Σ_i Q(x_i). The release
    is ε0-∇0CDP (ρ0 = ½ε0² per attribute) and ``rho_record``-zCDP for a whole record.
    """

    kind: str
    d: int
    k: int
    n: int
    eps0: float
    m: int
    delta0: float
    delta: float
    sigma: float

    @property
    def eps_record(self) -> float:
        """Whole-record "ε" (√(2ρ) units): ε0·Δ/Δ0."""
        return self.eps0 * self.delta / self.delta0

    @property
    def rho_record(self) -> float:
        return 0.5 * self.eps_record**2

    def eps_subset(self, s: int) -> float:
        """"ε" (√(2ρ) units) of a change confined to s attributes: ε0·Δ_S/Δ0."""
        return self.eps0 * workload_sensitivity(self.kind, self.d, self.k, s) / self.delta0  # type: ignore[arg-type]


def calibrate_workload(kind: WorkloadKind, d: int, k: int, eps0: float, n: int = 1) -> WorkloadCalibration:
    """σ such that the Gaussian k-way workload is ε0-∇0CDP: σ = Δ0/(ε0·n) (Thm 11).

    ``eps0`` — the per-attribute privacy parameter (√(2ρ) units); ``n`` — the public
    number of records (answers are averages).
    """
    e0 = _pos("The per-attribute ε0", eps0)
    n = _int_param("The number of records n", n, 1)
    d0 = workload_sensitivity(kind, d, k, 1)
    dd = workload_sensitivity(kind, d, k, d)
    return WorkloadCalibration(kind, int(d), int(k), n, e0, workload_size(kind, d, k), d0, dd, d0 / (e0 * n))


def granularity_table(d: int, eps0: float, *, k: int = 2, kind: Literal["pure", "cdp"] = "cdp",
                      workload: WorkloadKind = "marginals") -> pd.DataFrame:
    """Loss of a change of s = 1..d attributes under an ε0 per-attribute guarantee.

    Columns (all in ε units; for ``kind="cdp"`` these are √(2ρ), so ρ = ½ε²):

    * ``group`` — generic group privacy (Prop. 8): s·ε0, for any ε0-∇0 mechanism;
    * ``disjoint`` — d releases, one per attribute, each ε0 (Lemma 10): s·ε0 for pure DP,
      √s·ε0 for CDP (ρ adds);
    * ``workload`` (CDP only) — the Gaussian k-way ``workload`` calibrated to ε0 (Thm 11):
      ε0·Δ_S/Δ0.
    """
    d = _int_param("The number of attributes d", d, 1, MAX_ATTRIBUTES)
    e0 = _pos("The per-attribute ε0", eps0)
    s = np.arange(1, d + 1)
    out = pd.DataFrame({"attributes": s, "group": s * e0})
    if kind == "pure":
        out["disjoint"] = s * e0
    elif kind == "cdp":
        out["disjoint"] = np.sqrt(s) * e0
        k = _int_param("The order k", k, 1, d)
        d0 = workload_sensitivity(workload, d, k, 1)
        out["workload"] = [e0 * workload_sensitivity(workload, d, k, int(x)) / d0 for x in s]
    else:
        raise ParameterError(f"Unknown guarantee kind '{kind}'.", hint="Use 'pure' or 'cdp'.")
    return out


def record_cost_table(d: int, eps0: float, *, k: int = 2, delta: float = 1e-6,
                      workload: WorkloadKind = "marginals") -> pd.DataFrame:
    """What an ε0 per-attribute guarantee costs for k attributes and for a whole record.

    One row per statement: ``pure`` ε (pure ∇0DP; NaN for the Gaussian workload), ``rho`` (∇0CDP),
    ``eps_cks`` — the
    (ε, δ)-DP ε of that ρ by the Canonne–Kamath–Steinke conversion. Rows: one attribute;
    k attributes (Prop. 8); the whole record by group privacy (Prop. 8); d disjoint
    per-attribute releases (Lemma 10); the Gaussian k-way workload (Thm 11).
    """
    d = _int_param("The number of attributes d", d, 1, MAX_ATTRIBUTES)
    k = _int_param("The number of attributes k", k, 1, d)
    e0 = _pos("The per-attribute ε0", eps0)
    rows: list[dict[str, Any]] = []

    def add(what: str, pure: float, rho: float) -> None:
        rows.append({"statement": what, "pure": pure, "rho": rho, "eps_cks": zcdp_to_approx_dp(rho, delta)})

    add("one attribute", e0, per_attribute_to_record(e0, 1, kind="cdp"))
    add(f"{k} attributes (group privacy)", per_attribute_to_record(e0, k), per_attribute_to_record(e0, k, kind="cdp"))
    add(f"whole record, {d} attributes (group privacy)", per_attribute_to_record(e0, d),
        per_attribute_to_record(e0, d, kind="cdp"))
    add(f"whole record, {d} disjoint per-attribute releases", d * e0, d * 0.5 * e0**2)
    cal = calibrate_workload(workload, d, k, e0)
    add(f"whole record, Gaussian {k}-way {workload}", math.nan, cal.rho_record)
    return pd.DataFrame(rows)


def census_2020_illustrative() -> list[AttributeRelease]:
    """An *illustrative* attribute-level allocation consistent with the paper's Census numbers.

    The paper (§7) gives only totals: the 2020 redistricting data is 2.63-zCDP per person
    (2.56 + 0.07, ⇒ (13.8, 1e-6)-DP by CKS) and 1.02-zCDP for a change of race and
    ethnicity only (⇒ (7.85, 1e-6)-DP). The Bureau's per-query tables are not in the paper;
    this split of the totals over histograms is ours, chosen to reproduce both totals.
    """
    geo = "geography"
    return [
        AttributeRelease("Total population", frozenset({geo}), 0.30),
        AttributeRelease("Voting age × household/group quarters", frozenset({geo, "voting age", "hhgq"}), 0.62),
        AttributeRelease("Race × Hispanic origin", frozenset({geo, "race", "ethnicity"}), 0.55),
        AttributeRelease("Voting age × race × Hispanic origin",
                         frozenset({geo, "voting age", "race", "ethnicity"}), 0.47),
        AttributeRelease("Detailed household/group quarters", frozenset({geo, "hhgq"}), 0.62),
        AttributeRelease("Occupancy status (housing units)", frozenset({geo, "occupancy"}), 0.07),
    ]


def releases_from_table(table: pd.DataFrame) -> list[AttributeRelease]:
    """Attribute releases from an edited table with columns ``release``, ``attributes``, ``rho``.

    ``attributes`` is a comma-separated list. Blank rows are skipped.
    """
    need = {"release", "attributes", "rho"}
    if not need <= set(table.columns):
        raise ParameterError("The release table needs the columns release, attributes and rho.")
    out = []
    for i, row in enumerate(table.itertuples(index=False), 1):
        label = "" if pd.isna(row.release) else str(row.release).strip()
        attrs_raw = "" if pd.isna(row.attributes) else str(row.attributes)
        attrs = frozenset(a.strip() for a in attrs_raw.split(",") if a.strip())
        if not label and not attrs and pd.isna(row.rho):
            continue
        if pd.isna(row.rho):
            raise ParameterError(f"Row {i} ('{label or 'unnamed'}') has no ρ.", hint="Enter its zCDP budget.")
        try:
            rho = float(row.rho)
        except (TypeError, ValueError):
            raise ParameterError(f"Row {i}: ρ must be a number (got {row.rho!r}).") from None
        out.append(AttributeRelease(label or f"release {i}", attrs, rho))
    return out


def releases_table(releases: Sequence[AttributeRelease]) -> pd.DataFrame:
    """Attribute releases as an editable table (inverse of :func:`releases_from_table`)."""
    return pd.DataFrame([{"release": r.label, "attributes": ", ".join(sorted(r.attributes)), "rho": r.rho}
                         for r in releases], columns=["release", "attributes", "rho"])


def subset_curve(releases: Sequence[AttributeRelease], order: Sequence[str]) -> pd.DataFrame:
    """ρ(S) for the nested subsets S = first s attributes of ``order`` (Census accountant)."""
    rows = [{"attributes": s, "subset": ", ".join(order[:s]), "rho": attribute_subset_rho(releases, order[:s])}
            for s in range(1, len(order) + 1)]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# PrivHeavyHitter accountant (Algorithm 2, Lemma 28, exact worst case)
# ---------------------------------------------------------------------------


def hh_levels(d: int) -> int:
    """Number of noisy levels of PrivHeavyHitter on d attributes: ⌈log2 d⌉ (d padded to 2^L)."""
    d = _int_param("The number of attributes d", d, 1)
    return (d - 1).bit_length()


def hh_epsilon_lemma28(lam: float, mu: float) -> float:
    """The paper's sufficient condition (Lemma 28): (2/λ)(1 + 1/(1 − e^{−µ/λ})) (needs µ > 1).

    ``lam`` — Laplace scale λ of every noisy count; ``mu`` — threshold step µ per level.
    """
    lam, mu = _pos("λ", lam), _pos("µ", mu)
    return (2.0 / lam) * (1.0 + 1.0 / (-math.expm1(-mu / lam)))


def _log_tail(t: np.ndarray, lam: float) -> np.ndarray:
    """log P[Lap(λ) > t], stable on both sides."""
    t = np.asarray(t, dtype=float)
    neg = np.minimum(t, 0.0)
    return np.where(t >= 0, math.log(0.5) - np.maximum(t, 0.0) / lam, np.log1p(-0.5 * np.exp(neg / lam)))


def _h(m: np.ndarray, lam: float, mu: float) -> np.ndarray:
    """Log-ratio of the inclusion probabilities of a string whose capped count margin is m vs m+1."""
    m = np.asarray(m, dtype=float)
    return _log_tail(-np.maximum(m + 1.0, -mu), lam) - _log_tail(-np.maximum(m, -mu), lam)


def _chain(m: np.ndarray | float, lam: float, mu: float, levels: int) -> np.ndarray:
    m = np.asarray(m, dtype=float)
    return sum((_h(m + i * mu, lam, mu) for i in range(levels)), np.zeros_like(m))


def _sup_chain(lam: float, mu: float, levels: int) -> float:
    """sup_m Σ_{i<L} h(m + iµ): the largest log-ratio of one string kept at every level."""
    if levels <= 0:
        return 0.0
    # G is smooth between the kinks of the shifted copies of h (at −µ−1, −µ, −1, 0);
    # maximise on every piece (grid + bounded refinement) and at every kink.
    kinks = np.unique([k - i * mu for k in (-mu - 1.0, -mu, -1.0, 0.0) for i in range(levels)])
    pts = np.concatenate(([kinks[0] - 1.0], kinks, [kinks[-1] + 60.0 * lam]))
    a, b = pts[:-1], pts[1:]
    a, b = a[b - a > 1e-12], b[b - a > 1e-12]
    grid = a[:, None] + (b - a)[:, None] * np.linspace(0.0, 1.0, 65)[None, :]
    vals = _chain(grid, lam, mu, levels)
    best = float(vals.max())
    # refine around the best grid point of the three best pieces (vectorised zoom, 4 rounds)
    for p in np.argsort(-vals.max(axis=1))[:3]:
        i = int(np.argmax(vals[p]))
        lo, hi = grid[p, max(i - 1, 0)], grid[p, min(i + 1, grid.shape[1] - 1)]
        for _ in range(4):
            if not hi > lo:
                break
            xs = np.linspace(lo, hi, 33)
            v = _chain(xs, lam, mu, levels)
            j = int(np.argmax(v))
            best = max(best, float(v[j]))
            lo, hi = xs[max(j - 1, 0)], xs[min(j + 1, xs.size - 1)]
    return max(best, 0.0)


def hh_epsilon_exact(lam: float, mu: float, levels: int) -> float:
    """Exact worst-case per-attribute ε of PrivHeavyHitter, with every list L_I released.

    ``lam`` — Laplace scale λ of the noisy counts (larger = more private); ``mu`` — the
    threshold step µ per level and the capping margin (needs µ ≥ 1); ``levels`` — the
    number of noisy levels L = ⌈log2 d⌉. Changing one attribute j of one record from u to
    u′ changes, in the one node per level that contains j, the count of u|I by −1 and of
    u′|I by +1. The string whose count drops contributes a chain of "kept" factors whose
    margins fall by ≥ µ per level (counts shrink, thresholds rise); the other contributes
    at most one "dropped" factor e^{1/λ}. Hence

        ε = 1/λ + sup_m Σ_{i<L} h(m + iµ),  h(m) = log S(−max(m+1, −µ)) − log S(−max(m, −µ)),

    S(t) = P[Lap(λ) > t]. It is ≈ 2/λ + ln(2 − e^{−1/λ}) for L ≥ 2 (2/λ for L = 1), always
    below Lemma 28's bound, and independent of τ and n. Checked against exact enumeration
    of all output lists on neighbouring datasets (tests/audit/test_partial_audit.py).
    """
    lam, mu = _pos("λ", lam), _pos("µ", mu)
    levels = _int_param("The number of levels", levels, 0, 64)
    if levels == 0:
        return 0.0
    if mu < 1.0:
        raise ParameterError(f"The threshold step µ must be at least 1 (got {mu:.3g}).",
                             hint="Raise µ (µ = λ·ln(16/ν) by default).")
    return 1.0 / lam + _sup_chain(lam, mu, levels)


def histogram_epsilon_exact(lam: float, mu: float, levels: int, count_scale: float) -> float:
    """Exact worst-case per-attribute ε of the Theorem 15 histogram (lists + Laplace counts).

    ``count_scale`` — Laplace scale b of the second-stage counts on the final list. The
    changed record's old string contributes its kept chain plus 1/b (it is listed); the new
    one either a dropped factor 1/λ or, when listed, at most 1/b:

        ε = sup_m Σ h(m + iµ) + 1/b + max(1/λ, 1/b)   (≤ ε_HH + 2/b, the composition bound).

    With no noisy level (one attribute) the histogram is a plain Laplace histogram: 2/b.
    """
    b = _pos("The count scale b", count_scale)
    levels = _int_param("The number of levels", levels, 0, 64)
    if levels == 0:
        return 2.0 / b
    lam, mu = _pos("λ", lam), _pos("µ", mu)
    return hh_epsilon_exact(lam, mu, levels) - 1.0 / lam + 1.0 / b + max(1.0 / lam, 1.0 / b)


# ---------------------------------------------------------------------------
# Calibration of the Theorem 15 histogram
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HeavyHitterCalibration:
    """Noise of the Theorem 15 histogram and what it delivers per attribute.

    Attributes
    ----------
    eps0:
        Requested per-attribute ε0 (pure ∇0DP): the loss of changing one attribute.
    nu:
        Target error ν as a share of n (heavy hitters have count ≥ νn); sets µ = λ·ln(16/ν).
    levels:
        Noisy levels L = ⌈log2 d⌉.
    method:
        ``"exact"`` (λ from the exact accountant), ``"lemma28"`` (λ from Lemma 28) or
        ``"paper"`` (the printed λ = 3/ε0 and Lap(2/ε0), which do **not** deliver ε0).
    lam, mu, count_scale:
        Laplace scale λ, threshold step µ and count scale b.
    eps_heavy_hitters, eps_heavy_hitters_lemma28, eps_counts:
        Delivered loss of the list stage (exact / Lemma 28) and of the counts (2/b).
    eps_joint:
        Exact worst case of the whole histogram (:func:`histogram_epsilon_exact`).
    """

    eps0: float
    nu: float
    levels: int
    method: str
    lam: float
    mu: float
    count_scale: float
    eps_heavy_hitters: float
    eps_heavy_hitters_lemma28: float
    eps_counts: float
    eps_joint: float

    @property
    def eps_composed(self) -> float:
        """Delivered per-attribute ε by sequential composition: ε_HH + 2/b."""
        return self.eps_heavy_hitters + self.eps_counts

    @property
    def delivered(self) -> float:
        """Delivered per-attribute ε0 (the exact joint worst case)."""
        return self.eps_joint

    @property
    def meets_target(self) -> bool:
        return self.delivered <= self.eps0 * (1 + 1e-9)

    def whole_record(self, d: int) -> float:
        """Whole-record ε: group privacy over the d attributes for the lists, plus the counts
        (a whole-record change still moves one record between two cells: 2/b)."""
        return min(int(d) * self.eps_heavy_hitters + self.eps_counts, int(d) * self.eps_joint)

    def as_dict(self) -> dict[str, Any]:
        return {"eps0": self.eps0, "nu": self.nu, "levels": self.levels, "method": self.method,
                "lam": self.lam, "mu": self.mu, "count_scale": self.count_scale,
                "eps_heavy_hitters": self.eps_heavy_hitters,
                "eps_heavy_hitters_lemma28": self.eps_heavy_hitters_lemma28,
                "eps_counts": self.eps_counts, "eps_composed": self.eps_composed, "eps_joint": self.eps_joint}


def _mu_for(lam: float, nu: float) -> float:
    return max(lam * math.log(16.0 / nu), 1.0)


def calibrate_heavy_hitter_histogram(eps0: float, nu: float = 0.01, d: int = 64, *,
                                     method: CalibrationMethod = "exact",
                                     share: float = 0.5) -> HeavyHitterCalibration:
    """Noise of the Theorem 15 histogram for a per-attribute budget ε0.

    ``eps0`` — per-attribute ε0 (pure ∇0DP); ``nu`` — error target ν ∈ (0, 0.1]; ``d`` —
    number of attributes; ``share`` — part of ε0 given to the list stage (the paper: ½).

    * ``"exact"``: λ solves ε_exact(λ, µ, L) = share·ε0 with µ = λ·ln(16/ν) (λ ≈ 5.70/ε0 at
      ν = 0.01); counts Lap(2/((1−share)·ε0)) — Lap(4/ε0) at share ½.
    * ``"lemma28"``: λ = (2/(share·ε0))·(1 + 1/(1−ν/16)) (≈ 8.0/ε0), same counts.
    * ``"paper"``: λ = 3/ε0 and Lap(2/ε0) as printed in the proof of Thm 15 — delivers
      ≈ 1.6·ε0 (exact) instead of ε0; kept to show the error, never as a default.

    With one attribute there is no noisy level: the histogram is a plain Laplace histogram,
    Lap(2/ε0).
    """
    e0 = _pos("The per-attribute ε0", eps0)
    if e0 < 1e-9:  # λ ∝ 1/ε0 would overflow the accountant
        raise ParameterError(f"The per-attribute ε0 must be at least 1e-9 (got {eps0!r}).")
    nu = _pos("The error target ν", nu)
    if nu > 0.5:
        raise ParameterError(f"The error target ν is a share of the records; use a value ≤ 0.5 (got {nu}).")
    share = _pos("The list stage's share of ε0", share)
    if share >= 1:
        raise ParameterError(f"The list stage's share of ε0 must be strictly between 0 and 1 (got {share}).")
    if method not in ("exact", "lemma28", "paper"):
        raise ParameterError(f"Unknown calibration '{method}'.", hint="Use exact, lemma28 or paper.")
    return _calibrate(e0, nu, hh_levels(d), str(method), share)


@functools.lru_cache(maxsize=256)
def _calibrate(e0: float, nu: float, L: int, method: str, share: float) -> HeavyHitterCalibration:
    if L == 0:
        b = 2.0 / e0
        return HeavyHitterCalibration(e0, nu, 0, method, math.nan, math.nan, b, 0.0, 0.0, e0, e0)
    if method == "paper":
        lam, b = 3.0 / e0, 2.0 / e0
        mu = _mu_for(lam, nu)
    else:
        e1, b = share * e0, 2.0 / ((1.0 - share) * e0)
        if method == "lemma28":
            lam = (2.0 / e1) * (1.0 + 1.0 / (1.0 - nu / 16.0))
            mu = _mu_for(lam, nu)
        else:
            def gap(x: float) -> float:
                return hh_epsilon_exact(x, _mu_for(x, nu), L) - e1

            lo, hi = 2.0 / e1, 4.2 / e1
            while gap(hi) > 0:
                hi *= 1.5
            lam = brentq(gap, lo, hi, xtol=1e-12, rtol=1e-12) if L > 1 else lo
            lam *= 1 + 1e-9  # stay on the private side of the root
            mu = _mu_for(lam, nu)
    return HeavyHitterCalibration(
        e0, nu, L, method, lam, mu, b, hh_epsilon_exact(lam, mu, L), hh_epsilon_lemma28(lam, mu), 2.0 / b,
        histogram_epsilon_exact(lam, mu, L, b))


def calibration_table(eps0: float, nu: float = 0.01, d: int = 64) -> pd.DataFrame:
    """The three calibrations side by side: λ, µ, b and what each delivers per attribute."""
    rows = []
    label = {"paper": "as printed (Thm 15 proof)", "lemma28": "corrected, Lemma 28",
             "exact": "corrected, exact accountant"}
    for m in ("paper", "lemma28", "exact"):
        c = calibrate_heavy_hitter_histogram(eps0, nu, d, method=m)  # type: ignore[arg-type]
        rows.append({"calibration": label[m], "method": m, "lambda": c.lam, "mu": c.mu, "count_scale": c.count_scale,
                     "eps_lists": c.eps_heavy_hitters, "eps_lists_lemma28": c.eps_heavy_hitters_lemma28,
                     "eps_counts": c.eps_counts, "eps_composed": c.eps_composed, "eps_exact": c.eps_joint,
                     "claimed": c.eps0, "meets_claim": c.meets_target})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# Attribute data (the records as d attributes)
# ---------------------------------------------------------------------------

#: Public, data-independent size classes for numeric columns (decades).
SIZE_CLASS_EDGES = tuple(10.0**k for k in range(0, 10))
SIZE_CLASS_LABELS = ("<1", "1–9", "10–99", "100–999", "1k–9.9k", "10k–99k", "100k–999k", "1M–9.9M",
                     "10M–99M", "100M–999M", "≥1B")
MISSING = "(missing)"
#: The public catch-all category of a declared domain: values outside the declared list go here.
OTHER = "(other)"
#: Where the categories came from (``AttributeData.domain_source``).
DOMAIN_PUBLIC = "public (declared)"
DOMAIN_FROM_DATA = "read from the data — teaching only: the set of categories is not protected"

_US_STATES = ("AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS",
              "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC",
              "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY")
_NAICS_SECTORS = ("11", "21", "22", "23", "31-33", "42", "44-45", "48-49", "51", "52", "53", "54", "55", "56", "61",
                  "62", "71", "72", "81")
#: Documented (public) categories of the registered samples' group columns: fixed by the generator's
#: construction or by a public code list, never read from the records. Columns not listed here need a
#: declared domain (or size classes, for numbers).
SAMPLE_DOMAINS: dict[str, dict[str, tuple[str, ...]]] = {
    "cbp_like": {"STATE": _US_STATES, "NAICS2": _NAICS_SECTORS},
    "sim_pareto": {"CatIX": tuple(str(i) for i in range(1, 1001))},
    **{name: {"BRANCH": tuple(f"B{i:02d}" for i in range(1, 51))}
       for name in ("bank_normal_50k", "bank_normal_500k", "bank_zipf_b3", "bank_zipf_b5")},
    "table2_example": {"Industry": ("Agriculture", "Mining", "Retail")},
    "us_county_labor_2009": {"region": ("Northeast", "Midwest", "South", "West", "Puerto Rico"),
                             "state": _US_STATES + ("PR",)},
    "world_cities": {"continent": ("Africa", "Antarctica", "Asia", "Europe", "North America", "Oceania",
                                   "South America")},
    "gapminder": {"continent": ("Africa", "Americas", "Asia", "Europe", "Oceania"),
                  "year": tuple(str(y) for y in range(1952, 2008, 5))},
}


def sample_domains(name: str) -> dict[str, tuple[str, ...]]:
    """The documented public categories of a registered sample's group columns ({} if none)."""
    return dict(SAMPLE_DOMAINS.get(str(name), {}))


@dataclass(frozen=True)
class AttributeData:
    """Records as d categorical attributes: ``codes[i, j]`` ∈ {0, …, |X_j|−1}.

    ``domains[j]`` lists the values of attribute j (its public domain X_j); binary data
    has domains (0, 1). ``codes`` is column-major (one contiguous column per attribute).
    """

    codes: np.ndarray
    names: tuple[str, ...]
    domains: tuple[tuple[Any, ...], ...]
    notes: tuple[str, ...] = ()
    #: False when some domain was read from the data (exploration only: see :func:`encode_attributes`).
    public_domains: bool = True

    @property
    def domain_source(self) -> str:
        return DOMAIN_PUBLIC if self.public_domains else DOMAIN_FROM_DATA

    def __post_init__(self) -> None:
        c = self.codes
        if c.ndim != 2 or c.shape[1] != len(self.names) or len(self.names) != len(self.domains):
            raise ParameterError("Attribute codes, names and domains do not match.")
        if c.shape[1] == 0:
            raise ParameterError("Pick at least one attribute.")

    @property
    def n(self) -> int:
        return int(self.codes.shape[0])

    @property
    def d(self) -> int:
        return int(self.codes.shape[1])

    @property
    def domain_sizes(self) -> tuple[int, ...]:
        return tuple(len(x) for x in self.domains)

    @property
    def cells(self) -> int:
        """Number of cells of the full histogram, Π_j |X_j| (a Python int; may be huge)."""
        return math.prod(self.domain_sizes)

    def labels(self, codes: np.ndarray) -> pd.DataFrame:
        """Cell codes (rows) → a table of attribute values."""
        codes = np.asarray(codes)
        if self.d > 64 and all(s == 2 for s in self.domain_sizes):
            return pd.DataFrame({"pattern": ["".join(map(str, r)) for r in codes.astype(np.uint8)]})
        return pd.DataFrame({nm: np.asarray(dom, dtype=object)[codes[:, j]] if len(codes) else []
                             for j, (nm, dom) in enumerate(zip(self.names, self.domains))})


def _category_strings(s: pd.Series) -> np.ndarray:
    """A column's values as category strings (integral numbers without ".0"; missing → "(missing)")."""
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        out = np.full(v.size, MISSING, dtype=object)
        ok = np.isfinite(v)
        integral = ok & (np.abs(v) < 2**53)
        integral[integral] = v[integral] == np.round(v[integral])
        out[integral] = v[integral].astype(np.int64).astype(str)
        rest = ok & ~integral
        out[rest] = v[rest].astype(str)
        return out
    return s.astype("string").fillna(MISSING).to_numpy(dtype=object).astype(str)


def _category_string(x: Any) -> str:
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        if not math.isfinite(float(x)):
            return MISSING if math.isnan(float(x)) else str(float(x))
        return str(int(x)) if float(x) == round(float(x)) and abs(float(x)) < 2**53 else str(float(x))
    return str(x)


def declared_domain(categories: Sequence[Any] | str, column: str = "attribute") -> tuple[str, ...]:
    """A declared public domain as category strings, duplicates dropped, with "(other)" last.

    ``categories`` is a list, or a text with one category per comma or line. "(other)" is always
    part of the domain (it receives every value outside the list), so the number of categories
    depends on the declaration only.
    """
    if isinstance(categories, str):
        items = [c.strip() for part in categories.splitlines() for c in part.split(",")]
        items = [c for c in items if c]
    else:
        items = [_category_string(c) for c in categories]
    dom = [c for c in dict.fromkeys(items) if c != OTHER]
    if not dom:
        raise ParameterError(f"Declare at least one category of '{column}'.",
                             hint="List its possible values (from a code list or the questionnaire), separated "
                                  "by commas; every other value goes to \"(other)\".")
    if len(dom) + 1 > MAX_DOMAIN:
        raise ResourceLimitError(f"'{column}' has {len(dom):,} declared categories; the lab takes at most "
                                 f"{MAX_DOMAIN - 1:,} per attribute.", hint="Declare a coarser list.")
    return tuple(dom) + (OTHER,)


def encode_attributes(table: pd.DataFrame, columns: Sequence[str],
                      domains: Mapping[str, Sequence[Any] | str] | None = None, *,
                      from_data: bool = False) -> AttributeData:
    """Turn columns of a table into categorical attributes with public domains X_j (§5).

    A histogram's cells, its default threshold and (for one attribute) the list of cells the
    heavy-hitter histogram publishes are functions of the domains, so the domains must not
    depend on the data:

    * ``domains[c]`` — the declared public categories of column c (a list, or text with one
      category per comma): values outside the list, and missing values unless "(missing)" is
      declared, go to the extra public category "(other)" (:func:`declared_domain`);
    * numeric columns without a declaration become public decade size classes (<1, 1–9, 10–99,
      …, ≥1B; :data:`SIZE_CLASS_EDGES`), boolean ones the categories False/True/(other);
    * any other column needs a declaration. With ``from_data=True`` its categories are read
      from the data instead — **for exploration only**: the set of categories is then not
      protected (one record with a new value adds a category, changes K and the threshold and
      is listed), the result's ``public_domains`` is False and the histograms' releases say they
      are teaching-only.
    """
    cols = list(dict.fromkeys(columns))
    if not cols:
        raise ParameterError("Pick at least one attribute.")
    if len(cols) > MAX_ATTRIBUTES:
        raise ResourceLimitError(f"At most {MAX_ATTRIBUTES} attributes are supported (got {len(cols)}).")
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ParameterError(f"No column named {', '.join(map(repr, missing))} in the active dataset.")
    declared = dict(domains or {})  # declarations of other columns are ignored (a catalogue may list more)
    n = len(table)
    if n == 0:
        raise ParameterError("The table has no records.")
    codes = np.empty((n, len(cols)), dtype=np.int32, order="F")
    doms: list[tuple[Any, ...]] = []
    notes: list[str] = []
    public = True
    for j, c in enumerate(cols):
        s = table[c]
        if c in declared:
            dom = declared_domain(declared[c], c)
            pos = {v: i for i, v in enumerate(dom)}
            other = len(dom) - 1
            vals = _category_strings(s)
            uniq, inv = np.unique(vals, return_inverse=True)
            codes[:, j] = np.array([pos.get(u, other) for u in uniq], dtype=np.int32)[inv]
            doms.append(dom)
            notes.append(f"{c}: {len(dom) - 1} declared public categories + {OTHER}")
        elif pd.api.types.is_bool_dtype(s):
            dom = ("False", "True", OTHER)
            vals = _category_strings(s)
            codes[:, j] = np.where(vals == "False", 0, np.where(vals == "True", 1, 2))
            doms.append(dom)
            notes.append(f"{c}: public categories False / True")
        elif pd.api.types.is_numeric_dtype(s):
            v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            codes[:, j] = np.digitize(np.nan_to_num(v, nan=0.0), SIZE_CLASS_EDGES)
            doms.append(SIZE_CLASS_LABELS)
            notes.append(f"{c}: public decade size classes")
        elif from_data:
            vals = _category_strings(s)
            dom, inv = np.unique(vals, return_inverse=True)
            if dom.size > MAX_DOMAIN:
                raise ResourceLimitError(f"'{c}' has {dom.size:,} distinct values; the lab takes at most "
                                         f"{MAX_DOMAIN:,} per attribute.", hint="Pick a coarser column.")
            codes[:, j] = inv
            doms.append(tuple(dom.tolist()))
            public = False
            notes.append(f"{c}: {dom.size} categories read from the data — teaching only, not differentially "
                         "private for the set of categories (declare them for a release)")
        else:
            raise ParameterError(f"Declare the public categories of '{c}'.",
                                 hint="A histogram's cells must not depend on the data: list the possible values "
                                      "(every other value goes to \"(other)\"), or read them from the data for "
                                      "exploration only.")
    small = codes.astype(np.uint16 if max(len(x) for x in doms) > 255 else np.uint8, order="F")
    return AttributeData(small, tuple(cols), tuple(doms), tuple(notes), public)


def synthetic_attribute_data(n: int = 100_000, d: int = 64, *, patterns: int = 20, heavy_share: float = 0.5,
                             zipf: float = 1.0, rng: np.random.Generator) -> AttributeData:
    """Binary records for the histogram lab: a few frequent patterns plus a sparse tail.

    ``heavy_share`` of the n records copy one of ``patterns`` random d-bit patterns (Zipf
    weights with exponent ``zipf``); the others are uniform random strings — for d ≳ 30
    each is unique, the sparse "count-1 cells" the paper's rounding attack targets (§5).
    """
    n = _int_param("The number of records", n, 1, 10_000_000)
    d = _int_param("The number of attributes", d, 1, MAX_ATTRIBUTES)
    patterns = _int_param("The number of frequent patterns", patterns, 0, 10_000)
    if not 0 <= heavy_share <= 1:
        raise ParameterError("The share of records in frequent patterns must be between 0 and 1.")
    if n * d > 200_000_000:
        raise ResourceLimitError(f"n × d = {n * d:,} attribute values is too many for the lab (max 200,000,000).")
    codes = np.empty((n, d), dtype=np.uint8, order="F")
    n_heavy = int(round(heavy_share * n)) if patterns else 0
    if n_heavy:
        pat = rng.integers(0, 2, size=(patterns, d), dtype=np.uint8)
        w = 1.0 / np.arange(1, patterns + 1) ** float(zipf)
        which = rng.choice(patterns, size=n_heavy, p=w / w.sum())
        codes[:n_heavy] = pat[which]
    codes[n_heavy:] = rng.integers(0, 2, size=(n - n_heavy, d), dtype=np.uint8)
    codes = np.asfortranarray(codes[rng.permutation(n)])
    width = len(str(d))
    return AttributeData(codes, tuple(f"a{j + 1:0{width}d}" for j in range(d)), tuple((0, 1) for _ in range(d)),
                         (f"synthetic: {patterns} patterns hold {heavy_share:.0%} of the records",))


def _row_keys(codes: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """One sortable key per row of cell codes (int64 mixed radix, or packed bytes)."""
    codes = np.asarray(codes)
    if math.prod(sizes) < 2**62:
        strides = np.ones(len(sizes), dtype=np.int64)
        for j in range(len(sizes) - 2, -1, -1):
            strides[j] = strides[j + 1] * int(sizes[j + 1])
        if codes.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        return codes.astype(np.int64) @ strides
    if max(sizes) <= 2:
        arr = np.packbits(codes.astype(bool), axis=1)
    elif max(sizes) <= 256:
        arr = codes.astype(np.uint8)
    else:
        arr = codes.astype(np.uint16)
    arr = np.ascontiguousarray(arr)
    return arr.view(np.dtype((np.void, arr.shape[1] * arr.itemsize))).ravel()


@dataclass(frozen=True)
class TrueHistogram:
    """The occupied cells of the exact histogram (confidential)."""

    codes: np.ndarray
    counts: np.ndarray
    keys: np.ndarray


def true_histogram(data: AttributeData) -> TrueHistogram:
    """Occupied cells and their exact counts (confidential: for teaching comparisons)."""
    keys = _row_keys(data.codes, data.domain_sizes)
    uk, first, counts = np.unique(keys, return_index=True, return_counts=True)
    return TrueHistogram(np.asarray(data.codes[first]), counts.astype(np.int64), uk)


# ---------------------------------------------------------------------------
# PrivHeavyHitter (Algorithm 2)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HeavyHitterRun:
    """Output of :func:`priv_heavy_hitters`: the final list and every node's list.

    ``codes`` — the final list L_[d] (one cell per row); ``counts`` — their exact counts
    (confidential, for the second stage); ``level_sizes[ℓ]`` — total list size over the
    nodes of level ℓ (ℓ = 0 are the leaves); ``level_candidates[ℓ]`` — strings tested.
    """

    codes: np.ndarray
    counts: np.ndarray
    levels: int
    lam: float
    mu: float
    tau: float
    level_sizes: tuple[int, ...]
    level_candidates: tuple[int, ...]
    pairs: Mapping[tuple[int, int], tuple[np.ndarray, np.ndarray]] = field(repr=False, default_factory=dict)
    leaf_sizes: tuple[int, ...] = ()

    def node_strings(self, level: int, index: int) -> np.ndarray:
        """The list L_I of node (level, index) as rows of leaf codes (padded attributes included)."""
        if level == 0:
            return np.arange(self.leaf_sizes[index])[:, None]
        lp, rp = self.pairs[(level, index)]
        return self._decode(level, index, np.arange(lp.size))

    def _decode(self, level: int, index: int, idx: np.ndarray) -> np.ndarray:
        if level == 0:
            return np.asarray(idx, dtype=np.int64)[:, None]
        lp, rp = self.pairs[(level, index)]
        return np.hstack((self._decode(level - 1, 2 * index, lp[idx]),
                          self._decode(level - 1, 2 * index + 1, rp[idx])))


def priv_heavy_hitters(data: AttributeData, *, lam: float, mu: float, tau: float, rng: np.random.Generator,
                       max_candidates: int = MAX_CANDIDATES) -> HeavyHitterRun:
    """PrivHeavyHitter (Algorithm 2): frequent attribute combinations, ε-∇0DP.

    The d attributes are the leaves of a binary tree (d padded to 2^L with constant
    attributes); leaf lists are the whole domains. At level ℓ = 1..L every node I tests the
    concatenations of its children's lists: count f^I_s, capped below at τ_ℓ − µ, plus
    Lap(λ), kept if above τ_ℓ = τ + (ℓ−1)µ. Each attribute lies in one node per level, so
    a one-attribute change costs :func:`hh_epsilon_exact` (λ, µ, L) — independent of τ and n.

    ``lam`` — Laplace scale λ (privacy); ``mu`` — threshold step µ ≥ 1 (privacy and list
    size); ``tau`` — base threshold τ (utility only; must not depend on the data beyond n).
    """
    lam = _pos("λ", lam)
    mu = _pos("µ", mu)
    tau = float(tau)
    if not math.isfinite(tau):
        raise ParameterError("The threshold τ must be a finite number.")
    n, d = data.n, data.d
    L = hh_levels(d)
    D = 1 << L
    sizes = list(data.domain_sizes) + [1] * (D - d)
    pairs: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    lvl_sizes = [0] * (L + 1)
    lvl_cand = [0] * (L + 1)
    lvl_sizes[0] = int(sum(sizes))

    def leaf(j: int) -> tuple[int, np.ndarray]:
        if j < d:
            return sizes[j], data.codes[:, j].astype(np.int32)
        return 1, np.zeros(n, dtype=np.int32)

    def node(level: int, index: int) -> tuple[int, np.ndarray]:
        if level == 0:
            return leaf(index)
        ls, lid = node(level - 1, 2 * index)
        rs, rid = node(level - 1, 2 * index + 1)
        m = ls * rs
        if m > max_candidates:
            raise ResourceLimitError(
                f"A node of the heavy-hitter tree would test {m:,} combinations (limit {max_candidates:,}).",
                hint="Use attributes with fewer categories, a larger error target ν or a smaller ε0.")
        valid = (lid >= 0) & (rid >= 0)
        key = lid[valid].astype(np.int64) * rs + rid[valid]
        del lid, rid
        counts = np.bincount(key, minlength=m)
        t = tau + (level - 1) * mu
        noisy = np.maximum(counts, t - mu) + noise.laplace(lam, m, rng=rng)
        keep = np.flatnonzero(noisy > t)
        remap = np.full(m, -1, dtype=np.int32)
        remap[keep] = np.arange(keep.size, dtype=np.int32)
        ids = np.full(n, -1, dtype=np.int32)
        ids[valid] = remap[key]
        pairs[(level, index)] = (keep // rs, keep % rs)
        lvl_sizes[level] += int(keep.size)
        lvl_cand[level] += int(m)
        return int(keep.size), ids

    size, ids = node(L, 0)
    counts = np.bincount(ids[ids >= 0], minlength=size).astype(np.int64)
    run = HeavyHitterRun(np.zeros((0, d), dtype=np.int64), counts, L, lam, mu, tau, tuple(lvl_sizes),
                         tuple(lvl_cand), pairs, tuple(sizes))
    codes = run._decode(L, 0, np.arange(size))[:, :d] if L > 0 else np.arange(size)[:, None]
    return HeavyHitterRun(codes, counts, L, lam, mu, tau, tuple(lvl_sizes), tuple(lvl_cand), pairs, tuple(sizes))


# ---------------------------------------------------------------------------
# Histograms as releases
# ---------------------------------------------------------------------------


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


def heavy_hitter_histogram(data: AttributeData, *, eps0: float, nu: float = 0.01, rng: np.random.Generator,
                           method: CalibrationMethod = "exact", tau: float | None = None,
                           seed: int | None = None, reveal: bool = False) -> Release:
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
    beyond n); ``reveal`` — attach true counts and errors (teaching mode only).
    """
    cal = calibrate_heavy_hitter_histogram(eps0, nu, data.d, method=method)
    t = 0.5 * cal.nu * data.n if tau is None else float(tau)
    start = time.perf_counter()
    if cal.levels == 0:
        size = data.domain_sizes[0]
        codes = np.arange(size)[:, None]
        counts = np.bincount(data.codes[:, 0].astype(np.int64), minlength=size)
        level_sizes: tuple[int, ...] = (size,)
    else:
        run = priv_heavy_hitters(data, lam=cal.lam, mu=cal.mu, tau=t, rng=rng)
        codes, counts, level_sizes = run.codes, run.counts, run.level_sizes
    est = counts + noise.laplace(cal.count_scale, counts.size, rng=rng) if counts.size else np.zeros(0)
    seconds = time.perf_counter() - start
    whole = cal.whole_record(data.d)
    answers, cells = _answers(data, codes, est, cal.count_scale, counts.astype(float) if reveal else None)
    params = {"eps0": cal.eps0, "nu": cal.nu, "tau": t, "d": data.d, "n": data.n, "attributes": list(data.names),
              "domains": data.domain_source,
              **{f"cal_{k}": v for k, v in cal.as_dict().items() if k not in ("eps0", "nu")}}
    entry = LedgerEntry(
        label=f"Heavy-hitter histogram on {data.d} attribute(s), ε0 = {cal.delivered:.3g} per attribute"
              + _teaching_only(data),
        mechanism="partial.heavy_hitter_histogram", loss=FlatLoss(whole, "eps"), params=params, seed=seed)
    return Release(
        mechanism="partial.heavy_hitter_histogram", answers=answers, measure="eps", loss=np.full(data.n, whole),
        entries=(entry,), params=params, seed=seed, truth_included=reveal,
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


def standard_histogram(data: AttributeData, *, eps: float, rng: np.random.Generator, threshold: float | None = None,
                       seed: int | None = None, reveal: bool = False, dense_limit: int = DENSE_LIMIT,
                       max_released: int = MAX_RELEASED) -> Release:
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
    """
    e = _pos("ε", eps)
    b = 2.0 / e
    K = data.cells
    t = standard_threshold(e, K) if threshold is None else float(threshold)
    truth = true_histogram(data)
    start = time.perf_counter()
    sizes = data.domain_sizes
    if K <= dense_limit:
        idx = _row_keys(truth.codes, sizes) if truth.codes.size else np.zeros(0, dtype=np.int64)
        allc = np.zeros(K, dtype=np.int64)
        allc[idx] = truth.counts
        noisy = allc + noise.laplace(b, K, rng=rng)
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
        occ = truth.counts + noise.laplace(b, truth.counts.size, rng=rng)
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
    params = {"eps": e, "threshold": t, "d": data.d, "n": data.n, "attributes": list(data.names), "scale": b,
              "cells_log10": _log_cells(K) / math.log(10.0), "domains": data.domain_source}
    entry = LedgerEntry(label=f"Standard Laplace histogram on {data.d} attribute(s), ε = {e:.3g}"
                              + _teaching_only(data),
                        mechanism="partial.standard_histogram", loss=FlatLoss(e, "eps"), params=params, seed=seed)
    return Release(mechanism="partial.standard_histogram", answers=answers, measure="eps", loss=np.full(data.n, e),
                   entries=(entry,), params=params, seed=seed, truth_included=reveal,
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


def record_ratio_table(d_max: int, *, k: int = 2, workload: WorkloadKind = "marginals") -> pd.DataFrame:
    """Whole-record loss over per-attribute ε0 as the number of attributes d grows (notes §3.3).

    ``group`` — any ε0-∇0 mechanism (Prop. 8): d; ``disjoint`` — d per-attribute zCDP
    releases (Lemma 10): √d; ``workload`` — the Gaussian k-way workload (Thm 11): Δ/Δ0 (= √(d/k)),
    shown from d = k.
    """
    d_max = _int_param("The largest d", d_max, 1, MAX_ATTRIBUTES)
    k = _int_param("The order k", k, 1)
    ds = np.arange(1, d_max + 1)
    work = [workload_ratio(workload, int(d), k) if d >= k else math.nan for d in ds]
    return pd.DataFrame({"d": ds, "group": ds.astype(float), "disjoint": np.sqrt(ds), "workload": work})
