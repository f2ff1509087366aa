"""No two modules of the product import each other, directly or through others.

The import graph (every ``import``, also those inside functions and under ``TYPE_CHECKING``) is
built with grimp, which import-linter uses; a strongly connected component of more than one
module is a cycle. A cycle means neither module can be read, tested or loaded without the
other: move the shared names to the module that should own them.
"""

from __future__ import annotations

import grimp

PACKAGE = "argocd_image_updater"


def import_cycles(graph: grimp.ImportGraph, package: str) -> list[frozenset[str]]:
    """The strongly connected components of more than one module of ``package`` (Tarjan's
    algorithm, iterative: the graph is some 300 modules deep at most, but recursion would
    still depend on the interpreter's limit)."""
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    edges = {
        m: sorted(
            n
            for n in graph.find_modules_directly_imported_by(m)
            if n == package or n.startswith(package + ".")
        )
        for m in modules
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = edges[node]
            if position < len(targets):
                work.append((node, position + 1))
                target = targets[position]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(PACKAGE, cache_dir=None)


def test_no_module_imports_another_that_imports_it_back() -> None:
    cycles = import_cycles(_graph(), PACKAGE)
    listed = "\n".join(" <-> ".join(sorted(c)) for c in cycles)
    assert not cycles, f"modules importing each other (directly or through others):\n{listed}"


def test_a_cycle_is_found() -> None:
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c", "p.d"):
        graph.add_module(name)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    graph.add_import(importer="p.c", imported="p.d")
    assert import_cycles(graph, "p") == [frozenset({"p.a", "p.b", "p.c"})]
