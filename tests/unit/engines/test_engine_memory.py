"""DuckDB under its memory limit: the checks of a table spill to disk instead of failing, and running out of memory
says what to change."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prdp_core import engines
from prdp_core.core.errors import ResourceLimitError
from prdp_core.data import Schema
from prdp_core.engines.duckdb_engine import DuckDBEngine

pytestmark = pytest.mark.xdist_group("engines")


def test_the_duplicate_id_check_spills_instead_of_running_out_of_memory(tmp_path):
    """2·10⁶ distinct ids under a 40 MB limit: ``count(DISTINCT id)`` cannot spill and runs out of memory; the check
    groups instead (as at 10⁸ ids under the default limit), and still finds planted duplicates."""
    n = 2_000_000
    ids = np.random.default_rng(1).permutation(n).astype(np.int64) * 7919
    path = tmp_path / "ids.parquet"
    pd.DataFrame({"id": ids, "x": np.ones(n)}).to_parquet(path)
    low = engines.EngineOptions(memory_limit="40MB", threads=2)
    ds = engines.open_dataset(path, schema={"id_col": "id", "measures": ["x"]}, engine="duckdb", options=low)
    assert ds.n == n and not any("generated" in note for note in ds.notes)
    ids[[5, 6, 7]] = ids[0]  # three records repeat the first one's id
    pd.DataFrame({"id": ids, "x": np.ones(n)}).to_parquet(path)
    eng = DuckDBEngine.open(str(path), options=low)
    assert eng.duplicate_values("id") == (3, (str(ids[0]),))
    chk = eng.check(Schema(id_col="id", measures=("x",)))
    assert chk.duplicate_ids == 3 and chk.duplicate_id_examples == (str(ids[0]),)


def test_running_out_of_memory_names_the_limit_and_where_to_raise_it(tmp_path):
    path = tmp_path / "t.parquet"
    pd.DataFrame({"id": [1, 2, 3], "x": [1.0, 2.0, 3.0]}).to_parquet(path)
    eng = DuckDBEngine.open(str(path), options=engines.EngineOptions(memory_limit="20MB", threads=1))
    with pytest.raises(ResourceLimitError) as err:
        eng._exec("SELECT list(range) FROM range(20000000)")  # a list cannot spill
    text = f"{err.value} {err.value.hint}"
    assert "20MB" in text and "PRDP_DUCKDB_MEMORY_LIMIT" in text and "data.duckdb.memory_limit" in text
    assert "GB free" in text
