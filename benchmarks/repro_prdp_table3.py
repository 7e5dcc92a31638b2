"""Reproduce the synthetic columns of Table 3 of the general PrDP framework paper.

Protocol of Sec. 8.1: E(r) = 10⁴ / v, ε̂ = 100, U = 10¹², ε̌ = E(U), β = 0.1, 50 runs per
cell, relative error (RE) averaged after dropping the top and bottom 20% of the runs;
the max is scored by rank error (records above the answer, / n; an answer above Max(D)
scores its relative overshoot). Times are the median wall time of one release.

Usage::

    .venv/bin/python benchmarks/repro_prdp_table3.py            # the table in docs/reproductions
    .venv/bin/python benchmarks/repro_prdp_table3.py --runs 50 --seed 0 --local --scaled-zipf
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import prdp_core  # noqa: E402
from prdp_core.mechanisms import prdp  # noqa: E402
from prdp_core.mechanisms.prdp import local as prldp  # noqa: E402

DATASETS = ["bank_normal_50k", "bank_normal_500k", "bank_zipf_b3", "bank_zipf_b5"]
TITLES = {"bank_normal_50k": "Normal μ=σ=50k", "bank_normal_500k": "Normal μ=σ=500k",
          "bank_zipf_b3": "Zipf a=1, b=3", "bank_zipf_b5": "Zipf a=1, b=5"}
#: Table 3 (RE %), synthetic columns, in DATASETS order
PAPER = {
    ("count", "naive"): [">100"] * 4,
    ("count", "PrDP count (Alg. 1)"): [0.0138, 0.279, 0.00941, 0.0196],
    ("sum", "naive"): [100.0] * 4,
    ("sum", "PrDP extension (Sec. 5.2)"): [0.0358, 0.967, 0.198, 0.321],
    ("sum", "PrDP framework (Alg. 2)"): [0.187, 1.65, 1.04, 0.544],
    ("max", "naive"): [">100"] * 4,
    ("max", "PrDP framework (Alg. 2)"): [0.738, 6.15, 0.734, 0.387],
}
ROWS = [  # (query, label, simulate method, release function)
    ("count", "naive", "naive", lambda df, b, rng: prdp.naive(df, b, "count", beta=0.1, rng=rng)),
    ("count", "PrDP count (Alg. 1)", "count",
     lambda df, b, rng: prdp.count(b(df), eps_min=b.eps_min, eps_max=b.eps_max, beta=0.1, rng=rng)),
    ("sum", "naive", "naive", lambda df, b, rng: prdp.naive(df, b, "sum", beta=0.1, rng=rng)),
    ("sum", "PrDP extension (Sec. 5.2)", "extension", lambda df, b, rng: prdp.sum_extension(df, b, beta=0.1, rng=rng)),
    ("sum", "PrDP framework (Alg. 2)", "framework", lambda df, b, rng: prdp.framework(df, b, "sum", beta=0.1, rng=rng)),
    ("max", "naive", "naive", lambda df, b, rng: prdp.naive(df, b, "max", beta=0.1, rng=rng)),
    ("max", "PrDP framework (Alg. 2)", "framework", lambda df, b, rng: prdp.framework(df, b, "max", beta=0.1, rng=rng)),
]


def _fmt(x: float) -> str:
    if x == float("inf"):
        return "declined"
    if x >= 100:
        return f"{x:,.0f}" if x < 1e6 else f"{x:.2e}"
    return f"{x:.3g}"


def run(names: list[str], runs: int, seed: int, scale: float = 1.0, *, timing: bool = True
        ) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """RE (%) of every row of Table 3 on each named sample (balances × ``scale``), with the median
    time of one release (NaN without ``timing``). Seeds: ``[seed, dataset, row]`` where dataset is
    the sample's position in DATASETS, plus ``scale`` for rescaled samples, so no two cells share noise."""
    budget = prdp.inverse(1e4, "BALANCE")
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for name in names:
        k = DATASETS.index(name) if name in DATASETS else len(DATASETS) + names.index(name)
        df = prdp_core.data.samples.load(name)
        if scale != 1.0:
            df = df.assign(BALANCE=df.BALANCE * scale)
        for r, (query, label, method, release) in enumerate(ROWS):
            key = [seed, k, r] if scale == 1.0 else [seed, k, r, int(round(scale))]
            rng = np.random.default_rng(key)
            re = prdp.simulate(df, budget, query, method, beta=0.1, trials=runs, rng=rng)
            times = []
            for _ in range(5 if timing else 0):
                t0 = time.perf_counter()
                release(df, budget, rng)
                times.append(time.perf_counter() - t0)
            t = statistics.median(times) if times else float("nan")
            out.setdefault((query, label), []).append((100 * prdp.trimmed_mean(re), t))
    return out


