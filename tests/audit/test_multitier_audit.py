"""Privacy audit of the multi-tier release (multi-tier paper), by exact enumeration.

* Local model, d ≤ 8: the exact output distribution of every template of the chain is
  obtained by composing the operator matrices (Expansion, Rescale) from {x}; every template
  must be exactly Subset(x, k_t, ln ρ_t), its max log-ratio over all input pairs must equal
  its level, and every tier's served report must stay within the tier's ε. Coalitions of
  templates: the exact joint distribution's max log-ratio equals the top member's level.
* The paper's printed Rescale parameter (the odds β/(1−β)) would break these guarantees:
  it is not a probability in most steps and, where it is, the level overshoots the target.
* Central model: the joint pmf of a coalition of two-sided-geometric tiers, written out
  independently of the engine, has max log-ratio equal to the top budget (independent
  releases: the sum), on a finite window of integer outputs.
* GRR and BRR re-sampling chains: exact marginals at every tier.
* The released table on neighbouring *tables* (local model): the exact distribution of one
  tier's column counts for every user's category from the app's categorisation, for a table
  and its neighbour (one user's value, or one record's filter attribute, changed). With public
  bin edges and every user reporting the max log-ratio is the tier's level; with edges from the
  data's maximum or with non-matching users dropped (the old behaviour) it is far above or
  infinite — the audit's power.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest

from prdp_core.mechanisms.multitier.central import plan_central
from prdp_core.mechanisms.multitier.coalitions import coalition_loss
from prdp_core.mechanisms.multitier.local import plan_local
from prdp_core.mechanisms.multitier.noise_families import noise_family
from prdp_core.mechanisms.multitier.queries import RecordFilter, bin_measure, local_categories
from prdp_core.mechanisms.multitier.simulation import brr_flip_probability
from prdp_core.mechanisms.multitier.subset import (
    chain_marginals_exact,
    expansion_matrix,
    joint_exact,
    max_log_ratio,
    paper_rescale_parameter,
    rescale_keep_probability,
    rescale_matrix,
    subset_pmf_exact,
    subsets_of_size,
)

TIER_LISTS = [
    [2.5, 1.6, 1.2, 0.9, 0.5, 0.3, 0.05],
    [8.0, 2.0, 0.5],
    [1.0986122886681098, 0.6931471805599453, 0.4054651081081644],  # ln 3, ln 2, ln 1.5: reference levels
    [0.2, 0.15],
    [6.0, 5.9, 3.3, 3.3, 0.01],
]


def _tiers(eps):
    return [(f"t{i}", e) for i, e in enumerate(eps)]


@pytest.mark.parametrize("d", [2, 3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("variant", ["subset2", "subset1"])
def test_every_template_and_served_tier_is_exact(d, variant):
    for eps in TIER_LISTS:
        plan = plan_local(_tiers(eps), d, variant=variant)
        marg = chain_marginals_exact(plan.templates, d)
        for t, P in zip(plan.templates, marg):
            assert np.abs(P - subset_pmf_exact(t.k, t.rho, d)).max() < 1e-12
            assert max_log_ratio(P) == pytest.approx(t.eps, abs=1e-9)
        for tier, i in zip(plan.tiers, plan.served):
            assert max_log_ratio(marg[i]) <= tier.eps + 1e-9, (d, variant, eps, tier)


@pytest.mark.parametrize("d", [4, 5, 7, 8])
def test_coalitions_of_templates_cost_the_top_level(d):
    plan = plan_local(_tiers(TIER_LISTS[0]), d)
    served = sorted(set(plan.served))
    for size in (2, 3):
        for members in combinations(served, size):
            if math.prod(math.comb(d, plan.templates[m].k) for m in members) > 200_000:
                continue
            J = joint_exact(plan.templates, list(members), d)
            assert max_log_ratio(J.reshape(d, -1)) == pytest.approx(plan.templates[members[0]].eps, abs=1e-9)
    # the engine's coalition computation agrees, and independent reports would cost the sum
    full = coalition_loss(plan)
    assert full.multitier <= max(plan.eps) + 1e-9 and full.independent == pytest.approx(sum(plan.eps))


def _chain_with_printed_beta(plan, d):
    """Re-run the template chain with the paper's printed Rescale parameter (exact matrices).

    Returns the exact max log-ratio of every template, or None once a step's printed
    parameter is not a probability (an implementation would fail there).
    """
    cur = subset_pmf_exact(1, math.inf, d)
    k, rho_prev = 1, math.inf
    levels = []
    for t in plan.templates:
        if t.op == "expansion":
            cur = cur @ expansion_matrix(k, d)
            k += 1
        else:
            if math.isinf(rho_prev):  # the printed form is ∞/∞ here; use its limit (ρ′−1)k/d
                b = (t.rho - 1) * k / d
            else:
                b = paper_rescale_parameter(rho_prev, t.rho, k, d)
            if not 0 <= b <= 1:
                return levels, b
            cur = cur @ rescale_matrix(k, b, d)
        rho_prev = math.exp(max_log_ratio(cur))
        levels.append(max_log_ratio(cur))
    return levels, "ok"


def test_printed_rescale_parameter_would_violate_the_budgets():
    """Regression: with the paper's β the chain breaks (β > 1) or a tier gets more than its ε."""
    # one step, exactly enumerated: Subset(x, 3, ln 1.5) rescaled towards ln 1.2, d = 7
    d = 7
    start = subset_pmf_exact(3, 1.5, d)
    printed = paper_rescale_parameter(1.5, 1.2, 3, d)
    got = max_log_ratio(start @ rescale_matrix(3, printed, d))
    assert got == pytest.approx(math.log(1.3888889), abs=1e-6) and got > math.log(1.2) + 0.1  # violates ε
    fixed = rescale_keep_probability(1.5, 1.2, 3, d)
    assert max_log_ratio(start @ rescale_matrix(3, fixed, d)) == pytest.approx(math.log(1.2), abs=1e-12)
    # whole chains: every one of these plans is broken by the printed parameter
    broken = 0
    for d in (5, 7, 8):
        for eps in TIER_LISTS[:3]:
            plan = plan_local(_tiers(eps), d)
            # start the chain at the first template so that ρ = ∞ is not involved
            levels, status = _chain_with_printed_beta(plan, d)
            over = [lv - plan.templates[i].eps for i, lv in enumerate(levels)]
            # either some template already exceeds its level (a served tier would exceed its ε) …
            if over and max(over) > 1e-3:
                broken += 1
            # … or the printed parameter is not a probability (an implementation fails)
            elif status != "ok":
                broken += 1
    assert broken == 9
    # the printed value exceeds 1 in the notes' example: not even a probability
    assert paper_rescale_parameter(9.0, 8.0, 1, 7) == pytest.approx(15.0)


