"""The user's path at scale: the whole ``prdp run`` with default settings, first and second run, beside hand-written
DuckDB SQL for the same statistics in the same run.

A study on a cbp_like Parquet file (``prdp samples write``; ``--file`` for another file with the same columns):
COUNT and SUMs of EMP and PAYANN by STATE, unit splitting at thresholds EMP 100 / PAYANN 10,000, partition selection,
``data.engine: duckdb``, no memory setting. Measured, each in a process of its own (wall time and peak resident
memory of that process, ``os.wait4``):

1. ``prdp run`` with an empty result cache (``PRDP_CACHE_DIR`` a fresh folder): the first run on the file;
2. ``prdp run`` again on the unchanged file (what a second run, or a second session, costs);
3. the hand-written SQL, in one DuckDB process with DuckDB's own defaults: the role checks (rows, missing and
   duplicate ids, missing and negative measures), the records' split-count histogram (the loss CDF), the sums
   per STATE, the owners' losses (a GROUP BY over the owners) and exact quantiles of both measures.

Run: .venv/bin/python benchmarks/bench_user_path.py [--rows 1000000] [--file PATH] [--keep]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine  # noqa: E402

STUDY = """version: 1
title: the user's path at scale
mode: teaching
seed: 4
data:
  path: {path}
  engine: duckdb
  schema: {{id: ESTAB_ID, measures: [EMP, PAYANN], groups: [STATE], owner: FIRM_ID}}
policy:
  thresholds:
    group_column: STATE
    rows:
      "*": {{EMP: 100, PAYANN: 10000}}
workload:
  partition_rho: 0.1
  queries:
    - {{kind: count, group_by: [STATE], rho: 0.5}}
    - {{kind: sum, measure: EMP, group_by: [STATE], rho: 0.5}}
    - {{kind: sum, measure: PAYANN, group_by: [STATE], rho: 0.5}}
mechanisms:
  - kind: unit_splitting
"""

#: The same statistics as hand-written SQL (rel: the file), in the order a run needs them.
SQL = {
    "checks": "SELECT count(*), count(ESTAB_ID), count(DISTINCT ESTAB_ID), count_if(EMP IS NULL OR isnan(EMP)), "
              "count_if(PAYANN IS NULL OR isnan(PAYANN)), count_if(EMP < 0), count_if(PAYANN < 0) FROM rel",
    "records CDF": "SELECT greatest(ceil(EMP / 100), 1) + greatest(ceil(PAYANN / 10000), 1) AS m, count(*) FROM rel "
                   "GROUP BY m",
    "sums per STATE": "SELECT STATE, count(*), sum(least(EMP, 100 * greatest(ceil(EMP / 100), 1))), sum(PAYANN) "
                      "FROM rel GROUP BY STATE",
    "owner losses": "SELECT l, count(*) FROM (SELECT FIRM_ID, sum(greatest(ceil(EMP / 100), 1) "
                    "+ greatest(ceil(PAYANN / 10000), 1)) AS l FROM rel GROUP BY FIRM_ID) GROUP BY l",
    "quantiles": "SELECT quantile_disc(EMP, [0.5, 0.9, 0.99]), quantile_disc(PAYANN, [0.5, 0.9, 0.99]) FROM rel",
}

HAND_WRITTEN = """
import sys, time, duckdb
con = duckdb.connect()
con.execute("CREATE VIEW rel AS SELECT * FROM read_parquet(" + repr(sys.argv[1]) + ")")
for name, sql in {sql!r}.items():
    t0 = time.perf_counter()
    con.execute(sql).fetchall()
    print(f"{{name}}\\t{{time.perf_counter() - t0:.2f}}", flush=True)
"""


def measured(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak resident GB, stdout) of one process, its own resources (``os.wait4``)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise SystemExit(f"{' '.join(argv)} failed:\n{err.read()[-2000:]}")
        return wall, usage.ru_maxrss / 2**20, out.read()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the generated file (default 10⁶)")
    ap.add_argument("--file", help="a cbp_like Parquet file to use instead of generating one")
    ap.add_argument("--keep", action="store_true", help="keep the working folder")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="prdp-user-path-"))
    data = Path(args.file).resolve() if args.file else work / "cbp.parquet"
    prdp = [sys.executable, "-m", "prdp_core.commands.cli"]
    if not args.file:
        subprocess.run([*prdp, "samples", "write", "cbp_like", "--rows", str(args.rows), "--out", str(data)],
                       check=True, capture_output=True)
    study = data.parent / f".bench-user-path-{os.getpid()}.yaml"  # data.path is relative to the study's folder
    study.write_text(STUDY.format(path=data.name), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRDP_")}
    env["PRDP_CACHE_DIR"] = str(work / "cache")
    env["PYTHONPATH"] = str(ROOT)
    rows = []
    try:
        for label, out in (("prdp run, first run", "first"), ("prdp run, second run (unchanged file)", "second")):
            wall, peak, _ = measured([*prdp, "run", str(study), "--out", str(work / out), "-q"], env)
            rows.append((label, wall, peak))
    finally:
        study.unlink()
    same = (work / "first" / "results.csv").read_bytes() == (work / "second" / "results.csv").read_bytes()
    script = work / "hand_written.py"
    script.write_text(HAND_WRITTEN.format(sql=SQL), encoding="utf-8")
    wall, peak, out = measured([sys.executable, str(script), str(data)])
    parts = ", ".join(f"{line.split(chr(9))[0]} {line.split(chr(9))[1]} s" for line in out.strip().splitlines())
    rows.append((f"hand-written DuckDB SQL ({parts})", wall, peak))
    print(f"Machine: {machine()}. File: {data.name}, {data.stat().st_size / 1e9:.2f} GB.\n")
    print("| step | wall | peak RSS |\n|---|---|---|")
    for label, wall, peak in rows:
        print(f"| {label} | {wall:.1f} s | {peak:.2f} GB |")
    print(f"\nResults of the two runs byte-identical: {same}. First run / hand-written SQL: "
          f"{rows[0][1] / rows[2][1]:.2f}×.")
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
