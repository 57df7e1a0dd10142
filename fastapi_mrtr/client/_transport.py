"""One JSON-RPC request over Streamable HTTP: POST it, read a JSON or an SSE reply.

The 2026-07-28 wire is one POST per request and nothing else: no session, no GET stream, no
resumption. An SSE reply may carry notifications about this request before its response;
anything else on it is ignored. Closing the stream cancels the request on the server, so the
response is always closed when we return or raise.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from fastapi_mrtr.client._errors import InvalidServerResponseError, McpServerError, StatusCodeError, StreamClosedError
from fastapi_mrtr.wire.protocol import JSONObject, RequestId

logger = logging.getLogger("fastapi_mrtr.client")

NotificationSink = Callable[[JSONObject], Awaitable[None]]

JSON_MEDIA = "application/json"
SSE_MEDIA = "text/event-stream"


def encode_message(message: JSONObject) -> bytes:
    """Compact UTF-8 JSON. Strings (``requestState`` included) round-trip exactly.

    A server may put a lone surrogate (JSON ``"\\ud800"``) in ``requestState`` or in an
    ``inputRequests`` key, and both must be echoed exactly. UTF-8 cannot carry a lone surrogate,
    so such a message goes out ASCII-escaped instead: the escape travels back as it came.
    """
    text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def decode_json(data: str | bytes) -> Any:
    """``json.loads`` for a reply; every way it fails becomes :class:`InvalidServerResponseError`.

    Nesting deeper than the recursion limit raises ``RecursionError``, which is no ``ValueError``.
    """
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        raise InvalidServerResponseError(f"reply is not JSON: {exc}", text) from exc


def decode_sse_message(data: str) -> JSONObject:
    """One SSE event's ``data`` as a JSON-RPC message object, or :class:`InvalidServerResponseError`."""
    decoded = decode_json(data)
    if not isinstance(decoded, dict):
        raise InvalidServerResponseError("SSE event is not a JSON-RPC message", decoded)
    return decoded


def media_type(response: httpx.Response) -> str:
    """The response's media type, lower case, without parameters ("" when it names none).

    Some servers send ``Content-Type`` twice (httpx then joins the values with a comma); the same
    media type repeated is that type, while two different ones are a broken reply we refuse to
    guess from.
    """
    values = response.headers.get_list("content-type", split_commas=True)
    media = {value.split(";", 1)[0].strip().lower() for value in values} - {""}
    if len(media) > 1:
        raise InvalidServerResponseError(
            f"the server sent conflicting Content-Type headers ({', '.join(sorted(media))}); "
            "cannot tell how to read its reply",
            values,
        )
    return media.pop() if media else ""


@dataclass(frozen=True)
class SseEvent:
    """One server-sent event: its ``data``, and the ``id`` and ``retry`` it carried, if any."""

    data: str
    event_id: str | None = None
    retry_ms: int | None = None


async def iter_sse_events(lines: AsyncIterator[str]) -> AsyncIterator[SseEvent]:
    """Each SSE event of type ``message`` (WHATWG event-stream parsing rules).

    Comments (keep-alives) are dropped. An event with an ``id`` but no data (a 2025-era priming
    event) is still yielded, with empty ``data``: a resuming reader needs its id.
    """
    data: list[str] = []
    event = ""
    event_id: str | None = None
    retry: int | None = None

    def flush() -> SseEvent | None:
        if event not in ("", "message") or (not data and event_id is None and retry is None):
            return None
        return SseEvent("\n".join(data), event_id, retry)

    async for line in lines:
        if not line:
            found = flush()
            if found is not None:
                yield found
            data, event, event_id, retry = [], "", None, None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            event_id = value
        elif name == "retry" and value.isdigit():
            retry = int(value)
    found = flush()  # a final event without its blank line
    if found is not None:
        yield found


