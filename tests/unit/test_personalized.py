"""Personalized DP engine: specifications, Sample's π, PE's d_f formulas, closed forms, releases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from prdp_core import noise
from prdp_core.accounting import Ledger, RecordLoss
from prdp_core.errors import ParameterError, PolicyError
from prdp_core.mechanisms import personalized as P

# ---------------------------------------------------------------------------
# Example 1 (Sec. IV-B): the paper's total-error figures
# ---------------------------------------------------------------------------


def test_example1_total_errors():
    e1 = P.example1_errors(t=1.0)
    assert e1["pi_c"] == pytest.approx(0.0612, abs=5e-5)
    assert e1["k"] == 13
    assert e1["sampling_mse"] == pytest.approx(149.69, abs=0.01)  # paper: ≈ 150
    assert e1["laplace_var"] == 2.0
    assert round(e1["total"]) == 152  # paper: 152
    e2 = P.example1_errors(t=0.2)
    assert e2["pi_c"] == pytest.approx(0.4750, abs=5e-5)
    assert e2["sampling_mse"] == pytest.approx(49.82, abs=0.01)  # paper: ≈ 50
    assert e2["laplace_var"] == pytest.approx(50.0)
    assert round(e2["total"]) == 100  # paper: 100


def _example1_data():
    # n = 200 users, 65% conservative (ε = 0.1), the rest liberal (ε = 1); density 0.1 in each group
    phi = np.r_[np.full(130, 0.1), np.full(70, 1.0)]
    bits = np.zeros(200)
    bits[:13] = 1
    bits[130:137] = 1
    return bits, phi


def test_example1_from_the_mechanism_closed_form_and_simulation():
    bits, phi = _example1_data()
    spec = P.spec_from_values(phi)
    q = P.Query("count")
    for t, total in ((1.0, 151.69), (0.2, 99.82)):
        m = P.Sample(t)
        bias, mse = P.exact_mse(m, bits, phi, q, spec, truth=20.0)
        assert mse == pytest.approx(total, abs=0.01)
        est = P.simulate_answers(m, bits, phi, q, spec, runs=40_000, rng=np.random.default_rng(7))
        assert np.mean((est - 20) ** 2) == pytest.approx(total, rel=0.03)
        # the same through the per-release code path (fewer draws)
        rng = np.random.default_rng(8)
        draws = np.array([m.answer(bits, phi, q, spec, rng=rng).estimate for _ in range(4000)])
        assert np.mean((draws - 20) ** 2) == pytest.approx(total, rel=0.08)


# ---------------------------------------------------------------------------
# Sample's π (T1) and degenerate cases (T2)
# ---------------------------------------------------------------------------


def test_pi_formula_properties():
    t = 1.0
    phi = np.array([0.01, 0.05, 0.1, 0.3, 0.7, 0.999, 1.0, 2.0])
    pi = P.sample_probability(phi, t)
    assert np.all((pi > 0) & (pi <= 1))
    assert np.all(np.diff(pi) >= 0)
    assert pi[-1] == 1 and pi[-2] == 1
    below = phi < t
    eff = np.log1p(pi[below] * math.expm1(t))
    np.testing.assert_allclose(eff, phi[below], atol=1e-12)
    np.testing.assert_allclose(P.sample_delivered(phi, t), np.minimum(phi, t))
    # the direction the paper skips: ln(1 − π + π e^{−t}) ≥ −Φ
    for ph, tt, expected in ((0.1, 1.0, -0.039459), (0.5, 0.6, -0.440097)):
        p = float(P.sample_probability(ph, tt))
        low = math.log(1 - p + p * math.exp(-tt))
        assert low == pytest.approx(expected, abs=1e-6)
        assert low >= -ph
    # tiny ε: no cancellation; huge ε (a mis-scaled column): no overflow
    assert float(P.sample_probability(1e-6, 0.01)) == pytest.approx(math.expm1(1e-6) / math.expm1(0.01), rel=1e-12)
    assert float(P.sample_probability(900.0, 1000.0)) == pytest.approx(math.exp(-100.0), rel=1e-12)
    assert float(P.sample_probability(5.0, 60_000.0)) == 0.0


def test_sample_at_min_threshold_is_minimum():
    spec = P.spec_from_values([0.2, 0.5, 1.0, 0.2])
    s = P.Sample("min")
    assert np.all(P.sample_probability(spec.eps, spec.threshold("min")) == 1)
    np.testing.assert_allclose(s.delivered(spec.eps, spec), P.Minimum().delivered(spec.eps, spec))


def test_uniform_spec_pe_is_the_exponential_mechanism():
    vals = np.array([2.0, 3, 5, 6, 8])
    eps = 0.7
    phi = np.full(5, eps)
    pcs, d, probs = P.pe_distribution("median", vals, phi, lo=1, hi=9, integer=True)
    r, pmf = P.expand_pieces(pcs, probs)
    scores = np.array([_brute_d("median", vals, np.ones(5), range(1, 10))[x] for x in r])
    np.testing.assert_allclose(pmf, noise.exponential_mechanism_probs(scores, eps, 1.0), atol=1e-12)
    # and PE with uniform Φ is the black box with the paper's change-count score
    pcs2, probs2 = P.em_pieces("median", vals, eps, 1, 9, score="changes", integer=True)
    np.testing.assert_allclose(P.expand_pieces(pcs2, probs2)[1], pmf, atol=1e-12)


def test_all_equal_phi_makes_s_t_m_identical_promises():
    spec = P.spec_from_values(np.full(6, 0.4))
    for m in (P.Minimum(), P.Threshold("max"), P.Sample("max")):
        np.testing.assert_allclose(m.delivered(spec.eps, spec), 0.4)
    assert np.all(P.sample_probability(spec.eps, spec.max_eps) == 1)


# ---------------------------------------------------------------------------
# PE scores against brute force (T6) and range compression (T8)
# ---------------------------------------------------------------------------


def _brute_d(kind, vals, phi, dom):
    vals = np.asarray(vals, dtype=float)
    n = vals.size
    grid = np.array(list(itertools.product(list(dom), repeat=n)), dtype=float)
    if kind == "median":
        f = np.sort(grid, axis=1)[:, n // 2]
    elif kind == "min":
        f = grid.min(axis=1)
    else:
        f = grid.sum(axis=1)
    cost = ((grid != vals[None, :]) * np.asarray(phi)[None, :]).sum(axis=1)
    out = {}
    for fv in np.unique(f):
        out[fv] = -float(cost[f == fv].min())
    return out


def test_paper_worked_example_values():
    D = np.array([3.0, 5, 6, 9, 11])
    Phi = np.array([0.1, 1, 1, 0.5, 1])
    d = P.d_median(D, Phi, np.array([3, 4, 5, 11, 1, 2, 6, 7, 10, 12]))
    np.testing.assert_allclose(d, [-1.5, -1.5, -0.5, -0.6, -1.6, -1.6, 0, -0.1, -0.6, -1.6], atol=1e-12)
    # the paper's uniform-score example: s(D, 2) = s(D, 4) = s(D, 5) = −1 and s(D, 11) = −4 for min
    dm = P.d_min(D, np.ones(5), np.array([2, 4, 5, 11, 3]))
    np.testing.assert_allclose(dm, [-1, -1, -1, -4, 0])
    # median: s(D,5) = s(D,9) = −1, s(D,3) = s(D,10) = s(D,11) = −2
    np.testing.assert_allclose(P.d_median(D, np.ones(5), np.array([5, 9, 3, 10, 11])), [-1, -1, -2, -2, -2])


@pytest.mark.parametrize("kind", ["median", "min", "count"])
def test_fast_scores_match_brute_force(kind):
    rng = np.random.default_rng({"median": 1, "min": 2, "count": 3}[kind])
    for trial in range(40):
        n = int(rng.integers(1, 6))
        phi = np.round(rng.uniform(0.05, 1.0, n), 2)
        if trial % 4 == 0:
            phi = rng.choice([0.1, 0.5], n)  # ties in Φ
        if kind == "count":
            bits = rng.integers(0, 2, n).astype(float)
            brute = _brute_d("count", bits, phi, (0, 1))
            np.testing.assert_allclose(P.d_count(bits, phi), [brute[x] for x in range(n + 1)], atol=1e-12)
            continue
        vals = rng.integers(1, 8, n).astype(float)
        if trial % 5 == 0:
            vals[:] = vals[0]  # ties in values
        brute = _brute_d(kind, vals, phi, range(1, 8))
        r = np.arange(1, 8)
        fast = P.d_median(vals, phi, r) if kind == "median" else P.d_min(vals, phi, r)
        np.testing.assert_allclose(fast, [brute[x] for x in r], atol=1e-12)
        # range compression gives the same pmf as the full grid (T8)
        pcs, d, probs = P.pe_distribution(kind, vals, phi, lo=1, hi=7, integer=True)
        rr, pmf = P.expand_pieces(pcs, probs)
        full = np.exp(np.array([brute[x] for x in rr]) / 2)
        np.testing.assert_allclose(pmf, full / full.sum(), atol=1e-12)


def test_k_smallest_prefix_sums_matches_naive():
    rng = np.random.default_rng(4)
    for levels in (1, 3, 17, None):
        n = 60
        phi = rng.choice(rng.uniform(0.01, 1, levels), n) if levels else rng.uniform(0.01, 1, n)
        p = rng.integers(0, n + 1, 200)
        k = (rng.random(200) * (p + 1)).astype(int)
        k = np.minimum(k, p)
        naive = np.array([np.sort(phi[:pp])[:kk].sum() for pp, kk in zip(p, k)])
        np.testing.assert_allclose(P.k_smallest_prefix_sums(phi, p, k), naive, atol=1e-12)
    with pytest.raises(ParameterError):
        P.k_smallest_prefix_sums(np.ones(3), np.array([2]), np.array([3]))


def test_pe_continuous_range_and_even_n():
    vals = np.array([1.5, 2.5, 2.5, 7.25])
    phi = np.array([0.2, 0.4, 0.3, 1.0])
    pcs, d, probs = P.pe_distribution("median", vals, phi, lo=0.0, hi=10.0)
    assert not pcs.integer
    assert probs.sum() == pytest.approx(1.0)
    assert np.all(pcs.size > 0) and not pcs.is_point.any()
    # even n: the upper median (rank 2, 0-indexed) = 2.5 is priced 0 but is a single point of a continuous range;
    # the best gap is (2.5, 7.25): one tuple below must move up, the cheapest is Φ = 0.2
    assert P.d_median(vals, phi, np.array([2.5]))[0] == 0
    assert d.max() == pytest.approx(-0.2)
    assert pcs.start[np.argmax(d)] == 2.5
    # r = 2.0 needs two of the three tuples above it to move down: 0.3 + 0.4
    assert P.d_median(vals, phi, np.array([2.0]))[0] == pytest.approx(-0.7)


def test_pe_needs_a_supported_query_and_data():
    with pytest.raises(ParameterError):
        P.pe_distribution("sum", np.ones(3), np.ones(3))
    with pytest.raises(ParameterError):
        P.pe_distribution("median", np.array([]), np.array([]), lo=0, hi=5)
    with pytest.raises(ParameterError):
        P.PE().check_kind("mean")


# ---------------------------------------------------------------------------
# Black boxes: sampler matches the exact law, with power (T9, T13)
# ---------------------------------------------------------------------------


def _chi2_p(draws, support, pmf):
    idx = np.searchsorted(support, draws)
    obs = np.bincount(idx, minlength=support.size)
    exp = pmf * draws.size
    keep = exp >= 5
    o = np.r_[obs[keep], obs[~keep].sum()]
    e = np.r_[exp[keep], exp[~keep].sum()]
    if e[-1] < 5:
        o[-2] += o[-1]
        e[-2] += e[-1]
        o, e = o[:-1], e[:-1]
    return stats.chisquare(o, e).pvalue


def _piece_draws(pcs, logits, n, seed):
    rng = np.random.default_rng(seed)
    return np.array([P._draw_from_pieces(pcs, logits, rng) for _ in range(n)])


@pytest.mark.parametrize("score", ["rank", "changes"])
def test_median_em_sampler_matches_pmf_with_power(score):
    vals = np.array([2.0, 3, 3, 5, 6, 9, 9, 10])
    eps = 0.8
    pcs, probs = P.em_pieces("median", vals, eps, 1, 12, score=score, integer=True)
    r, pmf = P.expand_pieces(pcs, probs)
    logits = P._em_logits("median", pcs, eps, score)
    # the public sampler is exactly: pieces → logits → piece draw (same seed, same draws)
    rng = np.random.default_rng(11)
    direct = [P.dp_quantile_em("median", vals, eps, 1, 12, rng=rng, score=score, integer=True) for _ in range(200)]
    np.testing.assert_array_equal(direct, _piece_draws(pcs, logits, 200, 11))
    draws = _piece_draws(pcs, logits, 8000, 12)
    assert _chi2_p(draws, r, pmf) > 1e-3
    for f in (0.9, 1.1):
        _, wrong = P.em_pieces("median", vals, eps * f ** 6, 1, 12, score=score, integer=True)
        # ε off by a factor (0.9⁶ ≈ 0.53, 1.1⁶ ≈ 1.77) must be rejected
        assert _chi2_p(draws, r, P.expand_pieces(pcs, wrong)[1]) < 1e-4


def test_pe_sampler_matches_pmf_with_power():
    vals = np.array([2.0, 3, 5, 6, 7])
    phi = np.array([0.1, 1, 0.3, 0.5, 1])
    pcs, d, probs = P.pe_distribution("median", vals, phi, lo=1, hi=9, integer=True)
    r, pmf = P.expand_pieces(pcs, probs)
    rng = np.random.default_rng(12)
    direct = [P.pe_draw("median", vals, phi, rng=rng, lo=1, hi=9, integer=True) for _ in range(200)]
    np.testing.assert_array_equal(direct, _piece_draws(pcs, d / 2.0, 200, 12))
    draws = _piece_draws(pcs, d / 2.0, 8000, 13)
    assert _chi2_p(draws, r, pmf) > 1e-3
    for f in (0.5, 2.0):
        _, _, wrong = P.pe_distribution("median", vals, phi * f, lo=1, hi=9, integer=True)
        assert _chi2_p(draws, r, P.expand_pieces(pcs, wrong)[1]) < 1e-4


@pytest.mark.parametrize("mech", ["minimum", "threshold", "stretching", "sample_all_kept"])
def test_laplace_noise_scale_with_power(mech):
    vals = np.array([1.0, 0, 1, 1, 0, 1, 1, 0])
    phi = np.array([0.5, 0.5, 1.0, 1.0, 2.0, 2.0, 0.5, 1.0])
    spec = P.spec_from_values(phi)
    q = P.Query("count")
    m = {"minimum": P.Minimum(), "threshold": P.Threshold(1.0), "stretching": P.Stretching(),
         "sample_all_kept": P.Sample(0.5)}[mech]
    mean, _ = P.linear_moments(m, vals, phi, q, spec)
    eps = {"minimum": 0.5, "threshold": 1.0, "stretching": 2.0, "sample_all_kept": 0.5}[mech]
    rng = np.random.default_rng(13)
    x = np.array([m.answer(vals, phi, q, spec, rng=rng).estimate for _ in range(30_000)]) - mean
    scale = 1.0 / eps
    assert stats.kstest(x, stats.laplace(scale=scale).cdf).pvalue > 1e-3
    assert stats.kstest(x, stats.laplace(scale=scale * 0.9).cdf).pvalue < 1e-3
    assert stats.kstest(x, stats.laplace(scale=scale * 1.1).cdf).pvalue < 1e-3


def test_sum_and_mean_black_boxes():
    rng = np.random.default_rng(14)
    v = np.array([1.0, 5.0, 10.0])
    x = np.array([P.dp_sum(v, 0.5, 10.0, rng=rng) for _ in range(30_000)]) - 16
    assert stats.kstest(x, stats.laplace(scale=20).cdf).pvalue > 1e-3
    assert stats.kstest(x, stats.laplace(scale=22).cdf).pvalue < 1e-3
    assert stats.kstest(x, stats.laplace(scale=18).cdf).pvalue < 1e-3
    m = [P.dp_mean(v, 1.0, 0.0, 10.0, rng=rng) for _ in range(200)]
    assert all(0 <= a <= 10 for a in m)
    assert 0 <= P.dp_mean(np.array([]), 1.0, 0.0, 10.0, rng=rng) <= 10


def test_empty_input_gives_uniform_median_and_min():
    for kind in ("median", "min"):
        pcs, probs = P.em_pieces(kind, np.array([]), 0.5, 1, 6, integer=True)
        r, pmf = P.expand_pieces(pcs, probs)
        np.testing.assert_allclose(pmf, np.full(6, 1 / 6))
    assert 1 <= P.dp_quantile_em("median", np.array([]), 1.0, 1, 6, rng=np.random.default_rng(0), integer=True) <= 6


def test_small_eps_numerics_are_stable():
    vals = np.arange(1.0, 1002.0)
    phi = np.full(1001, 0.01)
    pcs, d, probs = P.pe_distribution("median", vals, phi, lo=1, hi=100_000)
    assert np.isfinite(probs).all() and probs.sum() == pytest.approx(1.0)
    pcs, probs = P.em_pieces("median", vals, 0.01, 1, 100_000)
    assert np.isfinite(probs).all()


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
    pcs = P._pieces(xs, 1, 4, True)
    s = P.median_scores(pcs, key) if kind == "median" else P.min_scores(pcs)
    idx = np.searchsorted(pcs.start, np.arange(1, 5), side="right") - 1
    return s[idx]


# ---------------------------------------------------------------------------
# Specifications (Def. 5, Sec. V) and public thresholds (T11)
# ---------------------------------------------------------------------------


def test_generated_tiers_follow_sec_v():
    spec = P.generate_tiers(10_000, rng=np.random.default_rng(5))
    tab = spec.tier_table().set_index("tier")
    assert tab.loc["conservative", "users"] == 5400 and tab.loc["moderate", "users"] == 3700
    assert tab.loc["liberal", "users"] == 900
    assert tab.loc["conservative", "min"] >= 0.01 and tab.loc["conservative", "max"] <= 0.2
    assert tab.loc["moderate", "min"] >= 0.2 and tab.loc["moderate", "max"] <= 1.0
    assert tab.loc["liberal", "min"] == tab.loc["liberal", "max"] == 1.0
    np.testing.assert_allclose(spec.eps, np.round(spec.eps, 2))
    assert spec.mean_eps == pytest.approx(P.TierConfig().expected_mean(), abs=0.01)
    assert P.TierConfig().expected_mean() == pytest.approx(0.369, abs=0.001)
    # expected share kept by Sample: ≈ 0.31 at t = 1 and ≈ 0.58 at t = mean Φ (notes §3.2)
    assert P.sample_probability(spec.eps, 1.0).mean() == pytest.approx(0.31, abs=0.01)
    assert P.sample_probability(spec.eps, spec.mean_eps).mean() == pytest.approx(0.58, abs=0.015)


def test_tier_config_validation():
    with pytest.raises(ParameterError):
        P.TierConfig(f_c=0.7, f_m=0.5)
    with pytest.raises(ParameterError):
        P.TierConfig(eps_c=0.5, eps_m=0.2)
    with pytest.raises(ParameterError):
        P.TierConfig(eps_l=0)
    spec = P.generate_tiers(50, P.TierConfig(eps_c=0.001, eps_m=0.002), rng=np.random.default_rng(0))
    assert spec.min_eps >= 0.001  # rounding never produces ε = 0, nor leaves the tier's range
    assert (spec.eps[np.asarray(spec.tiers) == P.TIER_NAMES[0]] <= 0.002).all()


def test_spec_from_column_defaults_and_owners():
    tab = pd.DataFrame({"uid": ["a", "a", "b", "c", "d"], "eps": [0.5, 0.2, None, "x", 1.0], "v": [1, 2, 3, 4, 5]})
    spec = P.spec_from_column(tab, "eps", user_col="uid", default_eps=0.8)
    assert spec.n_users == 4
    np.testing.assert_allclose(spec.phi_for(tab), [0.2, 0.2, 0.8, 0.8, 1.0])
    assert spec.n_defaulted == 2
    assert any("several tuples" in n for n in spec.notes)
    assert any("different ε" in n for n in spec.notes)
    per_row = P.spec_from_column(tab, "eps", default_eps=0.8)
    np.testing.assert_allclose(per_row.eps, [0.5, 0.2, 0.8, 0.8, 1.0])
    with pytest.raises(PolicyError):
        P.spec_from_column(tab.assign(eps=[0.5, -1, 1, 1, 1]), "eps")
    with pytest.raises(PolicyError):
        spec.phi_for(pd.DataFrame({"uid": ["zz"]}))
    with pytest.raises(PolicyError):
        per_row.phi_for(tab.iloc[:3])


def test_spec_from_labels():
    tab = pd.DataFrame({"pref": ["high", "low", "medium", "unknown"]})
    spec = P.spec_from_labels(tab, "pref", {"high": 0.1, "medium": 0.5, "low": 1.0}, default_eps=1.0)
    np.testing.assert_allclose(spec.eps, [0.1, 1.0, 0.5, 1.0])
    assert spec.n_defaulted == 1
    with pytest.raises(ParameterError):
        P.spec_from_labels(tab, "pref", {"high": 0})


def test_thresholds_come_from_the_public_universe():
    roster = pd.Series(np.arange(20))
    spec = P.generate_tiers(roster.to_numpy(), rng=np.random.default_rng(6), user_col="uid")
    tab = pd.DataFrame({"uid": roster, "v": np.arange(20.0)})
    t_all = {k: spec.threshold(k) for k in ("max", "mean", "min")}
    conservative = int(np.argmin(spec.eps))
    # removing the most conservative user's tuple, permuting or changing values leaves t and α unchanged
    for sub in (tab.drop(index=conservative), tab.sample(frac=1, random_state=1), tab.assign(v=0.0)):
        assert {k: spec.threshold(k) for k in t_all} == t_all
        m = P.Minimum().release(sub, spec, P.Query("count"), rng=np.random.default_rng(0))
        assert m.params["alpha"] == t_all["min"]
    assert spec.threshold(0.3) == 0.3
    with pytest.raises(ParameterError):
        spec.threshold("median")
    with pytest.raises(ParameterError):
        spec.threshold(-1)


# ---------------------------------------------------------------------------
# Queries, releases and the ledger (T12)
# ---------------------------------------------------------------------------


def test_query_validation():
    with pytest.raises(ParameterError):
        P.Query("sum", "v")
    with pytest.raises(ParameterError):
        P.Query("median", "v", lo=5, hi=1)
    with pytest.raises(ParameterError):
        P.Query("variance", "v")
    with pytest.raises(ParameterError):
        P.Query("median", "v", hi=5, median_score="best")
    q = P.Query("count", "v", cutoff=3)
    np.testing.assert_array_equal(q.prepare(np.array([1, 3, 5.0])), [0, 1, 1])
    assert P.Query("median", "v", hi=10).truth(np.array([4.0, 1, 9, 7])) == 7  # upper median


MECHS = {"M": P.Minimum(), "T": P.Threshold(), "S": P.Sample(), "S-avg": P.Sample("mean"),
         "S(0.3)": P.Sample(0.3, rescale=True), "PE": P.PE(), "Alag": P.Stretching()}


@pytest.mark.parametrize("kind", ["count", "sum", "mean", "median", "min"])
def test_every_release_delivers_at_most_the_request(kind):
    rng = np.random.default_rng(9)
    tab = pd.DataFrame({"v": rng.integers(0, 50, 300).astype(float)})
    spec = P.generate_tiers(300, rng=rng)
    q = P.Query(kind, "v", cutoff=10, lo=0, hi=60)
    for name, m in MECHS.items():
        if kind not in m.kinds:
            with pytest.raises(ParameterError):
                m.release(tab, spec, q, rng=rng)
            continue
        r = m.release(tab, spec, q, rng=rng, seed=3, reveal=True)
        assert r.check_delivered_within_requested(), name
        assert r.measure == "eps" and r.loss.shape == (300,)
        assert {"true", "error", "estimate"} <= set(r.answers.columns)
        assert r.params["neighbours"] == m.neighbours
        assert isinstance(r.entries[0].loss, RecordLoss) and r.entries[0].loss.measure == "eps"
        review = r.for_review()
        assert review.loss is None and "true" not in review.answers.columns
        assert not any(k.startswith("private_") for k in review.extras)


def test_delivered_values_and_ledger_composition():
    spec = P.spec_from_values([0.05, 0.1, 0.3, 0.7, 1.0])
    phi = spec.eps
    np.testing.assert_allclose(P.Sample(0.5).delivered(phi, spec), [0.05, 0.1, 0.3, 0.5, 0.5])
    np.testing.assert_allclose(P.Threshold(0.3).delivered(phi, spec), [0, 0, 0.3, 0.3, 0.3])
    np.testing.assert_allclose(P.Minimum().delivered(phi, spec), 0.05)
    np.testing.assert_allclose(P.PE().delivered(phi, spec), phi)
    tab = pd.DataFrame({"v": [1.0, 0, 1, 1, 0]})
    rng = np.random.default_rng(0)
    led = Ledger()
    for m in (P.Sample(0.5), P.Threshold(0.3)):
        led.extend(m.release(tab, spec, P.Query("count", "v"), rng=rng).entries)
    np.testing.assert_allclose(led.total(tab, measure="eps"), [0.05, 0.1, 0.6, 0.8, 0.8])
    summary = led.summary(tab)
    assert "add/remove" in summary["policy (public form)"].iloc[0]
    pe = P.PE().release(tab, spec, P.Query("count", "v"), rng=rng)
    assert "substitution" in pe.entries[0].loss.describe()
    # parallel composition: users outside a release's table pay nothing — a release on part of the users
    part = P.spec_from_values([0.05, 0.1])
    r = P.Sample(0.5).release(tab.iloc[:2], part, P.Query("count", "v"), rng=rng)
    assert r.loss.shape == (2,)


def test_sample_keeps_the_sample_secret():
    tab = pd.DataFrame({"v": np.ones(50)})
    spec = P.spec_from_values(np.full(50, 0.1))
    r = P.Sample(1.0).release(tab, spec, P.Query("count", "v"), rng=np.random.default_rng(0), reveal=False)
    assert not any("kept" in str(c) for c in r.answers.columns)
    assert not any(k.startswith("private_") for k in r.extras)
    r2 = P.Sample(1.0).release(tab, spec, P.Query("count", "v"), rng=np.random.default_rng(0), reveal=True)
    assert "private_kept" in r2.extras


# ---------------------------------------------------------------------------
# Error analysis: closed forms against simulation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("m", [P.Sample(0.4), P.Sample("max", rescale=True), P.Threshold(0.5), P.Minimum(),
                               P.Stretching(), P.Stretching(rescale=True)])
def test_closed_form_count_and_sum_mse_match_simulation(m):
    rng = np.random.default_rng(21)
    n = 400
    vals = rng.integers(0, 20, n).astype(float)
    spec = P.generate_tiers(n, P.TierConfig(eps_c=0.1, eps_m=0.4), rng=rng)
    for q in (P.Query("count", "v", cutoff=5), P.Query("sum", "v", lo=0, hi=20)):
        x = q.prepare(vals)
        truth = q.truth(vals)
        bias, mse = P.exact_mse(m, x, spec.eps, q, spec, truth)
        est = P.simulate_answers(m, x, spec.eps, q, spec, runs=20_000, rng=rng)
        assert np.mean((est - truth) ** 2) == pytest.approx(mse, rel=0.05)
        assert est.mean() - truth == pytest.approx(bias, abs=4 * est.std() / math.sqrt(est.size) + 1e-9)


def test_exact_pmf_mse_matches_simulation_for_pe_and_em():
    rng = np.random.default_rng(22)
    vals = np.clip(np.rint(rng.normal(50, 15, 101)), 1, 100)
    spec = P.generate_tiers(101, rng=rng)
    for kind in ("median", "min"):
        q = P.Query(kind, "v", lo=1, hi=100, integer=True)
        truth = q.truth(vals)
        for m in (P.PE(), P.Minimum(), P.Threshold()):
            bias, mse = P.exact_mse(m, vals, spec.eps, q, spec, truth)
            est = P.simulate_answers(m, vals, spec.eps, q, spec, runs=20_000, rng=rng)
            assert np.mean((est - truth) ** 2) == pytest.approx(mse, rel=0.06), (kind, m)


def test_count_proxy_formula_matches_simulation():
    rng = np.random.default_rng(23)
    spec = P.generate_tiers(500, rng=rng)
    delta, t = 0.2, 0.5
    proxy = P.count_mse_proxy(spec.eps, [t], density=delta)["rmse"].iloc[0] ** 2
    pi = P.sample_probability(spec.eps, t)
    R = 20_000
    bits = rng.random((R, 500)) < delta
    kept = bits & (rng.random((R, 500)) < pi)
    err = kept.sum(1) - bits.sum(1) + rng.laplace(0, 1 / t, R)
    assert np.mean(err ** 2) == pytest.approx(proxy, rel=0.04)
    with pytest.raises(ParameterError):
        P.sum_mse_proxy(spec.eps, [t], mean=2.0, sd=-1.0, bound=1.0)
    with pytest.raises(ParameterError):
        P.count_mse_proxy(spec.eps, [t], density=1.5)
    # the sum proxy with 0/1 values of mean δ (sd² = δ(1 − δ)) is the count proxy
    s = P.sum_mse_proxy(spec.eps, [t], mean=delta, sd=math.sqrt(delta * (1 - delta)), bound=1.0)
    assert s["rmse"].iloc[0] ** 2 == pytest.approx(proxy)


def test_compare_and_threshold_curve_tables():
    rng = np.random.default_rng(24)
    tab = pd.DataFrame({"v": rng.integers(0, 30, 500).astype(float)})
    spec = P.generate_tiers(500, rng=rng)
    for q in (P.Query("count", "v", cutoff=10), P.Query("median", "v", hi=40), P.Query("sum", "v", hi=40)):
        df = P.compare(tab, spec, q, runs=50, rng=rng)
        assert set(df["mechanism"]) >= {"M", "T", "S", "S-avg"}
        assert ("PE" in set(df["mechanism"])) == (q.kind != "sum")
        assert ("Alag" in set(df["mechanism"])) == (q.kind != "median")
        assert (df["rmse"] >= 0).all() and df["method"].notna().all()
        curve = P.threshold_curve(tab, spec, q, [0.1, 0.37, 1.0], runs=30, rng=rng)
        assert len(curve) == 3 and (curve["rmse"] > 0).all()
    dt = P.delivered_table(spec, P.paper_mechanisms("count"))
    row = dt.set_index("mechanism")
    assert row.loc["S", "users_full_phi"] == 1.0 and row.loc["PE", "users_full_phi"] == 1.0
    assert row.loc["T", "users_unused"] == pytest.approx(0.91, abs=0.001)  # only the 9% liberal users are used


# ---------------------------------------------------------------------------
# PDP → PrDP reduction
# ---------------------------------------------------------------------------


def test_to_prdp_adds_the_budget_column():
    tab = pd.DataFrame({"v": [1.0, 2.0, 3.0]})
    spec = P.spec_from_values([0.1, 0.5, 1.0])
    red = P.to_prdp(tab, spec, c=2.0)
    np.testing.assert_allclose(red.table["v_bud"], [0.1, 0.5, 1.0])
    # ε̌, ε̂: c times the public range of choices (here the paper's [0.01, 1]), not c·min Φ and c·max Φ
    assert red.expression == "2 * v_bud" and red.eps_min == pytest.approx(0.02) and red.eps_max == 2.0
    assert "paper's range" in red.bounds_source
    declared = P.to_prdp(tab, spec, c=2.0, eps_min=0.1, eps_max=3.0)
    assert (declared.eps_min, declared.eps_max) == (0.1, 3.0) and "declared" in declared.bounds_source
    with pytest.raises(ParameterError):
        P.to_prdp(red.table, spec)


def test_prdp_bounds_come_from_public_values_not_the_table():
    """ε̌ and ε̂ are published with E: they must not move when one user joins the table."""
    D = pd.DataFrame({"x": [1.0, 1, 1], "eps": [0.5, 0.5, 0.5]})
    Dx = pd.concat([D, pd.DataFrame({"x": [1.0], "eps": [0.05]})], ignore_index=True)
    bounds = {(r.eps_min, r.eps_max) for r in (P.to_prdp(t, P.spec_from_column(t, "eps")) for t in (D, Dx))}
    assert bounds == {(0.01, 1.0)}  # the old reduction gave (0.5, 0.5) and (0.05, 0.5)
    # a declared menu of choices (expert labels, generated tiers) is the public range
    lab = P.spec_from_labels(pd.DataFrame({"p": ["hi", "lo"]}), "p", {"hi": 0.1, "lo": 0.8}, default_eps=0.5)
    assert lab.choice_range == (0.1, 0.8)
    tiers = P.generate_tiers(50, P.TierConfig(eps_c=0.05, eps_m=0.3, eps_l=2.0), rng=np.random.default_rng(0))
    assert tiers.choice_range == (0.05, 2.0)
    assert tiers.choice_range[0] <= tiers.min_eps and tiers.max_eps <= tiers.choice_range[1]
    # a choice below the public ε̌ cannot be honoured: an actionable error that does not print the value
    low = pd.DataFrame({"x": [1.0, 1], "eps": [0.004, 0.5]})
    with pytest.raises(PolicyError, match="below the public") as err:
        P.run_prdp(low, P.spec_from_column(low, "eps"), P.Query("count"), rng=np.random.default_rng(0))
    assert "0.004" not in str(err.value)
    ok = P.run_prdp(low, P.spec_from_column(low, "eps"), P.Query("count"), eps_min=0.001,
                    rng=np.random.default_rng(0))
    assert ok.check_delivered_within_requested()


# ---------------------------------------------------------------------------
# Only public facts choose the output range and the neighbour notion (through release())
# ---------------------------------------------------------------------------


def _integer_share(m, table, spec, q, runs, seed):
    rng = np.random.default_rng(seed)
    out = np.array([m.release(table, spec, q, rng=rng).answers["estimate"].iloc[0] for _ in range(runs)])
    return float(np.mean(out == np.round(out)))


@pytest.mark.parametrize("name", ["M", "T", "S", "PE"])
def test_output_range_does_not_depend_on_the_values(name):
    """Substitution 4 → 4.5 used to switch every answer from integers to non-integers (disjoint
    supports, unbounded loss): the range must come from the query's declared value type."""
    m = {"M": P.Minimum(), "T": P.Threshold("max"), "S": P.Sample("max"), "PE": P.PE()}[name]
    spec = P.spec_from_values([0.5] * 4)
    D = pd.DataFrame({"x": [1.0, 2, 3, 4]})
    Dp = pd.DataFrame({"x": [1.0, 2, 3, 4.5]})
    for kind in ("median", "min"):
        cont = P.Query(kind, "x", lo=0, hi=10)
        assert _integer_share(m, D, spec, cont, 150, 1) == _integer_share(m, Dp, spec, cont, 150, 2) == 0.0
        ints = P.Query(kind, "x", lo=0, hi=10, integer=True)
        assert _integer_share(m, D, spec, ints, 150, 3) == _integer_share(m, Dp, spec, ints, 150, 4) == 1.0
    # add/remove: one more tuple with a non-integer value does not flip the range either
    spec5 = P.spec_from_values([0.5] * 5)
    Da = pd.DataFrame({"x": [1.0, 2, 3, 4, 4]})
    Db = pd.DataFrame({"x": [1.0, 2, 3, 4, 4.5]})
    q = P.Query("median", "x", lo=0, hi=10)
    assert _integer_share(m, Da, spec5, q, 150, 5) == _integer_share(m, Db, spec5, q, 150, 6) == 0.0


