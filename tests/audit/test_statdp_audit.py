"""Empirical neighbouring-dataset audits (StatDP style) of every mechanism family.

Each case runs a mechanism of the engine on two neighbouring datasets D and D′ that differ
in one record r, and :func:`tests.audit.statdp.search` looks for an output event whose
probabilities violate r's promised loss (pure ε, or the exact Gaussian (ε, δ(ε)) curve of a
zCDP promise). Every case must pass as built, and a deliberately broken variant — the noise
scale halved (or the budget doubled behind the same promise) — must be flagged: that is the
check's power.

Draws come from the engine's own vectorised paths: the selection and trial functions that
the releases call (``select_domain``, ``framework_trials``, ``extension_trials``,
``_select_local``, ``sample_multitier``, ``simulate_answers``), or whole releases whose many
cells are independent copies of the same neighbouring pair (unit splitting, histograms).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Callable
from unittest import mock

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.domains import DomainPartition
from prdp_core.core.secure import SecureSampler, grid_for, to_units
from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Query, SplittingPolicy, Workload
from prdp_core.mechanisms import baselines as BL
from prdp_core.mechanisms import granular, multitier, personalized
from prdp_core.mechanisms import unit_splitting as US
from prdp_core.mechanisms.prdp import central as prdp_central
from prdp_core.mechanisms.prdp import local as prldp
from prdp_core.mechanisms.prdp import selection as prdp_selection
from prdp_core.mechanisms.prdp.answers import AdaptiveClippedSum, DistinctCount, LaplaceCount, RankMax
from prdp_core.mechanisms.prdp.budget import BudgetFunction, constant, inverse, step_table
from prdp_core.mechanisms.prdp.central import framework_trials, naive_trials
from prdp_core.mechanisms.prdp.extension import extension_stats, extension_trials
from prdp_core.mechanisms.prdp.queries import prepare
from prdp_core.mechanisms.prdp.selection import select_domain
from prdp_core.mechanisms.unit_splitting import workload_release as USR

from .statdp import gaussian_delta, search

Sampler = Callable[[int, np.random.Generator], np.ndarray]


@dataclass
class Case:
    """A neighbouring pair and its promise; ``broken`` builds the same pair for a broken variant."""

    d: Sampler
    dp: Sampler
    promise: dict[str, Any]
    broken: tuple[Sampler, Sampler] | None = None
    sizes: dict[str, int] = field(default_factory=dict)


def _patched(fn: Sampler, *patches: tuple[Any, str, Any]) -> Sampler:
    """Run ``fn`` with attributes patched (a broken variant of the engine)."""
    def s(n: int, rng: np.random.Generator) -> np.ndarray:
        with ExitStack() as stack:
            for obj, name, val in patches:
                stack.enter_context(mock.patch.object(obj, name, val))
            return fn(n, rng)
    return s


_orig_select = select_domain


def _half_select(true, scales, thresholds, *, rng, trials=1):
    return _orig_select(true, np.asarray(scales) / 2, thresholds, rng=rng, trials=trials)


# ---------------------------------------------------------------------------
# General PrDP framework (central)
# ---------------------------------------------------------------------------


def case_prdp_count() -> Case:
    """Algorithm 1: a record of domain 2 of [0.5, 4] (ε̌·2 = 1) against the noisy counts and answer."""
    dp = DomainPartition(0.5, 4.0)
    th = dp.thresholds(0.1)
    c = np.array([4.0, 10.0, 30.0])
    c2 = c.copy()
    c2[1] -= 1

    def draw(counts):
        def s(n, rng):
            sel = prdp_selection.select_domain(counts, 1.0 / dp.lo, th, rng=rng, trials=n)
            return np.column_stack([sel.noisy[:, 1], sel.retained_sum(), sel.ell])
        return s

    return Case(draw(c), draw(c2), {"eps": float(dp.lo[1])},
                broken=(_patched(draw(c), (prdp_selection, "select_domain", _half_select)),
                        _patched(draw(c2), (prdp_selection, "select_domain", _half_select))))


def _framework_pair(budget: BudgetFunction, v: np.ndarray, r_value: float, query: str):
    d = pd.DataFrame({"v": np.append(v, r_value)})
    d2 = pd.DataFrame({"v": v})
    return prepare(d, budget, query), prepare(d2, budget, query)


def case_prdp_framework_count() -> Case:
    """Algorithm 2, count: a record of domain 2 pays 2^0·0.5/2 = 0.25·2 in Part 1 (noisy count of its
    domain) and ≤ 1 in all (the answer)."""
    bud = step_table("v", [10.0, 100.0], [2.0, 1.0, 0.5], U=1000.0)
    dpart = bud.domains()
    i = int(dpart.index(np.array([1.0]))[0])
    p1, p2 = _framework_pair(bud, np.repeat([5.0, 50.0, 500.0], [20, 15, 10]), 50.0, "count")

    def draw(p):
        def s(n, rng):
            est, sel, _, _ = framework_trials(p, beta=0.1, rng=rng, trials=n)
            return np.column_stack([sel.noisy[:, i - 1], est, sel.ell])
        return s

    part1 = float(dpart.lo[i - 1] / 2)
    return Case(draw(p1), draw(p2), {"eps": [part1, float(dpart.lo[i - 1]), part1]},
                broken=(_patched(draw(p1), (prdp_central, "select_domain", _half_select)),
                        _patched(draw(p2), (prdp_central, "select_domain", _half_select))))


def _half_run(run):
    def broken(self, st, ell, eps, beta, rng):
        return run(self, st, ell, 2 * np.asarray(eps), beta, rng)
    return broken


def case_prdp_framework_m(kind: str) -> Case:
    """Algorithm 2's standard mechanism M on one privacy-specified domain (ε̌ = ε̂: ℓ = 1 always):
    the answer's loss is ε_M = ε̌/2 for every record; broken: M runs at twice its budget."""
    bud = constant(1.0, U=64.0)
    rng0 = np.random.default_rng(5)
    v = rng0.integers(1, 40, 60).astype(float)
    p1, p2 = _framework_pair(bud, v, 64.0 if kind != "distinct" else 63.5, kind if kind == "count" else f"{kind}:v")
    assert p1.domains.L == 1

    def draw(p):
        def s(n, rng):
            est, _, eps_m, _ = framework_trials(p, beta=0.1, rng=rng, trials=n)
            assert np.allclose(eps_m, 0.5)
            return est
        return s

    cls = {"count": LaplaceCount, "sum": AdaptiveClippedSum, "max": RankMax, "distinct": DistinctCount}[kind]
    broken_run = _half_run(cls.run)
    return Case(draw(p1), draw(p2), {"eps": 0.5},
                broken=(_patched(draw(p1), (cls, "run", broken_run)), _patched(draw(p2), (cls, "run", broken_run))),
                sizes={"n_search": 10_000, "n_test": 40_000} if kind in ("sum", "max") else {})


