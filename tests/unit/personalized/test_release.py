"""Ledger-ready personalized DP releases: every release delivers at most the request (T12), ledger composition."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.accounting import Ledger, RecordLoss
from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.personalized.mechanisms import PE, Minimum, Sample, Stretching, Threshold
from prdp_core.mechanisms.personalized.query import PersonalizedQuery
from prdp_core.mechanisms.personalized.spec import generate_tiers, spec_from_values

MECHS = {"M": Minimum(), "T": Threshold(), "S": Sample(), "S-avg": Sample("mean"),
         "S(0.3)": Sample(0.3, rescale=True), "PE": PE(), "Alag": Stretching()}


@pytest.mark.parametrize("kind", ["count", "sum", "mean", "median", "min"])
def test_every_release_delivers_at_most_the_request(kind):
    rng = np.random.default_rng(9)
    tab = pd.DataFrame({"v": rng.integers(0, 50, 300).astype(float)})
    spec = generate_tiers(300, rng=rng)
    q = PersonalizedQuery(kind, "v", cutoff=10, lo=0, hi=60)
    for name, m in MECHS.items():
        if kind not in m.kinds:
            with pytest.raises(ParameterError):
                m.release(tab, spec, q, rng=rng)
            continue
        r = m.release(tab, spec, q, rng=rng, seed=3, reveal=True)
        assert r.check_delivered_within_requested(), name
        assert r.measure == "eps" and r.loss.shape == (300,)
        assert {"true", "error", "estimate"} <= set(r.answers.columns)
        assert r.params["neighbours"] == m.neighbours.name
        assert isinstance(r.entries[0].loss, RecordLoss) and r.entries[0].loss.measure == "eps"
        review = r.for_review()
        assert review.loss is None and "true" not in review.answers.columns
        assert not any(k.startswith("private_") for k in review.extras)


def test_delivered_values_and_ledger_composition():
    spec = spec_from_values([0.05, 0.1, 0.3, 0.7, 1.0])
    phi = spec.eps
    np.testing.assert_allclose(Sample(0.5).delivered(phi, spec), [0.05, 0.1, 0.3, 0.5, 0.5])
    np.testing.assert_allclose(Threshold(0.3).delivered(phi, spec), [0, 0, 0.3, 0.3, 0.3])
    np.testing.assert_allclose(Minimum().delivered(phi, spec), 0.05)
    np.testing.assert_allclose(PE().delivered(phi, spec), phi)
    tab = pd.DataFrame({"v": [1.0, 0, 1, 1, 0]})
    rng = np.random.default_rng(0)
    led = Ledger()
    for m in (Sample(0.5), Threshold(0.3)):
        led.extend(m.release(tab, spec, PersonalizedQuery("count", "v"), rng=rng).entries)
    np.testing.assert_allclose(led.total(tab, measure="eps"), [0.05, 0.1, 0.6, 0.8, 0.8])
    summary = led.summary(tab)
    assert "add/remove" in summary["policy (public form)"].iloc[0]
    pe = PE().release(tab, spec, PersonalizedQuery("count", "v"), rng=rng)
    assert "substitution" in pe.entries[0].loss.describe()
    # parallel composition: users outside a release's table pay nothing — a release on part of the users
    part = spec_from_values([0.05, 0.1])
    r = Sample(0.5).release(tab.iloc[:2], part, PersonalizedQuery("count", "v"), rng=rng)
    assert r.loss.shape == (2,)


def test_sample_keeps_the_sample_secret():
    tab = pd.DataFrame({"v": np.ones(50)})
    spec = spec_from_values(np.full(50, 0.1))
    r = Sample(1.0).release(tab, spec, PersonalizedQuery("count", "v"), rng=np.random.default_rng(0), reveal=False)
    assert not any("kept" in str(c) for c in r.answers.columns)
    assert not any(k.startswith("private_") for k in r.extras)
    r2 = Sample(1.0).release(tab, spec, PersonalizedQuery("count", "v"), rng=np.random.default_rng(0), reveal=True)
    assert "private_kept" in r2.extras
