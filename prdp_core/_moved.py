"""Old module paths of prdp_core, kept for one release: each resolves to the module that moved, with a warning.

Before 0.2 the engine's modules sat side by side at the top of the package; they now live in layer packages
(docs/architecture.md, *Layers*). :data:`MOVED` maps each old dotted name to its new one, and :class:`MovedFinder`
(installed first on :data:`sys.meta_path` by ``prdp_core/__init__.py``) makes ``import prdp_core.report`` or
``from prdp_core.config import load_config`` give the very module object of the new path — so a monkeypatch
through either name patches one module — after a :class:`DeprecationWarning` naming the new path. A submodule of
a moved package follows its package (``prdp_core.config.study`` is ``prdp_core.study.config.study``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Sequence

#: Each old module or package path and its new one (a package's submodules follow it).
MOVED: dict[str, str] = {
    "prdp_core.accounting": "prdp_core.core.accounting",
    "prdp_core.analysis": "prdp_core.mechanisms.analysis",
    "prdp_core.board.cli": "prdp_core.commands.board_cli",
    "prdp_core.budget_solver": "prdp_core.mechanisms.budget_solver",
    "prdp_core.cli": "prdp_core.commands.cli",
    "prdp_core.codegen": "prdp_core.io.codegen",
    "prdp_core.codes": "prdp_core.data.codes",
    "prdp_core.config": "prdp_core.study.config",
    "prdp_core.contract": "prdp_core.mechanisms.contract",
    "prdp_core.conversions": "prdp_core.core.conversions",
    "prdp_core.distribution": "prdp_core.core.distribution",
    "prdp_core.dp_quantile": "prdp_core.mechanisms.dp_quantile",
    "prdp_core.errors": "prdp_core.core.errors",
    "prdp_core.exit_codes": "prdp_core.commands.exit_codes",
    "prdp_core.export": "prdp_core.io.export",
    "prdp_core.filelimits": "prdp_core.data.filelimits",
    "prdp_core.html_parts": "prdp_core.io.html_parts",
    "prdp_core.interpret": "prdp_core.core.interpret",
    "prdp_core.keysets": "prdp_core.core.keysets",
    "prdp_core.limits": "prdp_core.core.limits",
    "prdp_core.loading": "prdp_core.data.loading",
    "prdp_core.loss_profile": "prdp_core.core.loss_profile",
    "prdp_core.mechanisms.prdp.domains": "prdp_core.core.domains",
    "prdp_core.mechanisms.prdp.expressions": "prdp_core.core.expressions",
    "prdp_core.mechanisms.prdp.shapes": "prdp_core.core.shapes",
    "prdp_core.memory": "prdp_core.data.memory",
    "prdp_core.neighbours": "prdp_core.core.neighbours",
    "prdp_core.noise": "prdp_core.core.noise",
    "prdp_core.noise_source": "prdp_core.core.noise_source",
    "prdp_core.outputs": "prdp_core.io.outputs",
    "prdp_core.preview": "prdp_core.mechanisms.preview",
    "prdp_core.private_files": "prdp_core.io.private_files",
    "prdp_core.profile": "prdp_core.data.profile",
    "prdp_core.provenance": "prdp_core.core.provenance",
    "prdp_core.recorder": "prdp_core.core.recorder",
    "prdp_core.registry": "prdp_core.core.registry",
    "prdp_core.release": "prdp_core.core.release",
    "prdp_core.report": "prdp_core.review.report",
    "prdp_core.reproduction": "prdp_core.study.reproduction",
    "prdp_core.review_boundary": "prdp_core.review.review_boundary",
    "prdp_core.runner": "prdp_core.study.runner",
    "prdp_core.runs": "prdp_core.study.runs",
    "prdp_core.samples": "prdp_core.data.samples",
    "prdp_core.schema": "prdp_core.data.schema",
    "prdp_core.secure": "prdp_core.core.secure",
    "prdp_core.snippets": "prdp_core.study.snippets",
    "prdp_core.splitting": "prdp_core.core.splitting",
    "prdp_core.study_tables": "prdp_core.study.study_tables",
    "prdp_core.suggest_cli": "prdp_core.commands.suggest_cli",
    "prdp_core.sweeps": "prdp_core.mechanisms.sweeps",
    "prdp_core.terminal": "prdp_core.io.terminal",
    "prdp_core.validate": "prdp_core.core.validate",
    "prdp_core.workload": "prdp_core.core.workload",
    "prdp_core.xlsxscan": "prdp_core.data.xlsxscan",
}


def new_name(old: str) -> str | None:
    """The new dotted name of the old module path ``old`` (None when it did not move)."""
    for prefix in sorted(MOVED, key=len, reverse=True):
        if old == prefix or old.startswith(prefix + "."):
            return MOVED[prefix] + old[len(prefix):]
    return None


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module of its new path (the same object; its own spec is kept)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec  # the import system set the old path's spec on it: give back its own


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old module paths of :data:`MOVED` (first on ``sys.meta_path``)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        if new is None:
            return None
        warnings.warn(f"{fullname} moved to {new}; the old path is kept for one release (docs/architecture.md).",
                      DeprecationWarning, stacklevel=2)
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())


__all__ = ["MOVED", "MovedFinder", "install", "new_name"]
