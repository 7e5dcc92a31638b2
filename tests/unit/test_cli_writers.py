"""Every file the CLI writes follows the rules of ``prdp run --out``: never through a symbolic link (a
planted one, a dangling one, or the output folder itself), never over a file prdp did not write without
--force. And ``prdp suggest`` checks ε and its other options before anything is drawn, charged or written."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from prdp_core.board.ledgers import LedgerStore
from prdp_core.board.store import BoardStore
from prdp_core.commands import cli
from prdp_core.core.errors import OutputError
from prdp_core.data.samples import write_sample
from prdp_core.io.outputs import MANIFEST

STUDY = ("version: 1\nmode: teaching\nseed: 3\ndata: {sample: cbp_like, n: 400, seed: 1}\n"
         "policy: {thresholds: {EMP: 100}}\nworkload: {queries: [{kind: sum, measure: EMP, group_by: [STATE]}]}\n"
         "mechanisms: [{kind: unit_splitting}]\n")


def _prdp(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """A board database with one entry (#1), and its study config."""
    folder = tmp_path_factory.mktemp("board")
    study = folder / "s.yaml"
    study.write_text(STUDY, encoding="utf-8")
    db = f"sqlite:///{folder}/board.sqlite"
    code, _, err = _prdp("board", "submit", str(study), "--name", "Conservative", "--db", db)
    assert code == cli.EXIT_OK, err
    return db, study


@pytest.fixture
def keep(tmp_path):
    """A file nobody wants overwritten, outside the output folder."""
    other = tmp_path / "notes.txt"
    other.write_text("keep me", encoding="utf-8")
    return other


# ---------------------------------------------------------------------------
# prdp board export
# ---------------------------------------------------------------------------


def test_board_export_never_writes_through_a_planted_link(board, tmp_path, keep):
    db, _ = board
    out = tmp_path / "exp"
    out.mkdir()
    (out / "board.html").symlink_to(keep)
    code, _, err = _prdp("board", "export", "--out", str(out), "--db", db)
    assert code == cli.EXIT_USAGE and "symbolic links (board.html)" in err and "--force" in err
    assert keep.read_text(encoding="utf-8") == "keep me" and not (out / "board.csv").exists()
    code, _, err = _prdp("board", "export", "--out", str(out), "--db", db, "--force")
    assert code == cli.EXIT_OK, err
    assert keep.read_text(encoding="utf-8") == "keep me"  # the link was replaced, not followed
    assert not (out / "board.html").is_symlink() and "<html" in (out / "board.html").read_text(encoding="utf-8")


def test_board_export_never_creates_the_target_of_a_dangling_link(board, tmp_path):
    db, _ = board
    out = tmp_path / "exp"
    out.mkdir()
    target = tmp_path / "elsewhere" / "planted.yaml"
    target.parent.mkdir()
    (out / "entry-1.yaml").symlink_to(target)  # points at nothing yet
    code, _, err = _prdp("board", "export", "--out", str(out), "--db", db)
    assert code == cli.EXIT_USAGE and "symbolic links (entry-1.yaml)" in err
    assert not target.exists() and not (out / "board.html").exists()
    assert _prdp("board", "export", "--out", str(out), "--db", db, "--force")[0] == cli.EXIT_OK
    assert not target.exists() and "EMP: 100" in (out / "entry-1.yaml").read_text(encoding="utf-8")


def test_board_export_refuses_an_out_folder_that_is_a_link(board, tmp_path):
    db, _ = board
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    for extra in ([], ["--force"]):
        code, _, err = _prdp("board", "export", "--out", str(tmp_path / "link"), "--db", db, *extra)
        assert code == cli.EXIT_USAGE and "is a symbolic link" in err
    assert not any(real.iterdir())


def test_board_export_overwrites_its_own_files_only(board, tmp_path):
    db, _ = board
    out = tmp_path / "exp"
    assert _prdp("board", "export", "--out", str(out), "--db", db)[0] == cli.EXIT_OK
    files = json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"]
    assert sorted(files) == ["board.csv", "board.html", "entry-1.yaml"]
    assert _prdp("board", "export", "--out", str(out), "--db", db)[0] == cli.EXIT_OK  # its own earlier export
    (out / "board.csv").write_text("my own table", encoding="utf-8")
    code, _, err = _prdp("board", "export", "--out", str(out), "--db", db)
    assert code == cli.EXIT_USAGE and "files prdp did not write or that changed since (board.csv)" in err
    assert (out / "board.csv").read_text(encoding="utf-8") == "my own table"


# ---------------------------------------------------------------------------
# prdp samples write, the reproduction script
# ---------------------------------------------------------------------------


def test_samples_write_keeps_a_file_it_did_not_write_and_never_follows_a_link(tmp_path, keep):
    out = tmp_path / "big.parquet"
    out.write_bytes(b"someone's table")
    code, _, err = _prdp("samples", "write", "cbp_like", "--rows", "500", "--out", str(out), "-q")
    assert code == cli.EXIT_USAGE and "(big.parquet)" in err and out.read_bytes() == b"someone's table"
    assert _prdp("samples", "write", "cbp_like", "--rows", "500", "--out", str(out), "-q", "--force")[0] == 0
    assert _prdp("samples", "write", "cbp_like", "--rows", "600", "--out", str(out), "-q")[0] == 0  # its own
    link = tmp_path / "link.csv"
    link.symlink_to(keep)
    with pytest.raises(OutputError, match="symbolic links"):
        write_sample("cbp_like", link, rows=100)
    write_sample("cbp_like", link, rows=100, force=True)
    assert keep.read_text(encoding="utf-8") == "keep me" and not link.is_symlink()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_the_reproduction_script_never_writes_through_a_link(tmp_path, keep):
    study = tmp_path / "s.yaml"
    study.write_text(STUDY, encoding="utf-8")
    assert _prdp("run", str(study), "--out", str(tmp_path / "run"), "-q")[0] == cli.EXIT_OK
    again = tmp_path / "again"
    again.mkdir()
    (again / "results.csv").symlink_to(keep)
    proc = subprocess.run([sys.executable, str(tmp_path / "run" / "reproduce.py"), str(again)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "symbolic links (results.csv)" in proc.stderr
    assert keep.read_text(encoding="utf-8") == "keep me"


# ---------------------------------------------------------------------------
# prdp suggest thresholds: options checked before anything is written
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad, words", [
    (("--epsilon", "1e300"), "ε must be at most 100"),
    (("--epsilon", "inf"), "positive finite"),
    (("--epsilon", "nan"), "positive finite"),
    (("--epsilon", "0"), "positive finite"),
    (("--epsilon", "1", "--percentile", "1e300"), "strictly between 0 and 100"),
    (("--epsilon", "1", "--candidates", "1e9"), "from 2 to 100,000"),
    (("--epsilon", "1", "--seed", "-1"), "from 0 to"),
])
def test_suggest_refuses_bad_numbers_before_writing_or_charging(board, tmp_path, bad, words):
    _, study = board
    db = f"sqlite:///{tmp_path}/ledgers.sqlite"
    new = tmp_path / "new.yaml"
    code, out, err = _prdp("suggest", "thresholds", str(study), "--range", "EMP=1:1e6", *bad, "--out", str(new),
                           "--ledger", "L", "--db", db)
    assert code == cli.EXIT_USAGE and words in err and "internal error" not in err, err
    assert not new.exists() and not (tmp_path / MANIFEST).exists() and out == ""
    assert LedgerStore(BoardStore(db)).find("L") is None


def test_suggest_refuses_bad_ranges_and_outputs_before_charging(board, tmp_path, keep):
    _, study = board
    db = f"sqlite:///{tmp_path}/ledgers.sqlite"
    new = tmp_path / "new.yaml"
    for rng, spacing in (("EMP=-1e308:1e308", "linear"), ("EMP=0:1e6", "linear"), ("EMP=1e-300:inf", "log")):
        code, _, err = _prdp("suggest", "thresholds", str(study), "--range", rng, "--spacing", spacing,
                             "--epsilon", "1", "--out", str(new), "--ledger", "L", "--db", db)
        assert code == cli.EXIT_ERROR and f"--range '{rng}'" in err and not new.exists(), err
    new.symlink_to(keep)  # a planted link at --out: refused before the suggestion is drawn and charged
    code, _, err = _prdp("suggest", "thresholds", str(study), "--range", "EMP=1:1e6", "--epsilon", "1",
                         "--out", str(new), "--ledger", "L", "--db", db)
    assert code == cli.EXIT_USAGE and "symbolic links (new.yaml)" in err
    assert keep.read_text(encoding="utf-8") == "keep me" and LedgerStore(BoardStore(db)).find("L") is None


# ---------------------------------------------------------------------------
# DuckDB's spill folder in the shared temporary folder
# ---------------------------------------------------------------------------


def test_duckdb_never_spills_into_a_planted_or_open_temporary_folder(tmp_path, monkeypatch):
    import os
    import tempfile

    import pandas as pd

    from prdp_core.core.errors import ParameterError
    from prdp_core.engines.duckdb_engine import DuckDBEngine

    monkeypatch.delenv("PRDP_DUCKDB_TEMP_DIR", raising=False)
    shared = tmp_path / "tmp"  # stands for /tmp, which every user of the machine can write
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    pd.DataFrame({"v": [1.0, 2.0]}).to_parquet(tmp_path / "t.parquet")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    for name in ("prdp-duckdb", f"prdp-duckdb-{os.getuid()}"):  # planted before the first run
        (shared / name).symlink_to(theirs)
    with pytest.raises(ParameterError, match="symbolic link, a file or another user's folder"):
        DuckDBEngine.open(str(tmp_path / "t.parquet"))
    (shared / f"prdp-duckdb-{os.getuid()}").unlink()
    (shared / f"prdp-duckdb-{os.getuid()}").mkdir(mode=0o777)
    os.chmod(shared / f"prdp-duckdb-{os.getuid()}", 0o777)
    assert DuckDBEngine.open(str(tmp_path / "t.parquet")).n_rows() == 2
    assert os.stat(shared / f"prdp-duckdb-{os.getuid()}").st_mode & 0o777 == 0o700  # tightened


def test_a_shared_folder_named_by_the_administrator_is_never_changed(tmp_path, monkeypatch):
    """PRDP_DUCKDB_TEMP_DIR=/tmp must not take /tmp's sticky, world-writable mode away (as root it could):
    the records spill into a private folder inside it instead."""
    import os

    import pandas as pd

    from prdp_core.engines.duckdb_engine import DuckDBEngine

    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    monkeypatch.setenv("PRDP_DUCKDB_TEMP_DIR", str(shared))
    pd.DataFrame({"v": [1.0, 2.0]}).to_parquet(tmp_path / "t.parquet")
    assert DuckDBEngine.open(str(tmp_path / "t.parquet")).n_rows() == 2
    assert os.stat(shared).st_mode & 0o7777 == 0o1777  # unchanged
    assert os.stat(shared / f"prdp-duckdb-{os.getuid()}").st_mode & 0o777 == 0o700
