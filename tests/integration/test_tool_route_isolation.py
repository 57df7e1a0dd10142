"""A tool call runs its own route and nothing else, whatever its path arguments hold.

A path argument is one segment of the tool's route: percent-encoded in ``raw_path``, and matched
only against the tool's route. A value the route cannot carry as one segment (a ``/`` in a plain
``{name}``, an empty value, a non-number for ``{name:int}``) is refused with the route's 422; a
``{name:path}`` parameter takes ``/`` as a REST caller would send it. Decoy routes that a pasted
value would reach record whether they ran; none may, on any of the call paths (direct call, into
the route, the full walk through the app with or without user middleware), in-process and over
real uvicorn with the official MCP client. Middleware that rewrites the request cannot redirect a
tool call either: the call is refused. REST requests to the same app route as before.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI, Request
from mcp import Client
from starlette.types import ASGIApp, Receive, Scope, Send

from fastapi_mrtr import MCP, Context
from fastapi_mrtr.integration.call_runner import CallPath
from fastapi_mrtr.integration.direct_call import DirectCall
from tests.mcp_helpers import connect, make_server
from tests.support import running_server

pytestmark = pytest.mark.anyio

JSON = dict[str, Any]

# Values a plain ``{name}`` carries as one segment: the route gets them exactly.
ONE_SEGMENT = [
    "7",
    "..",
    ".",
    "7%2Fpurge",
    "a?b",
    "a#b",
    "a b",
    "%00",
    "a\x00b",
    "ünïcödé",
    "日本",
    "a&b=c;d",
    "+~'*",
]
# Values no request of a plain ``{name}`` carries: a ``/`` (raw or decoded from ``%2F``), or nothing.
NOT_A_SEGMENT = ["7/purge", "../..", "../purge", "/", "", "ünï/cödé", "7/purge/..", "a\x00/b", "?/#"]

PATHS = ["direct", "route_entry", "full_walk", "user_middleware"]
# The fastest way each path lets a call take (the user middleware makes every call walk by itself).
FASTEST = {
    "direct": CallPath.DIRECT,
    "route_entry": CallPath.ROUTE,
    "full_walk": CallPath.WALK,
    "user_middleware": CallPath.DIRECT,
}


class Decoys:
    """What ran of the routes no tool call may reach."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def hit(self, what: str) -> JSON:
        self.ran.append(what)
        return {"decoy": what}


def seen(ctx: Context, value: Any) -> JSON:
    """What the tool's route saw of its request."""
    scope = ctx.request.scope
    return {
        "value": value,
        "path": scope["path"],
        "raw_path": scope["raw_path"].decode("latin-1"),
        "route": scope["route"].path,
    }


def add_routes(app: FastAPI, mcp: MCP, decoys: Decoys) -> None:
    """Tool routes with decoys around them."""
    tool = mcp.tool()

    @app.post("/items/{item_id}/purge/archive")
    async def purge(item_id: str) -> JSON:
        return decoys.hit(f"purge {item_id}")

    @app.get("/items/{item_id}/secret/show")
    async def secret(item_id: str) -> JSON:
        return decoys.hit(f"secret {item_id}")

    @app.get("/files/{name}/delete")  # registered first: the router would pick it for /files/x/delete
    async def delete_file(name: str) -> JSON:
        return decoys.hit(f"delete {name}")

    @tool
    @app.post("/items/{item_id}/archive")
    async def archive_item(item_id: str, ctx: Context) -> JSON:
        return seen(ctx, item_id)

    @tool
    @app.get("/items/{item_id}/show")
    async def show_item(item_id: str, ctx: Context) -> JSON:
        return seen(ctx, item_id)

    @tool
    @app.get("/files/{file_path:path}")
    async def read_file(file_path: str, ctx: Context) -> JSON:
        return seen(ctx, file_path)

    @tool
    @app.get("/pages/{page:int}")
    async def view_page(page: int, ctx: Context) -> JSON:
        return seen(ctx, page)

    @app.get("/pages/{name}")
    async def page_by_name(name: str) -> JSON:
        return decoys.hit(f"page {name}")

    @app.api_route("/{anything:path}", methods=["GET", "POST"])
    async def everything_else(anything: str) -> JSON:
        return decoys.hit(f"catch-all {anything}")


