"""Every "Reproduce in Python" part (prdp_core.study.snippets.snippet), written from a study config and executed:
it runs and computes what the engine's API gives for the same data and seed — the numbers the page shows.

Each snippet is written to a file in a temporary folder and run there with ``runpy`` (its globals are
compared); the data part also reads a CSV file of that folder and the same file through DuckDB. Hostile text
in every part is tests/unit/test_generated_code.py's business.
"""

from __future__ import annotations

import runpy

import numpy as np
import pandas as pd
import pytest

from prdp_core import engines
from prdp_core.core.errors import ConfigError
from prdp_core.data.profile import profile_dataset
from prdp_core.mechanisms import analysis, budget_solver, granular, personalized, prdp, sweeps, unit_splitting
from prdp_core.mechanisms import multitier as mt
from prdp_core.mechanisms.preview import preview_policy
from prdp_core.study import config
from prdp_core.study.runs.personalized import pdp_mechanism
from prdp_core.study.snippets import PARTS, snippet

SEED = 11
N = 1500


def _study(**changes) -> config.Study:
    """A study of every kind on a small CBP-like sample (group thresholds, a filter, an owner column)."""
    cfg = {
        "version": 1, "mode": "teaching", "seed": SEED, "data": {"sample": "cbp_like", "n": N, "seed": 2},
        "policy": {
            "thresholds": {"group_column": "STATE", "rows": {"*": {"EMP": 50.0}, "CA": {"EMP": 20.0}}},
            "budget": {"preset": "inverse", "column": "EMP", "alpha": 1e3, "eps_max": 50.0},
            "specification": {"column": "EMP", "default_eps": 1.0, "user": "FIRM_ID"},
            "tiers": {"public": 0.5, "agency": 4.0},
        },
        "workload": {"queries": [
            {"kind": "count", "group_by": ["STATE"], "rho": 0.2},
            {"kind": "sum", "measure": "EMP", "group_by": ["STATE"], "rho": 0.5,
             "filter": {"column": "NAICS2", "values": ["23", "54"]}},
        ]},
        "mechanisms": [
            {"kind": "unit_splitting", "seed": SEED},
            {"kind": "prdp", "query": "sum", "column": "EMP", "seed": SEED},
            {"kind": "personalized", "mechanism": "threshold", "t": "mean", "seed": SEED,
             "query": {"kind": "sum", "column": "EMP", "hi": 200.0}},
            {"kind": "multitier", "query": "sum", "measure": "EMP", "clip": 50, "seed": SEED,
             "filter": {"column": "STATE", "op": "==", "value": "CA"}},
        ],
        "app": {"tradeoffs": {"tr_pcts": [90.0, 99.0], "tr_rhos": [0.5, 2.0], "tr_min": 5, "tr_fmin": 5,
                              "tr_solve_min": 5, "tr_solve_t": 0.2},
                "budget_functions": {"bf_scale_vary": "U", "bf_scale_trials": 5},
                "personalized": {"pdp_cmp_runs": 20},
                "concepts": {"hl_source": "dataset", "hl_columns": ["STATE", "NAICS2", "EMP"], "hl_eps0": 0.5}},
    }
    cfg.update(changes)
    return config.parse_config(cfg)


@pytest.fixture(scope="module")
def study():
    return _study()


@pytest.fixture(scope="module")
def ds(study):
    return config.load_data(study)


def _run(study, part, folder, **kw) -> dict:
    """Write the snippet of ``part`` into ``folder`` and run it there; its globals."""
    code = snippet(study, part, **kw)
    compile(code, part, "exec")  # it parses
    path = folder / f"{part}.py"
    path.write_text(code, encoding="utf-8")
    return runpy.run_path(str(path), run_name="__main__")


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _same_estimates(a, b):
    pd.testing.assert_series_equal(a.answers["estimate"].reset_index(drop=True),
                                   b.answers["estimate"].reset_index(drop=True), check_names=False)


def test_every_part_has_a_test():
    untested = [p for p in PARTS if not any(name.startswith(f"test_{p}_part") for name in globals())]
    assert not untested, untested


def test_data_part_rebuilds_the_dataset_and_its_profile(study, ds, in_tmp):
    ns = _run(study, "data", in_tmp)
    pd.testing.assert_frame_equal(ns["ds"].table, ds.table)
    pd.testing.assert_frame_equal(ns["profile"].table(), profile_dataset(ds).table())


