"""Today's methods beside the policy at agency scale: cell suppression and noise infusion on the CBP-like sample.

Measured on the user's path, each a process of its own: ``prdp run`` of a teaching study with a unit-splitting
release and a ``kind: legacy_sdc`` entry on the table of EMP by STATE × NAICS2 (the report's comparison
included), and the same study without the legacy entry — their difference is what the comparison costs.
In-process, for the parts: the comparison alone (the table per owner, the rules, complementary suppression with
its audit, noise infusion, the summary) on the 1- and 2-dimensional tables, beside a hand-written pandas
computation of the p% rule's verdicts (one GROUP BY owner and cell, a sort, the rule): the floor of the work.

Run: .venv/bin/python benchmarks/bench_legacy_sdc.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine  # noqa: E402

STUDY = """version: 1
mode: teaching
seed: 3
data: {{sample: cbp_like, n: {rows}, seed: 0}}
policy: {{thresholds: {{EMP: 100, PAYANN: 10000}}}}
workload:
  queries:
    - {{kind: sum, measure: EMP, group_by: [STATE, NAICS2], rho: 0.5}}
  partition_rho: 0.1
mechanisms:
  - kind: unit_splitting
{legacy}"""


def run_cli(rows: int, legacy: bool, tmp: Path) -> float:
    cfg = tmp / f"study-{legacy}.yaml"
    cfg.write_text(STUDY.format(rows=rows, legacy="  - kind: legacy_sdc\n" if legacy else ""))
    prdp = str(Path(sys.executable).with_name("prdp"))
    t0 = time.perf_counter()
    subprocess.run([prdp, "run", str(cfg), "--out", str(tmp / f"out-{legacy}"), "--force", "-q"], check=True,
                   env={**os.environ, "PRDP_CACHE_DIR": "off"})
    took = time.perf_counter() - t0
    if legacy:
        html = (tmp / "out-True" / "report.html").read_text()
        assert "methods beside the policy" in html and "noise infusion" in html, "the summary is not in the report"
    return took


def hand_written_p_rule(frame, dims: list[str], p: float = 10.0):
    per = frame.groupby([*dims, "FIRM_ID"], sort=False, observed=True)["EMP"].sum().reset_index()
    per = per.sort_values([*dims, "EMP"], ascending=[True] * len(dims) + [False])
    per["rank"] = per.groupby(dims, sort=False, observed=True).cumcount()
    g = per.groupby(dims, sort=False, observed=True)["EMP"]
    total, x1 = g.sum(), per[per["rank"] == 0].set_index(dims)["EMP"]
    x2 = per[per["rank"] == 1].set_index(dims)["EMP"].reindex(total.index, fill_value=0.0)
    return (total - x1 - x2) < p / 100 * x1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    from prdp_core.data.samples import load_dataset
    from prdp_core.mechanisms import legacy_sdc

    print(f"# {machine()}  rows={args.rows:,}")
    ds = load_dataset("cbp_like", n=args.rows, seed=0)
    for dims in (["STATE"], ["STATE", "NAICS2"]):
        t0 = time.perf_counter()
        hand_written_p_rule(ds.table, dims)
        hand = time.perf_counter() - t0
        t0 = time.perf_counter()
        table = legacy_sdc.cell_table(ds.table, dims, "EMP", owner="FIRM_ID")
        t_table = time.perf_counter() - t0
        verdicts = legacy_sdc.primary_suppression(table, legacy_sdc.Rules())
        t_rules = time.perf_counter() - t0 - t_table
        supp = legacy_sdc.suppress(table, verdicts["sensitive"].to_numpy(), verdicts["protection"].to_numpy())
        t_supp = time.perf_counter() - t0 - t_table - t_rules
        infused = legacy_sdc.infuse(table, legacy_sdc.NoiseInfusion(), np.random.default_rng(1))
        legacy_sdc.compare_methods(table, verdicts, supp, infused)
        total = time.perf_counter() - t0
        counts = supp.status.value_counts().to_dict()
        print(f"{' x '.join(dims):15s} cells {len(table.cells):5,}  primary {counts.get('primary', 0):4}  "
              f"complementary {counts.get('complementary', 0):4}  audit protected {supp.protected}  |  table "
              f"{t_table:5.2f} s  rules {t_rules:5.2f} s  suppression+audit {t_supp:5.2f} s  comparison in all "
              f"{total:5.2f} s  |  hand-written p% verdicts {hand:5.2f} s")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        without = run_cli(args.rows, False, tmp)
        with_legacy = run_cli(args.rows, True, tmp)
    print(f"prdp run (teaching, unit splitting)            {without:6.2f} s")
    print(f"prdp run (the same + kind: legacy_sdc)          {with_legacy:6.2f} s  "
          f"(the comparison adds {with_legacy - without:5.2f} s)")


if __name__ == "__main__":
    main()
