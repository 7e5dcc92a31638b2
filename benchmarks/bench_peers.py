"""prdp_core side by side with OpenDP and diffprivlib on the same data, in one run.

Shared primitives (same data, same bounds [0, U = 1000], ε = 1 for Laplace, σ = U for Gaussian):

* clipped sum + Laplace — prdp_core ``baselines.clipped_sum_laplace``, diffprivlib
  ``tools.sum(bounds=…)``, OpenDP ``clamp >> sum >> laplace`` (measurement built once, called
  on the numpy array);
* clipped sum + Gaussian — prdp_core ``baselines.clipped_sum_gaussian``, diffprivlib (no Gaussian
  sum tool: numpy clip + sum, then ``mechanisms.GaussianAnalytic``), OpenDP ``… >> gaussian``
  (zCDP);

and the per-record pieces peers do not have: a unit-split sum (one SUM under per-record zCDP,
threshold T = 100, full ``unit_splitting.release`` with per-record and realized losses, and
its sufficient-statistics core), the policy-loss CDF over records (``preview_policy``), and
the PrDP framework sum (Algorithm 2, E(r) = 10⁴/v). The secure clipped sum (exact OpenDP
noise on the grid) is shown for its cost.

Peak memory is the extra memory of one call over what was resident before it: the larger of
the resident-set high-water mark (Linux ``VmHWM`` after resetting it through
``/proc/self/clear_refs``; it sees numpy and Rust allocations alike — the script re-runs itself
with ``MALLOC_MMAP_THRESHOLD_`` fixed so that freed buffers leave the resident set) and
tracemalloc's peak (Python and numpy allocations). Memory is measured in a second process
(started by the script) so that the allocator setting does not slow the timings. It is compared
with the size of the input columns passed to the call: the value column for the array
primitives, the record id and the value column for calls that take the table.

Run: .venv/bin/python benchmarks/bench_peers.py [--sizes 1e5,1e6,1e7] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine  # noqa: E402

from prdp_core.core.splitting import as_thresholds, split_counts  # noqa: E402
from prdp_core.core.workload import Query, SplittingPolicy, Workload  # noqa: E402
from prdp_core.data.dataset import Dataset, Schema  # noqa: E402
from prdp_core.mechanisms import baselines as BL  # noqa: E402
from prdp_core.mechanisms import prdp  # noqa: E402
from prdp_core.mechanisms.preview import preview_policy  # noqa: E402
from prdp_core.mechanisms.unit_splitting import release  # noqa: E402

U, EPS, RHO, T = 1000.0, 1.0, 0.5, 100.0
SIGMA = U / math.sqrt(2 * RHO)


def _status() -> dict[str, float]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmHWM", "VmRSS")):
                k, v = line.split(":")
                out[k] = int(v.split()[0]) / 1024
    return out


def peak_extra_mb(fn: Callable[[], Any]) -> float:
    """Extra peak memory (MB) of one call of ``fn``: max of the resident-set and tracemalloc peaks."""
    import tracemalloc

    gc.collect()
    rss = 0.0
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = _status()["VmRSS"]
        fn()
        rss = max(0.0, _status()["VmHWM"] - before)
    except OSError:  # not Linux: Python-level allocations only
        pass
    gc.collect()
    tracemalloc.start()
    fn()
    traced = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return max(rss, traced)


def measure(fn: Callable[[], Any], repeat: int) -> tuple[float, float, float]:
    """(median wall s, best wall s, median CPU s) per call over ``repeat`` samples after one warm-up
    call; calls under 20 ms are repeated within a sample so that timer noise does not dominate. CPU
    time (this process) shows the cost when the machine is shared and wall times stretch."""
    t0 = time.perf_counter()
    fn()
    calls = max(1, min(1000, int(0.02 / max(time.perf_counter() - t0, 1e-7))))
    wall, cpu = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(calls):
            fn()
        wall.append((time.perf_counter() - t0) / calls)
        cpu.append((time.process_time() - c0) / calls)
    return statistics.median(wall), min(wall), statistics.median(cpu)


def make_data(n: int) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    v = np.round(rng.lognormal(3.0, 2.0, n))  # payroll-like skewed non-negative values
    table = pd.DataFrame({"id": np.arange(n), "v": v})
    return {"v": v, "table": table, "ds": Dataset("bench", table, Schema(id_col="id", measures=("v",)))}


def tasks() -> list[tuple[str, str, Callable[[dict[str, Any]], Callable[[], Any]], tuple[str, ...]]]:
    import opendp.prelude as dp
    from diffprivlib.mechanisms import GaussianAnalytic
    from diffprivlib.tools import sum as dpl_sum

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    odp_lap = space >> dp.t.then_clamp((0.0, U)) >> dp.t.then_sum() >> dp.m.then_laplace(scale=U / EPS)
    odp_gau = space >> dp.t.then_clamp((0.0, U)) >> dp.t.then_sum() >> dp.m.then_gaussian(scale=SIGMA)
    dpl_gau = GaussianAnalytic(epsilon=1.0, delta=1e-6, sensitivity=U)
    pol = SplittingPolicy(as_thresholds({"v": T}), Workload((Query("sum", "v", rho=RHO),)))
    bud = prdp.inverse(1e4, "v", U=1e12)
    rng = np.random.default_rng(1)

    def us_core(d: dict[str, Any]) -> Callable[[], Any]:
        v = d["v"]

        def run():  # m(r), the sum (Lemma 8: split sum = original sum), Gaussian noise, P(r) = ρ·m(r)²
            m = split_counts(d["table"], {"v": T})
            loss = RHO * np.square(m, dtype=np.float64)
            return float(v.sum()) + rng.normal(0.0, T / math.sqrt(2 * RHO)), loss
        return run

    return [
        ("clipped sum + Laplace", "prdp_core",
         lambda d: lambda: BL.clipped_sum_laplace(d["v"], 0.0, U, EPS, rng=rng), ("v",)),
        ("clipped sum + Laplace", "diffprivlib",
         lambda d: lambda: dpl_sum(d["v"], epsilon=EPS, bounds=(0.0, U)), ("v",)),
        ("clipped sum + Laplace", "OpenDP", lambda d: lambda: odp_lap(d["v"]), ("v",)),
        ("clipped sum + Laplace", "prdp_core secure",
         lambda d: lambda: BL.ClippedSum("v", EPS, upper=U).release(d["table"], secure=True), ("id", "v")),
        ("clipped sum + Gaussian", "prdp_core",
         lambda d: lambda: BL.clipped_sum_gaussian(d["v"], 0.0, U, RHO, rng=rng), ("v",)),
        ("clipped sum + Gaussian", "diffprivlib",
         lambda d: lambda: dpl_gau.randomise(float(np.clip(d["v"], 0.0, U).sum())), ("v",)),
        ("clipped sum + Gaussian", "OpenDP", lambda d: lambda: odp_gau(d["v"]), ("v",)),
        ("unit-split sum (release, per-record losses)", "prdp_core",
         lambda d: lambda: release(d["table"], pol, rng=rng, owner_realized=False), ("id", "v")),
        ("unit-split sum (core: m(r), sum, noise, P(r))", "prdp_core", us_core, ("id", "v")),
        ("policy-loss CDF over records", "prdp_core",
         lambda d: lambda: preview_policy(d["ds"], pol, pieces=split_counts(d["table"], {"v": T})).record_cdf(),
         ("id", "v")),
        ("PrDP framework sum (Algorithm 2)", "prdp_core",
         lambda d: lambda: prdp.framework(d["table"], bud, "sum", beta=0.1, rng=rng), ("id", "v")),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1e5,1e6,1e7")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--memory-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    warnings.filterwarnings("ignore")
    ts = tasks()
    if args.memory_only:  # child process: peak memory of every call, one JSON line each
        for n in sizes:
            d = make_data(n)
            for task, lib, make, _ in ts:
                fn = make(d)
                fn()
                print(json.dumps({"rows": n, "task": task, "library": lib, "peak_mb": peak_extra_mb(fn)}), flush=True)
            del d
            gc.collect()
        return
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="131072")
    child = subprocess.run([sys.executable, __file__, "--memory-only", "--sizes", args.sizes], env=env,
                           capture_output=True, text=True, check=True)
    peaks = {(r["rows"], r["task"], r["library"]): r["peak_mb"]
             for r in map(json.loads, child.stdout.splitlines()) if r}
    rows = []
    for n in sizes:
        d = make_data(n)
        for task, lib, make, cols in ts:
            fn = make(d)
            col_mb = sum(d["table"][c].to_numpy().nbytes for c in cols) / 2**20
            rep = max(1, args.repeat if n < 10**7 or lib != "OpenDP" else 2)
            med, best, cpu = measure(fn, rep)
            peak = peaks[(n, task, lib)]
            rows.append({"rows": n, "task": task, "library": lib, "median_s": med, "best_s": best, "cpu_s": cpu,
                         "rows_per_s": n / med, "peak_mb": peak, "input_mb": col_mb})
            print(f"  {n:>10,} {task:<46} {lib:<17} {med * 1e3:9.1f} ms  peak {peak:8.1f} MB", flush=True)
        del d
        gc.collect()
    res = pd.DataFrame(rows)
    print()
    print(f"Machine: {machine()}, load average {os.getloadavg()[0]:.1f} at the end of the run")
    print("| rows | task | library | median | best | CPU | rows/s | peak extra memory | × input columns |"
          " prdp_core faster by |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (n, task), grp in res.groupby(["rows", "task"], sort=False):
        ours = grp[grp["library"] == "prdp_core"]
        t_ours = float(ours["median_s"].iloc[0]) if len(ours) else math.nan
        for _, r in grp.iterrows():
            ratio = r["median_s"] / t_ours if len(ours) else math.nan
            if r["library"] == "prdp_core" or not len(ours):
                speed = ""
            elif r["library"].startswith("prdp_core"):  # our own secure mode: its cost, not a speed-up
                speed = f"({ratio:,.1f}× slower)"
            else:
                speed = f"{ratio:,.1f}×"
            print(f"| {n:,} | {task} | {r['library']} | {r['median_s'] * 1e3:,.1f} ms | {r['best_s'] * 1e3:,.1f} ms | "
                  f"{r['cpu_s'] * 1e3:,.1f} ms | "
                  f"{r['rows_per_s']:,.0f} | {r['peak_mb']:,.1f} MB | {r['peak_mb'] / r['input_mb']:.2f} | {speed} |")
    print()
    print("Targets:")
    for n in sizes:
        sub = res[res["rows"] == n]
        for task in ("clipped sum + Laplace", "clipped sum + Gaussian"):
            t = sub[sub["task"] == task].set_index("library")["median_s"]
            ok_d = t["prdp_core"] <= t["diffprivlib"]
            ok_o = t["OpenDP"] >= 10 * t["prdp_core"]
            print(f"- {n:,} rows, {task}: {t['diffprivlib'] / t['prdp_core']:.1f}× diffprivlib's throughput "
                  f"({'met' if ok_d else 'MISSED'}), {t['OpenDP'] / t['prdp_core']:.1f}× OpenDP's "
                  f"(target 10×: {'met' if ok_o else 'MISSED'})")
        ours = sub[sub["library"] == "prdp_core"]
        worst = (ours["peak_mb"] / ours["input_mb"]).max()
        print(f"- {n:,} rows: largest prdp_core peak = {worst:.2f}× the input columns (target < 3×: "
              f"{'met' if worst < 3 else 'MISSED'})")
    t_us = res[(res["rows"] == max(sizes)) & (res["task"].str.startswith("unit-split"))]
    for _, r in t_us.iterrows():
        print(f"- {r['rows']:,} rows, {r['task']}: {r['median_s']:.2f} s wall (best {r['best_s']:.2f} s, "
              f"CPU {r['cpu_s']:.2f} s; target < 1 s: {'met' if r['median_s'] < 1 else 'MISSED'})")


if __name__ == "__main__":
    main()
