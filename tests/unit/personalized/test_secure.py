"""Secure personalized DP: every mechanism releases with exact samplers, its loss certified; the new samplers
(the dyadic Bernoulli of Sample's draw, report-noisy-max at a per-record scale for PE) pass their laws with power."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from prdp_core.core import noise
from prdp_core.core.errors import ParameterError, PolicyError
from prdp_core.core.secure import SCORE_SCALE, SECURE_LABEL, SecureSampler
from prdp_core.mechanisms import personalized as P
from prdp_core.mechanisms.personalized.blackbox import BlackBox, median_scores, min_scores
from prdp_core.mechanisms.personalized.pe import d_count
from prdp_core.mechanisms.personalized.ranges import _pieces
from prdp_core.mechanisms.personalized.sample import sample_probability
from prdp_core.mechanisms.personalized.secure import (
    black_box_scores,
    output_grid,
    pe_scores,
    pe_weights,
    sample_keep_numerators,
    secure_pe,
    secure_sample_keep,
    secure_stretching,
)

S = SecureSampler()
ONE = 2 ** 53


def _table(n: int = 1500, seed: int = 4) -> tuple[pd.DataFrame, P.PrivacySpec]:
    rng = np.random.default_rng(seed)
    tab = pd.DataFrame({"v": rng.integers(0, 100, n).astype(float), "b": rng.integers(0, 2, n)})
    return tab, P.spec_from_values(rng.choice([0.1, 0.5, 1.0], n))


MECHS = [P.Minimum(), P.Threshold("max"), P.Sample("max"), P.Sample("mean", rescale=True), P.PE(),
         P.Stretching(), P.Stretching(rescale=True)]


@pytest.mark.parametrize("kind", ["count", "sum", "mean", "median", "min"])
def test_every_mechanism_releases_securely_marked_unseeded_and_certified(kind):
    tab, spec = _table()
    q = (P.PersonalizedQuery("count", "b") if kind == "count" else
         P.PersonalizedQuery(kind, "v", lo=0, hi=100, integer=kind in ("median", "min")))
    ran = 0
    for m in MECHS:
        if not m.supports(q):
            continue
        rel = m.release(tab, spec, q, rng=None, secure=True, reveal=True)
        ran += 1
        e = rel.entries[0]
        assert rel.secure and e.secure and rel.seed is None and e.seed is None
        assert rel.extras["mode"] == SECURE_LABEL and rel.params["secure"]["sampler"] == "opendp"
        assert 0 < rel.params["certified_ratio"] <= 1 + 1e-9
        # the ledger states the same per-user loss as a seeded run (the certified loss is at most it)
        assert np.array_equal(rel.loss, m.delivered_for(spec.phi_for(tab), spec, q))
        est = float(rel.answers["estimate"].iloc[0])
        if kind in ("median", "min"):
            assert est in set(output_grid(0, 100, True, S.bits))
        if kind == "count" and m.name in ("minimum", "threshold", "pe"):
            assert est == round(est)
    assert ran >= 3


def test_secure_release_refuses_a_seeded_black_box_and_needs_a_mode():
    tab, spec = _table(200)
    bb = P.PersonalizedQuery("count", "b", black_box=BlackBox("mine", lambda v, e, rng: float(v.sum())))
    with pytest.raises(ParameterError, match="no secure path"):
        P.Minimum().release(tab, spec, bb, rng=None, secure=True)
    with pytest.raises(ParameterError, match="secure=True"):
        P.Minimum().release(tab, spec, P.PersonalizedQuery("count", "b"), rng=None)


def test_output_grid_is_public_and_bounded():
    assert np.array_equal(output_grid(0, 10, True, 10), np.arange(11.0))
    g = output_grid(0, 1e6, False, 10)
    assert g[0] == 0 and g[-1] == 1e6 and g.size <= 2 ** 11 + 2 and np.all(np.diff(g) > 0)
    gi = output_grid(-5, 100_000, True, 10)
    assert np.all(gi == np.rint(gi)) and gi[-1] == 100_000 and gi.size <= 2 ** 11 + 2


def test_black_box_scores_match_the_seeded_scores_with_sensitivity_one():
    rng = np.random.default_rng(1)
    v = np.sort(rng.integers(0, 12, 9).astype(float))
    r = np.arange(0.0, 13.0)
    pcs = _pieces(v, 0.0, 12.0, True)
    idx = np.searchsorted(pcs.start, r, side="right") - 1
    assert np.array_equal(black_box_scores("median", v, r), 2 * median_scores(pcs)[idx])
    assert np.array_equal(black_box_scores("median", v, r, "changes"), median_scores(pcs, "changes")[idx])
    assert np.array_equal(black_box_scores("min", v, r), min_scores(pcs)[idx])
    for kind, sc in (("median", "rank"), ("median", "changes"), ("min", "rank")):
        for j in range(v.size):  # add/remove one value: every score moves by at most 1
            for w in (np.delete(v, j), np.sort(np.append(v, v[j] + 1))):
                assert np.max(np.abs(black_box_scores(kind, v, r, sc) - black_box_scores(kind, w, r, sc))) <= 1


def _binomial_z(hits: int, n: int, p: float) -> float:
    return (hits - n * p) / math.sqrt(n * p * (1 - p))


def test_dyadic_bernoulli_is_exact_with_power():
    """200,000 draws: the probability is within 4 standard errors; a 10% larger one is ~20 away."""
    k = int(0.3 * ONE)
    x = S.bernoulli_dyadic(np.full(200_000, k))
    assert abs(_binomial_z(int(x.sum()), x.size, k / ONE)) < 4.5
    assert abs(_binomial_z(int(x.sum()), x.size, 1.1 * k / ONE)) > 8
    assert S.bernoulli_dyadic(np.array([0, ONE])).tolist() == [False, True]
    with pytest.raises(ParameterError):
        S.bernoulli_dyadic(np.array([ONE + 1]))


@pytest.mark.parametrize("t", [0.05, 1.0, 7.5])
def test_sample_keep_probabilities_are_rounded_down(t):
    phi = np.array([1e-6, 0.01, 0.3, 0.05, 1.0, 2.0, 7.0, 8.0])
    k = sample_keep_numerators(phi, t)
    with localcontext() as ctx:
        ctx.prec = 80
        et = Decimal(t).exp() - 1
        for f, kk in zip(phi, k):
            if f >= t:
                assert kk == ONE
                continue
            cap = Decimal(float(f)).exp() - 1
            assert Decimal(int(kk)) / ONE * et <= cap                      # never above π: loss ≤ Φ
            assert Decimal(int(kk) + 2) / ONE * et > cap                   # and as close as the grid allows
    assert np.all(np.abs(k / ONE - sample_probability(phi, t)) <= 2.0 ** -52)


def test_secure_sample_draw_keeps_with_pi_with_power():
    phi = np.repeat([0.1, 0.5, 2.0], 400_000)
    keep = secure_sample_keep(phi, 1.0, S)
    for f in (0.1, 0.5):
        p = float(sample_probability(f, 1.0))
        hits = int(keep[phi == f].sum())
        assert abs(_binomial_z(hits, 400_000, p)) < 4.5
        assert abs(_binomial_z(hits, 400_000, 1.1 * p)) > 8  # a 10% error would be seen
    assert keep[phi == 2.0].all()


def test_select_at_scale_law_with_power_and_its_certified_losses():
    scores = -np.arange(12)
    draws = np.array([S.select_at_scale(scores, 2.0, np.array([1]))[0] for _ in range(8_000)])
    obs = np.bincount(draws, minlength=12)

    def p(scale):
        return stats.chisquare(obs, noise.noisy_max_exponential_probs(scores, scale) * draws.size).pvalue

    assert p(2.0) > 1e-6
    assert p(2.2) < 1e-4 and p(2.0 / 1.1) < 1e-4
    _, losses = S.select_at_scale(scores, 2.0, np.array([1, 3, 0]))
    assert losses == pytest.approx([1.0, 3.0, 0.0])
    with pytest.raises(ParameterError):
        S.select_at_scale(np.array([0.5]), 2.0, np.array([1]))


def test_secure_pe_scores_weights_and_law():
    bits = np.array([1, 1, 0, 0, 1.0])
    phi = np.array([1.0, 2.0, 1.5, 3.0, 2.5])
    w = pe_weights(phi)
    assert np.array_equal(w, np.floor(phi * SCORE_SCALE)) and np.all(w / SCORE_SCALE <= phi)
    r = np.arange(6.0)
    s = pe_scores("count", bits, w, r)
    assert np.array_equal(s, d_count(bits, w))
    probs = noise.noisy_max_exponential_probs(s / SCORE_SCALE, 2.0)
    q = P.PersonalizedQuery("count", "b")
    out = [secure_pe("count", bits, phi, q, S) for _ in range(1_500)]
    draws = np.array([o[0] for o in out], dtype=int)
    assert max(o[1] for o in out) <= 1.0
    assert stats.chisquare(np.bincount(draws, minlength=6), probs * draws.size).pvalue > 1e-6
    with pytest.raises(ParameterError):
        pe_weights(np.array([1e-9]))


def test_secure_stretching_caps_each_users_loss():
    phi = np.array([0.1, 0.5, 1.0, 1.0])
    v = np.array([100.0, 100.0, 100.0, 0.0])
    est, scale, ratio = secure_stretching(v, phi, 100.0, 1.0, 1.0, S)
    assert ratio <= 1.0 and scale >= 100.0 and scale <= 100.0 * (1 + 2.0 ** -9)
    g = S.grid(100.0)
    assert est / g == round(est / g)
    _, scale2, ratio2 = secure_stretching(v, phi, 100.0, 1.0, 2.0, S)  # substitution calibration c = 2
    assert ratio2 <= 1.0 and scale2 >= 200.0


def test_secure_review_release_refuses_bounds_computed_from_the_data():
    with pytest.raises(PolicyError, match="hi"):
        P.require_public_bounds(["hi"])
    P.require_public_bounds([])  # typed bounds pass
