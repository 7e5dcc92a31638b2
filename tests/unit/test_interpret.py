"""Interpretation calculators: the published numbers, and each formula against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from prdp_core.core import interpret as I
from prdp_core.core.errors import ParameterError

# ---------------------------------------------------------------------------
# Published numbers (partial DP paper §1, §5, §7)
# ---------------------------------------------------------------------------


def test_eps10_reveals_a_bit_with_99_995_percent():
    acc = I.inference_accuracy(10)
    assert acc == pytest.approx(0.9999546, abs=1e-7)
    assert round(100 * acc, 3) == 99.995
    assert I.percent(acc).startswith("99.995")


def test_census_conversion_cks_vs_textbook():
    c = I.zcdp_side_by_side(2.63, 1e-6)
    assert c.eps_cks == pytest.approx(13.79, abs=0.01)
    assert c.eps_textbook == pytest.approx(14.69, abs=0.01)
    r = I.zcdp_side_by_side(1.02, 1e-6)
    assert r.eps_cks == pytest.approx(7.856, abs=0.005)  # the paper's (7.85, 1e-6), truncated
    assert r.eps_textbook == pytest.approx(8.528, abs=0.005)
    assert c.eps_zcdp == pytest.approx(math.sqrt(5.26))


@pytest.mark.parametrize("eps", [0.1, 0.5, 1, 2, 5, 10, 19.61])
def test_laplace_round_back_is_one_minus_exp_half_eps(eps):
    assert I.laplace_round_back_eps(eps) == pytest.approx(1 - math.exp(-eps / 2), rel=1e-12)
    assert I.laplace_round_back_eps(eps, sensitivity=2) == pytest.approx(1 - math.exp(-eps / 4), rel=1e-12)


def test_laplace_round_back_published_values_and_simulation():
    assert I.laplace_round_back_eps(10) == pytest.approx(0.99326, abs=1e-5)  # "> 99%"
    assert I.laplace_round_back_eps(10, sensitivity=2) == pytest.approx(0.9179, abs=1e-4)
    rng = np.random.default_rng(3)
    for eps in (0.5, 2.0):
        f = 7
        draws = np.round(f + rng.laplace(0, 1 / eps, 200_000))
        hits = int(np.sum(draws == f))
        p = I.laplace_round_back_eps(eps)
        assert stats.binomtest(hits, 200_000, p).pvalue > 1e-3
        # and the formula with a 10% wrong scale is rejected
        assert stats.binomtest(hits, 200_000, I.laplace_round_back(1.1 / eps)).pvalue < 1e-6
        assert stats.binomtest(hits, 200_000, I.laplace_round_back(0.9 / eps)).pvalue < 1e-6


def test_table_rows_of_the_notes():
    rows = {0.5: (0.6225, 0.2212), 1: (0.7311, 0.3935), 2: (0.8808, 0.6321), 5: (0.9933, 0.9179)}
    for eps, (acc, rb) in rows.items():
        assert I.inference_accuracy(eps) == pytest.approx(acc, abs=1e-4)
        assert I.laplace_round_back_eps(eps) == pytest.approx(rb, abs=1e-4)
    assert I.posterior_bound(5, 0.01) == pytest.approx(0.5999, abs=1e-4)
    assert I.posterior_bound(1, 0.01) == pytest.approx(0.0267, abs=1e-4)


# ---------------------------------------------------------------------------
# Formulas against brute force
# ---------------------------------------------------------------------------


def test_randomized_response_reaches_the_accuracy_bound():
    """Randomized response at ε is ε-DP and its best guess (the answer) is right e^ε/(1+e^ε) of the time."""
    for eps in (0.3, 1.0, 4.0):
        p_true = math.exp(eps) / (1 + math.exp(eps))
        m = np.array([[p_true, 1 - p_true], [1 - p_true, p_true]])  # rows: secret bit, cols: answer
        assert np.max(np.abs(np.log(m[0] / m[1]))) == pytest.approx(eps)
        best = 0.5 * sum(m[:, a].max() for a in range(2))  # MAP guess per answer, uniform prior
        assert best == pytest.approx(I.inference_accuracy(eps))


def test_accuracy_bound_holds_for_random_eps_dp_mechanisms():
    """Random finite mechanisms: the best guess never beats (e^ε + δ)/(1 + e^ε) at their exact (ε, δ)."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        k = int(rng.integers(2, 6))
        p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        eps = float(np.max(np.abs(np.log(p / q))))
        best = 0.5 * np.maximum(p, q).sum()
        assert best <= I.inference_accuracy(eps) + 1e-12
        e2 = float(rng.uniform(0, eps))
        delta = max(np.clip(p - math.exp(e2) * q, 0, None).sum(), np.clip(q - math.exp(e2) * p, 0, None).sum())
        assert best <= I.inference_accuracy(e2, delta) + 1e-12


def test_posterior_bound_is_bayes_with_ratio_e_eps():
    for eps, prior in ((0.5, 0.3), (2.0, 0.01), (8.0, 0.5)):
        lr = math.exp(eps)
        assert I.posterior_bound(eps, prior) == pytest.approx(prior * lr / (prior * lr + 1 - prior))
    assert I.posterior_bound(0, 0.2) == pytest.approx(0.2)


