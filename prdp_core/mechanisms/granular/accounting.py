"""Per-attribute vs whole-record accounting of granular DP (Prop. 8, Lemma 10, Thm 11).

Exact L2 sensitivities of the Gaussian k-way workloads (conjunctions, marginals, parities) for a
change of s attributes, the per-attribute and whole-record tables, the illustrative 2020 Census
allocation and its subset curve, and the ratio of whole-record to per-attribute loss as d grows.
The group-privacy and subset accountants themselves live in :mod:`prdp_core.core.accounting`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np
import pandas as pd

from ...core.accounting import AttributeRelease, attribute_subset_rho, per_attribute_to_record, zcdp_to_approx_dp
from ...core.errors import ParameterError
from ...core.validate import positive as _pos
from ...core.validate import whole_number as _int_param
from .data import MAX_ATTRIBUTES

WorkloadKind = Literal["conjunctions", "marginals", "parities"]


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
        return self.eps0 * workload_sensitivity(self.kind, self.d, self.k, s) / self.delta0  # type: ignore[arg-type]  # workload_sensitivity refuses an unknown workload kind


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
    row: Any  # cells as edited: checked below
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
