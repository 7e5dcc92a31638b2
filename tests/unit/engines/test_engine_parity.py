"""Parity of the engines: every engine returns the memory engine's statistics and releases.

The suite is parametrised over ``ENGINE_FACTORIES``; an engine joins it by adding a factory
(source DataFrame, its Parquet file, schema → prepared EngineDataset) and, if it needs them, its
marks in ``ENGINE_MARKS`` (Spark: the ``spark`` marker and ``xdist_group("spark")``, one shared
local session). Exact equality for counts, split counts, histograms, domain indices, quantiles and
released answers (same seed → same noise); sums within 1e-9 relative (the order of additions
differs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prdp_core import engines
from prdp_core.core.distribution import LossDistribution
from prdp_core.core.domains import DomainPartition, ceil_log2
from prdp_core.core.splitting import as_thresholds, split_counts
from prdp_core.core.workload import Filter, Query, SplittingPolicy, Workload
from prdp_core.data.dataset import Schema, check_table, prepare_dataset
from prdp_core.data.profile import profile_dataset
from prdp_core.engines import Aggregate, MemoryEngine
from prdp_core.engines.duckdb_engine import DuckDBEngine
from prdp_core.mechanisms.prdp.answers import AdaptiveClippedSum, RankMax
from prdp_core.mechanisms.prdp.budget import inverse, log_budget, parse_budget, per_group, sqrt_budget, step_table
from prdp_core.mechanisms.prdp.central import count, count_of, framework, naive
from prdp_core.mechanisms.preview import preview_policy
from prdp_core.mechanisms.unit_splitting import owner_realized_distribution, release
from tests import spark as spark_tests

pytestmark = pytest.mark.xdist_group("engines")

SCHEMA = Schema(id_col="id", measures=("v", "w", "t"), groups=("g", "h"), owner_col="o")
N = 100_000


def _table(seed: int, n: int = N) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    k = rng.integers(1, 3000, n).astype(float)
    return pd.DataFrame({
        "id": np.arange(n),
        "g": rng.choice(["a", "b", "c", "dé", "e'f"], n),
        "h": rng.integers(0, 6, n),
        "o": rng.integers(0, n // 3, n).astype(str),
        "v": np.floor(rng.pareto(1.1, n) * 10),
        "w": rng.lognormal(3, 2, n),
        "t": k * 0.1,  # values fl(k·0.1): the float guard of the split counts decides the ties
    })


def _memory(df: pd.DataFrame, path: str, schema: Schema) -> engines.EngineDataset:
    return engines.as_engine_dataset(prepare_dataset(df, schema))


def _duckdb(df: pd.DataFrame, path: str, schema: Schema) -> engines.EngineDataset:
    return engines.open_dataset(path, engine="duckdb", schema=schema)


def _spark(df: pd.DataFrame, path: str, schema: Schema) -> engines.EngineDataset:
    spark = spark_tests.session()
    # the file's scan cached by Spark (its plan is matched in every later query that reads the file):
    # the suite's many small jobs skip decoding the Parquet file again, the engine reads it as ever
    spark.read.parquet(Path(path).resolve().as_uri()).cache().count()
    return engines.open_dataset(path, engine="spark", schema=schema)


#: name → factory(df, parquet path, schema) of a prepared EngineDataset. Other engines add theirs.
ENGINE_FACTORIES = {"memory": _memory, "duckdb": _duckdb, "spark": _spark}
#: Marks of an engine's tests (Spark: one shared session, in one xdist worker).
ENGINE_MARKS = {"spark": spark_tests.MARKS}


class _Prepared(dict):
    """Engine name → the table prepared by that engine, built on first use (so that a worker
    starts only the engines of the tests it runs)."""

    def __init__(self, df: pd.DataFrame, path: str) -> None:
        super().__init__()
        self.df, self.path = df, path

    def __missing__(self, name: str) -> engines.EngineDataset:
        self[name] = ENGINE_FACTORIES[name](self.df, self.path, SCHEMA)
        return self[name]


@pytest.fixture(scope="module", params=[0, 1])
def data(request, tmp_path_factory):
    df = _table(request.param)
    path = tmp_path_factory.mktemp(f"engines{request.param}") / "t.parquet"
    df.to_parquet(path)
    ds = prepare_dataset(df, SCHEMA)
    return df, str(path), ds, _Prepared(df, str(path))


ENGINES = [pytest.param(name, marks=ENGINE_MARKS.get(name, ()), id=name) for name in ENGINE_FACTORIES]
#: The engines that read files with SQL (their raw tables, row checks and fixes).
SQL_ENGINES = [p for p in ENGINES if p.values[0] != "memory"]


def cases(values: list, spark: list[int], *, ids: list[str] | None = None, sql_only: bool = False) -> list:
    """(engine, value) parameters: every engine with every value, except Spark, which runs the
    values at the indices ``spark`` — chosen so that every code path and every statistic the
    acceptance names is still covered (each Spark query costs a job: the whole cross product
    would take many minutes). Spark runs them on both random tables."""
    out = []
    for p in (SQL_ENGINES if sql_only else ENGINES):
        name = p.values[0]
        for i, v in enumerate(values):
            if name == "spark" and i not in spark:
                continue
            vid = ids[i] if ids else str(i)
            out.append(pytest.param(name, v, marks=p.marks, id=f"{vid}-{name}"))
    return out


def _open_raw(engine: str, path, base_dir=None):
    """The raw (unprepared) table of a file in an SQL engine."""
    if engine == "spark":
        from prdp_core.engines.spark_engine import SparkEngine

        spark_tests.session()
        return SparkEngine.open(str(path), base_dir=base_dir)
    return DuckDBEngine.open(path, base_dir=base_dir)

THRESHOLDS = [
    as_thresholds({"v": 10.0, "w": 37.5, "t": 0.1}),
    as_thresholds({"v": 3.0, "w": 100.0, "t": 1.7}),
    as_thresholds({"a": {"v": 5.0, "w": 20.0, "t": 0.3}, "*": {"v": 10.0, "w": 37.5, "t": 0.1}}, group_col="g"),
]


def _same_hist(a, b) -> None:
    ka = a.keys.assign(_n=a.counts)
    kb = b.keys.assign(_n=b.counts)
    cols = list(a.keys.columns)
    merged = ka.merge(kb, on=cols, how="outer", suffixes=("_a", "_b"), indicator=True)
    assert (merged["_merge"] == "both").all()
    assert (merged["_n_a"] == merged["_n_b"]).all()


# ---------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("engine, thr", cases(THRESHOLDS, [2], ids=["flat", "small", "per-group"]))
def test_split_histograms_are_equal(data, engine, thr):
    df, _, ds, eds = data
    ref = eds["memory"].engine
    eng = eds[engine].engine
    m = split_counts(ds.table, thr)
    h = eng.split_histogram(thr)
    assert np.array_equal(h.column("m"), np.unique(m)) and np.array_equal(h.counts, np.unique(m, return_counts=True)[1])
    f = (Filter("g", ("a", "e'f")), Filter("h", (1, "2", "x")))
    _same_hist(ref.split_histogram(thr, measures=("v", "t"), filters=f, by=("h",)),
               eng.split_histogram(thr, measures=("v", "t"), filters=f, by=("h",)))


@pytest.mark.parametrize("engine", ENGINES)
def test_cell_aggregates_are_equal(data, engine):
    _, _, _, eds = data
    thr = THRESHOLDS[2]
    aggs = [Aggregate("n", "count"), Aggregate("p", "pieces"), Aggregate("nf", "count", filter=Filter("h", (0, 5))),
            Aggregate("s", "sum", "v"), Aggregate("sf", "sum", "w", filter=Filter("g", ("b",))),
            Aggregate("c", "sum", "w", clamp=100.0)]
    for gb in (("g",), ("g", "h"), ()):
        a = eds["memory"].engine.cell_aggregates(gb, aggs, thr)
        b = eds[engine].engine.cell_aggregates(gb, aggs, thr)
        pd.testing.assert_frame_equal(a.keys.astype(str), b.keys.astype(str))
        for x in ("n", "p", "nf"):
            assert np.array_equal(a.values[x], b.values[x]), x
        for x in ("s", "sf", "c"):
            np.testing.assert_allclose(b.values[x], a.values[x], rtol=1e-9, atol=0)


BUDGETS = [
    inverse(1e4, "v", U=1e12),
    log_budget(500, "w", k=4, U=1e12),  # log and ** : the numpy kernel runs inside SQL engines
    sqrt_budget(8, "v", U=1e12),
    step_table("v", [10, 100, 1000], [4.0, 1.0, 0.3, 0.05], eps_min=0.01, eps_max=10),
    parse_budget("where(g == 'a', 2, 1e4 / max(v, 1)) + min(h, 3) / 10", eps_min=1e-8, eps_max=100),
    parse_budget("abs(w - 20) / sqrt(max(v, 4)) + (h != 2) + 0.5", eps_min=0.01, eps_max=50),
    per_group("g", {"a": "50 / max(v, 1)", "b": "1"}, default="0.5", eps_min=1e-6, eps_max=60),
    # log of two columns: neither exact SQL nor monotone in one column (Spark: the numpy kernel as an Arrow UDF)
    parse_budget("400 / max(log(w + 2), 1) ** 2 + h / 4", eps_min=0.01, eps_max=100),
]


@pytest.mark.parametrize("engine, budget", cases(BUDGETS, [0, 1, 6, 7],
                                                  ids=[b.shape.kind + ":" + b.expression()[:20] for b in BUDGETS]))
def test_domain_statistics_are_equal(data, engine, budget):
    _, _, ds, eds = data
    dp = budget.domains()
    idx = dp.index(budget(ds.table))
    counts = np.bincount(idx, minlength=dp.L + 1)[1:]
    mem = eds["memory"].engine
    eng = eds[engine].engine
    assert np.array_equal(eng.domain_stats(budget).counts, counts)
    for mech, col in ((AdaptiveClippedSum(), "v"), (RankMax(), "w")):
        a = mem.domain_stats(budget, column=col, bins=mech.bins(budget.U))
        b = eng.domain_stats(budget, column=col, bins=mech.bins(budget.U))
        assert np.array_equal(a.hist_counts, b.hist_counts)
        np.testing.assert_allclose(b.hist_sums, a.hist_sums, rtol=1e-9, atol=1e-9)
        assert a.max == b.max
    for col in ("g", "o"):
        assert np.array_equal(mem.domain_stats(budget, column=col, distinct=True).distinct,
                              eng.domain_stats(budget, column=col, distinct=True).distinct)


@pytest.mark.parametrize("engine", SQL_ENGINES)
def test_sql_domain_index_and_ceil_log2_are_exact(tmp_path, engine):
    from prdp_core.engines import sql as sqlgen
    from prdp_core.engines import sql_budget

    p = np.exp2(np.arange(-60, 61, dtype=float))
    x = np.concatenate((p, np.nextafter(p, np.inf), np.nextafter(p, 0),
                        np.random.default_rng(1).uniform(1e-9, 1e9, 5000)))
    path = tmp_path / "x.parquet"
    pd.DataFrame({"x": x}).to_parquet(path)
    eng = _open_raw(engine, path)
    got = np.array([r[0] for r in eng._exec(f"SELECT {sqlgen.ceil_log2_sql(eng.d, 'x')} FROM {eng.relation}")])
    assert np.array_equal(got, ceil_log2(x))
    dp = DomainPartition(1e-8, 100.0)
    e = np.clip(np.concatenate((dp.lo, dp.hi, np.nextafter(dp.lo, np.inf), np.exp(np.linspace(-18, 4.6, 4000)))),
                1e-8, 100.0)
    pd.DataFrame({"e": e}).to_parquet(path)
    eng = _open_raw(engine, path)
    got = np.array([r[0] for r in eng._exec(
        f"SELECT {sql_budget.domain_index_sql(eng.d, 'e', dp.eps_min, dp.L)} FROM {eng.relation}")])
    assert np.array_equal(got, dp.index(e))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("values", [True, False], ids=["value-histogram", "order-statistics"])
def test_profiles_are_equal(data, engine, values, monkeypatch):
    import prdp_core.engines.sql_profile as sql_profile

    if not values:  # the path for measures with (too) many distinct values
        monkeypatch.setattr(sql_profile, "PROFILE_VALUES", 0)
    _, _, ds, eds = data
    a = profile_dataset(ds)
    b = profile_dataset(eds[engine])
    for m in SCHEMA.measures:
        pa_, pb = a.measures[m].as_dict(), b.measures[m].as_dict()
        for k in ("count", "zeros", "min", "median", "p90", "p99", "max"):
            assert pa_[k] == pb[k], (m, k)  # order statistics: exact
        for k in ("mean", "total", "skewness", "top1_share"):
            assert pb[k] == pytest.approx(pa_[k], rel=1e-9), (m, k)
        assert np.array_equal(a.histograms[m].edges, b.histograms[m].edges)
        assert np.array_equal(a.histograms[m].counts, b.histograms[m].counts)
        np.testing.assert_allclose(b.lorenz[m][1], a.lorenz[m][1], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_samples_are_the_same_rows(data, engine):
    df, _, _, eds = data
    a = eds["memory"].sample(25, seed=7).table
    b = eds[engine].sample(25, seed=7).table
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_dtype=False)
    assert eds[engine].sample(25, seed=8).table["id"].tolist() != a["id"].tolist()


# ---------------------------------------------------------------------------
# Releases: the same answers for the same seed
# ---------------------------------------------------------------------------

POLICIES = {
    "count-sum-by-one-column, partition selection": SplittingPolicy(
        as_thresholds({"v": 10.0, "w": 37.5, "t": 0.1}),
        Workload((Query("count", rho=0.5, group_by=("g",)), Query("sum", "v", rho=0.5, group_by=("g",)),
                  Query("sum", "w", rho=0.3, group_by=("g", "h"))), partition_rho=0.1)),
    "avg, filters, two columns, per-group thresholds, per-measure splitting, top-coding": SplittingPolicy(
        as_thresholds({"a": {"v": 5.0, "w": 20.0, "t": 0.3}, "*": {"v": 10.0, "w": 37.5, "t": 0.1}}, group_col="g"),
        Workload((Query("count", rho=0.5, group_by=("g", "h"), filter=Filter("h", (1, 2))),
                  Query("avg", "v", rho=0.5, rho_count=0.2, group_by=("g",)),
                  Query("sum", "t", rho=0.2, group_by=("h",)),
                  Query("sum", "w", rho=0.3, split=False, clamp=100.0, group_by=("h",),
                        filter=Filter("g", ("a", "dé")))), joint=False)),
    "no group-by, joint, filters, partition selection": SplittingPolicy(
        as_thresholds({"v": 20.0, "w": 80.0, "t": 1.0}),
        Workload((Query("sum", "v", rho=0.5), Query("avg", "w", rho=0.4, rho_count=0.1, filter=Filter("h", (3,))),
                  Query("count", rho=0.3, group_by=("h",))), partition_rho=0.2)),
    # unlisted cells dropped (h = 1, 3, 4; g = b, c, dé), listed cells absent from the data answered (g = zz,
    # h = 9), a numeric column listed with a number typed as text ("0"), per-group thresholds
    "public key lists, per-group thresholds, filters": SplittingPolicy(
        as_thresholds({"a": {"v": 5.0, "w": 20.0, "t": 0.3}, "*": {"v": 10.0, "w": 37.5, "t": 0.1}}, group_col="g"),
        Workload((Query("count", rho=0.5, group_by=("g", "h")),
                  Query("avg", "v", rho=0.5, rho_count=0.2, group_by=("g",), filter=Filter("h", (1, 2))),
                  Query("sum", "w", rho=0.3, split=False, clamp=100.0, group_by=("h",))),
                 group_keys={"g": ["a", "e'f", "zz", "*"], "h": ["0", 2, 5, 9]})),
}


def _exact(d: LossDistribution, values: np.ndarray) -> bool:
    ref = LossDistribution.from_values(values)
    return np.array_equal(ref.values, d.values) and np.array_equal(ref.counts, d.counts)


def _close(d: LossDistribution, values: np.ndarray) -> None:
    a = np.sort(np.asarray(values, dtype=float))
    b = np.repeat(d.values, d.counts)
    assert a.size == b.size
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(POLICIES))
def test_unit_splitting_releases_are_equal(data, engine, name):
    _, _, ds, eds = data
    pol = POLICIES[name]
    ref = release(ds, pol, rng=np.random.default_rng(11), reveal=True, seed=11)
    got = release(eds[engine], pol, rng=np.random.default_rng(11), reveal=True, seed=11)
    pd.testing.assert_frame_equal(ref.answers, got.answers, check_exact=True)
    assert got.loss is None and _exact(got.loss_distribution, ref.loss)
    assert _exact(got.extras["private_realized_distribution"], ref.extras["private_realized"])
    _close(got.extras["private_owner_realized_distribution"], ref.extras["private_owner_realized"].to_numpy())
    if "private_record_delta" in ref.extras:
        assert _exact(got.extras["private_record_delta_distribution"], ref.extras["private_record_delta"])
    assert got.entries[0].loss == ref.entries[0].loss
    assert got.for_review().loss_distribution is None


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(POLICIES)[:2])  # partition selection; AVG, filters and per-group thresholds
def test_owners_realized_losses_asked_for_after_the_release_are_the_releases(data, engine, name):
    """A release made with owner_realized=False keeps its owners' terms (privately), and summing them later gives
    the memory engine's owners' realized losses (what owner_realized=True gives: the test above)."""
    _, _, ds, eds = data
    pol = POLICIES[name]
    ref = release(ds, pol, rng=np.random.default_rng(11), reveal=True, seed=11)
    later = release(eds[engine], pol, rng=np.random.default_rng(11), reveal=True, seed=11, owner_realized=False)
    assert "private_owner_realized_distribution" not in later.extras
    assert "private_owner_realized_terms" not in later.for_review().extras
    pd.testing.assert_frame_equal(ref.answers, later.answers, check_exact=True)
    _close(owner_realized_distribution(eds[engine], later), ref.extras["private_owner_realized"].to_numpy())


@pytest.mark.parametrize("name", list(POLICIES))
def test_owners_realized_losses_summed_in_parts_are_the_same(data, name, monkeypatch):
    """DuckDB sums a large table's owners' realized losses in parts (owners by a hash of their id, one statement
    each): the same owners' losses as in one statement and as the memory engine's."""
    from prdp_core.engines import duckdb_engine

    _, _, ds, eds = data
    pol = POLICIES[name]
    ref = release(ds, pol, rng=np.random.default_rng(11), reveal=True, seed=11)
    rel = release(eds["duckdb"], pol, rng=np.random.default_rng(11), reveal=True, seed=11, owner_realized=False)
    eng = eds["duckdb"].engine
    monkeypatch.setattr(duckdb_engine, "OWNER_PART_ROWS", eng.n_rows() // 3 + 1)
    assert eng._owner_parts() == 3
    statements: list[str] = []
    run = eng._run
    monkeypatch.setattr(eng, "_run", lambda sql, params: statements.append(sql) or run(sql, params))
    got = owner_realized_distribution(eds["duckdb"], rel)
    assert sum(s.startswith("INSERT INTO") for s in statements) == 2  # parts 2 and 3 join the first one's table
    _close(got, ref.extras["private_owner_realized"].to_numpy())


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("method", ["lemma4", "lemma5"])
def test_policy_previews_and_owner_losses_are_equal(data, engine, method):
    _, _, ds, eds = data
    for pol in list(POLICIES.values())[: 1 if method == "lemma5" else None]:  # Lemma 5's k-grid is slow
        a = preview_policy(ds, pol, owner_method=method)
        b = preview_policy(eds[engine], pol, owner_method=method)
        assert _exact(b.records, a.records.values)
        _close(b.owners, a.owners.values)
        assert a.share_split == b.share_split
        pd.testing.assert_frame_equal(a.by_group("g").astype({"g": str}), b.by_group("g").astype({"g": str}),
                                      check_dtype=False)


@pytest.mark.parametrize("method", ["lemma4", "lemma5"])
def test_owner_losses_of_columns_whose_names_hold_braces(tmp_path, method):
    """Quoted column names reach the owner-loss SQL as text, never through a format template."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"id": np.arange(300), "v{0}": rng.integers(1, 60, 300).astype(float),
                       "own{tab}": [f"o{i // 3}" for i in range(300)]})
    schema = Schema(id_col="id", measures=("v{0}",), groups=(), owner_col="own{tab}")
    df.to_parquet(tmp_path / "t.parquet", index=False)
    pol = SplittingPolicy(as_thresholds({"v{0}": 10.0}), Workload((Query("sum", "v{0}", rho=0.5),)))
    a = preview_policy(prepare_dataset(df, schema), pol, owner_method=method)
    b = preview_policy(engines.open_dataset(str(tmp_path / "t.parquet"), engine="duckdb", schema=schema), pol,
                       owner_method=method)
    _close(b.owners, a.owners.values)


