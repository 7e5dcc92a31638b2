"""Local multi-tier release: per-tier errors of plans, releases (MSE n·V, unbiased), utility bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prdp_core.core.errors import ParameterError, PolicyError
from prdp_core.mechanisms.multitier.local import plan_local, release_local
from prdp_core.mechanisms.multitier.queries import NOT_MATCHING, RecordFilter, local_categories
from prdp_core.mechanisms.multitier.subset import (
    brr_variance,
    chain_marginals_exact,
    grr_variance,
    joint_exact,
    max_log_ratio,
    paper_rescale_parameter,
    rescale_keep_probability,
    rescale_level,
    subset_pmf_exact,
)


def test_printed_rescale_parameter_is_the_odds_and_is_not_used():
    """The paper's β (§5.2, Algs 2/3/5) equals β/(1−β) of the correct one: 15.0 for k=1, 9→8, d=7."""
    assert paper_rescale_parameter(9.0, 8.0, 1, 7) == pytest.approx(15.0)
    for k, r, r2, d in [(1, 9, 8, 7), (2, 3, 2, 7), (3, 1.5, 1.2, 7), (2, 5, 3.3, 10)]:
        b = rescale_keep_probability(r, r2, k, d)
        assert paper_rescale_parameter(r, r2, k, d) == pytest.approx(b / (1 - b), rel=1e-12)
    # where the printed value happens to be below 1 it still misses the target level (1.389, not 1.2)
    wrong = paper_rescale_parameter(1.5, 1.2, 3, 7)
    assert wrong == pytest.approx(0.8095238, abs=1e-6)
    assert rescale_level(wrong, 1.5, 3, 7) == pytest.approx(1.3888889, abs=1e-6)
    # no template of any chain uses it
    plan = plan_local([("a", 2.5), ("b", 1.2), ("c", 0.3)], 7)
    for t in plan.templates:
        if t.op == "rescale":
            assert 0 <= t.beta <= 1


def test_d15_per_tier_errors_match_the_notes():
    L = [("t1", 2.0), ("t2", 1.6), ("t3", 1.2), ("t4", 0.8), ("t5", 0.4)]
    plan = plan_local(L, 15)
    assert plan.variances() == pytest.approx([8.567, 17.317, 32.855, 76.735, 321.415], abs=6e-4)
    same = plan_local(L, 15, rule="closest")
    assert same.served == plan.served
    one = plan_local(L, 15, variant="subset1")
    ratio = one.table()["ratio_multitier"].iloc[-1]
    assert ratio == pytest.approx(9.10, abs=0.01)  # d = 15, ε = 0.40 matched to k = 7, ε_t = ln(8/7)
    assert one.served_k[-1] == 7 and one.served_eps[-1] == pytest.approx(math.log(8 / 7))


def test_best_rule_never_worse_than_closest():
    rng = np.random.default_rng(3)
    for _ in range(30):
        d = int(rng.integers(3, 60))
        eps = sorted(rng.uniform(0.05, 6, size=int(rng.integers(1, 8))), reverse=True)
        tiers = [(f"t{i}", e) for i, e in enumerate(eps)]
        best = plan_local(tiers, d).variances()
        close = plan_local(tiers, d, rule="closest").variances()
        assert np.all(best <= close * (1 + 1e-12))