def test_printed_parameter_overshoots_for_every_small_step():
    """Across a grid of single Rescale steps where the printed value is a probability, the exact
    level of the result is above the target: a tier served by it would exceed its ε."""
    d = 6
    viol = 0
    for k in (1, 2, 3):
        for rho in (1.3, 2.0, 4.0):
            for frac in (0.3, 0.6, 0.9):
                rho2 = 1 + (rho - 1) * frac
                b = paper_rescale_parameter(rho, rho2, k, d)
                if 0 <= b <= 1:
                    lvl = max_log_ratio(subset_pmf_exact(k, rho, d) @ rescale_matrix(k, b, d))
                    assert lvl > math.log(rho2) + 1e-6
                    viol += 1
    assert viol >= 5


def test_grr_and_brr_resampling_chains_are_exact():
    d = 5
    eps = [3.0, 1.4, 1.4, 0.2]
    # GRR: k = 1 Rescale chain from the true value
    cur = subset_pmf_exact(1, math.inf, d)
    rho_prev = math.inf
    for e in eps:
        cur = cur @ rescale_matrix(1, rescale_keep_probability(rho_prev, math.exp(e), 1, d), d)
        rho_prev = min(rho_prev, math.exp(e))
        assert np.abs(cur - subset_pmf_exact(1, math.exp(e), d)).max() < 1e-14
        assert max_log_ratio(cur) == pytest.approx(e, abs=1e-12)
    # BRR: one bit, keep w.p. β = (1/2 − q′)/(1/2 − q) else a fair bit
    q_prev = 0.0
    bit = np.array([[1.0, 0.0], [0.0, 1.0]])  # rows: true bit 0/1
    for e in eps:
        q = brr_flip_probability(e)
        beta = (0.5 - q) / (0.5 - q_prev) if q > q_prev else 1.0
        bit = bit @ (beta * np.eye(2) + (1 - beta) * 0.5)
        q_prev = max(q_prev, q)
        assert bit[1, 0] == pytest.approx(q, abs=1e-14)
        # a user's one-hot vector differs in two bits between inputs: loss 2·ln((1−q)/q) = ε
        assert 2 * math.log(bit[1, 1] / bit[0, 1]) == pytest.approx(e, abs=1e-12)


