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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive, Scope, Send

from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.state.sealing import StateKeyRing
from fastapi_mrtr.transport.http import SSE_HEADERS, send_empty, send_json, wait_disconnect
from fastapi_mrtr.transport.legacy.cluster import SessionCluster, relayed_stream
from fastapi_mrtr.transport.legacy.era import SESSION_HEADER
from fastapi_mrtr.transport.legacy.events import EventLog, parse_event_id
from fastapi_mrtr.transport.legacy.session_id import SessionInfo, SessionSealer
from fastapi_mrtr.transport.legacy.sessions import NOTIFICATION_STREAM, LiveSession, LiveSessions
from fastapi_mrtr.transport.legacy.shapes import bad_request, legacy_error, legacy_result, operation
from fastapi_mrtr.transport.legacy.shim import ClientAnswerError, LegacyShim, ShimStoppedError
from fastapi_mrtr.transport.legacy.streams import CallAnswer, follow, follow_relayed
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
        self.cluster = SessionCluster(relay, event_ttl=(round_timeout or 540.0) + 60.0)
        self.live = LiveSessions(
            relay.replica_id if relay is not None else secrets.token_hex(4),
            options.legacy_max_streams,
            options.legacy_max_streams_per_caller,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._builtins: dict[str, Callable[[SessionInfo, JSONObject], Awaitable[JSONObject]]] = {
            "ping": self._ping,
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
        found = await self._session(session_id, headers, send, request_id)
        if found is None:
            return
        info, level = found
        version = headers.get("mcp-protocol-version")
        if version is not None and version.strip() != info.protocol_version:
            await self._refuse(
                send,
                400,
                request_id,
                f"Bad request: MCP-Protocol-Version {version.strip()!r} is not this session's "
                f"({info.protocol_version})",
            )
            return
        if message.get("jsonrpc") != "2.0":
            await self._refuse(send, 400, request_id, 'Invalid request: needs jsonrpc "2.0"')
            return
        method = message.get("method")
        if method is None and "id" in message:
            await self._client_answer(info, message, send)
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
            await self._notification(info, method, params)
            await send_empty(send, 202)
            return
        if request_id is None:
            await self._refuse(send, 400, None, "Invalid request: id must be a string or an integer")
            return
        session = _Session(info, level, self._caller(scope, headers))
        await self._request(session, request_id, method, params, scope, receive, send, headers)

    async def _initialize(
        self, message: JSONObject, request_id: RequestId | None, headers: dict[str, str], send: Send
    ) -> None:
        params = message.get("params")
        if request_id is None or "id" not in message:
            await self._refuse(send, 400, None, "Invalid request: initialize needs an id")
            return
        if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
            await self._invalid_params(send, request_id, "initialize needs params.protocolVersion")
            return
        capabilities = params.get("capabilities")
        client_info = params.get("clientInfo")
        if not isinstance(capabilities, dict) or (client_info is not None and not isinstance(client_info, dict)):
            await self._invalid_params(
                send, request_id, "initialize needs params.capabilities (an object) and params.clientInfo"
            )
            return
        requested = params["protocolVersion"]
        version = requested if requested in LEGACY_PROTOCOL_VERSIONS else LEGACY_PROTOCOL_VERSIONS[0]
        try:
            session_id, _ = self.ids.mint(version, capabilities, client_info or {}, self._principal(headers))
        except ValueError as exc:
            await self._invalid_params(send, request_id, str(exc))
            return
        result: JSONObject = {
            "protocolVersion": version,
            "capabilities": self.server_capabilities(),
            "serverInfo": self._server_info,
        }
        if self.options.instructions:
            result["instructions"] = self.options.instructions
        body = encode(_message(request_id, result=result))
        await send_json(send, 200, body, [(b"mcp-session-id", session_id.encode())])

    def server_capabilities(self) -> JSONObject:
        capabilities = {name: dict(value) for name, value in self._capabilities().items()}
        capabilities["logging"] = {}
        return capabilities

    async def _notification(self, info: SessionInfo, method: str, params: JSONObject) -> None:
        if method == "notifications/cancelled":
            call_id = params.get("requestId")
            if not self._cancel(info.key, call_id) and self.cluster.relay is not None and _valid_id(call_id):
                with contextlib.suppress(Exception):  # best effort, as cancellation is in the spec
                    await self.cluster.relay.broadcast({"t": "cancel", "s": info.key, "id": call_id})
        # notifications/initialized, roots/list_changed, the client's own progress: nothing to do.

    def _cancel(self, session_key: str, call_id: Any) -> bool:
        live = self.live.get(session_key)
        task = live.calls.get(call_id) if live is not None and _valid_id(call_id) else None
        if task is None:
            return False
        task.cancel()
        return True

    async def _client_answer(self, info: SessionInfo, message: JSONObject, send: Send) -> None:
        """A JSON-RPC response to one of the server's requests (an elicitation, sampling, roots)."""
        answer_id = message.get("id")
        result, error = message.get("result"), message.get("error")
        if (result is None) == (error is None) or not isinstance(result if error is None else error, dict):
            why = "a response needs a result object or an error object"
            logger.warning("malformed response %r from a 2025-era client: %s", answer_id, why)
            # A call waits for this id: end it now with the reason, rather than after round_timeout.
            ended = isinstance(answer_id, str) and self._deliver_answer(
                info.key,
                answer_id,
                {"id": answer_id, "error": {"code": INVALID_PARAMS, "message": f"malformed response: {why}"}},
            )
            await self._refuse(
                send, 400, None, f"Invalid request: {why}" + ("; the call waiting for it was ended" if ended else "")
            )
            return
        asker = LiveSessions.replica_of(answer_id)
        if asker is None or not isinstance(answer_id, str):
            await self._refuse(send, 400, None, f"Invalid request: this session sent no request {answer_id!r}")
            return
        if self.cluster.relay is not None:
            await self._relay_answer(info, answer_id, message, send)
            return
        if self._deliver_answer(info.key, answer_id, message):
            await send_empty(send, 202)
        elif asker != self.live.replica_id:
            await self._refuse(
                send,
                421,
                None,
                f"Misdirected request: request {answer_id!r} was sent by another server replica, which waits "
                "for this answer; route each session to one replica (by Mcp-Session-Id) or give the replicas "
                "a relay (MRTR_REDIS_URL)",
            )
        else:
            await self._not_awaited(send, info.key, answer_id)

    async def _relay_answer(self, info: SessionInfo, answer_id: str, message: JSONObject, send: Send) -> None:
        """Claim the wait for ``answer_id`` in the relay (one answer wins), then hand it to its asker."""
        try:
            owner = await self.cluster.claim(info.key, answer_id)
            if owner is None:
                await self._not_awaited(send, info.key, answer_id)
                return
            if owner.get("r") == self.live.replica_id:
                delivered = self._deliver_answer(info.key, answer_id, message)
            else:
                handover = {"t": "answer", "s": info.key, "id": answer_id, "m": message}
                delivered = await self.cluster.relay.send(str(owner.get("r")), handover)  # type: ignore[union-attr]
        except Exception as exc:  # Redis
            await self._relay_down(send, None, exc)
            return
        if delivered:
            await send_empty(send, 202)
            return
        error = {
            "code": INTERNAL_ERROR,
            "message": f"Server unavailable: the replica that sent request {answer_id!r} stopped; its call is lost, "
            "call the tool again",
        }
        await send_json(send, 503, encode(_message(None, error=error)))

    def _deliver_answer(self, session_key: str, answer_id: str, message: JSONObject) -> bool:
        live = self.live.get(session_key)
        future = live.waiting.get(answer_id) if live is not None else None
        if live is None or future is None or future.done():
            return False
        future.set_result(message)
        self.live.close_request(live, answer_id, "it was answered already")
        return True

    async def _not_awaited(self, send: Send, session_key: str, answer_id: str) -> None:
        why = self.live.why_closed(session_key, answer_id) or (
            "it was answered already, the server stopped waiting, or this session sent no such request"
        )
        await self._refuse(send, 400, None, f"Invalid request: no request {answer_id!r} awaits an answer: {why}")

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
                message = _message(request_id, result=await builtin(session.info, params))
            except McpError as exc:
                message = _message(request_id, error=legacy_error(exc, operation(method, params)))
            except Exception as exc:  # Redis
                await self._relay_down(send, request_id, exc)
                return
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
            await self._refuse(
                send, 400, request_id, f"Invalid request: request id {request_id!r} is already in flight"
            )
            return
        if not self.live.open_stream(session.caller):
            self.live.release(live)
            await self._streams_full(send, request_id, session.caller)
            return
        live.writers += 1
        can_stream = "text/event-stream" in headers.get("accept", "")
        log = EventLog(self.live.new_id())
        live.streams[log.stream_id] = log
        channel = _CallChannel(self, live, log, can_stream)
        rpc = self._rpc(
            session, request_id, method, params, scope, headers, receive, channel.notify if can_stream else None
        )
        config = self.options.input_required_config
        shim = LegacyShim(config.round_timeout, config.max_rounds, session.info.protocol_version)
        answer: CallAnswer
        writing = [True]  # the POST's response is still being written (it may deliver the log)

        async def work() -> None:
            try:
                message = await _answer(
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
            self.live.close_stream(session.caller)
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

    def _rpc(
        self,
        session: _Session,
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
            META_CLIENT_CAPABILITIES: session.info.client_capabilities,
            META_CLIENT_INFO: session.info.client_info,
            # The 2025 era sends log messages unless the client raised the level (logging/setLevel).
            META_LOG_LEVEL: session.log_level or session.info.log_level or "debug",
        }
        if isinstance(legacy_meta, dict) and "progressToken" in legacy_meta:
            meta["progressToken"] = legacy_meta["progressToken"]
        return RpcRequest(
            request_id, method, {**params, "_meta": meta}, meta, scope, headers, receive, notify=notify, legacy=True
        )

    # --- built-in methods of the 2025 era ------------------------------------------------------

    async def _ping(self, info: SessionInfo, params: JSONObject) -> JSONObject:
        return {}

    async def _set_level(self, info: SessionInfo, params: JSONObject) -> JSONObject:
        level = params.get("level")
        if not isinstance(level, str) or level not in LOG_LEVELS:
            raise McpError(INVALID_PARAMS, f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}")
        await self.cluster.set_level(info, level)
        return {}

    async def _subscribe(self, info: SessionInfo, params: JSONObject) -> JSONObject:
        await self.cluster.subscribe(info, self._subscription_uri(params))
        return {}

    async def _unsubscribe(self, info: SessionInfo, params: JSONObject) -> JSONObject:
        await self.cluster.unsubscribe(info, self._subscription_uri(params))
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
        self._loop = asyncio.get_running_loop()
        found = await self._session(headers[SESSION_HEADER], headers, send, None)
        if found is None:
            return
        info = found[0]
        if "text/event-stream" not in headers.get("accept", ""):
            await self._refuse(send, 406, None, "Not acceptable: the GET stream is text/event-stream")
            return
        caller = self._caller(scope, headers)
        last_event_id = headers.get("last-event-id")
        parsed = parse_event_id(last_event_id) if last_event_id is not None else None
        if last_event_id is not None and parsed is None:
            await self._refuse(send, 400, None, f"Bad request: Last-Event-ID {last_event_id!r} is not one of ours")
            return
        live = self.live.attach(info)
        if parsed is not None and parsed[0] != NOTIFICATION_STREAM:
            log = live.stream(parsed[0])
            owner = LiveSessions.replica_of(parsed[0])
            if log is None and (owner is None or owner == self.live.replica_id or self.cluster.relay is None):
                self.live.release(live)
                why = (
                    "names no stream of this session"
                    if owner in (None, self.live.replica_id)
                    else (
                        "names a stream of another server replica; route each session to one replica "
                        "(by Mcp-Session-Id) or give the replicas a relay (MRTR_REDIS_URL)"
                    )
                )
                status = 421 if owner not in (None, self.live.replica_id) else 400
                await self._refuse(send, status, None, f"Bad request: Last-Event-ID {last_event_id!r} {why}")
                return
        elif live.notification_reader:
            await self._refuse(send, 409, None, "Conflict: this session's GET stream is already open")
            return
        if not self.live.open_stream(caller):
            self.live.release(live)
            await self._streams_full(send, None, caller)
            return
        live.writers += 1
        try:
            if parsed is None or parsed[0] == NOTIFICATION_STREAM:
                after = live.notifications.last_seq if parsed is None else min(parsed[1], live.notifications.last_seq)
                await self._follow(live, live.notifications, after, receive, send)
            elif log is not None:
                await self._follow(live, log, parsed[1], receive, send)
            else:
                await self._follow_relayed(info, parsed[0], str(owner), parsed[1], receive, send)
        finally:
            live.writers -= 1
            self.live.close_stream(caller)
            self.live.release(live)

    async def _follow(self, live: LiveSession, log: EventLog, after: int, receive: Receive, send: Send) -> None:
        notifications = log.stream_id == NOTIFICATION_STREAM
        live.notification_reader |= notifications
        disconnect = asyncio.ensure_future(wait_disconnect(receive))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            if live.info.primes_streams:
                await send({"type": "http.response.body", "body": log.priming_frame(after), "more_body": True})
            keepalive = self.options.subscription_keepalive_seconds
            if await follow(log, after, send, disconnect, keepalive=keepalive) and not notifications:
                live.streams.pop(log.stream_id, None)  # a resumed call's stream, delivered to its end
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            disconnect.cancel()
            if notifications:
                live.notification_reader = False

    async def _follow_relayed(
        self, info: SessionInfo, stream_id: str, owner: str, after: int, receive: Receive, send: Send
    ) -> None:
        """Resume another replica's call stream from the relay's copy of its events."""
        relay = self.cluster.relay
        assert relay is not None
        name = relayed_stream(info.key, stream_id)
        try:
            known = await relay.exists(name)
        except Exception as exc:
            await self._relay_down(send, None, exc)
            return
        if not known:
            why = f"Bad request: Last-Event-ID names no stream of this session ({stream_id})"
            await self._refuse(send, 400, None, why)
            return
        disconnect = asyncio.ensure_future(wait_disconnect(receive))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            if info.primes_streams:
                frame = EventLog(stream_id).priming_frame(after)
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            with contextlib.suppress(Exception):  # Redis went away mid-stream: the client may resume again
                await follow_relayed(relay, name, stream_id, owner, after, send, disconnect, _replica_lost)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            disconnect.cancel()

    async def delete(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        found = await self._session(headers[SESSION_HEADER], headers, send, None)
        if found is None:
            return
        try:
            await self.cluster.end(found[0])
        except Exception as exc:
            await self._relay_down(send, None, exc)
            return
        self.live.end(found[0].key)
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
            self._deliver_answer(session_key, message["id"], message["m"])
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
            self.cluster.spawn(self._deliver(notification))
        elif not loop.is_closed():
            loop.call_soon_threadsafe(lambda: self.cluster.spawn(self._deliver(notification)))

    async def _deliver(self, notification: JSONObject) -> None:
        readers = [live for live in self.live if live.notification_reader]
        if notification["method"] == RESOURCE_UPDATED:
            uri = str(notification["params"].get("uri"))
            try:
                wanted = await self.cluster.subscribed([live.key for live in readers], uri)
            except Exception:
                logger.warning("could not read resource subscriptions from the relay", exc_info=True)
                return
            readers = [live for live, yes in zip(readers, wanted, strict=True) if yes]
        for live in readers:
            live.notifications.append(notification)

    # --- helpers ---------------------------------------------------------------------------------

    def _principal(self, headers: dict[str, str]) -> str | None:
        return self.options.principal_resolver(headers)

    def _caller(self, scope: Scope, headers: dict[str, str]) -> str:
        """Who holds a stream, for the per-caller bound: the principal, else the peer address."""
        principal = self._principal(headers)
        if principal is not None:
            return "p:" + principal
        client = scope.get("client")
        return "a:" + (str(client[0]) if client else "")

    async def _session(
        self, session_id: str, headers: dict[str, str], send: Send, request_id: RequestId | None
    ) -> tuple[SessionInfo, str | None] | None:
        """The session a request names and its log level, or None once the refusal was sent."""
        info = self.ids.open(session_id, self._principal(headers))
        if info is None:
            await self._session_not_found(send, request_id)
            return None
        try:
            ended, level = await self.cluster.facts(info)
        except Exception as exc:
            await self._relay_down(send, request_id, exc)
            return None
        if ended:
            await self._session_not_found(send, request_id)
            return None
        return info, level

    async def _session_not_found(self, send: Send, request_id: RequestId | None) -> None:
        error = {
            "code": LEGACY_SESSION_NOT_FOUND,
            "message": "Session not found: it ended, expired or never existed; send initialize to open a new one",
        }
        await send_json(send, 404, encode(_message(request_id, error=error)))

    async def _streams_full(self, send: Send, request_id: RequestId | None, caller: str) -> None:
        which = self.live.streams_full(caller) or "total"
        if which == "caller":
            text = f"Too many requests: this caller holds {self.live.max_streams_per_caller} open streams"
            status = 429
        else:
            text = "Server busy: too many open MCP streams; try again later"
            status = 503
        error = {"code": INTERNAL_ERROR, "message": text}
        await send_json(send, status, encode(_message(request_id, error=error)), [(b"retry-after", b"5")])

    async def _relay_down(self, send: Send, request_id: RequestId | None, exc: Exception) -> None:
        logger.warning("the legacy session relay (Redis) failed: %s", exc)
        error = {"code": INTERNAL_ERROR, "message": "Server unavailable: the session relay is unreachable; try again"}
        await send_json(send, 503, encode(_message(request_id, error=error)), [(b"retry-after", b"1")])

    async def _refuse(self, send: Send, status: int, request_id: RequestId | None, message: str) -> None:
        await send_json(send, status, encode(_message(request_id, error=bad_request(message))))

    async def _invalid_params(self, send: Send, request_id: RequestId, message: str) -> None:
        await send_json(send, 400, encode(_message(request_id, error=_invalid_params(message))))


@dataclass(frozen=True)
class _Session:
    """One request's view of its session: what the id says, the level it set, who is asking."""

    info: SessionInfo
    log_level: str | None
    caller: str


class _CallChannel:
    """The shim's way to the client of one call: requests and notifications on the call's stream."""

    def __init__(self, endpoint: LegacyEndpoint, live: LiveSession, log: EventLog, can_ask: bool) -> None:
        self._endpoint = endpoint
        self._live = live
        self._log = log
        self.can_ask = can_ask
        self._asked: set[str] = set()

    async def ask(self, method: str, params: JSONObject) -> JSONObject:
        sessions, cluster = self._endpoint.live, self._endpoint.cluster
        request_id = sessions.new_id()
        future: asyncio.Future[JSONObject] = asyncio.get_running_loop().create_future()
        self._live.waiting[request_id] = future
        self._asked.add(request_id)
        try:
            ttl = self._endpoint.options.input_required_config.round_timeout
            try:
                await cluster.expect(self._live.key, request_id, self._log.stream_id, ttl)
            except Exception as exc:  # Redis: the question could not be answered elsewhere
                raise McpError(INTERNAL_ERROR, "Server unavailable: the session relay is unreachable") from exc
            self._log.append({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            message = await future
        finally:
            self._asked.discard(request_id)
            if request_id in self._live.waiting:
                sessions.close_request(
                    self._live, request_id, "the server stopped waiting (the round timed out or the call ended)"
                )
                _forget_soon(cluster, self._live.key, request_id)
        if "error" in message:
            raise ClientAnswerError(method, message["error"])
        result = message.get("result")
        return result if isinstance(result, dict) else {}

    async def notify(self, method: str, params: JSONObject) -> None:
        self._log.append({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self) -> None:
        for request_id in list(self._asked):
            self._endpoint.live.close_request(self._live, request_id, "the call ended")
            _forget_soon(self._endpoint.cluster, self._live.key, request_id)


def _forget_soon(cluster: SessionCluster, session_key: str, request_id: str) -> None:
    """Drop the relay's note of a wait that ended unanswered (it would expire anyway)."""
    if cluster.relay is None:
        return

    async def forget() -> None:
        with contextlib.suppress(Exception):
            await cluster.forget(session_key, request_id)

    cluster.spawn(forget())


def _replica_lost(call_id: Any) -> JSONObject:
    error = {
        "code": INTERNAL_ERROR,
        "message": "Server unavailable: the server replica running this call stopped; call the tool again",
    }
    return _message(call_id, error=error)


async def _answer(handler: Handler, rpc: RpcRequest, *, tool_errors: bool = False) -> JSONObject:
    """The JSON-RPC response to ``rpc`` in 2025 shapes; never raises but for cancellation."""
    try:
        result = await handler(rpc)
    except ShimStoppedError as exc:
        if tool_errors:  # a tool call the shim had to end is the tool's failure, told to the model
            return _message(rpc.id, result={"content": [{"type": "text", "text": exc.message}], "isError": True})
        return _message(rpc.id, error=legacy_error(exc, operation(rpc.method, rpc.params)))
    except McpError as exc:
        return _message(rpc.id, error=legacy_error(exc, operation(rpc.method, rpc.params)))
    except Exception:
        logger.exception("unexpected error while handling %s", rpc.method)
        return _message(rpc.id, error={"code": INTERNAL_ERROR, "message": "Internal error"})
    return _message(rpc.id, result=legacy_result(result))


def _invalid_params(message: str) -> JSONObject:
    return {"code": INVALID_PARAMS, "message": f"Invalid params: {message}"}
