"""Every Python and shell block of README.md and docs/ runs as written (tests/docs/blocks.py says how).

One test per block, in document order; the blocks of one document share a working folder (a copy of
``examples/``) and, for Python, one namespace, so a block may use what an earlier block of its document made.
Run alone (``-k``), a block first runs the blocks before it. A block marked ``skip`` is reported as skipped with
its reason; a failing block fails its test naming the document and line. A document holding a ``spark`` block runs
in the Spark test group (tests/spark.py: one local[2] session per test process), and its blocks use that session
(``SparkSession.builder.getOrCreate()``). Plain ``prdp`` lines of shell blocks run in the test process through the
console script's entry point (``prdp_core.commands.cli.main``), the other lines with bash.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
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


def _bash(block: B.Block, run: DocRun, script: str) -> None:
    r = subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=run.folder, env=_env(block, run.folder),
                       capture_output=True, text=True, timeout=SHELL_TIMEOUT, check=False)
    if r.returncode != 0:
        raise AssertionError(f"{block.where}: the {block.lang} block failed (exit code {r.returncode}) at\n{script}"
                             f"--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}")


def _prdp(block: B.Block, run: DocRun, argv: list[str], line: str) -> None:
    """A plain ``prdp`` line, run in this process by the console script's entry point (as ``prdp`` on the
    ``PATH`` would, without starting Python again; a Spark block uses the process's session)."""
    from prdp_core.commands.cli import main

    old_cwd, old_env = Path.cwd(), dict(os.environ)
    os.environ.update(block.env)
    os.environ.pop("PRDP_WORKSHOP_DIR", None)
    out, err = io.StringIO(), io.StringIO()
    try:
        os.chdir(run.folder)
        code = main(argv, stdout=out, stderr=err)
    finally:
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)
    if code != 0:
        raise AssertionError(f"{block.where}: the {block.lang} block failed (exit code {code}) at\n{line}\n"
                             f"--- stdout\n{out.getvalue()[-3000:]}\n--- stderr\n{err.getvalue()[-3000:]}")


def _run_shell(block: B.Block, run: DocRun) -> None:
    """A shell block, line by line: plain ``prdp`` lines in this process, the others with bash (a block with a
    heredoc, ``export`` or ``cd`` as one bash script)."""
    script = B.shell_script(block)
    lines, heredoc = B.logical_lines(script)
    if heredoc or {"export", "cd"} & set(B.commands(script)):
        _bash(block, run, script)
        return
    for line in lines:
        argv = B.plain_prdp(line)
        if argv is not None:
            _prdp(block, run, argv, line)
        elif B.commands(line):
            _bash(block, run, line + "\n")


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
    unmarked = B.unmarked_commands(block) if block.lang in B.SHELL else []
    if unmarked:  # never run: it may install, build or start a server that does not end
        raise AssertionError(f"{block.where}: runs {', '.join(unmarked)}: mark it docs-test: skip with why")
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
def test_doc_block(block: B.Block, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    if block.skip is not None:
        pytest.skip(f"{block.where}: {block.skip}")
    if block.doc in SPARK_DOCS:
        request.getfixturevalue("spark")  # the test process's session, stopped when the run ends
    run = _doc_run(block.doc, tmp_path_factory)
    if block.line in run.done:  # already run, before a later block of its document that was run first
        assert run.failed != block.where, f"{block.where}: failed when a later block ran it first"
        return
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


# ---------------------------------------------------------------------------
# The collector itself
# ---------------------------------------------------------------------------

GUIDE = """# Guide

Some prose.

```python
x = 41
```

<!-- docs-test: env ANSWER=42 -->
```bash
test "$ANSWER" = 42
prdp samples  # a plain prdp line
```

```python
assert x + 1 == 42
raise ValueError("the third block breaks")
```

<!-- docs-test: skip — starts a server; covered elsewhere; really -->
```bash
make run
prdp app --port 1
```

```text
a diagram
```
"""


def test_blocks_are_found_with_their_line_language_and_markers(tmp_path):
    (tmp_path / "guide.md").write_text(GUIDE, encoding="utf-8")
    found = B.parse(tmp_path / "guide.md", root=tmp_path)
    assert [(b.line, b.lang) for b in found] == [(5, "python"), (10, "bash"), (15, "python"), (21, "bash"),
                                                  (26, "text")]
    assert found[1].env == {"ANSWER": "42"} and found[3].skip == "starts a server; covered elsewhere; really"
    assert B.unmarked_commands(found[3]) == ["make", "prdp app"] and B.unmarked_commands(found[1]) == []
    assert [b.runs for b in found] == [True, True, True, True, False]


def test_a_failing_block_fails_naming_its_document_and_line(tmp_path):
    (tmp_path / "guide.md").write_text(GUIDE, encoding="utf-8")
    found = B.parse(tmp_path / "guide.md", root=tmp_path)
    run = DocRun(tmp_path)
    _run(found[0], run)
    _run(found[1], run)  # the marker's variable reaches the shell; the prdp line runs
    with pytest.raises(AssertionError, match=r"guide.md:15: the python block failed") as err:
        _run(found[2], run)
    assert 'File "guide.md", line 17' in str(err.value) and "the third block breaks" in str(err.value)
    with pytest.raises(AssertionError, match=r"guide.md:10: the bash block failed \(exit code 3\)"):
        _run(B.Block("guide.md", 10, "bash", "prdp validate missing.yaml\n"), run)
    with pytest.raises(AssertionError, match=r"guide.md:3: the bash block failed \(exit code 1\)"):
        _run(B.Block("guide.md", 3, "bash", "test -e nothing-here\n"), run)
    with pytest.raises(AssertionError, match=r"guide.md:21: runs make, prdp app: mark it docs-test: skip"):
        _run(B.Block("guide.md", 21, "bash", "make run\nprdp app --port 1\n"), run)  # never started


@pytest.mark.parametrize("text, problem", [
    ("```\nprdp samples\n```\n", "guide.md:1: a fenced block without a language"),
    ("<!-- docs-test: skip -->\n```bash\nmake run\n```\n", "guide.md:2: a docs-test skip marker must say why"),
    ("<!-- docs-test: sometimes -->\n```bash\nls\n```\n", "guide.md:2: unknown docs-test directive 'sometimes'"),
])
def test_a_block_that_does_not_say_how_it_runs_is_refused(tmp_path, text, problem):
    (tmp_path / "guide.md").write_text(text, encoding="utf-8")
    with pytest.raises(B.DocError, match=re.escape(problem)):
        B.parse(tmp_path / "guide.md", root=tmp_path)
