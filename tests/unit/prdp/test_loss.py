"""Every PrDP / PrLDP release records per record its delivered loss next to E(r): delivered ≤ requested."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.shapes import Sqrt
from prdp_core.mechanisms.prdp import local as prldp
from prdp_core.mechanisms.prdp.budget import (
    BudgetFunction,
    constant,
    inverse,
    log_budget,
    parse_budget,
    per_group,
    sqrt_budget,
    step_table,
)
from prdp_core.mechanisms.prdp.central import count, framework, naive
from prdp_core.mechanisms.prdp.extension import sum_extension
from prdp_core.mechanisms.prdp.queries import FrameworkQuery


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 3000
    bal = np.concatenate((np.round(np.abs(rng.normal(5e4, 5e4, n - 40))), rng.integers(0, 10, 20),
                          [1e9, 2**20, 2**21, 1e4 / 2**-3] + list(rng.pareto(1.1, 16) * 1e5)))
    return pd.DataFrame({"BALANCE": bal, "EMP": rng.integers(1, 500, n).astype(float),
                         "BRANCH": rng.choice(list("ABCD"), n)})


TABLE = _table()
BUDGETS = {
    "inverse": inverse(1e4, "BALANCE"),
    "log": log_budget(500, "BALANCE", k=4),
    "sqrt": sqrt_budget(8, "BALANCE"),
    "step": step_table("BALANCE", [100, 1e5, 1e7], [2.0, 0.5, 0.05, 0.001]),
    "constant": constant(0.3),
    "groups": per_group("BRANCH", {"A": constant(0.2), "B": "1e3 / max(BALANCE, 1)"},
                          default=Sqrt(8.0, "BALANCE")),
    "two columns": parse_budget("1e4 / max(BALANCE, 1) + 0.01 * EMP", eps_min=1e-8, eps_max=50.0),
    "not monotone": parse_budget("where(BALANCE > 5e4, 1.0, 0.05) + 1e-12 * BALANCE", eps_min=0.05),
}


def _runs(budget: BudgetFunction):
    rng = np.random.default_rng(1)
    e = budget(TABLE)
    yield "prdp.count", count(e, eps_min=budget.eps_min, eps_max=budget.eps_max, beta=0.1, rng=rng)
    for q in ("count", "sum:BALANCE", "max:BALANCE", "distinct:BRANCH"):
        yield f"framework {q}", framework(TABLE, budget, q, beta=0.1, rng=rng)
        yield f"naive {q}", naive(TABLE, budget, q, beta=0.1, rng=rng)
    custom = FrameworkQuery.custom("mean EMP", lambda t, eps, beta, g: float(t.EMP.clip(0, 500).sum() / 500
                                                                             + g.laplace(0, 1 / eps)))
    yield "framework custom", framework(TABLE, budget, custom, beta=0.1, rng=rng)
    yield "sum extension", sum_extension(TABLE, budget, column="BALANCE", beta=0.1, rng=rng)
    yield "prldp.count", prldp.count(e, eps_min=budget.eps_min, eps_max=budget.eps_max, beta=0.1, rng=rng)
    for q in ("count", "sum:BALANCE"):
        for rule in ("paper", "bernstein"):
            yield f"prldp framework {q} {rule}", prldp.framework(TABLE, budget, q, beta=0.1, rng=rng, threshold=rule)
        yield f"prldp naive {q}", prldp.naive(TABLE, budget, q, beta=0.1, rng=rng)


@pytest.mark.parametrize("name", list(BUDGETS))
def test_delivered_within_requested_for_every_mechanism(name):
    budget = BUDGETS[name]
    req = budget(TABLE)
    seen = 0
    for label, rel in _runs(budget):
        assert rel.loss is not None and rel.loss.shape == (len(TABLE),), label
        np.testing.assert_allclose(rel.requested, req, err_msg=label)
        assert rel.check_delivered_within_requested(), (name, label, float(np.max(rel.loss / req)))
        assert rel.measure == "eps" and rel.entries and rel.entries[0].loss.measure == "eps"
        np.testing.assert_allclose(rel.entries[0].loss(TABLE), rel.loss)
        seen += 1
    assert seen == 18
