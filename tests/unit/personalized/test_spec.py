"""Privacy specifications (Def. 5, Sec. V): generated tiers, columns, labels, and thresholds from the public roster
(T11)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError, PolicyError
from prdp_core.mechanisms.personalized.mechanisms import Minimum
from prdp_core.mechanisms.personalized.query import PersonalizedQuery
from prdp_core.mechanisms.personalized.sample import sample_probability
from prdp_core.mechanisms.personalized.spec import (
    TIER_NAMES,
    TierConfig,
    generate_tiers,
    spec_from_column,
    spec_from_labels,
)


def test_generated_tiers_follow_sec_v():
    spec = generate_tiers(10_000, rng=np.random.default_rng(5))
    tab = spec.tier_table().set_index("tier")
    assert tab.loc["conservative", "users"] == 5400 and tab.loc["moderate", "users"] == 3700
    assert tab.loc["liberal", "users"] == 900
    assert tab.loc["conservative", "min"] >= 0.01 and tab.loc["conservative", "max"] <= 0.2
    assert tab.loc["moderate", "min"] >= 0.2 and tab.loc["moderate", "max"] <= 1.0
    assert tab.loc["liberal", "min"] == tab.loc["liberal", "max"] == 1.0
    np.testing.assert_allclose(spec.eps, np.round(spec.eps, 2))
    assert spec.mean_eps == pytest.approx(TierConfig().expected_mean(), abs=0.01)
    assert TierConfig().expected_mean() == pytest.approx(0.369, abs=0.001)
    # expected share kept by Sample: ≈ 0.31 at t = 1 and ≈ 0.58 at t = mean Φ (notes §3.2)
    assert sample_probability(spec.eps, 1.0).mean() == pytest.approx(0.31, abs=0.01)
    assert sample_probability(spec.eps, spec.mean_eps).mean() == pytest.approx(0.58, abs=0.015)


def test_tier_config_validation():
    with pytest.raises(ParameterError):
        TierConfig(f_c=0.7, f_m=0.5)
    with pytest.raises(ParameterError):
        TierConfig(eps_c=0.5, eps_m=0.2)
    with pytest.raises(ParameterError):
        TierConfig(eps_l=0)
    spec = generate_tiers(50, TierConfig(eps_c=0.001, eps_m=0.002), rng=np.random.default_rng(0))
    assert spec.min_eps >= 0.001  # rounding never produces ε = 0, nor leaves the tier's range
    assert (spec.eps[np.asarray(spec.tiers) == TIER_NAMES[0]] <= 0.002).all()


def test_spec_from_column_defaults_and_owners():
    tab = pd.DataFrame({"uid": ["a", "a", "b", "c", "d"], "eps": [0.5, 0.2, None, "x", 1.0], "v": [1, 2, 3, 4, 5]})
    spec = spec_from_column(tab, "eps", user_col="uid", default_eps=0.8)
    assert spec.n_users == 4
    np.testing.assert_allclose(spec.phi_for(tab), [0.2, 0.2, 0.8, 0.8, 1.0])
    assert spec.n_defaulted == 2
    assert any("several tuples" in n for n in spec.notes)
    assert any("different ε" in n for n in spec.notes)
    per_row = spec_from_column(tab, "eps", default_eps=0.8)
    np.testing.assert_allclose(per_row.eps, [0.5, 0.2, 0.8, 0.8, 1.0])
    with pytest.raises(PolicyError):
        spec_from_column(tab.assign(eps=[0.5, -1, 1, 1, 1]), "eps")
    with pytest.raises(PolicyError):
        spec.phi_for(pd.DataFrame({"uid": ["zz"]}))
    with pytest.raises(PolicyError):
        per_row.phi_for(tab.iloc[:3])


def test_spec_from_labels():
    tab = pd.DataFrame({"pref": ["high", "low", "medium", "unknown"]})
    spec = spec_from_labels(tab, "pref", {"high": 0.1, "medium": 0.5, "low": 1.0}, default_eps=1.0)
    np.testing.assert_allclose(spec.eps, [0.1, 1.0, 0.5, 1.0])
    assert spec.n_defaulted == 1
    with pytest.raises(ParameterError):
        spec_from_labels(tab, "pref", {"high": 0})


def test_thresholds_come_from_the_public_universe():
    roster = pd.Series(np.arange(20))
    spec = generate_tiers(roster.to_numpy(), rng=np.random.default_rng(6), user_col="uid")
    tab = pd.DataFrame({"uid": roster, "v": np.arange(20.0)})
    t_all = {k: spec.threshold(k) for k in ("max", "mean", "min")}
    conservative = int(np.argmin(spec.eps))
    # removing the most conservative user's tuple, permuting or changing values leaves t and α unchanged
    for sub in (tab.drop(index=conservative), tab.sample(frac=1, random_state=1), tab.assign(v=0.0)):
        assert {k: spec.threshold(k) for k in t_all} == t_all
        m = Minimum().release(sub, spec, PersonalizedQuery("count"), rng=np.random.default_rng(0))
        assert m.params["alpha"] == t_all["min"]
    assert spec.threshold(0.3) == 0.3
    with pytest.raises(ParameterError):
        spec.threshold("median")
    with pytest.raises(ParameterError):
        spec.threshold(-1)
