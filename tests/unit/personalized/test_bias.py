"""Bias of the mechanisms that answer on a subset of the tuples (Sample, Threshold) without rescaling: each
release states it, quantified from the public specification, and the number matches the paper's formula and
the mechanism's answers on average."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.mechanisms import personalized as P
from prdp_core.mechanisms.personalized import PersonalizedQuery, Sample, Threshold, sample_probability
from prdp_core.mechanisms.personalized.spec import TierConfig, generate_tiers


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(7)
    n = 3000
    spec = generate_tiers(n, TierConfig(), rng=rng)  # the paper's tiers (54% at 0.01, 37% at 0.2, the rest 1)
    table = pd.DataFrame({"v": rng.integers(0, 40, n).astype(float)})  # values independent of Φ
    return table, spec


def test_samples_count_is_biased_by_the_papers_formula_and_the_release_says_by_how_much(setup):
    table, spec = setup
    q = PersonalizedQuery("count", "v", cutoff=10)
    counted = table["v"].to_numpy() >= 10
    truth = int(counted.sum())
    pi = sample_probability(spec.phi_for(table), spec.threshold("max"))
    expected = float(pi[counted].sum())  # E[count of the kept tuples] = Σ π over the counted tuples (Example 1)
    answers = [P.release(table, spec, q, Sample("max"), rng=np.random.default_rng(s), seed=s).answers["estimate"][0]
               for s in range(300)]
    sd = np.sqrt(float((pi[counted] * (1 - pi[counted])).sum()) + 2.0) / np.sqrt(len(answers))
    assert abs(np.mean(answers) - expected) < 5 * sd  # the paper's bias, measured
    share = Sample("max").expected_share(spec, q)
    assert share == pytest.approx(float(sample_probability(spec.eps, 1.0).mean()))
    assert abs(expected / truth - share) < 0.03  # the public estimate of the share holds for Φ independent of v
    assert 0.25 < share < 0.4  # the page's default: about −69%
    rel = P.release(table, spec, q, Sample("max"), rng=np.random.default_rng(0), seed=0)
    assert rel.answers["expected_bias"][0] == pytest.approx(share - 1) == rel.params["expected_bias"]
    assert rel.extras["bias"].startswith(f"Biased low: on average its count is about {share:.0%} of the true one "
                                         f"(−{(1 - share) * 100:.0f}%)")
    assert "expected_bias" in rel.for_review().answers.columns  # public: Φ over the roster
    assert rel.entries[0].params["expected_bias"] == pytest.approx(share - 1)  # and in the ledger


def test_rescaled_sample_states_no_bias_and_is_unbiased(setup):
    table, spec = setup
    q = PersonalizedQuery("count", "v", cutoff=10)
    truth = int((table["v"] >= 10).sum())
    m = Sample("max", rescale=True)
    answers = [P.release(table, spec, q, m, rng=np.random.default_rng(s), seed=s).answers["estimate"][0]
               for s in range(200)]
    assert abs(np.mean(answers) / truth - 1) < 0.05
    rel = P.release(table, spec, q, m, rng=np.random.default_rng(0), seed=0)
    assert "bias" not in rel.extras and "expected_bias" not in rel.answers.columns


def test_threshold_states_the_share_it_keeps_and_medians_state_none(setup):
    table, spec = setup
    q = PersonalizedQuery("sum", "v", lo=0, hi=40)
    rel = P.release(table, spec, q, Threshold("max"), rng=np.random.default_rng(0), seed=0)
    share = float(np.mean(np.asarray(spec.eps) >= 1.0))
    assert rel.answers["expected_bias"][0] == pytest.approx(share - 1) and "Threshold drops" in rel.extras["bias"]
    med = P.release(table, spec, PersonalizedQuery("median", "v", lo=0, hi=40), Sample("max"),
                    rng=np.random.default_rng(0), seed=0)
    assert "bias" not in med.extras and "expected_bias" not in med.answers.columns
