"""The framework's failure predicted before a run (prdp_forecast), checked against simulated runs on
fresh data sets drawn from the assumed distribution; and Algorithm 2's split option, whose per-record
loss stays within E(r)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from prdp_core import budget as B
from prdp_core.errors import ParameterError, PolicyError
from prdp_core.mechanisms import prdp as P
from prdp_core.mechanisms import prldp as LP
from prdp_core.mechanisms import prdp_forecast as F

NORMAL = F.AssumedData.normal(5e4, 5e4)


def _paper(kind: str, **kw) -> B.BudgetFunction:
    return B.preset(kind, "v", U=1e12, eps_max=100.0, **kw)


def _datasets(n: int, count: int, seed: int):
    for r in range(count):
        yield pd.DataFrame({"v": P.normal_balances(n, 5e4, 5e4, rng=np.random.default_rng([seed, n, r]))})


def _simulated_framework(bud, n, query, *, datasets=20, trials=100, seed=0, **split):
    """Relative errors and selected ℓ of datasets × trials central framework runs, fresh data each."""
    res, ells = [], []
    for k, data in enumerate(_datasets(n, datasets, seed)):
        p = P.prepare(data, bud, query)
        est, sel, _, _ = P.framework_trials(p, beta=0.1, rng=np.random.default_rng([seed, k, 9]), trials=trials,
                                            **split)
        res.append(np.abs(est - p.truth()) / p.truth())
        ells.append(sel.ell)
    return np.concatenate(res), np.concatenate(ells)


def _close(observed: np.ndarray, f: F.Forecast, tol: float = 0.03) -> None:
    obs = float(np.mean(observed >= f.level))
    assert abs(obs - f.failure) <= tol, (f.label, obs, f.failure)


# ---------------------------------------------------------------------------
# The forecast against simulation (2,000 runs each: 3 points ≈ 3 standard errors at p = ½)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind, n, split, expected", [
    ("log", 20_000, {}, (0.6, 0.9)),                                        # the collapse boundary
    ("inverse", 5_000, {}, (0.9, 1.0)),
    ("inverse", 5_000, {"eps_share": 0.25}, (0.0, 0.1)),                    # giving M ¾ removes it there
    ("inverse", 2_000, {"eps_share": 0.1, "beta_share": 0.1}, (0.8, 1.0)),  # Part 1 too weak: drops
    ("sqrt", 100_000, {}, (0.0, 0.05)),
])
def test_framework_failure_matches_simulation(kind, n, split, expected):
    bud = _paper(kind)
    f = F.forecast(bud, NORMAL, n, "sum", beta=0.1, **split)
    assert expected[0] <= f.failure <= expected[1]
    re, ells = _simulated_framework(bud, n, "sum:v", **split)
    _close(re, f)
    # the law of ℓ: total variation distance to the simulated selections
    sim = np.bincount(ells, minlength=bud.domains().L + 1)[1:] / ells.size
    assert 0.5 * np.abs(sim - f.ell_probability).sum() <= 0.04
    if f.failure < 0.4:
        assert np.median(re) == pytest.approx(f.median_re, rel=0.12)


@pytest.mark.slow
def test_count_forecast_includes_the_data_sets_variability():
    """sqrt, n = 1,000: domain selection is uncertain (a third of runs pass no domain); the forecast
    averages over data sets drawn from the assumed distribution, as the simulation does."""
    bud = _paper("sqrt")
    f = F.forecast(bud, NORMAL, 1000, "count", beta=0.1)
    assert 0.55 <= f.failure <= 0.75 and 0.25 <= f.no_pass <= 0.4
    re, _ = _simulated_framework(bud, 1000, "count", datasets=1000, trials=2, seed=5)
    _close(re, f)


def test_the_issue_measurements_are_predicted():
    """Normal(50k, 50k), β = 0.1: median RE 100% at n = 10⁴ with log and sqrt, at n = 10³ for the three
    budgets of Sec. 8.1, and below 1.2% at n = 10⁵."""
    for kind in ("inverse", "log", "sqrt"):
        assert F.forecast(_paper(kind), NORMAL, 1000, "sum").median_re > 0.99
        assert F.forecast(_paper(kind), NORMAL, 100_000, "sum").median_re < 0.012
    for kind in ("log", "sqrt"):
        f = F.forecast(_paper(kind), NORMAL, 10_000, "sum")
        assert f.median_re > 0.99 and f.failure > 0.99 and f.cause == "clipped"
    ok = F.forecast(_paper("inverse"), NORMAL, 10_000, "sum")
    assert ok.median_re < 0.05 and ok.failure < 0.03
    const = F.forecast(_paper("constant"), NORMAL, 1000, "sum")  # one domain: nothing to select
    assert const.failure < 1e-3 and const.ell_probability.tolist() == [1.0]


@pytest.mark.parametrize("method, kind, n", [("extension", "sqrt", 1000), ("extension", "inverse", 3000),
                                             ("count", "sqrt", 3000), ("naive", "inverse", 3000)])
def test_comparison_mechanisms_match_simulation(method, kind, n):
    bud = _paper(kind)
    query = "count" if method == "count" else "sum"
    f = F.forecast(bud, NORMAL, n, query, method=method)
    res = [P.simulate(d, bud, "count" if query == "count" else "sum:v", method, beta=0.1, trials=100,
                      rng=np.random.default_rng([k, 4])) for k, d in enumerate(_datasets(n, 20, 2))]
    re = np.concatenate(res)
    _close(re, f)
    if 0.05 < f.failure < 0.95 or f.failure < 0.05:
        assert np.median(re) == pytest.approx(f.median_re, rel=0.15)


@pytest.mark.parametrize("query, rule", [("sum", "bernstein"), ("count", "bernstein"), ("sum", "paper")])
def test_local_framework_matches_simulation(query, rule):
    bud = _paper("inverse")
    f = F.forecast(bud, NORMAL, 100_000, query, model="local", threshold=rule)
    q = "sum:v" if query == "sum" else "count"
    res = [LP.simulate(d, bud, q, "framework", beta=0.1, trials=200, threshold=rule,
                       rng=np.random.default_rng([k, 6])) for k, d in enumerate(_datasets(100_000, 10, 3))]
    _close(np.concatenate(res), f)
    if rule == "bernstein":
        assert 0.6 < f.failure < 0.99  # a case with power: neither 0 nor 1


# ---------------------------------------------------------------------------
# The law of the error
# ---------------------------------------------------------------------------


def test_error_law_of_a_sum_of_laplace_variables():
    rng = np.random.default_rng(0)
    scales = np.array([3.0, 1.5, 0.4])
    x = (rng.laplace(0, 1, (400_000, 3)) * scales).sum(axis=1)
    law = F.ErrorLaw.laplace([1.0], [-2.0], [10.0], scales[None, :])
    for r in (0.05, 0.2, 0.5, 1.0):
        assert law.cdf(r)[0] == pytest.approx(np.mean(np.abs(x - 2.0) <= 10 * r), abs=0.003)
    assert law.mean() == pytest.approx(np.mean(np.abs(x - 2.0)) / 10, rel=0.01)
    assert law.quantile(0.5) == pytest.approx(np.median(np.abs(x - 2.0)) / 10, rel=0.01)
    normal = F.ErrorLaw.normal([0.3, 0.7], [0.0, 5.0], [10.0, 10.0], [1.0, 2.0])
    y = np.where(rng.random(400_000) < 0.3, rng.normal(0, 1, 400_000), 5 + rng.normal(0, 2, 400_000))
    assert normal.failure(0.5) == pytest.approx(np.mean(np.abs(y) >= 5), abs=0.003)
    assert normal.mean() == pytest.approx(np.mean(np.abs(y)) / 10, rel=0.01)


def test_assumed_distributions():
    v, m = NORMAL.points(1e12)
    assert m.sum() == pytest.approx(1.0)
    sample = P.normal_balances(400_000, 5e4, 5e4, rng=np.random.default_rng(1))
    assert float(np.dot(v, m)) == pytest.approx(sample.mean(), rel=0.005)
    assert float(np.dot(v * v, m)) == pytest.approx(np.mean(sample ** 2), rel=0.01)
    ln = F.AssumedData.lognormal(1000.0, 1.0)
    assert float(ln.quantile(np.array([0.5]))[0]) == pytest.approx(1000.0)
    q = F.AssumedData.from_quantiles([0, 0.5, 1], [0, 10, 30])
    assert q.quantile(np.array([0.25, 0.75])).tolist() == [5.0, 20.0]
    assert np.max(q.points(12.0)[0]) == 12.0  # capped at U
    assert "Normal" in NORMAL.describe() and F.AssumedData(**{**q.to_dict(), "probs": tuple(q.probs),
                                                               "values": tuple(q.values)}) == q
    for bad in (lambda: F.AssumedData.normal(1, 0), lambda: F.AssumedData.lognormal(-1, 1),
                lambda: F.AssumedData.from_quantiles([0.1, 1], [0, 1]), lambda: F.AssumedData("pareto", 1, 1),
                lambda: F.AssumedData.from_quantiles([0, 1], [5, 1])):
        with pytest.raises(ParameterError):
            bad()


def test_forecast_refuses_what_it_cannot_model():
    two = B.parse_budget("1e4 / max(v, 1) + 0.01 * w", eps_min=1e-8, eps_max=50.0)
    with pytest.raises(PolicyError, match="one measure"):
        F.forecast(two, NORMAL, 1000)
    for kw in ({"query": "max"}, {"n": 0}, {"n": "many"}, {"method": "other"}, {"model": "remote"},
               {"beta": 2.0}, {"eps_share": 1.0}, {"query": "count", "method": "extension"}):
        args = {"n": 1000, **kw}
        with pytest.raises(ParameterError):
            F.forecast(_paper("inverse"), NORMAL, args.pop("n"), **args)
    with pytest.raises(ParameterError):
        F.forecast(_paper("inverse"), "normal", 1000)


# ---------------------------------------------------------------------------
# The outlook: warning, remedies, recommendation
# ---------------------------------------------------------------------------


def test_outlook_warns_with_remedies_that_would_work():
    o = F.outlook(_paper("sqrt"), NORMAL, 10_000, "sum")
    assert o.likely_to_fail and o.recommended is not None
    w = o.warning()
    assert "likely to fail at n = 10,000" in w and "clipping threshold" in w and "Recommended" in w
    rec = o.recommended
    assert rec.keeps_policy and rec.works and rec.change == {"method": "extension"}
    t = o.table()
    assert t["option"].iloc[0].startswith("as designed") and not t["works"].iloc[0]
    labels = " ".join(t["option"])
    for part in ("give M more of the budget", "sum extension", "naive", "fewer domains", "smaller bound",
                 "raise every budget"):
        assert part in labels
    # the recommended extension does work in simulation
    res = [P.simulate(d, _paper("sqrt"), "sum:v", "extension", beta=0.1, trials=50,
                      rng=np.random.default_rng([k, 8])) for k, d in enumerate(_datasets(10_000, 10, 4))]
    assert np.mean(np.concatenate(res) >= 0.5) < F.WARN_AT


def test_outlook_recommends_a_policy_change_only_when_nothing_else_works():
    o = F.outlook(_paper("sqrt"), NORMAL, 1000, "sum")
    assert o.recommended is not None and not o.recommended.keeps_policy
    assert all(not r.works for r in o.remedies if r.keeps_policy)
    assert "budget_factor" in o.recommended.change and "weaker protection" in o.recommended.note
    fine = F.outlook(_paper("log"), NORMAL, 100_000, "sum")
    assert not fine.likely_to_fail and fine.warning() is None and fine.recommended is None and not fine.remedies
    local = F.outlook(_paper("inverse"), NORMAL, 100_000, "count", model="local")
    assert local.likely_to_fail and any("tighter thresholds" in r.label for r in local.remedies)


def test_remedy_changes_apply_to_the_real_mechanisms():
    """A recommended split, run as the framework's option, gives what the forecast predicted."""
    o = F.outlook(_paper("inverse"), NORMAL, 5000, "sum", always=True)
    split = next(r for r in o.remedies if "eps_share" in r.change)
    assert split.works
    re, _ = _simulated_framework(_paper("inverse"), 5000, "sum:v", datasets=10, trials=100, seed=7, **split.change)
    _close(re, split.forecast)


