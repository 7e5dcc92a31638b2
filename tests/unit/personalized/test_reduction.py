"""The PDP → PrDP reduction: the budget column, public bounds ε̌ and ε̂, and runs through the PrDP framework."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError, PolicyError
from prdp_core.mechanisms.personalized.query import PersonalizedQuery
from prdp_core.mechanisms.personalized.reduction import compare_with_prdp, prdp_available, run_prdp, to_prdp
from prdp_core.mechanisms.personalized.spec import (
    TierConfig,
    generate_tiers,
    spec_from_column,
    spec_from_labels,
    spec_from_values,
)


def test_to_prdp_adds_the_budget_column():
    tab = pd.DataFrame({"v": [1.0, 2.0, 3.0]})
    spec = spec_from_values([0.1, 0.5, 1.0])
    red = to_prdp(tab, spec, c=2.0)
    np.testing.assert_allclose(red.table["v_bud"], [0.1, 0.5, 1.0])
    # ε̌, ε̂: c times the public range of choices (here the paper's [0.01, 1]), not c·min Φ and c·max Φ
    assert red.expression == "2 * v_bud" and red.eps_min == pytest.approx(0.02) and red.eps_max == 2.0
    assert "paper's range" in red.bounds_source
    declared = to_prdp(tab, spec, c=2.0, eps_min=0.1, eps_max=3.0)
    assert (declared.eps_min, declared.eps_max) == (0.1, 3.0) and "declared" in declared.bounds_source
    with pytest.raises(ParameterError):
        to_prdp(red.table, spec)


def test_prdp_bounds_come_from_public_values_not_the_table():
    """ε̌ and ε̂ are published with E: they must not move when one user joins the table."""
    D = pd.DataFrame({"x": [1.0, 1, 1], "eps": [0.5, 0.5, 0.5]})
    Dx = pd.concat([D, pd.DataFrame({"x": [1.0], "eps": [0.05]})], ignore_index=True)
    bounds = {(r.eps_min, r.eps_max) for r in (to_prdp(t, spec_from_column(t, "eps")) for t in (D, Dx))}
    assert bounds == {(0.01, 1.0)}  # the old reduction gave (0.5, 0.5) and (0.05, 0.5)
    # a declared menu of choices (expert labels, generated tiers) is the public range
    lab = spec_from_labels(pd.DataFrame({"p": ["hi", "lo"]}), "p", {"hi": 0.1, "lo": 0.8}, default_eps=0.5)
    assert lab.choice_range == (0.1, 0.8)
    tiers = generate_tiers(50, TierConfig(eps_c=0.05, eps_m=0.3, eps_l=2.0), rng=np.random.default_rng(0))
    assert tiers.choice_range == (0.05, 2.0)
    assert tiers.choice_range[0] <= tiers.min_eps and tiers.max_eps <= tiers.choice_range[1]
    # a choice below the public ε̌ cannot be honoured: an actionable error that does not print the value
    low = pd.DataFrame({"x": [1.0, 1], "eps": [0.004, 0.5]})
    with pytest.raises(PolicyError, match="below the public") as err:
        run_prdp(low, spec_from_column(low, "eps"), PersonalizedQuery("count"), rng=np.random.default_rng(0))
    assert "0.004" not in str(err.value)
    ok = run_prdp(low, spec_from_column(low, "eps"), PersonalizedQuery("count"), eps_min=0.001,
                    rng=np.random.default_rng(0))
    assert ok.check_delivered_within_requested()


def test_pdp_data_through_the_prdp_framework():
    rng = np.random.default_rng(25)
    n = 20_000
    tab = pd.DataFrame({"v": np.ceil(rng.lognormal(1.5, 1.0, n))})
    spec = generate_tiers(n, rng=rng)
    assert prdp_available()
    q = PersonalizedQuery("count", "v", cutoff=5, hi=1000)
    rel = run_prdp(tab, spec, q, c=2.0, rng=rng, reveal=True)
    kept = q.prepare(q.raw(tab)) > 0
    # the requested budgets are E(r) = c·v_bud = 2Φ of the tuples that meet the cut-off, and are honoured
    np.testing.assert_allclose(rel.requested, 2.0 * spec.eps[kept])
    assert rel.check_delivered_within_requested()
    assert rel.answers["true"].iloc[0] == kept.sum()
    s = run_prdp(tab, spec, PersonalizedQuery("sum", "v", hi=1000), rng=rng)
    assert s.check_delivered_within_requested() and s.measure == "eps"
    df = compare_with_prdp(tab, spec, q, rng=rng, reveal=True, runs=3)
    assert set(df["model"]) == {"PDP", "PrDP"}
    assert df.set_index("model").loc["PrDP", "users' ε"] == "private"
    assert (df["within request"]).all() and (df["runs"] == 3).all()
    with pytest.raises(ParameterError):
        compare_with_prdp(tab, spec, PersonalizedQuery("median", "v", hi=100), rng=rng)
