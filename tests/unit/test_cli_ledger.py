"""prdp run --ledger NAME and prdp ledger show / list: successive headless releases on the same data
add up in a named ledger of the store; a ledger refuses other data unless told; no per-record value
is printed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from prdp_core.board.ledgers import LedgerStore
from prdp_core.board.store import BoardStore
from prdp_core.commands.cli import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from prdp_core.core.accounting import Ledger
from prdp_core.review.report import load_config, run_study

from .test_cli import cli

ROOT = Path(__file__).resolve().parents[2]

PRDP_STUDY = """
version: 1
mode: teaching
seed: 3
data: {sample: bank_normal_50k, n: 4000, seed: 1}
policy:
  budget: {preset: inverse, column: BALANCE, alpha: 10000, eps_max: 100, U: 1.0e+6}
mechanisms:
  - {kind: prdp, model: central, query: sum, column: BALANCE, beta: 0.1, algorithms: [framework]}
"""


@pytest.fixture
def workshop(tmp_path, monkeypatch):
    monkeypatch.setenv("PRDP_WORKSHOP_DIR", str(tmp_path / "workshop"))
    monkeypatch.delenv("PRDP_BOARD_URL", raising=False)
    return tmp_path


def _file_study(tmp_path: Path) -> Path:
    d = tmp_path / "study"
    shutil.copytree(ROOT / "examples" / "file_study", d)
    text = (d / "study.yaml").read_text().replace("mode: review", "mode: teaching")
    (d / "study.yaml").write_text(text)
    return d / "study.yaml"


def _stored(name: str) -> list:
    from prdp_core.board import workshop as W

    led = LedgerStore(BoardStore(W.board_url()))
    try:
        return led.entries(led.find(name))
    finally:
        led.store.dispose()


def test_two_runs_on_the_same_study_leave_two_entries_whose_per_record_totals_add_up(workshop):
    study = _file_study(workshop)
    for out in ("o1", "o2"):
        code, stdout, err = cli("run", str(study), "--out", str(workshop / out), "-q", "--ledger", "firms")
        assert code == EXIT_OK, err
    assert "ledger 'firms'" in stdout and "2 in all" in stdout and "largest per-record total so far ρ =" in stdout
    a, b = _stored("firms")
    run = run_study(load_config(study))
    table = run.dataset.table
    policy = run.ledger.entries[0].loss
    one = policy(table)
    assert a.largest == pytest.approx(one.max()) and a.total_rho == pytest.approx(one.max())
    assert b.total_rho == pytest.approx((one + one).max())
    # the stored entries, read back, give the same per-record totals as the two runs' entries
    back = Ledger([a.entry, b.entry]).total(table)
    assert np.array_equal(back, Ledger(list(run.ledger.entries) * 2).total(table))
    assert a.origin == "prdp run study.yaml" and a.fingerprint["name"] == "firms.csv"

    code, text, _ = cli("ledger", "show", "firms")
    assert code == EXIT_OK
    assert "firms.csv (SHA-256" in text and f"ρ = {b.total_rho:.6g}" in text and "Unit splitting: 3 queries" in text


def test_data_dependent_losses_add_up_in_epsilon(workshop):
    cfg = workshop / "bank.yaml"
    cfg.write_text(PRDP_STUDY)
    for out in ("o1", "o2"):
        assert cli("run", str(cfg), "--out", str(workshop / out), "-q", "--ledger", "bank")[0] == EXIT_OK
    a, b = _stored("bank")
    v = np.asarray(run_study(load_config(cfg)).ledger.entries[0].loss.values)
    assert (a.total_eps, b.total_eps) == (pytest.approx(v.max()), pytest.approx(2 * v.max()))
    code, text, _ = cli("ledger", "show", "bank", "--format", "json")
    doc = json.loads(text)
    assert code == EXIT_OK and doc["largest record total (ε)"] == pytest.approx(2 * v.max())
    assert len(doc["entries"]) == 2 and all(not isinstance(x, list) for e in doc["entries"] for x in e.values())


def test_a_ledger_refuses_other_data_before_anything_is_released(workshop):
    study = _file_study(workshop)
    assert cli("run", str(study), "--out", str(workshop / "o1"), "-q", "--ledger", "L")[0] == EXIT_OK
    other = workshop / "other.csv"
    other.write_text((study.parent / "firms.csv").read_text().replace("E1,F0,C1,38,", "E1,F0,C1,39,"))
    code, _, err = cli("run", str(study), "--data", str(other), "--out", str(workshop / "o2"), "-q", "--ledger", "L")
    assert code == EXIT_ERROR and "belongs to firms.csv" in err and "--ledger-new-data" in err
    assert not (workshop / "o2").exists()  # refused before the run: nothing was released or written
    # the same bytes under another name are the same data
    same = workshop / "copy.csv"
    same.write_bytes((study.parent / "firms.csv").read_bytes())
    assert cli("run", str(study), "--data", str(same), "--out", str(workshop / "o3"), "-q", "--ledger", "L")[0] == 0
    code, out, err = cli("run", str(study), "--data", str(other), "--out", str(workshop / "o4"), "-q", "--ledger", "L",
                         "--ledger-new-data")
    assert code == EXIT_OK, err
    entries = _stored("L")
    assert len(entries) == 3 and entries[-1].total_rho == float("inf")  # earlier splitting releases: unbounded
    code, text, _ = cli("ledger", "show", "L")
    assert "other.csv" in text and "Unbounded" in text


def test_a_run_refuses_a_ledger_whose_entry_was_deleted_in_the_store_before_anything_is_released(workshop):
    import sqlalchemy as sa

    from prdp_core.board import ledgers as L
    from prdp_core.board import workshop as W

    study = _file_study(workshop)
    for out in ("o1", "o2"):
        assert cli("run", str(study), "--out", str(workshop / out), "-q", "--ledger", "firms")[0] == EXIT_OK
    first = _stored("firms")[0]
    eng = sa.create_engine(W.board_url())
    with eng.begin() as conn:  # the first release removed from the store by hand
        conn.execute(L.ledger_entries.delete().where(L.ledger_entries.c.uid == first.uid))
    eng.dispose()
    code, out, err = cli("run", str(study), "--out", str(workshop / "o3"), "-q", "--ledger", "firms")
    assert code == EXIT_ERROR and "The ledger 'firms' was changed in the store: entry #1 of 1" in err
    assert not (workshop / "o3").exists()  # refused before the run: nothing was released or written
    code, out, err = cli("ledger", "show", "firms")
    assert code == EXIT_ERROR and out == "" and "entry #1 of 1" in err


def test_show_in_review_mode_prints_no_statistic_of_the_records(workshop):
    study = _file_study(workshop)
    cli("run", str(study), "--out", str(workshop / "o1"), "-q", "--ledger", "firms")
    (entry,) = _stored("firms")
    code, text, _ = cli("ledger", "show", "firms", "--review")
    assert code == EXIT_OK and "largest" not in text and f"{entry.total_rho:.6g}" not in text
    code, text, _ = cli("ledger", "show", "firms", "--review", "--format", "json")
    assert "largest" not in text and json.loads(text)["review"] is True
    code, text, _ = cli("ledger", "list")
    assert code == EXIT_OK and text.strip() == "firms\t1 release(s)"


def test_usage_and_unknown_names(workshop):
    study = _file_study(workshop)
    code, _, err = cli("run", str(study), "--out", str(workshop / "o"), "--db", "sqlite:///x.sqlite")
    assert code == EXIT_USAGE and "--ledger NAME" in err
    code, _, err = cli("run", str(study), "--out", str(workshop / "o"), "--ledger", "bad name!")
    assert code == EXIT_ERROR and "A ledger name" in err
    code, _, err = cli("ledger", "show", "missing")
    assert code == EXIT_ERROR and "no ledger named 'missing'" in err
    assert cli("ledger", "list")[1].startswith("No named ledger")


def test_a_review_study_prints_no_record_total_and_db_names_the_store(workshop):
    study = _file_study(workshop)
    study.write_text(study.read_text().replace("mode: teaching", "mode: review"))
    db = f"sqlite:///{workshop / 'elsewhere.sqlite'}"
    code, out, err = cli("run", str(study), "--out", str(workshop / "o"), "-q", "--ledger", "r", "--db", db)
    assert code == EXIT_OK, err
    assert "elsewhere.sqlite" in out and "largest" not in out
    assert cli("ledger", "show", "r", "--db", db)[0] == EXIT_OK
    assert cli("ledger", "show", "r")[0] == EXIT_ERROR  # not in the default store


ENGINE_STUDY = """
version: 1
mode: teaching
seed: 2
data:
  path: cbp.parquet
  engine: duckdb
  duckdb: {memory_limit: 1GB, threads: 2}
  schema: {id: ESTAB_ID, measures: [EMP, PAYANN], groups: [STATE]}
