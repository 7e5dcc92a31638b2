"""Statistics of unchanged files computed once (prdp_core.engines.result_cache): a second ``prdp run`` on the same
file reads no record for its checks and statistics and writes the same results; a changed file is read again; what
must not be kept is not; the kept files are private and checked when read back."""

from __future__ import annotations

import decimal
import io
import json
import stat
from pathlib import Path

import pandas as pd
import pytest

from prdp_core import engines, samples
from prdp_core.commands.cli import EXIT_DATA, EXIT_OK, main
from prdp_core.core.errors import DataError
from prdp_core.engines import result_cache as rc
from prdp_core.engines.duckdb_engine import DuckDBEngine

from .test_engines_study import STUDY

pytestmark = pytest.mark.xdist_group("engines")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(rc.ENV_CACHE_DIR, str(folder))
    rc.clear(memory_only=True)
    yield folder
    rc.clear(memory_only=True)


@pytest.fixture
def queries(monkeypatch):
    """The SQL each DuckDB engine actually ran on its data (statements answered from the cache are not in it)."""
    seen: list[str] = []
    run = DuckDBEngine._run

    def spy(self, sql, params=None):
        if sql.lstrip().upper().startswith(("SELECT", "WITH")):
            seen.append(sql)
        return run(self, sql, params)

    monkeypatch.setattr(DuckDBEngine, "_run", spy)
    return seen


def _run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(argv, stdout=out, stderr=err), err.getvalue()


def _study(tmp_path: Path) -> Path:
    samples.write_sample("cbp_like", tmp_path / "cbp.parquet", rows=20_000, seed=3, chunk_rows=10_000)
    cfg = tmp_path / "study.yaml"
    cfg.write_text(STUDY.format(path="cbp.parquet", engine="duckdb"), encoding="utf-8")
    return cfg


def test_a_second_run_on_an_unchanged_file_reads_no_record_and_writes_the_same_results(tmp_path, cache, queries):
    cfg = _study(tmp_path)
    code, err = _run(["run", str(cfg), "--out", str(tmp_path / "first"), "-q"])
    assert code == EXIT_OK, err
    first = len(queries)
    assert first > 10  # the checks, the profile, the policy's statistics and the release's
    assert any(p.suffix == ".json" for p in cache.rglob("*"))
    rc.clear(memory_only=True)  # a new process: only the files on disk are left
    queries.clear()
    code, err = _run(["run", str(cfg), "--out", str(tmp_path / "second"), "-q"])
    assert code == EXIT_OK, err
    # only what reads a budget function's values (a function of this process, prdp_budget_*) and its temporary
    # results is computed again: no role check (ids, nulls, negatives), profile or policy statistic
    again = [q for q in queries if "prdp_budget_" not in q and "prdp_tmp_" not in q]
    assert again == [], again
    assert len(queries) <= first / 3  # the first run reads each statement once (test_engine_one_pass.py)
    for name in ("results.csv", "budget.csv"):
        assert (tmp_path / "second" / name).read_bytes() == (tmp_path / "first" / name).read_bytes()


def test_the_same_numbers_with_and_without_the_cache(tmp_path, cache, monkeypatch):
    cfg = _study(tmp_path)
    assert _run(["run", str(cfg), "--out", str(tmp_path / "kept"), "-q"])[0] == EXIT_OK
    assert _run(["run", str(cfg), "--out", str(tmp_path / "kept2"), "-q"])[0] == EXIT_OK  # from the cache
    monkeypatch.setenv(rc.ENV_CACHE_DIR, "off")
    assert _run(["run", str(cfg), "--out", str(tmp_path / "plain"), "-q"])[0] == EXIT_OK
    for d in ("kept", "kept2"):
        assert (tmp_path / d / "results.csv").read_bytes() == (tmp_path / "plain" / "results.csv").read_bytes()


def test_a_changed_file_is_checked_again(tmp_path, cache):
    path = tmp_path / "t.parquet"
    pd.DataFrame({"id": [1, 2, 3, 4], "x": [1.0, 2.0, 3.0, 4.0]}).to_parquet(path)
    schema = {"id": "id", "measures": ["x"]}
    assert engines.open_dataset(path, schema=schema, engine="duckdb").n == 4
    pd.DataFrame({"id": [1, 2, 3, 4], "x": [1.0, -2.0, 3.0, 4.0]}).to_parquet(path)  # same size, a negative value
    with pytest.raises(DataError, match="negative"):
        engines.open_dataset(path, schema=schema, engine="duckdb")


