"""Shapes of budget functions: serialisation round trips and refused serialised budgets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ConfigError
from prdp_core.core.shapes import Sqrt
from prdp_core.mechanisms.prdp.budget import (
    budget_from_dict,
    constant,
    inverse,
    log_budget,
    parse_budget,
    per_group,
    sqrt_budget,
    step_table,
)

DF = pd.DataFrame({"BALANCE": [0.0, 1.0, 5.0, 100.0, 1e5, 1e9], "BRANCH": list("ABABAC"),
                   "annual pay": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})


@pytest.mark.parametrize("b", [
    inverse(1e4, "BALANCE"), log_budget(500, "BALANCE", k=4), sqrt_budget(8, "BALANCE", U=1e10),
    step_table("BALANCE", [10, 1e4], [1.0, 0.1, 0.01]), constant(0.5),
    parse_budget("1e4 / max(BALANCE, 1)", eps_max=4.0),
    per_group("BRANCH", {"A": "1e4 / max(BALANCE, 1)"}, default=Sqrt(8.0, "BALANCE")),
])
def test_serialisation_round_trip(b):
    again = budget_from_dict(b.to_dict())
    assert again.to_dict() == b.to_dict()
    np.testing.assert_allclose(again(DF), b(DF))
    assert again.describe() == b.describe()


def test_bad_serialised_budgets():
    with pytest.raises(ConfigError):
        budget_from_dict({"budget": {"kind": "cubic"}, "eps_min": 1, "eps_max": 2})
    with pytest.raises(ConfigError):
        budget_from_dict({"budget": {"kind": "inverse", "alpha": 1.0, "column": "v"}})