FRAMEWORK = [(b, q) for b in BUDGETS[:2] + BUDGETS[4:5] for q in ("count", "sum:v", "max:w", "distinct:g")]


@pytest.mark.parametrize("engine, case", cases(FRAMEWORK, [4, 5, 6, 7, 8],
                                               ids=[f"{n}-{q}" for n in ("inverse", "log", "expression")
                                                    for q in ("count", "sum:v", "max:w", "distinct:g")]))
def test_framework_releases_are_equal(data, engine, case):
    budget, query = case
    _, _, ds, eds = data
    a = framework(ds.table, budget, query, beta=0.1, rng=np.random.default_rng(5), reveal=True)
    b = framework(eds[engine], budget, query, beta=0.1, rng=np.random.default_rng(5), reveal=True)
    pd.testing.assert_frame_equal(a.answers, b.answers, check_exact=False, rtol=1e-12)
    assert a.answers["estimate"].iloc[0] == b.answers["estimate"].iloc[0]
    assert np.array_equal(a.extras["private_domain_counts"], b.extras["private_domain_counts"])
    assert _exact(b.loss_distribution, a.loss)
    assert a.extras.get("private_rank_error") == b.extras.get("private_rank_error")
    c = count(budget(ds.table), eps_min=budget.eps_min, eps_max=budget.eps_max, beta=0.1,
                rng=np.random.default_rng(2))
    d = count_of(eds[engine], budget, beta=0.1, rng=np.random.default_rng(2))
    assert c.answers["estimate"].iloc[0] == d.answers["estimate"].iloc[0]
    assert _exact(d.loss_distribution, c.loss)
    e = naive(ds.table, budget, query, beta=0.1, rng=np.random.default_rng(3))
    f = naive(eds[engine], budget, query, beta=0.1, rng=np.random.default_rng(3))
    assert e.answers["estimate"].iloc[0] == f.answers["estimate"].iloc[0] or (
        np.isnan(e.answers["estimate"].iloc[0]) and np.isnan(f.answers["estimate"].iloc[0]))


