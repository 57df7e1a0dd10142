"""A scripted 2026-07-28 server for the playground: the page, and three JSON-RPC methods by hand.

It stands for a server that says why it refused an answer: the question asked again carries
``params._meta["fastapi-mrtr/refused-answer"] = {"reason": ...}``. Nothing else of fastapi-mrtr
runs here but the page itself, so what the page does with that ``_meta`` is tested on its own.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from fastapi_mrtr.playground import Playground

REFUSED = "fastapi-mrtr/refused-answer"
# Markup in the reason: the page must show it as text.
REASON = "<b>Amount</b> must be greater than 0"
QUESTION = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "How much should be approved?",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "amount": {"type": "integer", "title": "Amount"},
                "note": {"type": "string", "title": "Note"},
            },
            "required": ["amount"],
        },
    },
}
TOOL = {"name": "approve", "description": "Approves an expense", "inputSchema": {"type": "object", "properties": {}}}


class ScriptedServer:
    """Serves ``/mcp/playground`` and answers ``POST /mcp``; ``calls`` keeps each tools/call's params."""

    def __init__(self) -> None:
        self.page = Playground()
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["method"] in ("GET", "HEAD") and scope["path"].startswith("/mcp/playground"):
            await self.page({**scope, "root_path": "/mcp"}, receive, send)
            return
        if scope["method"] != "POST" or scope["path"] != "/mcp":
            await Response(status_code=404)(scope, receive, send)
            return
        message = json.loads(await Request(scope, receive).body())
        result = self.answer(message["method"], message.get("params", {}))
        await JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": result})(scope, receive, send)

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "server/discover":
            info = {"name": "scripted", "version": "1.0.0"}
            return {"capabilities": {"tools": {}}, "_meta": {"io.modelcontextprotocol/serverInfo": info}}
        if method == "tools/list":
            return {"tools": [TOOL]}
        self.calls.append(params)
        answer = params.get("inputResponses", {}).get("amount")
        if answer is None:  # the first round
            return {"resultType": "input_required", "inputRequests": {"amount": QUESTION}, "requestState": "s1"}
        if answer["content"]["amount"] <= 0:
            again = {**QUESTION, "params": {**QUESTION["params"], "_meta": {REFUSED: {"reason": REASON}}}}
            return {"resultType": "input_required", "inputRequests": {"amount": again}, "requestState": "s2"}
        return {"content": [{"type": "text", "text": f"approved {answer['content']['amount']}"}]}
