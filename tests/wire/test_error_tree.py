"""wire/errors.py draws every exception of the package as one tree: this keeps the drawing true."""

from __future__ import annotations

import ast
import pathlib

import fastapi_mrtr.wire.errors as errors

PACKAGE = pathlib.Path(errors.__file__).resolve().parent.parent


def exception_classes() -> dict[str, str]:
    """Every public class of the package that derives from an exception, by name -> module path."""
    found: dict[str, str] = {}
    known = {"Exception", "BaseException", "ValueError", "TimeoutError", "McpError"}
    pending: list[tuple[str, str, list[str]]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
                pending.append((node.name, str(path.relative_to(PACKAGE)), bases))
    changed = True
    while changed:  # a class is an exception when any base is one (bases may come later in the walk)
        changed = False
        for name, where, bases in pending:
            if name not in known and any(base in known for base in bases):
                known.add(name)
                found[name] = where
                changed = True
    return {name: where for name, where in found.items() if not name.startswith("_")}


def test_every_exception_of_the_package_is_in_the_tree() -> None:
    tree = errors.__doc__ or ""
    missing = {name: where for name, where in exception_classes().items() if name not in tree}
    assert not missing, f"draw these in wire/errors.py's docstring: {missing}"


def test_the_status_of_a_code_is_one_rule() -> None:
    assert errors.http_status_of(errors.METHOD_NOT_FOUND) == 404
    assert errors.http_status_of(errors.INTERNAL_ERROR) == 500
    assert errors.http_status_of(errors.INVALID_PARAMS) == 400
    assert errors.ServerError(errors.INTERNAL_ERROR, "x").http_status == 500
    assert errors.ServerError(errors.INTERNAL_ERROR, "x", http_status=503).http_status == 503
