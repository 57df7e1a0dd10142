"""The package's layers go one way, and no module is part of an import circle.

Every import counts: at the top of a module, inside a function (a "lazy" import that breaks a
circle at run time still ties the two modules together), and under ``TYPE_CHECKING`` (two
modules that name each other's types know too much of each other). ARCHITECTURE.md draws the
same table.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "fastapi_mrtr"

# Lowest first: a module may import its own layer and the layers before it, never one after.
LAYERS = [
    ("wire", ("fastapi_mrtr.wire", "fastapi_mrtr.telemetry")),  # telemetry: OpenTelemetry by the MCP conventions
    ("state", ("fastapi_mrtr.state",)),
    ("engine", ("fastapi_mrtr.engine",)),
    ("transport", ("fastapi_mrtr.transport",)),
    ("integration", ("fastapi_mrtr.integration",)),
    ("features", ("fastapi_mrtr.features",)),
    ("tasks", ("fastapi_mrtr.tasks",)),  # SEP-2663 tasks: a tools/call that outlives its request
    ("playground", ("fastapi_mrtr.playground",)),
    ("auth", ("fastapi_mrtr.auth",)),  # the endpoint as an OAuth resource server: above the routes it reads
    ("app", ("fastapi_mrtr.app",)),
    ("stdio", ("fastapi_mrtr.stdio",)),  # on top of the app: the same endpoint, bridged to a pipe
    ("facade", ("fastapi_mrtr",)),
]
CLIENT = "fastapi_mrtr.client"  # apart from the server: it shares only the wire vocabulary
NO_FASTAPI = ("wire", "state", "client")  # neither FastAPI nor Starlette below these names


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path) -> Iterator[str]:
    """Every module ``path`` imports, absolute, wherever the import statement sits."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            yield target
            yield from (f"{target}.{alias.name}" for alias in node.names)


def package_graph() -> dict[str, set[str]]:
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {
        name: {target for target in imported_names(path) if target in modules and target != name}
        for name, path in modules.items()
    }


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer index): the longest prefix wins
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return None if best is None or module.startswith(CLIENT) else best[1]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles() -> None:
    assert circles(package_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_every_module_has_a_layer() -> None:
    unplaced = [name for name in package_graph() if layer_of(name) is None and not name.startswith(CLIENT)]
    assert unplaced == []


def test_layers_import_only_downwards() -> None:
    upward = []
    for module, targets in package_graph().items():
        if module.startswith(CLIENT):
            continue
        mine = layer_of(module)
        assert mine is not None
        for target in targets:
            theirs = layer_of(target)
            if target.startswith(CLIENT) or (theirs is not None and theirs > mine):
                upward.append(f"{module} ({LAYERS[mine][0]}) imports {target}")
    assert upward == []


def test_the_client_shares_only_the_wire_vocabulary() -> None:
    crossing = []
    for module, targets in package_graph().items():
        if not module.startswith(CLIENT):
            continue
        for target in targets:
            if not target.startswith(CLIENT) and layer_of(target) != 0:
                crossing.append(f"{module} imports {target}")
    assert crossing == []


def test_the_lower_layers_know_nothing_of_fastapi() -> None:
    knowing = []
    for path in PACKAGE.rglob("*.py"):
        module = module_name(path)
        layer = "client" if module.startswith(CLIENT) else LAYERS[layer_of(module) or 0][0]
        if layer not in NO_FASTAPI:
            continue
        for target in imported_names(path):
            if target.split(".")[0] in ("fastapi", "starlette"):
                knowing.append(f"{module} imports {target}")
    assert sorted(set(knowing)) == []
