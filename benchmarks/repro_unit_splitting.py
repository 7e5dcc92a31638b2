"""Reproduce the per-record zCDP paper's experiments (Sec. 6) with prdp_core; prints Markdown.

Run: .venv/bin/python benchmarks/repro_unit_splitting.py > /tmp/repro.md
(about 20 s). The output is pasted into docs/reproductions/per-record-zcdp-unit-splitting.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import prdp_core
from prdp_core.core.loss_profile import owner_losses
from prdp_core.core.splitting import as_thresholds, threshold_percentiles
from prdp_core.core.workload import Query, SplittingPolicy, Workload
from prdp_core.mechanisms import analysis, budget_solver, sweeps
from prdp_core.mechanisms.unit_splitting import release

TABLE7 = prdp_core.data.samples.CBP_TOPCODE_SCHEMES
TABLE8 = prdp_core.data.samples.CBP_SPLIT_SCHEMES
MEAS = ("EMP", "PAYANN", "PAYQTR1")


def md(df: pd.DataFrame, fmt: dict[str, str] | None = None) -> str:
    fmt = fmt or {}
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for r in df.itertuples(index=False):
        cells = []
        for c, v in zip(cols, r):
            f = fmt.get(c)
            cells.append(f.format(v) if f and isinstance(v, (int, float, np.floating)) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sim() -> None:
    ds = prdp_core.data.samples.load_dataset("sim_pareto", n=100_000, seed=0)
    print("## SIM (Table 4 data, n = 100,000, seed 0): median ARE vs share of records above ρ\n")
    print("Workload: SUM(HT1) by CatIX (1,000 cells), all of the base budget on it; thresholds at percentiles of "
          "HT1 (univariate splitting, as in Fig. 2). Analytic median ARE of each answer (0.674·σ/|S|), "
          "then the median over the 1,000 answers.\n")
    rows = []
    for meas in ("HT1", "HT2"):
        pol = SplittingPolicy(as_thresholds({meas: 1.0}),
                              Workload((Query("sum", meas, rho=1.0, group_by=("CatIX",)),)))
        pcts = [90, 95, 97, 98, 99, 99.5, 99.9]
        grid = sweeps.percentile_grid(ds.table, [meas], pcts)
        _, losses = sweeps.sweep(ds.table, pol, grid, [0.1, 1.0, 10.0], labels=[f"p{p:g}" for p in pcts])
        losses.insert(0, "measure", meas)
        losses["T"] = [grid[[f"p{p:g}" for p in pcts].index(s)][meas] for s in losses["setting"]]
        losses["median ARE"] = losses[f"median ARE SUM({meas})"]
        rows.append(losses)
    out = pd.concat(rows)
    wide = out.pivot_table(index=["measure", "setting", "T", "share_above_base"], columns="base_rho",
                           values="median ARE", sort=False).reset_index()
    wide.columns = ["measure", "threshold", "T", "records above ρ"] + [f"median ARE, ρ = {r:g}"
                                                                       for r in wide.columns[4:]]
    print(md(wide, {"T": "{:,.2f}", "records above ρ": "{:.2%}"} | {c: "{:.1%}" for c in wide.columns[4:]}))
    print()


def cbp() -> None:
    ds = prdp_core.data.samples.load_dataset("cbp_like", n=100_000, seed=0)
    print("## CBP-like (n = 100,000, seed 0): splitting (Table 8) vs top-coding (Table 7)\n")
    pct = pd.DataFrame([{"scheme": k, **{m: f"{v[m]:,} ({threshold_percentiles(ds.table, {m: v[m]})[m]:.0f}%)"
                                         for m in MEAS}} for k, v in TABLE8.items()])
    print("Table 8's thresholds and their PctScore in our data (paper: 97/99/99, 66/79/80, 47/50/50):\n")
    print(md(pct))
    print()
    levels = tuple(("COUNTY", f"NAICS{k}") for k in range(2, 7))
    for base in (1.0, 10.0):
        comp = sweeps.compare_schemes(ds.table, MEAS, levels, TABLE8, TABLE7, base_rho=base, min_count=100)
        med = comp.groupby(["family", "scheme"], observed=True)["median_are"].median().unstack()
        med = med[[c for c in med.columns if c.startswith("split")] + [c for c in med.columns if c.startswith("top")]]
        print(f"Median over answers (county × NAICS2–6, cells with ≥ 100 establishments) of the answers' median ARE, "
              f"base loss ρ = {base:g} spread evenly over the 20 queries:\n")
        print(md(med.reset_index(), {c: "{:.1%}" for c in med.columns}))
        print()
        by_level = comp[comp["family"] == "SUM(EMP)"].groupby(["level", "scheme"], observed=True)["median_are"] \
            .median().unstack()
        if base == 1.0:
            print("SUM(EMP) by NAICS level (same setting):\n")
            print(md(by_level.reset_index(), {c: "{:.1%}" for c in by_level.columns}))
            print()


def fig1() -> None:
    print("## Fig. 1: clipped Gaussian sums of Pareto(1, α), n = 1,000\n")
    rows = []
    for a in (1.2, 1.5, 2.0):
        for rho in (0.1, 1.0, 10.0):
            d = analysis.optimal_clip(n=1000, alpha=a, rho=rho)
            rows.append({"α": a, "ρ": rho, "optimal Δ": d,
                         "MSE / E[sum] at optimum": float(analysis.clipped_pareto_mse_ratio(d, n=1000, alpha=a,
                                                                                           rho=rho))})
    print(md(pd.DataFrame(rows), {"α": "{:g}", "ρ": "{:g}", "optimal Δ": "{:,.0f}",
                                  "MSE / E[sum] at optimum": "{:,.1f}"}))
    print()


def fig4_5() -> None:
    ds = prdp_core.data.samples.load_dataset("cbp_like", n=100_000, seed=0)
    wl = sweeps.level_workload(MEAS, (("COUNTY", "NAICS2"),), base_rho=1.0)
    print("## Fig. 4: budgets for fitness-for-use goals (county × NAICS2, cells ≥ 100 establishments, γ = 0.95, "
          "95% of answers)\n")
    rows = []
    for name, thr in TABLE8.items():
        pol = SplittingPolicy(as_thresholds(thr), wl)
        for t in (0.05, 0.10, 0.20):
            sol = budget_solver.solve_budget(ds.table, pol, target=t, share=0.95, min_count=100)
            p = sol.policy(ds.table)
            rows.append({"scheme": name, "goal": t, **{f"ρ {k}": v for k, v in sol.rho_by_family.items()},
                         "base loss": sol.policy.workload.total_rho, "median P(r)": float(np.median(p)),
                         "99th pct P(r)": float(np.quantile(p, 0.99))})
    df = pd.DataFrame(rows)
    print(md(df, {c: "{:,.4g}" for c in df.columns if c not in ("scheme", "goal")} | {"goal": "{:.0%}"}))
    print()
    print("## Fig. 5: policy loss vs realized loss of one release (Conservative scheme, base ρ = 1, seed 0)\n")
    pol = SplittingPolicy(as_thresholds(TABLE8["Conservative"]), wl)
    rel = release(ds, pol, rng=np.random.default_rng(0), reveal=True, seed=0)
    real = rel.extras["private_realized"]
    own_pol = owner_losses(rel.loss, ds.table["FIRM_ID"])
    own_real = rel.extras["private_owner_realized"].reindex(own_pol.index)
    rows = []
    for lab, p, r in (("establishments", rel.loss, real), ("firms", own_pol.to_numpy(), own_real.to_numpy())):
        rows.append({"level": lab, "median policy": float(np.median(p)), "median realized": float(np.median(r)),
                     "p99 policy": float(np.quantile(p, 0.99)), "p99 realized": float(np.quantile(r, 0.99)),
                     "realized ≤ policy": bool(np.all(r <= p * (1 + 1e-9)))})
    print(md(pd.DataFrame(rows), {c: "{:,.4g}" for c in ("median policy", "median realized", "p99 policy",
                                                         "p99 realized")}))
    print()


if __name__ == "__main__":
    sim()
    cbp()
    fig1()
    fig4_5()