def test_data_part_of_a_file_read_in_memory_and_by_duckdb(ds, in_tmp):
    ds.table.to_csv(in_tmp / "firms.csv", index=False)
    prepare = {"missing": "drop", "negative": "shift", "shift_by": {"PAYANN": 3.0}}
    schema = {"id": "ESTAB_ID", "measures": ["EMP", "PAYANN"], "groups": ["STATE"], "owner": "FIRM_ID"}
    memory = _study(data={"path": "firms.csv", "schema": schema, "prepare": prepare}, mechanisms=[], policy={},
                    workload=None)
    ns = _run(memory, "data", in_tmp)
    assert "Path(__file__)" not in snippet(memory, "data") and "sys.argv" not in snippet(memory, "data")
    assert ns["ds"].schema.measures == ("EMP", "PAYANN") and ns["ds"].shifts == {"PAYANN": 3.0}
    engine = _study(data={"path": "firms.csv", "engine": "duckdb", "schema": schema, "prepare": prepare},
                    mechanisms=[], policy={}, workload=None)
    held = _run(engine, "data", in_tmp)
    assert held["ds"].n == ns["ds"].n and held["ds"].engine is not None
    a, b = held["profile"].table(), ns["profile"].table()
    assert list(a.index) == list(b.index)
    np.testing.assert_allclose(a["max"].to_numpy(float), b["max"].to_numpy(float))


def test_policy_part_rebuilds_the_policy_and_its_preview(study, ds, in_tmp):
    ns = _run(study, "policy", in_tmp, owner_method="lemma5")
    pol = study.splitting_policy(ds.table)
    assert ns["policy"].describe() == pol.describe()
    assert ns["preview"].summary() == preview_policy(ds, pol, owner_method="lemma5").summary()


def test_run_part_releases_what_the_run_page_releases(study, ds, in_tmp):
    ns = _run(study, "run", in_tmp)
    pol = study.splitting_policy(ds.table)
    page = unit_splitting.release(ds, pol, rng=np.random.default_rng(SEED), reveal=True, seed=SEED,
                                  partition_delta=1e-6)  # as ui.run releases it
    _same_estimates(ns["rel"], page)
    np.testing.assert_array_equal(ns["realized"], page.extras["private_realized"])
    assert "true" not in ns["review"].answers.columns


def test_run_part_in_review_mode_attaches_no_true_values(ds, in_tmp):
    ns = _run(_study(mode="review"), "run", in_tmp)
    assert ns["REVEAL"] is False and "true" not in ns["rel"].answers.columns and "realized" not in ns


def test_secure_parts_are_unseeded(in_tmp):
    """A secure page (exact samplers, system randomness) gives secure code: no seed, Noise.secure()."""
    secure = _study(workload={"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.2}],
                              "partition_rho": 0.1},  # secure: group keys chosen privately
                    mechanisms=[{"kind": "unit_splitting", "secure": True},
                                {"kind": "prdp", "query": "count", "secure": True},
                                {"kind": "multitier", "query": "count", "secure": True}],
                    app={"concepts": {"hl_source": "generated", "hl_n": 1000, "hl_d": 4, "hl_secure": True}})
    for part in ("run", "budget", "multitier", "granular"):
        code = snippet(secure, part)
        assert "Noise.secure()" in code and "Noise.teaching" not in code and "seed=11" not in code, part
        ns = _run(secure, part, in_tmp)
        rels = [r for _, r in ns["releases"]] if "releases" in ns else [ns["hh"], ns["std"]]
        assert all(r.secure and r.seed is None for r in rels), part


def test_run_part_on_a_dataset_held_by_duckdb(ds, in_tmp):
    ds.table.to_parquet(in_tmp / "firms.parquet", index=False)
    held = _study(data={"path": "firms.parquet", "engine": "duckdb",
                        "schema": {"id": "ESTAB_ID", "measures": ["EMP"], "groups": ["STATE", "NAICS2"]}})
    ns = _run(held, "run", in_tmp)
    assert "ds.engine.distinct(" in snippet(held, "run")
    memory = unit_splitting.release(ds, held.splitting_policy(ds.table), rng=np.random.default_rng(SEED),
                                    reveal=True, seed=SEED, partition_delta=1e-6)
    np.testing.assert_allclose(ns["rel"].answers["estimate"].to_numpy(), memory.answers["estimate"].to_numpy())