def case_prdp_sum_extension() -> Case:
    """Sec. 5.2: a record's loss is min(v, v̄_i)/b_i; its domain's noisy sum is the tight projection."""
    bud = inverse(100.0, "v", U=1000.0, eps_max=8.0)
    v = np.array([1.0, 2.0, 5.0, 20.0, 50.0, 200.0, 400.0, 900.0])
    r = 30.0
    s1 = extension_stats(pd.DataFrame({"v": np.append(v, r)}), bud)
    s2 = extension_stats(pd.DataFrame({"v": v}), bud)
    dpart = bud.domains()
    i = int(dpart.index(bud(pd.DataFrame({"v": [r]})))[0])
    promise = float(s1.loss[-1])

    def draw(st, half=False):
        st = copy.copy(st) if not half else dataclasses.replace(st, scales=st.scales / 2)

        def s(n, rng):
            est, sel = extension_trials(st, dpart, beta=0.1, rng=rng, trials=n)
            return np.column_stack([sel.noisy[:, i - 1], est])
        return s

    return Case(draw(s1), draw(s2), {"eps": [promise, promise]}, broken=(draw(s1, True), draw(s2, True)))


def case_prdp_naive() -> Case:
    """Sec. 4.1: M (count) on everything at ε̌."""
    bud = inverse(100.0, "v", U=1000.0, eps_max=8.0)
    p1, p2 = _framework_pair(bud, np.array([3.0, 30.0, 300.0]), 700.0, "count")

    def draw(p):
        return lambda n, rng: naive_trials(p, beta=0.1, rng=rng, trials=n)[0]

    run = _half_run(LaplaceCount.run)
    return Case(draw(p1), draw(p2), {"eps": float(bud.eps_min)},
                broken=(_patched(draw(p1), (LaplaceCount, "run", run)),
                        _patched(draw(p2), (LaplaceCount, "run", run))))