def test_declared_integers_round_values_onto_the_grid():
    q = P.Query("median", "x", lo=0, hi=10, integer=True)
    np.testing.assert_array_equal(q.prepare(np.array([4.4, 4.6, -3.0, 12.7])), [4, 5, 0, 10])
    assert "integers" in q.describe()
    with pytest.raises(ParameterError, match="whole-number bounds"):
        P.Query("median", "x", lo=0.5, hi=10, integer=True)
    with pytest.raises(ParameterError):
        P.em_pieces("median", np.array([1.0]), 1.0, 0, 9.5, integer=True)
    # the low-level samplers never infer the range from the values
    pcs, _ = P.em_pieces("median", np.array([1.0, 2.0, 3.0]), 1.0, 0, 10)
    assert not pcs.integer
    pcs, _, _ = P.pe_distribution("min", np.array([1.0, 2.0]), np.ones(2), lo=0, hi=10)
    assert not pcs.integer
    # a sum of declared integers is not rounded (the grid only concerns median and min outputs)
    np.testing.assert_array_equal(P.Query("sum", "x", hi=10, integer=True).prepare(np.array([1.5])), [1.5])


def test_paper_experiment_declares_integer_values():
    df = P.paper_experiment("median", runs=4, rng=np.random.default_rng(0))
    assert np.allclose(df["bias"] * 4, np.round(df["bias"] * 4))  # integer errors: integer answers


