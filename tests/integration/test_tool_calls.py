"""tools/call end to end: calls run through the whole FastAPI app, results and errors, SSE progress."""

# No ``from __future__ import annotations`` here: the path functions below use dependencies
# defined inside the tests, which FastAPI can only resolve from evaluated annotations.

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Annotated, Any

import pytest
from fastapi import Cookie, Depends, FastAPI, Header, HTTPException, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from fastapi_mrtr import MCP, Context
from tests.mcp_helpers import SERVER_INFO_KEY, connect, make_meta, make_server, rpc_error, sse_messages

pytestmark = pytest.mark.anyio

ServerFactory = Callable[..., tuple[FastAPI, MCP]]
BookshopFactory = Callable[..., FastAPI]
JSON = dict[str, Any]

bearer = HTTPBearer()


class Order(BaseModel):
    item: str
    quantity: int = Field(ge=1)


class OutOfStock(Exception):
    def __init__(self, item: str) -> None:
        super().__init__(item)
        self.item = item


def error_payload(result: JSON) -> JSON:
    """The ``{"status", "detail"}`` JSON of an isError result's text block."""
    assert result["isError"] is True
    assert result["resultType"] == "complete"
    [block] = result["content"]
    assert block["type"] == "text"
    payload: JSON = json.loads(block["text"])
    return payload


# --- arguments ------------------------------------------------------------------------------------


