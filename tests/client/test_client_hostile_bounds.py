"""A hostile server cannot grow the client without bound (issue 27 item 10).

Two ways it tried: an SSE line of any size (held whole in memory), and one task per server
request with no limit (20,000 requests: +410 MiB). Each peer here is a raw ASGI app on a real
loopback uvicorn, so the bytes are exactly the hostile ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from fastapi_mrtr.client import ClientOptions, InvalidServerResponseError, MrtrClient
from fastapi_mrtr.client._legacy.server_requests import MAX_OPEN_SERVER_REQUESTS
from fastapi_mrtr.client._transport import MAX_SSE_LINE_CHARS
from tests.support import read_asgi_body, running_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def read_body(receive: Any) -> dict[str, Any]:
    body = await read_asgi_body(receive)
    return json.loads(body) if body else {}


def huge_line_peer() -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await read_body(receive)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        chunk = b"x" * (1024 * 1024)
        await send({"type": "http.response.body", "body": b"data: ", "more_body": True})
        for _ in range(MAX_SSE_LINE_CHARS // len(chunk) + 2):  # one line, never ended
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"\n\n"})

    return app


def flooding_legacy_peer(requests: int) -> Any:
    """A 2025-era server whose tools/call stream asks ``requests`` questions at once, then waits."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            await send({"type": "http.response.start", "status": 405, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        message = await read_body(receive)
        method = message.get("method")
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "flood", "version": "1"},
            }
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"s1")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        if method != "tools/call":
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for n in range(requests):
            ask = {
                "jsonrpc": "2.0",
                "id": f"q{n}",
                "method": "elicitation/create",
                "params": {"message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}},
            }
            await send(
                {
                    "type": "http.response.body",
                    "body": b"data: " + json.dumps(ask).encode() + b"\n\n",
                    "more_body": True,
                }
            )
        await anyio.sleep(30)  # never answers: the client must stop by itself
        await send({"type": "http.response.body", "body": b""})

    return app


@pytest.fixture
def serve() -> Iterator[Any]:
    contexts: list[Any] = []

    def start(app: Any) -> str:
        context = running_server(app)
        contexts.append(context)
        return f"{context.__enter__()}/mcp"

    yield start
    for context in reversed(contexts):
        context.__exit__(None, None, None)


async def test_an_sse_line_past_the_bound_is_a_clear_error(serve: Any) -> None:
    async with MrtrClient(serve(huge_line_peer()), options=ClientOptions(mode="2026-07-28")) as client:
        with pytest.raises(InvalidServerResponseError, match="longer than"):
            await client.list_tools()


async def test_a_flood_of_server_requests_ends_the_call_with_a_clear_error(serve: Any) -> None:
    url = serve(flooding_legacy_peer(MAX_OPEN_SERVER_REQUESTS + 50))
    started = 0

    async def person(params: Any) -> Any:
        nonlocal started
        started += 1
        await anyio.sleep(60)  # a person who never answers

    async with MrtrClient(url, options=ClientOptions(mode="legacy")) as client:
        client.set_elicitation_handler(person)
        with anyio.fail_after(20), pytest.raises(InvalidServerResponseError, match="requests at once"):
            await client.call_tool("anything", {})
    assert started <= MAX_OPEN_SERVER_REQUESTS