def test_roster_read_from_the_table_is_stated_under_substitution():
    """A roster taken from the table moves with it (one added user with Φ = 0.01 moves α from 1 to
    0.01): such releases may only claim substitution neighbours, and must say so everywhere."""
    D = pd.DataFrame({"x": [1.0, 1, 1], "eps": [1.0, 1.0, 1.0]})
    Dx = pd.concat([D, pd.DataFrame({"x": [1.0], "eps": [0.01]})], ignore_index=True)
    s1, s2 = P.spec_from_column(D, "eps"), P.spec_from_column(Dx, "eps")
    assert (s1.min_eps, s2.min_eps) == (1.0, 0.01)  # why add/remove cannot be claimed
    assert s1.roster == s2.roster == "table"
    for m in (P.Minimum(), P.Threshold("max"), P.Sample("max"), P.Stretching(), P.PE()):
        r = m.release(Dx, s2, P.Query("count", "x"), rng=np.random.default_rng(0))
        assert r.params["neighbours"] == "substitution" and r.params["roster"] == "table"
        assert r.extras["neighbours"] == "substitution" and "read from the table" in r.extras["roster"]
        e = r.entries[0]
        assert e.neighbours == "substitution"
        assert "substitution" in e.loss.describe() and "add/remove" not in e.loss.describe()
        assert r.check_delivered_within_requested()  # a count has k = 1
    # generated tiers over the table's rows or owners are read from the table too; a declared universe is not
    tab = pd.DataFrame({"uid": ["a", "b", "a"], "x": [1.0, 2, 3]})
    assert P.generate_tiers_for(tab, rng=np.random.default_rng(0)).roster == "table"
    assert P.generate_tiers_for(tab, rng=np.random.default_rng(0), user_col="uid").roster == "table"
    public = P.generate_tiers(np.array(["a", "b", "c"]), rng=np.random.default_rng(0), user_col="uid")
    assert public.roster == "public"
    r = P.Sample("max").release(tab, public, P.Query("count"), rng=np.random.default_rng(0))
    assert r.params["neighbours"] == r.entries[0].neighbours == "add/remove"
    with pytest.raises(ParameterError):
        P.PrivacySpec(users=np.arange(2), eps=np.ones(2), roster="data")


