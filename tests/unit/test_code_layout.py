"""The engine's layout: one concept per module — no module of prdp_core over 600 lines, each opening with a
docstring whose first line says its concept — no one-letter module aliases in the engine, and every
``# type: ignore`` of the checked code naming its error code and its reason."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted((ROOT / "prdp_core").rglob("*.py"))
MAX_MODULE_LINES = 600


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_a_module_holds_one_concept(path):
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n") + (not text.endswith("\n"))
    assert lines <= MAX_MODULE_LINES, f"{_name(path)} has {lines} lines: split it by concept"
    doc = ast.get_docstring(ast.parse(text))
    assert doc, f"{_name(path)} has no docstring saying its concept"
    first = doc.strip().splitlines()[0]
    assert len(first.split()) >= 3, f"{_name(path)}: the docstring's first line should say the concept: {first!r}"


def test_the_engine_uses_no_one_letter_module_aliases():
    found = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.asname and len(alias.asname) == 1:
                        found.append(f"{_name(path)}:{node.lineno} {alias.name} as {alias.asname}")
    assert not found, found


#: Where mypy checks the code (pyproject.toml's [tool.mypy] files).
TYPED = [*MODULES, *sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "app_pages").glob("*.py")), ROOT / "app.py"]
#: An ignore that names its error codes and, after it, its reason: ``# type: ignore[arg-type]  # why``.
_EXPLAINED_IGNORE = re.compile(r"# type: ignore\[[a-z-]+(, ?[a-z-]+)*\]  # \S")


def test_every_type_ignore_names_its_error_code_and_its_reason():
    found = []
    for path in TYPED:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "type: ignore" in line and not _EXPLAINED_IGNORE.search(line):
                found.append(f"{_name(path)}:{i}: {line.strip()}")
    assert len(TYPED) > 150
    assert not found, "a `# type: ignore` needs [its-code] and `  # its reason` after it:\n" + "\n".join(found)
