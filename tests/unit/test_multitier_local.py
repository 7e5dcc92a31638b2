"""Multi-tier release, local model: Subset variance, corrected Rescale, template chain, exact simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from prdp_core.errors import ParameterError, PolicyError
from prdp_core.mechanisms import multitier as mt
from prdp_core.mechanisms import multitier_local as ml

# ---------------------------------------------------------------------------
# Subset mechanism: V(ε, k), k*, baselines
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("d", [3, 7, 15, 128])
def test_variance_closed_form_equals_definition(d):
    eps = np.linspace(0.02, 9, 120)
    for k in {1, 2, d // 3 or 1, max(d // 2, 1)}:
        a = ml.subset_variance(eps, k, d)
        b = ml.subset_variance_tf(eps, k, d)
        assert np.max(np.abs(a / b - 1)) < 1e-10


def test_grr_and_brr_variances():
    for d, e in [(10, 1.0), (128, 0.1), (4, 5.0)]:
        assert ml.grr_variance(e, d) == pytest.approx((d - 1) * (d - 2 + 2 * math.exp(e)) / math.expm1(e) ** 2)
        assert ml.brr_variance(e, d) == pytest.approx(d * math.exp(e / 2) / math.expm1(e / 2) ** 2)


@pytest.mark.parametrize("d", [2, 5, 8, 15, 33, 64])
def test_optimal_k_is_the_argmin(d):
    eps = np.linspace(0.01, 8, 300)
    ks = np.arange(1, max(d // 2, 1) + 1)
    brute = ks[np.argmin(ml.subset_variance(eps[None, :], ks[:, None], d), axis=0)]
    got = ml.optimal_k(eps, d)
    assert np.all(ml.subset_variance(eps, got, d) <= ml.subset_variance(eps, brute, d) * (1 + 1e-12))


def test_equal_variance_threshold_eq3():
    d = 15
    for k in range(1, 6):
        e = math.log(math.sqrt((d - k) / k * (d - k - 1) / (k + 1)))
        assert ml.subset_variance(e, k, d) == pytest.approx(ml.subset_variance(e, k + 1, d), rel=1e-12)
        assert ml.optimal_k(math.log(d / k - 1), d)[0] == k  # the reference level is exactly optimal


# ---------------------------------------------------------------------------
# Operators: Lemma 5.1, Lemma 5.2 and the corrected Rescale parameter
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("k,rho,target", [(1, 6.4, 3.7), (2, 3.0, 7 / 3), (3, 1.5, 1.375)])
def test_expansion_lemma_by_exact_enumeration(k, rho, target):
    d = 7
    assert ml.expansion_level(rho, k) == pytest.approx(target)
    out = ml.subset_pmf_exact(k, rho, d) @ ml.expansion_matrix(k, d)
    assert np.abs(out - ml.subset_pmf_exact(k + 1, target, d)).max() < 1e-15


def test_corrected_rescale_hits_the_target_and_stays_a_probability():
    rng = np.random.default_rng(0)
    for _ in range(400):
        d = int(rng.integers(3, 200))
        k = int(rng.integers(1, d // 2 + 1))
        rho = math.exp(rng.uniform(0.01, 8))
        rho2 = 1 + (rho - 1) * rng.uniform(0.01, 0.99)
        beta = ml.rescale_keep_probability(rho, rho2, k, d)
        assert 0 <= beta <= 1
        assert ml.rescale_level(beta, rho, k, d) == pytest.approx(rho2, rel=1e-11)
    # from the true value (ρ = ∞, k = 1): β = (ρ′−1)/(ρ′+d−1), i.e. GRR(ρ′)
    assert ml.rescale_keep_probability(math.inf, 5.0, 1, 10) == pytest.approx(4 / 14)
    assert ml.rescale_level(4 / 14, math.inf, 1, 10) == pytest.approx(5.0)


def test_printed_rescale_parameter_is_the_odds_and_is_not_used():
    """The paper's β (§5.2, Algs 2/3/5) equals β/(1−β) of the correct one: 15.0 for k=1, 9→8, d=7."""
    assert ml.paper_rescale_parameter(9.0, 8.0, 1, 7) == pytest.approx(15.0)
    for k, r, r2, d in [(1, 9, 8, 7), (2, 3, 2, 7), (3, 1.5, 1.2, 7), (2, 5, 3.3, 10)]:
        b = ml.rescale_keep_probability(r, r2, k, d)
        assert ml.paper_rescale_parameter(r, r2, k, d) == pytest.approx(b / (1 - b), rel=1e-12)
    # where the printed value happens to be below 1 it still misses the target level (1.389, not 1.2)
    wrong = ml.paper_rescale_parameter(1.5, 1.2, 3, 7)
    assert wrong == pytest.approx(0.8095238, abs=1e-6)
    assert ml.rescale_level(wrong, 1.5, 3, 7) == pytest.approx(1.3888889, abs=1e-6)
    # no template of any chain uses it
    plan = mt.plan_local([("a", 2.5), ("b", 1.2), ("c", 0.3)], 7)
    for t in plan.templates:
        if t.op == "rescale":
            assert 0 <= t.beta <= 1


