"""The compiler's modules are layered without import cycles (lang -> ir -> passes -> codegen
-> build driver -> CLI, leaf modules below): no module of floem/ imports, directly or not, a
module that imports it back. Imports only for type checking (``if TYPE_CHECKING:``) count
too: a type a lower module needs from a higher one belongs lower down."""
from __future__ import annotations

import ast
import os

import networkx as nx

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "floem")


def module_names() -> dict[str, str]:
    """Module name -> file, for every module of the floem package."""
    names = {}
    for directory, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(directory, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                names[rel.removesuffix(".__init__")] = path
    return names


def floem_imports(path: str, module: str, known: dict[str, str]) -> set[str]:
    """floem modules ``path`` imports, wherever in it (type-checking-only imports too)."""
    tree = ast.parse(open(path).read())
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "floem"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "floem":
                continue
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return found


def test_no_import_cycle_inside_floem() -> None:
    known = module_names()
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    for module, path in known.items():
        graph.add_edges_from((module, imported) for imported in floem_imports(path, module, known))
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles == [], f"import cycles: {cycles}"


def test_passes_and_codegen_do_not_import_the_build_driver_or_the_cli() -> None:
    known = module_names()
    for module, path in known.items():
        if module.startswith(("floem.lang", "floem.ir", "floem.passes", "floem.codegen")):
            upward = {m for m in floem_imports(path, module, known)
                      if m in ("floem.builder", "floem.cli", "floem.api")
                      or m.startswith("floem.explore")}
            assert upward == set(), f"{module} imports {upward}"