def test_budget_part_runs_the_pages_mechanisms_in_order(study, ds, in_tmp):
    ns = _run(study, "budget", in_tmp)
    E = study.budget_function()
    rng = np.random.default_rng(SEED)  # the Budget functions page: one generator, the algorithms in turn
    page = [prdp.framework(ds.table, E, "sum:EMP", beta=0.1, rng=rng, seed=SEED, reveal=True),
            prdp.sum_extension(ds.table, E, column="EMP", beta=0.1, rng=rng, seed=SEED, reveal=True),
            prdp.naive(ds.table, E, "sum:EMP", beta=0.1, rng=rng, seed=SEED, reveal=True)]
    assert [label.split(": ")[-1] for label, _ in ns["releases"]] == \
        ["PrDP framework (Alg. 2)", "PrDP extension (Sec. 5.2)", "naive ε̌"]
    for (_, mine), theirs in zip(ns["releases"], page):
        _same_estimates(mine, theirs)
    pd.testing.assert_frame_equal(ns["scaling"], prdp.scaling_study("U", trials=5, seed=SEED))


def test_budget_part_of_the_local_model(ds, in_tmp):
    local = _study(mechanisms=[{"kind": "prdp", "model": "local", "query": "count", "threshold": "bernstein",
                                "seed": SEED}])
    ns = _run(local, "budget", in_tmp)
    E = local.budget_function()
    rng = np.random.default_rng(SEED)
    first = prdp.local.count(E(ds.table), eps_min=E.eps_min, eps_max=E.eps_max, beta=0.1, threshold="bernstein",
                             rng=rng, seed=SEED, reveal=True)
    assert len(ns["releases"]) == 3
    _same_estimates(ns["releases"][0][1], first)


def test_personalized_part_releases_with_the_pages_mechanism(study, ds, in_tmp):
    ns = _run(study, "personalized", in_tmp)
    m = study.mechanisms[2]
    spec = study.privacy_spec(ds.table)
    q = personalized.PersonalizedQuery(**m["query"])
    page = pdp_mechanism(m).release(ds.table, spec, q, rng=np.random.default_rng(SEED), seed=SEED, reveal=True)
    _same_estimates(ns["rel"], page)
    assert ns["spec"].summary() == spec.summary()
    pd.testing.assert_frame_equal(ns["comparison"], personalized.compare(ds.table, spec, q, runs=20,
                                                                         rng=np.random.default_rng(SEED)))


def test_personalized_part_with_generated_tiers(ds, in_tmp):
    tiers = _study(policy={"specification": {"tiers": {"f_c": 0.3, "f_m": 0.5}, "seed": 5, "user": None}},
                   mechanisms=[{"kind": "personalized", "mechanism": "sample", "seed": SEED}])
    ns = _run(tiers, "personalized", in_tmp)
    spec = tiers.privacy_spec(ds.table)
    assert ns["spec"].summary() == spec.summary()


def test_multitier_part_central_and_local(study, ds, in_tmp):
    ns = _run(study, "multitier", in_tmp)
    tiers, m = study.tiers(), study.mechanisms[3]
    f = mt.RecordFilter("STATE", "==", "CA")
    integer = m["family"] in ("geometric", "multiscale_geometric")
    q = mt.central_query(ds.table, "sum", measure="EMP", clip=50.0, filter=f, integer=integer)
    plan = mt.plan_central(tiers, m["family"], sensitivity=float(q.sensitivity), delta=m["delta"])
    page = mt.release_central(plan, q.value, rng=np.random.default_rng(SEED), seed=SEED, reveal=True,
                              records=q.mask, query=q.label)  # as ui.analyst_tiers releases it
    _same_estimates(ns["rel"], page)
    pd.testing.assert_frame_equal(ns["plan"].table(), plan.table())
    local = _study(mechanisms=[{"kind": "multitier", "model": "local", "measure": "EMP", "d": 4, "seed": SEED}])
    ns = _run(local, "multitier", in_tmp)
    lm = local.mechanisms[0]
    codes, labels = mt.local_categories(ds.table, "EMP", 4, scale=lm["scale"], top=lm.get("top"), filter=None)
    lplan = mt.plan_local(local.tiers(), len(labels), variant=lm["variant"])
    lpage = mt.release_local(lplan, codes, rng=np.random.default_rng(SEED), seed=SEED, reveal=True, labels=labels)
    _same_estimates(ns["rel"], lpage)


