"""Tool calls that enter their route directly still get everything the skipped layers give.

With nothing of the user's between the plugin's middleware and the router, an in-process tool call
goes straight into its route's ASGI app (``RouteEntry``). These tests pin what the skipped layers
(exception middleware, exit-stack middleware, router) did and the route must still see: exception
handlers, ``yield`` dependencies closed after the call, the router and route in the scope, an
included router's prefix and dependencies, and a refusal (never the router) for a scope the
route does not match.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import Match
from starlette.types import Message, Receive, Scope, Send

from fastapi_mrtr.integration.route_entry import RouteEntry
from fastapi_mrtr.integration.tool_call import ToolRouteRefusedError
from tests.mcp_helpers import connect, make_server

pytestmark = pytest.mark.anyio


async def test_a_plain_app_takes_the_direct_entry_and_the_route_sees_router_and_route() -> None:
    app, mcp = make_server()

    @mcp.tool()
    @app.get("/where")
    async def where(request: Request) -> dict[str, object]:
        route = request.scope["route"]
        return {"router": request.scope["router"] is app.router, "route": route.path, "name": route.name}

    async with connect(app) as client:
        result = await client.call("where", {})
    assert mcp.call_runner.route_entry is not None
    assert result["structuredContent"] == {"router": True, "route": "/where", "name": "where"}


async def test_custom_exception_handlers_still_turn_errors_into_responses() -> None:
    app, mcp = make_server()

    class OutOfStock(Exception):
        pass

    @app.exception_handler(OutOfStock)
    async def out_of_stock(request: Request, exc: OutOfStock) -> JSONResponse:
        return JSONResponse({"detail": "out of stock"}, status_code=409)

    @mcp.tool()
    @app.post("/buy")
    async def buy(item: str) -> str:
        if item == "gold":
            raise OutOfStock
        if item == "lead":
            raise HTTPException(422, "not sold here")
        return f"bought {item}"

    async with connect(app) as client:
        bought = await client.call("buy", {"item": "tin"})
        stock = await client.call("buy", {"item": "gold"})
        refused = await client.call("buy", {"item": "lead"})
    assert mcp.call_runner.route_entry is not None
    assert bought["structuredContent"] == {"result": "bought tin"}
    assert stock["isError"] is True and "out of stock" in stock["content"][0]["text"]
    assert refused["isError"] is True and "not sold here" in refused["content"][0]["text"]


async def test_yield_dependencies_are_closed_after_each_call() -> None:
    app, mcp = make_server()
    events: list[str] = []

    async def session() -> AsyncIterator[str]:
        events.append("open")
        yield "db"
        events.append("close")

    @mcp.tool()
    @app.get("/query")
    async def query(db: str = Depends(session)) -> str:
        events.append(f"use {db}")
        return db

    async with connect(app) as client:
        first = await client.call("query", {})
        second = await client.call("query", {})
    assert first["structuredContent"] == second["structuredContent"] == {"result": "db"}
    assert events == ["open", "use db", "close", "open", "use db", "close"]


async def test_an_included_routers_prefix_and_dependencies_apply() -> None:
    app, mcp = make_server()
    seen: list[str] = []

    async def tenant(request: Request) -> None:
        seen.append(request.url.path)

    router = APIRouter()

    @mcp.tool()
    @router.get("/{order_id}")
    async def get_order(order_id: int) -> dict[str, int]:
        return {"order": order_id}

    app.include_router(router, prefix="/api/orders", dependencies=[Depends(tenant)])
    async with connect(app) as client:
        result = await client.call("get_order", {"order_id": 7})
    assert result["structuredContent"] == {"order": 7}
    assert seen == ["/api/orders/7"]


async def test_the_tools_own_route_runs_even_when_an_earlier_route_would_shadow_it() -> None:
    app, mcp = make_server()

    @app.get("/items/{name}")
    async def any_item(name: str) -> str:
        return "the shadowing route"

    @mcp.tool()
    @app.get("/items/special")
    async def special() -> str:
        return "the tool"

    async with connect(app) as client:
        result = await client.call("special", {})
    assert result["structuredContent"] == {"result": "the tool"}


# --- when the direct entry is not taken -------------------------------------------------------


async def test_a_route_that_does_not_match_the_scope_is_refused_never_handed_to_the_router() -> None:
    class Unmatched:
        path = "/x/{name}"

        async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
            raise AssertionError("the route must not run")

        def matches(self, scope: Scope) -> tuple[Match, Scope]:
            return Match.NONE, {}

    entry = RouteEntry(({}, {}), FastAPI().router)

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        raise AssertionError("nothing may answer")

    with pytest.raises(ToolRouteRefusedError, match=re.escape("does not match the tool's route /x/{name}")):
        await entry.call(Unmatched(), {"type": "http", "method": "GET", "path": "/y"}, receive, send)


async def test_only_the_known_stack_below_the_plugin_gets_a_direct_entry() -> None:
    async def other(scope: Scope, receive: Receive, send: Send) -> None:
        pass

    app, mcp = make_server()
    async with connect(app) as client:  # the app's stack is built on its first request
        await client.list_tools()
    assert isinstance(mcp.call_runner.tool_entry, ExceptionMiddleware)
    assert RouteEntry.below(mcp.call_runner.tool_entry) is not None
    assert RouteEntry.below(other) is None
    assert RouteEntry.below(ExceptionMiddleware(other)) is None  # no exit stack and router below
