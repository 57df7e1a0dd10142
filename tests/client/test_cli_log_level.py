"""``MrtrClient.set_log_level``, which the terminal client's ``--log-level`` uses, on the wire.

On 2026-07-28 the level travels in each request's ``_meta`` (``io.modelcontextprotocol/logLevel``:
without it the server must send no ``notifications/message``); in a 2025-era session it is sent
once, as ``logging/setLevel``. A real server on uvicorn, the requests recorded with httpx hooks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

from fastapi_mrtr import MCP, Context, ServerOptions
from fastapi_mrtr.client import ClientOptions, MrtrClient
from fastapi_mrtr.client.options import ClientMode
from fastapi_mrtr.wire.protocol import META_LOG_LEVEL, JSONRPCNotification
from tests.client.client_helpers import Wire

pytestmark = pytest.mark.anyio


def logging_app() -> FastAPI:
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="logs", version="1"))

    @mcp.tool()
    @app.post("/work", response_class=PlainTextResponse)
    async def work(ctx: Context) -> str:
        for level in ("debug", "info", "warning", "error"):
            await ctx.log(level, f"at {level}")
        return "worked"

    app.mount("/mcp", mcp)
    return app


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    from tests.support import running_server

    with running_server(logging_app()) as base:
        yield f"{base}/mcp"


class PostWire(Wire):
    """The wire recorder, for POSTs only: a 2025-era session also opens a GET stream and DELETEs."""

    async def on_request(self, request: httpx.Request) -> None:
        if request.method == "POST":
            await super().on_request(request)

    async def on_response(self, response: httpx.Response) -> None:
        if response.request.method == "POST":
            await super().on_response(response)


@pytest.fixture
def wire() -> PostWire:
    return PostWire()


class Logged:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, note: JSONRPCNotification) -> None:
        if note.method == "notifications/message" and note.params is not None:
            self.lines.append(f"{note.params['level']}: {note.params['data']}")


@asynccontextmanager
async def logging_client(url: str, mode: ClientMode, wire: Wire, logged: Logged) -> AsyncIterator[MrtrClient]:
    async with httpx.AsyncClient(event_hooks=wire.hooks()) as http:
        options = ClientOptions(mode=mode)
        async with MrtrClient(url, http_client=http, options=options, on_notification=logged) as client:
            yield client


async def call_work(client: MrtrClient, **kwargs: Any) -> None:
    result = await client.call_tool("work", {}, **kwargs)
    assert result.content[0].text == "worked"  # type: ignore[union-attr]


async def test_2026_the_level_rides_in_each_requests_meta(url: str, wire: Wire) -> None:
    logged = Logged()
    async with logging_client(url, "2026-07-28", wire, logged) as client:
        await call_work(client)
        assert logged.lines == []  # no level asked: the server sends none
        assert await client.set_log_level("warning") is True
        await call_work(client)
        assert logged.lines == ["warning: at warning", "error: at error"]
        logged.lines.clear()
        await call_work(client, meta={META_LOG_LEVEL: "info"})  # a call's own meta wins
        assert logged.lines == ["info: at info", "warning: at warning", "error: at error"]
        assert await client.set_log_level(None) is True
        await call_work(client)
    levels = [call.params["_meta"].get(META_LOG_LEVEL) for call in wire.calls("tools/call")]
    assert levels == [None, "warning", "info", None]
    assert wire.calls("logging/setLevel") == []  # a method the 2026-07-28 wire removed


async def test_2025_session_sets_the_level_once(url: str, wire: Wire) -> None:
    logged = Logged()
    async with logging_client(url, "legacy", wire, logged) as client:
        assert await client.set_log_level("warning") is True
        await call_work(client)
        await call_work(client)
        assert await client.set_log_level(None) is False  # the 2025 era has no "none"
    assert [call.params["level"] for call in wire.calls("logging/setLevel")] == ["warning"]
    assert logged.lines == ["warning: at warning", "error: at error"] * 2
    assert all(META_LOG_LEVEL not in call.params.get("_meta", {}) for call in wire.calls("tools/call"))


async def test_an_unknown_level_is_refused_before_anything_is_sent(url: str, wire: Wire) -> None:
    async with logging_client(url, "auto", wire, Logged()) as client:
        with pytest.raises(ValueError, match="level must be one of debug, info"):
            await client.set_log_level("loud")
    assert wire.exchanges == []
