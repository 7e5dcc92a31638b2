"""The failure forecast of the PrDP framework against simulation, and its remedies."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError, PolicyError
from prdp_core.mechanisms.prdp import local as prldp
from prdp_core.mechanisms.prdp.assumed import AssumedData
from prdp_core.mechanisms.prdp.budget import BudgetFunction, parse_budget, preset
from prdp_core.mechanisms.prdp.central import framework_trials
from prdp_core.mechanisms.prdp.experiments import normal_balances, simulate
from prdp_core.mechanisms.prdp.forecast import WARN_AT, Forecast, forecast
from prdp_core.mechanisms.prdp.queries import prepare
from prdp_core.mechanisms.prdp.remedies import outlook

NORMAL = AssumedData.normal(5e4, 5e4)


def _paper(kind: str, **kw) -> BudgetFunction:
    return preset(kind, "v", U=1e12, eps_max=100.0, **kw)


def _datasets(n: int, count: int, seed: int):
    for r in range(count):
        yield pd.DataFrame({"v": normal_balances(n, 5e4, 5e4, rng=np.random.default_rng([seed, n, r]))})


def _simulated_framework(bud, n, query, *, datasets=20, trials=100, seed=0, **split):
    """Relative errors and selected ℓ of datasets × trials central framework runs, fresh data each."""
    res, ells = [], []
    for k, data in enumerate(_datasets(n, datasets, seed)):
        p = prepare(data, bud, query)
        est, sel, _, _ = framework_trials(p, beta=0.1, rng=np.random.default_rng([seed, k, 9]), trials=trials,
                                            **split)
        res.append(np.abs(est - p.truth()) / p.truth())
        ells.append(sel.ell)
    return np.concatenate(res), np.concatenate(ells)


def _close(observed: np.ndarray, f: Forecast, tol: float = 0.03) -> None:
    obs = float(np.mean(observed >= f.level))
    assert abs(obs - f.failure) <= tol, (f.label, obs, f.failure)


@pytest.mark.parametrize("kind, n, split, expected", [
    ("log", 20_000, {}, (0.6, 0.9)),                                        # the collapse boundary
    ("inverse", 5_000, {}, (0.9, 1.0)),
    ("inverse", 5_000, {"eps_share": 0.25}, (0.0, 0.1)),                    # giving M ¾ removes it there
    ("inverse", 2_000, {"eps_share": 0.1, "beta_share": 0.1}, (0.8, 1.0)),  # Part 1 too weak: drops
    ("sqrt", 100_000, {}, (0.0, 0.05)),
])
def test_framework_failure_matches_simulation(kind, n, split, expected):
    bud = _paper(kind)
    f = forecast(bud, NORMAL, n, "sum", beta=0.1, **split)
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
    f = forecast(bud, NORMAL, 1000, "count", beta=0.1)
    assert 0.55 <= f.failure <= 0.75 and 0.25 <= f.no_pass <= 0.4
    re, _ = _simulated_framework(bud, 1000, "count", datasets=1000, trials=2, seed=5)
    _close(re, f)


def test_the_issue_measurements_are_predicted():
    """Normal(50k, 50k), β = 0.1: median RE 100% at n = 10⁴ with log and sqrt, at n = 10³ for the three
    budgets of Sec. 8.1, and below 1.2% at n = 10⁵."""
    for kind in ("inverse", "log", "sqrt"):
        assert forecast(_paper(kind), NORMAL, 1000, "sum").median_re > 0.99
        assert forecast(_paper(kind), NORMAL, 100_000, "sum").median_re < 0.012
    for kind in ("log", "sqrt"):
        f = forecast(_paper(kind), NORMAL, 10_000, "sum")
        assert f.median_re > 0.99 and f.failure > 0.99 and f.cause == "clipped"
    ok = forecast(_paper("inverse"), NORMAL, 10_000, "sum")
    assert ok.median_re < 0.05 and ok.failure < 0.03
    const = forecast(_paper("constant"), NORMAL, 1000, "sum")  # one domain: nothing to select
    assert const.failure < 1e-3 and const.ell_probability.tolist() == [1.0]


@pytest.mark.parametrize("method, kind, n", [("extension", "sqrt", 1000), ("extension", "inverse", 3000),
                                             ("count", "sqrt", 3000), ("naive", "inverse", 3000)])
def test_comparison_mechanisms_match_simulation(method, kind, n):
    bud = _paper(kind)
    query = "count" if method == "count" else "sum"
    f = forecast(bud, NORMAL, n, query, method=method)
    res = [simulate(d, bud, "count" if query == "count" else "sum:v", method, beta=0.1, trials=100,
                      rng=np.random.default_rng([k, 4])) for k, d in enumerate(_datasets(n, 20, 2))]
    re = np.concatenate(res)
    _close(re, f)
    if 0.05 < f.failure < 0.95 or f.failure < 0.05:
        assert np.median(re) == pytest.approx(f.median_re, rel=0.15)


@pytest.mark.parametrize("query, rule", [("sum", "bernstein"), ("count", "bernstein"), ("sum", "paper")])
def test_local_framework_matches_simulation(query, rule):
    bud = _paper("inverse")
    f = forecast(bud, NORMAL, 100_000, query, model="local", threshold=rule)
    q = "sum:v" if query == "sum" else "count"
    res = [prldp.simulate(d, bud, q, "framework", beta=0.1, trials=200, threshold=rule,
                       rng=np.random.default_rng([k, 6])) for k, d in enumerate(_datasets(100_000, 10, 3))]
    _close(np.concatenate(res), f)
    if rule == "bernstein":
        assert 0.6 < f.failure < 0.99  # a case with power: neither 0 nor 1


def test_forecast_refuses_what_it_cannot_model():
    two = parse_budget("1e4 / max(v, 1) + 0.01 * w", eps_min=1e-8, eps_max=50.0)
    with pytest.raises(PolicyError, match="one measure"):
        forecast(two, NORMAL, 1000)
    for kw in ({"query": "max"}, {"n": 0}, {"n": "many"}, {"method": "other"}, {"model": "remote"},
               {"beta": 2.0}, {"eps_share": 1.0}, {"query": "count", "method": "extension"}):
        args = {"n": 1000, **kw}
        with pytest.raises(ParameterError):
            forecast(_paper("inverse"), NORMAL, args.pop("n"), **args)
    with pytest.raises(ParameterError):
        forecast(_paper("inverse"), "normal", 1000)


def test_outlook_warns_with_remedies_that_would_work():
    o = outlook(_paper("sqrt"), NORMAL, 10_000, "sum")
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
    res = [simulate(d, _paper("sqrt"), "sum:v", "extension", beta=0.1, trials=50,
                      rng=np.random.default_rng([k, 8])) for k, d in enumerate(_datasets(10_000, 10, 4))]
    assert np.mean(np.concatenate(res) >= 0.5) < WARN_AT


def test_outlook_recommends_a_policy_change_only_when_nothing_else_works():
    o = outlook(_paper("sqrt"), NORMAL, 1000, "sum")
    assert o.recommended is not None and not o.recommended.keeps_policy
    assert all(not r.works for r in o.remedies if r.keeps_policy)
    assert "budget_factor" in o.recommended.change and "weaker protection" in o.recommended.note
    fine = outlook(_paper("log"), NORMAL, 100_000, "sum")
    assert not fine.likely_to_fail and fine.warning() is None and fine.recommended is None and not fine.remedies
    local = outlook(_paper("inverse"), NORMAL, 100_000, "count", model="local")
    assert local.likely_to_fail and any("tighter thresholds" in r.label for r in local.remedies)


def test_remedy_changes_apply_to_the_real_mechanisms():
    """A recommended split, run as the framework's option, gives what the forecast predicted."""
    o = outlook(_paper("inverse"), NORMAL, 5000, "sum", always=True)
    split = next(r for r in o.remedies if "eps_share" in r.change)
    assert split.works
    re, _ = _simulated_framework(_paper("inverse"), 5000, "sum:v", datasets=10, trials=100, seed=7, **split.change)
    _close(re, split.forecast)