def table(res: dict[tuple[str, str], list[tuple[float, float]]], names: list[str], with_paper: bool) -> str:
    head = "| query | mechanism | " + " | ".join(
        f"{TITLES.get(n, n)}: ours | paper" if with_paper else TITLES.get(n, n) for n in names) + " |"
    sep = "|---|---|" + "---|" * (len(names) * (2 if with_paper else 1))
    lines = [head, sep]
    for (query, label), cells in res.items():
        vals = []
        for j, (re, _) in enumerate(cells):
            vals.append(_fmt(re))
            if with_paper:
                p = PAPER[(query, label)][DATASETS.index(names[j])]
                vals.append(str(p))
        lines.append(f"| {query} | {label} | " + " | ".join(vals) + " |")
    lines.append("")
    lines.append("Median time of one release (ms): " + "; ".join(
        f"{label} ({query}) " + " / ".join(f"{1000 * t:.1f}" for _, t in cells)
        for (query, label), cells in res.items()))
    return "\n".join(lines)


def local_rows(runs: int, seed: int) -> str:
    """Appendix B (Table 4): PrLDP count, with the printed and the Bernstein thresholds."""
    budget = prdp.inverse(1e4, "BALANCE")
    paper = {"bank_normal_50k": 9.84, "bank_zipf_b3": 8.53}
    lines = ["| PrLDP count (Alg. 3–4) | threshold | " + " | ".join(f"{TITLES[n]}: ours | paper" for n in paper) + " |",
             "|---|---|" + "---|" * (2 * len(paper))]
    for rule in ("paper", "bernstein"):
        cells = []
        for k, name in enumerate(paper):
            df = prdp_core.data.samples.load(name)
            re = prldp.simulate(df, budget, "count", "count", beta=0.1, trials=runs,
                             rng=np.random.default_rng([seed, 99, k]), threshold=rule)
            cells += [_fmt(100 * prdp.trimmed_mean(re)), str(paper[name])]
        label = "√(8n)·ln(L/β) (printed)" if rule == "paper" else "√(8n·ln(2L/β)) (Bernstein)"
        lines.append(f"| RE (%) | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--datasets", nargs="*", default=DATASETS)
    ap.add_argument("--local", action="store_true", help="also reproduce Appendix B (PrLDP count)")
    ap.add_argument("--scaled-zipf", action="store_true",
                    help="also run the Zipf samples with balances × 1000 (see the reproduction notes)")
    a = ap.parse_args()
    t0 = time.perf_counter()
    print(f"RE (%) = trimmed mean of {a.runs} runs (top and bottom 20% dropped), β = 0.1, E = 1e4 / v, "
          f"ε̂ = 100, U = 1e12, seed {a.seed}.\n")
    print(table(run(a.datasets, a.runs, a.seed), a.datasets, with_paper=True))
    if a.scaled_zipf:
        names = [n for n in a.datasets if "zipf" in n]
        print("\nZipf samples with balances × 1000:\n")
        print(table(run(names, a.runs, a.seed, scale=1000.0), names, with_paper=True))
    if a.local:
        print("\nAppendix B, Table 4 (local model):\n")
        print(local_rows(a.runs, a.seed))
    print(f"\n(total {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
