"""The 2025-era side of the endpoint: MCP sessions opened by ``initialize``, by HTTP verb.

:class:`LegacyEndpoint` serves what :mod:`~fastapi_mrtr.transport.legacy.era` routes to it: the
``initialize`` that opens a session, then every POST, GET and DELETE naming the session. It opens
the session a request names (refused 404 when it ended, expired or never existed) and hands the
request on: a POST to :mod:`~fastapi_mrtr.transport.legacy.requests` (methods, calls through the
shim, the client's answers), a GET to :mod:`~fastapi_mrtr.transport.legacy.resume` (streams). A
refusal is raised, never sent here: ``RpcEndpoint.__call__`` answers every one.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from starlette.types import Receive, Scope, Send

from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.state.sealing import StateKeyRing
from fastapi_mrtr.telemetry.conventions import SESSION_END, SESSION_STREAM
from fastapi_mrtr.transport.callers import caller_key
from fastapi_mrtr.transport.http import send_empty
from fastapi_mrtr.transport.legacy.cluster import SessionCluster
from fastapi_mrtr.transport.legacy.era import SESSION_HEADER
from fastapi_mrtr.transport.legacy.replies import invalid_request, relay_down, valid_id
from fastapi_mrtr.transport.legacy.requests import SessionRequests
from fastapi_mrtr.transport.legacy.resume import SessionStreams
from fastapi_mrtr.transport.legacy.session_id import SessionInfo, SessionSealer
from fastapi_mrtr.transport.legacy.sessions import LiveSessions
from fastapi_mrtr.transport.legacy.shapes import Handler
from fastapi_mrtr.transport.tracing import nothing, session_ended, session_verb, traced
from fastapi_mrtr.wire.errors import SessionNotFoundError
from fastapi_mrtr.wire.protocol import JSONObject, RequestId


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
        self.requests = SessionRequests(options, self.ids, methods, capabilities, server_info, self.live, self.cluster)
        self.answers = self.requests.answers
        self.streams = SessionStreams(self.live, self.cluster, options.subscription_keepalive_seconds)
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """The serving loop, known from the app's startup: notifications can be delivered from then."""
        self._loop = loop

    def on_relay_reconnect(self) -> None:
        """Redis is back (maybe restarted empty): write back the waits of this replica's calls."""
        self.cluster.spawn(self.cluster.reassert())

    def server_capabilities(self) -> JSONObject:
        return self.requests.server_capabilities()

    # --- POST ---------------------------------------------------------------------------------

    async def post(self, message: Any, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        self._loop = asyncio.get_running_loop()
        if isinstance(message, list):
            raise invalid_request("Invalid request: send one JSON-RPC object per POST (no batches)")
        if not isinstance(message, dict):
            raise invalid_request("Invalid request: expected a JSON-RPC object")
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:  # the era check sends only an initialize without a session here
            params = message.get("params")
            version = params.get("protocolVersion") if isinstance(params, dict) else None
            await traced(
                self.options.telemetry, "initialize", message.get("id"), params if isinstance(params, dict) else {},
                scope, lambda: self.requests.initialize(message, headers, send), nothing,
                protocol_version=version if isinstance(version, str) else None,
            )  # fmt: skip
            return
        request_id = message.get("id") if valid_id(message.get("id")) else None
        info, level = await self._session(session_id, headers, request_id)
        await self.requests.handle(info, level, message, scope, receive, send, headers)

    # --- GET and DELETE --------------------------------------------------------------------------

    async def get(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        """The session's stream of notifications, or the rest of a stream named by ``Last-Event-ID``."""
        self._loop = asyncio.get_running_loop()
        info, _ = await self._session(headers[SESSION_HEADER], headers, None)
        if "text/event-stream" not in headers.get("accept", ""):
            raise invalid_request("Not acceptable: the GET stream is text/event-stream", http_status=406)
        await session_verb(
            self.options.telemetry, SESSION_STREAM, scope,
            lambda: self.streams.serve(info, caller_key(scope), headers, receive, send),
            protocol_version=info.protocol_version, session_id=info.key, resumed="last-event-id" in headers,
        )  # fmt: skip

    async def delete(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        info, _ = await self._session(headers[SESSION_HEADER], headers, None)
        await session_verb(
            self.options.telemetry, SESSION_END, scope, lambda: self._end(info, send),
            protocol_version=info.protocol_version, session_id=info.key,
        )  # fmt: skip

    async def _end(self, info: SessionInfo, send: Send) -> None:
        try:
            await self.cluster.end(info)
        except Exception as exc:
            raise relay_down(exc) from exc
        self.live.end(info.key)
        session_ended(self.options.telemetry, info.issued_at, info.protocol_version)
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
            self.live.cancel(session_key, message.get("id"))
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

    # --- the session a request names ------------------------------------------------------------

    async def _session(
        self, session_id: str, headers: dict[str, str], request_id: RequestId | None
    ) -> tuple[SessionInfo, str | None]:
        """The session a request names and its log level; refused when it is not (or no longer) one."""
        info = self.ids.open(session_id, self.options.principal_resolver(headers))
        if info is None:
            raise SessionNotFoundError(request_id)
        try:
            ended, level = await self.cluster.facts(info)
        except Exception as exc:
            raise relay_down(exc, request_id) from exc
        if ended:
            raise SessionNotFoundError(request_id)
        return info, level
