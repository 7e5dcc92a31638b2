"""The memory budget of heavy steps (prdp_core.data.memory): models, refusals, limits from the environment."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import prdp_core
from prdp_core.core.errors import ConfigError, ResourceLimitError
from prdp_core.data import memory

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_limits_from_the_environment(monkeypatch):
    monkeypatch.delenv(memory.SESSION_ENV, raising=False)
    monkeypatch.delenv(memory.SERVER_ENV, raising=False)


def test_estimate_is_rows_times_columns_times_cell_bytes_times_factor():
    for step, model in memory.STEPS.items():
        assert memory.estimate_mb(step, 1_000_000, 5) == pytest.approx(
            1_000_000 * 5 * model.cell_bytes * model.factor / 2**20)
        assert model.factor > 0 and model.units and model.hint and model.what
    assert memory.estimate_mb("release", 0, 5) == 0.0
    assert memory.estimate_mb("release", 10, 0) == memory.estimate_mb("release", 10, 1)  # at least one column


def test_defaults_session_2000_mb_and_server_three_quarters_of_physical_memory():
    assert memory.session_budget_mb() == 2_000.0
    assert memory.server_limit_mb() == pytest.approx(0.75 * memory.physical_memory_mb())
    assert 1_000 < memory.physical_memory_mb() < 1e8


def test_check_returns_the_estimate_under_the_limits():
    est = memory.check("release", 200_000, 6, rss_reader=lambda: 500.0)
    assert est == pytest.approx(memory.estimate_mb("release", 200_000, 6))


def test_refused_over_the_session_budget_naming_the_limit(monkeypatch):
    monkeypatch.setenv(memory.SESSION_ENV, "100")
    est = memory.estimate_mb("release", 10_000_000, 6)
    assert est > 100
    with pytest.raises(ResourceLimitError) as err:
        memory.check("release", 10_000_000, 6, rss_reader=lambda: 0.0)
    msg = str(err.value)
    assert "per-session memory budget of 100 MB" in msg and memory.SESSION_ENV in msg
    assert f"{est:,.0f} MB" in msg and "Release fewer queries" in msg
    memory.check("release", 1_000, 6, rss_reader=lambda: 0.0)  # a small release still runs


def test_refused_when_the_server_holds_too_much_with_an_injected_rss(monkeypatch):
    monkeypatch.setenv(memory.SERVER_ENV, "10000")
    est = memory.estimate_mb("preview", 1_000_000, 6)
    memory.check("preview", 1_000_000, 6, rss_reader=lambda: 10_000 - est - 1)
    with pytest.raises(ResourceLimitError) as err:
        memory.check("preview", 1_000_000, 6, rss_reader=lambda: 10_000 - est + 1)
    msg = str(err.value)
    assert "server is short of memory" in msg and "limit of 10,000 MB" in msg and memory.SERVER_ENV in msg
    assert "Nothing was changed" in msg
    with pytest.raises(ResourceLimitError, match="server is short of memory"):
        memory.check("load", 0, 1, rss_reader=lambda: 10_001)  # over the limit: even a small step waits


@pytest.mark.parametrize("bad", ["abc", "0", "-5", "nan", "inf"])
def test_a_bad_limit_in_the_environment_is_a_clear_error(monkeypatch, bad):
    monkeypatch.setenv(memory.SESSION_ENV, bad)
    with pytest.raises(ConfigError, match=f"{memory.SESSION_ENV}: must be a positive number of megabytes"):
        memory.check("release", 10, 1, rss_reader=lambda: 0.0)


def test_limits_read_from_the_environment(monkeypatch):
    monkeypatch.setenv(memory.SESSION_ENV, "1_500")
    monkeypatch.setenv(memory.SERVER_ENV, "18000")
    assert memory.session_budget_mb() == 1_500.0
    assert memory.server_limit_mb() == 18_000.0


def test_the_rss_reader_follows_real_allocations():
    before = memory.server_rss_mb()
    assert before > 10
    block = np.ones(100 * 2**20 // 8)  # 100 MB, touched
    grown = memory.server_rss_mb()
    del block
    assert grown - before > 80


def test_release_free_memory_trims_on_glibc():
    import platform

    trimmed = memory.release_free_memory()
    assert trimmed == (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc")


def test_every_guarded_step_has_a_model():
    """Every ``guard("step", …)`` in ui/ and app_pages/ names a model of prdp_core.data.memory.STEPS."""
    used = set()
    for path in [*ROOT.glob("ui/*.py"), *ROOT.glob("app_pages/*.py")]:
        used |= set(re.findall(r"guard\(\"([a-z_]+)\"", path.read_text()))
    assert used and used <= set(memory.STEPS)
    assert {"preview", "release", "sweep", "simulation", "report"} <= used
    # a table enters through the one route guard (its load, prepare and sample models), never a step of its own
    assert not used & {"load", "prepare", "sample"}


def _firms(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"estab_id": [f"E{i}" for i in range(n)], "firm": [f"F{i // 3}" for i in range(n)],
                         "county": [f"C{c}" for c in rng.integers(0, 300, size=n)],
                         "emp": np.ceil((1 - rng.random(n)) ** (-1 / 1.2)),
                         "payroll": np.round(rng.lognormal(5, 2, size=n), 2)})


def test_models_do_not_understate_measured_peaks():
    """The estimate of each data step is at least its measured peak (tracemalloc) on a 50,000-row table."""
    import tracemalloc

    from prdp_core.core.splitting import as_thresholds
    from prdp_core.core.workload import SplittingPolicy, default_workload
    from prdp_core.mechanisms.preview import preview_policy
    from prdp_core.mechanisms.unit_splitting import release

    df = _firms(50_000)
    data = df.to_csv(index=False).encode()
    schema = prdp_core.data.guess_schema(df)
    ds = prdp_core.prepare_dataset(df, schema, name="firms")
    pol = SplittingPolicy(as_thresholds({"emp": 20.0, "payroll": 5000.0}),
                          default_workload(("emp", "payroll"), ("county",), rho_count=0.5, rho_sum=0.25))
    k = len(schema.measures) + len(schema.groups) + 3
    steps = {
        "load": (memory.estimate_mb("load", len(data)), lambda: prdp_core.load_table(data, filename="f.csv")),
        "prepare": (memory.estimate_mb("prepare", len(df), df.shape[1]),
                    lambda: prdp_core.prepare_dataset(df, schema, name="firms")),
        "preview": (memory.estimate_mb("preview", ds.n, k), lambda: preview_policy(ds, pol).summary()),
        "release": (memory.estimate_mb("release", ds.n, k),
                    lambda: release(ds, pol, rng=np.random.default_rng(0), reveal=True)),
    }
    for step, (est, fn) in steps.items():
        tracemalloc.start()
        try:
            fn()
            peak = tracemalloc.get_traced_memory()[1] / 2**20
        finally:
            tracemalloc.stop()
        assert est >= peak, (step, est, peak)


def test_engine_work_is_bounded_by_the_engine_limit_not_by_the_records(monkeypatch):
    """Engine steps model DuckDB's memory limit (it spills beyond it), never rows × columns: a 10⁸-row table is
    no reason to refuse, a server without room for the engine's limit is; the session budget does not apply."""
    assert memory.size_bytes("2GB") == 2e9 and memory.size_bytes("1.5 GiB") == 1.5 * 2**30
    with pytest.raises(ConfigError):
        memory.size_bytes("lots")
    monkeypatch.setenv(memory.SESSION_ENV, "100")  # far below the engine's limit: not what decides
    assert memory.check_engine("2GB", rss_reader=lambda: 500.0) == pytest.approx(2e9 / 2**20)
    monkeypatch.setenv(memory.SERVER_ENV, "3000")
    with pytest.raises(ResourceLimitError) as err:
        memory.check_engine("2GB", rss_reader=lambda: 1_500.0)
    assert "engine's work on a large table" in str(err.value) and memory.SERVER_ENV in str(err.value)


