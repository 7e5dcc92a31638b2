"""Loader + profile benchmark: a 1,000,000-row, 5-column CSV loaded, checked and profiled.

Target (issue "Foundation"): under 3 s on the project machine.
Run: .venv/bin/python benchmarks/bench_loader.py [--rows N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, row, timed  # noqa: E402

import prdp_core  # noqa: E402


def make_csv(path: Path, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "id": np.arange(1, n + 1),
        "county": rng.integers(1, 3000, size=n),
        "emp": np.ceil((1 - rng.random(n)) ** (-1 / 1.2)).astype(np.int64),
        "payroll": np.round((1 - rng.random(n)) ** (-1 / 1.5) * 30.0, 2),
        "revenue": np.round(rng.lognormal(5, 2, size=n), 2),
    })
    df.to_csv(path, index=False)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.csv"
        make_csv(path, args.rows)
        size_mb = path.stat().st_size / 2**20
        schema = prdp_core.Schema(id_col="id", measures=("emp", "payroll", "revenue"), groups=("county",))

        def load():
            return prdp_core.load_table(path)

        def full():
            df = prdp_core.load_table(path)
            ds = prdp_core.prepare_dataset(df, schema, name="bench")
            return prdp_core.data.profile.profile_dataset(ds)

        t_load, b_load, df = timed(load, repeat=args.repeat)
        t_full, b_full, prof = timed(full, repeat=args.repeat)
    print(f"Machine: {machine()}")
    print(f"Input: {args.rows:,} rows x 5 columns, {size_mb:.1f} MB CSV")
    print("| step | median | best | note |")
    print("|---|---|---|---|")
    print(row("load_table (CSV parse)", t_load, b_load, f"{len(df):,} rows"))
    print(row("load + prepare_dataset + profile_dataset", t_full, b_full,
              f"target < 3 s: {'met' if t_full < 3 else 'MISSED'}"))


if __name__ == "__main__":
    main()
