"""A raw 2025-era peer for the legacy tests: every byte it sends is written here, so tests can
also send what no SDK client would (a stray answer, a tampered session id)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

ACCEPT_BOTH = "application/json, text/event-stream"


@dataclass
class Event:
    id: str | None
    data: Any  # the JSON-RPC message, or None for a priming event
    retry: int | None = None


@dataclass
class LegacyPeer:
    http: httpx.AsyncClient
    url: str
    version: str = "2025-11-25"
    session_id: str | None = None
    extra_headers: dict[str, str] = field(default_factory=dict)
    next_id: int = 100

    def headers(self, **more: str) -> dict[str, str]:
        headers = {"accept": ACCEPT_BOTH, "content-type": "application/json", **self.extra_headers}
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
            headers["mcp-protocol-version"] = self.version
        headers.update(more)
        return headers

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await self.http.post(
            self.url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": self.version,
                    "capabilities": {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
                    if capabilities is None
                    else capabilities,
                    "clientInfo": {"name": "legacy-peer", "version": "1"},
                },
            },
            headers=self.headers(),
        )
        assert response.status_code == 200, response.text
        self.session_id = response.headers["mcp-session-id"]
        result: dict[str, Any] = response.json()["result"]
        self.version = result["protocolVersion"]
        initialized = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert initialized.status_code == 202
        return result

    async def post(self, message: Any, **headers: str) -> httpx.Response:
        return await self.http.post(self.url, content=json.dumps(message), headers=self.headers(**headers))

    async def request(self, method: str, params: dict[str, Any] | None = None) -> httpx.Response:
        self.next_id += 1
        return await self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})

    async def answer(self, request_id: Any, result: dict[str, Any]) -> httpx.Response:
        return await self.post({"jsonrpc": "2.0", "id": request_id, "result": result})

    @contextlib.asynccontextmanager
    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        method: str = "tools/call",
        meta: dict[str, Any] | None = None,
        **headers: str,
    ) -> AsyncIterator[tuple[httpx.Response, AsyncIterator[Event]]]:
        """POST one call (with ``meta`` as its ``_meta``) and read its answer as events (a JSON
        answer is one event)."""
        self.next_id += 1
        params: dict[str, Any] = (
            {"name": name, "arguments": arguments or {}} if method == "tools/call" else {"uri": name}
        )
        if meta is not None:
            params["_meta"] = meta
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        request = self.http.build_request("POST", self.url, content=json.dumps(body), headers=self.headers(**headers))
        response = await self.http.send(request, stream=True)
        try:
            yield response, events(response)
        finally:
            await response.aclose()

    @contextlib.asynccontextmanager
    async def get(self, **headers: str) -> AsyncIterator[tuple[httpx.Response, AsyncIterator[Event]]]:
        hdrs = self.headers(**headers)
        hdrs["accept"] = "text/event-stream"
        async with self.http.stream("GET", self.url, headers=hdrs) as response:
            yield response, events(response)


async def events(response: httpx.Response) -> AsyncIterator[Event]:
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        yield Event(None, json.loads(await response.aread()))
        return
    event_id: str | None = None
    retry: int | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if event_id is not None or data:
                text = "\n".join(data)
                yield Event(event_id, json.loads(text) if text.strip() else None, retry)
            event_id, retry, data = None, None, []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "id":
                event_id = value
            elif name == "data":
                data.append(value)
            elif name == "retry":
                retry = int(value)


async def messages(stream: AsyncIterator[Event]) -> AsyncIterator[Any]:
    """The JSON-RPC messages of a stream, priming events left out."""
    async for event in stream:
        if event.data is not None:
            yield event.data
