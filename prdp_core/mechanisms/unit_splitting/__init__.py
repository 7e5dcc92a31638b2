"""Unit-splitting releases: Gaussian answers of a workload under per-record zCDP.

Per-record zCDP paper, Secs. 5.2–6. A :class:`~prdp_core.core.workload.SplittingPolicy`
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
* **Group keys** — given by **public key lists** (``workload.group_keys``, :mod:`prdp_core.core.keysets`:
  exactly the product of the lists, unlisted records dropped, absent cells answered as noisy
  zeros; a secure release accepts them), treated as public (the cells present in the data are
  declared public: fine for teaching, refused by a secure release) or found by **partition
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

The package, one concept per module: :mod:`.stats` (the per-cell sufficient statistics, in memory
or by an engine), :mod:`.selection` (partition selection), :mod:`.workload_release` (the release of
a workload), :mod:`.joint` (the joint SUM release), :mod:`.topcoding` (the Table 7 baseline and
threshold sweeps).
"""

from .joint import joint_sum_release, joint_sum_sigmas
from .selection import PartitionSelection, partition_record_delta, selection_cells, selection_plan
from .stats import (
    PublicKeys,
    QueryStats,
    cell_sensitivity,
    engine_workload_stats,
    policy_loss_of_histogram,
    workload_stats,
)
from .topcoding import policy_for_thresholds, topcode_policy, topcode_workload
from .workload_release import OwnerRealizedTerms, owner_realized_distribution, release

__all__ = ["OwnerRealizedTerms", "PartitionSelection", "PublicKeys", "QueryStats", "cell_sensitivity",
           "engine_workload_stats", "joint_sum_release", "joint_sum_sigmas", "owner_realized_distribution",
           "partition_record_delta", "policy_for_thresholds",
           "policy_loss_of_histogram", "release", "selection_cells", "selection_plan", "topcode_policy",
           "topcode_workload", "workload_stats"]
