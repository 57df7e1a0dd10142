"""Shared test helpers: a wire recorder (httpx event hooks) and the in-process SDK peer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.client import sdk_server


@dataclass
class Exchange:
    """One recorded POST: its headers and decoded JSON body, and the response status."""

    headers: httpx.Headers
    body: dict[str, Any]
    status: int | None = None
    reply: Any = None  # the decoded JSON reply (JSON replies only: reading SSE would block it)

    @property
    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = self.body.get("params") or {}
        return params


@dataclass
class Wire:
    """Captures every request through httpx event hooks (what actually went on the wire)."""

    exchanges: list[Exchange] = field(default_factory=list)

    async def on_request(self, request: httpx.Request) -> None:
        self.exchanges.append(Exchange(request.headers, json.loads(request.content)))

    async def on_response(self, response: httpx.Response) -> None:
        exchange = next(e for e in reversed(self.exchanges) if e.status is None)
        exchange.status = response.status_code
        if response.headers.get("content-type", "").startswith("application/json"):
            await response.aread()
            exchange.reply = response.json()

    def request_states(self) -> list[str]:
        """The ``requestState`` of every ``input_required`` reply, in order."""
        results = [e.reply.get("result") or {} for e in self.exchanges if isinstance(e.reply, dict)]
        return [r["requestState"] for r in results if r.get("resultType") == "input_required" and "requestState" in r]

    def hooks(self) -> dict[str, list[Any]]:
        return {"request": [self.on_request], "response": [self.on_response]}

    def calls(self, method: str) -> list[Exchange]:
        return [e for e in self.exchanges if e.body.get("method") == method]


@asynccontextmanager
async def asgi_http(wire: Wire | None = None, *, json_response: bool = False) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client wired in-process to a fresh SDK peer app (its lifespan entered)."""
    app = sdk_server.build_app(json_response=json_response)
    async with app.router.lifespan_context(app):
        hooks = wire.hooks() if wire is not None else {}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000", event_hooks=hooks) as http:
            yield http


Reply = Any  # a result object, or an httpx.Response for full control

DISCOVERED = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
    "ttlMs": 0,
    "cacheScope": "private",
}


class ScriptedServer:
    """An ``httpx.MockTransport`` peer: ``respond(body)`` returns a result or an httpx.Response.

    Records every request (headers and body) so tests can assert what went on the wire.

    With ``tools`` (a list of tool objects, ``[]`` for none), the peer answers ``tools/list``
    itself with one page of them and records those requests in ``listings``, not ``requests``:
    after a complete ``tools/call`` the client lists the tools once to learn the tool's
    ``outputSchema``, and a script of rounds should not have to answer that.

    Like every 2026-07-28 server it answers ``server/discover`` (the era probe a client in
    ``mode="auto"`` sends first) itself, recorded in ``probes``; a script that wants to answer
    the probe differently handles it in ``respond`` with ``answer_discover=False``.
    """

    def __init__(
        self, respond: Any, *, tools: list[dict[str, Any]] | None = None, answer_discover: bool = True
    ) -> None:
        self.respond = respond
        self.tools = tools
        self.answer_discover = answer_discover
        self.requests: list[httpx.Request] = []
        self.listings: list[httpx.Request] = []
        self.probes: list[httpx.Request] = []

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    async def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if self.answer_discover and body.get("method") == "server/discover":
            self.probes.append(request)
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": DISCOVERED})
        if self.tools is not None and body.get("method") == "tools/list":
            self.listings.append(request)
            listing = {"resultType": "complete", "tools": self.tools, "ttlMs": 60_000, "cacheScope": "private"}
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": listing})
        self.requests.append(request)
        reply = self.respond(body)
        if hasattr(reply, "__await__"):
            reply = await reply
        if isinstance(reply, httpx.Response):
            return reply
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": reply})

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handle), base_url="http://mock")


def input_required(requests: dict[str, Any] | None = None, state: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"resultType": "input_required"}
    if requests is not None:
        result["inputRequests"] = requests
    if state is not None:
        result["requestState"] = state
    return result


def elicit(message: str = "ok?") -> dict[str, Any]:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


def text_result(text: str) -> dict[str, Any]:
    return {"resultType": "complete", "content": [{"type": "text", "text": text}]}


def sse(*messages: dict[str, Any], comment: bool = True) -> httpx.Response:
    """A ``text/event-stream`` reply carrying ``messages`` (with a keep-alive comment first)."""
    events = [": keep-alive\r\n\r\n"] if comment else []
    events += [f"event: message\r\ndata: {json.dumps(m)}\r\n\r\n" for m in messages]
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content="".join(events).encode())