# ---------------------------------------------------------------------------
# Split counts: property-based, with ties and per-group thresholds
# ---------------------------------------------------------------------------

_floats = st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(1, 10**6), _floats, st.sampled_from(["x", "y", "z"])), min_size=1, max_size=60),
       st.floats(min_value=1e-3, max_value=1e4, allow_nan=False), st.floats(min_value=1e-3, max_value=1e4,
                                                                            allow_nan=False))
def test_split_counts_property(tmp_path_factory, rows, t1, t2):
    k = np.array([r[0] for r in rows], dtype=float)
    df = pd.DataFrame({"a": k * t1, "b": np.array([r[1] for r in rows]), "g": [r[2] for r in rows]})
    thr = as_thresholds({"x": {"a": t1, "b": t2}, "*": {"a": t2, "b": t1}}, group_col="g")
    path = tmp_path_factory.mktemp("prop") / "p.parquet"
    df.to_parquet(path)
    h = DuckDBEngine.open(path).split_histogram(thr, measures=("a",), by=("g",))
    _same_hist(MemoryEngine(df).split_histogram(thr, measures=("a",), by=("g",)), h)


# ---------------------------------------------------------------------------
# Row checks and bad input
# ---------------------------------------------------------------------------


def _messy() -> pd.DataFrame:
    return pd.DataFrame({
        "id": ["r1", "r2", "r2", None, "r5", "r6", "r7", "r8"],
        "v": ["1", "2.5", "n/a", "", "-3", "4", "inf", "7"],
        "w": [1.0, np.nan, 2.0, 3.0, -1.0, 5.0, 6.0, 7.0],
        "g": ["a", " ", None, "b", "a", "b", "a", "c"],
    })


