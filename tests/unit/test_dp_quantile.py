"""The private quantile (prdp_core.mechanisms.dp_quantile): its exact law on neighbouring datasets is ε-DP (and a
broken scale is not), the samplers follow that law with power against a 10% error in the noise scale,
the rank error stays within the exponential mechanism's bound on heavy-tailed data over 1,000 runs, and
adopting a suggestion adds its ledger entry with a private (not data-derived) source."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from prdp_core.core import noise
from prdp_core.core.accounting import Ledger
from prdp_core.core.errors import ParameterError
from prdp_core.core.provenance import data_derived, is_data_derived
from prdp_core.mechanisms.dp_quantile import (
    LEVEL_DENOMINATOR,
    CandidateGrid,
    dp_percentile_thresholds,
    dp_quantile,
    level_units,
    quantile_scores,
    rank_error_bound,
    score_sensitivity,
    select_index,
)


def _law(values: np.ndarray, cands: np.ndarray, pct: float, eps: float, scale_factor: float = 1.0) -> np.ndarray:
    """Exact output law of dp_quantile on ``values`` (``scale_factor`` ≠ 1: a broken noise scale)."""
    above = (values[None, :] > cands[:, None]).sum(axis=1)
    s = quantile_scores(values.size, above, pct)
    return noise.noisy_max_exponential_probs(s, scale_factor * 2 * score_sensitivity(pct) / eps)


@pytest.mark.parametrize("pct", [50.0, 90.0, 97.5])
def test_exact_law_on_neighbouring_datasets_is_eps_dp_and_a_halved_scale_is_not(pct):
    eps = 1.0
    cands = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    base = np.array([0.5, 1.5, 3.0, 3.0, 5.0, 9.0, 20.0])
    worst, worst_broken = 0.0, 0.0
    p = _law(base, cands, pct, eps)
    pb = _law(base, cands, pct, eps, 0.5)
    assert abs(p.sum() - 1) < 1e-9
    for x in (0.1, 1.0, 2.5, 6.0, 12.0, 40.0):  # add one record anywhere (and remove it: the same pair)
        q = _law(np.append(base, x), cands, pct, eps)
        qb = _law(np.append(base, x), cands, pct, eps, 0.5)
        worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(q)))))
        worst_broken = max(worst_broken, float(np.max(np.abs(np.log(pb) - np.log(qb)))))
    assert 0.2 * eps < worst <= eps + 1e-9
    assert worst_broken > eps + 0.01  # too little noise is caught


def test_teaching_and_secure_samplers_follow_the_law_with_power():
    """(Unseeded secure draws: acceptance at p > 1e-6; a 10% scale error is rejected at p < 1e-4.)"""
    scores = np.array([0, -1, -2, -4, -7], dtype=np.int64) * 3
    sens, eps = 3, 1.0
    law = noise.noisy_max_exponential_probs(scores, 2 * sens / eps)
    assert abs(law.sum() - 1) < 1e-9
    rng = np.random.default_rng(5)
    teach = np.bincount([select_index(scores, sens, eps, secure=False, rng=rng)[0] for _ in range(40_000)],
                        minlength=5)
    secure = np.bincount([select_index(scores, sens, eps, secure=True, rng=None)[0] for _ in range(6_000)],
                         minlength=5)
    for obs in (teach, secure):
        assert stats.chisquare(obs, law * obs.sum()).pvalue > 1e-6
    for wrong in (0.9, 1.1):
        bad = noise.noisy_max_exponential_probs(scores, wrong * 2 * sens / eps)
        assert stats.chisquare(teach, bad * teach.sum()).pvalue < 1e-4
    assert select_index(scores, sens, eps, secure=True, rng=None)[1] == pytest.approx(eps)  # OpenDP's map


def test_rank_error_stays_within_the_bound_on_heavy_tailed_data_over_1000_runs():
    rng = np.random.default_rng(11)
    values = np.floor(rng.pareto(1.2, 20_000) * 1_000)  # heavy tail: p99 ≈ 46,000, max ≈ 10⁷
    df = pd.DataFrame({"pay": values})
    grid = CandidateGrid(1.0, 1e8, 2_000, "log")
    cands = grid.values()
    eps, pct, beta = 0.05, 99.0, 0.05
    alpha = level_units(pct) / LEVEL_DENOMINATOR
    rank_err = np.abs((values[None, :] <= cands[:, None]).sum(axis=1) - alpha * values.size)
    best = rank_err.min()
    bound = rank_error_bound(pct, eps, grid.size, beta)
    assert bound == pytest.approx(2 * 0.99 * (math.log(2_000) + math.log(20)) / eps)
    draws = np.random.default_rng(3)
    errs = np.array([rank_err[np.searchsorted(cands, dp_quantile(df, "pay", pct, grid=grid, epsilon=eps,
                                                                   rng=draws).value)] for _ in range(1_000)])
    over = int(np.sum(errs > best + bound))
    assert over <= stats.binom.ppf(1 - 1e-6, 1_000, beta)
    assert np.median(errs) < bound  # and it is useful: typical errors far inside the bound
    assert np.sum(errs > best + bound / 4) > 0 or np.median(errs) > 0  # the noise is really there


def test_adopting_private_thresholds_adds_a_ledger_entry_and_is_not_data_derived():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"EMP": rng.pareto(1.5, 5_000) * 10, "PAY": rng.pareto(1.3, 5_000) * 1e3})
    grids = {"EMP": CandidateGrid(1, 1e5, 500), "PAY": CandidateGrid(10, 1e8, 500)}
    sug = dp_percentile_thresholds(df, ["EMP", "PAY"], 97, grids=grids, epsilon=0.2, seed=4)
    assert set(sug.thresholds) == {"EMP", "PAY"}
    assert all(v in grids[m].values() for m, v in sug.thresholds.items())
    assert sug.epsilon == pytest.approx(0.2) and all(q.epsilon == pytest.approx(0.1) for q in sug.quantiles)
    assert not any(is_data_derived(s) for s in sug.sources.values())
    assert data_derived({"policy": {"threshold_source": sug.sources}}) == []
    led = Ledger()
    led.add(sug.entry)
    assert len(led) == 1 and sug.entry.loss.measure == "eps" and sug.entry.loss.value == pytest.approx(0.2)
    assert sug.entry.seed == 4 and not sug.entry.secure and "teaching" in sug.entry.label
    again = dp_percentile_thresholds(df, ["EMP", "PAY"], 97, grids=grids, epsilon=0.2, seed=4)
    assert again.thresholds == sug.thresholds  # a seeded teaching run repeats
    sec = dp_percentile_thresholds(df, ["EMP"], 97, grids=grids, epsilon=0.1, secure=True)
    assert sec.entry.secure and sec.entry.seed is None and "secure" in sec.entry.label


@pytest.mark.parametrize("call, words", [
    (lambda df: dp_quantile(df, "x", 100, grid=CandidateGrid(1, 10), epsilon=1), "strictly between 0 and 100"),
    (lambda df: dp_quantile(df, "x", 97.123, grid=CandidateGrid(1, 10), epsilon=1), "two decimals"),
    (lambda df: dp_quantile(df, "x", 97, grid=CandidateGrid(1, 10), epsilon=0), "ε must be a positive"),
    (lambda df: dp_quantile(df, "x", 97, grid=CandidateGrid(1, 10), epsilon=float("nan")), "ε must be a positive"),
    (lambda df: CandidateGrid(0, 10, spacing="log"), "needs lo > 0"),
    (lambda df: CandidateGrid(5, 5), "lo < hi"),
    (lambda df: CandidateGrid(1, 10, size=10**7), "between 2 and"),
    (lambda df: dp_quantile(df, "nope", 97, grid=CandidateGrid(1, 10), epsilon=1), "nope"),
    (lambda df: dp_percentile_thresholds(df, ["x"], 97, grids={}, epsilon=1), "No candidate range"),
])
def test_bad_parameters_say_what_to_fix(call, words):
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    with pytest.raises(ParameterError, match=words):
        call(df)


def test_linear_grid_ends_exactly_at_the_typed_range():
    g = CandidateGrid(0, 1000, 11, "linear")
    assert g.values()[0] == 0 and g.values()[-1] == 1000 and g.values()[5] == 500
    assert CandidateGrid.from_dict(g.to_dict()) == g
