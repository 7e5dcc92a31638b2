"""The module import graph of source packages, read with ``ast``, and its cycles (strongly connected components).

Every import counts, including those inside functions, except those under ``if TYPE_CHECKING:`` (they never run).
``from a.b import c`` is an edge to the module ``a.b.c`` when it exists, else to ``a.b``; relative imports are
resolved against the importing module's package. Only edges between the modules read are kept.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path


def module_names(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Each module of ``packages`` (folders under ``root``) by its dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterable[ast.Import | ast.ImportFrom]:
    """The import statements of ``tree`` outside ``if TYPE_CHECKING:`` blocks (their ``else`` still counts)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _resolve(name: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """The edges ``importer -> imported`` between the given modules."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(name, path, node)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.append(full if full in modules else base)
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target:
                    graph[name].add(target)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` (Tarjan's algorithm, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                child = todo.pop()
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: components of more than one module, and modules importing themselves."""
    return sorted(c for c in strongly_connected(graph) if len(c) > 1 or c[0] in graph[c[0]])


def depth(graph: dict[str, set[str]]) -> int:
    """The longest chain of imports, in modules (a cycle counts as one): Tarjan emits each component after
    every component it reaches, so one pass in that order suffices."""
    longest: dict[str, int] = {}
    for component in strongly_connected(graph):
        members = set(component)
        below = [longest[child] for node in component for child in graph[node] if child not in members]
        for node in component:
            longest[node] = 1 + max(below, default=0)
    return max(longest.values(), default=0)
