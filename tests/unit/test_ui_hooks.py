"""ui.state, the bottom of the app's ui package, never imports the modules above it: what it asks of them (a new
dataset's policy, a large table's profile, a page part's study settings, storing ledger entries) they register at
import (``ui.state.HOOKS``). The modules app.py imports register every hook, in the order ``set_dataset`` needs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from ui import state

ROOT = Path(__file__).resolve().parents[2]

#: Imports what app.py imports from the ui package, in a fresh interpreter, and prints the hooks registered.
_IMPORT_AS_THE_APP = """
import ast, importlib, pathlib
tree = ast.parse(pathlib.Path("app.py").read_text(encoding="utf-8"))
for node in tree.body:
    if isinstance(node, ast.ImportFrom) and node.module == "ui":
        for alias in node.names:
            importlib.import_module("ui." + alias.name)
from ui import state
print({name: [f"{h.__module__}.{h.__qualname__}" for h in hooks] for name, hooks in state.HOOKS.items()})
"""


def test_the_apps_imports_register_every_hook_of_the_session_state():
    done = subprocess.run([sys.executable, "-c", _IMPORT_AS_THE_APP], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    hooks = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert hooks == {
        # a suggestion released on the previous table is dropped before the new table's policy is made
        "new_dataset": ["ui.private_suggest.forget_suggestions", "ui.policy_designer.ensure_policy"],
        "large_profile": ["ui.large.profile"],
        "part_settings": ["ui.study_export.part_settings"],
        "add_entries": ["ui.durable.add_entries"],
    }


def test_a_hook_is_registered_once_and_only_under_a_known_name(monkeypatch):
    monkeypatch.setitem(state.HOOKS, "large_profile", [])
    with pytest.raises(RuntimeError, match="large_profile"):
        state._hook("large_profile")

    def profile() -> str:
        return "profile"

    state.register("large_profile", profile)
    state.register("large_profile", profile)  # a module imported again adds nothing
    assert state.HOOKS["large_profile"] == [profile] and state._hook("large_profile")() == "profile"
    with pytest.raises(KeyError, match="no hook 'profile'"):
        state.register("profile", profile)
