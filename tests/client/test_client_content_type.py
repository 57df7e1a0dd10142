"""A reply whose Content-Type header comes twice (issue 34): the same type is read, two types refused.

A C++ MCP server sends the header twice; httpx joins the values (``text/event-stream,
text/event-stream``) and every reply failed. The peer here is a real uvicorn server on loopback
whose raw ASGI answer carries the headers exactly as given.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from fastapi_mrtr.client import ClientOptions, InvalidServerResponseError, MrtrClient
from tests.support import read_asgi_body, running_server

pytestmark = pytest.mark.anyio

MODERN = ClientOptions(mode="2026-07-28")
TOOLS = {"resultType": "complete", "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}


def peer(content_types: list[bytes], sse: bool) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        request = json.loads(await read_asgi_body(receive))
        reply = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": TOOLS}).encode()
        payload = b"event: message\ndata: " + reply + b"\n\n" if sse else reply
        headers = [(b"content-type", value) for value in content_types]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    return app


@pytest.fixture
def serve() -> Iterator[Any]:
    stack: list[Any] = []

    def start(content_types: list[bytes], sse: bool) -> str:
        context = running_server(peer(content_types, sse))
        stack.append(context)
        return f"{context.__enter__()}/mcp"

    yield start
    for context in reversed(stack):
        context.__exit__(None, None, None)


@pytest.mark.parametrize(
    ("content_types", "sse"),
    [
        ([b"text/event-stream", b"text/event-stream"], True),
        ([b"application/json", b"application/json; charset=utf-8"], False),
        ([b"text/event-stream, text/event-stream"], True),
    ],
    ids=["sse-twice", "json-twice-with-charset", "sse-joined"],
)
async def test_an_identical_repeated_content_type_is_read(serve: Any, content_types: list[bytes], sse: bool) -> None:
    async with MrtrClient(serve(content_types, sse), options=MODERN) as client:
        tools = await client.list_tools()
    assert [tool.name for tool in tools.tools] == ["echo"]


async def test_conflicting_content_types_are_refused_clearly(serve: Any) -> None:
    url = serve([b"application/json", b"text/event-stream"], False)
    async with MrtrClient(url, options=MODERN) as client:
        with pytest.raises(InvalidServerResponseError, match="conflicting Content-Type"):
            await client.list_tools()
