"""Secure granular-DP histograms: exact discrete Laplace counts from OpenDP, unseeded, with their law checked."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.accounting import Ledger
from prdp_core.core.errors import ParameterError, PolicyError
from prdp_core.core.secure import SECURE_LABEL
from prdp_core.mechanisms.granular.data import encode_attributes, synthetic_attribute_data
from prdp_core.mechanisms.granular.discrete import calibrate_discrete
from prdp_core.mechanisms.granular.histogram import heavy_hitter_histogram, standard_histogram

from ..secure_laws import BatchSampler, BrokenBatchSampler, SkewedSampler, chi2_dlap_p


def _empty_domain(cells_per_attr: int = 160) -> object:
    """Two attributes with declared categories and 30,000 empty cells apart from three records."""
    cats = [f"c{i}" for i in range(cells_per_attr)]
    t = pd.DataFrame({"a": ["c0", "c1", "c1"], "b": ["c0", "c0", "c1"]})
    return encode_attributes(t, ["a", "b"], {"a": cats, "b": cats})


def test_secure_standard_histogram_noise_is_dlap_2_over_eps_and_a_broken_sampler_fails():
    data = _empty_domain()
    assert data.cells > 25_000
    eps = 0.8
    rel = standard_histogram(data, eps=eps, threshold=-math.inf, secure=True, reveal=True)
    assert rel.secure and rel.seed is None and rel.entries[0].secure
    row = Ledger().extend(rel.entries).summary().iloc[0]
    assert row["mode"] == SECURE_LABEL and row["seed"] is None
    assert rel.entries[0].loss.value == eps and "secure" in rel.params
    err = (rel.answers["estimate"] - rel.answers["true"]).to_numpy()
    assert err.size == data.cells and np.all(err == np.rint(err))
    assert chi2_dlap_p(err.astype(np.int64), 2.0 / eps) > 1e-6
    bad = standard_histogram(data, eps=eps, threshold=-math.inf, sampler=SkewedSampler(1.1), reveal=True)
    assert chi2_dlap_p((bad.answers["estimate"] - bad.answers["true"]).to_numpy().astype(np.int64), 2.0 / eps) < 1e-4


def test_secure_one_attribute_heavy_hitter_histogram_counts_have_the_claimed_law():
    """Every category counted (one attribute): six releases of 4,999 cells pool 30,000 draws of the count noise."""
    cats = [f"k{i}" for i in range(4_998)]
    data = encode_attributes(pd.DataFrame({"a": ["k1", "k2", "k2"]}), ["a"], {"a": cats})

    def errors(**kw) -> tuple[np.ndarray, float]:
        out = []
        for _ in range(6):
            rel = heavy_hitter_histogram(data, eps0=1.0, nu=0.05, reveal=True, **kw)
            assert rel.secure and rel.seed is None and rel.entries[0].secure
            out.append((rel.answers["estimate"] - rel.answers["true"]).to_numpy())
        return np.concatenate(out), rel.extras["calibration"].count_scale

    err, scale = errors(secure=True)
    assert err.size == 6 * data.cells and np.all(err == np.rint(err))
    assert chi2_dlap_p(err.astype(np.int64), scale) > 1e-6
    bad, _ = errors(sampler=SkewedSampler(1.1))
    assert chi2_dlap_p(bad.astype(np.int64), scale) < 1e-4


def test_secure_heavy_hitter_histogram_on_many_attributes_uses_the_discrete_accountant():
    """PrivHeavyHitter with exact DLap(λ) threshold tests: λ from the discrete accountant, the noise of every
    node's test has that law (30,000 more draws with each call's arguments), a 10% error is rejected."""
    data = synthetic_attribute_data(3_000, 8, patterns=3, heavy_share=0.6, rng=np.random.default_rng(2))
    good = BatchSampler()
    rel = heavy_hitter_histogram(data, eps0=1.0, nu=0.05, sampler=good, reveal=True)
    cal = rel.extras["calibration"]
    assert cal.method == "exact (discrete Laplace)" and cal.levels == 3
    assert cal.delivered <= 1.0 * (1 + 1e-9) and rel.extras["eps0_delivered"] == cal.delivered
    assert cal.lam == pytest.approx(calibrate_discrete(1.0, 0.05, 8).lam)
    assert rel.secure and rel.seed is None and rel.entries[0].secure
    row = Ledger().extend(rel.entries).summary().iloc[0]
    assert row["mode"] == SECURE_LABEL
    assert len(rel.answers) >= 3  # the three planted patterns are heavy
    est = rel.answers["estimate"].to_numpy()
    assert np.all(est == np.rint(est))
    # one call per noisy node (4 + 2 + 1) at scale λ, then the counts at scale b
    assert len(good.batches) == 8
    assert chi2_dlap_p(good.batches[0], cal.lam) > 1e-6 and chi2_dlap_p(good.batches[6], cal.lam) > 1e-6
    assert chi2_dlap_p(good.batches[-1], cal.count_scale) > 1e-6
    bad = BrokenBatchSampler(1.1)
    heavy_hitter_histogram(data, eps0=1.0, nu=0.05, sampler=bad)
    assert chi2_dlap_p(bad.batches[0], cal.lam) < 1e-4


def test_secure_histograms_refuse_what_they_cannot_sample_exactly():
    big = synthetic_attribute_data(2_000, 24, patterns=3, heavy_share=0.5, rng=np.random.default_rng(1))
    with pytest.raises(ParameterError, match="exact accountant"):
        heavy_hitter_histogram(big, eps0=1.0, method="lemma28", secure=True)
    with pytest.raises(PolicyError, match="draws every one of its cells"):
        standard_histogram(big, eps=1.0, secure=True)
    from_data = encode_attributes(pd.DataFrame({"a": list("xyz")}), ["a"], from_data=True)
    with pytest.raises(PolicyError, match="declared"):
        standard_histogram(from_data, eps=1.0, secure=True)
    with pytest.raises(ParameterError, match="secure=True"):
        standard_histogram(from_data, eps=1.0)
