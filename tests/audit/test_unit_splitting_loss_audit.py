"""The per-record loss a unit-splitting release reports is the public policy function P(r).

``release`` reuses the split counts to evaluate P for joint workloads; this audit checks, on
random tables, thresholds (flat and per group) and workloads (COUNT / SUM / AVG, flat or split,
filters, partition selection, joint or per measure), that the reported losses equal
``policy(table)`` — the form an agency publishes — and that the realized loss never exceeds them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Filter, Query, SplittingPolicy, Workload
from prdp_core.mechanisms.unit_splitting import release


@st.composite
def _cases(draw):
    n = draw(st.integers(1, 40))
    v = draw(st.lists(st.floats(0, 5000, allow_nan=False), min_size=n, max_size=n))
    w = draw(st.lists(st.floats(0, 50, allow_nan=False), min_size=n, max_size=n))
    g = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    df = pd.DataFrame({"id": range(n), "g": g, "v": v, "w": w})
    per_group = draw(st.booleans())
    tv, tw = draw(st.floats(0.5, 800)), draw(st.floats(0.5, 40))
    thr = (as_thresholds({"a": {"v": tv, "w": tw}, "*": {"v": 2 * tv, "w": tw / 2}}, group_col="g") if per_group
           else as_thresholds({"v": tv, "w": tw}))
    qs = [Query("sum", "v", rho=draw(st.floats(0.01, 2)), group_by=("g",)),
          Query("count", rho=0.1, filter=Filter("g", ("a",)) if draw(st.booleans()) else None),
          Query("avg", "w", rho=0.2, rho_count=0.05),
          Query("sum", "w", rho=0.3, split=False, clamp=tw)]
    keep = draw(st.lists(st.booleans(), min_size=len(qs), max_size=len(qs)))
    qs = [q for q, k in zip(qs, keep) if k] or qs[:1]
    wl = Workload(tuple(qs), partition_rho=draw(st.sampled_from([0.0, 0.05])), joint=draw(st.booleans()))
    return df, SplittingPolicy(thr, wl)


@settings(max_examples=80, deadline=None)
@given(_cases())
def test_reported_loss_is_the_public_policy_function(case):
    df, pol = case
    rel = release(df, pol, rng=np.random.default_rng(0))
    np.testing.assert_allclose(rel.loss, pol(df), rtol=1e-12, atol=0)
    assert np.all(rel.extras["private_realized"] <= rel.loss * (1 + 1e-9) + 1e-12)
