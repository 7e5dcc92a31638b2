"""What an installation of the checkout puts on the import path: the engine, never the app's helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_only_the_engine_is_a_distributed_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(include) == ["prdp_core", "prdp_core.*"]


def test_ui_is_not_importable_outside_the_checkout(tmp_path):
    """The installed interpreter, started in another folder, finds prdp_core (the prdp command needs it) but not
    the app's ``ui`` package, which Streamlit imports from app.py's folder."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = ("import importlib.util as u, prdp_core.board.cli as c; "
            "print(u.find_spec('ui') is None, u.find_spec('app_pages') is None, c.app_script())")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", str(ROOT / "app.py")]
