"""The prdp_core code that reproduces a release of the Run page."""

from __future__ import annotations

from typing import Any

from prdp_core.data import Dataset
from prdp_core.workload import SplittingPolicy

from .policy_designer_code import policy_code


def run_code(source: dict[str, Any], ds: Dataset, pol: SplittingPolicy, seed: int, secure: bool = False,
             queries: list[int] | None = None) -> str:
    base = policy_code(source, ds, pol, "lemma4")
    head = "\n".join(ln for ln in base.splitlines() if not ln.startswith(("preview =", "print(preview", "x, share")))
    if queries is not None and len(queries) < len(pol.workload.queries):
        head += ("\npolicy = SplittingPolicy(policy.thresholds, policy.workload.subset("
                 f"{sorted(int(i) for i in queries)}), threshold_source=policy.threshold_sources())"
                 "   # only the queries released")
    if secure:
        allow = (", allow_data_derived=True)   # thresholds computed from the data: refused by a real release"
                 if pol.threshold_source else ")   # exact OpenDP noise, unseeded, answers on a grid")
        return f"""{head}
from prdp_core.mechanisms.unit_splitting import release

rel = release(ds, policy, secure=True, reveal=True{allow}
print(rel.answers.head(), rel.extras["grid"])
review = rel.for_review()                      # what a review-mode export contains"""
    return f"""{head}
import numpy as np
from prdp_core.mechanisms.unit_splitting import release

rng = np.random.default_rng({int(seed)})          # seeded: for teaching and review only
rel = release(ds, policy, rng=rng, reveal=True, seed={int(seed)})
print(rel.answers.head())                      # teaching: true values and errors included
review = rel.for_review()                      # what a review-mode export contains
realized = rel.extras["private_realized"]      # confidential: realized loss of every record"""
