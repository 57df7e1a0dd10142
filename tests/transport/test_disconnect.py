"""A client that leaves early ends its request quietly, on real uvicorn, with user middleware.

``@app.middleware("http")`` (Starlette's ``BaseHTTPMiddleware``) raises "No response returned."
when the app below it returns without answering, which uvicorn logs as "Exception in ASGI
application". These tests cut requests short over a raw socket (headers with a Content-Length,
then half the body, then close; or a streamed call closed while its tool runs), then check
uvicorn's error log, what reached the server's top, and that the server still serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request, Response
from pydantic import BaseModel
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tests.mcp_helpers import make_server
from tests.support import META, rpc_body, rpc_headers, running_server

ABORTS = 5


class Item(BaseModel):
    name: str


@dataclass
class Outcomes:
    """What each request that reached the server's top ended with: its status and any exception."""

    statuses: list[int | None] = field(default_factory=list)
    escaped: list[BaseException] = field(default_factory=list)

    def recording(self, app: ASGIApp) -> ASGIApp:
        async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            status: int | None = None

            async def watching_send(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                await send(message)

            try:
                await app(scope, receive, watching_send)
            except BaseException as exc:
                self.escaped.append(exc)
                raise
            finally:
                self.statuses.append(status)

        return recorded

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 20
        while len(self.statuses) < count:
            assert time.monotonic() < deadline, f"only {len(self.statuses)} of {count} requests ended"
            time.sleep(0.02)


class ErrorLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def problems(self) -> list[str]:
        return [
            record.getMessage()
            for record in self.records
            if record.levelno >= logging.ERROR or record.exc_info or "ASGI" in record.getMessage()
        ]


@contextlib.contextmanager
def serving(app: FastAPI) -> Iterator[tuple[str, Outcomes, ErrorLog]]:
    """``app`` on uvicorn (127.0.0.1) behind an outcome recorder, with uvicorn's and our error logs captured."""
    outcomes, log = Outcomes(), ErrorLog()
    with running_server(outcomes.recording(app)) as base:
        # uvicorn configures its loggers when the server is built, so the handler goes on after.
        loggers = [logging.getLogger(name) for name in ("uvicorn.error", "fastapi_mrtr")]
        for logger in loggers:
            logger.addHandler(log)
        try:
            yield base, outcomes, log
        finally:
            for logger in loggers:
                logger.removeHandler(log)


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


def send_half_and_close(base: str, path: str, headers: dict[str, str], body: bytes) -> None:
    """Send the head with the full Content-Length, then half the body, then close the socket."""
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    head.append(f"Content-Length: {len(body)}")
    with socket.create_connection(("127.0.0.1", _port(base))) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body[: len(body) // 2])


def start_streamed_call_and_close(base: str, tool: str, started: Callable[[], bool]) -> None:
    """Send a whole streamed tools/call (progress token, SSE accepted), close once its tool runs."""
    body = json.dumps(rpc_body("tools/call", {"name": tool}, meta={**META, "progressToken": "p"})).encode()
    head = ["POST /mcp HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    head += [f"{name}: {value}" for name, value in rpc_headers("tools/call", tool).items()]
    head.append(f"Content-Length: {len(body)}")
    with socket.create_connection(("127.0.0.1", _port(base))) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        deadline = time.monotonic() + 20
        while not started():
            assert time.monotonic() < deadline, "the tool never started"
            time.sleep(0.01)


def tools_call_body(name: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps(rpc_body("tools/call", {"name": name, "arguments": arguments})).encode()


def post_mcp(base: str, body: bytes, tool: str) -> httpx.Response:
    headers = {**rpc_headers("tools/call", tool), "Content-Type": "application/json"}
    return httpx.post(f"{base}/mcp", content=body, headers=headers)


@dataclass
class Shop:
    app: FastAPI
    created: list[str] = field(default_factory=list)
    slow_calls: list[str] = field(default_factory=list)


def app_with_user_middleware() -> Shop:
    app, mcp = make_server()
    shop = Shop(app)

    @app.middleware("http")
    async def passthrough(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        return await call_next(request)

    @mcp.tool()
    @app.post("/items")
    async def create_item(item: Item) -> dict[str, str]:
        shop.created.append(item.name)
        return {"created": item.name}

    @mcp.tool()
    @app.post("/slow")
    async def slow() -> dict[str, str]:
        shop.slow_calls.append("started")
        await asyncio.Event().wait()  # only the client's leaving ends this call
        return {"never": "reached"}

    return shop


def assert_quiet(outcomes: Outcomes, log: ErrorLog) -> None:
    assert log.problems() == []
    assert outcomes.escaped == []
    assert 500 not in outcomes.statuses


def test_a_body_cut_short_on_mcp_ends_quietly_and_runs_nothing() -> None:
    shop = app_with_user_middleware()
    with serving(shop.app) as (base, outcomes, log):
        body = tools_call_body("create_item", {"name": "lost"})
        for _ in range(ABORTS):
            send_half_and_close(base, "/mcp", rpc_headers("tools/call", "create_item"), body)
        outcomes.wait_for(ABORTS)
        response = post_mcp(base, body, "create_item")
        assert response.status_code == 200
        assert response.json()["result"]["structuredContent"] == {"created": "lost"}
        assert_quiet(outcomes, log)
    assert shop.created == ["lost"]  # only the complete request ran the tool
    assert outcomes.statuses[:ABORTS] == [400] * ABORTS


def test_a_body_cut_short_on_a_tool_rest_route_ends_quietly() -> None:
    shop = app_with_user_middleware()
    with serving(shop.app) as (base, outcomes, log):
        for _ in range(ABORTS):
            send_half_and_close(base, "/items", {}, b'{"name": "lost"}')
        outcomes.wait_for(ABORTS)
        response = httpx.post(f"{base}/items", json={"name": "kept"})
        assert response.json() == {"created": "kept"}
        assert_quiet(outcomes, log)
    assert shop.created == ["kept"]


def test_a_streamed_call_closed_while_its_tool_runs_ends_quietly() -> None:
    shop = app_with_user_middleware()
    with serving(shop.app) as (base, outcomes, log):
        for aborted in range(1, ABORTS + 1):
            start_streamed_call_and_close(base, "slow", lambda n=aborted: len(shop.slow_calls) >= n)  # type: ignore[misc]
        outcomes.wait_for(ABORTS)
        body = tools_call_body("create_item", {"name": "after"})
        response = post_mcp(base, body, "create_item")
        assert response.json()["result"]["structuredContent"] == {"created": "after"}
        assert_quiet(outcomes, log)


@pytest.fixture
def example_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FastAPI:
    monkeypatch.setenv("BOOKSHOP_DB", str(tmp_path / "shop.db"))
    from example_app.main import app

    return app


def test_the_example_app_ends_cut_requests_quietly(example_app: FastAPI) -> None:
    with serving(example_app) as (base, outcomes, log):
        mcp_body = tools_call_body("get_book", {"book_id": 1})
        for _ in range(ABORTS):
            send_half_and_close(base, "/mcp", rpc_headers("tools/call", "get_book"), mcp_body)
            send_half_and_close(base, "/orders", {}, b'{"book_id": 1, "quantity": 1}')
        outcomes.wait_for(2 * ABORTS)
        response = post_mcp(base, mcp_body, "get_book")
        assert response.status_code == 200
        assert response.json()["result"]["resultType"] == "complete"
        assert_quiet(outcomes, log)