def _tsg(k, a):
    k = np.abs(np.asarray(k, dtype=float))
    return (1 - math.exp(-a)) / (1 + math.exp(-a)) * np.exp(-a * k)


def _eq1(k, a_from, a_to):
    p, q = math.exp(-a_from), math.exp(-a_to)
    w0 = (1 - q) ** 2 * p / ((1 - p) ** 2 * q)
    return (1 - w0) * _tsg(k, a_to) + w0 * (np.asarray(k) == 0)


@pytest.mark.parametrize("eps", [(1.5, 0.5), (3.0, 1.0, 0.4), (2.0, 2.0, 0.7)])
def test_central_full_coalition_costs_the_top_budget(eps):
    """Joint pmf of (r_1, …, r_m) for true answers 0 and 1 on [−W, W]^m, written out directly:
    f(r_1 − q) Π K(r_{l+1} − r_l) with K the Eq.-(1) residual between consecutive budgets
    (a point mass when budgets are equal). Max log-ratio = ε_1; independent releases: Σ ε."""
    W = 14
    g = np.arange(-W, W + 1)
    m = len(eps)

    def joint(q, independent=False):
        lp = np.log(_tsg(g - q, eps[0])).reshape((-1,) + (1,) * (m - 1))
        for l in range(1, m):
            shape = [1] * m
            if independent:
                shape[l] = g.size
                lp = lp + np.log(_tsg(g - q, eps[l])).reshape(shape)
                continue
            diff = np.subtract.outer(g, g)  # r_{l−1} − r_l
            if eps[l] == eps[l - 1]:
                K = np.where(diff == 0, 1.0, 1e-300)
            else:
                K = _eq1(-diff, eps[l - 1], eps[l])
            shape[l - 1], shape[l] = g.size, g.size
            lp = lp + np.log(np.maximum(K, 1e-300)).reshape(shape)
        return lp

    mt_loss = np.max(np.abs(joint(0) - joint(1)))
    ind_loss = np.max(np.abs(joint(0, True) - joint(1, True)))
    assert mt_loss == pytest.approx(max(eps), abs=1e-9)
    assert ind_loss == pytest.approx(sum(eps), abs=1e-9)
    # the engine computes the same numbers
    plan = plan_central(_tiers(eps), "geometric")
    cl = coalition_loss(plan)
    assert cl.multitier == pytest.approx(max(eps), abs=1e-9) and cl.independent == pytest.approx(sum(eps), abs=1e-9)


def test_central_marginal_of_a_derived_tier_is_exact():
    """The marginal of r_2 = r_1 + s (convolution of TSG(p_1) with Eq. (1)) equals TSG(p_2)."""
    W = 60
    g = np.arange(-W, W + 1)
    conv = np.convolve(_tsg(g, 1.5), _eq1(g, 1.5, 0.5), mode="same")
    assert np.abs(conv[W - 20:W + 21] - _tsg(np.arange(-20, 21), 0.5)).max() < 1e-15
    # and Laplace: 0 w.p. (ε2/ε1)², else Laplace(1/ε2) — CF identity at many points
    t = np.linspace(-30, 30, 601)
    lap = noise_family("laplace")
    w = (0.5 / 1.5) ** 2
    assert np.abs(lap.cf(t, 1 / 1.5) * (w + (1 - w) * lap.cf(t, 2.0)) - lap.cf(t, 2.0)).max() < 1e-14


