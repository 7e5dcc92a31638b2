"""Memory models of the heavy steps (prdp_core.data.memory.STEPS) against their measured peaks.

Each heavy step the app guards runs once on a firms-like table (establishment id, firm, county,
two heavy-tailed measures), measured with tracemalloc (Python and numpy allocations). The table
prints the model's estimate, the measured peak and their ratio: a ratio ≥ 1 means the model does
not understate the step.

Run: .venv/bin/python benchmarks/bench_memory.py [--rows 200000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sessions import make_csv  # noqa: E402
from common import machine, peak_memory  # noqa: E402

import prdp_core  # noqa: E402
from prdp_core.core.splitting import as_thresholds  # noqa: E402
from prdp_core.core.workload import SplittingPolicy, default_workload  # noqa: E402
from prdp_core.data import memory  # noqa: E402
from prdp_core.mechanisms import granular, prdp, sweeps  # noqa: E402
from prdp_core.mechanisms import multitier as mt  # noqa: E402
from prdp_core.mechanisms.personalized import PersonalizedQuery, TierConfig, compare, generate_tiers_for  # noqa: E402
from prdp_core.mechanisms.preview import preview_policy  # noqa: E402
from prdp_core.mechanisms.unit_splitting import release, workload_stats  # noqa: E402
from prdp_core.review import report as R  # noqa: E402


def policy_for(ds: prdp_core.Dataset) -> SplittingPolicy:
    """The app's default policy for an upload: COUNT + one SUM per measure by the first group, 99th pct."""
    thr = {m: float(np.quantile(ds.table[m], 0.99)) for m in ds.schema.measures}
    wl = default_workload(ds.schema.measures, ds.schema.groups[:1], rho_count=0.5,
                          rho_sum=0.5 / len(ds.schema.measures))
    return SplittingPolicy(as_thresholds(thr), wl)


REPORT_CONFIG = """version: 1
mode: teaching
data:
  path: firms.csv
  schema: {id: estab_id, measures: [emp, payroll], groups: [county], owner: firm}
policy:
  thresholds: {emp: 100, payroll: 5000}
  budget: {preset: inverse, column: payroll, alpha: 10000}
workload:
  queries:
    - {kind: count, group_by: [county], rho: 0.5}
    - {kind: sum, measure: emp, group_by: [county], rho: 0.5}
    - {kind: sum, measure: payroll, group_by: [county], rho: 0.5}
mechanisms:
  - kind: unit_splitting
  - kind: prdp
    column: payroll
"""


def steps(rows: int) -> list[tuple[str, str, float, Callable[[], Any]]]:
    """(step, input, model estimate in MB, the call the app guards with that model)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "firms.csv"
        make_csv(path, rows, seed=0)
        data = path.read_bytes()
    df = prdp_core.load_table(data, filename="firms.csv")
    schema = prdp_core.data.guess_schema(df)
    ds = prdp_core.prepare_dataset(df, schema, name="firms.csv")
    n, k = ds.n, len(ds.schema.measures) + len(ds.schema.groups) + 3
    pol = policy_for(ds)
    spec = generate_tiers_for(ds.table, TierConfig(), rng=np.random.default_rng(0))
    q = PersonalizedQuery("median", column="payroll", lo=0.0, hi=float(np.quantile(ds.table["payroll"], 0.99)))
    grid = sweeps.percentile_grid(ds.table, list(ds.schema.measures), (99, 97, 95, 90, 80))
    codes, labels = mt.local_categories(ds.table, "payroll", 16, scale="log", top=1e6)
    tiers = {f"tier {i}": 0.4 * (i + 1) for i in range(20)}
    attrs = granular.synthetic_attribute_data(n, 64, rng=np.random.default_rng(0))
    study = R.parse_config(REPORT_CONFIG)
    est = memory.estimate_mb

    def lab() -> Any:
        hh = granular.heavy_hitter_histogram(attrs, eps0=1.0, rng=np.random.default_rng(0), seed=0, reveal=True)
        std = granular.standard_histogram(attrs, eps=1.0, rng=np.random.default_rng(0), seed=0, reveal=True)
        return [granular.histogram_accuracy(attrs, r, 0.01) for r in (hh, std)]

    def report() -> Any:
        run = R.run_study(study, dataset=ds)
        return R.render_html(run, config_text=REPORT_CONFIG), R.results_frame(run.releases, teaching=True)

    return [
        ("load", f"{len(data) / 2**20:.1f} MB file", est("load", len(data)),
         lambda: prdp_core.load_table(data, filename="firms.csv")),
        ("prepare", f"{n:,} × {df.shape[1]}", est("prepare", len(df), df.shape[1]),
         lambda: (prdp_core.data.check_table(df, prdp_core.data.guess_schema(df)),
                  prdp_core.prepare_dataset(df, schema, name="firms.csv"))),
        ("sample", f"cbp_like, {n:,} × 12", est("sample", n, 12),
         lambda: prdp_core.data.samples.load_dataset("cbp_like", n=n, seed=0)),
        ("preview", f"{n:,} × {k}", est("preview", n, k), lambda: preview_policy(ds, pol).summary()),
        ("release", f"unit splitting, {n:,} × {k}", est("release", n, k),
         lambda: release(ds, pol, rng=np.random.default_rng(0), reveal=True, stats_=workload_stats(ds.table, pol))),
        ("release", f"local multi-tier, {n:,} users × (20 tiers + 10)", est("release", n, len(tiers) + 10),
         lambda: mt.release_local(mt.plan_local(tiers, len(labels)), codes, rng=np.random.default_rng(0), seed=0,
                                  reveal=True, labels=labels)),
        ("sweep", f"{n:,} × {k}, {len(grid) * 5} points", est("sweep", n, k),
         lambda: sweeps.sweep(ds.table, pol, grid, (0.1, 0.3, 1, 3, 10), min_count=10)),
        ("simulation", f"{n:,} users, median, 200 runs", est("simulation", n),
         lambda: compare(ds.table, spec, q, runs=200, rng=np.random.default_rng(0))),
        ("scaling", "vary n up to 10⁶, 20 runs", est("scaling", max(prdp.SCALING_DEFAULTS["n"])),
         lambda: prdp.scaling_study("n", trials=20, seed=0)),
        ("histogram", f"{n:,} records × 64 attributes", est("histogram", n, 64 + 64), lab),
        ("report", f"{n:,} × {k} × 2 mechanisms", est("report", n, k * 2), report),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    args = ap.parse_args()
    print(f"Machine: {machine()}")
    print(f"Input: firms-like CSV, {args.rows:,} rows × 5 columns (id, firm, county, emp, payroll)")
    print("| step | input | model estimate | measured peak | estimate ÷ peak |")
    print("|---|---|---|---|---|")
    for step, what, est, fn in steps(args.rows):
        peak, _ = peak_memory(fn)
        print(f"| {step} | {what} | {est:,.0f} MB | {peak:,.0f} MB | {est / peak:.2f} |")


if __name__ == "__main__":
    main()