def test_the_route_guard_models_a_sample_by_its_records_and_columns_before_it_is_generated(monkeypatch):
    """The share link of the finding (cbp_like, 10⁷ records) and the Study page's 5·10⁶ are refused by the model
    the Data page uses (records × (measures + groups + id + owner)), before any generation; the default size
    passes; a real sample read whole is modelled by its file; a file by its bytes, a read table by its cells."""
    assert memory.sample_size("cbp_like", None) == (100_000, 12)
    assert memory.sample_size("cbp_like", 10_000_000) == (10_000_000, 12)
    generated = []
    monkeypatch.setattr(prdp_core.data.samples, "load", lambda *a, **k: generated.append(a) or pd.DataFrame())
    for n in (10_000_000, 5_000_000):
        with pytest.raises(ResourceLimitError) as err:
            memory.guard_table(sample="cbp_like", n=n)
        est = memory.estimate_mb("sample", n, 12)
        assert f"about {est:,.0f} MB" in str(err.value) and memory.SESSION_ENV in str(err.value)
        assert "Ask for fewer records" in err.value.hint
    assert not generated
    assert memory.guard_table(sample="cbp_like") == pytest.approx(memory.estimate_mb("sample", 100_000, 12))
    size = (prdp_core.data.samples.sample_dir() / "real_world_cities.csv").stat().st_size
    assert memory.guard_table(sample="world_cities") == pytest.approx(memory.estimate_mb("load", size))
    assert memory.guard_table(file_bytes=2**20) == pytest.approx(memory.estimate_mb("load", 2**20))
    assert memory.guard_table(rows=1000, columns=5) == pytest.approx(memory.estimate_mb("prepare", 1000, 5))
    with pytest.raises(ResourceLimitError, match="server is short of memory"):
        memory.guard_table(file_bytes=2**20, rss_reader=lambda: 1e12)
    with pytest.raises(TypeError):
        memory.guard_table()
    with pytest.raises(prdp_core.core.errors.ParameterError, match="Unknown sample"):
        memory.guard_table(sample="nope")


