"""The mechanism contract: plans state each record's loss before any data, and one Noise value chooses the noise."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.core.noise_source import NO_GENERATOR, SEEDED_SECURE, Noise, resolve
from prdp_core.core.secure import SECURE_LABEL, TEACHING_LABEL, SecureSampler
from prdp_core.core.splitting import as_thresholds
from prdp_core.core.workload import Query, SplittingPolicy, Workload
from prdp_core.mechanisms import contract, granular, prdp, unit_splitting
from prdp_core.mechanisms import multitier as mt
from prdp_core.mechanisms import personalized as P
from prdp_core.mechanisms.baselines import ClippedSum
from prdp_core.mechanisms.dp_quantile import CandidateGrid, dp_percentile_thresholds, dp_quantile
from prdp_core.mechanisms.prdp import local as prldp
from prdp_core.mechanisms.prdp.budget import inverse
from prdp_core.mechanisms.prdp.plans import BudgetPlan, CountPlan

RNG = np.random.default_rng(11)
N = 600
TABLE = pd.DataFrame({"id": range(N), "g": RNG.integers(0, 4, N), "o": RNG.integers(0, 120, N),
                      "v": np.round(RNG.pareto(1.3, N) * 20, 2), "b": RNG.integers(0, 2, N),
                      "c": RNG.integers(0, 3, N).astype(str), "d": RNG.integers(0, 2, N).astype(str)})
POLICY = SplittingPolicy(as_thresholds({"v": 40.0}),
                         Workload((Query("sum", "v", rho=0.5, group_by=("g",)), Query("count", rho=0.2),
                                   Query("avg", "v", rho=0.3, rho_count=0.1, filter=None)), partition_rho=0.0))
BUDGET = inverse(50.0, "v", eps_max=20.0, U=1e4)
SPEC = P.spec_from_values(RNG.choice([0.2, 0.5, 1.0], N))
TIERS = {"public": 0.5, "analyst": 1.0, "agency": 2.0}
ATTRS = granular.encode_attributes(TABLE, ["c", "d"], {"c": ["0", "1", "2"], "d": ["0", "1"]})
GRID = CandidateGrid(1.0, 1e4, size=200)
# public group keys (a secure release takes none from the data)
KEYS: dict[tuple[str, ...], pd.DataFrame] = {("g",): pd.DataFrame({"g": range(4)})}


def _records(n: int) -> pd.DataFrame:
    return pd.DataFrame(index=range(n))


# ---------------------------------------------------------------------------
# Noise
# ---------------------------------------------------------------------------


def test_teaching_noise_is_a_seeded_generator_and_secure_noise_the_unseeded_exact_samplers():
    t = Noise.teaching(5)
    assert isinstance(t.rng, np.random.Generator) and t.seed == 5 and not t.secure and t.sampler is None
    assert t.label == TEACHING_LABEL and t.rng.random() == np.random.default_rng(5).random()
    s = Noise.secure()
    assert s.secure and isinstance(s.sampler, SecureSampler) and s.seed is None and s.rng is None
    assert s.label == SECURE_LABEL
    assert Noise.secure(SecureSampler(bits=4)).sampler.bits == 4
    g = np.random.default_rng(3)
    assert Noise.from_rng(g, 3).rng is g and Noise.from_rng(g).seed is None
    stamped = t.stamp(pd.DataFrame({"estimate": [1.0]}), teaching=True)
    assert stamped["seed"].tolist() == [5] and not stamped["secure"].any()
    assert s.stamp(pd.DataFrame({"estimate": [1.0]}), teaching=False)["seed"].isna().all()


def test_legacy_keywords_map_to_one_noise_and_a_seeded_secure_run_is_refused():
    g = np.random.default_rng(1)
    assert Noise.from_keywords(rng=g, seed=1) == Noise(rng=g, seed=1)
    assert Noise.from_keywords(seed=4).seed == 4 and Noise.from_keywords(seed=4).rng is not None
    assert Noise.from_keywords(secure=True).secure and Noise.from_keywords(rng=g, secure=True).rng is None
    smp = SecureSampler()
    assert Noise.from_keywords(sampler=smp).sampler is smp
    for kw in ({"secure": True, "seed": 3}, {"sampler": smp, "seed": 0}):
        with pytest.raises(ParameterError, match="unseeded: drop the seed or the secure flag"):
            Noise.from_keywords(**kw)
    with pytest.raises(ParameterError) as err:
        Noise(sampler=smp, seed=2)
    assert err.value.message == SEEDED_SECURE
    with pytest.raises(ParameterError) as err:
        Noise.from_keywords().generator()
    assert err.value.message == NO_GENERATOR
    for bad in (-1, 2.5, True, "3"):
        with pytest.raises(ParameterError):
            Noise.teaching(bad)  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        Noise.from_rng(object())  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="noise= or the keywords"):
        resolve(Noise.teaching(1), seed=1)
    with pytest.raises(ParameterError, match="Noise value"):
        resolve("secure")  # type: ignore[arg-type]


# every family's release functions, called with the noise keywords given (legacy or noise=)
CASES: dict[str, Callable[..., Any]] = {
    "unit_splitting.release": lambda **kw: unit_splitting.release(TABLE, POLICY, reveal=True, public_keys=KEYS,
                                                                            **kw),
    "unit_splitting.joint": lambda **kw: unit_splitting.joint_sum_release(
        TABLE, {"v": 40.0}, ["v"], rho=0.5, group_by=("g",), public_keys=KEYS, **kw),
    "prdp.count": lambda **kw: prdp.count(BUDGET(TABLE), eps_min=BUDGET.eps_min, eps_max=BUDGET.eps_max, beta=0.1,
                                          **kw),
    "prdp.count_of": lambda **kw: prdp.count_of(TABLE, BUDGET, beta=0.1, **kw),
    "prdp.framework": lambda **kw: prdp.framework(TABLE, BUDGET, "sum", beta=0.1, **kw),
    "prdp.naive": lambda **kw: prdp.naive(TABLE, BUDGET, "count", beta=0.1, **kw),
    "prdp.sum_extension": lambda **kw: prdp.sum_extension(TABLE, BUDGET, beta=0.1, **kw),
    "prldp.count": lambda **kw: prldp.count(BUDGET(TABLE), eps_min=BUDGET.eps_min, eps_max=BUDGET.eps_max,
                                            beta=0.1, **kw),
    "prldp.framework": lambda **kw: prldp.framework(TABLE, BUDGET, "sum", beta=0.1, **kw),
    "prldp.naive": lambda **kw: prldp.naive(TABLE, BUDGET, "count", beta=0.1, **kw),
    "personalized": lambda **kw: P.Threshold(0.5).release(TABLE, SPEC, P.PersonalizedQuery("count", "b"), **kw),
    "baselines.ClippedSum": lambda **kw: ClippedSum("v", 1.0, upper=50.0).release(TABLE, **kw),
    "multitier.central": lambda **kw: mt.release_central(
        mt.plan_central(TIERS, "geometric"), float(TABLE["b"].sum()), records=N,
        contributions=TABLE["b"].to_numpy(float), **kw),
    "multitier.local": lambda **kw: mt.release_local(mt.plan_local(TIERS, 3), TABLE["g"].to_numpy() % 3, **kw),
    "granular.standard": lambda **kw: granular.standard_histogram(ATTRS, eps=1.0, threshold=-np.inf, **kw),
    "granular.heavy_hitter": lambda **kw: granular.heavy_hitter_histogram(ATTRS, eps0=1.0, nu=0.05, **kw),
    "dp_quantile": lambda **kw: dp_quantile(TABLE, "v", 90, grid=GRID, epsilon=1.0, **kw),
    "dp_percentile_thresholds": lambda **kw: dp_percentile_thresholds(TABLE, ["v"], 90, grids={"v": GRID},
                                                                      epsilon=1.0, **kw),
}


def _answers(out: Any) -> Any:
    if hasattr(out, "answers"):
        return out.answers
    return getattr(out, "thresholds", None) or out.value


@pytest.mark.parametrize("name", sorted(CASES))
def test_noise_and_the_legacy_keywords_give_bit_identical_seeded_releases(name):
    run = CASES[name]
    old = run(rng=np.random.default_rng(7), seed=7) if name != "dp_percentile_thresholds" else run(seed=7)
    new = run(noise=Noise.teaching(7))
    if isinstance(old, pd.Series | pd.DataFrame) or hasattr(old, "answers"):
        pd.testing.assert_frame_equal(_answers(old), _answers(new))
        assert old.seed == new.seed == 7 and not new.secure
        assert all(e.seed == 7 and not e.secure for e in new.entries)
    else:
        assert _answers(old) == _answers(new)
    with pytest.raises(ParameterError, match="noise= or the keywords"):
        run(noise=Noise.teaching(7), seed=7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_secure_noise_gives_unseeded_releases_and_a_seed_is_refused(name):
    run = CASES[name]
    out = run(noise=Noise.secure())
    rec = getattr(out, "entry", out)  # private thresholds: their ledger entry
    assert rec.secure and rec.seed is None
    if hasattr(out, "entries"):
        assert all(e.secure and e.seed is None for e in out.entries)
    with pytest.raises(ParameterError, match="unseeded"):
        run(secure=True, seed=3)


def test_a_seeded_run_without_a_generator_is_refused_by_every_release():
    for name, run in CASES.items():
        if name.startswith("dp_"):
            continue  # a private suggestion without a seed draws from an unseeded generator
        with pytest.raises(ParameterError, match="numpy random Generator"):
            run()


# ---------------------------------------------------------------------------
# Plans: the per-record loss before the data, then the release's
# ---------------------------------------------------------------------------


def test_every_family_has_a_plan_type_and_a_release():
    assert [f.name for f in contract.FAMILIES] == ["unit_splitting", "prdp", "personalized", "multitier", "granular",
                                                   "baseline"]
    plans = [POLICY, CountPlan(1.0, 8.0, 0.1), BudgetPlan(BUDGET), P.PersonalizedPlan(SPEC, P.Minimum(),
             P.PersonalizedQuery("count", "b")), mt.plan_central(TIERS), mt.plan_local(TIERS, 3),
             granular.HistogramPlan("standard", 1.0, 2), ClippedSum("v", 1.0, upper=5.0)]
    for plan in plans:
        assert isinstance(plan, contract.Plan) and plan.loss_kind in contract.LOSS_KINDS
        assert contract.family_of(plan).name in {f.name for f in contract.FAMILIES}
    with pytest.raises(ParameterError, match="not a mechanism plan"):
        contract.family_of({"thresholds": {"v": 40.0}})
    with pytest.raises(ParameterError, match="Noise value"):
        contract.release(POLICY, TABLE, np.random.default_rng(0))  # type: ignore[arg-type]


def test_unit_splitting_plan_is_the_ledger_charge_and_bounds_the_realized_loss():
    before = POLICY.record_loss(TABLE)  # P(r) from the public policy and each record's own value
    rel = contract.release(POLICY, TABLE, Noise.teaching(3))
    assert POLICY.loss_kind == rel.measure == "rho" and POLICY.exact
    np.testing.assert_allclose(rel.entries[0].loss(TABLE), before)
    assert np.all(rel.loss <= before * (1 + 1e-12)) and np.any(rel.loss < before)


@pytest.mark.parametrize("model", ["central", "local"])
def test_prdp_count_plan_is_what_every_record_is_charged(model):
    plan = CountPlan(BUDGET.eps_min, BUDGET.eps_max, 0.1, model)
    values = BUDGET(TABLE)
    before = plan.record_loss(values)
    assert np.all(before <= values) and np.all(before > values / 2 - 1e-12)  # 2^(i−1)ε̌ ≤ E(r) < 2^i ε̌
    for noise in (Noise.teaching(2), Noise.secure()):
        rel = contract.release(plan, values, noise)
        np.testing.assert_array_equal(rel.loss, before)
        np.testing.assert_array_equal(rel.entries[0].loss(TABLE), before)
    np.testing.assert_array_equal(BudgetPlan(BUDGET, algorithm="count", model=model).count_plan().record_loss(values),
                                  before)


@pytest.mark.parametrize("model,algorithm", [("central", "framework"), ("central", "naive"),
                                             ("central", "sum_extension"), ("central", "count"),
                                             ("local", "framework"), ("local", "naive"), ("local", "count")])
def test_prdp_budget_plan_bounds_every_record_by_its_budget(model, algorithm):
    plan = BudgetPlan(BUDGET, "sum" if algorithm != "count" else "count", beta=0.1, algorithm=algorithm, model=model)
    before = plan.record_loss(TABLE)  # E(r)
    rel = contract.release(plan, TABLE, Noise.teaching(4))
    assert plan.loss_kind == rel.measure == "eps" and not plan.exact
    np.testing.assert_allclose(rel.requested, before)
    assert np.all(rel.loss <= before * (1 + 1e-12))
    assert np.all(rel.entries[0].loss(TABLE) <= before * (1 + 1e-12))


def test_a_prdp_plan_refuses_unknown_choices():
    with pytest.raises(ParameterError):
        BudgetPlan(BUDGET, algorithm="magic")
    with pytest.raises(ParameterError):
        BudgetPlan(BUDGET, algorithm="sum_extension", model="local")
    with pytest.raises(ParameterError):
        CountPlan(1.0, 8.0, 0.1, "federated")  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        CountPlan(1.0, 8.0, 1.5)


@pytest.mark.parametrize("mechanism", [P.Minimum(), P.Threshold(0.5), P.Sample(0.5), P.PE(), P.Stretching()])
def test_personalized_plan_is_each_owners_delivered_epsilon(mechanism):
    query = P.PersonalizedQuery("count", "b")
    plan = P.PersonalizedPlan(SPEC, mechanism, query)
    before = plan.record_loss(TABLE)
    rel = contract.release(plan, TABLE, Noise.teaching(6))
    np.testing.assert_array_equal(rel.loss, before)
    np.testing.assert_array_equal(rel.entries[0].loss(TABLE), before)
    assert np.all(before <= SPEC.phi_for(TABLE) * (1 + 1e-12))


@pytest.mark.parametrize("family", ["geometric", "laplace", "gaussian"])
@pytest.mark.parametrize("strategy", ["multitier", "independent", "gradual"])
def test_multitier_central_plan_is_what_the_records_read_pay(family, strategy):
    plan = mt.plan_central(TIERS, family)
    q = mt.central_query(TABLE, "count", filter=mt.RecordFilter("g", "==", 1), integer=family == "geometric")
    before = plan.record_loss(q.mask, strategy)
    rel = contract.release(plan, q.value, Noise.teaching(8), strategy=strategy, records=q.mask)
    assert plan.loss_kind == rel.measure
    np.testing.assert_array_equal(rel.loss, before)
    assert np.all(before[~q.mask] == 0) and np.all(before[q.mask] > 0)
    assert sum(e.loss(_records(1))[0] for e in rel.entries) == pytest.approx(before.max())


@pytest.mark.parametrize("mechanism", ["subset", "grr", "brr", "independent"])
def test_multitier_local_plan_is_each_users_loss(mechanism):
    plan = mt.plan_local(TIERS, 3)
    values = TABLE["g"].to_numpy() % 3
    before = plan.record_loss(values, mechanism)
    rel = contract.release(plan, values, Noise.teaching(9), mechanism=mechanism)
    np.testing.assert_allclose(rel.loss, before)
    assert sum(e.loss(_records(N)) for e in rel.entries) == pytest.approx(before)


@pytest.mark.parametrize("kind", ["standard", "heavy_hitter"])
def test_granular_plan_states_the_whole_record_and_per_attribute_epsilon(kind):
    plan = granular.HistogramPlan(kind, 1.0, ATTRS.d, nu=0.05, threshold=-np.inf if kind == "standard" else None)
    before = plan.record_loss(ATTRS)
    rel = contract.release(plan, ATTRS, Noise.teaching(10))
    np.testing.assert_allclose(rel.loss, before)
    np.testing.assert_allclose(rel.entries[0].loss(_records(ATTRS.n)), before)
    assert plan.attribute_eps <= 1.0 * (1 + 1e-9) <= plan.whole_record_eps * (1 + 1e-9)
    if kind == "heavy_hitter":
        secure = granular.HistogramPlan(kind, 1.0, ATTRS.d, nu=0.05, secure=True)
        np.testing.assert_allclose(contract.release(secure, ATTRS, Noise.secure()).loss, secure.record_loss(ATTRS.n))
        with pytest.raises(ParameterError, match="calibrated for"):
            contract.release(plan, ATTRS, Noise.secure())
    with pytest.raises(ParameterError, match="attribute"):
        contract.release(granular.HistogramPlan(kind, 1.0, ATTRS.d + 1), ATTRS, Noise.teaching(1))


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_the_clipped_sum_baseline_charges_every_record_its_flat_budget(noise):
    plan = ClippedSum("v", 0.7, upper=50.0, noise=noise)
    before = plan.record_loss(TABLE)
    rel = contract.release(plan, TABLE, Noise.teaching(12))
    assert plan.loss_kind == rel.measure and np.all(before == 0.7)
    np.testing.assert_array_equal(rel.loss, before)
    np.testing.assert_array_equal(rel.entries[0].loss(TABLE), before)
