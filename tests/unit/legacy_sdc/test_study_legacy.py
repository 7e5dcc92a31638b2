"""``kind: legacy_sdc`` in a study: `prdp run` writes the comparison into the report (every cell in teaching mode,
counts only in review mode), adds nothing to the ledger, and reproduce.py gives the same results."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from prdp_core.core.errors import ConfigError
from prdp_core.review.report import write_outputs
from prdp_core.study.config import parse_config
from prdp_core.study.runner import run_study

STUDY = {"version": 1, "seed": 11, "data": {"sample": "cbp_like", "n": 4000, "seed": 1},
         "policy": {"thresholds": {"EMP": 100, "PAYANN": 10000}},
         "workload": {"queries": [{"kind": "count", "group_by": ["STATE"], "rho": 0.25},
                                  {"kind": "sum", "measure": "EMP", "group_by": ["STATE", "NAICS2"], "rho": 0.25}]},
         "mechanisms": [{"kind": "unit_splitting"}, {"kind": "legacy_sdc", "p": 15}]}


def _run(mode: str, tmp_path: Path):
    study = parse_config({**STUDY, "mode": mode})
    run = run_study(study)
    written = write_outputs(run, tmp_path / mode)
    return run, written


def test_teaching_report_sets_the_methods_beside_the_dp_answers(tmp_path):
    run, written = _run("teaching", tmp_path)
    label, m, rel = run.releases[1]
    assert rel.entries == () and len(run.ledger) == len(run.releases[0][2].entries)
    html = written["report.html"].read_text()
    assert "Today&#x27;s methods beside the policy" in html or "Today's methods beside the policy" in html
    for method in ("cell suppression", "noise infusion", "DP: 1. unit_splitting"):
        assert method in html
    results = pd.read_csv(written["results.csv"])
    legacy = results[results["mechanism"] == rel.mechanism]
    assert set(legacy["suppression"]) >= {"primary", "published"}
    assert (legacy["query"] == "2. SUM(EMP) BY STATE, NAICS2").all()


def test_review_report_holds_counts_only(tmp_path):
    _, teaching = _run("teaching", tmp_path)
    run, written = _run("review", tmp_path)
    html = written["report.html"].read_text()
    assert "withheld" in html and "counts only in review mode" in html
    cells = pd.read_csv(teaching["results.csv"])
    cells = cells[cells["mechanism"].str.startswith("legacy_sdc")]
    suppressed = cells[cells["suppression"] != "published"]
    section = html.split("Today")[1]
    big = suppressed[suppressed["true"] >= 1000]["true"]
    assert len(big)
    for value in big:  # no withheld cell's true value in a table cell, formatted as the report formats numbers
        assert f">{value:,.6g}<" not in section
    results = pd.read_csv(written["results.csv"])
    legacy = results[results["mechanism"].str.startswith("legacy_sdc")]
    assert list(legacy["method"]) == ["cell suppression"]
    assert not {"true", "noisy", "suppression"} & set(legacy.dropna(axis=1, how="all").columns)


def test_reproduce_py_gives_the_same_results(tmp_path):
    _, written = _run("teaching", tmp_path)
    out = tmp_path / "again"
    subprocess.run([sys.executable, str(written["reproduce.py"]), str(out)], check=True, capture_output=True,
                   cwd=tmp_path)
    assert (out / "results.csv").read_bytes() == written["results.csv"].read_bytes()


@pytest.mark.parametrize("entry,message", [
    ({"kind": "legacy_sdc", "secure": True}, "no secure form"),
    ({"kind": "legacy_sdc", "p": 120}, "mechanisms[1].p"),
    ({"kind": "legacy_sdc", "noise_low": 0.3, "noise_high": 0.1}, "0 ≤ low ≤ high < 1"),
    ({"kind": "legacy_sdc", "bogus": 1}, "unknown key"),
])
def test_bad_entries_are_refused_naming_the_key(entry, message):
    with pytest.raises(ConfigError) as err:
        parse_config({**STUDY, "mechanisms": [{"kind": "unit_splitting"}, entry]})
    assert message in str(err.value)


def test_a_workload_without_a_sum_is_refused_with_what_to_add(tmp_path):
    d = {**STUDY, "mode": "teaching", "workload": {"queries": [{"kind": "count", "group_by": ["STATE"]}]},
         "mechanisms": [{"kind": "legacy_sdc"}]}
    from prdp_core.core.errors import PrdpError

    with pytest.raises(PrdpError, match="needs a SUM query"):
        run_study(parse_config(d))


def test_a_teaching_run_seen_in_review_mode_holds_counts_only(tmp_path):
    """A teaching run's comparison passed through the review boundary (an export made in review mode) carries the
    number of cells each method withholds, and no cell: not which cells are withheld, nor any value."""
    from prdp_core.review.review_boundary import produce, review_view

    run, _ = _run("teaching", tmp_path)
    rel = run.releases[1][2]
    assert "suppression_value" in rel.answers.columns  # the teaching run holds the cells
    seen = review_view(run).releases[1][2]
    assert list(seen.answers.columns) == ["query", "method", "cells", "withheld"]
    import io

    results = pd.read_csv(io.BytesIO(produce("results.csv", run, teaching=False)))
    legacy = results[results["mechanism"].str.startswith("legacy_sdc")].dropna(axis=1, how="all")
    assert list(legacy["method"]) == ["cell suppression", "noise infusion"]
    assert not {"true", "noisy", "suppression", "suppression_value", "noise_value", "owners", "STATE",
                "NAICS2"} & set(legacy.columns)