async def test_success_result_shape(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/call", {"name": "get_book", "arguments": {"book_id": 4}}, request_id="c1")
    assert response.status_code == 200
    message = response.json()
    assert message["id"] == "c1"
    result = message["result"]
    assert result["resultType"] == "complete"
    assert result["isError"] is False
    assert result["structuredContent"] == {"id": 4, "title": "Dune"}
    assert result["content"] == [
        {"type": "text", "text": json.dumps({"id": 4, "title": "Dune"}, separators=(",", ":"))}
    ]
    assert result["_meta"][SERVER_INFO_KEY]["name"] == "test-server"
    assert "ttlMs" not in result and "cacheScope" not in result


@pytest.mark.parametrize("params", [{"name": "ping_tool"}, {"name": "ping_tool", "arguments": None}])
async def test_missing_arguments_mean_empty(server_factory: ServerFactory, params: JSON) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/ping")
    async def ping_tool(greeting: str = "pong") -> dict[str, str]:
        return {"greeting": greeting}

    async with connect(app) as client:
        result = await client.result("tools/call", params)
    assert result["isError"] is False
    assert result["structuredContent"] == {"greeting": "pong"}


async def test_unknown_tool(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/call", {"name": "x", "arguments": {}}, request_id=41)
    error = rpc_error(response, 400, -32602, 41)
    assert error["message"] == "Unknown tool: x"


@pytest.mark.parametrize("arguments", [[1, 2], "book_id=1", 5, True])
async def test_arguments_not_an_object(bookshop: BookshopFactory, arguments: Any) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/call", {"name": "get_book", "arguments": arguments}, request_id=42)
    rpc_error(response, 400, -32602, 42)


@pytest.mark.parametrize("params", [{}, {"name": 3}, {"name": None}])
async def test_missing_tool_name(bookshop: BookshopFactory, params: JSON) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/call", params, request_id=43, name="get_book")
    rpc_error(response, 400, -32602, 43)


async def test_validation_failure_is_a_tool_error(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        wrong_type = await client.call("get_book", {"book_id": "abc"})
        missing = await client.call("get_book", {})
    payload = error_payload(wrong_type)
    assert payload["status"] == 422
    [problem] = payload["detail"]
    assert problem["loc"] == ["path", "book_id"]
    assert problem["type"] == "int_parsing"
    missing_payload = error_payload(missing)
    assert missing_payload["status"] == 422
    assert [p["loc"] for p in missing_payload["detail"]] == [["path", "book_id"]]
    assert missing_payload["detail"][0]["type"] == "missing"


async def test_body_validation_failure_lists_fields(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.post("/orders")
    async def place_order(order: Order) -> Order:
        return order

    async with connect(app) as client:
        bad = await client.call("place_order", {"item": "pen", "quantity": 0})
        good = await client.call("place_order", {"item": "pen", "quantity": 2})
    payload = error_payload(bad)
    assert payload["status"] == 422
    assert [p["loc"] for p in payload["detail"]] == [["body", "quantity"]]
    assert good["structuredContent"] == {"item": "pen", "quantity": 2}


async def test_a_list_or_object_for_a_url_value_is_refused_below_user_middleware(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()
    seen: list[str] = []

    @mcp.tool()
    @app.get("/shout/{word}")
    async def shout(word: str, times: int = 1) -> str:
        return word.upper() * times

    @app.middleware("http")  # the call goes through the app, not into the route
    async def record(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        seen.append(request.url.path)
        return await call_next(request)

    async with connect(app) as client:
        listed = await client.call("shout", {"word": ["a", "b"]})
        nested = await client.call("shout", {"word": "a", "times": {"n": 2}})
        fine = await client.call("shout", {"word": "a", "times": "2"})
    assert [p["loc"] for p in error_payload(listed)["detail"]] == [["path", "word"]]
    assert error_payload(listed)["status"] == 422
    assert [(p["loc"], p["type"]) for p in error_payload(nested)["detail"]] == [(["query", "times"], "int_type")]
    assert fine["structuredContent"] == {"result": "AA"}
    assert [path for path in seen if path != "/mcp"] == ["/shout/a"]  # the refused calls never reached the route


async def test_http_exception_is_a_tool_error(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/things/{thing_id}")
    async def get_thing(thing_id: int) -> dict[str, int]:
        raise HTTPException(404, "x")

    async with connect(app) as client:
        response = await client.post("tools/call", {"name": "get_thing", "arguments": {"thing_id": 1}}, request_id=44)
    assert response.status_code == 200
    message = response.json()
    assert message["id"] == 44
    assert error_payload(message["result"]) == {"status": 404, "detail": "x"}
    assert "structuredContent" not in message["result"]


async def test_unexpected_exception_is_a_safe_tool_error(
    server_factory: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/boom")
    async def explode() -> int:
        raise RuntimeError("secret database password is hunter2")

    caplog.set_level(logging.ERROR, logger="fastapi_mrtr")
    async with connect(app) as client:
        response = await client.post("tools/call", {"name": "explode"}, request_id=45)
    assert response.status_code == 200
    message = response.json()
    assert message["id"] == 45
    result = message["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "explode" in text
    assert "hunter2" not in text
    assert "Traceback" not in text
    assert "RuntimeError" not in text
    logged = [r for r in caplog.records if r.name == "fastapi_mrtr" and r.exc_info]
    assert logged, caplog.text
    assert "hunter2" in caplog.text
    assert "Traceback" in caplog.text


async def test_plain_text_response_is_a_text_block_and_wrapped_structured_content(
    server_factory: ServerFactory,
) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/plain", response_class=PlainTextResponse)
    async def plain() -> str:
        return "just text"

    async with connect(app) as client:
        tool = await client.tool("plain")
        result = await client.call("plain")
    assert tool["outputSchema"]["properties"]["result"]["type"] == "string"
    assert result["isError"] is False
    assert result["content"] == [{"type": "text", "text": "just text"}]
    assert result["structuredContent"] == {"result": "just text"}


async def test_a_response_that_breaks_the_output_schema_is_a_logged_tool_error(
    server_factory: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/book", response_model=Order)
    async def book() -> Response:
        return PlainTextResponse("not an order")

    async with connect(app) as client:
        result = await client.call("book")
    assert result["isError"] is True
    assert "structuredContent" not in result
    assert "text/plain" in result["content"][0]["text"]
    [record] = [r for r in caplog.records if r.name == "fastapi_mrtr"]
    assert "'book'" in record.getMessage() and "response_model=None" in record.getMessage()


# --- FastAPI machinery ----------------------------------------------------------------------------


async def test_yield_dependency_cleanup_runs(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()
    events: list[str] = []

    async def session() -> AsyncIterator[str]:
        events.append("open")
        try:
            yield "db"
        finally:
            events.append("close")

    @mcp.tool()
    @app.get("/with-session")
    async def with_session(db: Annotated[str, Depends(session)]) -> dict[str, str]:
        events.append(f"use {db}")
        return {"db": db}

    async with connect(app) as client:
        result = await client.call("with_session")
    assert result["structuredContent"] == {"db": "db"}
    assert events == ["open", "use db", "close"]


async def test_yield_dependency_cleanup_runs_on_error(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()
    events: list[str] = []

    def resource() -> Iterator[None]:
        events.append("acquire")
        try:
            yield None
        except HTTPException as exc:
            events.append(f"saw {exc.status_code}")
            raise
        finally:
            events.append("release")

    @mcp.tool()
    @app.get("/fails")
    async def fails(_: Annotated[None, Depends(resource)]) -> int:
        raise HTTPException(409, "busy")

    async with connect(app) as client:
        result = await client.call("fails")
    assert error_payload(result) == {"status": 409, "detail": "busy"}
    assert events == ["acquire", "saw 409", "release"]


async def test_dependency_overrides_apply(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    def real_clock() -> str:
        return "real"

    @mcp.tool()
    @app.get("/now")
    async def now(clock: Annotated[str, Depends(real_clock)]) -> dict[str, str]:
        return {"clock": clock}

    app.dependency_overrides[real_clock] = lambda: "fake"
    async with connect(app) as client:
        result = await client.call("now")
    assert result["structuredContent"] == {"clock": "fake"}


async def test_app_middlewares_see_the_tool_call(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()
    seen_http: list[tuple[str, str]] = []
    seen_asgi: list[tuple[str, str]] = []

    @mcp.tool()
    @app.post("/items/{item_id}/touch")
    async def touch(item_id: int) -> dict[str, int]:
        return {"touched": item_id}

    @app.middleware("http")
    async def record_http(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        seen_http.append((request.method, request.url.path))
        response = await call_next(request)
        response.headers["x-seen"] = "yes"
        return response

    class RecordAsgi:
        def __init__(self, inner: ASGIApp) -> None:
            self.inner = inner

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                seen_asgi.append((scope["method"], scope["path"]))
            await self.inner(scope, receive, send)

    app.add_middleware(RecordAsgi)
    async with connect(app) as client:
        result = await client.call("touch", {"item_id": 7})
    assert result["structuredContent"] == {"touched": 7}
    assert ("POST", "/items/7/touch") in seen_http
    assert ("POST", "/items/7/touch") in seen_asgi


async def test_custom_exception_handler_response_is_the_error(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @app.exception_handler(OutOfStock)
    async def out_of_stock(request: Request, exc: OutOfStock) -> JSONResponse:
        return JSONResponse(status_code=409, content={"detail": f"{exc.item} is out of stock", "retry": False})

    @app.exception_handler(KeyError)
    async def key_error(request: Request, exc: KeyError) -> JSONResponse:
        return JSONResponse(status_code=400, content={"problem": "missing key"})

    @mcp.tool()
    @app.post("/buy")
    async def buy(item: str) -> dict[str, str]:
        if item == "key":
            raise KeyError(item)
        raise OutOfStock(item)

    async with connect(app) as client:
        stock = await client.call("buy", {"item": "pen"})
        key = await client.call("buy", {"item": "key"})
    assert error_payload(stock) == {"status": 409, "detail": "pen is out of stock"}
    assert error_payload(key) == {"status": 400, "detail": {"problem": "missing key"}}


# --- caller headers ---------------------------------------------------------------------------------


def _header_echo(**options: Any) -> FastAPI:
    app, mcp = make_server(**options)

    @mcp.tool()
    @app.get("/whoami")
    async def whoami(
        authorization: Annotated[str | None, Header()] = None,
        x_api_key: Annotated[str | None, Header()] = None,
        session: Annotated[str | None, Cookie()] = None,
    ) -> dict[str, str | None]:
        return {"authorization": authorization, "x_api_key": x_api_key, "session": session}

    return app


async def test_authorization_and_cookie_reach_the_endpoint() -> None:
    headers = {"authorization": "Bearer tok-123", "cookie": "session=s-9; other=1", "x-api-key": "k-1"}
    async with connect(_header_echo()) as client:
        result = await client.call("whoami", {}, headers=headers)
        bare = await client.call("whoami", {})
    assert result["structuredContent"] == {"authorization": "Bearer tok-123", "x_api_key": None, "session": "s-9"}
    assert bare["structuredContent"] == {"authorization": None, "x_api_key": None, "session": None}


async def test_forward_headers_option() -> None:
    headers = {"authorization": "Bearer tok-123", "cookie": "session=s-9", "x-api-key": "k-1"}
    async with connect(_header_echo(forward_headers=("X-Api-Key",))) as client:
        result = await client.call("whoami", {}, headers=headers)
    assert result["structuredContent"] == {"authorization": None, "x_api_key": "k-1", "session": None}


async def test_mcp_headers_are_not_forwarded(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/headers")
    async def header_names(request: Request) -> list[str]:
        return sorted(request.headers.keys())

    async with connect(app) as client:
        result = await client.call("header_names", {}, headers={"x-secret": "s"})
    names = result["structuredContent"]["result"]
    assert "x-secret" not in names
    assert not any(name.startswith("mcp-") for name in names)


async def test_security_dependency(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool()
    @app.get("/me")
    async def me(credentials: Annotated[HTTPAuthorizationCredentials, Depends(bearer)]) -> dict[str, str]:
        return {"token": credentials.credentials}

    async with connect(app) as client:
        refused = await client.call("me")
        allowed = await client.call("me", headers={"authorization": "Bearer good-token"})
    payload = error_payload(refused)
    assert payload["status"] in (401, 403)
    assert payload["detail"] == "Not authenticated"
    assert allowed["isError"] is False
    assert allowed["structuredContent"] == {"token": "good-token"}


# --- SSE progress -----------------------------------------------------------------------------------


def _progress_app() -> FastAPI:
    app, mcp = make_server()

    @mcp.tool()
    @app.post("/jobs")
    async def run_job(steps: int, ctx: Context) -> dict[str, int]:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, total=steps, message=f"step {step}")
        return {"done": steps}

    return app


@pytest.mark.parametrize("token", ["job-1", 99])
async def test_progress_over_sse(token: str | int) -> None:
    async with connect(_progress_app()) as client:
        response = await client.post(
            "tools/call",
            {"name": "run_job", "arguments": {"steps": 3}},
            request_id="p-1",
            meta=make_meta(progressToken=token),
        )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-accel-buffering"] == "no"
    messages = sse_messages(response.text)
    progress = [m for m in messages if m.get("method") == "notifications/progress"]
    assert len(progress) >= 3
    for message in progress:
        assert "id" not in message
        assert message["params"]["progressToken"] == token
        assert message["params"]["total"] == 3
    values = [m["params"]["progress"] for m in progress]
    assert values == sorted(values)
    assert values[-1] == 3
    final = messages[-1]
    assert final["id"] == "p-1"
    assert final["result"]["structuredContent"] == {"done": 3}
    assert final["result"]["_meta"][SERVER_INFO_KEY]["name"] == "test-server"
    assert messages.index(final) == len(messages) - 1
    assert all("result" not in m for m in messages[:-1])


async def test_progress_without_token_is_plain_json() -> None:
    async with connect(_progress_app()) as client:
        response = await client.post("tools/call", {"name": "run_job", "arguments": {"steps": 3}}, request_id="p-2")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["structuredContent"] == {"done": 3}


async def test_progress_without_sse_accept_is_plain_json() -> None:
    async with connect(_progress_app()) as client:
        response = await client.post(
            "tools/call",
            {"name": "run_job", "arguments": {"steps": 3}},
            request_id="p-3",
            meta=make_meta(progressToken="t"),
            headers={"accept": "application/json"},
        )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["id"] == "p-3"
    assert response.json()["result"]["structuredContent"] == {"done": 3}


async def test_error_with_progress_token_is_plain_json(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post(
            "tools/call", {"name": "nope", "arguments": {}}, request_id="p-4", meta=make_meta(progressToken="t")
        )
    rpc_error(response, 400, -32602, "p-4")
