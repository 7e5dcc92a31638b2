"""The prdp_core code that reproduces the Policy designer's state."""

from __future__ import annotations

from typing import Any

from prdp_core.data import Dataset
from prdp_core.workload import SplittingPolicy

from .datasource import reproduce_code


def policy_code(source: dict[str, Any], ds: Dataset, pol: SplittingPolicy, owner_method: str) -> str:
    data_lines = [ln for ln in reproduce_code(source, ds).splitlines()
                  if ln and not ln.startswith(("import prdp_core", "profile", "print"))]
    thr = pol.thresholds
    if thr.group_col is None:
        thr_expr = repr(thr.as_dict()["*"])
    else:
        thr_expr = repr(thr.as_dict())
    queries = ",\n    ".join(f"Query.from_dict({q.to_dict()!r})" for q in pol.workload.queries)
    return f"""import prdp_core
from prdp_core.preview import preview_policy
from prdp_core.splitting import as_thresholds
from prdp_core.workload import Query, SplittingPolicy, Workload

{chr(10).join(data_lines)}
thresholds = as_thresholds({thr_expr}, group_col={thr.group_col!r})
workload = Workload((
    {queries},
), partition_rho={pol.workload.partition_rho!r}, joint={pol.workload.joint!r})
policy = SplittingPolicy(thresholds, workload)
print(policy.describe())
preview = preview_policy(ds, policy, owner_method={owner_method!r})
print(preview.summary())                 # confidential: describes real records
x, share = preview.records.ecdf()        # the policy-loss CDF"""
