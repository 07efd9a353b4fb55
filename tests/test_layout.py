"""The package's import graph has no circle: no module imports, at its top or inside a function,
a module that imports it back, directly or through others. An import inside a function hides a
circle from Python but not from a reader: the shared piece belongs one floor down. Nor do two
folders import each other (the viral stage folders included), and the viral ones stay sealed:
typing in typing/, find-integrations through the public pieces named below."""

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


# The stage folders of genointerp/viral/ and the layers beside them. A stage imports the stages
# below it, never one that imports it back; report/ builds the report from typed reads and holds
# no typing (placing a read or naming it by its seeds is typing/'s); find-integrations reaches
# viral/ only through the pieces named here: the virus names (panel.py, the module that knows the
# viruses) and the panel that places reads on the viral references (typing/placement.py).
VIRAL = "genointerp.viral"
TYPING_NAMES = {"Typer", "ViralPanel", "type_reads", "name_viruses", "ReadType"}
INTEGRATIONS_VIRAL = {"genointerp.viral.panel", "genointerp.viral.typing.placement"}


def stage(module: str) -> str | None:
    """The stage folder of viral/ a module lies in (genointerp.viral.typing.placement -> typing),
    None outside one (viral/'s own modules, other layers)."""
    parts = module.split(".")
    return parts[2] if module.startswith(VIRAL + ".") and len(parts) > 3 else None


def folder(module: str) -> str | None:
    """The folder of genointerp/ a module lies in (genointerp.viral.typing.placement -> viral), None
    for genointerp's own modules."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else None


def stage_edges(graph: dict[str, set[str]], of=stage) -> dict[tuple[str, str], list[str]]:
    """(stage, stage it imports) -> the imports that make the edge, 'module -> module'; `of` names
    a module's stage (or folder: `folder`)."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            a, b = of(module), of(target)
            if a and b and a != b:
                edges.setdefault((a, b), []).append(f"{module} -> {target}")
    return edges


def both_ways(edges: dict[tuple[str, str], list[str]]) -> list[str]:
    """Each pair of stages that import each other, with the imports that do it."""
    return [f"{a} <-> {b}: {sorted(edges[a, b] + edges[b, a])}" for a, b in sorted(edges) if a < b and (b, a) in edges]


def imported_names(path: Path) -> set[tuple[str, str]]:
    """(module, name) for each `from module import name` of a file, at its top or in a function."""
    return {(node.module, alias.name) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}


def test_both_ways_finds_stages_that_import_each_other():
    graph = {"genointerp.viral.a.x": {"genointerp.viral.b.y"}, "genointerp.viral.b.y": set(),
             "genointerp.viral.b.z": {"genointerp.viral.a.w", "genointerp.viral.panel"}, "genointerp.viral.a.w": set()}
    assert both_ways(stage_edges(graph)) == ["a <-> b: ['genointerp.viral.a.x -> genointerp.viral.b.y', "
                                             "'genointerp.viral.b.z -> genointerp.viral.a.w']"]
    del graph["genointerp.viral.b.z"]
    assert both_ways(stage_edges(graph)) == []


def test_no_two_stage_folders_of_viral_import_each_other():
    edges = stage_edges(import_graph())
    assert ("classify", "evidence") in edges and ("typing", "evidence") in edges  # the graph sees the stages
    assert both_ways(edges) == []


def test_no_two_folders_of_genointerp_import_each_other():
    edges = stage_edges(import_graph(), folder)
    assert ("viral", "io") in edges and ("integrations", "viral") in edges
    assert both_ways(edges) == []


def typing_in(paths: list[Path]) -> list[str]:
    """The imports of `paths` that place or name reads: the placement, the evidence, TYPING_NAMES."""
    found = []
    for path in paths:
        for module, name in imported_names(path):
            if module.startswith((f"{VIRAL}.typing.placement", f"{VIRAL}.evidence")) or name in TYPING_NAMES:
                found.append(f"{path.name}: {module}.{name}")
    return sorted(found)


def outside_public(graph: dict[str, set[str]]) -> list[str]:
    """The viral modules that integrations/ imports beyond INTEGRATIONS_VIRAL."""
    reached = {t for m in graph if m.startswith("genointerp.integrations.") for t in graph[m]
               if t == VIRAL or t.startswith(VIRAL + ".")}
    return sorted(reached - INTEGRATIONS_VIRAL)


def test_the_rules_find_typing_in_report_and_a_private_viral_import(tmp_path):
    bad = tmp_path / "tally.py"
    bad.write_text("def f():\n    from genointerp.viral.typing.typer import Typer, TypeHits\n")
    assert typing_in([bad]) == ["tally.py: genointerp.viral.typing.typer.Typer"]
    graph = {"genointerp.integrations.job": {"genointerp.viral.typing.placement",
                                             "genointerp.viral.report.sample_report"}}
    assert outside_public(graph) == ["genointerp.viral.report.sample_report"]


def test_report_holds_no_typing():
    paths = sorted((ROOT / "genointerp/viral/report").glob("*.py"))
    assert len(paths) > 3
    assert typing_in(paths) == []


def test_integrations_reach_viral_only_through_its_public_pieces():
    graph = import_graph()
    assert "genointerp.viral.typing.placement" in graph["genointerp.integrations.pieces"]
    assert outside_public(graph) == []
