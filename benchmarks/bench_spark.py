"""The Spark engine on a CBP-like Parquet file (local[2] by default), side by side with a
hand-written PySpark job computing the same aggregates in the same run, and the bytes each
step collects to the driver.

Target (issue "Beyond one machine: a Spark engine"): each step within 1.5× of the hand-written
job; only aggregates reach the driver (the engine's :attr:`SparkEngine.collected` counts the
Arrow bytes of every result it fetches; the hand-written job's results are measured the same way).

Run: .venv/bin/python benchmarks/bench_spark.py [--file benchmarks/out/cbp_1e7.parquet]
     [--rows N] [--master local[2]] [--repeat R] [--driver-memory 4g]
The file is written with ``prdp samples write cbp_like --rows N --out FILE`` when missing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engines import RHO, RHO_PS, SCHEMA, cbp_file, m_sql, policy  # noqa: E402
from common import machine, row, timed  # noqa: E402

from prdp_core import engines  # noqa: E402
from prdp_core.engines.spark_engine import spark_session  # noqa: E402
from prdp_core.mechanisms.prdp import budget as B  # noqa: E402
from prdp_core.mechanisms.preview import preview_policy  # noqa: E402
from prdp_core.mechanisms.unit_splitting import release  # noqa: E402


def hand_written(spark, path: str) -> dict:
    """The same statistics as the engine, written by hand in Spark SQL (no exact tie guard, no
    exact-log comparisons, one query each); each returns the Arrow bytes it collected."""
    spark.read.parquet(Path(path).resolve().as_uri()).createOrReplaceTempView("cbp")
    src = "cbp"
    sig_emp = 100.0 / np.sqrt(2 * RHO)
    sig_pay = 10_000.0 / np.sqrt(2 * RHO)
    c0 = 2 * (1 / np.sqrt(2 * RHO)) ** 2
    m = m_sql(100.0, 10_000.0)
    p = f"{RHO + RHO_PS + 2 * RHO}e0 * ({m}) * ({m}) + {RHO}e0"  # P(r) = ρ_c + (2ρ + ρ_ps)·m²

    def q(*sqls: str) -> int:
        return sum(int(spark.sql(s).toArrow().nbytes) for s in sqls)

    return {
        "cdf": lambda t: q(f"SELECT m, count(*) FROM (SELECT {m_sql(*t)} AS m FROM {src}) GROUP BY m"),
        "release": lambda: q(
            f"SELECT STATE, count(*), sum(m), sum(EMP), sum(PAYANN) FROM (SELECT *, {m} AS m FROM {src}) "
            "GROUP BY STATE",
            f"SELECT m, count(*) FROM (SELECT {m} AS m FROM {src}) GROUP BY m",
            f"SELECT floor(log2(r) * 8) AS b, count(*), sum(r) FROM (SELECT 1 / {c0}e0 + EMP * EMP / "
            f"{2 * sig_emp ** 2}e0 + PAYANN * PAYANN / {2 * sig_pay ** 2}e0 + {RHO_PS}e0 * ({m}) * ({m}) AS r "
            f"FROM {src}) GROUP BY b"),
        "owners": lambda: q(f"SELECT l, count(*) FROM (SELECT count(*) * sum({p}) AS l FROM {src} GROUP BY FIRM_ID) "
                            "GROUP BY l"),
        # the domain index ⌈log2(ε/ε̌)⌉ with Spark's own log: not bit-exact, the speed reference
        "domains": lambda b, e: q(f"SELECT d, count(*) FROM (SELECT least(greatest(CAST(ceil(log2(least(greatest({e}, "
                                  f"{b.eps_min}e0), {b.eps_max}e0) / {b.eps_min}e0)) AS INT), 1), {b.domains().L}) "
                                  f"AS d FROM {src}) GROUP BY d"),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", default=None)
    ap.add_argument("--rows", type=float, default=1e7, help="rows of the file written when --file is missing")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    path = cbp_file(args.file, int(args.rows))
    import pyarrow.parquet as pq
    import pyspark

    n = pq.ParquetFile(path).metadata.num_rows
    conf = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4", "spark.driver.memory": args.driver_memory}
    opts = engines.EngineOptions(master=args.master, conf=conf)
    print(f"Machine: {machine()}; load average {os.getloadavg()[0]:.1f} at start")
    t0 = time.perf_counter()
    spark = spark_session(opts)
    start = time.perf_counter() - t0
    print(f"Input: {path.name}, {n:,} CBP-like establishments ({path.stat().st_size / 2**30:.2f} GiB Parquet); "
          f"PySpark {pyspark.__version__}, master {args.master}, {conf}; session start {start:.1f} s")
    print("| step | median | best | note |")
    print("|---|---|---|---|")
    t0 = time.perf_counter()
    ds = engines.open_dataset(str(path), engine="spark", schema=SCHEMA, options=opts)
    print(row("open + row checks (counts, duplicate ids)", time.perf_counter() - t0, time.perf_counter() - t0,
              f"{ds.n:,} records"))
    eng = ds.engine
    hand = hand_written(spark, str(path))
    # a threshold change: new thresholds on every run, the same sequence for the engine and the hand-written
    # job (Spark compiles a plan for each new literal: a job repeated with the same literals would skip it)
    steps = [(100.0 + 5 * i, 10_000.0 + 100 * i) for i in range(100)]
    grid, hand_grid = iter(steps), iter(steps)
    log_budget = B.log_budget(500, "PAYANN", k=2, U=1e12)

    def report(name: str, fn, ref) -> None:
        eng.collected.reset()
        t, b, _ = timed(fn, repeat=args.repeat)
        runs = args.repeat + 1
        got = eng.collected.bytes / runs
        queries = eng.collected.queries / runs
        th, bh, hb = timed(ref, repeat=args.repeat)
        ratio = t / th
        print(row(name, t, b, f"{queries:.0f} queries, {got / 1024:.1f} KiB collected; "
                              f"target ≤ 1.5× hand-written: {'met' if ratio <= 1.5 else 'MISSED'} ({ratio:.2f}×)"))
        print(row("  hand-written PySpark, same aggregates", th, bh, f"{hb / 1024:.1f} KiB collected"))

    report("threshold change → records CDF", lambda: preview_policy(ds, policy(*next(grid))).record_cdf(),
           lambda: hand["cdf"](next(hand_grid)))
    report("release: COUNT + 2 SUMs by STATE, partition selection, realized-loss histogram",
           lambda: release(ds, policy(), rng=np.random.default_rng(0), owner_realized=False), hand["release"])
    pol = policy()
    report("owner (firm) loss CDF, Lemma 4", lambda: preview_policy(ds, pol).owners.ecdf(), hand["owners"])
    report("PrDP domain counts, 500/ln(PAYANN)² (monotone: exact thresholds, no UDF)",
           lambda: eng.domain_stats(log_budget),
           lambda: hand["domains"](log_budget, "CASE WHEN PAYANN > 1 THEN 500 / pow(ln(greatest(PAYANN, 1)), 2) "
                                               "ELSE 1e300 END"))
    two = B.parse_budget("500 / max(log(PAYANN + 2), 1) ** 2 + EMP / 1000", eps_min=0.01, eps_max=100)
    report("PrDP domain counts, 500/ln(PAYANN+2)² + EMP/1000 (two columns: pandas UDF)",
           lambda: eng.domain_stats(two),
           lambda: hand["domains"](two, "500 / pow(greatest(ln(PAYANN + 2), 1), 2) + EMP / 1000"))
    print(f"\nLoad average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
