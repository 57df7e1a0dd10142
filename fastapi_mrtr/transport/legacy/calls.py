"""What a 2025-era call needs while it runs: its way to ask the client, and its one answer.

:class:`CallChannel` is the shim's channel to the client of one call: a question becomes a request
on the call's stream (noted in the relay, so an answer posted to any replica reaches it), a
notification an event on it. :func:`answer_rpc` runs the handler and shapes its result or error for
the 2025 era.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from starlette.types import Receive, Scope

from fastapi_mrtr.transport.legacy.cluster import SessionCluster
from fastapi_mrtr.transport.legacy.events import EventLog
from fastapi_mrtr.transport.legacy.replies import rpc_message
from fastapi_mrtr.transport.legacy.session_id import SessionInfo
from fastapi_mrtr.transport.legacy.sessions import LiveSession, LiveSessions
from fastapi_mrtr.transport.legacy.shapes import legacy_error, legacy_result, operation
from fastapi_mrtr.transport.legacy.shim import ClientAnswerError, ShimStoppedError
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.errors import INTERNAL_ERROR, McpError
from fastapi_mrtr.wire.protocol import (
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


class CallChannel:
    """The shim's way to the client of one call: requests and notifications on the call's stream."""

    def __init__(
        self,
        sessions: LiveSessions,
        cluster: SessionCluster,
        round_timeout: float,
        live: LiveSession,
        log: EventLog,
        can_ask: bool,
    ) -> None:
        self._sessions = sessions
        self._cluster = cluster
        self._round_timeout = round_timeout
        self._live = live
        self._log = log
        self.can_ask = can_ask
        self._asked: set[str] = set()

    async def ask(self, method: str, params: JSONObject) -> JSONObject:
        sessions, cluster = self._sessions, self._cluster
        request_id = sessions.new_id()
        future: asyncio.Future[JSONObject] = asyncio.get_running_loop().create_future()
        self._live.waiting[request_id] = future
        self._asked.add(request_id)
        try:
            ttl = self._round_timeout
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
            self._sessions.close_request(self._live, request_id, "the call ended")
            _forget_soon(self._cluster, self._live.key, request_id)


def _forget_soon(cluster: SessionCluster, session_key: str, request_id: str) -> None:
    """Drop the relay's note of a wait that ended unanswered (it would expire anyway)."""
    if cluster.relay is None:
        return

    async def forget() -> None:
        with contextlib.suppress(Exception):
            await cluster.forget(session_key, request_id)

    cluster.spawn(forget())


async def answer_rpc(handler: Handler, rpc: RpcRequest, *, tool_errors: bool = False) -> JSONObject:
    """The JSON-RPC response to ``rpc`` in 2025 shapes; never raises but for cancellation."""
    try:
        result = await handler(rpc)
    except ShimStoppedError as exc:
        if tool_errors:  # a tool call the shim had to end is the tool's failure, told to the model
            return rpc_message(rpc.id, result={"content": [{"type": "text", "text": exc.message}], "isError": True})
        return rpc_message(rpc.id, error=legacy_error(exc, operation(rpc.method, rpc.params)))
    except McpError as exc:
        return rpc_message(rpc.id, error=legacy_error(exc, operation(rpc.method, rpc.params)))
    except Exception:
        logger.exception("unexpected error while handling %s", rpc.method)
        return rpc_message(rpc.id, error=McpError(INTERNAL_ERROR, "Internal error").to_error())
    return rpc_message(rpc.id, result=legacy_result(result))


def session_request(
    info: SessionInfo,
    log_level: str | None,
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
        META_CLIENT_CAPABILITIES: info.client_capabilities,
        META_CLIENT_INFO: info.client_info,
        # The 2025 era sends log messages unless the client raised the level (logging/setLevel).
        META_LOG_LEVEL: log_level or "debug",
    }
    if isinstance(legacy_meta, dict) and "progressToken" in legacy_meta:
        meta["progressToken"] = legacy_meta["progressToken"]
    return RpcRequest(
        request_id, method, {**params, "_meta": meta}, meta, scope, headers, receive, notify=notify, legacy=True
    )