@pytest.mark.parametrize("engine", ENGINES)
def test_row_checks_count_the_same_problems(tmp_path, engine):
    df = _messy()
    path = tmp_path / "m.parquet"
    df.to_parquet(path)
    schema = Schema(id_col="id", measures=("v", "w"), groups=("g",))
    ref = check_table(df, schema)
    got = (MemoryEngine(df) if engine == "memory" else _open_raw(engine, path)).check(schema)
    for field_ in ("n_rows", "rows_with_missing", "rows_with_bad", "duplicate_ids", "missing_ids", "missing_groups"):
        assert getattr(got, field_) == getattr(ref, field_), field_
    for a, b in zip(ref.measures, got.measures):
        assert (a.non_numeric, a.missing, a.infinite, a.negative, a.minimum) == \
            (b.non_numeric, b.missing, b.infinite, b.negative, b.minimum)
        assert set(a.non_numeric_examples) == set(b.non_numeric_examples)


@pytest.mark.parametrize("engine, options", cases(
    [dict(non_numeric="missing", missing="drop", negative="shift", duplicate_ids="regenerate", missing_groups="label"),
     dict(non_numeric="missing", missing="drop", negative="shift", shift_by={"v": 5.0, "w": 1.0},
          duplicate_ids="regenerate")], [0, 1], sql_only=True))