def test_substitution_losses_under_a_table_roster():
    """Under a table roster the black box costs k·ε per value change; it is run at ε/max(k, 1) so that
    every user still gets at most Φ (the per-user loss is min(k, 1) times the add/remove one)."""
    phi = np.array([0.05, 0.1, 0.3, 0.7, 1.0])
    spec = P.spec_from_values(phi, roster="table")
    public = P.spec_from_values(phi)
    cases = {P.Query("count"): 1.0, P.Query("sum", "v", lo=0, hi=10): 1.0, P.Query("sum", "v", lo=-5, hi=10): 1.5,
             P.Query("mean", "v", lo=0, hi=10): 0.5, P.Query("median", "v", hi=10): 2.0,
             P.Query("median", "v", hi=10, median_score="changes"): 1.0, P.Query("min", "v", hi=10): 1.0}
    for q, k in cases.items():
        assert P.substitution_factor(q) == k
        assert P.noise_calibration(q, spec) == max(k, 1.0) and P.noise_calibration(q, public) == 1.0
        f = min(k, 1.0)
        np.testing.assert_allclose(P.Minimum().delivered_for(phi, spec, q), f * 0.05)
        np.testing.assert_allclose(P.Threshold(0.3).delivered_for(phi, spec, q), f * np.array([0, 0, .3, .3, .3]))
        np.testing.assert_allclose(P.Stretching().delivered_for(phi, spec, q), f * phi)
        np.testing.assert_allclose(P.PE().delivered_for(phi, spec, q), phi)
        s = P.Sample(0.5).delivered_for(phi, spec, q)
        if k == 1.0:
            np.testing.assert_allclose(s, np.minimum(phi, 0.5))
        assert np.all(s <= np.minimum(phi, 0.5) + 1e-12)
    # the rank-score median under a table roster: noise at α/2, every request honoured, and the release says so
    tab = pd.DataFrame({"v": [1.0, 4, 6, 7, 9]})
    q = P.Query("median", "v", hi=10)
    r = P.Minimum().release(tab, spec, q, rng=np.random.default_rng(0))
    assert r.check_delivered_within_requested() and r.params["substitution_factor"] == 2.0
    assert r.params["noise_calibration"] == 2.0 and r.extras["eps_used"] == 0.025
    assert "calibrated at ε/2" in r.extras["promise"]
    # the error analysis uses the same calibration as the releases
    vals = q.prepare(tab["v"].to_numpy())
    for m in (P.Minimum(), P.Threshold(0.3)):
        _, mse_table = P.exact_mse(m, vals, phi, q, spec, 6.0)
        _, mse_public = P.exact_mse(m, vals, phi, q, public, 6.0)
        assert mse_table > mse_public
    s = P.Query("sum", "v", lo=-5, hi=10)
    assert P.linear_moments(P.Minimum(), vals, phi, s, spec)[1] == pytest.approx(
        1.5 ** 2 * P.linear_moments(P.Minimum(), vals, phi, s, public)[1])
    # Sample's substitution loss with the recalibrated black box (a = t/2, s = t)
    pi = float(P.sample_probability(0.1, 1.0))
    expected = math.log1p(pi * math.expm1(0.5)) - math.log1p(pi * math.expm1(-0.5))
    np.testing.assert_allclose(P.sample_delivered_substitution(np.array([0.1, 2.0]), 1.0, 2.0), [expected, 1.0])
    with pytest.raises(ParameterError):
        P.sample_delivered_substitution(phi, 1.0, 3.0)


