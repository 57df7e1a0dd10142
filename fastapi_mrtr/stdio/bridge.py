"""The bridge: each JSON-RPC line from the client becomes an HTTP request to the app's MCP endpoint.

Every message takes the path an HTTP client's would, so every check, the replay engine, the
2025-era shim and the app's own middleware and dependencies are the ones HTTP clients meet:

- A request carrying modern ``_meta`` is POSTed statelessly (2026-07-28). MRTR is then exactly
  as on HTTP: ``input_required`` results, sealed ``requestState``, retries as new requests.
- ``initialize`` (without modern ``_meta``) opens this process's 2025-era session, as the spec's
  versioning page says it does on stdio ("scoped to the stdio process"). The bridge keeps the
  session id, follows the session's GET stream (server notifications), sends each later
  message without modern ``_meta`` in the session, and POSTs the client's responses back. The
  server's requests (``elicitation/create``, ``sampling/createMessage``, ``roots/list``) arrive
  on a call's SSE stream and go to the pipe like any message, so ``ctx.elicit`` is a real
  request on the pipe. A call stream the server closes early is resumed with ``Last-Event-ID``.
- A ``server/discover`` probe is answered as any modern request: a client that then sends
  ``initialize`` (Claude Code, Copilot CLI) still gets its 2025-era session.
- ``notifications/cancelled`` closes the request's exchange, which is a cancel on HTTP; nothing
  more is written for that request.

Each request runs as its own task, so a call waiting for the client's answer never stops the
reader from reading that answer. ``initialize`` alone is awaited in line: the messages after it
need the session it opens. Whatever the app answers, the client gets one JSON-RPC response per
request: an answer that is no JSON-RPC message (an HTML 500 page, a middleware's bare 401) or
no answer at all becomes a JSON-RPC error naming what happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from fastapi_mrtr.stdio.exchange import HttpExchange
from fastapi_mrtr.stdio.pipe import Oversized
from fastapi_mrtr.stdio.sse import SseParser
from fastapi_mrtr.stdio.target import Identity, Target, legacy_headers
from fastapi_mrtr.wire.errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR
from fastapi_mrtr.wire.json_codec import decode, encode
from fastapi_mrtr.wire.protocol import META_PROTOCOL_VERSION, JSONObject, RequestId

logger = logging.getLogger("fastapi_mrtr.stdio")

MAX_RESUMES = 10_000  # a call stream closed by the server again and again (SEP-1699 polling) is followed this often
RESUME_WAIT_CAP = 1.0  # seconds: the server's retry hint, capped (in process, no network to spare)
STOP_GRACE = 0.5  # seconds for the app to end a cancelled request by itself before its work is cancelled
SNIPPET = 300  # characters of a non-JSON-RPC answer quoted in the error that replaces it


@dataclass(eq=False)
class Flight:
    """One client message on its way through the app, and what came back for it."""

    request_id: RequestId | None  # None for a notification or a client response
    method: str | None
    expects_answer: bool = True
    answered: bool = False
    cancelled: bool = False
    response: JSONObject | None = None
    unreadable: bytes = b""  # an answer that was no JSON-RPC message
    last_event_id: str | None = None
    retry_ms: int | None = None
    exchange: HttpExchange | None = None


@dataclass
class LegacySession:
    """This process's 2025-era session: opened by ``initialize``, one per process."""

    session_id: str
    version: str
    stream: asyncio.Task[None] | None = None
    stream_exchange: HttpExchange | None = field(default=None, repr=False)


