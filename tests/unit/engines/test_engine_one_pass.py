"""One pass where possible: a ``prdp run`` on a DuckDB table reads the table once per distinct statement, and the
preparation's checks count what the prepared view needs (rows, minima, negatives, whole-number test) in their own
pass instead of scanning the measures again. Counted by wrapping the engine's execution."""

from __future__ import annotations

import io
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from prdp_core import engines
from prdp_core.commands.cli import main
from prdp_core.data import Schema
from prdp_core.engines.duckdb_engine import DuckDBEngine

pytestmark = pytest.mark.xdist_group("engines")

STUDY = """version: 1
title: one pass
mode: teaching
seed: 4
data:
  path: t.parquet
  engine: duckdb
  schema: {id: EID, measures: [EMP, PAY], groups: [STATE], owner: FIRM}
policy:
  thresholds:
    group_column: STATE
    rows:
      "*": {EMP: 100, PAY: 10000}
workload:
  partition_rho: 0.1
  queries:
    - {kind: count, group_by: [STATE], rho: 0.5}
    - {kind: sum, measure: EMP, group_by: [STATE], rho: 0.5}
    - {kind: sum, measure: PAY, group_by: [STATE], rho: 0.5}
mechanisms:
  - kind: unit_splitting
"""


def _table(path, n=20_000):
    rng = np.random.default_rng(3)
    pd.DataFrame({"EID": rng.permutation(n), "EMP": np.floor(np.exp(rng.uniform(0, 7, n))),
                  "PAY": np.floor(np.exp(rng.uniform(0, 12, n))), "STATE": [f"S{i % 7}" for i in range(n)],
                  "FIRM": rng.integers(0, n // 3, n)}).to_parquet(path)


@pytest.fixture
def scans(monkeypatch):
    """The statements run over the table (its file's view or a view of it), in order."""
    monkeypatch.setenv("PRDP_CACHE_DIR", "off")
    seen: list[str] = []
    run, frame = DuckDBEngine._run, DuckDBEngine._frame

    def note(sql: str) -> None:
        head = sql.lstrip().split(None, 1)[0].upper()
        if head not in ("DESCRIBE", "CREATE", "DROP") and ("prdp_src_" in sql or "prdp_view_" in sql):
            seen.append(sql)

    def counted_run(self, sql, params):
        note(sql)
        return run(self, sql, params)

    def counted_frame(self, sql):
        note(sql)
        return frame(self, sql)

    monkeypatch.setattr(DuckDBEngine, "_run", counted_run)
    monkeypatch.setattr(DuckDBEngine, "_frame", counted_frame)
    return seen


def test_a_run_reads_the_table_once_per_statement(tmp_path, scans):
    _table(tmp_path / "t.parquet")
    (tmp_path / "s.yaml").write_text(STUDY, encoding="utf-8")
    assert main(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"), "-q"], stdout=io.StringIO(),
                stderr=io.StringIO()) == 0
    repeated = {sql[:120]: k for sql, k in Counter(scans).items() if k > 1}
    assert not repeated, repeated  # the release, its report and the owners' losses share one split histogram
    # checks, duplicate ids, distinct states, missing states, cells, split histogram, records' losses (two: their
    # range, then their values), missing owners: nine statements; seven more when the preparation counted the rows
    # (twice), minima and whole numbers again and the histogram was computed three times. The owners' losses are
    # aggregated into a temporary table besides.
    assert len(scans) <= 9, [s[:100] for s in scans]


def test_the_preparation_reads_the_measures_in_the_checks_pass(tmp_path, scans):
    _table(tmp_path / "t.parquet")
    ds = engines.open_dataset(tmp_path / "t.parquet", schema=Schema(id_col="EID", measures=("EMP", "PAY"),
                                                                   groups=("STATE",)), engine="duckdb")
    measures = [s for s in scans if '"EMP"' in s or '"PAY"' in s]
    assert len(measures) == 1, [s[:100] for s in measures]  # the checks; no second pass for minima, negatives
    before = len(scans)
    assert ds.n == 20_000
    hist = ds.engine.split_histogram({"EMP": 100.0, "PAY": 10_000.0})
    assert len(scans) == before + 1  # the histogram only: rows and whole-number tests came with the checks
    assert hist.n == 20_000
    mem = engines.open_dataset(pd.read_parquet(tmp_path / "t.parquet"), schema=ds.schema, engine="memory")
    ref = mem.engine.split_histogram({"EMP": 100.0, "PAY": 10_000.0})
    assert ref.keys.equals(hist.keys) and np.array_equal(ref.counts, hist.counts)