def case_prdp_secure_count() -> Case:
    """Secure Algorithm 1 noise (OpenDP discrete Laplace on the integer counts), domain of ε = 1."""
    smp = SecureSampler()

    def draw(count, eps):
        return lambda n, rng: smp.laplace_answers(np.full(n, count, dtype=np.int64), 1.0, 1.0, eps).estimate

    return Case(draw(10, 1.0), draw(9, 1.0), {"eps": 1.0}, broken=(draw(10, 2.0), draw(9, 2.0)),
                sizes={"n_search": 5_000, "n_test": 30_000})


# ---------------------------------------------------------------------------
# PrLDP (local): one party r against the dummy ⊥
# ---------------------------------------------------------------------------


def case_prldp_count() -> Case:
    """Algorithms 3–4 with one party: r's report (domain 2) against ⊥'s; the party pays 2^(i−1)ε̌ = 1."""
    dp = DomainPartition(0.5, 4.0)
    one = np.array([0.0, 1.0, 0.0])

    def draw(true, factor=1.0):
        def s(n, rng):
            sel = prldp._select_local(true, 1, dp.lo * factor, 0.1, rng, n)
            return np.column_stack([sel.noisy[:, 1], sel.retained_sum()])
        return s

    return Case(draw(one), draw(np.zeros(3)), {"eps": 1.0}, broken=(draw(one, 2.0), draw(np.zeros(3), 2.0)))


def case_prldp_framework() -> Case:
    """Algorithm 5 (sum) with one party: round I + round II against ⊥; the party pays ≤ 2^(i−1)ε̌."""
    bud = inverse(100.0, "v", U=1000.0, eps_max=8.0)
    d1 = prldp._LocalData(pd.DataFrame({"v": [40.0]}), bud, "sum")
    bot = copy.copy(d1)
    bot.counts = np.zeros_like(d1.counts)
    bot.eps = np.array([-math.inf])  # ⊥: in no domain, never kept, value 0
    i = int(d1.idx[0])
    promise = float(d1.dp.lo[i - 1])

    def draw(data):
        def s(n, rng):
            est, sel, _ = prldp.framework_trials(data, beta=0.1, rng=rng, trials=n)
            return np.column_stack([sel.noisy[:, i - 1], est])
        return s

    orig = prldp._select_local

    def half(true, n, lo, beta, rng, trials, rule="paper"):
        return orig(true, n, 2 * lo, beta, rng, trials, rule)

    return Case(draw(d1), draw(bot), {"eps": [promise / 2, promise]},
                broken=(_patched(draw(d1), (prldp, "_select_local", half)),
                        _patched(draw(bot), (prldp, "_select_local", half))))


def case_prldp_naive() -> Case:
    """Local naive baseline with one party: min(v, U) + Laplace(U/ε̌) against ⊥ (value 0): pays ε̌."""
    bud = inverse(100.0, "v", U=1000.0, eps_max=8.0)
    d1 = prldp._LocalData(pd.DataFrame({"v": [1000.0]}), bud, "sum")
    bot = copy.copy(d1)
    bot.v = np.array([0.0])

    def draw(data):
        return lambda n, rng: prldp.naive_trials(data, rng=rng, trials=n)

    orig = prldp.laplace_sum

    def half(n, scale, *, rng, size=None):
        return orig(n, np.asarray(scale) / 2, rng=rng, size=size)

    return Case(draw(d1), draw(bot), {"eps": float(bud.eps_min)},
                broken=(_patched(draw(d1), (prldp, "laplace_sum", half)),
                        _patched(draw(bot), (prldp, "laplace_sum", half))))


