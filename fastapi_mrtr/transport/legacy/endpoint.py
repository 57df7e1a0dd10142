"""The 2025-era side of the endpoint: MCP sessions opened by ``initialize``.

:class:`LegacyEndpoint` serves what :mod:`~fastapi_mrtr.transport.legacy.era` routes to it: the
``initialize`` that opens a session, then every POST, GET and DELETE naming the session. Requests
go to the same method handlers as modern ones, with a ``_meta`` built from the session (its
capabilities, client info and log level), and their results are shaped for the 2025 era
(:mod:`~fastapi_mrtr.transport.legacy.shapes`). ``tools/call``, ``prompts/get`` and
``resources/read`` run through the shim (:mod:`~fastapi_mrtr.transport.legacy.shim`), which asks
the client each question as a request on the call's stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.types import Receive, Scope, Send

from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.transport.http import SSE_HEADERS, send_empty, send_json, wait_disconnect
from fastapi_mrtr.transport.legacy.era import SESSION_HEADER
from fastapi_mrtr.transport.legacy.events import EventLog, parse_event_id
from fastapi_mrtr.transport.legacy.sessions import NOTIFICATION_STREAM, LegacySession, SessionRegistry
from fastapi_mrtr.transport.legacy.shapes import bad_request, legacy_error, legacy_result
from fastapi_mrtr.transport.legacy.shim import ClientAnswerError, LegacyShim, ShimStoppedError
from fastapi_mrtr.transport.legacy.streams import CallAnswer, follow
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LEGACY_SESSION_NOT_FOUND,
    METHOD_NOT_FOUND,
    McpError,
)
from fastapi_mrtr.wire.json_codec import encode
from fastapi_mrtr.wire.protocol import (
    LEGACY_PROTOCOL_VERSIONS,
    LOG_LEVELS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
    JSONObject,
    RequestId,
)

logger = logging.getLogger("fastapi_mrtr")

Handler = Callable[[RpcRequest], Awaitable[JSONObject]]
CALL_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})  # may ask the client
MODERN_ONLY_METHODS = frozenset({"server/discover", "subscriptions/listen"})
RESOURCE_UPDATED = "notifications/resources/updated"


def _message(request_id: RequestId | None, *, result: Any = None, error: JSONObject | None = None) -> JSONObject:
    if error is not None:
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class LegacyEndpoint:
    """MCP sessions of the 2025 era (2024-11-05 to 2025-11-25), served by the modern method handlers."""

    def __init__(
        self,
        options: ServerOptions,
        methods: Callable[[], Mapping[str, Handler]],
        capabilities: Callable[[], JSONObject],
        server_info: JSONObject,
    ) -> None:
        self.options = options
        self._methods = methods
        self._capabilities = capabilities
        self._server_info = server_info
        self.sessions = SessionRegistry(options.legacy_max_sessions, options.legacy_session_idle_timeout)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._builtins: dict[str, Callable[[LegacySession, JSONObject], JSONObject]] = {
            "ping": lambda session, params: {},
            "logging/setLevel": self._set_level,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
        }

    # --- POST ---------------------------------------------------------------------------------

    async def post(self, message: Any, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        self._loop = asyncio.get_running_loop()
        if not isinstance(message, dict):
            await self._refuse(send, 400, None, "Invalid request: send one JSON-RPC object per POST (no batches)")
            return
        request_id = message.get("id") if _valid_id(message.get("id")) else None
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:  # the era check sends only an initialize without a session here
            await self._initialize(message, request_id, headers, send)
            return
        session = self._session(session_id, headers)
        if session is None:
            await self._session_not_found(send, request_id)
            return
        version = headers.get("mcp-protocol-version")
        if version is not None and version.strip() != session.protocol_version:
            await self._refuse(
                send,
                400,
                request_id,
                f"Bad request: MCP-Protocol-Version {version.strip()!r} is not this session's "
                f"({session.protocol_version})",
            )
            return
        if message.get("jsonrpc") != "2.0":
            await self._refuse(send, 400, request_id, 'Invalid request: needs jsonrpc "2.0"')
            return
        method = message.get("method")
        if method is None and "id" in message:
            await self._client_answer(session, message, send)
            return
        if not isinstance(method, str) or not method:
            await self._refuse(send, 400, request_id, "Invalid request: needs a method")
            return
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            await self._refuse(send, 400, request_id, "Invalid request: params must be an object")
            return
        if "id" not in message:
            self._notification(session, method, params)
            await send_empty(send, 202)
            return
        if request_id is None:
            await self._refuse(send, 400, None, "Invalid request: id must be a string or an integer")
            return
        await self._request(session, request_id, method, params, scope, receive, send, headers)

    async def _initialize(
        self, message: JSONObject, request_id: RequestId | None, headers: dict[str, str], send: Send
    ) -> None:
        params = message.get("params")
        if request_id is None or "id" not in message:
            await self._refuse(send, 400, None, "Invalid request: initialize needs an id")
            return
        if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
            await send_json(
                send,
                400,
                encode(_message(request_id, error=_invalid_params("initialize needs params.protocolVersion"))),
            )
            return
        capabilities = params.get("capabilities")
        client_info = params.get("clientInfo")
        if not isinstance(capabilities, dict) or (client_info is not None and not isinstance(client_info, dict)):
            error = _invalid_params("initialize needs params.capabilities (an object) and params.clientInfo")
            await send_json(send, 400, encode(_message(request_id, error=error)))
            return
        requested = params["protocolVersion"]
        version = requested if requested in LEGACY_PROTOCOL_VERSIONS else LEGACY_PROTOCOL_VERSIONS[0]
        session = self.sessions.create(version, capabilities, client_info or {}, self._principal(headers))
        if session is None:
            error = {"code": INTERNAL_ERROR, "message": "Server busy: too many open MCP sessions; try again later"}
            await send_json(send, 503, encode(_message(request_id, error=error)), [(b"retry-after", b"5")])
            return
        result: JSONObject = {
            "protocolVersion": version,
            "capabilities": self.server_capabilities(),
            "serverInfo": self._server_info,
        }
        if self.options.instructions:
            result["instructions"] = self.options.instructions
        body = encode(_message(request_id, result=result))
        await send_json(send, 200, body, [(b"mcp-session-id", session.id.encode())])

    def server_capabilities(self) -> JSONObject:
        capabilities = {name: dict(value) for name, value in self._capabilities().items()}
        capabilities["logging"] = {}
        return capabilities

    def _notification(self, session: LegacySession, method: str, params: JSONObject) -> None:
        if method == "notifications/initialized":
            session.initialized = True
        elif method == "notifications/cancelled":
            task = session.calls.get(params.get("requestId"))  # type: ignore[arg-type]
            if task is not None:
                task.cancel()
        # Anything else (roots/list_changed, progress of the client's own) changes nothing here.

    async def _client_answer(self, session: LegacySession, message: JSONObject, send: Send) -> None:
        """A JSON-RPC response to one of the server's requests (an elicitation, sampling, roots)."""
        answer_id = message.get("id")
        result, error = message.get("result"), message.get("error")
        if (result is None) == (error is None) or not isinstance(result if error is None else error, dict):
            await self._refuse(send, 400, None, "Invalid request: a response needs a result object or an error object")
            return
        future = session.waiting.get(answer_id) if isinstance(answer_id, int) else None
        if future is None:
            if session.never_sent(answer_id):
                why = "this session sent no request with that id"
            else:
                why = session.closed_answer_ids.get(answer_id, "the server no longer waits for it")  # type: ignore[arg-type]
            await self._refuse(send, 400, None, f"Invalid request: no request {answer_id!r} awaits an answer: {why}")
            return
        future.set_result(message)
        session.close_request(answer_id, "it was answered already")  # type: ignore[arg-type]
        await send_empty(send, 202)

    async def _request(
        self,
        session: LegacySession,
        request_id: RequestId,
        method: str,
        params: JSONObject,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
    ) -> None:
        builtin = self._builtins.get(method)
        if builtin is not None:
            try:
                message = _message(request_id, result=builtin(session, params))
            except McpError as exc:
                message = _message(request_id, error=legacy_error(exc))
            await send_json(send, 200, encode(message))
            return
        handler = None if method in MODERN_ONLY_METHODS else self._methods().get(method)
        if handler is None:
            error = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
            await send_json(send, 200, encode(_message(request_id, error=error)))
            return
        if method == "initialize":
            await self._refuse(send, 400, request_id, "Invalid request: this session is already initialized")
            return
        if method in CALL_METHODS:
            await self._call(session, handler, request_id, method, params, scope, receive, send, headers)
            return
        rpc = self._rpc(session, request_id, method, params, scope, headers, receive)
        message = await _answer(handler, rpc)
        await send_json(send, 200, encode(message))

    async def _call(
        self,
        session: LegacySession,
        handler: Handler,
        request_id: RequestId,
        method: str,
        params: JSONObject,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
    ) -> None:
        if request_id in session.calls:
            await self._refuse(
                send, 400, request_id, f"Invalid request: request id {request_id!r} is already in flight"
            )
            return
        can_stream = "text/event-stream" in headers.get("accept", "")
        log = session.open_stream()
        channel = _CallChannel(session, log, can_stream)
        rpc = self._rpc(
            session, request_id, method, params, scope, headers, receive, channel.notify if can_stream else None
        )
        config = self.options.input_required_config
        shim = LegacyShim(config.round_timeout, config.max_rounds, session.protocol_version)
        answer: CallAnswer

        async def work() -> None:
            try:
                message = await _answer(
                    lambda r: shim.run(handler, r, channel), rpc, tool_errors=method == "tools/call"
                )
            except asyncio.CancelledError:
                log.finish()
                raise
            finally:
                session.calls.pop(request_id, None)
                channel.close()
            answer.result_message = message
            log.append(message)
            log.finish()

        task = asyncio.ensure_future(work())
        session.calls[request_id] = task
        answer = CallAnswer(log, task, primes=session.primes_streams, close_after=self._close_after(session))
        if await answer.send(receive, send, can_stream):
            session.drop_stream(log)

    def _close_after(self, session: LegacySession) -> float:
        # Only a client that knows SEP-1699 resumes a stream the server closed.
        return self.options.legacy_sse_close_after if session.primes_streams else 0.0

    def _rpc(
        self,
        session: LegacySession,
        request_id: RequestId,
        method: str,
        params: JSONObject,
        scope: Scope,
        headers: dict[str, str],
        receive: Receive,
        notify: Callable[[str, JSONObject], Awaitable[None]] | None = None,
    ) -> RpcRequest:
        """The request as the method handlers see it: a ``_meta`` built from the session."""
        legacy_meta = params.get("_meta")
        meta: JSONObject = {
            META_PROTOCOL_VERSION: PROTOCOL_VERSION,
            META_CLIENT_CAPABILITIES: session.client_capabilities,
            META_CLIENT_INFO: session.client_info,
            # The 2025 era sends log messages unless the client raised the level (logging/setLevel).
            META_LOG_LEVEL: session.log_level or "debug",
        }
        if isinstance(legacy_meta, dict) and "progressToken" in legacy_meta:
            meta["progressToken"] = legacy_meta["progressToken"]
        return RpcRequest(
            request_id, method, {**params, "_meta": meta}, meta, scope, headers, receive, notify=notify, legacy=True
        )

    # --- built-in methods of the 2025 era ------------------------------------------------------

    def _set_level(self, session: LegacySession, params: JSONObject) -> JSONObject:
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise McpError(INVALID_PARAMS, f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}")
        session.log_level = level
        return {}

    def _subscribe(self, session: LegacySession, params: JSONObject) -> JSONObject:
        session.subscriptions.add(self._subscription_uri(params))
        return {}

    def _unsubscribe(self, session: LegacySession, params: JSONObject) -> JSONObject:
        session.subscriptions.discard(self._subscription_uri(params))
        return {}

    def _subscription_uri(self, params: JSONObject) -> str:
        if "resources/read" not in self._methods():
            raise McpError(METHOD_NOT_FOUND, "Method not found: this server has no resources")
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise McpError(INVALID_PARAMS, "Invalid params: uri is required")
        return uri

    # --- GET and DELETE --------------------------------------------------------------------------

    async def get(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        """The session's stream of notifications, or the rest of a stream named by ``Last-Event-ID``."""
        session = self._session(headers[SESSION_HEADER], headers)
        if session is None:
            await self._session_not_found(send, None)
            return
        if "text/event-stream" not in headers.get("accept", ""):
            await self._refuse(send, 406, None, "Not acceptable: the GET stream is text/event-stream")
            return
        last_event_id = headers.get("last-event-id")
        if last_event_id is not None:
            parsed = parse_event_id(last_event_id)
            log = session.stream(parsed[0]) if parsed is not None else None
            if parsed is None or log is None:
                await self._refuse(
                    send, 400, None, f"Bad request: Last-Event-ID {last_event_id!r} names no stream of this session"
                )
                return
            await self._follow(session, log, parsed[1], receive, send)
            return
        if session.notification_reader:
            await self._refuse(send, 409, None, "Conflict: this session's GET stream is already open")
            return
        await self._follow(session, session.notifications, session.notifications.last_seq, receive, send)

    async def _follow(self, session: LegacySession, log: EventLog, after: int, receive: Receive, send: Send) -> None:
        notifications = log.stream_id == NOTIFICATION_STREAM
        session.notification_reader |= notifications
        disconnect = asyncio.ensure_future(wait_disconnect(receive))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            if session.primes_streams:
                await send({"type": "http.response.body", "body": log.priming_frame(after), "more_body": True})
            keepalive = self.options.subscription_keepalive_seconds
            if await follow(log, after, send, disconnect, keepalive=keepalive) and not notifications:
                session.drop_stream(log)  # a resumed call's stream, delivered to its end
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            disconnect.cancel()
            if notifications:
                session.notification_reader = False

    async def delete(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        session = self._session(headers[SESSION_HEADER], headers)
        if session is None:
            await self._session_not_found(send, None)
            return
        self.sessions.end(session)
        await send_empty(send, 200)

    # --- server notifications ------------------------------------------------------------------

    def publish(self, method: str, params: JSONObject | None = None) -> None:
        """Send a server notification to every session that wants it (on its GET stream)."""
        loop = self._loop
        if loop is None:
            return  # no session was ever opened
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._publish_now(method, dict(params or {}))
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self._publish_now, method, dict(params or {}))

    def _publish_now(self, method: str, params: JSONObject) -> None:
        for session in self.sessions:
            if method == RESOURCE_UPDATED and params.get("uri") not in session.subscriptions:
                continue
            session.notifications.append({"jsonrpc": "2.0", "method": method, "params": params})

    # --- helpers ---------------------------------------------------------------------------------

    def _principal(self, headers: dict[str, str]) -> str | None:
        return self.options.principal_resolver(headers)

    def _session(self, session_id: str, headers: dict[str, str]) -> LegacySession | None:
        session = self.sessions.get(session_id)
        if session is None or not session.belongs_to(self._principal(headers)):
            return None
        return session

    async def _session_not_found(self, send: Send, request_id: RequestId | None) -> None:
        error = {
            "code": LEGACY_SESSION_NOT_FOUND,
            "message": "Session not found: it ended or never existed; send initialize to open a new one",
        }
        await send_json(send, 404, encode(_message(request_id, error=error)))

    async def _refuse(self, send: Send, status: int, request_id: RequestId | None, message: str) -> None:
        await send_json(send, status, encode(_message(request_id, error=bad_request(message))))


class _CallChannel:
    """The shim's way to the client of one call: requests and notifications on the call's stream."""

    def __init__(self, session: LegacySession, log: EventLog, can_ask: bool) -> None:
        self._session = session
        self._log = log
        self.can_ask = can_ask
        self._asked: set[int] = set()

    async def ask(self, method: str, params: JSONObject) -> JSONObject:
        request_id, future = self._session.new_request()
        self._asked.add(request_id)
        self._log.append({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        try:
            message = await future
        finally:
            self._asked.discard(request_id)
            if request_id in self._session.waiting:
                self._session.close_request(
                    request_id, "the server stopped waiting (the round timed out or the call ended)"
                )
        if "error" in message:
            raise ClientAnswerError(method, message["error"])
        result = message.get("result")
        return result if isinstance(result, dict) else {}

    async def notify(self, method: str, params: JSONObject) -> None:
        self._log.append({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self) -> None:
        for request_id in list(self._asked):
            self._session.close_request(request_id, "the call ended")


async def _answer(handler: Handler, rpc: RpcRequest, *, tool_errors: bool = False) -> JSONObject:
    """The JSON-RPC response to ``rpc`` in 2025 shapes; never raises but for cancellation."""
    try:
        result = await handler(rpc)
    except ShimStoppedError as exc:
        if tool_errors:  # a tool call the shim had to end is the tool's failure, told to the model
            return _message(rpc.id, result={"content": [{"type": "text", "text": exc.message}], "isError": True})
        return _message(rpc.id, error=legacy_error(exc))
    except McpError as exc:
        return _message(rpc.id, error=legacy_error(exc))
    except Exception:
        logger.exception("unexpected error while handling %s", rpc.method)
        return _message(rpc.id, error={"code": INTERNAL_ERROR, "message": "Internal error"})
    return _message(rpc.id, result=legacy_result(result))


def _invalid_params(message: str) -> JSONObject:
    return {"code": INVALID_PARAMS, "message": f"Invalid params: {message}"}
