"""Every code name ARCHITECTURE.md cites exists: a newcomer reads it first, so it must not lie.

A backticked token is checked when it looks like code:

- a path whose first part is a folder of the repository or of the package (``engine/flow.py``,
  ``transport/callers``): the file, the module or the folder exists;
- a dotted name (``engine.rounds.run_round``, ``CallRunner.attach``, ``ctx.elicit``): its head is a
  module (a suffix of a module's dotted path is enough) or a class the package defines, and every
  further part is an attribute found on it at run time;
- a bare ``snake_case`` or ``CapWords`` name: a module, class, function, method or assignment of
  that name exists somewhere in the package.

camelCase tokens are JSON fields of the wire, and tokens with spaces or braces are snippets; both
are prose, not names, and so are the MCP method names and HTTP words listed in ``NOT_CODE``.
"""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path
from types import ModuleType

import fastapi_mrtr

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "fastapi_mrtr"
DOCUMENT = ROOT / "ARCHITECTURE.md"

# Words in backticks that are wire or prose, not names in the code.
NOT_CODE = {"initialize", "ping", "endpoint", "answers", "tools", "mrtr", "input_required", "async def", "_meta"}
# A short name the document uses for an object: what it stands for.
ALIASES = {"ctx": "fastapi_mrtr.engine.context.ToolContext"}

BACKTICKED = re.compile(r"`([^`\n]+)`")
SNAKE_OR_CAP = re.compile(r"^_*[a-z][a-z0-9_]*$|^_*[A-Z][A-Za-z0-9]*$")
DOTTED = re.compile(r"^_*[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


@cache
def modules() -> dict[str, ModuleType]:
    found = {"fastapi_mrtr": fastapi_mrtr}
    for path in sorted(PACKAGE.rglob("*.py")):  # by file: transport/legacy/ is a namespace package
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__main__":
            continue  # importing it would start the program
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = importlib.import_module(name)
    return found


@cache
def defined_names() -> frozenset[str]:
    """Every module, class, function, method, assigned and imported name in the package's source."""
    names: set[str] = {name.rsplit(".", 1)[-1] for name in modules()}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.ImportFrom):  # a library type the document names (Request, Protocol)
                names.update(alias.asname or alias.name for alias in node.names)
    return frozenset(names)


def classes_named(name: str) -> list[object]:
    return [
        value
        for module in modules().values()
        if isinstance(value := vars(module).get(name), type) and value.__module__ == module.__name__
    ]


def resolves(dotted: str) -> bool:
    head, *rest = dotted.split(".")
    if head in ALIASES:
        return resolves(ALIASES[head] + "." + ".".join(rest))
    parts = dotted.split(".")
    starts: list[tuple[object, list[str]]] = []
    for cut in range(len(parts), 0, -1):  # the longest module suffix first: engine.rounds, then rounds
        suffix = ".".join(parts[:cut])
        starts += [
            (module, parts[cut:]) for name, module in modules().items() if name == suffix or name.endswith("." + suffix)
        ]
    starts += [(cls, parts[1:]) for cls in classes_named(head)]
    return any(_has_path(start, remaining) for start, remaining in starts)


def _has_path(start: object, attributes: list[str]) -> bool:
    value = start
    for attribute in attributes:
        annotations = getattr(value, "__annotations__", {}) if isinstance(value, type) else {}
        fields = getattr(value, "__dataclass_fields__", {})
        slots = getattr(value, "__slots__", ())
        if hasattr(value, attribute):
            value = getattr(value, attribute)
        elif attribute in annotations or attribute in fields or attribute in slots:
            return attribute == attributes[-1]  # an instance field: nothing further to look into
        else:
            return False
    return True


def path_exists(token: str) -> bool:
    bare = token.rstrip("/")
    for base in (ROOT, PACKAGE):
        candidate = base / bare
        if candidate.exists() or candidate.with_suffix(".py").exists():
            return True
    return False


def is_repository_path(token: str) -> bool:
    if " " in token or token.startswith("/"):
        return False  # a snippet, or a URL path such as /mcp
    if token.endswith(".py"):
        return True
    first = token.split("/", 1)[0]
    return "/" in token and ((ROOT / first).is_dir() or (PACKAGE / first).is_dir())


def cited_tokens() -> list[str]:
    tokens = []
    for token in BACKTICKED.findall(DOCUMENT.read_text(encoding="utf-8")):
        token = re.sub(r"\(.*\)$", "", token.strip())  # run(record) names run
        if token and token not in NOT_CODE:
            tokens.append(token)
    return sorted(set(tokens))


def unresolved(tokens: list[str]) -> list[str]:
    missing = []
    for token in tokens:
        if is_repository_path(token):
            ok = path_exists(token)
        elif DOTTED.match(token):
            ok = resolves(token)
        elif SNAKE_OR_CAP.match(token):
            ok = token in defined_names() or token in ALIASES
        else:
            continue  # a wire field, an HTTP header, a snippet: prose
        if not ok:
            missing.append(token)
    return missing


def test_every_name_architecture_md_cites_exists() -> None:
    assert unresolved(cited_tokens()) == []


def test_the_check_catches_a_stale_name() -> None:
    stale = [
        "engine/flows.py",  # a module that was renamed
        "transport/legacy/endpoints",
        "engine.rounds.run_rounds",  # a function that was renamed
        "transport.request.RequestValidator.accept_all",  # a method that is gone
        "CallRunner.path_for",  # deleted dead code
        "RoundRunner",  # a class that never existed
        "ctx.elicit_twice",
        "follow_relayed_streams",
    ]
    assert unresolved(stale) == stale
    fresh = ["engine/flow.py", "transport/legacy/", "engine.rounds.run_round", "ctx.elicit", "MCP", "ledger"]
    assert unresolved(fresh) == []