# ---------------------------------------------------------------------------
# Local model on neighbouring tables: categories from public edges, everyone reports
# ---------------------------------------------------------------------------


def _column_count_pmf(cats: np.ndarray, k: int, rho: float, d: int) -> dict[tuple[int, ...], float]:
    """Exact pmf of the column counts Σ_users 1[j ∈ report] of n independent Subset(x, k, ln ρ) reports."""
    P = subset_pmf_exact(k, rho, d)
    S = subsets_of_size(d, k).astype(np.int64)
    dist: dict[tuple[int, ...], float] = {(0,) * d: 1.0}
    for c in cats:
        new: dict[tuple[int, ...], float] = {}
        for key, p in dist.items():
            base = np.array(key)
            for j in range(S.shape[0]):
                kk = tuple((base + S[j]).tolist())
                new[kk] = new.get(kk, 0.0) + p * P[c, j]
        dist = new
    return dist


def _max_log_ratio(p: dict, q: dict) -> float:
    keys = set(p) | set(q)
    if any(k not in p or k not in q for k in keys):
        return math.inf
    return max(abs(math.log(p[k]) - math.log(q[k])) for k in keys)


def _old_codes(v: np.ndarray, d: int) -> np.ndarray:
    """The former categorisation: equal-width bins of log(1 + v) up to the data's maximum."""
    edges = np.linspace(0.0, float(np.log1p(v.max())), d + 1)
    return np.clip(np.searchsorted(edges, np.log1p(v), side="right") - 1, 0, d - 1)


def _tier_pmf(codes: np.ndarray, d: int, eps: float) -> tuple[dict, float]:
    plan = plan_local([("a", eps)], d)
    t = plan.templates[plan.served[0]]
    return _column_count_pmf(codes, t.k, t.rho, d), float(plan.served_eps[0])


@pytest.mark.parametrize("new_value", [5e9, 9_876_543.0, 0.0, 55.0])
def test_released_counts_on_neighbouring_tables_cost_one_users_level(new_value):
    import pandas as pd

    v = np.array([50.0, 500.0, 5_000.0, 50_000.0])
    w = v.copy()
    w[-1] = new_value  # one user's value changes (the largest one)
    d, eps = 4, 1.0
    pmfs = []
    for table in (v, w):
        codes, labels = local_categories(pd.DataFrame({"x": table}), "x", d)
        pmf, level = _tier_pmf(codes, d, eps)
        pmfs.append(pmf)
    assert _max_log_ratio(*pmfs) <= level + 1e-9
    # power: the former data-dependent edges move the other users' categories too ({1,2,3,3} → {0,1,1,3}:
    # two users' worth of change, 2·ln 2 against the promised ln 2)
    if new_value == 5e9:
        old = [_tier_pmf(_old_codes(t, d), d, eps)[0] for t in (v, w)]
        assert _max_log_ratio(*old) > 1.5 * level


def test_released_counts_when_one_record_leaves_the_filter():
    import pandas as pd

    t1 = pd.DataFrame({"x": [120.0, 340.0, 2_000.0, 50.0], "g": ["a", "a", "b", "a"]})
    t2 = t1.copy()
    t2.loc[1, "g"] = "b"
    f = RecordFilter("g", "==", "a")
    eps = 1.0
    pmfs, levels = [], []
    for t in (t1, t2):
        codes, labels = local_categories(t, "x", 3, filter=f)
        pmf, level = _tier_pmf(codes, len(labels), eps)
        pmfs.append(pmf)
        levels.append(level)
    assert _max_log_ratio(*pmfs) <= levels[0] + 1e-9
    # power: dropping non-matching users makes the number of reports (the support) differ
    old = []
    for t in (t1, t2):
        codes, _ = bin_measure(t.loc[f.mask(t), "x"].to_numpy(), 3)
        old.append(_tier_pmf(codes, 3, eps)[0])
    assert _max_log_ratio(*old) == math.inf
