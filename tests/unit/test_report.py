"""Study reports: tables, the self-contained HTML, and review mode without true values or per-record losses."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from prdp_core.review import report as R

PLANTED = 987_654.25  # one establishment's EMP: unique, so its traces can be searched for


def planted_folder(tmp_path: Path, mode: str) -> Path:
    """A folder with a CSV of 400 establishments (one planted giant) and a study of every mechanism."""
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"id": [f"E{i}" for i in range(n)], "firm": [f"F{i // 2}" for i in range(n)],
                       "region": [f"R{i % 4}" for i in range(n)],
                       "EMP": rng.integers(1, 60, n).astype(float), "PAY": rng.integers(10, 900, n).astype(float)})
    df.loc[7, "EMP"] = PLANTED
    df.to_csv(tmp_path / "estabs.csv", index=False)
    (tmp_path / "study.yaml").write_text(f"""
version: 1
title: planted
mode: {mode}
seed: 4
data:
  path: estabs.csv
  schema: {{id: id, measures: [EMP, PAY], groups: [region], owner: firm}}
policy:
  thresholds: {{EMP: 100, PAY: 1000}}
  budget: {{preset: inverse, column: EMP, alpha: 1000, eps_max: 20, U: 1.0e+7}}
  specification: {{tiers: {{}}}}
  tiers: {{public: 0.5, agency: 4}}
workload:
  queries:
    - {{kind: count, group_by: [region], rho: 0.25}}
    - {{kind: sum, measure: EMP, group_by: [region], rho: 0.5}}
mechanisms:
  - {{kind: unit_splitting}}
  - {{kind: prdp, query: sum, column: EMP}}
  - {{kind: personalized, query: {{kind: sum, column: EMP, hi: 2000000}}}}
  - {{kind: multitier, query: sum, measure: EMP, clip: 2000000, family: laplace}}
""")
    return tmp_path


def secrets(tmp_path: Path) -> list[float]:
    """True values and per-record losses that tie to the planted record."""
    df = pd.read_csv(tmp_path / "estabs.csv")
    region_sum = float(df.loc[df["region"] == df.loc[7, "region"], "EMP"].sum())
    m = int(np.ceil(PLANTED / 100))
    loss = 0.25 + 0.5 * m * m                     # its policy loss P(r)
    total = float(df["EMP"].sum())
    return [PLANTED, region_sum, loss, total]


def spellings(v: float) -> list[str]:
    return sorted({repr(v), f"{v:.6g}", f"{v:,.6g}", f"{v:g}", f"{v:.4g}", f"{v:,.4g}", str(int(v)) if v == int(v)
                   else repr(v), f"{v:,.0f}" if v > 1e4 else repr(v)}, key=len, reverse=True)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    out = {}
    for mode in ("teaching", "review"):
        folder = planted_folder(tmp_path_factory.mktemp(mode), mode)
        run = R.run_study(R.load_config(folder / "study.yaml"))
        files = R.write_outputs(run, folder / "out")
        out[mode] = (folder, run, {name: p.read_text(encoding="utf-8") for name, p in files.items()})
    return out


def test_teaching_outputs_do_contain_the_planted_values(outputs):
    """Positive control: the scan below would find the values if they were there."""
    folder, run, files = outputs["teaching"]
    region_sum, loss = secrets(folder)[1], secrets(folder)[2]
    assert repr(region_sum) in files["results.csv"]
    assert any(s in files["report.html"] for s in spellings(loss)), "largest record loss missing from teaching CDF"
    assert any(s in files["report.html"] for s in spellings(region_sum))


def test_review_outputs_hold_no_true_value_and_no_per_record_loss(outputs):
    folder, run, files = outputs["review"]
    found = [(name, s) for name, text in files.items() for v in secrets(folder) for s in spellings(v)
             if len(s) >= 5 and s in text]
    assert not found, found
    header = files["results.csv"].splitlines()[0].split(",")
    assert not {"true", "error", "rel_error", "abs_error", "n_records"} & set(header)
    assert "Review mode" in files["report.html"]
    assert '"n":' not in files["ledger.json"]
    # every release still reports its (noisy) answers and intervals
    assert {"estimate", "ci_low", "ci_high"} <= set(header)


def test_html_is_self_contained(outputs):
    for mode in ("teaching", "review"):
        html = outputs[mode][2]["report.html"]
        assert not re.search(r"<script[^>]+src=[\"']?https?:", html, re.I)
        assert not re.search(r"<link[^>]+href=[\"']?https?:", html, re.I)
        assert not re.search(r"<img[^>]+src=[\"']?https?:", html, re.I)
        assert "Plotly.newPlot" in html and html.count("<script") >= 2
        for section in ("Budget table", "Public policy function", "(ε, δ) equivalents",
                        "Released answers and their errors", "Parameters and seeds", "Seeded run (seeds 4, 5, 6, 7)"):
            assert section in html, section
        assert ("Policy-loss CDF" in html) == (mode == "teaching")  # a distribution of the records: teaching only


def test_budget_table_is_release_by_group_by_rho(outputs):
    _, run, _ = outputs["review"]
    bt = R.budget_table(run)
    us = bt[bt["release"] == "1. unit_splitting"]
    assert list(us["budget"]) == [0.25, 0.5, 0.75]
    assert set(us["group level"]) == {"region", "(all records)"}
    mt = bt[bt["release"] == "4. multitier"]
    assert sorted(mt["budget"]) == [0.5, 4.0, 4.0]
    pure = bt[bt["unit"] == "ε (pure DP)"]
    assert np.allclose(pure["ρ equivalent"], pure["budget"] ** 2 / 2)


def test_error_summary_and_conversions(outputs):
    _, run, files = outputs["teaching"]
    summ = R.error_summary(R.results_frame(run.releases, teaching=True))
    row = summ[summ["query"].astype(str).str.contains("SUM")].iloc[0]
    assert row["median 95% half-width"] == pytest.approx(1.959964 * 100 / np.sqrt(2 * 0.5), rel=1e-5)
    assert 0 <= row["interval held the truth"] <= 1
    conv = R.conversion_rows(run)
    base = conv.iloc[0]
    assert base["ρ (zCDP)"] == pytest.approx(0.75)
    assert base["ε at δ (CKS)"] < base["ε at δ (textbook)"]
    _, run_r, _ = outputs["review"]
    assert not any("teaching" in str(x) for x in R.conversion_rows(run_r).iloc[:, 0])


def test_results_are_seeded(outputs):
    folder, run, files = outputs["review"]
    again = R.run_study(R.load_config(folder / "study.yaml"))
    a = R.results_frame(run.releases, teaching=False)
    b = R.results_frame(again.releases, teaching=False)
    pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_samples_bias_is_stated_where_its_answers_are_shown(outputs):
    """The personalized release (Sample, the default) answers a sum on the tuples it keeps: the report and the
    results say by how much it is biased low, in both modes (a public number: Φ over the roster)."""
    for mode in ("teaching", "review"):
        _, run, files = outputs[mode]
        (rel,) = [r for _, _, r in run.releases if r.mechanism == "personalized.sample"]
        share = 1 + rel.params["expected_bias"]
        assert 0 < share < 1
        assert f"Biased low: on average its sum is about {share:.0%} of the true one" in files["report.html"]
        assert "expected_bias" in files["results.csv"].splitlines()[0].split(",")
