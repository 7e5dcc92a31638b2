"""Build step of the wheel: the installed package is the whole product, the app included.

The checkout keeps the app where it is edited: app.py, app_pages/, ui/, assets/ and the Streamlit settings
(.streamlit/config.toml) at its top, beside the engine package prdp_core. A wheel built from it (``uv build
--wheel``, ``python -m build``, ``pip install .``) gets two more folders, copied here into the build tree:

* ``prdp_explorer_app/``: app.py with app_pages/, ui/, assets/ and .streamlit/config.toml beside it, as in the
  checkout, so ``streamlit run <prdp_explorer_app>/app.py`` imports ``ui`` from app.py's folder (Streamlit puts
  it on sys.path) and ``prdp app`` finds it (prdp_core.commands.board_cli.app_script);
* ``prdp_core/sample_data/``: the real sample tables and their descriptions (prdp_core.data.samples.sample_dir).

An editable install (``make install``) copies nothing: both are then read from the checkout. The metadata is in
pyproject.toml; MANIFEST.in puts the same files into a source distribution.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
APP_PACKAGE = "prdp_explorer_app"
APP_FILES = ("app.py", "app_pages", "ui", "assets", ".streamlit/config.toml")
SAMPLE_PATTERNS = ("*.csv", "*.md")
APP_INIT = '"""PrDP Explorer, the Streamlit app: ``prdp app`` runs app.py of this folder."""\n'


def _copy(src: Path, dest: Path) -> list[Path]:
    """Copy a file or a folder's tree (without byte code) to ``dest``; return the files written."""
    if src.is_dir():
        shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        return [p for p in dest.rglob("*") if p.is_file()]
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dest)
    return [dest]


class BuildWithApp(build_py):
    """``build_py`` that also puts the app and the sample tables into the build tree (not in editable mode)."""

    def run(self) -> None:
        super().run()
        self._extra: list[Path] = []
        if self.editable_mode:
            return
        app = Path(self.build_lib) / APP_PACKAGE
        for name in APP_FILES:
            self._extra += _copy(ROOT / name, app / name)
        (app / "__init__.py").write_text(APP_INIT, encoding="utf-8")
        self._extra.append(app / "__init__.py")
        samples = Path(self.build_lib) / "prdp_core" / "sample_data"
        for pattern in SAMPLE_PATTERNS:
            for src in sorted((ROOT / "sample_data").glob(pattern)):
                self._extra += _copy(src, samples / src.name)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), *map(str, getattr(self, "_extra", []))]


setup(cmdclass={"build_py": BuildWithApp})