def test_the_data_folder_and_the_cli_ask_the_route_guard(monkeypatch, tmp_path):
    """The workshop's data-folder tables and every CLI command's data (prdp_core.study.config.load_data) ask the guard
    before reading or generating; `prdp run` and `prdp validate` refuse an oversize sample with exit 4."""
    from prdp_core.board import workshop as W
    from prdp_core.commands.cli import EXIT_DATA, main

    generated = []
    monkeypatch.setattr(prdp_core.data.samples, "load", lambda *a, **k: generated.append(a) or pd.DataFrame())
    cfg = tmp_path / "big.yaml"
    cfg.write_text("version: 1\ndata: {sample: cbp_like, n: 10000000}\nmechanisms: [{kind: prdp, query: count}]\n"
                   "policy: {budget: {preset: constant, eps: 1}}\n")
    for command in ("run", "validate"):
        args = [command, str(cfg)] + (["--out", str(tmp_path / "o")] if command == "run" else [])
        out, err = io.StringIO(), io.StringIO()
        assert main(args, stdout=out, stderr=err) == EXIT_DATA, err.getvalue()
        assert "per-session memory budget" in err.getvalue() and memory.SESSION_ENV in err.getvalue()
    assert not generated and not (tmp_path / "o").exists()
    asked = []

    def refuse(**kw):
        asked.append(kw)
        raise ResourceLimitError("Planted refusal.")

    monkeypatch.setattr(memory, "guard_table", refuse)
    (tmp_path / "firms.csv").write_text("id,emp\n1,5\n2,7\n")
    with pytest.raises(ResourceLimitError, match="Planted"):
        W.load_file(tmp_path, "firms.csv")
    cfg.write_text("version: 1\ndata: {path: firms.csv}\n")
    from prdp_core.study.config import load_config, load_data

    with pytest.raises(ResourceLimitError, match="Planted"):
        load_data(load_config(cfg))
    assert asked == [{"file_bytes": (tmp_path / "firms.csv").stat().st_size}] * 2


def test_release_free_memory_returns_the_pages_arrows_pool_kept():
    """pandas' text columns live in Arrow's memory pool, whose allocator keeps freed pages: an ended session's
    tables stayed resident after malloc_trim alone; release_free_memory returns them too."""
    import gc

    import pyarrow as pa
    import pyarrow.compute as pc

    memory.release_free_memory()
    before = memory.server_rss_mb()
    text = pd.Series(pc.cast(pa.array(np.arange(4_000_000) * 7919), pa.string()), dtype="str")
    held = memory.server_rss_mb()
    assert held - before > 40 and pa.total_allocated_bytes() > 40 * 2**20
    del text
    gc.collect()
    memory.release_free_memory()
    assert memory.server_rss_mb() - before < 0.25 * (held - before)
