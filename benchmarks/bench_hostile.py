"""Hostile inputs (issues 15 and 28): time and extra peak memory of each, refused or completed.

Target: each hostile upload and budget expression is refused (or completes) within 2 s and 300 MB
of extra resident memory on 10⁶ records. Every case runs in a fresh process: the input is built
first, then the peak resident set size is reset (Linux ``/proc/self/clear_refs``) and the load
or evaluation is timed; "extra peak" is the peak minus the resident size before it.

Run: .venv/bin/python benchmarks/bench_hostile.py (``--xlsx-baseline``: an ordinary .xlsx with and
without the content scan)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
from common import machine  # noqa: E402

N = 1_000_000

#: case name → (kind, argument): uploads name a builder of tests/hostile_files.py and a file name;
#: expressions give the text and the number of records.
CASES: dict[str, tuple[str, tuple]] = {
    "xlsx zip bomb (480 KB, 400 MB unpacked)": ("upload", ("xlsx_bomb", "bomb.xlsx")),
    "xlsx of 5,000,001 rows (600 KB)": ("upload", ("xlsx_rows", "rows.xlsx")),
    "xlsx, dimension A1:B2 but 5,850,000 stored empty cells (14 MB, 91 MB unpacked)": (
        "upload", ("xlsx_empty_cells", "empty.xlsx")),
    "xlsx, no dimension, 5,850,000 stored empty cells (14 MB, 91 MB unpacked)": (
        "upload", ("xlsx_empty_cells_no_dimension", "empty.xlsx")),
    "CSV, header quoted across two lines + 10⁶ columns (9.9 MB)": ("upload", ("csv_quoted_header_wide", "w.csv")),
    "Parquet with list, struct, map and binary columns": ("upload", ("parquet_nested", "n.parquet")),
    "CSV with one 150 MB cell": ("upload", ("csv_single_cell", "c.csv")),
    "chain of text comparisons BAL!=''!=BAL… (1,992 characters)": ("expression", ("BAL" + "!=''!=BAL" * 221, N)),
    "negation chain -a<-a<… (134 operands)": ("expression", ("-a<" * 133 + "-a", N)),
    "128 text comparisons (cost 5,393 per record)": (
        "expression", ("1+" + "+".join("max(" + ",".join(["(T=='A')"] * 8) + ")" for _ in range(16)), N)),
    "47 text comparisons, object column (cost 1,977: just under the limit)": (
        "expression", ("1+" + "+".join("max(" + ",".join(["(O=='A')"] * 16) + ")" for _ in range(2))
                       + "+(O=='A')" * 15, N)),
    "largest float expression: 8 max() of 16 powers (cost 903, 399 parts), 2,200,000 records": (
        "expression", ("+".join("max(" + ",".join(["a**2.5"] * 16) + ")" for _ in range(8)), 2_200_000)),
}


def _status(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    raise RuntimeError(field)


def run_case(name: str) -> dict:
    import numpy as np
    import pandas as pd

    import prdp_core
    from prdp_core.mechanisms.prdp import budget
    from tests import hostile_files

    kind, arg = CASES[name]
    if kind == "upload":
        data = getattr(hostile_files, arg[0])()

        def work() -> str:
            df = prdp_core.load_table(data, filename=arg[1])
            prdp_core.data.guess_schema(df)
            return f"loaded {df.shape[0]:,} × {df.shape[1]:,}"
    else:
        text, n = arg
        rng = np.random.default_rng(0)
        table = pd.DataFrame({"BAL": rng.pareto(1.0, n) * 1000 + 1, "a": rng.random(n) + 1,
                              "T": pd.Series(rng.choice(["A", "B", "C"], n), dtype="str"),
                              "O": pd.Series(rng.choice(["A", "B", "C"], n).astype(object))})

        def work() -> str:
            b = budget.parse_budget(text, eps_min=1e-3, eps_max=1e9)
            b.raw(table)
            return "completed"
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak resident set size
    before = _status("VmRSS")
    t0 = time.perf_counter()
    try:
        outcome = work()
    except prdp_core.PrdpError as err:
        outcome = f"refused: {type(err).__name__}: {err.message[:90]}"
    seconds = time.perf_counter() - t0
    return {"outcome": outcome, "seconds": seconds, "extra_mb": _status("VmHWM") - before}


def xlsx_baseline(repeats: int = 3) -> None:
    """Print the CPU time of loading an ordinary 200,000-row .xlsx (tests/hostile_files.py ``xlsx_table``)
    with and without the content scan of ``prdp_core.data.xlsxscan``, and of the scan alone (best of ``repeats``)."""
    import prdp_core
    from prdp_core.data import xlsxscan
    from tests import hostile_files

    data = hostile_files.xlsx_table()

    def best(fn) -> float:
        times = []
        for _ in range(repeats):
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        return min(times)

    def load() -> None:
        prdp_core.load_table(data, filename="table.xlsx")

    with_scan = best(load)
    scan = best(lambda: xlsxscan.check_xlsx_content(data))
    original = xlsxscan.check_xlsx_content
    xlsxscan.check_xlsx_content = lambda data: None
    try:
        without = best(load)
    finally:
        xlsxscan.check_xlsx_content = original
    print(f"Machine: {machine()}\n")
    print(f"Ordinary .xlsx, 200,000 rows × 4 columns ({len(data) / 2**20:,.1f} MB), CPU time, best of {repeats}:\n")
    print("| load without the scan | load with the scan | the scan alone |")
    print("|---|---|---|")
    print(f"| {without:,.2f} s | {with_scan:,.2f} s | {scan:,.2f} s |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", help="run one case in this process and print its JSON result")
    ap.add_argument("--xlsx-baseline", action="store_true",
                    help="time an ordinary 200,000-row .xlsx with and without the content scan")
    args = ap.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case)))
        return
    if args.xlsx_baseline:
        xlsx_baseline()
        return
    print(f"Machine: {machine()}\n")
    print("| input | outcome | time | extra peak RSS | target (2 s, 300 MB) |")
    print("|---|---|---|---|---|")
    for name in CASES:
        out = subprocess.run([sys.executable, __file__, "--case", name], capture_output=True, text=True,
                             check=False, cwd=ROOT)
        if out.returncode:
            print(f"| {name} | failed: {out.stderr.strip().splitlines()[-1][:120]} | | | |")
            continue
        r = json.loads(out.stdout)
        met = "met" if r["seconds"] < 2 and r["extra_mb"] < 300 else "NOT met"
        print(f"| {name} | {r['outcome'].replace('|', '/')} | {r['seconds'] * 1000:,.0f} ms | "
              f"{r['extra_mb']:,.0f} MB | {met} |", flush=True)


if __name__ == "__main__":
    main()