async def iter_sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The ``data`` of each SSE message event; ids and retry hints are dropped (the 2026-07-28
    wire has no resumption), and so are events without data."""
    async for event in iter_sse_events(lines):
        if event.data:
            yield event.data


class RpcWire(Protocol):
    """What the 2026-07-28 era sends through: :class:`HttpRpc`, or a stdio server's pipe (which
    has no headers, and drops them)."""

    async def request(
        self,
        message: JSONObject,
        headers: Mapping[str, str],
        on_notification: NotificationSink | None = None,
    ) -> JSONObject: ...


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
            return await self.read(response, message["id"], on_notification)
        finally:
            await response.aclose()

    async def read(
        self, response: httpx.Response, request_id: RequestId, on_notification: NotificationSink | None
    ) -> JSONObject:
        media = media_type(response)
        if response.is_success and media == SSE_MEDIA:
            return await self._read_sse(response, request_id, on_notification)
        body = await response.aread()
        text = body.decode("utf-8", "replace")
        if not response.is_success:
            # Only a JSON-RPC error about this request speaks for a failed HTTP reply. Anything
            # else (a gateway's own error object, a `result`, a bare envelope) keeps the status.
            error = _error_reply(body, request_id, response.status_code) if media == JSON_MEDIA else None
            if error is not None:
                raise error
            raise StatusCodeError(response.status_code, text)
        if media != JSON_MEDIA or not body:
            raise InvalidServerResponseError(
                f"expected a JSON-RPC response ({JSON_MEDIA} or {SSE_MEDIA}), got HTTP "
                f"{response.status_code} {media or 'without content type'}",
                text,
            )
        decoded = decode_json(body)
        if not isinstance(decoded, dict):
            raise InvalidServerResponseError("not a JSON-RPC message", decoded)
        result = interpret_reply(decoded, request_id, response.status_code)
        if result is None:
            raise InvalidServerResponseError(f"no response to request {request_id!r}", decoded)
        return result

    async def _read_sse(
        self, response: httpx.Response, request_id: RequestId, on_notification: NotificationSink | None
    ) -> JSONObject:
        async for data in iter_sse_data(stream_lines(response, request_id)):
            decoded = decode_sse_message(data)
            if "method" in decoded:
                await _route_incoming(decoded, on_notification)
                continue
            result = interpret_reply(decoded, request_id, response.status_code)
            if result is not None:
                return result
        raise StreamClosedError(f"SSE stream ended before the response to request {request_id!r}")


# A line longer than this (an event's data line, say) is a hostile or broken server: reading on
# would hold all of it in memory. MCP messages are far smaller.
MAX_SSE_LINE_CHARS = 16 * 1024 * 1024
_LINE_END = re.compile(r"\r\n|\r|\n")  # SSE lines end in CRLF, LF or CR


async def stream_lines(
    response: httpx.Response, request_id: RequestId, *, max_line: int = MAX_SSE_LINE_CHARS
) -> AsyncIterator[str]:
    """The stream's lines, each at most ``max_line`` characters (else
    :class:`InvalidServerResponseError`); a connection dropped mid-stream is a stream that ended early."""
    pending = ""
    try:
        async for chunk in response.aiter_text():
            pending += chunk
            start = 0
            for end in _LINE_END.finditer(pending):
                if end.group() == "\r" and end.end() == len(pending):
                    break  # maybe the first half of a CRLF split between chunks
                yield pending[start : end.start()]
                start = end.end()
            pending = pending[start:]
            if len(pending) > max_line:
                raise InvalidServerResponseError(
                    f"SSE stream of request {request_id!r} sent a line longer than {max_line} characters"
                )
        if pending:
            yield pending.rstrip("\r")
    except httpx.RemoteProtocolError as exc:  # e.g. "incomplete chunked read"
        raise StreamClosedError(f"SSE stream of request {request_id!r} broke off: {exc}") from exc


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


def _same_id(received: Any, sent: RequestId) -> bool:
    """Type-exact id match: JSON ``true`` is not id 1 (``True == 1`` in Python), nor is ``1.0``."""
    return type(received) is type(sent) and received == sent


def _valid_error(error: Any) -> bool:
    """A JSON-RPC error object: an integer code (a JSON boolean is none) and a string message."""
    return isinstance(error, dict) and type(error.get("code")) is int and isinstance(error.get("message"), str)


def _server_error(message: JSONObject, http_status: int) -> McpServerError:
    error = message["error"]
    return McpServerError(
        error["code"], error["message"], error.get("data"), http_status=http_status, request_id=message.get("id")
    )


def _error_reply(body: bytes, request_id: RequestId, http_status: int) -> McpServerError | None:
    """The JSON-RPC error about our request in a non-2xx body, or ``None`` if it holds none."""
    try:
        message = decode_json(body)
    except InvalidServerResponseError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or "result" in message:
        return None
    if not _valid_error(message.get("error")):
        return None
    if message.get("id") is not None and not _same_id(message.get("id"), request_id):
        return None
    return _server_error(message, http_status)


def interpret_reply(message: JSONObject, request_id: RequestId, http_status: int) -> JSONObject | None:
    """The result of our response, an exception for an error, ``None`` for someone else's reply."""
    if message.get("jsonrpc") != "2.0":
        raise InvalidServerResponseError("not a JSON-RPC 2.0 message", message)
    if "method" in message:
        return None
    if "error" in message:
        if not _valid_error(message["error"]):
            raise InvalidServerResponseError("malformed JSON-RPC error", message)
        if message.get("id") is not None and not _same_id(message.get("id"), request_id):
            return None  # someone else's error; an id-less one is about our request
        raise _server_error(message, http_status)
    if "result" in message:
        if not _same_id(message.get("id"), request_id):
            return None
        result: Any = message["result"]
        if not isinstance(result, dict):
            raise InvalidServerResponseError("JSON-RPC result is not an object", message)
        return result
    raise InvalidServerResponseError("not a JSON-RPC message", message)
