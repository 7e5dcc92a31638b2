"""Granular (per-attribute) differential privacy: its accounting, its attribute data and its histograms.

Paper: Ghazi, Kumar, Manurangsi and Steinke, "Algorithms with More Granular Differential
Privacy Guarantees" (partial DP, ∇DP). Neighbours are *replacements* (n is public): a
guarantee ε0-∇0DP says that changing **one attribute** of one person's record moves every
output probability by a factor at most e^{ε0} (Def. 5); ε0-∇0CDP says the same in zCDP
with ρ = ½ε0² (Def. 6). A per-attribute guarantee *supplements* the whole-record one — it
never replaces it (§7).

The package re-exports the public names of its modules, one concept each:

* :mod:`.accounting` — **per-attribute vs whole-record accounting** (Prop. 8, Lemma 10,
  Thm 11): :func:`granularity_table`, :func:`record_cost_table`, the exact L2 sensitivities of
  the Gaussian k-way workloads (:func:`workload_sensitivity`, hence ε/ε0 = √(d/k) for
  conjunctions and marginals) and the illustrative 2020 Census allocation
  (:func:`census_2020_illustrative`); the group-privacy and subset accountants themselves live
  in :mod:`prdp_core.core.accounting` (:func:`~prdp_core.core.accounting.per_attribute_to_record`,
  :func:`~prdp_core.core.accounting.attribute_subset_rho`).
* :mod:`.domains` — public domains: decade size classes, the "(other)" catch-all and
  :data:`SAMPLE_DOMAINS`, the registered samples' documented categories.
* :mod:`.data` — **attribute data with public domains**: :func:`encode_attributes`,
  :func:`synthetic_attribute_data` (binary, public by construction), the true histogram.
* :mod:`.calibration` — the exact worst-case accountant of PrivHeavyHitter
  (:func:`hh_epsilon_exact`) and the *corrected* calibration of the Theorem 15 histogram
  (:func:`calibrate_heavy_hitter_histogram`), checked against exact enumeration of output
  distributions in tests/audit/test_granular_audit.py.
* :mod:`.heavy_hitters` — **PrivHeavyHitter** (Algorithm 2).
* :mod:`.histogram` — the **histogram of Theorem 15** (:func:`heavy_hitter_histogram`) next to
  the **standard Laplace histogram** (:func:`standard_histogram`), both returning a
  :class:`~prdp_core.core.release.Release`, with their accuracy and a side-by-side of cells.

Deviations from the paper (see docs/architecture.md): the proof of Thm 15 sets λ = 3/ε and
counts with Lap(2/ε) and calls each half 0.5ε; the heavy-hitter stage then costs ≈0.92ε
(exact) and the counts cost ε (one-attribute changes move a record between two listed
cells: L1 sensitivity 2). We calibrate λ with the exact accountant (λ ≈ 5.70/ε for
ν = 0.01) or with Lemma 28 (λ ≈ 8.0/ε), and count with Lap(4/ε).
"""

from __future__ import annotations

from .accounting import (
    WorkloadCalibration,
    WorkloadKind,
    calibrate_workload,
    census_2020_illustrative,
    granularity_table,
    record_cost_table,
    record_ratio_table,
    releases_from_table,
    releases_table,
    subset_curve,
    workload_ratio,
    workload_sensitivity,
    workload_size,
)
from .calibration import (
    CalibrationMethod,
    HeavyHitterCalibration,
    calibrate_heavy_hitter_histogram,
    calibration_table,
    hh_epsilon_exact,
    hh_epsilon_lemma28,
    hh_levels,
    histogram_epsilon_exact,
)
from .data import (
    MAX_ATTRIBUTES,
    MAX_DOMAIN,
    AttributeData,
    TrueHistogram,
    declared_domain,
    encode_attributes,
    synthetic_attribute_data,
    true_histogram,
)
from .domains import (
    DOMAIN_FROM_DATA,
    DOMAIN_PUBLIC,
    MISSING,
    OTHER,
    SAMPLE_DOMAINS,
    SIZE_CLASS_EDGES,
    SIZE_CLASS_LABELS,
    sample_domains,
)
from .heavy_hitters import MAX_CANDIDATES, HeavyHitterRun, priv_heavy_hitters
from .histogram import (
    DENSE_LIMIT,
    LAPLACE_CI95,
    MAX_RELEASED,
    HistogramPlan,
    cell_labels,
    compare_cells,
    heavy_hitter_histogram,
    histogram_accuracy,
    standard_histogram,
    standard_threshold,
)

__all__ = [
    "WorkloadKind", "workload_size", "workload_sensitivity", "workload_ratio", "WorkloadCalibration",
    "calibrate_workload", "granularity_table", "record_cost_table", "census_2020_illustrative",
    "releases_from_table", "releases_table", "subset_curve", "record_ratio_table", "SIZE_CLASS_EDGES",
    "SIZE_CLASS_LABELS", "MISSING", "OTHER", "DOMAIN_PUBLIC", "DOMAIN_FROM_DATA", "SAMPLE_DOMAINS", "sample_domains",
    "MAX_DOMAIN", "MAX_ATTRIBUTES", "AttributeData", "declared_domain", "encode_attributes",
    "synthetic_attribute_data", "TrueHistogram", "true_histogram", "CalibrationMethod", "hh_levels",
    "hh_epsilon_lemma28", "hh_epsilon_exact", "histogram_epsilon_exact", "HeavyHitterCalibration",
    "calibrate_heavy_hitter_histogram", "calibration_table", "MAX_CANDIDATES", "HeavyHitterRun",
    "priv_heavy_hitters", "DENSE_LIMIT", "MAX_RELEASED", "LAPLACE_CI95", "HistogramPlan", "heavy_hitter_histogram",
    "standard_threshold", "standard_histogram", "histogram_accuracy", "cell_labels", "compare_cells",
]