budget_lists = st.lists(st.one_of(st.floats(0.005, 9.0), st.sampled_from([math.log(4.0), math.log(14.0), 0.01])),
                        min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(budget_lists, st.integers(2, 40), st.sampled_from(["subset2", "subset1"]))
def test_plan_is_safe_deterministic_and_in_range(eps, d, variant):
    tiers = [(f"t{i}", e) for i, e in enumerate(eps)]
    plan = plan_local(tiers, d, variant=variant)
    again = plan_local(tiers, d, variant=variant)
    assert plan.served == again.served and plan.templates == again.templates
    lv = [t.eps for t in plan.templates]
    assert all(a > b for a, b in zip(lv, lv[1:]))  # every operation lowers the level
    for tier, i in zip(plan.tiers, plan.served):
        assert plan.templates[i].eps <= tier.eps  # never above the budget
        assert 1 <= plan.templates[i].k <= max(d // 2, 1)
    assert all(0 <= t.beta <= 1 for t in plan.templates)
    uniq, sizes, keep = plan.chain()
    assert np.all((keep >= 0) & (keep <= 1)) and np.all(np.diff(sizes) >= 0)


@pytest.mark.parametrize("d", [2, 3, 4, 9])
@pytest.mark.parametrize("eps", [[0.005000000000000001, 0.005], [math.log(3), math.nextafter(math.log(3), 0)],
                                 [math.nextafter(math.log(2), 9), math.log(2), 0.3]])
def test_budgets_a_rounding_apart_each_get_a_template(eps, d):
    """Budgets whose e^ε is the same float used to leave the lower one without a template (found by
    hypothesis): the chain now labels the same distribution with the lower level (identity step)."""
    plan = plan_local([(f"t{i}", e) for i, e in enumerate(eps)], d)
    for tier, i in zip(plan.tiers, plan.served):
        assert plan.templates[i].eps <= tier.eps
    marg = chain_marginals_exact(plan.templates, d)
    for i in set(plan.served):
        t = plan.templates[i]
        assert np.allclose(marg[i], subset_pmf_exact(t.k, t.rho, d), atol=1e-12)
        assert max_log_ratio(marg[i]) <= t.eps + 1e-12


def test_release_local_mse_matches_n_v_and_is_unbiased():
    plan = plan_local([("a", 3.0), ("b", 1.0)], 12)
    rng = np.random.default_rng(7)
    x = rng.integers(0, 12, size=4000)
    errs, errors = [], []
    for _ in range(60):
        rel = release_local(plan, x, rng=rng, reveal=True)
        g = rel.answers.groupby("tier", sort=False)
        errs.append([float((gg["error"] ** 2).sum()) / 4000 for _, gg in g])
        errors.append(np.stack([gg["error"].to_numpy() for _, gg in g]))
    errs, errors = np.array(errs), np.array(errors)
    v = plan.variances()
    assert np.abs(errs.mean(0) - v).max() < 4 * (errs.std(0) / math.sqrt(len(errs))).max()
    z = errors.mean(0) / (errors.std(0) / math.sqrt(len(errors)))  # per tier and category
    assert np.abs(z).max() < 4.5


@pytest.mark.parametrize("mech,var", [("grr", grr_variance), ("brr", brr_variance)])
def test_grr_brr_chains_have_the_single_tier_error(mech, var):
    plan = plan_local([("a", 2.5), ("b", 1.0), ("c", 0.4)], 6)
    rng = np.random.default_rng(8)
    x = rng.integers(0, 6, size=3000)
    errs = []
    for _ in range(80):
        rel = release_local(plan, x, rng=rng, mechanism=mech, reveal=True)
        errs.append([float((gg["error"] ** 2).sum()) / 3000 for _, gg in rel.answers.groupby("tier", sort=False)])
    errs = np.array(errs)
    v = var(plan.eps, 6)
    assert np.abs(errs.mean(0) / v - 1).max() < 4 * (errs.std(0) / math.sqrt(len(errs)) / v).max()


def test_release_local_structure_and_errors():
    plan = plan_local({"public": 0.5, "researchers": 2.0, "agency": 8.0}, 8)
    x = np.array([0, 1, 1, 7, 3])
    rel = release_local(plan, x, rng=np.random.default_rng(0), seed=3, labels=list("abcdefgh"))
    assert rel.measure == "eps" and not rel.truth_included and "true" not in rel.answers.columns
    assert len(rel.answers) == 3 * 8 and set(rel.answers["category"]) == set("abcdefgh")
    assert len(rel.entries) == 1 and rel.entries[0].loss.value == pytest.approx(plan.loss_summary()["multitier"])
    assert rel.loss.shape == (5,)
    ind = release_local(plan, x, rng=np.random.default_rng(0), mechanism="independent")
    assert sum(e.loss.value for e in ind.entries) == pytest.approx(10.5)
    with pytest.raises(ParameterError):
        release_local(plan, np.array([0, 8]), rng=np.random.default_rng(0))
    with pytest.raises(ParameterError):
        plan_local([("a", 1.0)], 1)
    with pytest.raises(PolicyError):
        plan_local([("a", 1.0), ("a", 0.5)], 4)


def _release_on(table, f):
    codes, labels = local_categories(table, "x", 4, filter=f)
    plan = plan_local({"pub": 0.5, "res": 2.0}, len(labels))
    return release_local(plan, codes, rng=np.random.default_rng(1), labels=labels, reveal=True), codes, labels


def test_with_a_filter_every_user_reports_and_n_is_the_roster_size():
    """Neighbours: one record's filter attribute changed. Before the fix only matching records reported,
    so n and every tier's sum of estimates were the exact number of matching records."""
    import pandas as pd

    t = pd.DataFrame({"x": [120.0, 340, 560, 780, 1000, 2_345_678], "g": ["a", "b", "a", "a", "b", "a"]})
    t2 = t.copy()
    t2.loc[1, "g"] = "a"  # one more matching record
    f = RecordFilter("g", "==", "a")
    (r1, c1, l1), (r2, c2, l2) = _release_on(t, f), _release_on(t2, f)
    assert l1 == l2 and l1[-1] == NOT_MATCHING and len(l1) == 5
    assert r1.params["n"] == r2.params["n"] == len(t) and r1.loss.shape == (len(t),)
    for rel in (r1, r2):
        sums = rel.answers.groupby("tier")["estimate"].sum()
        assert np.allclose(sums, len(t))  # the public roster size, whatever the filter matches
    # only the changed user's own category differs; it goes from "not matching" to its bin
    assert np.flatnonzero(c1 != c2).tolist() == [1] and c1[1] == 4 and c2[1] == 1
    # the per-user mechanism is the Subset chain on the public domain: each user's report is ε-LDP
    plan = plan_local({"pub": 0.5, "res": 2.0}, 5)
    J = joint_exact(plan.templates, sorted(set(plan.served)), 5)
    assert max_log_ratio(J.reshape(5, -1)) <= plan.loss_summary()["multitier"] + 1e-9
    with pytest.raises(ParameterError, match="not a column"):
        local_categories(t, "nope", 4)
