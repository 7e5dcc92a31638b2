"""The general PrDP framework's failure: forecast before the run against simulation.

For n = 10³ … 10⁶ and each preset budget of the app (constant ε = 1, and the paper's 10⁴/v,
500/ln⁴v, 8/√v; U = 10¹², ε̂ = 100) on Normal(50k, 50k) balances with β = 0.1, the sum's
predicted failure probability P(RE ≥ 50%) and median RE (``prdp_core.mechanisms.prdp.forecast``,
closed form, no records) are set beside the ones observed over ``--runs`` runs of Algorithm 2.
The forecast's model draws the records from the assumed distribution, so the runs do too: each
run uses a fresh data set for n ≤ 10⁴ (1,000 data sets), and 10⁷/n data sets share the runs
above (the data sets' variability is negligible there); every data set's per-domain statistics
are computed once and its runs are vectorised (``framework_trials``). The table also gives what
the app recommends (``outlook``) and, when it recommends a change, that change's predicted and
observed errors. ``--splits`` adds the investigation of Part 1's share of E (and of β), and
``--local`` the PrLDP framework (Algorithm 5, both threshold rules) for n = 10⁴ … 10⁶.

Usage::

    .venv/bin/python benchmarks/repro_prdp_forecast.py                 # the tables in docs/reproductions
    .venv/bin/python benchmarks/repro_prdp_forecast.py --runs 1000 --seed 0 --splits --local
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prdp_core.mechanisms import prdp  # noqa: E402
from prdp_core.mechanisms.prdp import local as prldp  # noqa: E402

NS = [1_000, 10_000, 100_000, 1_000_000]
PRESETS = ["constant", "inverse", "log", "sqrt"]
TITLES = {"constant": "constant ε = 1", "inverse": "10⁴/v", "log": "500/ln⁴v", "sqrt": "8/√v"}
ASSUMED = prdp.AssumedData.normal(5e4, 5e4)
SPLITS = [(0.5, 0.5), (1 / 3, 0.5), (0.25, 0.5), (1 / 6, 0.5), (0.1, 0.5), (0.25, 0.1)]


def budget_of(kind: str) -> prdp.BudgetFunction:
    return prdp.preset(kind, "v", U=1e12, eps_max=100.0)


def datasets(n: int, runs: int, seed: int) -> tuple[int, int]:
    """(data sets, runs per data set) for ``runs`` runs at n records."""
    k = min(runs, max(10, 10_000_000 // n))
    return k, max(1, math.ceil(runs / k))


def simulate(n: int, runs: int, seed: int, one: Callable[[pd.DataFrame, np.random.Generator, int], np.ndarray]
             ) -> np.ndarray:
    """Relative errors of ``runs`` runs, fresh Normal(50k, 50k) data sets (see the module docstring)."""
    k, per = datasets(n, runs, seed)
    out = []
    for d in range(k):
        v = prdp.normal_balances(n, 5e4, 5e4, rng=np.random.default_rng([seed, n, d])) + 0.0  # −0.0 → 0.0
        data = pd.DataFrame({"v": v})
        out.append(one(data, np.random.default_rng([seed, n, d, 1]), per))
    return np.concatenate(out)[:runs]


def framework_errors(bud: prdp.BudgetFunction, **split: float) -> Callable[..., np.ndarray]:
    def one(data: pd.DataFrame, rng: np.random.Generator, trials: int) -> np.ndarray:
        p = prdp.prepare(data, bud, "sum:v")
        est = prdp.framework_trials(p, beta=0.1, rng=rng, trials=trials, **split)[0]
        return np.abs(est - p.truth()) / p.truth()
    return one


def remedy_errors(bud: prdp.BudgetFunction, change: dict[str, Any]) -> Callable[..., np.ndarray]:
    """The simulation of a remedy of :func:`prdp_core.mechanisms.prdp.remedies.outlook` (central sums)."""
    if "method" in change:
        def one(data: pd.DataFrame, rng: np.random.Generator, trials: int) -> np.ndarray:
            return prdp.simulate(data, bud, "sum:v", change["method"], beta=0.1, trials=trials, rng=rng)
        return one
    if "eps_share" in change:
        return framework_errors(bud, eps_share=change["eps_share"], beta_share=change["beta_share"])
    if "eps_max" in change:
        return framework_errors(bud.with_bounds(eps_min=bud.eps_min, eps_max=change["eps_max"]))
    if "U" in change:
        return framework_errors(bud.with_bounds(eps_max=bud.eps_max, U=change["U"]))
    return framework_errors(bud.scaled(change["budget_factor"]))


def pct(x: float) -> str:
    if not math.isfinite(x):
        return "∞"
    return f"{100 * x:.3g}"


def main_table(runs: int, seed: int) -> tuple[list[str], float]:
    lines = ["| n | budget | predicted P(RE ≥ 50%) | observed | difference | predicted median RE (%) | "
             f"observed (%) | the app recommends | its predicted P(fail) / median RE (%) | observed ({runs} runs) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    worst = 0.0
    for n in NS:
        for kind in PRESETS:
            bud = budget_of(kind)
            o = prdp.outlook(bud, ASSUMED, n, "sum", beta=0.1)
            f = o.forecast
            re = simulate(n, runs, seed, framework_errors(bud))
            obs = float(np.mean(re >= 0.5))
            worst = max(worst, abs(obs - f.failure))
            rec, rec_pred, rec_obs = "the framework as designed", "", ""
            if o.likely_to_fail:
                if o.recommended is None:
                    rec = "none of the remedies works: more records"
                else:
                    r = o.recommended
                    rec = r.label + ("" if r.keeps_policy else " (changes the policy)")
                    rec_pred = f"{r.forecast.failure:.3f} / {pct(r.forecast.median_re)}"
                    rr = simulate(n, runs, seed + 1, remedy_errors(bud, r.change))
                    rec_obs = f"{float(np.mean(rr >= 0.5)):.3f} / {pct(float(np.median(rr)))}"
            lines.append(f"| {n:,} | {TITLES[kind]} | {f.failure:.3f} | {obs:.3f} | {abs(obs - f.failure):.3f} | "
                         f"{pct(f.median_re)} | {pct(float(np.median(re)))} | {rec} | {rec_pred} | {rec_obs} |")
    return lines, worst


def split_table(runs: int, seed: int) -> tuple[list[str], float]:
    head = " | ".join(f"s = {s:.3g}, β₁ = {b:g}β" for s, b in SPLITS)
    lines = [f"| n | budget | {head} |", "|---|---|" + "---|" * len(SPLITS)]
    worst = 0.0
    for n in NS:
        for kind in PRESETS[1:]:
            bud = budget_of(kind)
            cells = []
            for s, b in SPLITS:
                f = prdp.forecast(bud, ASSUMED, n, "sum", beta=0.1, eps_share=s, beta_share=b)
                re = simulate(n, runs, seed + 2, framework_errors(bud, eps_share=s, beta_share=b))
                obs = float(np.mean(re >= 0.5))
                worst = max(worst, abs(obs - f.failure))
                cells.append(f"{f.failure:.2f} ({obs:.2f}); {pct(f.median_re)} ({pct(float(np.median(re)))})")
            lines.append(f"| {n:,} | {TITLES[kind]} | " + " | ".join(cells) + " |")
    return lines, worst


def local_table(runs: int, seed: int) -> tuple[list[str], float]:
    lines = ["| n | budget | printed thresholds: P(RE ≥ 50%) predicted (observed); median RE % | tighter "
             "(Bernstein) thresholds | the app recommends |", "|---|---|---|---|---|"]
    worst = 0.0
    for n in NS[1:]:
        for kind in PRESETS[1:]:
            bud = budget_of(kind)
            cells = []
            for rule in ("paper", "bernstein"):
                f = prdp.forecast(bud, ASSUMED, n, "sum", beta=0.1, model="local", threshold=rule)

                def one(data: pd.DataFrame, rng: np.random.Generator, trials: int, rule: str = rule,
                        bud: prdp.BudgetFunction = bud) -> np.ndarray:
                    return prldp.simulate(data, bud, "sum:v", "framework", beta=0.1, trials=trials, rng=rng,
                                       threshold=rule)  # type: ignore[arg-type]
                re = simulate(n, runs, seed + 3, one)
                obs = float(np.mean(re >= 0.5))
                worst = max(worst, abs(obs - f.failure))
                cells.append(f"{f.failure:.3f} ({obs:.3f}); {pct(f.median_re)} ({pct(float(np.median(re)))})")
            o = prdp.outlook(bud, ASSUMED, n, "sum", beta=0.1, model="local")
            rec = "the framework as designed" if not o.likely_to_fail else \
                (o.recommended.label if o.recommended is not None else "none works")
            lines.append(f"| {n:,} | {TITLES[kind]} | " + " | ".join(cells) + f" | {rec} |")
    return lines, worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--splits", action="store_true", help="also the table of Part 1's share of E and β")
    ap.add_argument("--local", action="store_true", help="also the PrLDP framework (Algorithm 5)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    lines, worst = main_table(args.runs, args.seed)
    print("\n".join(lines))
    print(f"\nLargest difference between predicted and observed P(RE ≥ 50%): {worst:.3f}")
    if args.splits:
        lines, worst_s = split_table(args.runs, args.seed)
        print("\nP(RE ≥ 50%) predicted (observed); median RE % predicted (observed):\n")
        print("\n".join(lines))
        print(f"\nLargest difference (splits): {worst_s:.3f}")
    if args.local:
        lines, worst_l = local_table(args.runs, args.seed)
        print("\nPrLDP framework (Algorithm 5), sums:\n")
        print("\n".join(lines))
        print(f"\nLargest difference (local): {worst_l:.3f}")
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
