"""Unit-splitting release and sweep benchmark on the full county × NAICS workload of cbp_like.

Targets (issue "Unit-splitting releases and error trade-offs"): a 20-threshold × 5-ρ analytic
sweep over the full county × NAICS workload of a 100,000-row cbp_like in under 2 s; one
release of that workload in under 0.5 s.
Run: .venv/bin/python benchmarks/bench_unit_splitting.py [--rows N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, row, timed  # noqa: E402

import prdp_core  # noqa: E402
from prdp_core.core.splitting import as_thresholds  # noqa: E402
from prdp_core.core.workload import SplittingPolicy  # noqa: E402
from prdp_core.mechanisms import sweeps  # noqa: E402
from prdp_core.mechanisms.unit_splitting import release, workload_stats  # noqa: E402

MEASURES = ("EMP", "PAYANN", "PAYQTR1")
LEVELS = tuple(("COUNTY", f"NAICS{k}") for k in range(2, 7))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    ds = prdp_core.data.samples.load_dataset("cbp_like", n=args.rows, seed=0)
    wl = sweeps.level_workload(MEASURES, LEVELS, base_rho=1.0)
    pol = SplittingPolicy(as_thresholds({"EMP": 100, "PAYANN": 10_000, "PAYQTR1": 2_500}), wl)
    pcts = np.linspace(50, 99.9, 20)
    grid = sweeps.percentile_grid(ds.table, MEASURES, pcts)
    rhos = [0.1, 0.5, 1.0, 2.0, 10.0]
    sts = workload_stats(ds.table, pol)
    cells = sum(s.n_cells for s in sts)

    def sweep():
        return sweeps.sweep(ds.table, pol, grid, rhos, min_count=100)

    def sweep_all_cells():
        return sweeps.sweep(ds.table, pol, grid, rhos, min_count=1)

    def one_release():
        return release(ds, pol, rng=np.random.default_rng(0), reveal=True, stats_=sts)

    def one_release_cold():
        return release(ds, pol, rng=np.random.default_rng(0), reveal=True)

    t_sw, b_sw, (_, losses) = timed(sweep, repeat=args.repeat)
    t_swa, b_swa, _ = timed(sweep_all_cells, repeat=max(1, args.repeat // 2))
    t_rel, b_rel, rel = timed(one_release, repeat=args.repeat)
    t_cold, b_cold, _ = timed(one_release_cold, repeat=args.repeat)
    print(f"Machine: {machine()}")
    print(f"Input: cbp_like, {ds.n:,} establishments; workload COUNT + SUM(EMP, PAYANN, PAYQTR1) by county × "
          f"NAICS2..6 = {len(wl.queries)} queries, {cells:,} cells")
    print("| step | median | best | note |")
    print("|---|---|---|---|")
    print(row("sweep 20 thresholds × 5 ρ (cells ≥ 100 establishments)", t_sw, b_sw,
              f"target < 2 s: {'met' if t_sw < 2 else 'MISSED'}"))
    print(row("sweep 20 thresholds × 5 ρ (all cells)", t_swa, b_swa, ""))
    print(row("one release (sufficient statistics cached)", t_rel, b_rel,
              f"{len(rel.answers):,} answers; target < 0.5 s: {'met' if t_rel < 0.5 else 'MISSED'}"))
    print(row("one release from scratch (statistics + owners' realized loss)", t_cold, b_cold, ""))


if __name__ == "__main__":
    main()