class Answered:
    """How many calls the direct call answered itself (the rest went to the route)."""

    def __init__(self) -> None:
        self.direct = 0


def build(path: str, monkeypatch: pytest.MonkeyPatch, **app_options: Any) -> tuple[FastAPI, MCP, Decoys, Answered]:
    """The app, taking the named call path for every tool call."""
    answered = Answered()
    original_call = DirectCall.call

    async def counting_call(self: DirectCall, *args: Any, **kwargs: Any) -> Any:
        response = await original_call(self, *args, **kwargs)
        answered.direct += response is not None
        return response

    monkeypatch.setattr(DirectCall, "call", counting_call)
    app, mcp = make_server(FastAPI(**app_options))
    mcp.call_runner.fastest = FASTEST[path]
    if path == "user_middleware":

        @app.middleware("http")
        async def passthrough(request: Request, call_next: Any) -> Any:
            return await call_next(request)

    decoys = Decoys()
    add_routes(app, mcp, decoys)
    return app, mcp, decoys, answered


def check_path_taken(path: str, mcp: MCP, answered: Answered, successes: int) -> None:
    runner = mcp.call_runner
    if path == "direct":
        assert not runner.walks() and answered.direct == successes
    elif path == "route_entry":
        assert not runner.walks() and answered.direct == 0
    else:
        assert runner.walks() and answered.direct == 0
        assert (runner.tool_entry is None) == (path == "user_middleware")


def refusal(result: JSON) -> JSON:
    """The 422 detail of an isError result."""
    assert result["isError"] is True, result
    detail: JSON = json.loads(result["content"][0]["text"])
    assert detail["status"] == 422, detail
    return detail


def one_segment(prefix: str, value: str, suffix: str) -> JSON:
    return {"path": prefix + value + suffix, "raw_path": prefix + quote(value, safe="") + suffix}