# ---------------------------------------------------------------------------
# Unit splitting (per-record zCDP): one release = many independent cells
# ---------------------------------------------------------------------------


def _unit_split_tables(K: int, T: float, m: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    g = np.repeat(np.arange(K), 2)
    base = pd.DataFrame({"id": np.arange(2 * K), "g": g, "v": np.tile([0.3 * T, 1.7 * T], K)})
    r = pd.DataFrame({"id": 2 * K + np.arange(K), "g": np.arange(K), "v": np.full(K, m * T)})
    return pd.concat([base, r], ignore_index=True), base


def case_unit_splitting(secure: bool = False) -> Case:
    """SUM on split data, T = 10, ρ = 1/8: the record r of value 2T pays P(r) = ρ·m² = ½ (µ = 1);
    broken: σ halved (µ = 2)."""
    T, rho, m, K = 10.0, 0.125, 2, 10_000
    d, d2 = _unit_split_tables(K, T, m)
    pol = SplittingPolicy(as_thresholds({"v": T}), Workload((Query("sum", "v", rho=rho, group_by=("g",)),)))
    assert float(pol(d.tail(1))[0]) == pytest.approx(rho * m * m)
    # a public list of the cells (a secure release refuses keys taken from the data)
    keys = {("g",): pd.DataFrame({"g": pd.unique(pd.concat([d["g"], d2["g"]]))})}

    def draw(tab):
        def once(rng):
            rel = US.release(tab, pol, rng=rng, owner_realized=False, secure=secure, public_keys=keys)
            return rel.answers.sort_values("g")["estimate"].to_numpy()

        def s(n, rng):
            out = np.concatenate([once(rng) for _ in range(math.ceil(n / K))])
            return out[:n]
        return s

    orig = USR._sigmas

    def half(st):
        a, b = orig(st)
        return a / 2, (None if b is None else b / 2)

    mu = math.sqrt(2 * rho * m * m)
    promise = {"delta": gaussian_delta(mu), "eps_grid": (0.25, 0.5, 1.0, 1.5)}
    broken = None if secure else (_patched(draw(d), (USR, "_sigmas", half)), _patched(draw(d2), (USR, "_sigmas", half)))
    return Case(draw(d), draw(d2), promise, broken=broken,
                sizes={"n_search": 10_000, "n_test": 40_000} if secure else {"n_search": 20_000, "n_test": 60_000})


def case_unit_splitting_joint(scaled: bool = True) -> Case:
    """Joint Gaussian release of SUM(a), SUM(b) over the same split rows, T = (10, 40), ρ = 1/8: the
    record r of values (2·T(a), 2·T(b)) is in m = 2 pieces and pays ρ·m² = ½ (µ = 1). Projections:
    each coordinate and their sum in threshold units (the direction of r's shift, which carries
    the whole µ); broken: the budget quadrupled behind the same promise (σ halved, µ = 2)."""
    T, rho, m, K = {"a": 10.0, "b": 40.0}, 0.125, 2, 10_000
    g = np.repeat(np.arange(K), 2)
    base = pd.DataFrame({"id": np.arange(2 * K), "g": g, "a": np.tile([0.3 * T["a"], 1.7 * T["a"]], K),
                         "b": np.tile([1.2 * T["b"], 0.4 * T["b"]], K)})
    r = pd.DataFrame({"id": 2 * K + np.arange(K), "g": np.arange(K), "a": np.full(K, m * T["a"]),
                      "b": np.full(K, m * T["b"])})
    d, d2 = pd.concat([base, r], ignore_index=True), base
    keys = {("g",): pd.DataFrame({"g": np.arange(K)})}
    assert float(SplittingPolicy(as_thresholds(T), Workload((Query("sum", "a", rho=rho / 2),
                                                            Query("sum", "b", rho=rho / 2)), joint=True))(d.tail(1))[0]
                 ) == pytest.approx(rho * m * m)

    def draw(tab, budget):
        def once(rng):
            rel = US.joint_sum_release(tab, T, ["a", "b"], rho=budget, rng=rng, group_by=("g",), scaled=scaled,
                                       public_keys=keys)
            ans = rel.answers
            q = ans["query"].cat.codes.to_numpy()
            ea = ans[q == 0].sort_values("g")["estimate"].to_numpy()
            eb = ans[q == 1].sort_values("g")["estimate"].to_numpy()
            return np.column_stack([ea, eb, ea / T["a"] + eb / T["b"]] if scaled else
                                   [ea, eb, ea * T["a"] + eb * T["b"]])

        def s(n, rng):
            return np.concatenate([once(rng) for _ in range(math.ceil(n / K))])[:n]
        return s

    mu = math.sqrt(2 * rho * m * m)
    promise = {"delta": gaussian_delta(mu), "eps_grid": (0.25, 0.5, 1.0, 1.5)}
    return Case(draw(d, rho), draw(d2, rho), promise, broken=(draw(d, 4 * rho), draw(d2, 4 * rho)),
                sizes={"n_search": 20_000, "n_test": 60_000})


def case_unit_splitting_topcoded() -> Case:
    """The Table 7 baseline inside a workload: SUM top-coded at c = 20 before splitting; a record above
    c pays ρ = ½ (µ = 1) whatever its size; broken: σ halved."""
    c, rho, K = 20.0, 0.5, 10_000
    d, d2 = _unit_split_tables(K, 10.0, 7)
    q = Query("sum", "v", rho=rho, group_by=("g",), split=False, clamp=c)
    pol = SplittingPolicy(as_thresholds({"v": 10.0}), Workload((q,)))
    assert float(pol(d.tail(1))[0]) == pytest.approx(rho)

    def draw(tab):
        def s(n, rng):
            out = [US.release(tab, pol, rng=rng, owner_realized=False).answers.sort_values("g")["estimate"]
                   .to_numpy() for _ in range(math.ceil(n / K))]
            return np.concatenate(out)[:n]
        return s

    orig = USR._sigmas

    def half(st):
        a, b = orig(st)
        return a / 2, b

    return Case(draw(d), draw(d2), {"delta": gaussian_delta(math.sqrt(2 * rho)), "eps_grid": (0.25, 0.5, 1.0, 1.5)},
                broken=(_patched(draw(d), (USR, "_sigmas", half)), _patched(draw(d2), (USR, "_sigmas", half))),
                sizes={"n_search": 20_000, "n_test": 60_000})


def case_partition_selection(alone: bool) -> Case:
    """Gaussian thresholding on split data: a record in m = 3 pieces moves its cell's piece count by 3
    (ρ_ps·m² zCDP); alone in its cell it makes the cell appear with probability δ(r)."""
    ps = US.PartitionSelection(rho=0.02, delta=1e-3)
    m = 3.0

    def draw(with_r: bool, sel):
        # the other records of the cell hold about τ − 0.3σ pieces: where the keep decision is most
        # sensitive to one record (0 pieces when r is alone)
        others = 0.0 if alone else float(round(sel.tau - 0.3 * sel.sigma))

        def s(n, rng):
            if alone and not with_r:  # the cell does not exist without r: never published
                return np.zeros(n)
            return sel.select(np.full(n, others + (m if with_r else 0.0)), rng).astype(float)
        return s

    class Half(US.PartitionSelection):
        @property
        def sigma(self) -> float:
            return super().sigma / 2

    mu = m / ps.sigma
    gd = gaussian_delta(mu)
    extra = float(ps.record_delta(m)) if alone else 0.0
    promise = {"delta": lambda e: gd(e) + extra, "eps_grid": (0.1, 0.3, 0.6, 1.0, 3.0)}
    hp = Half(ps.rho, ps.delta)
    return Case(draw(True, ps), draw(False, ps), promise, broken=(draw(True, hp), draw(False, hp)))


# ---------------------------------------------------------------------------
# Baselines (global DP) and the secure sampler
# ---------------------------------------------------------------------------


def case_baseline(noise: str) -> Case:
    """Clipped sum (bounds [0, 50]): a record at the bound against its absence."""
    v = np.array([3.0, 70.0, 12.0, 49.0])
    budget = 1.0 if noise == "laplace" else 0.5
    fn = BL.clipped_sum_laplace if noise == "laplace" else BL.clipped_sum_gaussian

    def draw(vals, factor=1.0):
        return lambda n, rng: np.array([fn(vals, 0.0, 50.0, budget * factor, rng=rng) for _ in range(n)])

    with_r = np.append(v, 80.0)  # clipped to 50 = Δ
    promise = {"eps": budget} if noise == "laplace" else {"delta": gaussian_delta(math.sqrt(2 * budget)),
                                                          "eps_grid": (0.5, 1.0, 1.5)}
    return Case(draw(with_r), draw(v), promise, broken=(draw(with_r, 4.0), draw(v, 4.0)),
                sizes={"n_search": 5_000, "n_test": 30_000})


def case_baseline_secure() -> Case:
    """Secure clipped sum: quantised record values summed exactly + OpenDP discrete Laplace (Δ = 50)."""
    smp = SecureSampler()
    g = grid_for(50.0)
    v = np.array([3.0, 70.0, 12.0, 49.0])

    def draw(vals, eps):
        tot = int(to_units(np.clip(vals, 0, 50), g).sum())
        return lambda n, rng: smp.laplace_answers(np.full(n, tot, dtype=np.int64), g, 50.0, eps).estimate

    with_r = np.append(v, 80.0)
    return Case(draw(with_r, 1.0), draw(v, 1.0), {"eps": 1.0}, broken=(draw(with_r, 2.0), draw(v, 2.0)),
                sizes={"n_search": 5_000, "n_test": 30_000})


# ---------------------------------------------------------------------------
# Personalized DP
# ---------------------------------------------------------------------------

PHI = np.array([0.2, 0.5, 1.0, 1.0, 0.3, 0.8])
VALS = np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0])


