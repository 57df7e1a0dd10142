"""A hostile MCP peer on real uvicorn: a raw ASGI app, one scenario per path (``/<scenario>``).

It breaks the wire in ways a framework would not let it: a connection dropped in the middle of an
SSE stream, malformed tool and elicitation schemas. Each ``tools/call`` without ``requestState``
asks its question; the retry completes with the text ``done``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from tests.support import read_asgi_body

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

DONE = {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}

# Tool input schemas for tools/list, per scenario.
TOOL_SCHEMAS: dict[str, Any] = {
    "tool-properties-list": {"type": "object", "properties": [1]},
    "tool-required-int": {"type": "object", "properties": {}, "required": 5},
}

# The requestedSchema of the one elicitation a tools/call asks, per scenario.
FORM_SCHEMAS: dict[str, Any] = {
    "form-properties-list": {"type": "object", "properties": [["a"]]},
    "form-required-int": {"type": "object", "properties": {"a": {"type": "string"}}, "required": 5},
}


def _reply(body: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": body.get("id"), "result": result}).encode()


def _result(scenario: str, body: Any) -> Any:
    params = body.get("params") or {}
    if body.get("method") == "server/discover":  # hostile, but a 2026-07-28 peer: the era probe passes
        return {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
    if body.get("method") == "tools/list":
        schema = TOOL_SCHEMAS.get(scenario, {"type": "object"})
        return {
            "resultType": "complete",
            "tools": [{"name": "t", "inputSchema": schema}],
            "ttlMs": 0,
            "cacheScope": "private",
        }
    if scenario in FORM_SCHEMAS and "requestState" not in params:
        ask = {"method": "elicitation/create", "params": {"message": "m", "requestedSchema": FORM_SCHEMAS[scenario]}}
        return {"resultType": "input_required", "inputRequests": {"q": ask}, "requestState": "s"}
    return DONE


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    raw = await read_asgi_body(receive)
    scenario = scope["path"].strip("/")
    body = json.loads(raw)
    if scenario == "sse-cut":
        # Half an event, then the app returns without finishing the body: uvicorn closes the
        # connection, and the client's chunked read of the stream breaks off.
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b'data: {"jsonrpc":"2.0",', "more_body": True})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": _reply(body, _result(scenario, body))})
