"""A 2025-era MCP session (2025-11-25 and earlier) over Streamable HTTP, for servers without MRTR.

The handshake era keeps state on the server: ``initialize`` negotiates a version and the
capabilities, the server names the session in ``Mcp-Session-Id``, and every later request
carries that header. A tool that needs the user does not answer ``input_required``: it sends
its own requests (``elicitation/create``, ``sampling/createMessage``, ``roots/list``, ``ping``)
on the call's SSE stream, and the client answers each with a new POST of a JSON-RPC response.
Here those requests go to the same :class:`InputHandlers` the MRTR loop uses, so a handler
never knows which era asked.

After ``initialize`` the client opens the session's GET stream (when the client runs as an
``async with`` block, which owns the task that reads it): some servers send their requests there
rather than on the call's stream. A server that offers none (405, 404, 400) is fine.

A server may close a long call's stream after an event with an id (SEP-1699 polling); the
reader then waits the ``retry`` the server asked for and resumes with a GET carrying
``Last-Event-ID``. A request whose session the server no longer knows (404) re-initialises once
and is sent again. When a call is abandoned (a handler failed, a timeout, the caller cancelled)
the server is told with ``notifications/cancelled``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import anyio
import httpx

from fastapi_mrtr.client._errors import (
    InvalidServerResponseError,
    RoundTimeoutError,
    StatusCodeError,
    StreamClosedError,
)
from fastapi_mrtr.client._handlers import InputHandlers
from fastapi_mrtr.client._headers import ACCEPT
from fastapi_mrtr.client._transport import (
    SSE_MEDIA,
    HttpRpc,
    NotificationSink,
    decode_json,
    decode_sse_message,
    encode_message,
    interpret_reply,
    iter_sse_events,
    media_type,
    stream_lines,
)
from fastapi_mrtr.client.options import ClientOptions
from fastapi_mrtr.wire.errors import McpError
from fastapi_mrtr.wire.mrtr import InputRequest
from fastapi_mrtr.wire.protocol import LEGACY_PROTOCOL_VERSIONS, Implementation, JSONObject, RequestId, dump

logger = logging.getLogger("fastapi_mrtr.client")

SESSION_HEADER = "Mcp-Session-Id"
DEFAULT_RETRY_MS = 1000  # SEP-1699: wait this long before resuming when the server named no retry
MAX_RETRY_MS = 60_000  # a server's retry hint beyond this is capped, not obeyed
MAX_IDLE_RESUMES = 3  # resumptions in a row that bring no new event end the call
_CANCEL_GRACE = 2.0  # seconds the best-effort notifications/cancelled and DELETE may take
_LISTENER_WAIT = 5.0  # seconds a call waits for the GET stream's headers before it goes ahead

# Starts a background task in the client's task group (``None`` when there is none).
Spawner = Callable[[Callable[[], Coroutine[Any, Any, None]]], None]


# Server requests of one stream being answered at once. A person answers one at a time; a
# server that sends thousands would otherwise cost the client a task (and memory) each.
MAX_OPEN_SERVER_REQUESTS = 64


def too_many_requests(stream: RequestId) -> InvalidServerResponseError:
    return InvalidServerResponseError(
        f"the server sent more than {MAX_OPEN_SERVER_REQUESTS} requests at once on the stream of "
        f"request {stream!r}; the client stopped reading it"
    )


class SessionGoneError(Exception):
    """The server answered 404 to a request naming our session: it has ended or was never known."""


class LegacySession:
    """One 2025-era session with one endpoint: its id, version and what the server said of itself.

    Not started until :meth:`initialize`; :meth:`request` re-initialises once when the server
    forgets the session. Server-to-client requests are answered by ``handlers`` while the call
    that brought them is in flight.
    """

    def __init__(
        self,
        rpc: HttpRpc,
        handlers: InputHandlers,
        options: ClientOptions,
        headers: Callable[[], Mapping[str, str]],
        next_id: Callable[[], int],
        notifications: Callable[[], NotificationSink | None],
    ) -> None:
        self._rpc = rpc
        self._handlers = handlers
        self._options = options
        self._extra_headers = headers
        self._next_id = next_id
        self._notifications = notifications
        self.spawn: Spawner | None = None  # set by the client while its task group runs
        self._listener: anyio.CancelScope | None = None
        self._lock = anyio.Lock()
        self._asked = itertools.count(1)
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.server_info: Implementation | None = None
        self.server_capabilities: JSONObject = {}
        self.instructions: str | None = None

    @property
    def started(self) -> bool:
        return self.protocol_version is not None

    # --- lifecycle -------------------------------------------------------------------------

    async def initialize(self) -> None:
        """``initialize`` then ``notifications/initialized``; idempotent under concurrency."""
        async with self._lock:
            if not self.started:
                await self._handshake()

    async def _handshake(self) -> None:
        self.session_id = None
        wanted = self._options.legacy_protocol_version
        message: JSONObject = {
            "jsonrpc": "2.0",
            "id": self._next_id(),
            "method": "initialize",
            "params": {
                "protocolVersion": wanted,
                "capabilities": self._handlers.capabilities(),
                "clientInfo": dump(self._options.client_info),
            },
        }
        result = await self._exchange(message, None)
        version = result.get("protocolVersion")
        if version not in LEGACY_PROTOCOL_VERSIONS:
            raise InvalidServerResponseError(
                f"the server chose protocol version {version!r}, which this client does not speak "
                f"(it speaks {', '.join(LEGACY_PROTOCOL_VERSIONS)})",
                result,
            )
        info = result.get("serverInfo")
        try:
            self.server_info = Implementation.model_validate(info) if isinstance(info, dict) else None
        except ValueError:
            self.server_info = None
        capabilities = result.get("capabilities")
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        self.protocol_version = version
        await self._post_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await self._open_listener()

    async def close(self) -> None:
        """End the session on the server (DELETE); a server that does not allow it is fine."""
        self._stop_listener()
        session, self.session_id, self.protocol_version = self.session_id, None, None
        if session is None:
            return
        headers = {**self._extra_headers(), SESSION_HEADER: session}
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_GRACE):
            try:
                response = await self._rpc.http.request("DELETE", self._rpc.url, headers=headers)
                if response.status_code not in (200, 202, 204, 404, 405):
                    logger.warning("DELETE of the MCP session answered HTTP %s", response.status_code)
            except httpx.HTTPError as exc:
                logger.warning("could not end the MCP session: %s", exc)

    # --- requests --------------------------------------------------------------------------

    async def request(self, method: str, params: JSONObject, sink: NotificationSink | None) -> JSONObject:
        """Send one request in the session and return its ``result``."""
        await self.initialize()
        for attempt in range(2):
            message: JSONObject = {"jsonrpc": "2.0", "id": self._next_id(), "method": method, "params": params}
            try:
                return await self._call(message, sink)
            except SessionGoneError:
                if attempt:
                    raise StatusCodeError(
                        404, "the server forgot the MCP session again after a new initialize"
                    ) from None
                logger.info("the MCP session ended on the server; initializing a new one")
                async with self._lock:
                    self.protocol_version = None
                    await self._handshake()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _call(self, message: JSONObject, sink: NotificationSink | None) -> JSONObject:
        try:
            return await self._exchange(message, sink)
        except SessionGoneError:
            raise
        except BaseException as exc:
            # Abandoned mid-flight: tell the server so it stops waiting for us.
            if not isinstance(exc, McpError | InvalidServerResponseError | StatusCodeError):
                await self._cancel(message["id"], f"the client gave up: {type(exc).__name__}")
            raise

    def _headers(self) -> dict[str, str]:
        headers = {**self._extra_headers(), "Content-Type": "application/json", "Accept": ACCEPT}
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        return headers

    async def _exchange(self, message: JSONObject, sink: NotificationSink | None) -> JSONObject:
        request = self._rpc.http.build_request(
            "POST", self._rpc.url, content=encode_message(message), headers=self._headers()
        )
        response = await self._rpc.http.send(request, stream=True)
        try:
            if response.status_code == 404 and self.session_id is not None:
                raise SessionGoneError
            if message["method"] == "initialize" and response.is_success:
                self.session_id = response.headers.get(SESSION_HEADER) or None
            if response.is_success and media_type(response) == SSE_MEDIA:
                return await self._read_call_stream(response, message["id"], sink)
            return await self._rpc.read(response, message["id"], sink)
        finally:
            await response.aclose()

    async def _post_message(self, message: JSONObject) -> None:
        """POST a notification or a response; the server acknowledges it with 202."""
        response = await self._rpc.http.post(self._rpc.url, content=encode_message(message), headers=self._headers())
        if response.status_code == 404 and self.session_id is not None:
            raise SessionGoneError
        if not response.is_success:
            raise StatusCodeError(response.status_code, response.text)

    async def _cancel(self, request_id: RequestId, reason: str) -> None:
        note: JSONObject = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_GRACE):
            try:
                await self._post_message(note)
            except (httpx.HTTPError, StatusCodeError, SessionGoneError) as exc:
                logger.info("could not cancel request %r on the server: %s", request_id, exc)

    # --- the call's stream -----------------------------------------------------------------

    async def _read_call_stream(
        self, response: httpx.Response, request_id: RequestId, sink: NotificationSink | None
    ) -> JSONObject:
        """Read events until our response, answering the server's requests as they come.

        The answers run as tasks beside the reader, so a slow handler never stops the stream
        (the server may ask several questions of one round before it waits). The first handler
        that fails ends the call with its exception, unchanged.
        """
        failures: list[BaseException] = []
        outcome: list[JSONObject] = []
        tickets: list[int] = []
        try:
            async with anyio.create_task_group() as group:
                open_requests = [0]

                async def answer(message: JSONObject, ticket: int | None) -> None:
                    try:
                        await self._answer_server_request(message, ticket)
                    except Exception as exc:  # surfaced after the group, unwrapped
                        failures.append(exc)
                        group.cancel_scope.cancel()
                    finally:
                        open_requests[0] -= 1

                def on_request(message: JSONObject) -> None:
                    if open_requests[0] >= MAX_OPEN_SERVER_REQUESTS:
                        # One task per question: a server that asks without end would grow us
                        # without end. No person answers this many at once; end the call.
                        failures.append(too_many_requests(request_id))
                        group.cancel_scope.cancel()
                        return
                    open_requests[0] += 1
                    # The turn is taken on arrival: interactive handlers answer in stream order.
                    ticket = self._take_turn(message)
                    if ticket is not None:
                        tickets.append(ticket)
                    group.start_soon(answer, message, ticket)

                async def read() -> None:
                    try:
                        outcome.append(await self._follow(response, request_id, sink, on_request))
                    except Exception as exc:  # surfaced after the group, unwrapped
                        failures.append(exc)
                    group.cancel_scope.cancel()  # questions still open are moot once the call answered

                group.start_soon(read)
        finally:
            for ticket in tickets:  # turns whose question never got to run
                self._handlers.turns.release(ticket)
        if failures:
            raise failures[0]
        if not outcome:  # pragma: no cover - the group ends only through read() or a failure
            raise StreamClosedError(f"SSE stream of request {request_id!r} ended without a response")
        return outcome[0]

    async def _follow(
        self,
        response: httpx.Response,
        request_id: RequestId,
        sink: NotificationSink | None,
        on_request: Callable[[JSONObject], None],
    ) -> JSONObject:
        """The response to ``request_id`` from this stream and, if the server closes it early,
        from the streams resumed after it (GET with ``Last-Event-ID``)."""
        last_event_id: str | None = None
        retry_ms = DEFAULT_RETRY_MS
        idle = 0
        current = response  # the caller closes the first stream; the resumed ones are ours
        while True:
            seen_before = last_event_id
            try:
                async for event in iter_sse_events(stream_lines(current, request_id)):
                    if event.event_id is not None:
                        last_event_id = event.event_id
                    if event.retry_ms is not None:
                        retry_ms = min(event.retry_ms, MAX_RETRY_MS)
                    if not event.data:
                        continue  # a priming event: only its id matters
                    decoded = decode_sse_message(event.data)
                    if "method" in decoded:
                        if "id" in decoded:
                            on_request(decoded)
                        elif sink is not None:
                            await sink(decoded)
                        continue
                    result = interpret_reply(decoded, request_id, current.status_code)
                    if result is not None:
                        return result
            finally:
                if current is not response:
                    await current.aclose()
            if last_event_id is None:
                raise StreamClosedError(f"SSE stream ended before the response to request {request_id!r}")
            idle = idle + 1 if last_event_id == seen_before else 0
            if idle >= MAX_IDLE_RESUMES:
                raise StreamClosedError(
                    f"SSE stream of request {request_id!r} resumed {idle} times without a new event"
                )
            await anyio.sleep(retry_ms / 1000)
            current = await self._resume(last_event_id, request_id)

    async def _resume(self, last_event_id: str, request_id: RequestId) -> httpx.Response:
        try:
            return await self._open_stream({"Last-Event-ID": last_event_id})
        except StreamClosedError as exc:
            raise StreamClosedError(
                f"SSE stream of request {request_id!r} closed and could not be resumed: {exc}"
            ) from None

    async def _open_stream(self, extra_headers: Mapping[str, str]) -> httpx.Response:
        """GET an SSE stream of the session (the standalone one, or a resumed one with
        ``Last-Event-ID``); raises :class:`StreamClosedError` when the server offers none."""
        headers = {**self._headers(), "Accept": SSE_MEDIA, **extra_headers}
        headers.pop("Content-Type")
        request = self._rpc.http.build_request("GET", self._rpc.url, headers=headers)
        response = await self._rpc.http.send(request, stream=True)
        if response.is_success and media_type(response) == SSE_MEDIA:
            return response
        await response.aclose()
        raise StreamClosedError(f"GET answered HTTP {response.status_code}, not an SSE stream")

    # --- the session's GET stream ----------------------------------------------------------

    async def _open_listener(self) -> None:
        """Open the GET stream in the background and wait (briefly) until the server has it."""
        self._stop_listener()
        if self.spawn is None:
            return
        ready = anyio.Event()
        scope = anyio.CancelScope()
        self._listener = scope

        async def run() -> None:
            with scope:
                await self._listen(ready)
            ready.set()

        self.spawn(run)
        with anyio.move_on_after(_LISTENER_WAIT):
            await ready.wait()

    def _stop_listener(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            self._listener = None

    async def _listen(self, ready: anyio.Event) -> None:
        try:
            response = await self._open_stream({})
        except (httpx.HTTPError, StreamClosedError) as exc:
            logger.info("no GET stream for the MCP session: %s", exc)
            return
        try:
            ready.set()
            open_requests = [0]

            async def counted(message: JSONObject, ticket: int | None) -> None:
                try:
                    await self._answer_in_background(message, ticket)
                finally:
                    open_requests[0] -= 1

            async with anyio.create_task_group() as answers:
                async for event in iter_sse_events(stream_lines(response, "GET")):
                    message = decode_json(event.data) if event.data else None
                    if not isinstance(message, dict) or "method" not in message:
                        continue  # priming events; anything else has no place here
                    if "id" in message:
                        if open_requests[0] >= MAX_OPEN_SERVER_REQUESTS:
                            raise too_many_requests("GET")  # ends this stream, logged below
                        open_requests[0] += 1
                        answers.start_soon(counted, message, self._take_turn(message))
                    elif (sink := self._notifications()) is not None:
                        await sink(message)
        except (StreamClosedError, InvalidServerResponseError, httpx.HTTPError) as exc:
            logger.info("the MCP session's GET stream ended: %s", exc)
        finally:
            await response.aclose()

    async def _answer_in_background(self, message: JSONObject, ticket: int | None) -> None:
        """A request from the GET stream belongs to no call of ours: a handler that fails is
        reported to the server and logged, instead of failing a call."""
        try:
            await self._answer_server_request(message, ticket)
        except Exception as exc:
            logger.warning("answering the server's %r from the GET stream failed: %s", message.get("method"), exc)
            error: JSONObject = {"code": -32603, "message": f"the client could not answer: {type(exc).__name__}"}
            with contextlib.suppress(httpx.HTTPError, StatusCodeError, SessionGoneError):
                await self._post_message({"jsonrpc": "2.0", "id": message["id"], "error": error})

    # --- answering the server --------------------------------------------------------------

    def _take_turn(self, message: JSONObject) -> int | None:
        method = message.get("method")
        return self._handlers.take_turn(method) if isinstance(method, str) else None

    async def _answer_server_request(self, message: JSONObject, ticket: int | None = None) -> None:
        """Answer one server-to-client request with a POSTed JSON-RPC response; ``ticket`` is
        its turn among the interactive handlers (taken on arrival), released here in any case."""
        try:
            await self._answer_in_turn(message, ticket)
        finally:
            if ticket is not None:
                self._handlers.turns.release(ticket)

    async def _answer_in_turn(self, message: JSONObject, ticket: int | None) -> None:
        request_id = message["id"]
        method = message.get("method")
        reply: JSONObject = {"jsonrpc": "2.0", "id": request_id}
        if method == "ping":
            reply["result"] = {}
        else:
            try:
                reply["result"] = await self._run_handler(request_id, method, message.get("params"), ticket)
            except McpError as exc:
                # No handler for the method (-32601) or params that do not parse (-32602): the
                # same rule as an MRTR round, except that here the server is waiting, so it is told.
                reply["error"] = {"code": exc.code, "message": exc.message}
        try:
            await self._post_message(reply)
        except SessionGoneError:
            # Not a reason to re-initialise and resend: the call itself has started and may have
            # done its work. It ends here, with the status the server gave.
            raise StatusCodeError(
                404, "the server ended the MCP session while the call waited for our answer"
            ) from None

    async def _run_handler(self, request_id: RequestId, method: Any, params: Any, ticket: int | None) -> JSONObject:
        if not isinstance(method, str) or not (params is None or isinstance(params, dict)):
            raise McpError(-32600, "invalid server request")
        request = InputRequest(method=method, params=params)
        limit = self._options.input_required_config.round_timeout
        with anyio.move_on_after(limit if limit > 0 else math.inf) as scope:
            answers = await self._handlers.answer_all(
                {str(request_id): request}, round_number=next(self._asked), tickets={str(request_id): ticket}
            )
            return answers[str(request_id)]
        assert scope.cancelled_caught
        raise RoundTimeoutError(f"input handler exceeded round_timeout={limit}s", limit)
