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
import contextlib
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive, Scope, Send

from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.state.sealing import StateKeyRing
from fastapi_mrtr.transport.callers import caller_key
from fastapi_mrtr.transport.http import send_empty, send_json
from fastapi_mrtr.transport.legacy.answers import ClientAnswers
from fastapi_mrtr.transport.legacy.builtins import SessionBuiltins
from fastapi_mrtr.transport.legacy.calls import CallChannel, Handler, answer_rpc, session_request
from fastapi_mrtr.transport.legacy.cluster import SessionCluster
from fastapi_mrtr.transport.legacy.era import SESSION_HEADER
from fastapi_mrtr.transport.legacy.events import EventLog
from fastapi_mrtr.transport.legacy.replies import (
    invalid_params,
    invalid_request,
    relay_down,
    rpc_message,
    streams_full,
    valid_id,
)
from fastapi_mrtr.transport.legacy.resume import SessionStreams
from fastapi_mrtr.transport.legacy.session_id import SessionInfo, SessionSealer
from fastapi_mrtr.transport.legacy.sessions import LiveSession, LiveSessions
from fastapi_mrtr.transport.legacy.shapes import legacy_error, operation
from fastapi_mrtr.transport.legacy.shim import LegacyShim
from fastapi_mrtr.transport.legacy.streams import CallAnswer
from fastapi_mrtr.wire.errors import METHOD_NOT_FOUND, McpError, SessionNotFoundError
from fastapi_mrtr.wire.json_codec import encode
from fastapi_mrtr.wire.protocol import (
    LEGACY_PROTOCOL_VERSIONS,
    JSONObject,
    RequestId,
)

logger = logging.getLogger("fastapi_mrtr")

CALL_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})  # may ask the client
MODERN_ONLY_METHODS = frozenset({"server/discover", "subscriptions/listen"})


