"""How requests reach the MCP endpoint and how in-process tool calls enter the app.

With no user middleware inside the plugin's, ``/mcp`` is served without the router; with some,
the request takes the mount so that those middlewares still see it. Either way every user
middleware sees the MCP request and the in-process tool call, and both ``/mcp`` and ``/mcp/`` work.
Tool calls enter just below the plugin's middleware only when nothing of the user's is above it.
"""

from __future__ import annotations

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from fastapi_mrtr import MCP
from tests.mcp_helpers import connect, make_server

pytestmark = pytest.mark.anyio


class Recorder:
    """A pure ASGI middleware noting the paths of the HTTP requests that pass through it."""

    def __init__(self, app: ASGIApp, seen: list[str]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append(scope["path"])
        await self.app(scope, receive, send)


def _app_with_echo(before: list[str] | None, after: list[str] | None) -> FastAPI:
    app = FastAPI()
    if before is not None:  # inside the plugin's middleware
        app.add_middleware(Recorder, seen=before)
    app, mcp = make_server(app)
    if after is not None:  # outside it
        app.add_middleware(Recorder, seen=after)
    return _with_echo(app, mcp)


def _with_echo(app: FastAPI, mcp: MCP) -> FastAPI:
    @mcp.tool()
    @app.post("/echo")
    async def echo(text: str) -> str:
        return text

    return app


@pytest.mark.parametrize("path", ["/mcp", "/mcp/"])
async def test_middlewares_on_both_sides_see_the_request_and_the_tool_call(path: str) -> None:
    before: list[str] = []
    after: list[str] = []
    app = _app_with_echo(before, after)
    async with connect(app, path) as client:
        result = await client.call("echo", {"text": "hi"})
    assert result["structuredContent"] == {"result": "hi"}
    assert path.rstrip("/") in [p.rstrip("/") for p in before]
    assert path in after
    assert "/echo" in before and "/echo" in after


@pytest.mark.parametrize("path", ["/mcp", "/mcp/"])
async def test_endpoint_served_directly_when_no_middleware_is_inside(path: str) -> None:
    after: list[str] = []
    app = _app_with_echo(None, after)
    async with connect(app, path) as client:
        result = await client.call("echo", {"text": "hi"})
        listed = await client.list_tools()
    assert result["structuredContent"] == {"result": "hi"}
    assert [tool["name"] for tool in listed] == ["echo"]
    assert after.count(path) == 2 and "/echo" in after


async def test_other_methods_on_the_endpoint_are_refused_as_before() -> None:
    app = _app_with_echo(None, None)
    async with connect(app) as client:
        response = await client.http.get("/mcp")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


# --- where in-process tool calls enter the app ------------------------------------------------


async def test_tool_call_sees_the_app_and_its_root_path() -> None:
    app, mcp = make_server()
    app.root_path = "/api"  # the deprecated FastAPI(root_path=...) option, without its warning

    @mcp.tool()
    @app.get("/where")
    async def where(request: Request) -> dict[str, object]:
        return {"root_path": request.scope["root_path"], "same_app": request.app is app}

    async with connect(app) as client:
        result = await client.call("where", {})
    assert result["structuredContent"] == {"root_path": "/api", "same_app": True}


async def test_an_exception_handler_for_500_still_runs_on_a_tool_call() -> None:
    app, mcp = make_server()
    handled: list[str] = []

    @app.exception_handler(Exception)
    async def on_error(request: Request, exc: Exception) -> JSONResponse:
        handled.append(request.url.path)
        return JSONResponse({"detail": "oops"}, status_code=500)

    @mcp.tool()
    @app.post("/boom")
    async def boom() -> None:
        raise RuntimeError("boom")

    async with connect(app) as client:
        result = await client.call("boom", {})
    assert result["isError"] is True
    assert handled == ["/boom"]


@pytest.mark.parametrize("extra", ["none", "middleware", "500 handler"])
async def test_tool_calls_enter_below_the_plugin_only_when_nothing_else_is_above(extra: str) -> None:
    app, mcp = make_server()
    if extra == "middleware":
        app.add_middleware(Recorder, seen=[])
    elif extra == "500 handler":
        app.add_exception_handler(500, lambda request, exc: JSONResponse({}, status_code=500))
    app = _with_echo(app, mcp)
    async with connect(app) as client:
        result = await client.call("echo", {"text": "hi"})
    assert result["structuredContent"] == {"result": "hi"}
    assert (mcp.call_runner.tool_entry is not None) == (extra == "none")
    assert (mcp.call_runner.route_entry is not None) == (extra == "none")