def test_what_must_not_be_kept_is_not():
    key = rc.source_key("parquet", [__file__])
    assert key is not None and rc.statement_key(key, "prdp_src_1", "SELECT count(*) FROM prdp_src_1") is not None
    # the same statement on another connection's name of the same relation has the same key
    assert (rc.statement_key(key, "prdp_src_1", "SELECT count(*) FROM prdp_src_1")
            == rc.statement_key(key, "prdp_view_9", "SELECT count(*) FROM prdp_view_9"))
    for sql in ("SELECT count(*) FROM prdp_src_1 JOIN prdp_tab_2 USING (k)",  # a table of the driver
                "SELECT prdp_budget_3(x) FROM prdp_src_1",  # a function of the engine
                "SELECT random() FROM prdp_src_1", "SELECT now(), count(*) FROM prdp_src_1",
                "CREATE VIEW v AS SELECT * FROM prdp_src_1", "INSERT INTO t SELECT 1"):
        assert rc.statement_key(key, "prdp_src_1", sql) is None, sql
    assert rc.statement_key(None, "prdp_src_1", "SELECT 1 FROM prdp_src_1") is None  # no content key
    assert rc.source_key("parquet", [str(Path(__file__).parent / "missing.parquet")]) is None
    assert rc.derived_key(key, "prdp_src_1", "SELECT * FROM prdp_src_1 JOIN prdp_tab_4 USING (k)") is None
    assert rc._keepable([(1,)] * (rc.MAX_ROWS + 1)) is None
    assert rc._keepable([(decimal.Decimal("1.5"),)]) is None
    assert rc._keepable([(1, 2.5, "a", None, True, (1.0, 2.0))]) == [(1, 2.5, "a", None, True, [1.0, 2.0])]


def test_kept_files_are_private_and_checked_when_read(tmp_path, cache):
    key = "ab" + "0" * 62
    rc.put(key, [(1, float("nan"), float("inf"), [0.5, 1.5], "x")])
    path = cache / "ab" / f"{key}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    rc.clear(memory_only=True)
    row = rc.get(key)[0]
    assert row[0] == 1 and row[1] != row[1] and row[2] == float("inf") and row[3] == [0.5, 1.5] and row[4] == "x"
    for junk in ("not json", json.dumps({"v": rc.CACHE_VERSION, "rows": [[{"f": "__import__('os')"}]]}),
                 json.dumps({"v": rc.CACHE_VERSION, "rows": [[{"a": 1}]]}), json.dumps({"v": 99, "rows": [[1]]}),
                 json.dumps({"v": rc.CACHE_VERSION, "rows": "x"}), json.dumps([1, 2])):
        path.write_text(junk, encoding="utf-8")
        rc.clear(memory_only=True)
        assert rc.get(key) is None, junk  # ignored: computed again and written anew


def test_off_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(rc.ENV_CACHE_DIR, "off")
    rc.put("cd" + "0" * 62, [(1,)])
    assert rc.get("cd" + "0" * 62) is None and not rc.enabled()


def test_a_file_with_a_planted_error_is_refused_from_the_cache_too(tmp_path, cache):
    """A refusal is a statistic like the others: the kept checks refuse the same file the same way."""
    path = tmp_path / "neg.parquet"
    pd.DataFrame({"id": [1, 2, 3], "g": ["a", "a", "b"], "x": [1.0, -2.0, 3.0]}).to_parquet(path)
    cfg = tmp_path / "neg.yaml"
    cfg.write_text("version: 1\ndata: {path: neg.parquet, engine: duckdb,\n"
                   "       schema: {id: id, measures: [x], groups: [g]}}\n"
                   "policy:\n  thresholds: {group_column: g, rows: {'*': {x: 2}}}\nworkload:\n  queries:\n"
                   "    - {kind: sum, measure: x, rho: 0.5}\nmechanisms:\n  - kind: unit_splitting\n",
                   encoding="utf-8")
    for _ in range(2):
        code, err = _run(["run", str(cfg), "--out", str(tmp_path / "o"), "-q", "--force"])
        assert code == EXIT_DATA and "negative" in err
        rc.clear(memory_only=True)