# ---------------------------------------------------------------------------
# Algorithm 2's split option: per-record loss within E(r)
# ---------------------------------------------------------------------------


def _boundary_table() -> pd.DataFrame:
    """Balances whose budget falls exactly on domain boundaries, and ordinary ones."""
    bud = B.inverse(1e4, "v")
    lo = bud.domains().lo
    exact = 1e4 / lo[(lo <= 1e4) & (lo >= 1e-6)]  # E(v) = 2^{i−1}ε̌ exactly (up to rounding)
    rng = np.random.default_rng(3)
    return pd.DataFrame({"v": np.concatenate((exact, np.abs(rng.normal(5e4, 5e4, 4000)), [0.0, 1.0, 1e12]))})


@pytest.mark.parametrize("share", [0.5, 1 / 3, 0.25, 0.1, 0.9, 0.37])
@pytest.mark.parametrize("query", ["count", "sum", "max", "distinct:v"])
def test_split_option_keeps_every_record_within_its_budget(share, query):
    t = _boundary_table()
    bud = B.inverse(1e4, "v")
    for seed in range(4):
        r = P.framework(t, bud, query, beta=0.1, rng=np.random.default_rng(seed), eps_share=share, beta_share=0.3)
        dp = bud.domains()
        idx = dp.index(bud(t))
        ell = r.extras["ell"]
        assert np.all(r.loss <= bud(t)), (share, float(np.max(r.loss - bud(t))))  # exactly, no tolerance
        part2 = np.where(idx >= ell, r.extras["eps_M"], 0.0)
        np.testing.assert_allclose(r.loss, share * dp.lo[idx - 1] + part2, rtol=1e-12)
        assert r.extras["eps_M"] <= (1 - share) * dp.lo[ell - 1] * (1 + 1e-15)
        assert r.params["eps_share"] == share and r.params["beta_share"] == 0.3
        assert f"{share:g}·2^(i−1)·ε̌" in r.entries[0].loss.note