# ---------------------------------------------------------------------------
# Template chain and serving
# ---------------------------------------------------------------------------


def test_d15_per_tier_errors_match_the_notes():
    L = [("t1", 2.0), ("t2", 1.6), ("t3", 1.2), ("t4", 0.8), ("t5", 0.4)]
    plan = mt.plan_local(L, 15)
    assert plan.variances() == pytest.approx([8.567, 17.317, 32.855, 76.735, 321.415], abs=6e-4)
    same = mt.plan_local(L, 15, rule="closest")
    assert same.served == plan.served
    one = mt.plan_local(L, 15, variant="subset1")
    ratio = one.table()["ratio_multitier"].iloc[-1]
    assert ratio == pytest.approx(9.10, abs=0.01)  # d = 15, ε = 0.40 matched to k = 7, ε_t = ln(8/7)
    assert one.served_k[-1] == 7 and one.served_eps[-1] == pytest.approx(math.log(8 / 7))


def test_worked_example_d10_naive_expansion_falls_below_the_reference():
    """§5.2: with d = 10, expanding ln 6.4 gives ln 3.7 < ln 4, the reference level of k = 2."""
    assert ml.expansion_level(6.4, 1) == pytest.approx(3.7) and 3.7 < 10 / 2 - 1


def test_best_rule_never_worse_than_closest():
    rng = np.random.default_rng(3)
    for _ in range(30):
        d = int(rng.integers(3, 60))
        eps = sorted(rng.uniform(0.05, 6, size=int(rng.integers(1, 8))), reverse=True)
        tiers = [(f"t{i}", e) for i, e in enumerate(eps)]
        best = mt.plan_local(tiers, d).variances()
        close = mt.plan_local(tiers, d, rule="closest").variances()
        assert np.all(best <= close * (1 + 1e-12))


