"""The personalized DP package: one concept per module, each re-exported name defined once, distinct vocabulary."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from prdp_core.mechanisms import personalized

PACKAGE = Path(personalized.__file__).parent
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def _public_names(module: str) -> set[str]:
    """Names a module defines at top level (classes, functions, constants), not those it imports."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


def test_the_package_holds_the_concept_modules_of_the_layout():
    assert MODULES == sorted(["spec", "query", "defaults", "ranges", "blackbox", "sample", "neighbours", "pe",
                              "mechanisms", "release", "accuracy", "experiments", "reduction", "secure"])


@pytest.mark.parametrize("module", MODULES + ["__init__"])
def test_every_module_is_short_and_says_its_concept_first(module):
    path = PACKAGE / f"{module}.py"
    assert len(path.read_text().splitlines()) <= 600, f"{module}.py is over 600 lines"
    doc = ast.get_docstring(ast.parse(path.read_text()))
    assert doc and doc.splitlines()[0].strip(), f"{module}.py has no first docstring line naming its concept"


def test_the_package_re_exports_every_public_name_exactly_once():
    defined: dict[str, str] = {}
    for module in MODULES:
        for name in _public_names(module):
            assert name not in defined, f"{name} is defined in both {defined[name]} and {module}"
            defined[name] = module
    assert sorted(personalized.__all__) == sorted(defined)
    for name, module in defined.items():
        concept = importlib.import_module(f"prdp_core.mechanisms.personalized.{module}")
        assert getattr(personalized, name) is getattr(concept, name), name


def test_the_query_has_a_name_of_its_own():
    # the workload and the PrDP framework have a Query too: the personalized one is PersonalizedQuery
    assert not hasattr(personalized, "Query")
    assert personalized.PersonalizedQuery("count").describe() == "count of tuples"