def test_pdp_data_through_the_prdp_framework():
    rng = np.random.default_rng(25)
    n = 20_000
    tab = pd.DataFrame({"v": np.ceil(rng.lognormal(1.5, 1.0, n))})
    spec = P.generate_tiers(n, rng=rng)
    assert P.prdp_available()
    q = P.Query("count", "v", cutoff=5, hi=1000)
    rel = P.run_prdp(tab, spec, q, c=2.0, rng=rng, reveal=True)
    kept = q.prepare(q.raw(tab)) > 0
    # the requested budgets are E(r) = c·v_bud = 2Φ of the tuples that meet the cut-off, and are honoured
    np.testing.assert_allclose(rel.requested, 2.0 * spec.eps[kept])
    assert rel.check_delivered_within_requested()
    assert rel.answers["true"].iloc[0] == kept.sum()
    s = P.run_prdp(tab, spec, P.Query("sum", "v", hi=1000), rng=rng)
    assert s.check_delivered_within_requested() and s.measure == "eps"
    df = P.compare_with_prdp(tab, spec, q, rng=rng, reveal=True, runs=3)
    assert set(df["model"]) == {"PDP", "PrDP"}
    assert df.set_index("model").loc["PrDP", "users' ε"] == "private"
    assert (df["within request"]).all() and (df["runs"] == 3).all()
    with pytest.raises(ParameterError):
        P.compare_with_prdp(tab, spec, P.Query("median", "v", hi=100), rng=rng)