class StdioBridge:
    def __init__(
        self,
        target: Target,
        write_line: Callable[[bytes], Awaitable[None]],
        identity: Identity,
        state: Mapping[str, Any],
        max_line_bytes: int,
    ) -> None:
        self._target = target
        self._write_line = write_line
        self._identity = identity
        self._state = state
        self._max_line_bytes = max_line_bytes
        self._flights: dict[RequestId, Flight] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._session: LegacySession | None = None
        self._closing = False

    # --- reading -------------------------------------------------------------------------------

    async def accept(self, line: bytes | Oversized) -> None:
        """Take one line from the client: answer it at once, or start the work that answers it."""
        if isinstance(line, Oversized):
            await self._oversized(line)
            return
        try:
            message = decode(line)
        except (ValueError, UnicodeDecodeError):
            await self._write(_error(None, PARSE_ERROR, "Parse error: the line is not valid JSON"))
            return
        if not isinstance(message, dict):
            what = "batches are not supported" if isinstance(message, list) else "expected a JSON-RPC object"
            await self._write(_error(None, INVALID_REQUEST, f"Invalid request: {what}"))
            return
        method = message.get("method")
        if method is None and "id" in message and ("result" in message or "error" in message):
            self._spawn(self._client_answer(line, message))
        elif "id" not in message:
            self._notification(line, message)
        else:
            await self._request(line, message)

    async def _request(self, line: bytes, message: JSONObject) -> None:
        request_id = message["id"] if _valid_id(message["id"]) else None
        flight = Flight(request_id, message.get("method") if isinstance(message.get("method"), str) else None)
        if request_id is not None and request_id in self._flights:
            await self._write(
                _error(request_id, INVALID_REQUEST, f"Invalid request: request id {request_id!r} is already in flight")
            )
            return
        modern = _has_modern_meta(message)
        if not modern and flight.method == "initialize":
            if self._session is not None:
                why = "Invalid request: this process's 2025-era session is already initialized (one per process)"
                await self._write(_error(request_id, INVALID_REQUEST, why))
                return
            await self._open_session(line, flight)  # in line: what follows needs its session
            return
        if request_id is not None:
            self._flights[request_id] = flight
        if modern or self._session is None:
            self._spawn(self._answer(flight, self._exchange("POST", self._target.modern_headers(message), line)))
        else:
            self._spawn(self._answer_in_session(flight, line))

    def _notification(self, line: bytes, message: JSONObject) -> None:
        method = message.get("method")
        if method == "notifications/cancelled":
            params = message.get("params")
            call_id = params.get("requestId") if isinstance(params, dict) else None
            cancelled = self._flights.get(call_id) if _valid_id(call_id) else None
            if cancelled is not None:  # closing its exchange is the cancel; nothing more is written for it
                cancelled.cancelled = True
                if cancelled.exchange is not None:
                    self._spawn(cancelled.exchange.stop(STOP_GRACE))
        flight = Flight(None, method if isinstance(method, str) else None, expects_answer=False)
        if self._session is not None and not _has_modern_meta(message):
            self._spawn(self._relay(flight, self._session_exchange("POST", line)))
        elif method != "notifications/cancelled":  # on the stateless wire, a cancel is the closed exchange
            self._spawn(self._relay(flight, self._exchange("POST", self._target.modern_headers(message), line)))

    async def _client_answer(self, line: bytes, message: JSONObject) -> None:
        """The client's response to one of the server's requests: for the session's call that asked."""
        if self._session is None:
            logger.warning("dropped a response (id %r): only a 2025-era session asks the client", message.get("id"))
            return
        await self._relay(Flight(None, None, expects_answer=False), self._session_exchange("POST", line))

    async def _oversized(self, line: Oversized) -> None:
        fields = line.skeleton.fields() or {}
        request_id = fields.get("id") if _valid_id(fields.get("id")) else None
        why = (
            f"Invalid request: the message is {line.length} bytes, over this server's limit of "
            f"{self._max_line_bytes} bytes; it was not read"
        )
        logger.warning("%s (id %r)", why, request_id)
        if fields.get("method") is None and request_id is not None and ("result" in fields or "error" in fields):
            if self._session is not None:  # the call that asked gets an error instead of waiting for ever
                stand_in = encode(_error(request_id, INVALID_REQUEST, why))
                await self._client_answer(stand_in, decode(stand_in))
            return
        if isinstance(fields.get("method"), str) and "id" not in fields:
            return  # a notification: no answer
        await self._write(_error(request_id, INVALID_REQUEST, why))

    # --- the 2025-era session --------------------------------------------------------------------

    async def _open_session(self, line: bytes, flight: Flight) -> None:
        exchange = self._exchange("POST", legacy_headers(None, None), line)
        if flight.request_id is not None:
            self._flights[flight.request_id] = flight
        try:
            await self._answer(flight, exchange)
        finally:
            if flight.request_id is not None:
                self._flights.pop(flight.request_id, None)
        result = flight.response.get("result") if flight.response is not None else None
        session_id = exchange.headers.get("mcp-session-id")
        if session_id and isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
            self._session = LegacySession(session_id, result["protocolVersion"])
            self._session.stream = asyncio.ensure_future(self._follow_session(self._session))

    def _session_exchange(self, method: str, body: bytes = b"", last_event_id: str | None = None) -> HttpExchange:
        assert self._session is not None
        headers = legacy_headers(self._session.session_id, self._session.version)
        if method != "POST":
            del headers["content-type"]
            headers["accept"] = "text/event-stream"
        if last_event_id is not None:
            headers["last-event-id"] = last_event_id
        return self._exchange(method, headers, body)

    async def _answer_in_session(self, flight: Flight, line: bytes) -> None:
        await self._answer(flight, self._session_exchange("POST", line), resumable=True)

    async def _follow_session(self, session: LegacySession) -> None:
        """The session's GET stream: the server's notifications (list changes, resource updates), to the pipe."""
        last_event_id: str | None = None
        while not self._closing:
            flight = Flight(None, None, expects_answer=False)
            exchange = self._session_exchange("GET", last_event_id=last_event_id)
            session.stream_exchange = exchange
            await self._relay(flight, exchange)
            last_event_id = flight.last_event_id or last_event_id
            if self._closing:
                return
            if exchange.status != 200:
                logger.warning(
                    "the session's notification stream was refused (HTTP %s): no notifications", exchange.status
                )
                return
            await asyncio.sleep(_retry_seconds(flight, 0.5))

    # --- answering ---------------------------------------------------------------------------------

    def _exchange(self, method: str, headers: Mapping[str, str], body: bytes) -> HttpExchange:
        merged = {**headers, **{name.lower(): value for name, value in self._identity().items()}}
        return HttpExchange(self._target.app, method, self._target.path, merged, body, self._state)

    async def _answer(self, flight: Flight, exchange: HttpExchange, *, resumable: bool = False) -> None:
        """Relay the app's answer to a request, then make sure the client got exactly one response."""
        try:
            await self._relay(flight, exchange)
            resumes = 0
            while resumable and self._resumable(flight, exchange) and resumes < MAX_RESUMES:
                resumes += 1
                await asyncio.sleep(_retry_seconds(flight, 0.0))
                exchange = self._session_exchange("GET", last_event_id=flight.last_event_id)
                await self._relay(flight, exchange)
            if flight.expects_answer and not flight.answered and not flight.cancelled and not self._closing:
                await self._write(_error(flight.request_id, *_missing_answer(exchange, flight)))
        finally:
            if flight.request_id is not None and self._flights.get(flight.request_id) is flight:
                del self._flights[flight.request_id]

    def _resumable(self, flight: Flight, exchange: HttpExchange) -> bool:
        """A call stream that ended before its response, but can be followed on from its last event."""
        return (
            not flight.answered
            and not flight.cancelled
            and not self._closing
            and flight.last_event_id is not None
            and exchange.status == 200
            and exchange.failure is None
        )

    async def _relay(self, flight: Flight, exchange: HttpExchange) -> None:
        """Write every JSON-RPC message of the app's answer to the pipe, as it comes."""
        flight.exchange = exchange
        exchange.start()
        try:
            if flight.cancelled:
                exchange.disconnect()
            if not await exchange.response():
                return
            if exchange.headers.get("content-type", "").split(";", 1)[0].strip() == "text/event-stream":
                parser = SseParser()
                async for chunk in exchange.body():
                    for event in parser.feed(chunk):
                        flight.last_event_id = event.id if event.id is not None else flight.last_event_id
                        flight.retry_ms = event.retry_ms if event.retry_ms is not None else flight.retry_ms
                        if event.data is not None and event.data.strip():
                            await self._forward(flight, event.data.encode("utf-8"))
            else:
                body = bytearray()
                async for chunk in exchange.body():
                    body += chunk
                if body.strip():
                    await self._forward(flight, bytes(body))
        finally:
            flight.exchange = None
            await exchange.abandon()

    async def _forward(self, flight: Flight, raw: bytes) -> None:
        """One message of the app's answer: to the pipe (a response to the flight's request marks it answered)."""
        try:
            message = decode(raw)
        except (ValueError, UnicodeDecodeError):
            message = None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            flight.unreadable = raw[: SNIPPET * 4]
            return
        if flight.cancelled:
            return
        is_response = "method" not in message and ("result" in message or "error" in message)
        if is_response and not flight.expects_answer:
            # The answer to a notification or to the client's own response: JSON-RPC has no reply to either.
            if "error" in message:
                logger.warning("the app refused a %s: %s", flight.method or "response", message["error"])
            return
        if is_response and flight.request_id is not None:
            if message.get("id") is None:  # refused before its id was read: on the pipe it must carry it
                message = {**message, "id": flight.request_id}
            if message.get("id") == flight.request_id:
                if flight.answered:
                    return  # one response per request
                flight.answered = True
                flight.response = message
        await self._write(message)

    async def _write(self, message: JSONObject) -> None:
        await self._write_line(encode(message))

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("the bridge failed on a message", exc_info=task.exception())

    # --- shutdown ------------------------------------------------------------------------------------

    async def close(self, grace: float) -> None:
        """Let requests in flight finish for ``grace`` seconds, then cancel the rest and end the session."""
        if self._tasks and grace > 0:
            await asyncio.wait(set(self._tasks), timeout=grace)
        self._closing = True
        stopping = []
        for flight in list(self._flights.values()):
            flight.cancelled = True  # cut off: nothing more is written for it
            if flight.exchange is not None:
                stopping.append(flight.exchange.stop(STOP_GRACE))
        session = self._session
        if session is not None and session.stream_exchange is not None:
            stopping.append(session.stream_exchange.stop(STOP_GRACE))
        await asyncio.gather(*stopping)
        pending = set(self._tasks) | ({session.stream} if session is not None and session.stream else set())
        if pending:
            _, still = await asyncio.wait(pending, timeout=1.0)
            for task in still:
                task.cancel()
            if still:
                await asyncio.wait(still, timeout=1.0)
        if session is not None:  # a good 2025-era client ends its session; this one does it for the client
            ending = self._session_exchange("DELETE")
            with contextlib.suppress(Exception):
                ending.start()
                await asyncio.wait_for(ending.response(), 2.0)
            await ending.abandon()


def _error(request_id: RequestId | None, code: int, message: str) -> JSONObject:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _missing_answer(exchange: HttpExchange, flight: Flight) -> tuple[int, str]:
    """The error that stands for an answer the app did not give as JSON-RPC."""
    if exchange.failure is not None:
        name = type(exchange.failure).__name__
        return INTERNAL_ERROR, f"Internal error: the app raised {name} while answering; see the server's log (stderr)"
    status = exchange.status
    if status == 0:
        return INTERNAL_ERROR, "Internal error: the app returned without answering"
    shown = flight.unreadable.decode("utf-8", "replace").strip()[:SNIPPET]
    what = f"the app answered HTTP {status} without a JSON-RPC response" + (f": {shown}" if shown else "")
    if status >= 500 or status < 400:
        return INTERNAL_ERROR, f"Internal error: {what}"
    return INVALID_REQUEST, f"Invalid request: {what}"


def _retry_seconds(flight: Flight, default: float) -> float:
    return min(flight.retry_ms / 1000, RESUME_WAIT_CAP) if flight.retry_ms is not None else default


def _has_modern_meta(message: JSONObject) -> bool:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


def _valid_id(value: Any) -> TypeGuard[RequestId]:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