def test_fixes_applied_in_the_engine_match_prepare_dataset(tmp_path, options, engine):
    df = _messy()
    path = tmp_path / "m.parquet"
    df.to_parquet(path)
    schema = Schema(id_col="id", measures=("v", "w"), groups=("g",))
    ref = prepare_dataset(df, schema, **options)
    got = _open_dataset(engine, str(path), schema=schema, **options)
    assert got.notes == ref.notes and got.shifts == ref.shifts and got.schema == ref.schema
    a = ref.table.reset_index(drop=True)
    b = got.sample(100, 0).table
    pd.testing.assert_frame_equal(a, b[a.columns], check_dtype=False)


@pytest.mark.parametrize("engine, options", cases(
    [{}, dict(non_numeric="missing"), dict(non_numeric="missing", missing="drop"),
     dict(non_numeric="missing", missing="drop", shift_by={"v": 1.0}, negative="shift")], [0, 2], sql_only=True))
def test_bad_input_gets_the_message_of_prepare_dataset(tmp_path, options, engine):
    from prdp_core.core.errors import DataError

    df = _messy()
    path = tmp_path / "m.parquet"
    df.to_parquet(path)
    schema = Schema(id_col="id", measures=("v", "w"), groups=("g",))
    with pytest.raises(DataError) as ref:
        prepare_dataset(df, schema, **options)
    with pytest.raises(DataError) as got:
        _open_dataset(engine, str(path), schema=schema, **options)
    assert str(got.value) == str(ref.value)


