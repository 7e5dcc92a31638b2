"""Personalized DP benchmark: every mechanism on 100,000 users, one release each.

Target (issue "Personalized DP lab"): each mechanism under 1 s on 100,000 users.
The table has integer values (heavy-tailed, like employment counts) and a generated
three-tier specification (Sec. V defaults); a second PE median run uses 100,000
distinct ε values (the worst case for the score computation).
Run: .venv/bin/python benchmarks/bench_personalized.py [--users N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, row, timed  # noqa: E402

from prdp_core.mechanisms.personalized import (  # noqa: E402
    PE,
    Minimum,
    PersonalizedQuery,
    Sample,
    Stretching,
    Threshold,
    generate_tiers,
    spec_from_values,
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n = args.users
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"value": np.ceil(rng.lognormal(1.5, 1.5, n))})
    spec = generate_tiers(n, rng=rng)
    distinct = spec_from_values(rng.uniform(0.01, 1.0, n))
    queries = {
        "count": PersonalizedQuery("count", "value", cutoff=10),
        "sum": PersonalizedQuery("sum", "value", lo=0, hi=1000),
        "mean": PersonalizedQuery("mean", "value", lo=0, hi=1000),
        "median": PersonalizedQuery("median", "value", lo=0, hi=100_000),
        "min": PersonalizedQuery("min", "value", lo=0, hi=100_000),
    }
    mechs = {"M": Minimum(), "T": Threshold(), "S": Sample(), "S-avg": Sample("mean"), "PE": PE(),
             "Alag": Stretching()}
    print(f"Machine: {machine()}. Users: {n:,} (one tuple each), generated tiers; median of {args.repeat} runs.\n")
    print("| mechanism · query | median | best | note |")
    print("|---|---|---|---|")
    worst = 0.0
    for qname, q in queries.items():
        for mname, m in mechs.items():
            if q.kind not in m.kinds:
                continue
            med, best, _ = timed(lambda: m.release(table, spec, q, rng=rng), repeat=args.repeat)
            worst = max(worst, med)
            print(row(f"{mname} · {qname}", med, best, "full release (spec lookup, answer, ledger entry)"))
    for qname in ("median", "count"):
        med, best, _ = timed(lambda: PE().release(table, distinct, queries[qname], rng=rng), repeat=args.repeat)
        worst = max(worst, med)
        print(row(f"PE · {qname}, {n:,} distinct ε", med, best, "worst case for the d_f computation"))
    print(f"\nSlowest release: {worst * 1000:,.1f} ms — target < 1 s: {'met' if worst < 1 else 'NOT met'}")


if __name__ == "__main__":
    main()