def case_personalized(mech_name: str) -> Case:
    """A user x (Φ_x = 0.5, value 1) removed (add/remove) or changed (PE: substitution); promise = the
    mechanism's delivered ε for x. Broken: the mechanism run with every Φ doubled behind the same promise
    (×4 for the medians: on these data the exponential mechanism's realized loss is about half its ε)."""
    x = 2 if mech_name == "threshold" else 1
    phi = PHI.copy()
    vals = VALS.copy()
    vals[x] = 1.0
    spec = personalized.spec_from_values(phi)
    kind = "median" if mech_name.endswith("median") else "count"
    mech = {"minimum": personalized.Minimum(), "threshold": personalized.Threshold("mean"),
            "threshold_below": personalized.Threshold("mean"), "sample": personalized.Sample("max"),
            "stretching": personalized.Stretching(), "pe": personalized.PE(), "pe_median": personalized.PE(),
            "minimum_median": personalized.Minimum()}[mech_name]
    if mech_name == "threshold_below":
        x = 0  # Φ = 0.2 < t = mean: not used at all
    q = personalized.PersonalizedQuery(kind, None if kind == "count" else "v", lo=0, hi=8)
    if kind == "median":
        vals = np.array([1.0, 5.0, 2.0, 7.0, 3.0, 6.0])
    promise = float(mech.delivered(phi, spec)[x])

    def draw(v, ph, spec_):
        return lambda n, rng: personalized.simulate_answers(mech, v, ph, q, spec_, runs=n, rng=rng)

    if isinstance(mech, personalized.PE):
        other = vals.copy()
        other[x] = 0.0 if kind == "count" else 8.0
        pair = (vals, phi), (other, phi)
    else:
        keep = np.arange(phi.size) != x
        pair = (vals, phi), (vals[keep], phi[keep])
    f = 4.0 if kind == "median" else 2.0
    spec2 = personalized.spec_from_values(phi * f)
    d = draw(pair[0][0], pair[0][1], spec)
    dp = draw(pair[1][0], pair[1][1], spec)
    bd = draw(pair[0][0], pair[0][1] * f, spec2)
    bdp = draw(pair[1][0], pair[1][1] * f, spec2)
    if mech_name == "threshold_below":
        # broken: a threshold that keeps x anyway (runs at t on all users)
        allin = personalized.Minimum()
        spec_t = personalized.spec_from_values(np.full(phi.size, spec.threshold("mean")))
        bd = lambda n, rng: personalized.simulate_answers(allin, vals, phi, q, spec_t, runs=n, rng=rng)  # noqa: E731
        bdp = lambda n, rng: personalized.simulate_answers(allin, vals[1:], phi[1:], q, spec_t,  # noqa: E731
                                                           runs=n, rng=rng)
    return Case(d, dp, {"eps": promise}, broken=(bd, bdp))