def _open_dataset(engine: str, source, **kw) -> engines.EngineDataset:
    if engine == "spark":
        spark_tests.session()
    return engines.open_dataset(source, engine=engine, **kw)


@pytest.mark.parametrize("engine", SQL_ENGINES)
def test_bad_sources_and_columns_are_named(tmp_path, engine):
    from prdp_core.core.errors import DataError, SchemaError

    schema = Schema(id_col="id", measures=("v", "w"), groups=("g",))
    _messy().to_parquet(tmp_path / "m.parquet")
    with pytest.raises(SchemaError, match="Columns not in the table: measure 'nope'"):
        _open_dataset(engine, str(tmp_path / "m.parquet"), schema=Schema(measures=("nope",)))
    pd.DataFrame({"name": ["x", "y"], "v": ["a", "b"]}).to_parquet(tmp_path / "text.parquet")
    with pytest.raises(DataError, match=r"Measure 'v' has 2 value\(s\) that are not numbers"):
        _open_dataset(engine, str(tmp_path / "text.parquet"), schema=Schema(measures=("v",)))
    _messy().iloc[:0].to_parquet(tmp_path / "empty.parquet")
    with pytest.raises(DataError, match="No row is left"):
        _open_dataset(engine, str(tmp_path / "empty.parquet"), schema=schema)
    with pytest.raises(DataError, match="No data file at 'missing.parquet'"):
        _open_dataset(engine, "missing.parquet", base_dir=tmp_path, schema=schema)
    with pytest.raises(DataError, match="No file matches"):
        _open_dataset(engine, "parts-*.parquet", base_dir=tmp_path, schema=schema)


