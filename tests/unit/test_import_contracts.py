"""The import contracts of pyproject.toml ([tool.importlinter]) hold: prdp_core's layers import only the layers
below them, the mechanism families do not import each other, and prdp_core never imports the app's ui package.
The check fails on a planted upward import (a temporary copy of the packages)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"


def _lint(folder: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's config, on the packages of ``folder`` (its working folder)."""
    return subprocess.run([sys.executable, "-c", LINT], cwd=folder, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_hold():
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout and "Layers of prdp_core KEPT" in done.stdout


@pytest.mark.parametrize(("module", "line", "broken"), [
    ("prdp_core/core/errors.py", "from ..commands import cli", "Layers of prdp_core"),
    ("prdp_core/engines/base.py", "from ..study import runner", "Layers of prdp_core"),
    ("prdp_core/mechanisms/granular/__init__.py", "from ..multitier import tiers",
     "Mechanism families are independent"),
    ("prdp_core/board/links.py", "from ui import state", "prdp_core never imports the app"),
], ids=["core-imports-commands", "engines-import-study", "granular-imports-multitier", "engine-imports-ui"])
def test_a_planted_upward_import_breaks_a_contract(tmp_path, module, line, broken):
    for name in ("prdp_core", "ui"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    assert _lint(tmp_path).returncode == 0  # the copy holds before the plant
    path = tmp_path / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n\ndef _planted():\n    {line}\n", encoding="utf-8")
    done = _lint(tmp_path)
    assert done.returncode != 0, done.stdout
    assert f"{broken} BROKEN" in done.stdout, done.stdout