def case_personalized_secure_sample() -> Case:
    """Secure Sample (t = max Φ = 1): user x (Φ_x = 0.5, value 1) removed; its keep coin is the exact dyadic
    Bernoulli of π rounded down and the count gets OpenDP's discrete Laplace (the components of
    ``Sample.secure_answer``, vectorised over the draws). Broken: every Φ doubled behind the same promise."""
    smp = SecureSampler()
    x = 1

    def draw(vals, phi):
        def s(n, rng):
            keep = personalized.secure_sample_keep(np.tile(phi, n), 1.0, smp).reshape(n, phi.size)
            counts = (keep * vals).sum(axis=1).astype(np.int64)
            return smp.laplace_answers(counts, 1.0, 1.0, 1.0).estimate
        return s

    vals = VALS.copy()
    vals[x] = 1.0
    keep = np.arange(PHI.size) != x
    f = np.minimum(2 * PHI, 1.0)
    return Case(draw(vals, PHI), draw(vals[keep], PHI[keep]), {"eps": float(PHI[x])},
                broken=(draw(vals, f), draw(vals[keep], f[keep])), sizes={"n_search": 10_000, "n_test": 40_000})


# ---------------------------------------------------------------------------
# Multi-tier (central) and granular DP
# ---------------------------------------------------------------------------