@pytest.mark.parametrize("engine", SQL_ENGINES)
def test_a_folder_of_files_with_different_columns_is_refused_with_their_names(tmp_path, engine):
    from prdp_core.core.errors import DataError

    folder = tmp_path / "parts"
    folder.mkdir()
    pd.DataFrame({"id": [1, 2], "v": [1.0, 2.0]}).to_parquet(folder / "a.parquet")
    pd.DataFrame({"id": [3], "v": [3.0]}).to_parquet(folder / "b.parquet")
    ds = _open_dataset(engine, str(folder), schema=Schema(id_col="id", measures=("v",)))
    assert ds.n == 3
    pd.DataFrame({"id": [4], "x": [4.0]}).to_parquet(folder / "c.parquet")
    with pytest.raises(DataError, match=r"c\.parquet differs from a\.parquet \(it has x; it lacks v\)"):
        _open_dataset(engine, str(folder), schema=Schema(id_col="id", measures=("v",)))
    (folder / "c.parquet").unlink()
    pd.DataFrame({"id": [4], "v": ["text"]}).to_parquet(folder / "c.parquet")
    with pytest.raises(DataError, match="v is text"):
        _open_dataset(engine, str(tmp_path / "parts" / "*.parquet"), schema=Schema(id_col="id", measures=("v",)))