def test_granular_part_runs_the_histogram_lab(study, ds, in_tmp):
    ns = _run(study, "granular", in_tmp)
    rng = np.random.default_rng(SEED)  # the lab: one generator for both histograms
    data = granular.encode_attributes(ds.table, ["STATE", "NAICS2", "EMP"], granular.sample_domains("cbp_like"))
    hh = granular.heavy_hitter_histogram(data, eps0=0.5, nu=0.01, method="exact", rng=rng, seed=SEED, reveal=True)
    std = granular.standard_histogram(data, eps=0.5, rng=rng, seed=SEED, reveal=True)
    pd.testing.assert_frame_equal(ns["hh"].answers, hh.answers)
    pd.testing.assert_frame_equal(ns["std"].answers, std.answers)


def test_granular_part_on_generated_records_matched_to_the_whole_record_loss(in_tmp):
    lab = _study(app={"concepts": {"hl_source": "generated", "hl_n": 2000, "hl_d": 6, "hl_patterns": 3,
                                   "hl_match": "record"}})
    code = snippet(lab, "granular")
    assert "load_dataset" not in code  # generated records: the active data is not read
    ns = _run(lab, "granular", in_tmp)
    rng = np.random.default_rng(SEED)
    data = granular.synthetic_attribute_data(2000, 6, patterns=3, heavy_share=0.5, rng=rng)
    hh = granular.heavy_hitter_histogram(data, eps0=1.0, nu=0.01, method="exact", rng=rng, seed=SEED, reveal=True)
    std = granular.standard_histogram(data, eps=float(hh.extras["whole_record"]), rng=rng, seed=SEED, reveal=True)
    pd.testing.assert_frame_equal(ns["std"].answers, std.answers)


def test_tradeoffs_part_sweeps_and_solves_as_the_page(study, ds, in_tmp):
    ns = _run(study, "tradeoffs", in_tmp)
    pol = study.splitting_policy(ds.table)
    grid = sweeps.percentile_grid(ds.table, ["EMP"], [90.0, 99.0])
    errors, losses = sweeps.sweep(ds.table, pol, grid, [0.5, 2.0], min_count=5, labels=["p90", "p99"])
    pd.testing.assert_frame_equal(ns["losses"], losses)
    pd.testing.assert_frame_equal(ns["errors"], errors)
    pd.testing.assert_frame_equal(ns["errs"], analysis.workload_errors(ds.table, pol, gamma=0.95, min_count=5))
    sol = budget_solver.solve_budget(ds.table, pol, target=0.2, gamma=0.95, share=0.95, min_count=5)
    assert ns["solution"].describe() == sol.describe()


def test_a_part_without_its_mechanism_or_unknown_is_refused(study):
    bare = _study(mechanisms=[])
    for part in ("run", "budget", "personalized", "multitier"):
        with pytest.raises(ConfigError, match="no .* mechanism"):
            snippet(bare, part)
    with pytest.raises(ConfigError, match="No snippet part"):
        snippet(study, "everything")


def test_personalized_part_on_the_sample_of_a_dataset_held_by_duckdb(ds, in_tmp):
    """A page whose mechanisms need the records works on a labelled sample of a large table: so does its code,
    reading the file in place from the data folder (confined to it)."""
    folder = in_tmp / "data"
    folder.mkdir()
    ds.table.to_parquet(folder / "firms.parquet", index=False)
    held = _study(data={"path": "firms.parquet", "engine": "duckdb",
                        "schema": {"id": "ESTAB_ID", "measures": ["EMP"], "groups": ["STATE"], "owner": "FIRM_ID"}})
    code = snippet(held, "personalized", data_dir=str(folder), sample=(500, 3))
    assert "confine=True" in code and "ds.sample(500, seed=3)" in code
    ns = _run(held, "personalized", in_tmp, data_dir=str(folder), sample=(500, 3))
    smp = engines.open_dataset(str(folder / "firms.parquet"), engine="duckdb",
                               schema=held.data.schema).sample(500, seed=3)
    m = held.mechanisms[2]
    page = pdp_mechanism(m).release(smp.table, held.privacy_spec(smp.table),
                                    personalized.PersonalizedQuery(**m["query"]), rng=np.random.default_rng(SEED),
                                    seed=SEED, reveal=True)
    assert ns["ds"].n == 500
    _same_estimates(ns["rel"], page)
