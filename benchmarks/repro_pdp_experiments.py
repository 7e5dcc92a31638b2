"""Reproduce the count and median experiments of the personalized DP paper (Sec. V-A, Table I).

Each configuration runs M, T, S, S-avg, PE (and Alag for count) ``--runs`` times (1,000 in
the paper), every run with a new synthetic dataset and a new generated specification,
and prints Markdown tables of RMSE (with a 95% interval for the default configuration).
The median experiments run twice: with the engine's black-box median (rank score,
sensitivity ½) and with the paper's change-count score (Eq. 3, sensitivity 1).

Run: .venv/bin/python benchmarks/repro_pdp_experiments.py [--runs 1000] [--seed 2015] [--quick]
(the numbers in docs/reproductions/personalized-dp.md come from the default command).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine  # noqa: E402

from prdp_core.mechanisms.personalized import ExperimentConfig, TierConfig, paper_experiment  # noqa: E402

ORDER = ["M", "T", "S", "S-avg", "PE", "Alag"]


def _table(rows: list[tuple[str, dict[str, float]]], head: str) -> str:
    mechs = [m for m in ORDER if any(m in r for _, r in rows)]
    out = [f"| {head} | " + " | ".join(mechs) + " | best |", "|---" * (len(mechs) + 2) + "|"]
    for label, r in rows:
        best = min((v, k) for k, v in r.items())[1]
        out.append(f"| {label} | " + " | ".join(f"{r[m]:.1f}" if m in r else "–" for m in mechs) + f" | {best} |")
    return "\n".join(out)


def _run(task: str, cfg: ExperimentConfig, runs: int, seed: int) -> dict[str, float]:
    df = paper_experiment(task, runs=runs, rng=np.random.default_rng(seed), config=cfg)
    return dict(zip(df["mechanism"], df["rmse"]))


def default_table(task: str, cfg: ExperimentConfig, runs: int, seed: int) -> str:
    df = paper_experiment(task, runs=runs, rng=np.random.default_rng(seed), config=cfg)
    df = df.set_index("mechanism").loc[[m for m in ORDER if m in set(df["mechanism"])]]
    lines = ["| mechanism | RMSE | 95% interval | mean error (bias) | neighbours |", "|---|---|---|---|---|"]
    for m, r in df.iterrows():
        lines.append(f"| {m} | {r.rmse:.2f} | {r.ci_low:.2f} – {r.ci_high:.2f} | {r.bias:+.2f} | {r.neighbours} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=2015)
    ap.add_argument("--quick", action="store_true", help="fewer sweep points")
    args = ap.parse_args()
    R, seed = args.runs, args.seed
    base = ExperimentConfig()
    paper_score = replace(base, median_score="changes")
    t0 = time.perf_counter()
    print(f"Machine: {machine()}. Runs per configuration: {R:,}; seed {seed}.\n")

    print("### Count, Table I defaults (n = 1,000, δ = 0.15, f_C = 0.54, f_M = 0.37, ε_C = 0.01, ε_M = 0.2)\n")
    print(default_table("count", base, R, seed) + "\n")
    print("### Median, Table I defaults (n = 1,001, μ = 500, σ = 200, R = 1..1000), engine black box (rank score)\n")
    print(default_table("median", base, R, seed) + "\n")
    print("### Median, Table I defaults, the paper's black box (change-count score, Eq. 3)\n")
    print(default_table("median", paper_score, R, seed) + "\n")

    deltas = [0.01, 0.05, 0.15, 0.3, 0.5] if args.quick else [0.01, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5]
    rows = [(f"δ = {d:g}", _run("count", replace(base, density=d), R, seed + i)) for i, d in enumerate(deltas)]
    print("### Count RMSE vs density δ (Fig. 1a)\n\n" + _table(rows, "density") + "\n")

    ecs = [0.01, 0.05, 0.1, 0.2, 0.3] if args.quick else [0.01, 0.03, 0.05, 0.08, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5]
    rows = [(f"ε_C = {e:g}", _run("count", replace(base, tiers=TierConfig(eps_c=e, eps_m=0.5)), R, seed + i))
            for i, e in enumerate(ecs)]
    print("### Count RMSE vs ε_C, with ε_M = 0.5 (Fig. 1c)\n\n" + _table(rows, "ε_C") + "\n")

    fcs = [0.1, 0.3, 0.54, 0.6] if args.quick else [0.1, 0.2, 0.3, 0.4, 0.5, 0.54, 0.6]
    rows = [(f"f_C = {f:g}", _run("count", replace(base, tiers=TierConfig(f_c=f)), R, seed + i))
            for i, f in enumerate(fcs)]
    print("### Count RMSE vs f_C (Fig. 1b)\n\n" + _table(rows, "f_C") + "\n")

    sigmas = [100, 200, 500, 1000] if args.quick else [100, 200, 300, 500, 700, 1000]
    for label, cfg in (("engine black box", base), ("paper's change-count score", paper_score)):
        rows = [(f"σ = {s}", _run("median", replace(cfg, sigma=float(s)), R, seed + i)) for i, s in enumerate(sigmas)]
        print(f"### Median RMSE vs σ (Fig. 2a), {label}\n\n" + _table(rows, "σ") + "\n")

    ecs_m = [0.01, 0.1, 0.2, 0.3, 0.5] if args.quick else [0.01, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5]
    for label, cfg in (("engine black box", base), ("paper's change-count score", paper_score)):
        rows = [(f"ε_C = {e:g}", _run("median", replace(cfg, tiers=TierConfig(eps_c=e, eps_m=0.5)), R, seed + i))
                for i, e in enumerate(ecs_m)]
        print(f"### Median RMSE vs ε_C, with ε_M = 0.5 (Fig. 2c), {label}\n\n" + _table(rows, "ε_C") + "\n")

    rows = [(f"f_C = {f:g}", _run("median", replace(paper_score, tiers=TierConfig(f_c=f)), R, seed + i))
            for i, f in enumerate(fcs)]
    print("### Median RMSE vs f_C (Fig. 2b), paper's change-count score\n\n" + _table(rows, "f_C") + "\n")
    print(f"Total time: {time.perf_counter() - t0:,.0f} s")


if __name__ == "__main__":
    main()
