"""Speed of the general PrDP framework (prdp_core.mechanisms.prdp).

Targets: Algorithm 1 count, framework sum and framework max on 200,000 records each under
50 ms (the paper reports about 1 s per release on a desktop CPU, Table 3), and framework
sum on 10,000,000 records under 2 s. Every timing starts from the table: the budget
E(r) = 10⁴ / v is evaluated, domains assigned and the release built (per-record losses
included).

Usage: ``.venv/bin/python benchmarks/bench_prdp.py [--repeat 7] [--secure]``; ``--secure`` times the
secure paths instead (exact OpenDP samplers; no targets, a cost to know).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import machine, peak_memory, row, timed  # noqa: E402

import prdp_core  # noqa: E402
from prdp_core.mechanisms import prdp  # noqa: E402
from prdp_core.mechanisms.prdp import local as prldp  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--secure", action="store_true", help="time the secure paths (exact OpenDP samplers)")
    a = ap.parse_args()
    if a.secure:
        return secure_cases(a.repeat)
    rng = np.random.default_rng(0)
    budget = prdp.inverse(1e4, "BALANCE")
    df = prdp_core.data.samples.load("bank_normal_50k", n=200_000, seed=0)
    big = pd.DataFrame({"BALANCE": prdp.normal_balances(10_000_000, 5e4, 5e4, rng=np.random.default_rng(1))})
    expr = prdp.parse_budget("1e4 / max(BALANCE, 1)")

    cases = [
        ("Algorithm 1 count, 200,000 records", lambda: prdp.count(budget(df), eps_min=budget.eps_min,
                                                               eps_max=budget.eps_max, beta=0.1, rng=rng),
         a.repeat, 0.05),
        ("framework sum, 200,000 records", lambda: prdp.framework(df, budget, "sum", beta=0.1, rng=rng),
         a.repeat, 0.05),
        ("framework max, 200,000 records", lambda: prdp.framework(df, budget, "max", beta=0.1, rng=rng),
         a.repeat, 0.05),
        ("framework sum, expression budget, 200,000", lambda: prdp.framework(df, expr, "sum", beta=0.1, rng=rng),
         a.repeat, None),
        ("Sec. 5.2 sum extension, 200,000 records", lambda: prdp.sum_extension(df, budget, beta=0.1, rng=rng),
         a.repeat, None),
        ("framework distinct count, 200,000 records",
         lambda: prdp.framework(df, budget, "distinct:BRANCH", beta=0.1, rng=rng), a.repeat, None),
        ("PrLDP framework sum (Alg. 5), 200,000 parties",
         lambda: prldp.framework(df, budget, "sum", beta=0.1, rng=rng), a.repeat, None),
        ("framework sum, 10,000,000 records", lambda: prdp.framework(big, budget, "sum", beta=0.1, rng=rng),
         max(3, a.repeat // 2), 2.0),
        ("simulation: 50 runs of framework sum, 200,000", lambda: prdp.simulate(
            df, budget, "sum", "framework", beta=0.1, trials=50, rng=rng), a.repeat, None),
    ]
    print(f"Machine: {machine()}. Load average at start: {os.getloadavg()[0]:.1f} (2 cores shared).\n")
    print("| step | median | best | note |")
    print("|---|---|---|---|")
    for name, fn, rep, target in cases:
        med, best, _ = timed(fn, repeat=rep)
        note = "" if target is None else f"target < {target * 1000:,.0f} ms: {'met' if med < target else 'MISSED'}"
        print(row(name, med, best, note), flush=True)
    mem, _ = peak_memory(lambda: prdp.framework(big, budget, "sum", beta=0.1, rng=rng))
    print(f"\nPeak memory of one framework sum on 10,000,000 records (input table excluded): {mem:,.0f} MB. "
          f"Load average at the end: {os.getloadavg()[0]:.1f}.")


def secure_cases(repeat: int) -> None:
    """The secure paths: central releases on 200,000 records, PrLDP (every party's report drawn
    exactly) on 20,000 parties with E = 10⁴/v, ε̂ = 100, U = 10⁶ (L = 14 domains)."""
    budget = prdp.inverse(1e4, "BALANCE")
    df = prdp_core.data.samples.load("bank_normal_50k", n=200_000, seed=0)
    local_budget = prdp.inverse(1e4, "BALANCE", eps_max=100.0, U=1e6)
    parties = prdp_core.data.samples.load("bank_normal_50k", n=20_000, seed=0)
    cases = [
        ("secure framework sum, 200,000 records", lambda: prdp.framework(df, budget, "sum", beta=0.1, secure=True)),
        ("secure Sec. 5.2 sum extension, 200,000 records",
         lambda: prdp.sum_extension(df, budget, beta=0.1, secure=True)),
        ("secure naive sum, 200,000 records", lambda: prdp.naive(df, budget, "sum", beta=0.1, secure=True)),
        ("secure PrLDP count (Alg. 3–4), 20,000 parties × 14 domains",
         lambda: prldp.count(local_budget(parties), eps_min=local_budget.eps_min, eps_max=local_budget.eps_max,
                             beta=0.1, secure=True)),
        ("secure PrLDP framework sum (Alg. 5), 20,000 parties",
         lambda: prldp.framework(parties, local_budget, "sum", beta=0.1, secure=True)),
        ("secure PrLDP naive sum, 20,000 parties", lambda: prldp.naive(parties, local_budget, "sum", beta=0.1,
                                                                      secure=True)),
    ]
    print(f"Machine: {machine()}. Load average at start: {os.getloadavg()[0]:.1f} (2 cores shared).\n")
    print("| step | median | best | note |")
    print("|---|---|---|---|")
    for name, fn in cases:
        med, best, _ = timed(fn, repeat=repeat)
        print(row(name, med, best, ""), flush=True)
    print(f"\nLoad average at the end: {os.getloadavg()[0]:.1f}.")


if __name__ == "__main__":
    main()
