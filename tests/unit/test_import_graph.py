"""No import cycles: the module import graph of prdp_core and of the app's ui package, read from the source
(every import, those inside functions included; only ``if TYPE_CHECKING:`` blocks are left out), has no
strongly connected component of more than one module and no module importing itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.import_graph import cycles, depth, import_graph, module_names, strongly_connected

ROOT = Path(__file__).resolve().parents[2]


def _message(found: list[list[str]]) -> str:
    return "import cycles (break each by moving code down, not by hiding the import):\n" + "\n".join(
        f"  {len(c)} modules: {' <-> '.join(c)}" for c in found)


@pytest.mark.parametrize("package", ["prdp_core", "ui"])
def test_a_package_has_no_import_cycle(package):
    graph = import_graph(module_names(ROOT, [package]))
    assert len(graph) > 10, "the package was not read"
    found = cycles(graph)
    assert not found, _message(found)


def test_the_engine_never_imports_the_app():
    """So no cycle runs through both: the engine is below the app."""
    graph = import_graph(module_names(ROOT, ["prdp_core", "ui"]))
    assert len(graph) > 100
    up = sorted(f"{name} -> {target}" for name, targets in graph.items() if name.startswith("prdp_core")
                for target in targets if target.startswith("ui"))
    assert not up, f"prdp_core imports the app's ui package: {up}"


def _package(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return module_names(root, ["pkg"])


def test_the_graph_finds_a_planted_cycle_through_a_function_level_import(tmp_path):
    modules = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low.py": "def f():\n    from .high import g\n    return g\n",  # the upward import, hidden in a function
        "pkg/mid.py": "from pkg import low\n",
        "pkg/high.py": "from . import mid\n\ndef g():\n    return mid\n",
        "pkg/alone.py": "import os\nfrom pkg.low import f\n",
    })
    graph = import_graph(modules)
    assert graph["pkg.mid"] == {"pkg.low"} and graph["pkg.low"] == {"pkg.high"}
    assert graph["pkg.alone"] == {"pkg.low"}  # os is outside the package
    assert cycles(graph) == [["pkg.high", "pkg.low", "pkg.mid"]]
    assert "pkg.high <-> pkg.low <-> pkg.mid" in _message(cycles(graph))


def test_the_graph_skips_type_checking_imports_and_finds_self_imports(tmp_path):
    modules = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "from .leaf import x\n",
        "pkg/sub/leaf.py": "from typing import TYPE_CHECKING\nx = 1\nif TYPE_CHECKING:\n    from ..top import y\n"
                           "else:\n    import pkg.other\n",
        "pkg/top.py": "from .sub import leaf\ny = 2\n",
        "pkg/other.py": "from . import other\n",
    })
    graph = import_graph(modules)
    assert graph["pkg.sub"] == {"pkg.sub.leaf"} and graph["pkg.top"] == {"pkg.sub.leaf"}
    assert graph["pkg.sub.leaf"] == {"pkg.other"}  # the TYPE_CHECKING branch is skipped, its else is not
    assert cycles(graph) == [["pkg.other"]]


def test_tarjan_is_iterative_and_measures_depth():
    chain = {f"m{i:05d}": {f"m{i + 1:05d}"} for i in range(5000)}
    chain["m05000"] = set()
    assert all(len(c) == 1 for c in strongly_connected(chain)) and depth(chain) == 5001
    chain["m05000"] = {"m00000"}
    assert [len(c) for c in cycles(chain)] == [5001]
