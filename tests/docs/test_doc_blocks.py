"""Every Python and shell block of README.md and docs/ runs as written (tests/docs/blocks.py says how).

One test per block, in document order; the blocks of one document share a working folder (a copy of
``examples/``) and, for Python, one namespace, so a block may use what an earlier block of its document made.
Run alone (``-k``), a block first runs the blocks before it. A block marked ``skip`` is reported as skipped with
its reason; a failing block fails its test naming the document and line. A document holding a ``spark`` block runs
in the Spark test group (tests/spark.py: one local[2] session per test process), and its Python blocks get that
session from ``SparkSession.builder.getOrCreate()``.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests import spark as spark_tests
from tests.docs import blocks as B

#: Seconds one shell block may take.
SHELL_TIMEOUT = 300


def _collect() -> tuple[list[B.Block], list[str]]:
    found, problems = [], []
    for path in B.documents():
        try:
            found += B.parse(path)
        except B.DocError as err:
            problems.append(str(err))
    return found, problems


BLOCKS, PROBLEMS = _collect()
SPARK_DOCS = {b.doc for b in BLOCKS if b.spark}


def _params() -> list:
    out = []
    for b in BLOCKS:
        if not b.runs:
            continue
        marks = ([*spark_tests.MARKS, pytest.mark.xdist_group("engines")] if b.doc in SPARK_DOCS
                 else [pytest.mark.xdist_group("docs")])
        out.append(pytest.param(b, id=f"{b.where}-{b.lang}", marks=marks))
    return out


@dataclass
class DocRun:
    """The state of one document's run: its working folder, the Python namespace, the blocks done."""

    folder: Path
    namespace: dict = field(default_factory=lambda: {"__name__": "__main__"})
    done: set[int] = field(default_factory=set)
    failed: str | None = None


_RUNS: dict[str, DocRun] = {}


def _doc_run(doc: str, factory: pytest.TempPathFactory) -> DocRun:
    if doc not in _RUNS:
        folder = factory.mktemp("doc-" + doc.replace("/", "-").removesuffix(".md"))
        shutil.copytree(B.ROOT / "examples", folder / "examples")
        _RUNS[doc] = DocRun(folder)
    return _RUNS[doc]


def _env(block: B.Block, folder: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), **block.env}
    env.update({k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    env.pop("PRDP_WORKSHOP_DIR", None)  # the board and named ledgers in the working folder's ./workshop
    return env


def _run_shell(block: B.Block, run: DocRun) -> None:
    r = subprocess.run(["bash", "-eo", "pipefail", "-c", B.shell_script(block)], cwd=run.folder,
                       env=_env(block, run.folder), capture_output=True, text=True, timeout=SHELL_TIMEOUT,
                       check=False)
    if r.returncode != 0:
        raise AssertionError(f"{block.where}: the {block.lang} block failed (exit code {r.returncode}).\n"
                             f"--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}")


def _run_python(block: B.Block, run: DocRun) -> None:
    # line numbers of a traceback are the document's
    code = compile("\n" * block.line + block.code, block.doc, "exec")
    old_cwd, old_env = Path.cwd(), dict(os.environ)
    os.environ.update(block.env)
    out = io.StringIO()
    try:
        os.chdir(run.folder)
        with contextlib.redirect_stdout(out):
            exec(code, run.namespace)
    except Exception:
        tb = traceback.format_exc(limit=-6)
        raise AssertionError(f"{block.where}: the python block failed.\n{tb}\n--- printed\n{out.getvalue()[-2000:]}"
                             ) from None
    finally:
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)


def _run(block: B.Block, run: DocRun) -> None:
    if block.spark:
        spark_tests.session()  # skips locally without Spark, fails under CI
    (_run_python if block.lang in B.PYTHON else _run_shell)(block, run)


def test_every_block_declares_how_it_runs():
    """Every block has a language, every marker parses, and a shell block running anything but prdp, python and
    simple file commands is marked ``skip`` with its reason."""
    assert BLOCKS and not PROBLEMS, "\n".join(PROBLEMS)
    unmarked = [f"{b.where}: {', '.join(B.unmarked_commands(b))}" for b in BLOCKS
                if b.lang in B.SHELL and b.skip is None and B.unmarked_commands(b)]
    assert not unmarked, ("shell blocks running commands the docs tests do not run; mark each with "
                          "<!-- docs-test: skip — why --> or change it:\n" + "\n".join(unmarked))


@pytest.mark.parametrize("block", _params())
def test_doc_block(block: B.Block, tmp_path_factory: pytest.TempPathFactory):
    if block.skip is not None:
        pytest.skip(f"{block.where}: {block.skip}")
    if block.lang in B.SHELL and B.unmarked_commands(block):
        pytest.fail(f"{block.where}: runs {', '.join(B.unmarked_commands(block))}: mark it docs-test: skip with why")
    run = _doc_run(block.doc, tmp_path_factory)
    for earlier in BLOCKS:  # run alone, a block first runs the blocks before it
        if earlier.doc != block.doc or earlier.line >= block.line or earlier.line in run.done:
            continue
        if earlier.runs and earlier.skip is None and not run.failed:
            try:
                _run(earlier, run)
            except AssertionError:
                run.failed = earlier.where
        run.done.add(earlier.line)
    if run.failed:
        pytest.fail(f"{block.where}: not run, an earlier block failed ({run.failed})")
    try:
        _run(block, run)
    except AssertionError:
        run.failed = block.where
        raise
    finally:
        run.done.add(block.line)