def case_multitier(family: str) -> Case:
    """Algorithm 1 (central multi-tier): each tier's answer costs that tier's ε; the top tier is the
    coalition's cost. A count of 10 against 11."""
    tiers = [("gold", 1.2), ("silver", 0.7), ("bronze", 0.3)]
    plan = multitier.plan_central(tiers, family)

    def draw(q, pl):
        return lambda n, rng: multitier.sample_multitier(pl.family, pl.params, np.full(n, float(q)), rng=rng).T

    broken = multitier.plan_central([(k, 2 * e) for k, e in tiers], family)
    return Case(draw(10, plan), draw(11, plan), {"eps": [1.2, 0.7, 0.3]},
                broken=(draw(10, broken), draw(11, broken)))


def case_multitier_secure() -> Case:
    """Secure Algorithm 1, geometric family (OpenDP's discrete Laplace and the Eq.-(1) residual with exact
    coins): a count of 10 against 11, one query per draw. Broken: the budgets doubled behind the promise."""
    tiers = [1.2, 0.7, 0.3]
    fam = multitier.noise_family("geometric")
    smp = SecureSampler()

    def draw(q, eps):
        return lambda n, rng: multitier.secure_central(fam, [np.ones(q)] * n, eps, strategy="multitier",
                                                       smp=smp).estimates.T

    return Case(draw(10, tiers), draw(11, tiers), {"eps": tiers},
                broken=(draw(10, [2 * e for e in tiers]), draw(11, [2 * e for e in tiers])),
                sizes={"n_search": 10_000, "n_test": 40_000})


