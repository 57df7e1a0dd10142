"""Questions checked when a handler is registered: ``ctx.elicit(message, Type)`` whose type is known.

``ctx.elicit`` refuses a type no form can carry on the line that asks (``elicit_wire``), but a
question asked only on a rare branch would then fail in production. So registration reads the
handler's own source once: each ``<param>.elicit(...)`` call on one of its parameters, whose
schema argument is a plain name, a dotted name or a type expression (``list[str]``,
``int | None``) that resolves in the function's module *now*, is built as the ask would build
it, and a type no form can carry raises the same ``TypeError`` at import, naming the line.

What it cannot know it leaves to the ask: a schema held in a variable, a question asked in a
helper function or a dependency, a handler without source (a REPL, a compiled module). Nothing
here runs the handler or calls anything of the app's: the schema expression is only evaluated
when it consists of names, attribute lookups, subscripts, ``|`` and constants.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from fastapi_mrtr.engine.elicitation_schema import requested_schema_for

_SAFE_NODES = (
    ast.Expression,
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.BinOp,
    ast.BitOr,
    ast.Constant,
    ast.Load,
)


def check_static_questions(fn: Callable[..., Any]) -> None:
    """Raise ``TypeError`` for a ``ctx.elicit`` in ``fn`` whose type is known now and no form can carry."""
    tree, first_line = _parsed(fn)
    if tree is None:
        return
    params = _parameters(tree)
    local = _local_names(tree)
    for call in ast.walk(tree):
        schema_node = _elicit_schema(call, params)
        if schema_node is None or any(isinstance(n, ast.Name) and n.id in local for n in ast.walk(schema_node)):
            continue  # a name bound inside the handler is not the module's: only the ask knows it
        found, schema = _resolve(schema_node, fn)
        if not found:
            continue
        try:
            requested_schema_for(schema)
        except TypeError as exc:
            line = first_line + getattr(call, "lineno", 1) - 1
            where = f"{fn.__qualname__} ({inspect.getsourcefile(fn) or '?'}, line {line})"
            raise TypeError(f"{where}: {exc}") from None


def _parsed(fn: Callable[..., Any]) -> tuple[ast.AST | None, int]:
    target = inspect.unwrap(fn)
    try:
        lines, first_line = inspect.getsourcelines(target)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None, 0  # no source to read: the ask itself still checks
    return tree, max(first_line, 1)


def _parameters(tree: ast.AST) -> set[str]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
            return {arg.arg for arg in every}
    return set()


def _local_names(tree: ast.AST) -> set[str]:
    """Names the function binds itself (parameters, assignments, classes, imports, loop targets)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def _elicit_schema(node: ast.AST, params: set[str]) -> ast.expr | None:
    """The schema argument of ``<param>.elicit(message, schema, ...)``, if ``node`` is such a call."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or node.func.attr != "elicit":
        return None
    owner = node.func.value
    if not isinstance(owner, ast.Name) or owner.id not in params:
        return None
    if len(node.args) >= 2:
        return node.args[1]
    return next((kw.value for kw in node.keywords if kw.arg == "schema"), None)


def _resolve(node: ast.expr, fn: Callable[..., Any]) -> tuple[bool, Any]:
    """(True, the value) when ``node`` is a type expression that resolves in ``fn``'s module now."""
    expression = ast.Expression(body=node)
    if not all(isinstance(part, _SAFE_NODES) for part in ast.walk(expression)):
        return False, None
    if isinstance(node, ast.Constant) and node.value is None:
        return False, None  # elicit(message, None): a URL-mode or prebuilt request, not a form type
    namespace = dict(getattr(inspect.unwrap(fn), "__globals__", {}))
    try:
        return True, eval(compile(expression, "<schema>", "eval"), namespace, {})  # names and lookups only
    except Exception:
        return False, None  # not known at registration (a local name, a forward reference)
