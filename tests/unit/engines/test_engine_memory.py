"""DuckDB under its memory limit: the checks of a table spill to disk instead of failing, and running out of memory
says what to change. Each case runs in a process of its own: a query made to exhaust DuckDB's memory must not share
the test worker's native threads with the tests after it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("engines")

ROOT = Path(__file__).resolve().parents[3]

SPILLS = """
import sys
import numpy as np, pandas as pd
from prdp_core import engines
from prdp_core.data import Schema
from prdp_core.engines.duckdb_engine import DuckDBEngine
path = sys.argv[1]
n = 2_000_000
ids = np.random.default_rng(1).permutation(n).astype(np.int64) * 7919
pd.DataFrame({"id": ids, "x": np.ones(n)}).to_parquet(path)
low = engines.EngineOptions(memory_limit="40MB", threads=2)
ds = engines.open_dataset(path, schema={"id_col": "id", "measures": ["x"]}, engine="duckdb", options=low)
assert ds.n == n and not any("generated" in note for note in ds.notes), ds.notes
ids[[5, 6, 7]] = ids[0]  # three records repeat the first one's id
pd.DataFrame({"id": ids, "x": np.ones(n)}).to_parquet(path)
eng = DuckDBEngine.open(path, options=low)
assert eng.duplicate_values("id") == (3, (str(ids[0]),)), eng.duplicate_values("id")
chk = eng.check(Schema(id_col="id", measures=("x",)))
assert chk.duplicate_ids == 3 and chk.duplicate_id_examples == (str(ids[0]),)
print("ok")
"""

OUT_OF_MEMORY = """
import sys
import pandas as pd
from prdp_core import engines
from prdp_core.core.errors import ResourceLimitError
from prdp_core.engines.duckdb_engine import DuckDBEngine
path = sys.argv[1]
pd.DataFrame({"id": [1, 2, 3], "x": [1.0, 2.0, 3.0]}).to_parquet(path)
eng = DuckDBEngine.open(path, options=engines.EngineOptions(memory_limit="20MB", threads=1))
try:
    eng._exec("SELECT list(range) FROM range(20000000)")  # a list cannot spill
except ResourceLimitError as err:
    print(f"{err} {err.hint}")
"""


def _run(code: str, path: Path) -> str:
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=240,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PRDP_CACHE_DIR": "off",
                                         "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_duplicate_id_check_spills_instead_of_running_out_of_memory(tmp_path):
    """2·10⁶ distinct ids under a 40 MB limit: ``count(DISTINCT id)`` cannot spill and runs out of memory; the check
    groups instead (as at 10⁸ ids under the default limit), and still finds planted duplicates."""
    assert _run(SPILLS, tmp_path / "ids.parquet").strip() == "ok"


def test_running_out_of_memory_names_the_limit_and_where_to_raise_it(tmp_path):
    text = _run(OUT_OF_MEMORY, tmp_path / "t.parquet")
    assert "20MB" in text and "PRDP_DUCKDB_MEMORY_LIMIT" in text and "data.duckdb.memory_limit" in text
    assert "GB free" in text


def test_running_out_of_memory_gives_the_limit_the_statement_needed_as_measured(tmp_path):
    """The limit to set is DuckDB's own count when it failed (what it held plus what it asked for), not a guess."""
    import re

    from prdp_core.engines.duckdb_engine import needed_limit

    text = _run(OUT_OF_MEMORY, tmp_path / "t.parquet")
    held = re.search(r"of size ([\d.]+) MiB \(([\d.]+) MiB/", text)
    assert held is not None, text
    need = needed_limit(text, "20MB")
    assert need is not None and need.endswith("MB")
    assert int(need[:-2]) >= (float(held.group(1)) + float(held.group(2))) * 2**20 / 1e6 and int(need[:-2]) > 20
    assert f"had to hold more than {need}" in text and f"PRDP_DUCKDB_MEMORY_LIMIT={need}" in text
    assert needed_limit("failed to allocate data of size 512.0 MiB (1.5 GiB/1.8 GiB used)", "2GB") == "2.2GB"
    # DuckDB's sizes are rounded: the limit set is never less than the one it failed within plus what it asked for
    assert needed_limit("could not allocate block of size 256.0 KiB (18.8 MiB/19.0 MiB used)", "20MB") == "21MB"
    assert needed_limit("Out of Memory Error: no sizes here") is None


def test_a_statement_out_of_memory_on_several_threads_runs_again_on_one(tmp_path):
    """A statement that runs out of memory on two threads runs once more on one thread (each thread's partitions of
    a large aggregation need their own memory), and the thread count is set back; on one thread already, the error
    says what to set."""
    import duckdb
    import pandas as pd

    from prdp_core.core.errors import ResourceLimitError
    from prdp_core.engines import EngineOptions
    from prdp_core.engines.duckdb_engine import DuckDBEngine

    path = tmp_path / "t.parquet"
    pd.DataFrame({"x": [1.0, 2.0]}).to_parquet(path)
    eng = DuckDBEngine.open(path, options=EngineOptions(memory_limit="1GB", threads=2))
    real = eng.con
    seen: list[int] = []
    fewest = [1]  # the fewest threads the sum fails on

    def threads() -> int:
        return int(real.execute("SELECT current_setting('threads')").fetchall()[0][0])

    class Tight:  # DuckDB's connection, out of memory for the sum on more than one thread
        def execute(self, sql, *args):
            if "sum(x)" in sql:
                seen.append(threads())
                if seen[-1] > fewest[0]:
                    raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate data of size 256.0 MiB "
                                                      "(1.9 GiB/1.8 GiB used)")
            return real.execute(sql, *args)

    eng.con = Tight()
    assert eng._run(f"SELECT sum(x) FROM {eng.relation}", None) == [(3.0,)]
    assert seen == [2, 1] and threads() == 2
    assert eng._frame(f"SELECT sum(x) AS s FROM {eng.relation}")["s"].tolist() == [3.0]
    assert seen == [2, 1, 2, 1] and threads() == 2
    real.execute("SET threads = 1")
    fewest[0] = 0
    with pytest.raises(ResourceLimitError, match="ran out of memory") as err:
        eng._run(f"SELECT sum(x) FROM {eng.relation}", None)
    assert "needed" in str(err.value) or "PRDP_DUCKDB_MEMORY_LIMIT" in err.value.hint
    assert seen == [2, 1, 2, 1, 1]