def test_default_split_is_the_paper_and_unchanged():
    t = _boundary_table()
    bud = B.log_budget(500, "v", k=4)
    a = P.framework(t, bud, "sum", beta=0.1, rng=np.random.default_rng(5))
    b = P.framework(t, bud, "sum", beta=0.1, rng=np.random.default_rng(5), eps_share=0.5, beta_share=0.5)
    assert a.answers["estimate"].iloc[0] == b.answers["estimate"].iloc[0]
    np.testing.assert_array_equal(a.loss, b.loss)
    dp = bud.domains()
    idx = dp.index(bud(t))
    ell = a.extras["ell"]
    np.testing.assert_array_equal(a.loss, np.ldexp(dp.eps_min / 4, idx) + np.where(idx >= ell, dp.lo[ell - 1] / 2, 0))
    assert "eps_share" not in a.params and "2^(i−2)·ε̌ + ε_τ/2" in a.entries[0].loss.note
    with pytest.raises(ParameterError, match="between 0.01 and 0.99"):
        P.framework(t, bud, "sum", beta=0.1, rng=np.random.default_rng(5), eps_share=1.0)


def test_secure_framework_with_a_split():
    t = _boundary_table()
    t["v"] = np.rint(t["v"])
    bud = B.inverse(1e4, "v")
    r = P.framework(t, bud, "count", beta=0.1, secure=True, eps_share=0.25)
    assert r.secure and r.check_delivered_within_requested(rtol=0.0)
    assert math.isclose(r.extras["eps_M"], 0.75 * bud.domains().lo[r.extras["ell"] - 1], rel_tol=1e-12)
