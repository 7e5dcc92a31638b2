"""prdp run --out: never through a symbolic link, never over a file prdp did not write without --force;
exit codes as documented for every error class (a Parquet file with nested columns is a data problem)."""

from __future__ import annotations

import inspect
import io
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prdp_core.commands import cli
from prdp_core.commands.cli import (
    EXIT_CONFIG,
    EXIT_DATA,
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    exit_code,
    main,
)
from prdp_core.core import errors
from prdp_core.io.outputs import MANIFEST, write_files
from prdp_core.review import report as R

STUDY = ("version: 1\nmode: teaching\nseed: 1\ndata: {sample: cbp_like, n: 600, seed: 1}\n"
         "policy: {thresholds: {EMP: 50}}\nworkload: {queries: [{kind: sum, measure: EMP, group_by: [STATE]}]}\n"
         "mechanisms: [{kind: unit_splitting}]\n")


def _cli(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, err.getvalue()


@pytest.fixture
def study(tmp_path):
    cfg = tmp_path / "study.yaml"
    cfg.write_text(STUDY, encoding="utf-8")
    return cfg


@pytest.fixture
def shared(tmp_path):
    """An existing output folder and, next to it, a file nobody wants overwritten."""
    out = tmp_path / "out"
    out.mkdir()
    other = tmp_path / "other.txt"
    other.write_text("keep me", encoding="utf-8")
    return out, other


def test_a_symbolic_link_in_the_out_folder_is_never_followed(study, shared):
    out, other = shared
    (out / "report.html").symlink_to(other)
    code, err = _cli("run", str(study), "--out", str(out), "-q")
    assert code == EXIT_USAGE
    assert "symbolic links (report.html)" in err and "--force" in err and "running" not in err
    assert other.read_text(encoding="utf-8") == "keep me" and not (out / "results.csv").exists()
    code, err = _cli("run", str(study), "--out", str(out), "-q", "--force")
    assert code == EXIT_OK, err
    assert other.read_text(encoding="utf-8") == "keep me"  # the link was replaced, not followed
    assert not (out / "report.html").is_symlink() and "<html" in (out / "report.html").read_text(encoding="utf-8")


def test_an_out_folder_that_is_a_link_is_refused(study, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    for extra in ([], ["--force"]):
        code, err = _cli("run", str(study), "--out", str(tmp_path / "link"), "-q", *extra)
        assert code == EXIT_USAGE and "is a symbolic link" in err
    assert not any(real.iterdir())


def test_own_outputs_are_overwritten_others_only_with_force(study, tmp_path):
    out = tmp_path / "out"
    assert _cli("run", str(study), "--out", str(out), "-q")[0] == EXIT_OK
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"]
    assert sorted(manifest) == sorted(R.OUTPUT_FILES) and all(len(h) == 64 for h in manifest.values())
    assert _cli("run", str(study), "--out", str(out), "-q")[0] == EXIT_OK  # its own earlier outputs
    (out / "budget.csv").write_text("edited by hand", encoding="utf-8")
    code, err = _cli("run", str(study), "--out", str(out), "-q")
    assert code == EXIT_USAGE and "files prdp did not write or that changed since (budget.csv)" in err
    assert (out / "budget.csv").read_text(encoding="utf-8") == "edited by hand"
    assert _cli("run", str(study), "--out", str(out), "-q", "--force")[0] == EXIT_OK
    assert (out / "budget.csv").read_text(encoding="utf-8") != "edited by hand"

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "results.csv").write_text("my own table", encoding="utf-8")
    (mine / "notes.txt").write_text("unrelated", encoding="utf-8")
    code, err = _cli("run", str(study), "--out", str(mine), "-q")
    assert code == EXIT_USAGE and "(results.csv)" in err
    assert (mine / "results.csv").read_text(encoding="utf-8") == "my own table"
    (mine / "results.csv").unlink()
    assert _cli("run", str(study), "--out", str(mine), "-q")[0] == EXIT_OK  # other files are left alone
    assert (mine / "notes.txt").read_text(encoding="utf-8") == "unrelated"


def test_a_forged_manifest_cannot_make_prdp_write_through_a_link_or_hard_link(study, shared):
    out, other = shared
    (out / "ledger.csv").symlink_to(other)
    os.link(other, out / "report.html")  # the same file under an output name
    import hashlib

    digest = hashlib.sha256(b"keep me").hexdigest()
    (out / MANIFEST).write_text(json.dumps({"files": {"ledger.csv": digest, "report.html": digest}}), encoding="utf-8")
    code, err = _cli("run", str(study), "--out", str(out), "-q")
    assert code == EXIT_USAGE and "symbolic links (ledger.csv)" in err  # a link is never "its own"
    code, err = _cli("run", str(study), "--out", str(out), "-q", "--force")
    assert code == EXIT_OK, err
    assert other.read_text(encoding="utf-8") == "keep me"  # neither the link nor the hard link was written through


def test_folders_and_pipes_named_like_outputs(study, tmp_path):
    out = tmp_path / "out"
    (out / "report.html").mkdir(parents=True)
    for extra in ([], ["--force"]):
        code, err = _cli("run", str(study), "--out", str(out), "-q", *extra)
        assert code == EXIT_USAGE and "folders named like outputs: report.html" in err
    (out / "report.html").rmdir()
    os.mkfifo(out / "ledger.csv")
    code, err = _cli("run", str(study), "--out", str(out), "-q")  # refused without waiting on the pipe
    assert code == EXIT_USAGE and "(ledger.csv)" in err
    assert _cli("run", str(study), "--out", str(out), "-q", "--force")[0] == EXIT_OK


def test_write_files_from_python(tmp_path):
    other = tmp_path / "other.txt"
    other.write_text("keep me", encoding="utf-8")
    (tmp_path / "a.txt").symlink_to(other)
    with pytest.raises(errors.OutputError, match="symbolic links"):
        write_files(tmp_path, {"a.txt": b"new"})
    assert write_files(tmp_path, {"a.txt": b"new"}, force=True)["a.txt"].read_bytes() == b"new"
    assert other.read_text(encoding="utf-8") == "keep me"
    assert write_files(tmp_path, {"a.txt": b"newer"})["a.txt"].read_bytes() == b"newer"  # now its own
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_parquet_with_list_struct_or_binary_columns_is_a_data_problem(tmp_path):
    for name, column in {"lst": [[1], [2, 3], []], "st": [{"a": 1}, {"a": 2}, {"a": 3}],
                         "bin": [b"x", b"y", b"z"]}.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"id": [1, 2, 3], "v": [1.0, 2.0, 3.0], name: column}), path)
        cfg = tmp_path / f"{name}.yaml"
        cfg.write_text(f"version: 1\ndata: {{path: {name}.parquet}}\n", encoding="utf-8")
        for argv in (["validate", str(cfg)], ["run", str(cfg), "--out", str(tmp_path / "o"), "-q"]):
            code, err = _cli(*argv)
            assert code == EXIT_DATA, err
            assert f"Columns of a type the app cannot use: {name} (" in err and "internal error" not in err


#: The documented exit code of every error class (docs: prdp_core/commands/cli.py, README, docs/config.md).
EXPECTED_EXIT = {"PrdpError": EXIT_ERROR, "DataError": EXIT_DATA, "SchemaError": EXIT_DATA,
                 "ResourceLimitError": EXIT_DATA, "ConfigError": EXIT_CONFIG, "OutputError": EXIT_USAGE,
                 "PolicyError": EXIT_ERROR, "ExpressionError": EXIT_ERROR, "ParameterError": EXIT_ERROR,
                 "StoreError": EXIT_ERROR, "AccessError": EXIT_ERROR, "EngineError": EXIT_ERROR,
                 "SimulationRefused": EXIT_ERROR}


def test_every_error_class_has_its_documented_exit_code():
    classes = {n: c for n, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.PrdpError)}
    assert set(classes) == set(EXPECTED_EXIT), "a new error class needs its exit code documented and tested here"
    for name, cls in classes.items():
        assert exit_code(cls("x")) == EXPECTED_EXIT[name], name
    assert exit_code(TypeError("x")) == EXIT_INTERNAL
    doc = Path(cli.__file__).read_text(encoding="utf-8")
    assert "4     data problem" in doc and "2     usage error" in doc