@pytest.mark.parametrize("path", PATHS)
async def test_a_path_value_is_one_segment_of_the_tools_own_route(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    app, mcp, decoys, answered = build(path, monkeypatch)
    async with connect(app) as client:
        for tool, prefix, suffix, route in [
            ("archive_item", "/items/", "/archive", "/items/{item_id}/archive"),
            ("show_item", "/items/", "/show", "/items/{item_id}/show"),
        ]:
            for value in ONE_SEGMENT:
                result = await client.call(tool, {"item_id": value})
                assert result["isError"] is False, (tool, value, result)
                assert result["structuredContent"] == {
                    "value": value,
                    "route": route,
                    **one_segment(prefix, value, suffix),
                }, (tool, value)
            for value in NOT_A_SEGMENT:
                result = await client.call(tool, {"item_id": value})
                [error] = refusal(result)["detail"]
                assert error["loc"] == ["path", "item_id"] and error["input"] == value, (tool, value, error)
                assert error["type"] == "string_pattern_mismatch", error
    assert decoys.ran == []
    check_path_taken(path, mcp, answered, successes=2 * len(ONE_SEGMENT))


@pytest.mark.parametrize("path", PATHS)
async def test_a_path_convertor_takes_slashes_as_a_rest_caller_sends_them(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, _, decoys, _ = build(path, monkeypatch)
    values = ["x/delete", "a/b", "../../etc/passwd", "..", "", "a%2Fb", "a?b#c", "ünï/cödé", "dir/", "/abs"]
    async with connect(app) as client:
        for value in values:
            result = await client.call("read_file", {"file_path": value})
            assert result["isError"] is False, (value, result)
            assert result["structuredContent"] == {
                "value": value,
                "path": f"/files/{value}",
                "raw_path": "/files/" + quote(value, safe="/"),
                "route": "/files/{file_path:path}",
            }, value
        [error] = refusal(await client.call("read_file", {"file_path": "a\nb"}))["detail"]  # no URL of it matches
        assert error["loc"] == ["path", "file_path"] and error["ctx"] == {"pattern": ".*"}
    assert decoys.ran == []


@pytest.mark.parametrize("path", PATHS)
async def test_a_typed_convertor_refuses_what_it_cannot_match(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    app, _, decoys, _ = build(path, monkeypatch)
    async with connect(app) as client:
        ok = await client.call("view_page", {"page": 7})
        refused = [await client.call("view_page", {"page": value}) for value in ["abc", "7/purge", "-1", "", "7 "]]
    assert ok["structuredContent"]["value"] == 7 and ok["structuredContent"]["path"] == "/pages/7"
    for result in refused:
        [error] = refusal(result)["detail"]
        assert error["loc"] == ["path", "page"] and error["ctx"] == {"pattern": "[0-9]+"}
    assert decoys.ran == []


async def test_the_full_walk_over_uvicorn_with_the_official_client(monkeypatch: pytest.MonkeyPatch) -> None:
    app, _, decoys, _ = build("user_middleware", monkeypatch)
    with running_server(app) as base:
        async with Client(f"{base}/mcp", mode="2026-07-28") as client:
            for value in ["7/purge", "7%2Fpurge", "..", "../..", "a?b", "a#b", "a b", "a\x00b", "ünï"]:
                archived = await client.call_tool("archive_item", {"item_id": value})
                shown = await client.call_tool("show_item", {"item_id": value})
                for result in (archived, shown):
                    if "/" in value:
                        assert result.is_error is True, (value, result)
                        assert '"status": 422' in result.content[0].text  # type: ignore[union-attr]
                    else:
                        assert result.is_error is False, (value, result)
                        assert result.structured_content is not None
                        assert result.structured_content["value"] == value
            shadowed = await client.call_tool("read_file", {"file_path": "x/delete"})
            assert shadowed.structured_content is not None and shadowed.structured_content["value"] == "x/delete"
        async with httpx.AsyncClient(base_url=base) as http:  # REST still reaches the decoys
            assert (await http.post("/items/7%2Fpurge/archive")).json() == {"decoy": "purge 7"}
    assert decoys.ran == ["purge 7"]


# --- middleware cannot redirect a tool call ---------------------------------------------------------


class Rewrite:
    """A pure ASGI middleware that hands the router another request than the one it got (not /mcp's)."""

    def __init__(self, app: ASGIApp, rewrite: Callable[[Scope], Scope]) -> None:
        self.app = app
        self.rewrite = rewrite

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        rewritten = scope["type"] == "http" and not scope["path"].startswith("/mcp")
        await self.app(self.rewrite(scope) if rewritten else scope, receive, send)


def to_purge(scope: Scope) -> Scope:
    path = scope["path"].replace("/archive", "/purge/archive")
    return {**scope, "path": path, "raw_path": path.encode()}


def normalised(scope: Scope) -> Scope:
    return {**scope, "path": posixpath.normpath(scope["path"])}


def as_get(scope: Scope) -> Scope:
    return {**scope, "method": "GET"}


@pytest.mark.parametrize("rewrite", [to_purge, normalised, as_get])
async def test_middleware_that_rewrites_the_request_cannot_redirect_a_tool_call(rewrite: Any) -> None:
    app, mcp = make_server()
    decoys = Decoys()
    add_routes(app, mcp, decoys)
    app.add_middleware(Rewrite, rewrite=rewrite)
    async with connect(app) as client:
        result = await client.call("archive_item", {"item_id": ".."})
        rest = await client.http.post("/items/../archive")
    assert result["isError"] is True, result
    text = result["content"][0]["text"]
    assert "archive_item" in text and "/items/{item_id}/archive" in text and "was not run" in text
    assert decoys.ran == [rest.json()["decoy"]]  # only the REST request reached a decoy


async def test_a_router_with_its_own_middleware_keeps_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    app, mcp, decoys, _ = build("full_walk", monkeypatch, max_body_size=10_000)
    async with connect(app) as client:
        ok = await client.call("archive_item", {"item_id": "7"})
        refused = await client.call("archive_item", {"item_id": "7/purge"})
        shadowed = await client.call("read_file", {"file_path": "x/delete"})
    assert ok["structuredContent"]["value"] == "7"
    assert refusal(refused)["detail"][0]["loc"] == ["path", "item_id"]
    assert shadowed["structuredContent"]["value"] == "x/delete"
    assert decoys.ran == [] and mcp.call_runner.route_entry is None


async def test_a_router_the_guard_cannot_enter_refuses_tool_calls(caplog: pytest.LogCaptureFixture) -> None:
    app = FastAPI()
    routing = app.router.middleware_stack

    async def opaque(scope: Scope, receive: Receive, send: Send) -> None:  # router middleware with no .app
        await routing(scope, receive, send)

    app.router.middleware_stack = opaque
    app, mcp = make_server(app)
    decoys = Decoys()
    add_routes(app, mcp, decoys)
    async with connect(app) as client:
        result = await client.call("archive_item", {"item_id": "7"})
        rest = await client.http.post("/items/7/archive")
    assert result["isError"] is True and "was not run" in result["content"][0]["text"], result
    assert rest.status_code == 200 and rest.json()["value"] == "7"  # REST is routed as before
    assert decoys.ran == []
    assert any("cannot check" in record.getMessage() for record in caplog.records)


# --- REST is unchanged --------------------------------------------------------------------------------


# (method, URL, what answers): the router's choice, as FastAPI makes it without the plugin. A REST
# ``%2F`` is decoded before routing, so it reaches the decoy: Starlette routes on the decoded path.
REST_REQUESTS = [
    ("POST", "/items/7/archive", "tool 7"),
    ("POST", "/items/7/purge/archive", "purge 7"),
    ("POST", "/items/7%2Fpurge/archive", "purge 7"),
    ("GET", "/items/a%3Fb/show", "tool a?b"),
    ("GET", "/items/7/secret/show", "secret 7"),
    ("GET", "/items/7%2Fsecret/show", "secret 7"),
    ("GET", "/files/x/delete", "delete x"),
    ("GET", "/files/a/b", "tool a/b"),
    ("GET", "/pages/7", "tool 7"),
    ("GET", "/pages/abc", "page abc"),
    ("GET", "/nowhere", "catch-all nowhere"),
]


@pytest.mark.parametrize("middleware", [False, True])
async def test_rest_requests_are_routed_as_without_the_plugin(middleware: bool) -> None:
    app, mcp = make_server()
    decoys = Decoys()
    add_routes(app, mcp, decoys)
    if middleware:

        @app.middleware("http")
        async def passthrough(request: Request, call_next: Any) -> Any:
            return await call_next(request)

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        answers = [(await http.request(method, url)).json() for method, url, _ in REST_REQUESTS]
    got = [f"tool {answer['value']}" if "value" in answer else answer["decoy"] for answer in answers]
    assert got == [expected for _, _, expected in REST_REQUESTS]
    assert decoys.ran == [expected for expected in got if not expected.startswith("tool")]


@pytest.mark.parametrize("path", PATHS)
async def test_an_included_routers_tool_runs_only_its_route(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    app, mcp, decoys, _ = build(path, monkeypatch)
    tenants: list[str] = []

    async def tenant(request: Request) -> None:
        tenants.append(request.scope["path"])

    router = APIRouter()

    @mcp.tool()
    @router.post("/{item_id}/archive")
    async def archive_order(item_id: str, ctx: Context) -> JSON:
        return seen(ctx, item_id)

    @app.post("/orders/{item_id}/purge/archive")
    async def purge_order(item_id: str) -> JSON:
        return decoys.hit(f"purge order {item_id}")

    app.include_router(router, prefix="/orders", dependencies=[Depends(tenant)])
    async with connect(app) as client:
        ok = await client.call("archive_order", {"item_id": "7 ?#"})
        refused = await client.call("archive_order", {"item_id": "7/purge"})
        rest = await client.http.post("/orders/7%20%3F%23/archive")
    # The scope's route is the included one (its own path), as FastAPI's router sets it.
    expected = {"value": "7 ?#", "route": "/{item_id}/archive"} | one_segment("/orders/", "7 ?#", "/archive")
    assert ok["structuredContent"] == expected
    assert refusal(refused)["detail"][0]["loc"] == ["path", "item_id"]
    assert tenants == ["/orders/7 ?#/archive"]
    # Over REST the catch-all, registered before the include, wins; the tool call still ran its route.
    assert rest.json() == {"decoy": "catch-all orders/7 ?#/archive"}
    assert decoys.ran == ["catch-all orders/7 ?#/archive"]  # the REST request's, and only that