def case_standard_histogram() -> Case:
    """The standard Laplace(2/ε) histogram under replacement: r moves from cell (k, x) to (k, y); K pairs
    of cells per release are independent copies; projection: count(k, x) − count(k, y)."""
    K, eps = 2_000, 1.0
    keys = [f"k{k:04d}" for k in range(K)]
    base = pd.DataFrame({"A": keys * 2, "B": ["x"] * K + ["y"] * K})

    def tab(cell: str) -> granular.AttributeData:
        r = pd.DataFrame({"A": keys, "B": [cell] * K})
        return granular.encode_attributes(pd.concat([base, r], ignore_index=True), ["A", "B"],
                                          {"A": keys, "B": ["x", "y"]})

    def draw(data, e):
        def once(rng):
            a = granular.standard_histogram(data, eps=e, rng=rng, threshold=-math.inf).answers
            w = a.pivot_table(index="A", columns="B", values="estimate", observed=True)
            return (w["x"] - w["y"]).to_numpy()

        def s(n, rng):
            return np.concatenate([once(rng) for _ in range(math.ceil(n / K))])[:n]
        return s

    dx, dy = tab("x"), tab("y")
    return Case(draw(dx, eps), draw(dy, eps), {"eps": eps}, broken=(draw(dx, 2 * eps), draw(dy, 2 * eps)),
                sizes={"n_search": 10_000, "n_test": 40_000})


CASES: dict[str, Callable[[], Case]] = {
    "prdp.count": case_prdp_count,
    "prdp.framework.part1": case_prdp_framework_count,
    "prdp.framework.M.count": lambda: case_prdp_framework_m("count"),
    "prdp.framework.M.sum": lambda: case_prdp_framework_m("sum"),
    "prdp.framework.M.max": lambda: case_prdp_framework_m("max"),
    "prdp.framework.M.distinct": lambda: case_prdp_framework_m("distinct"),
    "prdp.sum_extension": case_prdp_sum_extension,
    "prdp.naive": case_prdp_naive,
    "prdp.count.secure": case_prdp_secure_count,
    "prldp.count": case_prldp_count,
    "prldp.framework": case_prldp_framework,
    "prldp.naive": case_prldp_naive,
    "unit_splitting.sum": case_unit_splitting,
    "unit_splitting.sum.secure": lambda: case_unit_splitting(secure=True),
    "unit_splitting.topcoded_sum": case_unit_splitting_topcoded,
    "unit_splitting.joint_sum": case_unit_splitting_joint,
    "unit_splitting.joint_sum.isotropic": lambda: case_unit_splitting_joint(scaled=False),
    "unit_splitting.partition_selection": lambda: case_partition_selection(False),
    "unit_splitting.partition_selection.alone": lambda: case_partition_selection(True),
    "baselines.clipped_sum.laplace": lambda: case_baseline("laplace"),
    "baselines.clipped_sum.gaussian": lambda: case_baseline("gaussian"),
    "baselines.clipped_sum.secure": case_baseline_secure,
    "personalized.minimum": lambda: case_personalized("minimum"),
    "personalized.minimum.median": lambda: case_personalized("minimum_median"),
    "personalized.threshold": lambda: case_personalized("threshold"),
    "personalized.threshold.below": lambda: case_personalized("threshold_below"),
    "personalized.sample": lambda: case_personalized("sample"),
    "personalized.stretching": lambda: case_personalized("stretching"),
    "personalized.pe.count": lambda: case_personalized("pe"),
    "personalized.pe.median": lambda: case_personalized("pe_median"),
    "personalized.sample.secure": case_personalized_secure_sample,
    "multitier.central.geometric": lambda: case_multitier("geometric"),
    "multitier.central.laplace": lambda: case_multitier("laplace"),
    "multitier.central.geometric.secure": case_multitier_secure,
    "granular.standard_histogram": case_standard_histogram,
}


@pytest.mark.parametrize("name", list(CASES))
def test_mechanism_passes_and_broken_variant_is_flagged(name):
    case = CASES[name]()
    kw = dict(case.promise, **case.sizes)
    seed = sum(map(ord, name))
    ok = search(case.d, case.dp, seed=seed, **kw)
    assert not ok.violated, f"{name}: {ok}"
    if case.broken is not None:
        bad = search(case.broken[0], case.broken[1], seed=seed + 1, **kw)
        assert bad.violated, f"{name} (broken): {bad}"
