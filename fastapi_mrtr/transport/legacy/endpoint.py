"""The 2025-era side of the endpoint: MCP sessions opened by ``initialize``.

:class:`LegacyEndpoint` serves what :mod:`~fastapi_mrtr.transport.legacy.era` routes to it, one
method per HTTP verb, and holds the parts that do the work: ``initialize`` opens a session
(:mod:`~fastapi_mrtr.transport.legacy.initialize`); every later POST names it and is served by
:mod:`~fastapi_mrtr.transport.legacy.requests` (calls that may ask the client by
:mod:`~fastapi_mrtr.transport.legacy.calls`, answers to the server's questions by
:mod:`~fastapi_mrtr.transport.legacy.answers`); a GET follows a stream
(:mod:`~fastapi_mrtr.transport.legacy.resume`); a DELETE ends the session. It also takes what
other replicas hand over through the relay, and delivers server notifications.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from starlette.types import Receive, Scope, Send

from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.state.sealing import StateKeyRing
from fastapi_mrtr.transport.callers import caller_key
from fastapi_mrtr.transport.http import send_empty, send_json
from fastapi_mrtr.transport.legacy.answers import ClientAnswers
from fastapi_mrtr.transport.legacy.builtins import SessionBuiltins
from fastapi_mrtr.transport.legacy.calls import SessionCalls, SessionView
from fastapi_mrtr.transport.legacy.cluster import SessionCluster
from fastapi_mrtr.transport.legacy.era import SESSION_HEADER
from fastapi_mrtr.transport.legacy.initialize import SessionOpener
from fastapi_mrtr.transport.legacy.replies import invalid_request, relay_down, valid_id
from fastapi_mrtr.transport.legacy.requests import SessionRequests
from fastapi_mrtr.transport.legacy.resume import SessionStreams
from fastapi_mrtr.transport.legacy.session_id import SessionSealer
from fastapi_mrtr.transport.legacy.sessions import LiveSessions
from fastapi_mrtr.transport.legacy.shapes import Handler
from fastapi_mrtr.wire.errors import SessionNotFoundError
from fastapi_mrtr.wire.json_codec import encode
from fastapi_mrtr.wire.protocol import JSONObject, RequestId


class LegacyEndpoint:
    """MCP sessions of the 2025 era (2024-11-05 to 2025-11-25), served by the modern method handlers.

    Each verb finds its session (or raises :class:`~fastapi_mrtr.wire.errors.SessionNotFoundError`)
    and hands it to the part that serves it; every refusal is raised, for
    ``RpcEndpoint.__call__`` to answer.
    """

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
        self.opener = SessionOpener(options, self.ids, capabilities, server_info)
        self.answers = ClientAnswers(self.live, self.cluster)
        self.calls = SessionCalls(options, self.live, self.cluster)
        builtins = SessionBuiltins(options, methods, self.cluster).methods
        self.requests = SessionRequests(methods, builtins, self.calls, self.answers, self.cluster)
        self.streams = SessionStreams(self.live, self.cluster, options.subscription_keepalive_seconds)
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """The serving loop, known from the app's startup: notifications can be delivered from then."""
        self._loop = loop

    def on_relay_reconnect(self) -> None:
        """Redis is back (maybe restarted empty): write back the waits of this replica's calls."""
        self.cluster.spawn(self.cluster.reassert())

    def server_capabilities(self) -> JSONObject:
        return self.opener.server_capabilities()

    # --- the three verbs ---------------------------------------------------------------------------

    async def post(self, message: Any, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        """``initialize`` (the era check sends only one without a session here), or a session's message."""
        self._loop = asyncio.get_running_loop()
        if not isinstance(message, dict):
            raise invalid_request("Invalid request: send one JSON-RPC object per POST (no batches)")
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:
            opened = self.opener.open(message, self._principal(headers))
            body = encode(opened.response)
            await send_json(send, 200, body, [(b"mcp-session-id", opened.session_id.encode())])
            return
        request_id = message.get("id") if valid_id(message.get("id")) else None
        session = await self._session(session_id, scope, headers, request_id)
        await self.requests.post(session, message, scope, receive, send, headers)

    async def get(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        """The session's stream of notifications, or the rest of a stream named by ``Last-Event-ID``."""
        self._loop = asyncio.get_running_loop()
        session = await self._session(headers[SESSION_HEADER], scope, headers, None)
        if "text/event-stream" not in headers.get("accept", ""):
            raise invalid_request("Not acceptable: the GET stream is text/event-stream", http_status=406)
        await self.streams.serve(session.info, session.caller, headers, receive, send)

    async def delete(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        """End the session: here, and (with a relay) for every replica until its id expires."""
        info = (await self._session(headers[SESSION_HEADER], scope, headers, None)).info
        try:
            await self.cluster.end(info)
        except Exception as exc:
            raise relay_down(exc) from exc
        self.live.end(info.key)
        await send_empty(send, 200)

    async def _session(
        self, session_id: str, scope: Scope, headers: dict[str, str], request_id: RequestId | None
    ) -> SessionView:
        """The session a request names, its log level and who asks; refused when it is not (or no longer) one."""
        info = self.ids.open(session_id, self._principal(headers))
        if info is None:
            raise SessionNotFoundError(request_id)
        try:
            ended, level = await self.cluster.facts(info)
        except Exception as exc:
            raise relay_down(exc, request_id) from exc
        if ended:
            raise SessionNotFoundError(request_id)
        # Who holds a stream, for the per-caller bound: the client address (the principal is only
        # a header, which a client could make up for each stream).
        return SessionView(info, level, caller_key(scope))

    def _principal(self, headers: dict[str, str]) -> str | None:
        return self.options.principal_resolver(headers)

    # --- the relay, server notifications, shutdown ---------------------------------------------------

    def on_relay_message(self, message: JSONObject) -> None:
        """What another replica handed to this one: an answer, a cancellation, a session's end."""
        kind, session_key = message.get("t"), message.get("s")
        if not isinstance(session_key, str):
            return
        if kind == "answer" and isinstance(message.get("id"), str) and isinstance(message.get("m"), dict):
            self.answers.deliver(session_key, message["id"], message["m"])
        elif kind == "cancel":
            self.calls.cancel(session_key, message.get("id"))
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

    async def aclose(self) -> None:
        """Shutdown: cancel this process's calls, and let their clean-up reach the relay."""
        calls = [task for live in self.live for task in live.calls.values()]
        self.live.end_all()
        if calls:
            await asyncio.wait(calls, timeout=2.0)
        await self.cluster.drain()
