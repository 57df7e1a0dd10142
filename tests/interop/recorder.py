"""An ASGI layer that keeps every exchange with the MCP endpoint, and checks each message in it.

It wraps the whole app served by uvicorn, so it sees the bytes any client gets (the official SDK's
client, raw httpx probes), JSON or SSE, without changing them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tests.interop import wire


@dataclass
class Exchange:
    """One HTTP request to the endpoint and what the server sent back."""

    http_method: str
    request_body: bytearray = field(default_factory=bytearray)
    status: int | None = None
    content_type: str = ""
    response_body: bytearray = field(default_factory=bytearray)
    complete: bool = False

    @property
    def request(self) -> Any:
        try:
            return json.loads(self.request_body)
        except ValueError:
            return None

    @property
    def method(self) -> str | None:
        request = self.request
        method = request.get("method") if isinstance(request, dict) else None
        return method if isinstance(method, str) else None

    @property
    def params(self) -> dict[str, Any]:
        request = self.request
        params = request.get("params") if isinstance(request, dict) else None
        return params if isinstance(params, dict) else {}

    def messages(self) -> list[Any]:
        """The JSON-RPC messages of the response: one JSON body, or the data of each SSE event."""
        if not self.response_body:
            return []
        if self.content_type.startswith("text/event-stream"):
            return [json.loads(data) for data in sse_data(bytes(self.response_body))]
        return [json.loads(self.response_body)]


def sse_data(body: bytes) -> list[str]:
    """The data of each complete event of an SSE body (comments and keep-alives have none)."""
    events: list[str] = []
    for block in body.decode("utf-8").replace("\r\n", "\n").split("\n\n")[:-1]:
        lines = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if lines:
            events.append("\n".join(lines))
    return events


class WireRecorder:
    """Records the exchanges with the endpoint at ``path``; everything else passes untouched."""

    def __init__(self, app: ASGIApp, path: str = "/mcp") -> None:
        self.app = app
        self.paths = (path, path + "/")
        self._lock = threading.Lock()
        self._exchanges: list[Exchange] = []
        self.output_schemas: dict[str, Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        exchange = Exchange(http_method=scope["method"])
        with self._lock:
            self._exchanges.append(exchange)

        async def receiving() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                exchange.request_body += message.get("body", b"")
            return message

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
                headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in message.get("headers", [])}
                exchange.content_type = headers.get("content-type", "")
            elif message["type"] == "http.response.body":
                exchange.response_body += message.get("body", b"")
                exchange.complete = not message.get("more_body", False)
            await send(message)

        await self.app(scope, receiving, sending)

    def take(self) -> list[Exchange]:
        """The exchanges recorded since the last ``take``."""
        with self._lock:
            taken, self._exchanges = self._exchanges, []
        return taken


def exchange_issues(exchange: Exchange, output_schemas: Mapping[str, Any]) -> list[str]:
    """Every way the messages of ``exchange`` differ from the SDK's wire models."""
    try:
        messages = exchange.messages()
    except ValueError as error:
        return [f"the response body is not JSON / SSE of JSON: {error}"]
    request = exchange.request
    is_request = isinstance(request, dict) and "id" in request and exchange.method is not None
    if not is_request:
        # A notification (202, no body), or a request refused before its id could be read.
        return [issue for message in messages for issue in wire.error_issues(message)]
    issues: list[str] = []
    token = (exchange.params.get("_meta") or {}).get("progressToken")
    responses = [m for m in messages if not (isinstance(m, dict) and "method" in m and "id" not in m)]
    for message in messages:
        if message not in responses:
            issues += wire.notification_issues(message, progress_token=token)
    if exchange.complete and exchange.method != "subscriptions/listen" and len(responses) != 1:
        issues.append(f"{len(responses)} responses to one request")
    if responses and responses[-1] is not messages[-1]:
        issues.append("the response is not the last message of the stream")
    tool = exchange.params.get("name") if exchange.method == "tools/call" else None
    for response in responses:
        issues += wire.response_issues(
            response,
            method=exchange.method,
            request_id=request["id"] if wire_id(request["id"]) else None,
            tool=tool if isinstance(tool, str) else None,
            output_schemas=output_schemas,
        )
    return issues


def wire_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def describe(exchange: Exchange) -> str:
    request = bytes(exchange.request_body[:300]).decode("utf-8", "replace")
    response = bytes(exchange.response_body[:600]).decode("utf-8", "replace")
    return f"{exchange.http_method} {request}\n  -> {exchange.status} {exchange.content_type}: {response}"
