"""Black-box ε-DP mechanisms: the built-in samplers against their exact law (T9, T13), caller-supplied black boxes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms.personalized.accuracy import compare, linear_moments
from prdp_core.mechanisms.personalized.blackbox import (
    BlackBox,
    _em_logits,
    dp_mean,
    dp_quantile_em,
    dp_sum,
    em_pieces,
    median_scores,
    min_scores,
)
from prdp_core.mechanisms.personalized.mechanisms import PE, Minimum, Sample, Stretching, Threshold
from prdp_core.mechanisms.personalized.neighbours import sample_delivered_substitution
from prdp_core.mechanisms.personalized.query import PersonalizedQuery
from prdp_core.mechanisms.personalized.ranges import _pieces, expand_pieces
from prdp_core.mechanisms.personalized.sample import sample_probability
from prdp_core.mechanisms.personalized.spec import spec_from_column, spec_from_values

from .helpers import chi2_p, piece_draws


@pytest.mark.parametrize("score", ["rank", "changes"])
def test_median_em_sampler_matches_pmf_with_power(score):
    vals = np.array([2.0, 3, 3, 5, 6, 9, 9, 10])
    eps = 0.8
    pcs, probs = em_pieces("median", vals, eps, 1, 12, score=score, integer=True)
    r, pmf = expand_pieces(pcs, probs)
    logits = _em_logits("median", pcs, eps, score)
    # the public sampler is exactly: pieces → logits → piece draw (same seed, same draws)
    rng = np.random.default_rng(11)
    direct = [dp_quantile_em("median", vals, eps, 1, 12, rng=rng, score=score, integer=True) for _ in range(200)]
    np.testing.assert_array_equal(direct, piece_draws(pcs, logits, 200, 11))
    draws = piece_draws(pcs, logits, 8000, 12)
    assert chi2_p(draws, r, pmf) > 1e-3
    for f in (0.9, 1.1):
        _, wrong = em_pieces("median", vals, eps * f ** 6, 1, 12, score=score, integer=True)
        # ε off by a factor (0.9⁶ ≈ 0.53, 1.1⁶ ≈ 1.77) must be rejected
        assert chi2_p(draws, r, expand_pieces(pcs, wrong)[1]) < 1e-4


def test_sum_and_mean_black_boxes():
    rng = np.random.default_rng(14)
    v = np.array([1.0, 5.0, 10.0])
    x = np.array([dp_sum(v, 0.5, 10.0, rng=rng) for _ in range(30_000)]) - 16
    assert stats.kstest(x, stats.laplace(scale=20).cdf).pvalue > 1e-3
    assert stats.kstest(x, stats.laplace(scale=22).cdf).pvalue < 1e-3
    assert stats.kstest(x, stats.laplace(scale=18).cdf).pvalue < 1e-3
    m = [dp_mean(v, 1.0, 0.0, 10.0, rng=rng) for _ in range(200)]
    assert all(0 <= a <= 10 for a in m)
    assert 0 <= dp_mean(np.array([]), 1.0, 0.0, 10.0, rng=rng) <= 10


def test_empty_input_gives_uniform_median_and_min():
    for kind in ("median", "min"):
        pcs, probs = em_pieces(kind, np.array([]), 0.5, 1, 6, integer=True)
        r, pmf = expand_pieces(pcs, probs)
        np.testing.assert_allclose(pmf, np.full(6, 1 / 6))
    assert 1 <= dp_quantile_em("median", np.array([]), 1.0, 1, 6, rng=np.random.default_rng(0), integer=True) <= 6


def test_min_scores_sensitivity_and_median_scores_bruteforce():
    """The black-box scores have the sensitivities the mechanisms assume under add/remove."""
    worst = {"rank": 0.0, "changes": 0.0, "min": 0.0}
    for n in range(0, 5):
        for D in itertools.product(range(1, 5), repeat=n):
            for x in range(1, 5):
                for kind, key in (("median", "rank"), ("median", "changes"), ("min", "min")):
                    a = np.sort(np.array(D, dtype=float))
                    b = np.sort(np.array(D + (x,), dtype=float))
                    sa = _scores_on_grid(kind, a, key)
                    sb = _scores_on_grid(kind, b, key)
                    worst[key] = max(worst[key], float(np.abs(sa - sb).max()))
    assert worst == {"rank": 0.5, "changes": 1.0, "min": 1.0}


def _scores_on_grid(kind, xs, key):
    pcs = _pieces(xs, 1, 4, True)
    s = median_scores(pcs, key) if kind == "median" else min_scores(pcs)
    idx = np.searchsorted(pcs.start, np.arange(1, 5), side="right") - 1
    return s[idx]


def _recorder():
    calls = []

    def fn(values, eps, rng):
        calls.append((np.sort(values), eps))
        return float(values.sum()) + float(rng.laplace(0.0, 1.0 / eps))

    return calls, BlackBox("recorded Laplace count", fn)


def test_wrappers_pass_the_right_tuples_and_eps_to_a_black_box():
    spec = spec_from_values([0.05, 0.1, 0.3, 0.7, 1.0])
    tab = pd.DataFrame({"v": [1.0, 0, 1, 1, 0]})
    calls, bb = _recorder()
    q = PersonalizedQuery("count", "v", black_box=bb)
    rng = np.random.default_rng(0)
    Minimum().release(tab, spec, q, rng=rng)
    vals, eps = calls[-1]
    assert eps == pytest.approx(0.05) and vals.tolist() == [0, 0, 1, 1, 1]  # every tuple, at α
    Threshold(0.3).release(tab, spec, q, rng=rng)
    vals, eps = calls[-1]
    assert eps == pytest.approx(0.3) and vals.tolist() == [0, 1, 1]  # only Φ ≥ t
    # Sample: the kept set is a Bernoulli(π) sample; the black box runs at t
    for _ in range(4000):
        Sample(0.5).answer(q.prepare(q.raw(tab)), spec.eps, q, spec, rng=rng)
        assert calls[-1][1] == pytest.approx(0.5)
    pi = sample_probability(spec.eps, 0.5)
    sizes = np.array([len(c[0]) for c in calls[-4000:]])
    assert sizes.mean() == pytest.approx(pi.sum(), abs=4 * math.sqrt(np.sum(pi * (1 - pi)) / 4000))
    rel = Sample(0.5).release(tab, spec, q, rng=rng, seed=1)
    assert rel.params["black_box"] == "recorded Laplace count" and rel.params["black_box_substitution"] == 2.0
    assert "via recorded Laplace count" in rel.answers["query"].iloc[0]
    np.testing.assert_allclose(rel.loss, np.minimum(spec.eps, 0.5))
    assert "scale" not in rel.answers.columns  # the engine does not know an opaque mechanism's scale


def test_black_box_under_a_table_roster_is_recalibrated_for_its_substitution_factor():
    tab = pd.DataFrame({"v": [1.0, 0, 1, 1, 0], "eps": [0.05, 0.1, 0.3, 0.7, 1.0]})
    spec = spec_from_column(tab, "eps")
    assert spec.roster == "table"
    for k, run_at in ((2.0, 0.25), (1.0, 0.5)):
        calls = []
        bb = BlackBox("bb", lambda v, e, rng: (calls.append(e), float(v.sum()))[1], substitution=k)
        rel = Sample(0.5).release(tab, spec, PersonalizedQuery("count", "v", black_box=bb),
                                  rng=np.random.default_rng(1))
        assert calls[-1] == pytest.approx(run_at)
        assert rel.params["neighbours"] == "substitution" and rel.params["noise_calibration"] == max(k, 1.0)
        np.testing.assert_allclose(rel.loss, sample_delivered_substitution(spec.eps, 0.5, k))
        assert np.all(rel.loss <= np.minimum(spec.eps, 0.5) + 1e-12)


def test_black_box_is_refused_by_pe_and_stretching_and_errors_are_actionable():
    spec = spec_from_values([0.2, 0.5, 1.0])
    tab = pd.DataFrame({"v": [1.0, 0, 1]})
    _, bb = _recorder()
    q = PersonalizedQuery("count", "v", black_box=bb)
    for m in (PE(), Stretching()):
        assert not m.supports(q)
        with pytest.raises(ParameterError, match="own mechanism"):
            m.release(tab, spec, q, rng=np.random.default_rng(0))
    df = compare(tab, spec, q, runs=50, rng=np.random.default_rng(0))
    assert set(df["mechanism"]) == {"M", "T", "S", "S-avg"}
    assert all(str(x).startswith("simulated") for x in df["method"])  # no closed form claimed for it
    with pytest.raises(ParameterError):
        linear_moments(Minimum(), np.ones(3), spec.eps, q, spec)
    boom = BlackBox("boom", lambda v, e, rng: 1 / 0)
    with pytest.raises(ParameterError, match="boom"):
        Minimum().release(tab, spec, PersonalizedQuery("count", "v", black_box=boom), rng=np.random.default_rng(0))
    nan = BlackBox("nan", lambda v, e, rng: float("nan"))
    with pytest.raises(ParameterError, match="finite"):
        Minimum().release(tab, spec, PersonalizedQuery("count", "v", black_box=nan), rng=np.random.default_rng(0))
    for bad in (dict(name="", fn=len), dict(name="x", fn=3), dict(name="x", fn=len, substitution=3.0),
                dict(name="x", fn=len, substitution=0.0)):
        with pytest.raises(ParameterError):
            BlackBox(**bad)
    with pytest.raises(ParameterError):
        PersonalizedQuery("count", "v", black_box=len)
