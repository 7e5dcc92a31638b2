"""Histogram lab benchmark: the heavy-hitter histogram (Theorem 15) and the standard histogram.

Target (issue "Granular DP and the teaching calculators"): interactive speed for d up to a
few hundred binary attributes — under 2 s per heavy-hitter histogram at n = 100,000.
Also times the exact accountant and the calibration (which the page calls on every rerun).
Run: .venv/bin/python benchmarks/bench_granular.py [--n N] [--repeat R]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, peak_memory, row, timed  # noqa: E402

from prdp_core.mechanisms import granular  # noqa: E402
from prdp_core.mechanisms.granular import calibration  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"Machine: {machine()}")
    print(f"Input: synthetic binary records, n = {args.n:,}, 20 patterns holding 50% of the records; "
          "ε0 = 1, ν = 0.01, exact calibration")
    print("| step | median | best | note |")
    print("|---|---|---|---|")
    t, b, _ = timed(lambda: granular.hh_epsilon_exact(5.7, 5.7 * math.log(1600), 8), repeat=args.repeat)
    print(row("exact accountant, L = 8 levels", t, b))
    t, b, _ = timed(lambda: calibration._calibrate.__wrapped__(1.0, 0.01, 8, "exact", 0.5), repeat=args.repeat)
    print(row("exact calibration (uncached), L = 8", t, b))
    for d in (16, 64, 256, 512):
        data = granular.synthetic_attribute_data(args.n, d, patterns=20, heavy_share=0.5,
                                                rng=np.random.default_rng(0))
        granular.calibrate_heavy_hitter_histogram(1.0, 0.01, d)  # cached, as in the app
        t, b, rel = timed(lambda: granular.heavy_hitter_histogram(data, eps0=1.0, nu=0.01,
                                                                 rng=np.random.default_rng(1)),
                          repeat=args.repeat)
        mem, _ = peak_memory(lambda: granular.heavy_hitter_histogram(data, eps0=1.0, nu=0.01,
                                                                    rng=np.random.default_rng(1)))
        target = "target < 2 s: " + ("met" if t < 2 else "MISSED")
        print(row(f"heavy-hitter histogram, d = {d}", t, b,
                  f"{len(rel.answers)} cells published, peak {mem:,.0f} MB; {target}"))
        t, b, rel = timed(lambda: granular.standard_histogram(data, eps=1.0, rng=np.random.default_rng(1)),
                          repeat=args.repeat)
        print(row(f"standard histogram, d = {d}", t, b, f"{len(rel.answers)} cells published (2^{d} cells)"))
        t, b, acc = timed(lambda: granular.histogram_accuracy(data, rel, 0.01), repeat=args.repeat)
        print(row(f"accuracy vs truth, d = {d}", t, b, f"{acc['occupied_cells']:,} occupied cells"))


if __name__ == "__main__":
    main()
