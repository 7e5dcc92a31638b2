"""The review boundary (issue 29): every registered output, made from a table with a planted record, holds in
review mode neither the record's value, nor its loss, nor the row count, nor any loss distribution — and in
teaching mode the same scan finds them (so it can fail). ``tests/unit/test_cli_review_report.py`` checks what
``prdp run`` writes in review mode."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from prdp_core.core.errors import ParameterError
from prdp_core.review import report as R
from prdp_core.review import review_boundary as B

PLANTED = 987654321.5  # the planted record's EMP: alone in its group, far above every other value
PLANTED_ID = "PLANTED-ID-7731"
PLANT_GROUP = "R_PLANT"
N = 4391  # the row count: a true answer (COUNT(*)) in review mode
LOSS = 0.25 + 0.5 * math.ceil(PLANTED / 100) ** 2  # its policy loss P(r) at T(EMP) = 100

#: Texts that only a loss distribution (of records or owners), its quantiles or shares carry.
DISTRIBUTION_MARKERS = ("Policy-loss CDF", "paying more than", "per-record loss CDF", "p99 record loss",
                        "share above base", "record loss CDF", "owner_cdf", "share_above_base")

STUDY = """
version: 1
title: planted
mode: {mode}
seed: 4
data:
  path: table.csv
  schema: {{id: id, measures: [EMP, PAY], groups: [region], owner: firm}}
policy:
  thresholds: {{EMP: 100, PAY: 1000}}
  threshold_source: {{PAY: "private: DP p97, ε = 0.25"}}
  budget: {{preset: inverse, column: EMP, alpha: 1000, eps_max: 20, U: 1.0e+10}}
workload:
  queries:
    - {{kind: count, group_by: [region], rho: 0.25}}
    - {{kind: sum, measure: EMP, group_by: [region], rho: 0.5}}
mechanisms:
  - {{kind: unit_splitting}}
  - {{kind: prdp, query: sum, column: EMP}}
"""


def planted_folder(folder: Path, mode: str) -> Path:
    """A loaded table of N records, one planted (its own group, a distinctive id), and its study."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"id": [f"E{i}" for i in range(N)], "firm": [f"F{i // 3}" for i in range(N)],
                       "region": [f"R{i % 4}" for i in range(N)],
                       "EMP": rng.integers(1, 60, N).astype(float), "PAY": rng.integers(10, 900, N).astype(float)})
    df.loc[7, ["id", "region", "EMP"]] = [PLANTED_ID, PLANT_GROUP, PLANTED]
    df.to_csv(folder / "table.csv", index=False)
    (folder / "study.yaml").write_text(STUDY.format(mode=mode), encoding="utf-8")
    return folder


def spellings(v: float, *, exact: bool = False) -> set[str]:
    """How a number may be written in an output (at least 5 characters). ``exact``: only to its last digit —
    a noisy answer of a group holding the record alone is public and near the value, never equal to it."""
    out = {repr(v), f"{v:,.1f}", f"{v:.1f}", f"{v:,.2f}", f"{v:.2f}", f"{v:.10g}"}
    if not exact:
        out |= {f"{v:.6g}", f"{v:,.6g}", f"{v:g}", f"{v:.4g}", f"{v:,.4g}", f"{v:,.0f}", f"{v:.0f}"}
    return {s for s in out if len(s) >= 5}


_COUNT = re.compile(r"(?<![\d.,])4,?391(?!\d|[.,]\d)")  # the row count as a whole number


def leaks(text: str) -> dict[str, list[str]]:
    """What of the planted record and the table's statistics ``text`` holds."""
    found = {"value": sorted(s for s in spellings(PLANTED, exact=True) if s in text),
             "id": [PLANTED_ID] if PLANTED_ID in text else [],
             "loss": sorted(s for s in spellings(LOSS) if s in text),
             "row count": _COUNT.findall(text),
             "loss distribution": [m for m in DISTRIBUTION_MARKERS if m in text]}
    return {k: v for k, v in found.items() if v}


@pytest.fixture(scope="module")
def produced(tmp_path_factory):
    """Every registered output, in teaching and in review mode: mode → name → text."""
    out: dict[str, dict[str, str]] = {}
    for mode in ("teaching", "review"):
        folder = planted_folder(tmp_path_factory.mktemp(mode), mode)
        run = R.run_study(R.load_config(folder / "study.yaml"))
        out[mode] = {name: B.readable(name, B.produce(name, B.subject_of(run, o.takes), teaching=mode == "teaching"))
                     for name, o in B.REGISTRY.items()}
    return out


def test_every_registered_output_hides_the_planted_record_in_review_mode(produced):
    found = {name: hit for name, text in produced["review"].items() if (hit := leaks(text))}
    assert not found, found


def test_the_scan_finds_the_planted_record_in_teaching_mode(produced):
    """Positive control: in teaching mode the outputs show the value (a true group sum: the record is alone in its
    group), its loss, the row count and the loss distributions — the scan above would see them."""
    seen: dict[str, set[str]] = {}
    for name, text in produced["teaching"].items():
        for what in leaks(text):
            seen.setdefault(what, set()).add(name)
    assert {"value", "loss", "row count", "loss distribution"} <= set(seen), seen
    assert {"results.csv", "report.html", "answers.csv"} <= seen["value"]
    assert {"report.html", "board.csv"} <= seen["loss"] & seen["loss distribution"]
    assert {"report.html", "ledger.json", "session ledger (JSON)"} <= seen["row count"]
    assert '"thresholds"' in produced["teaching"]["share link"]  # a link is scanned as the design it carries


