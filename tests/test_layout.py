"""The package's import graph has no circle: no module imports, at its top or inside a function,
a module that imports it back, directly or through others. An import inside a function hides a
circle from Python but not from a reader: the shared piece belongs one floor down."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def import_graph() -> dict[str, set[str]]:
    """genointerp module -> the genointerp modules it names in any import statement."""
    files = {}
    for path in (ROOT / "genointerp").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name in files}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:  # `from pkg import sub` names the submodule
                    sub = f"{node.module}.{alias.name}"
                    targets.add(sub if sub in files else node.module)
        graph[module] = {t for t in targets if t in files and t != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            if group:
                found.append(sorted([v, *group]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_circles_finds_a_planted_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_no_module_of_genointerp_imports_itself_back():
    graph = import_graph()
    assert len(graph) > 100 and "genointerp.viral.classify.job" in graph
    assert circles(graph) == []