policy:
  thresholds: {EMP: 100, PAYANN: 10000}
workload:
  queries:
    - {kind: count, group_by: [STATE], rho: 0.5}
    - {kind: sum, measure: EMP, group_by: [STATE], rho: 0.5}
mechanisms:
  - kind: unit_splitting
"""


@pytest.mark.xdist_group("engines")
def test_a_table_held_by_an_engine_is_named_by_its_files_and_keeps_public_forms(workshop):
    from prdp_core.data import samples

    folder = workshop / "big"
    folder.mkdir()
    samples.write_sample("cbp_like", folder / "cbp.parquet", rows=20_000, seed=1, chunk_rows=10_000)
    cfg = folder / "study.yaml"
    cfg.write_text(ENGINE_STUDY)
    for out in ("o1", "o2"):
        code, stdout, err = cli("run", str(cfg), "--out", str(workshop / out), "-q", "--ledger", "big")
        assert code == EXIT_OK, err
    a, b = _stored("big")
    ident = a.fingerprint["identity"]
    assert ident["files"][0][0].endswith("cbp.parquet") and ident["files"][0][1] > 0 and "sha256" not in ident
    assert a.largest is None and b.total_rho is None  # the records stay in DuckDB: no record-by-record totals
    code, text, _ = cli("ledger", "show", "big")
    assert code == EXIT_OK and "held by an engine" in text and "cbp.parquet (1 file(s)" in text
    samples.write_sample("cbp_like", folder / "cbp.parquet", rows=20_000, seed=9, chunk_rows=10_000)  # new data
    code, _, err = cli("run", str(cfg), "--out", str(workshop / "o3"), "-q", "--ledger", "big")
    assert code == EXIT_ERROR and "belongs to cbp.parquet" in err


def test_suggest_thresholds_writes_a_private_study_and_charges_the_ledger(workshop):
    src = (ROOT / "examples" / "cbp_unit_splitting.yaml").read_text()
    study = workshop / "cbp.yaml"
    study.write_text(src.replace("mechanisms:\n  - kind: unit_splitting\n",
                                 "mechanisms:\n  - kind: unit_splitting\n    secure: true\n"))
    new = workshop / "cbp_private.yaml"
    code, out, err = cli("suggest", "thresholds", str(study), "--range", "EMP=1:1e5", "--range", "PAYANN=10:1e8",
                         "--percentile", "97", "--epsilon", "0.2", "--secure", "--out", str(new), "--ledger", "L")
    assert code == EXIT_OK, err
    assert "T(EMP) = " in out and "cost ε = 0.2" in out and "ledger 'L'" in out
    cfg = load_config(new)
    assert cfg.policy["threshold_source"] == {"EMP": "private: DP p97, ε = 0.1",
                                              "PAYANN": "private: DP p97, ε = 0.1"}
    assert cfg.policy["thresholds"]["PAYQTR1"] == 2500  # measures not suggested keep their typed threshold
    # a secure review run accepts the private thresholds, and its releases add to the same ledger
    code, out, err = cli("run", str(new), "--out", str(workshop / "o"), "--ledger", "L", "-q")
    assert code == EXIT_OK, err
    stored = _stored("L")
    assert [s.entry.mechanism for s in stored][0] == "dp_quantile" and len(stored) == 2
    assert stored[0].entry.secure and stored[0].entry.loss.value == pytest.approx(0.2)
    # bad input says what to fix
    for bad, words in ((("--range", "EMP=1-1e5"), "MEASURE=LO:HI"), (("--range", "NOPE=1:10"), "not a measure"),
                       (("--range", "EMP=0:10"), "lo > 0")):
        code, _, err = cli("suggest", "thresholds", str(study), *bad, "--epsilon", "0.1", "--out",
                           str(workshop / "x.yaml"))
        assert code != EXIT_OK and words in err, err
    code, _, err = cli("suggest", "thresholds", str(study), "--range", "EMP=1:10", "--epsilon", "0.1", "--out",
                       str(workshop / "x.yaml"))
    assert code == EXIT_OK and "in no ledger" in err


def test_ledger_show_the_ledger_line_and_suggest_print_through_the_review_boundary(workshop, monkeypatch):
    """Each of these outputs is made by its registered builder (the review boundary), in the command's mode: a
    builder swapped for one that names its mode and subject is what the command prints."""
    from dataclasses import replace

    from prdp_core.review import review_boundary as B

    def spy(name):
        def build(subject, teaching, **context):
            return f"<{name}: {'teaching' if teaching else 'review'}; {type(subject).__name__}>\n"
        monkeypatch.setitem(B.REGISTRY, name, replace(B.REGISTRY[name], build=build))

    for name in ("prdp ledger show (terminal)", "prdp run --ledger (terminal)", "prdp suggest thresholds (terminal)"):
        spy(name)
    study = _file_study(workshop)
    code, out, err = cli("run", str(study), "--out", str(workshop / "o1"), "-q", "--ledger", "firms")
    assert code == EXIT_OK, err
    assert out.endswith("<prdp run --ledger (terminal): teaching; NamedLedger>\n") and "ledger 'firms'" not in out
    for args, mode in (((), "teaching"), (("--review",), "review"), (("--format", "json"), "teaching")):
        code, out, _ = cli("ledger", "show", "firms", *args)
        assert code == EXIT_OK and out == f"<prdp ledger show (terminal): {mode}; NamedLedger>\n"
    cbp = workshop / "cbp.yaml"
    cbp.write_text((ROOT / "examples" / "cbp_unit_splitting.yaml").read_text())
    code, out, err = cli("suggest", "thresholds", str(cbp), "--range", "EMP=1:1e5", "--epsilon", "0.2",
                         "--out", str(workshop / "cbp_private.yaml"), "--ledger", "L")
    assert code == EXIT_OK, err
    assert "mode: review" in cbp.read_text()  # a review study: both lines made in review mode
    assert out == ("<prdp suggest thresholds (terminal): review; PrivateThresholds>\n"
                   "<prdp run --ledger (terminal): review; NamedLedger>\n")