class LegacyEndpoint:
    """MCP sessions of the 2025 era (2024-11-05 to 2025-11-25), served by the modern method handlers."""

    def __init__(
        self,
        options: ServerOptions,
        keys: StateKeyRing,
        methods: Callable[[], Mapping[str, Handler]],
        capabilities: Callable[[], JSONObject],
        server_info: JSONObject,
    ) -> None:
        self.options = options
        self._methods = methods
        self._capabilities = capabilities
        self._server_info = server_info
        self.ids = SessionSealer(keys, options.name, options.legacy_session_ttl)
        relay = options.relay
        round_timeout = options.input_required_config.round_timeout
        self.cluster = SessionCluster(
            relay,
            event_ttl=(round_timeout or 540.0) + 60.0,
            max_subscriptions=options.legacy_max_subscriptions,
            max_ended=options.legacy_max_ended_sessions,
        )
        self.live = LiveSessions(
            relay.replica_id if relay is not None else secrets.token_hex(4),
            options.legacy_max_streams,
            options.legacy_max_streams_per_caller,
        )
        self.answers = ClientAnswers(self.live, self.cluster)
        self.streams = SessionStreams(self.live, self.cluster, options.subscription_keepalive_seconds)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._builtins = SessionBuiltins(options, methods, self.cluster).methods

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """The serving loop, known from the app's startup: notifications can be delivered from then."""
        self._loop = loop

    def on_relay_reconnect(self) -> None:
        """Redis is back (maybe restarted empty): write back the waits of this replica's calls."""
        self.cluster.spawn(self.cluster.reassert())

    # --- POST ---------------------------------------------------------------------------------

    async def post(self, message: Any, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        self._loop = asyncio.get_running_loop()
        if not isinstance(message, dict):
            raise invalid_request("Invalid request: send one JSON-RPC object per POST (no batches)")
        request_id = message.get("id") if valid_id(message.get("id")) else None
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:  # the era check sends only an initialize without a session here
            await self._initialize(message, request_id, headers, send)
            return
        info, level = await self._session(session_id, headers, request_id)
        version = headers.get("mcp-protocol-version")
        if version is not None and version.strip() != info.protocol_version:
            raise invalid_request(
                f"Bad request: MCP-Protocol-Version {version.strip()!r} is not this session's "
                f"({info.protocol_version})",
                request_id,
            )
        if message.get("jsonrpc") != "2.0":
            raise invalid_request('Invalid request: needs jsonrpc "2.0"', request_id)
        method = message.get("method")
        if method is None and "id" in message:
            await self.answers.receive(info, message, send)
            return
        if not isinstance(method, str) or not method:
            raise invalid_request("Invalid request: needs a method", request_id)
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise invalid_request("Invalid request: params must be an object", request_id)
        if "id" not in message:
            await self._notification(info, method, params)
            await send_empty(send, 202)
            return
        if request_id is None:
            raise invalid_request("Invalid request: id must be a string or an integer")
        session = _Session(info, level, self._caller(scope, headers))
        await self._request(session, request_id, method, params, scope, receive, send, headers)

    async def _initialize(
        self, message: JSONObject, request_id: RequestId | None, headers: dict[str, str], send: Send
    ) -> None:
        params = message.get("params")
        if request_id is None or "id" not in message:
            raise invalid_request("Invalid request: initialize needs an id")
        if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
            raise invalid_params("initialize needs params.protocolVersion", request_id)
        capabilities = params.get("capabilities")
        client_info = params.get("clientInfo")
        if not isinstance(capabilities, dict) or (client_info is not None and not isinstance(client_info, dict)):
            raise invalid_params("initialize needs params.capabilities (an object) and params.clientInfo", request_id)
        requested = params["protocolVersion"]
        version = requested if requested in LEGACY_PROTOCOL_VERSIONS else LEGACY_PROTOCOL_VERSIONS[0]
        try:
            session_id, _ = self.ids.mint(version, capabilities, client_info or {}, self._principal(headers))
        except ValueError as exc:
            raise invalid_params(str(exc), request_id) from None
        result: JSONObject = {
            "protocolVersion": version,
            "capabilities": self.server_capabilities(),
            "serverInfo": self._server_info,
        }
        if self.options.instructions:
            result["instructions"] = self.options.instructions
        body = encode(rpc_message(request_id, result=result))
        await send_json(send, 200, body, [(b"mcp-session-id", session_id.encode())])

    def server_capabilities(self) -> JSONObject:
        capabilities = {name: dict(value) for name, value in self._capabilities().items()}
        capabilities["logging"] = {}
        return capabilities

    async def _notification(self, info: SessionInfo, method: str, params: JSONObject) -> None:
        if method == "notifications/cancelled":
            call_id = params.get("requestId")
            if not self._cancel(info.key, call_id) and self.cluster.relay is not None and valid_id(call_id):
                with contextlib.suppress(Exception):  # best effort, as cancellation is in the spec
                    await self.cluster.relay.broadcast({"t": "cancel", "s": info.key, "id": call_id})
        # notifications/initialized, roots/list_changed, the client's own progress: nothing to do.

    def _cancel(self, session_key: str, call_id: Any) -> bool:
        live = self.live.get(session_key)
        task = live.calls.get(call_id) if live is not None and valid_id(call_id) else None
        if task is None:
            return False
        task.cancel()
        return True

    async def _request(
        self,
        session: _Session,
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
                message = rpc_message(request_id, result=await builtin(session.info, params))
            except McpError as exc:
                message = rpc_message(request_id, error=legacy_error(exc, operation(method, params)))
            except Exception as exc:  # Redis
                raise relay_down(exc, request_id) from exc
            await send_json(send, 200, encode(message))
            return
        handler = None if method in MODERN_ONLY_METHODS else self._methods().get(method)
        if handler is None:
            # An answer, not a refusal: the 2025 era sends a method's errors in a 200 response.
            error = legacy_error(McpError(METHOD_NOT_FOUND, f"Method not found: {method}"))
            await send_json(send, 200, encode(rpc_message(request_id, error=error)))
            return
        if method == "initialize":
            raise invalid_request("Invalid request: this session is already initialized", request_id)
        if method in CALL_METHODS:
            await self._call(session, handler, request_id, method, params, scope, receive, send, headers)
            return
        rpc = session_request(session.info, session.log_level, request_id, method, params, scope, headers, receive)
        message = await answer_rpc(handler, rpc)
        await send_json(send, 200, encode(message))

    async def _call(
        self,
        session: _Session,
        handler: Handler,
        request_id: RequestId,
        method: str,
        params: JSONObject,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
    ) -> None:
        live = self.live.attach(session.info)
        if request_id in live.calls:
            raise invalid_request(f"Invalid request: request id {request_id!r} is already in flight", request_id)
        if not self.live.open_stream(session.caller):
            self.live.release(live)
            raise streams_full(self.live, session.caller, request_id)
        live.writers += 1
        can_stream = "text/event-stream" in headers.get("accept", "")
        log = EventLog(self.live.new_id())
        live.streams[log.stream_id] = log
        channel = CallChannel(
            self.live, self.cluster, self.options.input_required_config.round_timeout, live, log, can_stream
        )
        rpc = session_request(
            session.info,
            session.log_level,
            request_id,
            method,
            params,
            scope,
            headers,
            receive,
            channel.notify if can_stream else None,
        )
        config = self.options.input_required_config
        shim = LegacyShim(config.round_timeout, config.max_rounds, session.info.protocol_version)
        answer: CallAnswer
        writing = [True]  # the POST's response is still being written (it may deliver the log)

        async def work() -> None:
            try:
                message = await answer_rpc(
                    lambda r: shim.run(handler, r, channel), rpc, tool_errors=method == "tools/call"
                )
            except asyncio.CancelledError:
                log.finish()
                raise
            finally:
                live.calls.pop(request_id, None)
                channel.close()
                if not writing[0]:
                    self._after_stream(live, log)
            answer.result_message = message
            log.append(message)
            log.finish()
            if not writing[0]:  # the response ended before the call: a resumer may still want it
                self._after_stream(live, log)

        task = asyncio.ensure_future(work())
        live.calls[request_id] = task
        # The slot is the call's, not the response's: a call whose stream was closed for the
        # client to resume (legacy_sse_close_after) still waits, and still counts.
        task.add_done_callback(lambda _: self.live.close_stream(session.caller))
        answer = CallAnswer(
            log,
            task,
            primes=session.info.primes_streams,
            close_after=self._close_after(session.info),
            on_stream=lambda: self.cluster.mirror(session.info.key, log, request_id),
        )
        try:
            if await answer.send(receive, send, can_stream):
                live.streams.pop(log.stream_id, None)
        finally:
            writing[0] = False
            live.writers -= 1
            self._after_stream(live, log)

    def _after_stream(self, live: LiveSession, log: EventLog) -> None:
        """Forget a finished stream nobody can still need, then the session if nothing else runs."""
        if log.finished and log.stream_id in live.streams and self._loop is not None and not log.expiring:
            # Undelivered: a client whose stream broke may resume it for a while; then it goes.
            log.expiring = True
            self._loop.call_later(self.cluster.event_ttl, self._drop_stream, live, log)
        self.live.release(live)

    def _drop_stream(self, live: LiveSession, log: EventLog) -> None:
        live.streams.pop(log.stream_id, None)
        self.live.release(live)

    def _close_after(self, info: SessionInfo) -> float:
        # Only a client that knows SEP-1699 resumes a stream the server closed.
        return self.options.legacy_sse_close_after if info.primes_streams else 0.0

    # --- GET and DELETE --------------------------------------------------------------------------

    async def get(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        """The session's stream of notifications, or the rest of a stream named by ``Last-Event-ID``."""
        self._loop = asyncio.get_running_loop()
        info, _ = await self._session(headers[SESSION_HEADER], headers, None)
        if "text/event-stream" not in headers.get("accept", ""):
            raise invalid_request("Not acceptable: the GET stream is text/event-stream", http_status=406)
        await self.streams.serve(info, self._caller(scope, headers), headers, receive, send)

    async def delete(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        info, _ = await self._session(headers[SESSION_HEADER], headers, None)
        try:
            await self.cluster.end(info)
        except Exception as exc:
            raise relay_down(exc) from exc
        self.live.end(info.key)
        await send_empty(send, 200)

    async def aclose(self) -> None:
        """Shutdown: cancel this process's calls, and let their clean-up reach the relay."""
        calls = [task for live in self.live for task in live.calls.values()]
        self.live.end_all()
        if calls:
            await asyncio.wait(calls, timeout=2.0)
        await self.cluster.drain()

    # --- the relay and server notifications ------------------------------------------------------

    def on_relay_message(self, message: JSONObject) -> None:
        """What another replica handed to this one: an answer, a cancellation, a session's end."""
        kind, session_key = message.get("t"), message.get("s")
        if not isinstance(session_key, str):
            return
        if kind == "answer" and isinstance(message.get("id"), str) and isinstance(message.get("m"), dict):
            self.answers.deliver(session_key, message["id"], message["m"])
        elif kind == "cancel":
            self._cancel(session_key, message.get("id"))
        elif kind == "end":
            self.live.end(session_key)

    def publish(self, method: str, params: JSONObject | None = None) -> None:
        """Send a server notification to every session here that wants it (on its GET stream)."""
        loop = self._loop
        if loop is None:
            return  # no session was ever served here
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        notification = {"jsonrpc": "2.0", "method": method, "params": dict(params or {})}
        if running is loop:
            self.cluster.spawn(self.streams.deliver(notification))
        elif not loop.is_closed():
            loop.call_soon_threadsafe(lambda: self.cluster.spawn(self.streams.deliver(notification)))

    # --- helpers ---------------------------------------------------------------------------------

    def _principal(self, headers: dict[str, str]) -> str | None:
        return self.options.principal_resolver(headers)

    def _caller(self, scope: Scope, headers: dict[str, str]) -> str:
        """Who holds a stream, for the per-caller bound: the client address (the principal is
        only a header, which a client could make up for each stream)."""
        return caller_key(scope)

    async def _session(
        self, session_id: str, headers: dict[str, str], request_id: RequestId | None
    ) -> tuple[SessionInfo, str | None]:
        """The session a request names and its log level; refused when it is not (or no longer) one."""
        info = self.ids.open(session_id, self._principal(headers))
        if info is None:
            raise SessionNotFoundError(request_id)
        try:
            ended, level = await self.cluster.facts(info)
        except Exception as exc:
            raise relay_down(exc, request_id) from exc
        if ended:
            raise SessionNotFoundError(request_id)
        return info, level


@dataclass(frozen=True)
class _Session:
    """One request's view of its session: what the id says, the level it set, who is asking."""

    info: SessionInfo
    log_level: str | None
    caller: str
