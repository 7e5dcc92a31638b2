"""Multi-tier release benchmark: planning and releasing 20 tiers for 1,000,000 users (local model, d = 128).

Target (issue "Multi-tier release"): planning + releasing in under 2 s on the project machine.
The release simulates every user's reports exactly (epochs of the template chain, see
prdp_core.mechanisms.multitier.simulation) and debiases each tier's column counts.

Run: .venv/bin/python benchmarks/bench_multitier.py [--users N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, row, timed  # noqa: E402

from prdp_core.mechanisms import multitier as mt  # noqa: E402

LISTS = {
    "grid(0.4): ε = 0.4, 0.8, …, 8.0": [0.4 * i for i in range(20, 0, -1)],
    "grid(0.8): ε = 0.8, 1.6, …, 16": [0.8 * i for i in range(20, 0, -1)],
}


def users(n: int, d: int, seed: int = 0) -> np.ndarray:
    """n users' categories, Zipf-like over d categories (a skewed histogram, as real data)."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, d + 1) ** 1.1
    return rng.choice(d, size=n, p=w / w.sum())


def events_per_user(plan: mt.LocalPlan, x: np.ndarray, seed: int = 1) -> tuple[float, float]:
    """Element draws per user done by the stream, and those saved by the one-size epoch shortcut."""
    uniq, sizes, keep = plan.chain()
    xc = np.bincount(x, minlength=plan.d)
    first, fresh = mt.epoch_counts(keep, xc, rng=np.random.default_rng(seed))
    T = len(sizes)
    total = saved = 0.0
    for s in range(T):
        for e in range(s, T):
            total += fresh[s, e] * sizes[e]
            if sizes[s] == sizes[e]:
                saved += fresh[s, e] * sizes[e]
    for e in range(T):
        total += first[:, e].sum() * (sizes[e] - 1)
        if sizes[e] == sizes[0]:
            saved += first[:, e].sum() * (sizes[e] - 1)
    return total / x.size, saved / x.size


def cpu_time(fn) -> float:
    """CPU seconds of one call (the machine is shared: wall time depends on the other jobs)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    x = users(args.users, args.d)
    print(f"Machine: {machine()}, load average {os.getloadavg()[0]:.1f}")
    print(f"Input: {args.users:,} users, d = {args.d}, 20 tiers per list, multi-tier Subset₂ᴸ\n")
    print("| step | median | best | note |")
    print("|---|---|---|---|")
    for name, eps in LISTS.items():
        tiers = [(f"t{i}", e) for i, e in enumerate(eps)]

        def plan():
            return mt.plan_local(tiers, args.d)

        t_plan, b_plan, p = timed(plan, repeat=args.repeat)
        rng = np.random.default_rng(0)

        def release():
            return mt.release_local(p, x, rng=rng, seed=0)

        def both():
            return mt.release_local(mt.plan_local(tiers, args.d), x, rng=rng, seed=0)

        t_rel, b_rel, _ = timed(release, repeat=args.repeat)
        t_all, b_all, _ = timed(both, repeat=args.repeat, warmup=0)
        ev, saved = events_per_user(p, x)
        print(row(f"{name}: plan", t_plan, b_plan, f"{len(p.templates)} templates, {len(set(p.served))} served"))
        print(row(f"{name}: release", t_rel, b_rel, f"{ev:.1f} elements per user, {saved:.1f} of them "
                                                    "aggregated without per-user work"))
        verdict = "met" if t_all < 2.0 else "NOT met"
        cpu = cpu_time(both)
        print(row(f"{name}: plan + release", t_all, b_all, f"target < 2 s: {verdict}; CPU {cpu:.2f} s"))
    eps = LISTS["grid(0.4): ε = 0.4, 0.8, …, 8.0"]
    p = mt.plan_local([(f"t{i}", e) for i, e in enumerate(eps)], args.d)
    for mech in ("grr", "brr"):
        rng = np.random.default_rng(0)
        t, b, _ = timed(lambda: mt.release_local(p, x, rng=rng, mechanism=mech), repeat=args.repeat)
        print(row(f"grid(0.4): multi-tier {mech.upper()} release", t, b, "aggregate Markov chain (exact)"))
    # central: 20 tiers, one count, Algorithm 1 with Eq. (1) residuals
    tiers = [(f"t{i}", e) for i, e in enumerate(eps)]
    rng = np.random.default_rng(0)
    t, b, _ = timed(lambda: mt.release_central(mt.plan_central(tiers, "geometric"), 123_456, rng=rng),
                    repeat=args.repeat)
    print(row("central, grid(0.4): plan + release of one count", t, b, "two-sided geometric, Eq. (1)"))


if __name__ == "__main__":
    main()