@pytest.mark.parametrize("engine", ENGINES)
def test_binned_realized_losses_are_equal_beyond_the_exact_limit(data, engine, monkeypatch):
    import prdp_core.engines.memory as memory_engine
    import prdp_core.engines.sql_engine as sql_engine

    monkeypatch.setattr(memory_engine, "MAX_EXACT_VALUES", 1000)
    monkeypatch.setattr(sql_engine, "MAX_EXACT_VALUES", 1000)
    _, _, ds, eds = data
    pol = POLICIES["count-sum-by-one-column, partition selection"]
    ref = release(ds, pol, rng=np.random.default_rng(1), owner_realized=False)
    got = release(eds[engine], pol, rng=np.random.default_rng(1), owner_realized=False)
    d = got.extras["private_realized_distribution"]
    assert not d.exact and d.n == ds.n
    expect = memory_engine.distribution_of(ref.extras["private_realized"], upper=float(d.edges[-1]))
    assert np.array_equal(d.edges, expect.edges) and np.array_equal(d.counts, expect.counts)


@pytest.mark.parametrize("engine", ENGINES)
def test_private_quantiles_are_equal(data, engine):
    """The DP quantile's counts are computed by the engine: the same seed gives the same suggestion."""
    from prdp_core.mechanisms.dp_quantile import CandidateGrid, dp_quantile

    df, _, ds, held = data
    for col, grid in (("v", CandidateGrid(1, 1e6, 500)), ("w", CandidateGrid(0, 5e4, 300, "linear"))):
        ref = dp_quantile(ds, col, 97.5, grid=grid, epsilon=0.5, seed=8)
        assert dp_quantile(held[engine], col, 97.5, grid=grid, epsilon=0.5, seed=8).value == ref.value
