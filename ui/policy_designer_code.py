"""The prdp_core code that reproduces the Policy designer's state."""

from __future__ import annotations

from typing import Any

from prdp_core.codegen import literal
from prdp_core.data import Dataset
from prdp_core.workload import SplittingPolicy

from .data import load_code


def policy_code(source: dict[str, Any], ds: Dataset, pol: SplittingPolicy, owner_method: str) -> str:
    """prdp_core code that rebuilds the policy (thresholds, workload) and its preview. Column names,
    group values, labels and filter values are written as literals (``repr``), never as code."""
    thr = pol.thresholds
    thr_expr = literal(thr.as_dict()["*"] if thr.group_col is None else thr.as_dict())
    source_kw = (f", threshold_source={literal(pol.threshold_sources())}" if pol.threshold_source else "")
    queries = ",\n    ".join(f"Query.from_dict({literal(q.to_dict())})" for q in pol.workload.queries)
    return f"""import prdp_core
from prdp_core.preview import preview_policy
from prdp_core.splitting import as_thresholds
from prdp_core.workload import Query, SplittingPolicy, Workload

{load_code(source, ds)}
thresholds = as_thresholds({thr_expr}, group_col={literal(thr.group_col)})
workload = Workload((
    {queries},
), partition_rho={pol.workload.partition_rho!r}, joint={pol.workload.joint!r})
policy = SplittingPolicy(thresholds, workload{source_kw})
print(policy.describe())
preview = preview_policy(ds, policy, owner_method={owner_method!r})
print(preview.summary())                 # confidential: describes real records
x, share = preview.records.ecdf()        # the policy-loss CDF"""
