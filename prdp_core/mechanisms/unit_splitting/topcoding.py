"""The top-coding baseline (the paper's Table 7): the workload answered before splitting, values
clamped, flat losses; and a policy with other thresholds for sweeps."""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from ...core.errors import PolicyError
from ...core.splitting import as_thresholds
from ...core.workload import SplittingPolicy, Workload


def topcode_workload(workload: Workload, clamps: Mapping[str, float]) -> Workload:
    """The same workload with every SUM/AVG answered before splitting, top-coded at ``clamps``
    (the Table 7 schemes): flat losses, sensitivity = the clamp, biased sums."""
    qs = []
    for q in workload.queries:
        if q.kind == "count":
            qs.append(q)
            continue
        if q.measure is None or q.measure not in clamps:
            raise PolicyError(f"No top-coding bound for '{q.measure}'.")
        qs.append(replace(q, split=False, clamp=float(clamps[q.measure])))
    return Workload(tuple(qs), partition_rho=0.0, joint=workload.joint)


def topcode_policy(policy: SplittingPolicy, clamps: Mapping[str, float]) -> SplittingPolicy:
    """A flat (global zCDP) policy: the workload top-coded at ``clamps``; thresholds are unused."""
    return replace(policy, workload=topcode_workload(policy.workload, clamps))


def policy_for_thresholds(policy: SplittingPolicy, thresholds: Mapping[str, float]) -> SplittingPolicy:
    """The same workload with other (single-row) thresholds — for sweeps."""
    return SplittingPolicy(as_thresholds(dict(thresholds)), policy.workload)