# ---------------------------------------------------------------------------
# Caller-supplied ε-DP black boxes (Minimum, Threshold and Sample wrap any mechanism)
# ---------------------------------------------------------------------------


def _recorder():
    calls = []

    def fn(values, eps, rng):
        calls.append((np.sort(values), eps))
        return float(values.sum()) + float(rng.laplace(0.0, 1.0 / eps))

    return calls, P.BlackBox("recorded Laplace count", fn)


def test_wrappers_pass_the_right_tuples_and_eps_to_a_black_box():
    spec = P.spec_from_values([0.05, 0.1, 0.3, 0.7, 1.0])
    tab = pd.DataFrame({"v": [1.0, 0, 1, 1, 0]})
    calls, bb = _recorder()
    q = P.Query("count", "v", black_box=bb)
    rng = np.random.default_rng(0)
    P.Minimum().release(tab, spec, q, rng=rng)
    vals, eps = calls[-1]
    assert eps == pytest.approx(0.05) and vals.tolist() == [0, 0, 1, 1, 1]  # every tuple, at α
    P.Threshold(0.3).release(tab, spec, q, rng=rng)
    vals, eps = calls[-1]
    assert eps == pytest.approx(0.3) and vals.tolist() == [0, 1, 1]  # only Φ ≥ t
    # Sample: the kept set is a Bernoulli(π) sample; the black box runs at t
    for _ in range(4000):
        P.Sample(0.5).answer(q.prepare(q.raw(tab)), spec.eps, q, spec, rng=rng)
        assert calls[-1][1] == pytest.approx(0.5)
    pi = P.sample_probability(spec.eps, 0.5)
    sizes = np.array([len(c[0]) for c in calls[-4000:]])
    assert sizes.mean() == pytest.approx(pi.sum(), abs=4 * math.sqrt(np.sum(pi * (1 - pi)) / 4000))
    rel = P.Sample(0.5).release(tab, spec, q, rng=rng, seed=1)
    assert rel.params["black_box"] == "recorded Laplace count" and rel.params["black_box_substitution"] == 2.0
    assert "via recorded Laplace count" in rel.answers["query"].iloc[0]
    np.testing.assert_allclose(rel.loss, np.minimum(spec.eps, 0.5))
    assert "scale" not in rel.answers.columns  # the engine does not know an opaque mechanism's scale


