"""FastAPI's and Starlette's internals stay behind integration.fastapi_compat, and CI tests the range.

These tests run on the newest FastAPI (scripts/test.sh) and on the lowest (scripts/test-lowest.sh),
so the branches the compat module keeps for older FastAPI run too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import Router

from fastapi_mrtr import Context
from fastapi_mrtr.integration import fastapi_compat
from fastapi_mrtr.integration.call_runner import CallPath
from tests.mcp_helpers import connect, make_server

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fastapi_mrtr"
COMPAT = PACKAGE / "integration" / "fastapi_compat.py"
# FastAPI's modules with no public API at all (the public names live in fastapi, fastapi.routing...).
PRIVATE_MODULES = ("fastapi.dependencies", "fastapi.utils", "fastapi.datastructures", "fastapi.telemetry")


def _is_private_module(module: str) -> bool:
    parts = module.split(".")
    if parts[0] not in ("fastapi", "starlette"):
        return False
    return any(part.startswith("_") for part in parts) or module.startswith(PRIVATE_MODULES)


def _private_uses(path: Path) -> list[str]:
    """The private FastAPI/Starlette names a module imports, and the private attributes it reads."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imports_framework = False
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imports_framework |= node.module.split(".")[0] in ("fastapi", "starlette")
            if _is_private_module(node.module):
                found.append(f"line {node.lineno}: from {node.module} import ...")
            elif node.module.split(".")[0] in ("fastapi", "starlette"):
                found += [f"line {node.lineno}: {a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Import):
            imports_framework |= any(a.name.split(".")[0] in ("fastapi", "starlette") for a in node.names)
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if _is_private_module(a.name)]
    if not imports_framework:
        return found  # it holds no FastAPI object whose private attributes it could read
    for node in ast.walk(tree):
        attr = None
        own = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
        if isinstance(node, ast.Attribute) and not own:
            attr = node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            name = node.args[1] if len(node.args) > 1 else None
            attr = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None
        if attr and attr.startswith("_") and not attr.startswith("__"):
            found.append(f"line {node.lineno}: .{attr}")
    return found


def test_only_the_compat_module_uses_private_fastapi_or_starlette_apis() -> None:
    offenders = {
        str(path.relative_to(ROOT)): uses
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != COMPAT and (uses := _private_uses(path))
    }
    assert offenders == {}, "put these behind fastapi_mrtr/integration/fastapi_compat.py (a small named function)"


def test_the_check_sees_each_kind_of_private_use(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from fastapi._compat import ModelField\n"
        "from fastapi.dependencies.utils import request_params_to_args\n"
        "from starlette._utils import is_async_callable\n"
        "from fastapi import routing\n"
        "def f(layer, route):\n"
        "    return layer._exception_handlers, getattr(route, '_embed_body_fields', None), routing._x\n"
    )
    assert len(_private_uses(module)) == 6


def _pinned(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    assert found is not None, pattern
    return found.group(1)


@pytest.mark.parametrize(("package", "variable"), [("fastapi", "FASTAPI"), ("starlette", "STARLETTE")])
def test_the_lowest_ci_run_installs_the_floors_of_pyproject(package: str, variable: str) -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    script = (ROOT / "scripts" / "test-lowest.sh").read_text(encoding="utf-8")
    floor = _pinned(rf'"{package}>=([0-9.]+)', pyproject)
    assert _pinned(rf'LOWEST_{variable}="([0-9.]+)"', script) == floor


def test_the_lowest_ci_run_installs_the_pydantic_floor() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    script = (ROOT / "scripts" / "test-lowest.sh").read_text(encoding="utf-8")
    floor = [int(part) for part in _pinned(r'"pydantic>=([0-9.]+)', pyproject).split(".")]
    pinned = [int(part) for part in _pinned(r'LOWEST_PYDANTIC="([0-9.]+)"', script).split(".")]
    assert pinned == floor + [0] * (len(pinned) - len(floor))


def test_ci_runs_the_lowest_after_the_readme_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/test.sh" in ci
    assert ci.index("bash scripts/test-lowest.sh") > ci.index("bash scripts/test.sh")


def test_the_router_is_found_below_the_exception_middleware_of_every_supported_fastapi(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = FastAPI()
    stack: Any = app.build_middleware_stack()
    while type(stack) is not ExceptionMiddleware:
        stack = stack.app
    assert fastapi_compat.router_below_exceptions(stack) is app.router
    # FastAPI 0.117 and older have no exit-stack middleware: the router sits right there.
    monkeypatch.setattr(fastapi_compat, "_FileStackMiddleware", None)
    router = Router()
    assert fastapi_compat.router_below_exceptions(ExceptionMiddleware(router)) is router


@pytest.mark.anyio
@pytest.mark.parametrize("fastest", [CallPath.DIRECT, CallPath.ROUTE, CallPath.WALK], ids=str)
async def test_an_included_routes_tool_call_sees_the_route_rest_sees(fastest: CallPath) -> None:
    """Whichever route object this FastAPI puts in the scope (a prefixed copy, or the router's own)."""
    app, mcp = make_server(FastAPI())
    mcp.call_runner.fastest = fastest
    router = APIRouter()

    @mcp.tool()
    @router.post("/{item_id}/archive")
    async def archive(item_id: str, ctx: Context) -> dict[str, str]:
        return {"item": item_id, "route": ctx.request.scope["route"].path}

    app.include_router(router, prefix="/orders")
    async with connect(app) as client:
        called = await client.call("archive", {"item_id": "7"})
        rest = await client.http.post("/orders/7/archive")
    assert rest.status_code == 200
    assert called["structuredContent"] == rest.json()
    assert rest.json()["route"] in ("/{item_id}/archive", "/orders/{item_id}/archive")
