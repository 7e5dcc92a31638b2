"""Edge values of the personalized DP and multi-tier engines: large budgets and bounds stay finite."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.mechanisms import multitier as mt
from prdp_core.mechanisms.personalized.accuracy import sum_mse_proxy
from prdp_core.mechanisms.personalized.mechanisms import Sample
from prdp_core.mechanisms.personalized.neighbours import sample_delivered_substitution
from prdp_core.mechanisms.personalized.query import PersonalizedQuery
from prdp_core.mechanisms.personalized.sample import sample_probability
from prdp_core.mechanisms.personalized.spec import TierConfig, generate_tiers, generate_tiers_for


def test_sample_substitution_loss_is_finite_for_large_thresholds():
    # k = 2 (sum with lo < 0 < hi, table roster): π = 1 for Φ ≥ t and e^{−t/2} − 1 rounds to −1 for t ≳ 75
    phi = np.array([100.0, 50.0, 1.0, 0.01])
    out = sample_delivered_substitution(phi, 100.0, 2.0)
    assert np.isfinite(out).all()
    assert out[0] == pytest.approx(100.0)  # π = 1: ln(e^{t/2}) − ln(e^{−t/2}) = t
    assert (out <= np.minimum(phi, 100.0) + 1e-9).all()
    # small arguments keep the former (log1p) values
    small = sample_delivered_substitution(np.array([1.0, 0.5, 0.1]), 1.0, 2.0)
    pi = sample_probability(np.array([1.0, 0.5, 0.1]), 1.0)
    ref = np.log1p(pi * math.expm1(0.5)) - np.log1p(pi * math.expm1(-0.5))
    np.testing.assert_allclose(small, ref, rtol=1e-12)


def test_sample_release_with_liberal_budgets_and_signed_bounds():
    table = pd.DataFrame({"v": np.linspace(-3, 3, 200)})
    spec = generate_tiers_for(table, TierConfig(eps_l=100.0), rng=np.random.default_rng(0))
    rel = Sample("max").release(table, spec, PersonalizedQuery("sum", column="v", lo=-5.0, hi=5.0),
                                  rng=np.random.default_rng(1))
    assert np.isfinite(rel.loss).all()
    assert rel.check_delivered_within_requested()
    rel.loss_profile("delivered ε")  # the page's read-out: raised "Losses must be finite" before


@pytest.mark.parametrize("family", ["geometric", "laplace", "gaussian"])
def test_huge_clipping_bound_is_refused_with_a_message(family):
    table = pd.DataFrame({"v": [1.0, 2.0, 3.0]})
    q = mt.central_query(table, "sum", measure="v", clip=1e300, integer=family == "geometric")
    with pytest.raises(ParameterError, match="clipping bound U"):
        mt.plan_central([("a", 8.0), ("b", 0.5)], family, sensitivity=q.sensitivity)
    mt.plan_central([("a", 8.0), ("b", 0.5)], family, sensitivity=1e15)  # the largest supported bound


def test_config_design_defaults_flag_the_release_and_are_validated():
    from prdp_core.core.errors import ConfigError
    from prdp_core.review import report

    text = """version: 1
data: {sample: cbp_like, n: 2000, seed: 1}
policy:
  specification:
    tiers: {f_c: 0.54, f_m: 0.37, eps_c: 0.01, eps_m: 0.2, eps_l: 1.0}
mechanisms:
  - kind: personalized
    query: {kind: sum, column: EMP, hi: 500}
    design_defaults: [hi]
"""
    study = report.parse_config(text)
    assert study.mechanisms[0]["design_defaults"] == ["hi"]
    run = report.run_study(study)
    rel = run.releases[0][2]
    assert "confidential data" in rel.params["hi_source"]
    assert "confidential data" in rel.entries[0].params["hi_source"]
    assert report.parse_config(study.to_yaml()).mechanisms[0]["design_defaults"] == ["hi"]  # round trip
    with pytest.raises(ConfigError, match="design_defaults"):
        report.parse_config(text.replace("[hi]", "[lo]"))


def test_sum_error_proxy_with_huge_bounds_is_a_parameter_error():
    phi = np.array([0.1, 0.5, 1.0])
    with pytest.raises(ParameterError, match="overflows"):
        sum_mse_proxy(phi, [0.1, 1.0], mean=1e299, sd=1e299, bound=2e300)
    np.testing.assert_allclose(sum_mse_proxy(phi, [1.0], mean=5.0, sd=2.0, bound=10.0)["rmse"], [16.567870692218644])


def test_generated_tiers_below_the_rounding_step_stay_in_their_ranges():
    cfg = TierConfig(eps_c=0.001, eps_m=0.001, eps_l=0.001)  # everybody asks for 0.001
    spec = generate_tiers(100, cfg, rng=np.random.default_rng(0))
    np.testing.assert_allclose(spec.eps, 0.001)  # not raised to the 0.01 rounding step
    assert spec.choice_range == (0.001, 0.001)
    spec = generate_tiers(500, TierConfig(eps_c=0.001, eps_m=0.003, eps_l=0.005), rng=np.random.default_rng(1))
    assert spec.eps.min() >= 0.001 and spec.eps.max() <= 0.005  # never above the liberal ε_L
    # the paper's defaults are unchanged
    d = generate_tiers(1000, TierConfig(), rng=np.random.default_rng(2))
    assert d.choice_range == (0.01, 1.0) and d.eps.min() >= 0.01


def test_template_plan_figure_with_the_largest_number_of_tiers_is_quick():
    import time

    from prdp_core.charts import multitier as mch

    tiers = [(f"t{i}", round(0.25 * (i + 1), 4)) for i in range(mt.MAX_TIERS)]
    plan = mt.plan_local(tiers, 16)
    start = time.thread_time()
    fig = mch.template_plan_figure(plan.template_table(), plan.names, list(plan.eps), list(plan.served))
    assert time.thread_time() - start < 5.0  # one add_hline per tier took ~27 s
    assert len(fig.layout.shapes) == len(fig.layout.annotations) == mt.MAX_TIERS
    assert sum(tr.name.startswith("serves ") for tr in fig.data) == mt.MAX_TIERS