budget_lists = st.lists(st.one_of(st.floats(0.005, 9.0), st.sampled_from([math.log(4.0), math.log(14.0), 0.01])),
                        min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(budget_lists, st.integers(2, 40), st.sampled_from(["subset2", "subset1"]))
def test_plan_is_safe_deterministic_and_in_range(eps, d, variant):
    tiers = [(f"t{i}", e) for i, e in enumerate(eps)]
    plan = mt.plan_local(tiers, d, variant=variant)
    again = mt.plan_local(tiers, d, variant=variant)
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
    plan = mt.plan_local([(f"t{i}", e) for i, e in enumerate(eps)], d)
    for tier, i in zip(plan.tiers, plan.served):
        assert plan.templates[i].eps <= tier.eps
    marg = ml.chain_marginals_exact(plan.templates, d)
    for i in set(plan.served):
        t = plan.templates[i]
        assert np.allclose(marg[i], ml.subset_pmf_exact(t.k, t.rho, d), atol=1e-12)
        assert ml.max_log_ratio(marg[i]) <= t.eps + 1e-12


@pytest.mark.parametrize("d", [5, 7, 8, 16])
def test_utility_ratios_within_the_theorem_bounds(d):
    eps = np.arange(0.05, 8, 0.1)
    b53, b54 = ml.utility_bounds(eps, d)
    for variant, bound in (("subset1", b53), ("subset2", b54)):
        r = []
        for e in eps:
            chain = ml.template_chain([e], d, variant)
            t = chain[ml.serve(chain, [e], d)[0]]
            r.append(ml.subset_variance(t.eps, t.k, d) / ml.subset_variance(e, ml.optimal_k(e, d)[0], d))
        r = np.array(r)
        assert np.all(r <= bound * (1 + 1e-9)), variant
        if variant == "subset1":
            assert r.max() <= 171 / 11 + 1e-9


def test_gradual_local_formula():
    v = ml.gradual_local_variance([2.0, 1.0], 10)
    v1 = ml.subset_variance(1.0, ml.optimal_k(1.0, 10), 10)[0]
    assert v[1] == pytest.approx(v1)
    assert v[0] == pytest.approx(1 / (2 / v1))


# ---------------------------------------------------------------------------
# Exact simulation of n users
# ---------------------------------------------------------------------------


def test_iid_subset_counts_moments():
    rng = np.random.default_rng(1)
    n, k, d = 500, 3, 9
    c = ml.iid_subset_counts(np.full(3000, n), k, d, rng=rng)  # 3000 independent groups in one call
    assert np.all(c.sum(axis=1) == n * k)
    p = k / d
    assert np.abs(c.mean(0) - n * p).max() < 5 * math.sqrt(n * p * (1 - p) / 3000)
    assert c.var(0).mean() == pytest.approx(n * p * (1 - p), rel=0.05)
    cov = np.cov(c[:, 0], c[:, 1])[0, 1]  # exact: −n k(d−k)/(d²(d−1))
    assert cov == pytest.approx(-n * k * (d - k) / (d * d * (d - 1)), abs=6 * n * p * (1 - p) / math.sqrt(3000))


def test_nested_prefixes_are_uniform_orderings():
    """A single epoch over sizes (1, 2, 3) of d = 4 with x = 2 first: every (a, b) order equally likely."""
    rng = np.random.default_rng(2)
    seen = {}
    for _ in range(1500):
        C = ml.nested_prefix_counts(np.array([0]), np.array([2]), np.array([2]), np.array([1, 2, 3]), 4, rng=rng)
        assert C[0].tolist() == [0, 0, 1, 0]
        a = int(np.flatnonzero(C[1] - C[0])[0])
        b = int(np.flatnonzero(C[2] - C[1])[0])
        seen[(a, b)] = seen.get((a, b), 0) + 1
    assert len(seen) == 6 and all(a != 2 and b != 2 and a != b for a, b in seen)
    assert stats.chisquare(list(seen.values())).pvalue > 1e-3


def _plan5():
    return mt.plan_local([("a", 2.0), ("b", 0.9), ("c", 0.3)], 5)


def test_simulated_marginals_and_variances_are_exact():
    plan = _plan5()
    uniq, sizes, keep = plan.chain()
    rng = np.random.default_rng(4)
    xc = np.array([150, 40, 0, 10, 0])
    n = int(xc.sum())
    C = np.array([ml.multitier_subset_counts(sizes, keep, xc, rng=rng) for _ in range(800)])
    for j, ti in enumerate(uniq):
        t, f = ml.subset_signal(plan.templates[ti].rho, plan.templates[ti].k, 5)
        mean = xc * t + (n - xc) * f
        var = xc * t * (1 - t) + (n - xc) * f * (1 - f)
        z = (C[:, j].mean(0) - mean) / np.sqrt(var / C.shape[0])
        assert np.abs(z).max() < 4.5
        assert (C[:, j].var(0).sum() / var.sum()) == pytest.approx(1.0, abs=0.08)


def test_simulated_tiers_are_coupled_as_the_chain_not_independent():
    """Cross-tier covariance of the aggregate equals n·Cov from the exact joint of the chain."""
    plan = _plan5()
    uniq, sizes, keep = plan.chain()
    d, n, reps = 5, 300, 1200
    xc = np.array([n, 0, 0, 0, 0])
    rng = np.random.default_rng(6)
    C = np.array([ml.multitier_subset_counts(sizes, keep, xc, rng=rng) for _ in range(reps)])
    for ia, ib in ((0, 1), (0, 2)):
        a, b = uniq[ia], uniq[ib]
        J = ml.joint_exact(plan.templates, [a, b], d)[0]  # joint of (S_a, S_b) for x = 0
        A = ml.subsets_of_size(d, plan.templates[a].k).astype(float)
        Bm = ml.subsets_of_size(d, plan.templates[b].k).astype(float)
        pa, pb = J.sum(1) @ A, J.sum(0) @ Bm
        exact = n * (A.T @ J @ Bm - np.outer(pa, pb))
        emp = np.array([[np.cov(C[:, ia, i], C[:, ib, j])[0, 1] for j in range(d)] for i in range(d)])
        se = np.sqrt(np.outer(C[:, ia].var(0), C[:, ib].var(0)) / reps) + 1e-9
        assert np.abs((emp - exact) / se).max() < 5
        # independent tiers would give zero covariance: the coupling is clearly detected
        assert exact[0, 0] > 5 * se[0, 0] and emp[0, 0] > 4 * se[0, 0]


def test_release_local_mse_matches_n_v_and_is_unbiased():
    plan = mt.plan_local([("a", 3.0), ("b", 1.0)], 12)
    rng = np.random.default_rng(7)
    x = rng.integers(0, 12, size=4000)
    errs, errors = [], []
    for _ in range(60):
        rel = mt.release_local(plan, x, rng=rng, reveal=True)
        g = rel.answers.groupby("tier", sort=False)
        errs.append([float((gg["error"] ** 2).sum()) / 4000 for _, gg in g])
        errors.append(np.stack([gg["error"].to_numpy() for _, gg in g]))
    errs, errors = np.array(errs), np.array(errors)
    v = plan.variances()
    assert np.abs(errs.mean(0) - v).max() < 4 * (errs.std(0) / math.sqrt(len(errs))).max()
    z = errors.mean(0) / (errors.std(0) / math.sqrt(len(errors)))  # per tier and category
    assert np.abs(z).max() < 4.5


@pytest.mark.parametrize("mech,var", [("grr", ml.grr_variance), ("brr", ml.brr_variance)])
def test_grr_brr_chains_have_the_single_tier_error(mech, var):
    plan = mt.plan_local([("a", 2.5), ("b", 1.0), ("c", 0.4)], 6)
    rng = np.random.default_rng(8)
    x = rng.integers(0, 6, size=3000)
    errs = []
    for _ in range(80):
        rel = mt.release_local(plan, x, rng=rng, mechanism=mech, reveal=True)
        errs.append([float((gg["error"] ** 2).sum()) / 3000 for _, gg in rel.answers.groupby("tier", sort=False)])
    errs = np.array(errs)
    v = var(plan.eps, 6)
    assert np.abs(errs.mean(0) / v - 1).max() < 4 * (errs.std(0) / math.sqrt(len(errs)) / v).max()


def test_epoch_counts_conserve_users():
    rng = np.random.default_rng(9)
    xc = np.array([100, 0, 7, 3000])
    first, fresh = ml.epoch_counts([0.5, 0.9, 0.2, 1.0], xc, rng=rng)
    assert first.shape == (4, 4) and fresh.shape == (4, 4)
    # every user has exactly one epoch covering the last template
    assert first[:, 3].sum() + fresh[:, 3].sum() == xc.sum()
    assert np.all(np.triu(fresh) == fresh)


def test_release_local_structure_and_errors():
    plan = mt.plan_local({"public": 0.5, "researchers": 2.0, "agency": 8.0}, 8)
    x = np.array([0, 1, 1, 7, 3])
    rel = mt.release_local(plan, x, rng=np.random.default_rng(0), seed=3, labels=list("abcdefgh"))
    assert rel.measure == "eps" and not rel.truth_included and "true" not in rel.answers.columns
    assert len(rel.answers) == 3 * 8 and set(rel.answers["category"]) == set("abcdefgh")
    assert len(rel.entries) == 1 and rel.entries[0].loss.value == pytest.approx(plan.loss_summary()["multitier"])
    assert rel.loss.shape == (5,)
    ind = mt.release_local(plan, x, rng=np.random.default_rng(0), mechanism="independent")
    assert sum(e.loss.value for e in ind.entries) == pytest.approx(10.5)
    with pytest.raises(ParameterError):
        mt.release_local(plan, np.array([0, 8]), rng=np.random.default_rng(0))
    with pytest.raises(ParameterError):
        mt.plan_local([("a", 1.0)], 1)
    with pytest.raises(PolicyError):
        mt.plan_local([("a", 1.0), ("a", 0.5)], 4)


def test_bin_measure_codes_and_labels():
    codes, labels = mt.bin_measure(np.array([0.0, 1.0, 10.0, 1000.0, 5e6, -3.0, np.nan]), 4)
    assert codes.tolist() == [0, 0, 0, 2, 3, 0, 0] and len(labels) == 4
    assert labels == ["< 30.6", "30.6–999", "999–3.16e+04", "≥ 3.16e+04"]  # from d and U = 10^6 only
    codes, _ = mt.bin_measure(np.array([0.0, 0.0]), 3)
    assert np.all(codes == 0)
    codes, labels = mt.bin_measure(np.array([5.0, 10.0, 250.0]), scale="linear", d=4, top=400)
    assert codes.tolist() == [0, 0, 2] and labels == ["< 100", "100–200", "200–300", "≥ 300"]
    codes, labels = mt.bin_measure(np.array([0.5, 1, 10, 99, 1e9]), edges=[1, 10, 100])
    assert codes.tolist() == [0, 1, 2, 2, 3] and labels == ["< 1", "1–10", "10–100", "≥ 100"]
    assert len(set(mt.bin_measure(np.zeros(1), 256, scale="linear")[1])) == 256  # labels stay distinct
    for bad in (dict(d=1), dict(d=4, top=-1), dict(d=4, top=math.inf), dict(d=4, scale="cubic"),
                dict(edges=[3, 2]), dict(edges=[1, 2], d=5), dict()):
        with pytest.raises(ParameterError):
            mt.bin_measure(np.ones(3), **bad)


# ---------------------------------------------------------------------------
# Neighbouring tables: a user's category depends on that user alone (public edges, everyone reports)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("scale", ["log", "linear"])
def test_one_users_value_moves_no_other_users_category_or_the_labels(scale):
    """Before the fix the edges came from max(v): the top label printed max(v) ("…–2.35e+06" vs
    "…–9.88e+06") and one large value moved everybody else's category."""
    rng = np.random.default_rng(0)
    v = np.round(rng.lognormal(6, 2, 400))
    for new in (0.0, 2_345_678.0, 9_876_543.0, 1e12, np.nan, -5.0):
        w = v.copy()
        w[-1] = new
        c1, l1 = mt.bin_measure(v, 8, scale=scale)
        c2, l2 = mt.bin_measure(w, 8, scale=scale)
        assert l1 == l2
        assert np.array_equal(c1[:-1], c2[:-1])
    # and the category of a user is the same whatever the others' values are (one user alone)
    alone = np.array([mt.bin_measure(np.array([x]), 8, scale=scale)[0][0] for x in v[:50]])
    assert np.array_equal(alone, mt.bin_measure(v, 8, scale=scale)[0][:50])


def _release_on(table, f):
    codes, labels = mt.local_categories(table, "x", 4, filter=f)
    plan = mt.plan_local({"pub": 0.5, "res": 2.0}, len(labels))
    return mt.release_local(plan, codes, rng=np.random.default_rng(1), labels=labels, reveal=True), codes, labels


def test_with_a_filter_every_user_reports_and_n_is_the_roster_size():
    """Neighbours: one record's filter attribute changed. Before the fix only matching records reported,
    so n and every tier's sum of estimates were the exact number of matching records."""
    import pandas as pd

    t = pd.DataFrame({"x": [120.0, 340, 560, 780, 1000, 2_345_678], "g": ["a", "b", "a", "a", "b", "a"]})
    t2 = t.copy()
    t2.loc[1, "g"] = "a"  # one more matching record
    f = mt.RecordFilter("g", "==", "a")
    (r1, c1, l1), (r2, c2, l2) = _release_on(t, f), _release_on(t2, f)
    assert l1 == l2 and l1[-1] == mt.NOT_MATCHING and len(l1) == 5
    assert r1.params["n"] == r2.params["n"] == len(t) and r1.loss.shape == (len(t),)
    for rel in (r1, r2):
        sums = rel.answers.groupby("tier")["estimate"].sum()
        assert np.allclose(sums, len(t))  # the public roster size, whatever the filter matches
    # only the changed user's own category differs; it goes from "not matching" to its bin
    assert np.flatnonzero(c1 != c2).tolist() == [1] and c1[1] == 4 and c2[1] == 1
    # the per-user mechanism is the Subset chain on the public domain: each user's report is ε-LDP
    plan = mt.plan_local({"pub": 0.5, "res": 2.0}, 5)
    J = ml.joint_exact(plan.templates, sorted(set(plan.served)), 5)
    assert ml.max_log_ratio(J.reshape(5, -1)) <= plan.loss_summary()["multitier"] + 1e-9
    with pytest.raises(ParameterError, match="not a column"):
        mt.local_categories(t, "nope", 4)


def test_study_runner_local_model_with_a_filter_reports_every_record():
    """The study path (report.run_study) uses the same public categories and full roster."""
    from prdp_core.config import parse_config
    from prdp_core.report import run_study

    study = parse_config({"version": 1, "seed": 3, "data": {"sample": "table2_example"},
                          "policy": {"tiers": {"a": 2.0, "b": 0.5}},
                          "mechanisms": [{"kind": "multitier", "model": "local", "measure": "Payroll", "d": 4,
                                          "top": 2e7, "filter": {"column": "Industry", "op": "==",
                                                                 "value": "Mining"}}]})
    run = run_study(study)
    rel = run.releases[0][2]
    assert rel.params["n"] == 5 and rel.params["d"] == 5
    assert mt.NOT_MATCHING in set(rel.answers["category"])
    assert np.allclose(rel.answers.groupby("tier")["estimate"].sum(), 5)
