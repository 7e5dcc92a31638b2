"""``prdp run`` of a review-mode study (issue 29): its report shows no distribution of the records' or owners'
losses (not even one cut before its tail), and its budget table, ledger and report list the ε spent on the private
threshold suggestions its policy adopted."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from prdp_core.commands.cli import main

STUDY = """
version: 1
title: review report
mode: review
seed: 3
data:
  path: table.csv
  schema: {id: id, measures: [EMP, PAY], groups: [region], owner: firm}
policy:
  thresholds: {EMP: 100, PAY: 1000}
  threshold_source: {EMP: "private: DP p97, ε = 0.125", PAY: "private: DP p97, ε = 0.125"}
  budget: {preset: inverse, column: EMP, alpha: 1000, eps_max: 20, U: 1.0e+7}
workload:
  queries:
    - {kind: sum, measure: EMP, group_by: [region], rho: 0.5}
mechanisms:
  - {kind: unit_splitting}
  - {kind: prdp, query: sum, column: EMP}
"""

PRIVATE = ("Private threshold T(EMP)", "Private threshold T(PAY)")


def _run(folder: Path) -> str:
    rng = np.random.default_rng(1)
    n = 600
    pd.DataFrame({"id": range(n), "firm": [i // 2 for i in range(n)], "region": [f"R{i % 3}" for i in range(n)],
                  "EMP": rng.integers(1, 5000, n).astype(float), "PAY": rng.integers(1, 900, n).astype(float)}
                 ).to_csv(folder / "table.csv", index=False)
    (folder / "study.yaml").write_text(STUDY, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    code = main(["run", str(folder / "study.yaml"), "--out", str(folder / "out"), "--quiet"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    return out.getvalue()


def test_review_report_has_no_loss_distribution(tmp_path):
    printed = _run(tmp_path)
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    for marker in ("Policy-loss CDF", "Share of records paying more than x", "per-record loss CDF",
                   "cut before the last", "records paying more"):
        assert marker not in html, marker
    assert "Hidden in review mode" in html
    assert "review mode" in printed and "600" not in printed


def test_review_budget_table_and_ledger_list_the_private_thresholds(tmp_path):
    _run(tmp_path)
    out = tmp_path / "out"
    budget = pd.read_csv(out / "budget.csv")
    private = budget[budget["release"].str.startswith("Private threshold")]
    assert sorted(private["release"].str.split(" \\(").str[0]) == list(PRIVATE)
    assert private["budget"].tolist() == pytest.approx([0.125, 0.125])
    assert set(private["unit"]) == {"ε (pure DP)"}
    assert private["ρ equivalent"].tolist() == pytest.approx([0.125 ** 2 / 2] * 2)
    ledger = pd.read_csv(out / "ledger.csv")
    assert [lab.split(" (")[0] for lab in ledger["release"] if lab.startswith("Private")] == list(PRIVATE)
    assert ledger.loc[ledger["release"].str.startswith("Private"), "worst case"].tolist() == pytest.approx([0.125] * 2)
    for name in ("ledger.json", "report.html"):
        text = (out / name).read_text(encoding="utf-8")
        assert all(p in text for p in PRIVATE), name
