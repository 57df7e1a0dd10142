"""One JSON-RPC request over Streamable HTTP: POST it, read a JSON or an SSE reply.

The 2026-07-28 wire is one POST per request and nothing else: no session, no GET stream, no
resumption. An SSE reply may carry notifications about this request before its response;
anything else on it is ignored. Closing the stream cancels the request on the server, so the
response is always closed when we return or raise.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import httpx

from ..protocol import JSONObject, RequestId
from ._errors import HttpStatusError, InvalidServerResponse, McpServerError, StreamClosedError

logger = logging.getLogger("fastapi_mrtr.client")

NotificationSink = Callable[[JSONObject], Awaitable[None]]

JSON_MEDIA = "application/json"
SSE_MEDIA = "text/event-stream"


def encode_message(message: JSONObject) -> bytes:
    """Compact UTF-8 JSON. Strings (``requestState`` included) round-trip exactly."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _media_type(response: httpx.Response) -> str:
    content_type = str(response.headers.get("content-type", ""))
    return content_type.split(";", 1)[0].strip().lower()


async def iter_sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The ``data`` of each SSE event of type ``message`` (WHATWG event-stream parsing rules).

    Comments (keep-alives), ``id`` and ``retry`` fields are dropped: this wire has no resumption.
    """
    data: list[str] = []
    event = ""
    async for line in lines:
        if not line:
            if data and event in ("", "message"):
                yield "\n".join(data)
            data, event = [], ""
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if data and event in ("", "message"):  # a final event without its blank line
        yield "\n".join(data)


class HttpRpc:
    """Sends JSON-RPC requests to one MCP endpoint through an ``httpx.AsyncClient``."""

    def __init__(self, http: httpx.AsyncClient, url: str | httpx.URL) -> None:
        self.http = http
        self.url = url

    async def request(
        self,
        message: JSONObject,
        headers: Mapping[str, str],
        on_notification: NotificationSink | None = None,
    ) -> JSONObject:
        """POST ``message`` and return the ``result`` of its response.

        Raises :class:`McpServerError` for a JSON-RPC error reply.
        """
        request = self.http.build_request("POST", self.url, content=encode_message(message))
        _apply_headers(request, headers)
        response = await self.http.send(request, stream=True)
        try:
            return await self._read(response, message["id"], on_notification)
        finally:
            await response.aclose()

    async def _read(
        self, response: httpx.Response, request_id: RequestId, on_notification: NotificationSink | None
    ) -> JSONObject:
        media = _media_type(response)
        if response.is_success and media == SSE_MEDIA:
            return await self._read_sse(response, request_id, on_notification)
        body = await response.aread()
        if media == JSON_MEDIA and body:
            try:
                decoded = json.loads(body)
            except ValueError:
                decoded = None
            if isinstance(decoded, dict) and (_is_jsonrpc_error(decoded) or response.is_success):
                result = _interpret(decoded, request_id, response.status_code)
                if result is None:
                    raise InvalidServerResponse(f"no response to request {request_id!r}", decoded)
                return result
        text = body.decode("utf-8", "replace")
        if not response.is_success:
            raise HttpStatusError(response.status_code, text)
        raise InvalidServerResponse(
            f"expected a JSON-RPC response ({JSON_MEDIA} or {SSE_MEDIA}), got HTTP "
            f"{response.status_code} {media or 'without content type'}",
            text,
        )

    async def _read_sse(
        self, response: httpx.Response, request_id: RequestId, on_notification: NotificationSink | None
    ) -> JSONObject:
        async for data in iter_sse_data(response.aiter_lines()):
            try:
                decoded = json.loads(data)
            except ValueError as exc:
                raise InvalidServerResponse("SSE event is not JSON", data) from exc
            if not isinstance(decoded, dict):
                raise InvalidServerResponse("SSE event is not a JSON-RPC message", decoded)
            if "method" in decoded:
                await _route_incoming(decoded, on_notification)
                continue
            result = _interpret(decoded, request_id, response.status_code)
            if result is not None:
                return result
        raise StreamClosedError(f"SSE stream ended before the response to request {request_id!r}")


def _apply_headers(request: httpx.Request, headers: Mapping[str, str]) -> None:
    # Mcp-Param-* mirror this request's arguments only: drop any the AsyncClient carries by
    # default, so a stale configured value can never stand in for an argument.
    for name in [n for n in request.headers if n.lower().startswith("mcp-param-")]:
        del request.headers[name]
    for name, value in headers.items():
        request.headers[name] = value


async def _route_incoming(message: JSONObject, on_notification: NotificationSink | None) -> None:
    if "id" in message:
        # The 2026-07-28 server never sends requests; a legacy-era server might. Nobody answers.
        logger.warning("ignoring server request %r on a response stream", message.get("method"))
        return
    if on_notification is not None:
        await on_notification(message)


def _is_jsonrpc_error(message: JSONObject) -> bool:
    """A JSON-RPC error, not some other JSON error body (an OAuth 403 also has an ``error`` key)."""
    return message.get("jsonrpc") == "2.0" or isinstance(message.get("error"), dict)


def _interpret(message: JSONObject, request_id: RequestId, http_status: int) -> JSONObject | None:
    """The result of our response, an exception for an error, ``None`` for someone else's reply."""
    if "method" in message:
        return None
    if "error" in message:
        error = message["error"]
        code = error.get("code") if isinstance(error, dict) else None
        text = error.get("message") if isinstance(error, dict) else None
        if not isinstance(code, int) or not isinstance(text, str):
            raise InvalidServerResponse("malformed JSON-RPC error", message)
        if message.get("id") not in (request_id, None):  # an id-less error is about our request
            return None
        raise McpServerError(code, text, error.get("data"), http_status=http_status, request_id=message.get("id"))
    if "result" in message:
        if message.get("id") != request_id:
            return None
        result: Any = message["result"]
        if not isinstance(result, dict):
            raise InvalidServerResponse("JSON-RPC result is not an object", message)
        return result
    raise InvalidServerResponse("not a JSON-RPC message", message)
