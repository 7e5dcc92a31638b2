"""Neighbour notions: a roster read from the table is stated under substitution, with recalibrated losses."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.core.neighbours import Substitution
from prdp_core.mechanisms.personalized.accuracy import exact_mse, linear_moments
from prdp_core.mechanisms.personalized.mechanisms import PE, Minimum, Sample, Stretching, Threshold
from prdp_core.mechanisms.personalized.neighbours import (
    noise_calibration,
    sample_delivered_substitution,
    substitution_factor,
)
from prdp_core.mechanisms.personalized.query import PersonalizedQuery
from prdp_core.mechanisms.personalized.sample import sample_probability
from prdp_core.mechanisms.personalized.spec import (
    PrivacySpec,
    generate_tiers,
    generate_tiers_for,
    spec_from_column,
    spec_from_values,
)


def test_roster_read_from_the_table_is_stated_under_substitution():
    """A roster taken from the table moves with it (one added user with Φ = 0.01 moves α from 1 to
    0.01): such releases may only claim substitution neighbours, and must say so everywhere."""
    D = pd.DataFrame({"x": [1.0, 1, 1], "eps": [1.0, 1.0, 1.0]})
    Dx = pd.concat([D, pd.DataFrame({"x": [1.0], "eps": [0.01]})], ignore_index=True)
    s1, s2 = spec_from_column(D, "eps"), spec_from_column(Dx, "eps")
    assert (s1.min_eps, s2.min_eps) == (1.0, 0.01)  # why add/remove cannot be claimed
    assert s1.roster == s2.roster == "table"
    for m in (Minimum(), Threshold("max"), Sample("max"), Stretching(), PE()):
        r = m.release(Dx, s2, PersonalizedQuery("count", "x"), rng=np.random.default_rng(0))
        assert r.params["neighbours"] == "substitution" and r.params["roster"] == "table"
        assert r.extras["neighbours"] == "substitution" and "read from the table" in r.extras["roster"]
        e = r.entries[0]
        assert e.neighbours == Substitution() and e.neighbours.name == "substitution"
        assert "substitution" in e.loss.describe() and "add/remove" not in e.loss.describe()
        assert r.check_delivered_within_requested()  # a count has k = 1
    # generated tiers over the table's rows or owners are read from the table too; a declared universe is not
    tab = pd.DataFrame({"uid": ["a", "b", "a"], "x": [1.0, 2, 3]})
    assert generate_tiers_for(tab, rng=np.random.default_rng(0)).roster == "table"
    assert generate_tiers_for(tab, rng=np.random.default_rng(0), user_col="uid").roster == "table"
    public = generate_tiers(np.array(["a", "b", "c"]), rng=np.random.default_rng(0), user_col="uid")
    assert public.roster == "public"
    r = Sample("max").release(tab, public, PersonalizedQuery("count"), rng=np.random.default_rng(0))
    assert r.params["neighbours"] == r.entries[0].neighbours.name == "add/remove"
    with pytest.raises(ParameterError):
        PrivacySpec(users=np.arange(2), eps=np.ones(2), roster="data")


def test_substitution_losses_under_a_table_roster():
    """Under a table roster the black box costs k·ε per value change; it is run at ε/max(k, 1) so that
    every user still gets at most Φ (the per-user loss is min(k, 1) times the add/remove one)."""
    phi = np.array([0.05, 0.1, 0.3, 0.7, 1.0])
    spec = spec_from_values(phi, roster="table")
    public = spec_from_values(phi)
    cases = {PersonalizedQuery("count"): 1.0, PersonalizedQuery("sum", "v", lo=0, hi=10): 1.0,
             PersonalizedQuery("sum", "v", lo=-5, hi=10): 1.5,
             PersonalizedQuery("mean", "v", lo=0, hi=10): 0.5, PersonalizedQuery("median", "v", hi=10): 2.0,
             PersonalizedQuery("median", "v", hi=10, median_score="changes"): 1.0,
             PersonalizedQuery("min", "v", hi=10): 1.0}
    for q, k in cases.items():
        assert substitution_factor(q) == k
        assert noise_calibration(q, spec) == max(k, 1.0) and noise_calibration(q, public) == 1.0
        f = min(k, 1.0)
        np.testing.assert_allclose(Minimum().delivered_for(phi, spec, q), f * 0.05)
        np.testing.assert_allclose(Threshold(0.3).delivered_for(phi, spec, q), f * np.array([0, 0, .3, .3, .3]))
        np.testing.assert_allclose(Stretching().delivered_for(phi, spec, q), f * phi)
        np.testing.assert_allclose(PE().delivered_for(phi, spec, q), phi)
        s = Sample(0.5).delivered_for(phi, spec, q)
        if k == 1.0:
            np.testing.assert_allclose(s, np.minimum(phi, 0.5))
        assert np.all(s <= np.minimum(phi, 0.5) + 1e-12)
    # the rank-score median under a table roster: noise at α/2, every request honoured, and the release says so
    tab = pd.DataFrame({"v": [1.0, 4, 6, 7, 9]})
    q = PersonalizedQuery("median", "v", hi=10)
    r = Minimum().release(tab, spec, q, rng=np.random.default_rng(0))
    assert r.check_delivered_within_requested() and r.params["substitution_factor"] == 2.0
    assert r.params["noise_calibration"] == 2.0 and r.extras["eps_used"] == 0.025
    assert "calibrated at ε/2" in r.extras["promise"]
    # the error analysis uses the same calibration as the releases
    vals = q.prepare(tab["v"].to_numpy())
    for m in (Minimum(), Threshold(0.3)):
        _, mse_table = exact_mse(m, vals, phi, q, spec, 6.0)
        _, mse_public = exact_mse(m, vals, phi, q, public, 6.0)
        assert mse_table > mse_public
    s = PersonalizedQuery("sum", "v", lo=-5, hi=10)
    assert linear_moments(Minimum(), vals, phi, s, spec)[1] == pytest.approx(
        1.5 ** 2 * linear_moments(Minimum(), vals, phi, s, public)[1])
    # Sample's substitution loss with the recalibrated black box (a = t/2, s = t)
    pi = float(sample_probability(0.1, 1.0))
    expected = math.log1p(pi * math.expm1(0.5)) - math.log1p(pi * math.expm1(-0.5))
    np.testing.assert_allclose(sample_delivered_substitution(np.array([0.1, 2.0]), 1.0, 2.0), [expected, 1.0])
    with pytest.raises(ParameterError):
        sample_delivered_substitution(phi, 1.0, 3.0)