def test_prdp_suggest_thresholds_prints_through_the_boundary(produced):
    """What ``prdp suggest thresholds`` prints is registered (and so scanned above): released DP quantiles, their
    cost and public grid — the same in both modes, never the planted value or the row count."""
    assert "prdp suggest thresholds (terminal)" in B.names("cli")
    for mode in ("teaching", "review"):
        text = produced[mode]["prdp suggest thresholds (terminal)"]
        assert "T(EMP) = " in text and "DP p97" in text and not leaks(text), text


def test_the_study_config_download_is_registered_and_says_its_mode(produced):
    """The Study page's study-config download (and its preview) is produced here, so it is scanned above; review
    mode writes ``mode: review`` into it."""
    assert "study config (YAML)" in B.names("session export")
    assert "mode: review" in produced["review"]["study config (YAML)"]
    assert "mode: teaching" in produced["teaching"]["study config (YAML)"]


def test_the_board_table_on_screen_is_produced_through_the_boundary(produced, tmp_path):
    """The Board page's table is produced here (and scanned above): the planted record's loss and the loss
    distribution columns in teaching mode only; read back, it is the board's table as built."""
    from prdp_core.board.summary import board_frame

    assert "board table (screen)" in B.names("board")
    assert {"loss", "loss distribution"} <= set(leaks(produced["teaching"]["board table (screen)"]))
    assert not leaks(produced["review"]["board table (screen)"])
    entries = B.subject_of(R.run_study(R.load_config(planted_folder(tmp_path, "teaching") / "study.yaml")), "entries")
    for teaching in (True, False):
        shown = B.screen_frame(B.produce("board table (screen)", entries, teaching=teaching, delta=1e-6, mine={1}))
        built = board_frame(entries if teaching else B.review_entries(entries), review=not teaching, delta=1e-6,
                            mine={1})
        pd.testing.assert_frame_equal(shown, built)


def test_the_named_ledger_outputs_show_the_planted_loss_in_teaching_mode_only(produced, tmp_path):
    """``prdp ledger show`` (table and JSON) and the line ``prdp run --ledger`` adds go through the boundary: the
    planted record's loss (the largest record loss of its release, the largest total) in teaching mode only."""
    assert {"prdp ledger show (terminal)", "prdp run --ledger (terminal)"} <= set(B.names("cli"))
    for name in ("prdp ledger show (terminal)", "prdp run --ledger (terminal)"):
        assert "loss" in leaks(produced["teaching"][name]), name
        assert not leaks(produced["review"][name]), name
    led = B.subject_of(R.run_study(R.load_config(planted_folder(tmp_path, "teaching") / "study.yaml")), "named ledger")
    shown = B.produce("prdp ledger show (terminal)", led, teaching=True, fmt="json").decode("utf-8")
    assert "loss" in leaks(shown) and not leaks(B.produce("prdp ledger show (terminal)", led, teaching=False,
                                                          fmt="json").decode("utf-8"))


def test_the_registry_covers_every_file_of_prdp_run_and_the_other_outputs():
    assert set(B.names("study file")) == set(R.OUTPUT_FILES)
    kinds = {o.kind for o in B.REGISTRY.values()}
    assert {"study file", "release", "session export", "board", "link", "snippet", "cli"} <= kinds
    with pytest.raises(ParameterError, match="No output named"):
        B.produce("nothing.csv", B.Ledger(), teaching=False)


def test_a_private_source_without_its_cost_is_refused():
    from prdp_core.mechanisms.dp_quantile import adopted_suggestions

    (entry,) = adopted_suggestions({"EMP": "private: DP p97, ε = 0.1", "PAY": "typed"})
    assert entry.loss.supremum() == pytest.approx(0.1)
    with pytest.raises(ParameterError, match="names no ε"):
        adopted_suggestions({"EMP": "private: by hand"})


def test_adopted_suggestions_are_charged_exactly_thresholds_and_mechanism_bounds():
    """What a study report lists as spent on its public parameters is what was drawn: ε split over three
    measures (0.25/3 each) reads back exactly from the sources, and a mechanism's private bound
    (``param_source``) is charged beside the thresholds."""
    from prdp_core.mechanisms.dp_quantile import CandidateGrid, adopted_suggestions, dp_percentile_thresholds
    from prdp_core.study.study_tables import adopted_entries

    df = pd.DataFrame({c: np.arange(1.0, 201.0) for c in ("A", "B", "C")})
    grids = {c: CandidateGrid(1.0, 1000.0, size=50) for c in df.columns}
    sug = dp_percentile_thresholds(df, list(df.columns), 90, grids=grids, epsilon=0.25, seed=3)
    charged = adopted_suggestions(sug.sources)
    assert sum(e.loss.supremum() for e in charged) == pytest.approx(0.25, rel=1e-12)
    assert all(e.loss.supremum() >= 0.25 / 3 for e in charged)  # never read back below what was spent

    from types import SimpleNamespace

    from prdp_core.study.config import parse_config

    text = STUDY.format(mode="teaching").replace(
        "U: 1.0e+10}\n", "U: 1.0e+10}\n  specification: {tiers: {}}\n  tiers: {public: 0.5, agency: 4}\n").replace(
        "  - {kind: prdp, query: sum, column: EMP}",
        "  - {kind: personalized, query: {kind: sum, column: EMP, hi: 2000}, param_source: {hi: 'private: DP p99, "
        "ε = 0.2'}}")
    run = SimpleNamespace(study=parse_config(text))  # the adopted suggestions are read from the study alone
    entries = adopted_entries(run)
    assert [e.loss.supremum() for e in entries] == pytest.approx([0.25, 0.2])
    assert entries[1].label.startswith("Private personalized parameter hi")
