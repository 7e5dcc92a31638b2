"""Policy-designer benchmark: split counts + policy-loss CDF for 10,000,000 records × 3 measures.

Targets (issue "Per-record zCDP policy designer"): under 1 s, and within 3× of a bare numpy
ceil/max over the same arrays measured in the same run.
Run: .venv/bin/python benchmarks/bench_policy.py [--rows N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, row, timed  # noqa: E402

from prdp_core.core.splitting import as_thresholds, split_counts  # noqa: E402
from prdp_core.core.workload import SplittingPolicy, default_workload  # noqa: E402
from prdp_core.data.dataset import Dataset, Schema  # noqa: E402
from prdp_core.mechanisms.preview import preview_policy  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n = args.rows
    rng = np.random.default_rng(0)
    table = pd.DataFrame({
        "id": np.arange(n),
        "EMP": np.ceil(rng.lognormal(1.0, 1.9, n)),
        "PAYANN": np.round(rng.lognormal(4.6, 1.95, n)),
        "PAYQTR1": np.round(rng.lognormal(3.2, 1.96, n)),
    })
    thr = {"EMP": 100.0, "PAYANN": 10_000.0, "PAYQTR1": 2_500.0}
    arrays = [table[m].to_numpy() for m in thr]
    tvals = list(thr.values())

    def bare() -> np.ndarray:
        m = np.ones(n)
        for v, t in zip(arrays, tvals):
            np.maximum(m, np.ceil(v / t), out=m)
        return m

    def counts() -> np.ndarray:
        return split_counts(table, thr)

    ds = Dataset("bench", table, Schema(id_col="id", measures=tuple(thr)))
    pol = SplittingPolicy(as_thresholds(thr), default_workload(tuple(thr), rho_count=0.25, rho_sum=0.25))

    def counts_and_cdf():
        prev = preview_policy(ds, pol, pieces=split_counts(table, thr))
        return prev.record_cdf()

    t_bare, b_bare, ref = timed(bare, repeat=args.repeat)
    t_cnt, b_cnt, m = timed(counts, repeat=args.repeat)
    t_all, b_all, (x, y) = timed(counts_and_cdf, repeat=args.repeat)
    assert (m == ref).all()
    print(f"Machine: {machine()}")
    print(f"Input: {n:,} records × 3 measures (log-normal, CBP-like scales), thresholds {thr}")
    print("| step | median | best | note |")
    print("|---|---|---|---|")
    print(row("bare numpy ceil/max (baseline)", t_bare, b_bare))
    print(row("split_counts (validated, exact guard)", t_cnt, b_cnt, f"{t_cnt / t_bare:.2f}× baseline"))
    print(row("split_counts + preview + policy-loss CDF", t_all, b_all,
              f"{t_all / t_bare:.2f}× baseline; target < 1 s and ≤ 3×: "
              f"{'met' if t_all < 1 and t_all <= 3 * t_bare else 'MISSED'}; {len(x)} CDF steps"))


if __name__ == "__main__":
    main()
