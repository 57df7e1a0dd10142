"""A yardstick of this design's floor: one FastAPI route that calls another route in-process.

``POST /mcp`` parses the JSON-RPC body, then sends ``POST /echo?text=...`` through the same app
(its whole stack, like a REST call) and wraps the answer as a tools/call result. No MCP rules,
no validation of the envelope, no state: the cost of two FastAPI traversals per request, which
every tools/call of fastapi-mrtr pays (an MRTR flow pays it twice). Serve it with
``uvicorn bench.nested_floor:app`` and run the rig's echo workload against it.
"""

from __future__ import annotations

import json

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.types import Message, Scope

app = FastAPI()


@app.post("/echo")
async def echo(text: str) -> str:
    return text


async def _inner(request: Request, path: str, query: bytes) -> bytes:
    """The route's answer, from an in-process request through the whole app."""
    scope: Scope = {**request.scope, "path": path, "raw_path": path.encode(), "query_string": query}
    scope["headers"] = [(b"content-type", b"application/json"), (b"content-length", b"0")]
    body = bytearray()

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body":
            body.extend(message.get("body", b""))

    await app(scope, receive, send)
    return bytes(body)


@app.post("/mcp")
async def mcp(request: Request) -> JSONResponse:
    req = await request.json()
    text = req.get("params", {}).get("arguments", {}).get("text", "")
    answer = await _inner(request, "/echo", b"text=" + text.encode())
    result = {"resultType": "complete", "content": [{"type": "text", "text": answer.decode()}], "isError": False}
    result["structuredContent"] = {"result": json.loads(answer)}
    return JSONResponse({"jsonrpc": "2.0", "id": req.get("id"), "result": result})
