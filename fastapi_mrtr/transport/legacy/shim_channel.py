"""The shim's channel to the client of one 2025-era call (:class:`~.shim.ClientChannel`).

A question becomes a request on the call's stream, noted in the relay first so that an answer
POSTed to any replica reaches it (:mod:`~fastapi_mrtr.transport.legacy.answers`); the answer
resolves the future :meth:`CallChannel.ask` waits on. A notification is an event on the stream.
"""

from __future__ import annotations

import asyncio
import contextlib

from fastapi_mrtr.transport.legacy.cluster import SessionCluster
from fastapi_mrtr.transport.legacy.events import EventLog
from fastapi_mrtr.transport.legacy.sessions import LiveSession, LiveSessions
from fastapi_mrtr.transport.legacy.shim import ClientAnswerError
from fastapi_mrtr.wire.errors import INTERNAL_ERROR, McpError
from fastapi_mrtr.wire.protocol import JSONObject


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