@pytest.mark.parametrize("method", ["cks", "textbook"])
def test_rho_for_approx_dp_inverts_the_conversion(method):
    for eps in (0.5, 3.0, 13.79):
        rho = I.rho_for_approx_dp(eps, 1e-6, method=method)
        c = I.zcdp_side_by_side(rho, 1e-6)
        got = c.eps_cks if method == "cks" else c.eps_textbook
        assert got == pytest.approx(eps, rel=1e-7)
    assert I.rho_for_approx_dp(13.79, 1e-6) == pytest.approx(2.63, abs=2e-3)


def test_zcdp_accuracy_bound_is_valid_and_useful():
    """Upper bound ≥ the accuracy of the Gaussian mechanism (which is ρ-zCDP), ≤ Pinsker."""
    for rho in (0.01, 0.1, 0.5, 2.63, 10.0):
        mu = math.sqrt(2 * rho)
        gaussian = stats.norm.cdf(mu / 2)  # best test between N(0,1) and N(µ,1)
        b = I.zcdp_inference_accuracy(rho)
        assert gaussian - 1e-12 <= b <= min(1.0, 0.5 + 0.5 * math.sqrt(rho / 2)) + 1e-12
    assert I.zcdp_inference_accuracy(0) == 0.5


def test_record_guarantee_pure_and_zcdp():
    g = I.record_guarantee(10, "eps", delta=1e-6, prior=0.01)
    assert g.rho == 50 and g.eps_pure == 10
    assert g.accuracy == pytest.approx(I.inference_accuracy(10))
    assert g.posterior == pytest.approx(0.9955, abs=1e-4)
    text = " ".join(g.sentences())
    assert "99.995" in text and "ρ = ε²/2 = 50" in text
    z = I.record_guarantee(2.63, "rho", delta=1e-6)
    assert z.eps_cks == pytest.approx(13.79, abs=0.01) and z.eps_textbook == pytest.approx(14.69, abs=0.01)
    zt = " ".join(z.sentences())
    assert "13.8" in zt and "14.7" in zt and "α × 2.63" in zt
    zero = I.record_guarantee(0, "rho")
    assert zero.accuracy == 0.5 and zero.posterior == pytest.approx(0.01)
    table = I.record_guarantee_table([0.1, 1.0], "eps")
    assert list(table["accuracy"]) == pytest.approx([I.inference_accuracy(0.1), I.inference_accuracy(1.0)])


def test_semantics_props_26_27():
    assert I.tv_bound_prop26(0.1) == pytest.approx(0.2214, abs=1e-4)
    assert I.tv_bound_prop26(math.log(2) / 4, 2) == pytest.approx(1.0)  # vacuous from |s|ε0 = ln2/2
    assert I.mi_bound_prop27(1.0, [1] * 10) == pytest.approx(5.0)
    assert I.mi_bound_prop27(1.0, [10]) == pytest.approx(50.0)  # one block = group privacy
    assert I.mi_bound_prop27(1.0, [1] * 50) == pytest.approx(25.0)


def test_curves_and_tables():
    c = I.accuracy_curve(eps_max=10, points=11)
    assert list(c.columns) == ["eps", "accuracy", "round_back", "round_back_replacement"]
    assert c["accuracy"].is_monotonic_increasing and c["accuracy"].iloc[0] == 0.5
    t = I.conversion_table([1.0, 2.63], 1e-6)
    assert t["eps_cks"].iloc[1] == pytest.approx(13.79, abs=0.01)
    assert (t["eps_cks"] <= t["eps_textbook"]).all()
    assert len(I.conversion_table(None, 1e-6, rho_max=2, points=10)) == 10


def test_percent_formatting():
    assert I.percent(0.99326) == "99.33%"
    assert I.percent(0.7311) == "73.1%"
    assert I.percent(0.0267) == "2.7%"
    assert I.percent(1.0) == "100%"


def test_limitations_checklist():
    every = I.limitations()
    assert len(every) == len(I.LIMITATIONS) >= 8
    per_attr = I.limitations("per-attribute")
    assert any("Membership" in x.title for x in per_attr)
    assert all(x.applies_to in ("per-attribute", "both") for x in per_attr)
    assert all(x.question.endswith("?") for x in every)


@pytest.mark.parametrize("call", [
    lambda: I.inference_accuracy(-1), lambda: I.inference_accuracy(1, 1.5), lambda: I.posterior_bound(1, 0),
    lambda: I.posterior_bound(1, 1.0), lambda: I.laplace_round_back(-0.1), lambda: I.record_guarantee(1, "nats"),
    lambda: I.rho_for_approx_dp(1, 0), lambda: I.tv_bound_prop26(0.1, 0), lambda: I.mi_bound_prop27(1, []),
    lambda: I.inference_accuracy(float("nan")), lambda: I.inference_accuracy("ten"),
])
def test_bad_input_raises_parameter_error(call):
    with pytest.raises(ParameterError):
        call()