def test_black_box_under_a_table_roster_is_recalibrated_for_its_substitution_factor():
    tab = pd.DataFrame({"v": [1.0, 0, 1, 1, 0], "eps": [0.05, 0.1, 0.3, 0.7, 1.0]})
    spec = P.spec_from_column(tab, "eps")
    assert spec.roster == "table"
    for k, run_at in ((2.0, 0.25), (1.0, 0.5)):
        calls = []
        bb = P.BlackBox("bb", lambda v, e, rng: (calls.append(e), float(v.sum()))[1], substitution=k)
        rel = P.Sample(0.5).release(tab, spec, P.Query("count", "v", black_box=bb), rng=np.random.default_rng(1))
        assert calls[-1] == pytest.approx(run_at)
        assert rel.params["neighbours"] == "substitution" and rel.params["noise_calibration"] == max(k, 1.0)
        np.testing.assert_allclose(rel.loss, P.sample_delivered_substitution(spec.eps, 0.5, k))
        assert np.all(rel.loss <= np.minimum(spec.eps, 0.5) + 1e-12)


def test_black_box_is_refused_by_pe_and_stretching_and_errors_are_actionable():
    spec = P.spec_from_values([0.2, 0.5, 1.0])
    tab = pd.DataFrame({"v": [1.0, 0, 1]})
    _, bb = _recorder()
    q = P.Query("count", "v", black_box=bb)
    for m in (P.PE(), P.Stretching()):
        assert not m.supports(q)
        with pytest.raises(ParameterError, match="own mechanism"):
            m.release(tab, spec, q, rng=np.random.default_rng(0))
    df = P.compare(tab, spec, q, runs=50, rng=np.random.default_rng(0))
    assert set(df["mechanism"]) == {"M", "T", "S", "S-avg"}
    assert all(str(x).startswith("simulated") for x in df["method"])  # no closed form claimed for it
    with pytest.raises(ParameterError):
        P.linear_moments(P.Minimum(), np.ones(3), spec.eps, q, spec)
    boom = P.BlackBox("boom", lambda v, e, rng: 1 / 0)
    with pytest.raises(ParameterError, match="boom"):
        P.Minimum().release(tab, spec, P.Query("count", "v", black_box=boom), rng=np.random.default_rng(0))
    nan = P.BlackBox("nan", lambda v, e, rng: float("nan"))
    with pytest.raises(ParameterError, match="finite"):
        P.Minimum().release(tab, spec, P.Query("count", "v", black_box=nan), rng=np.random.default_rng(0))
    for bad in (dict(name="", fn=len), dict(name="x", fn=3), dict(name="x", fn=len, substitution=3.0),
                dict(name="x", fn=len, substitution=0.0)):
        with pytest.raises(ParameterError):
            P.BlackBox(**bad)
    with pytest.raises(ParameterError):
        P.Query("count", "v", black_box=len)
