"""Legacy MCP sessions: what ``initialize`` negotiated, and what is in flight on each session.

A session is small, plain data (version, the client's capabilities and info, the log level, the
resource subscriptions, who opened it): that part could live in a shared store. What is in flight
(running calls, requests waiting for the client's answer, the event logs of open streams) belongs
to the process that runs the call. :class:`SessionRegistry` bounds both: how many sessions, how
long an idle one lives, how many finished streams each keeps for resumption.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from fastapi_mrtr.transport.legacy.events import EventLog
from fastapi_mrtr.wire.protocol import JSONObject, RequestId

NOTIFICATION_STREAM = "s0"  # the stream id of the session's GET stream
KEPT_STREAMS = 32  # finished or abandoned call streams a session keeps for Last-Event-ID
CLOSED_ANSWER_IDS = 256  # ids of requests to the client that were answered or given up, remembered


def _principal_digest(principal: str | None) -> bytes:
    return hashlib.sha256((principal or "").encode()).digest()


@dataclass
class LegacySession:
    id: str
    protocol_version: str
    client_capabilities: JSONObject
    client_info: JSONObject
    principal_digest: bytes
    log_level: str | None = None
    initialized: bool = False
    subscriptions: set[str] = field(default_factory=set)
    last_seen: float = field(default_factory=time.monotonic)
    ended: bool = False
    # In flight, in this process:
    calls: dict[RequestId, asyncio.Task[Any]] = field(default_factory=dict)
    waiting: dict[int, asyncio.Future[JSONObject]] = field(default_factory=dict)
    closed_answer_ids: OrderedDict[int, str] = field(default_factory=OrderedDict)
    streams: OrderedDict[str, EventLog] = field(default_factory=OrderedDict)
    notifications: EventLog = field(default_factory=lambda: EventLog(NOTIFICATION_STREAM, limit=100))
    notification_reader: bool = False
    _next_request_id: int = 0
    _next_stream: int = 0

    def belongs_to(self, principal: str | None) -> bool:
        """Whether ``principal`` is the caller that opened this session (a stolen id is not enough)."""
        return hmac.compare_digest(self.principal_digest, _principal_digest(principal))

    @property
    def primes_streams(self) -> bool:
        """Priming events (SEP-1699) are 2025-11-25: older clients may choke on an empty event."""
        return self.protocol_version >= "2025-11-25"

    def open_stream(self) -> EventLog:
        self._next_stream += 1
        log = EventLog(f"s{self._next_stream}")
        self.streams[log.stream_id] = log
        while len(self.streams) > KEPT_STREAMS:
            oldest_id, oldest = next(iter(self.streams.items()))
            if not oldest.finished:
                break  # a running call's stream is never dropped
            del self.streams[oldest_id]
        return log

    def drop_stream(self, log: EventLog) -> None:
        self.streams.pop(log.stream_id, None)

    def stream(self, stream_id: str) -> EventLog | None:
        if stream_id == NOTIFICATION_STREAM:
            return self.notifications
        return self.streams.get(stream_id)

    def new_request(self) -> tuple[int, asyncio.Future[JSONObject]]:
        """An id for a request to the client, and the future its answer will resolve."""
        self._next_request_id += 1
        future: asyncio.Future[JSONObject] = asyncio.get_running_loop().create_future()
        self.waiting[self._next_request_id] = future
        return self._next_request_id, future

    def close_request(self, request_id: int, why: str) -> None:
        """Stop waiting for ``request_id``; a later answer to it is refused with ``why``."""
        future = self.waiting.pop(request_id, None)
        if future is not None and not future.done():
            future.cancel()
        self.closed_answer_ids[request_id] = why
        while len(self.closed_answer_ids) > CLOSED_ANSWER_IDS:
            self.closed_answer_ids.popitem(last=False)

    def never_sent(self, request_id: Any) -> bool:
        return (
            not isinstance(request_id, int)
            or isinstance(request_id, bool)
            or not 0 < request_id <= self._next_request_id
        )

    def end(self) -> None:
        """DELETE, expiry or shutdown: cancel what runs, stop waiting, end every stream."""
        self.ended = True
        for task in list(self.calls.values()):
            task.cancel()
        for request_id in list(self.waiting):
            self.close_request(request_id, "the session ended")
        for log in self.streams.values():
            log.finish()
        self.notifications.finish()


class SessionRegistry:
    """The sessions of this process, by id: at most ``max_sessions``, idle ones end after ``idle_timeout``."""

    def __init__(self, max_sessions: int, idle_timeout: float) -> None:
        self._sessions: dict[str, LegacySession] = {}
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout

    def __iter__(self) -> Any:
        return iter(list(self._sessions.values()))

    def __len__(self) -> int:
        return len(self._sessions)

    def create(
        self, protocol_version: str, capabilities: JSONObject, client_info: JSONObject, principal: str | None
    ) -> LegacySession | None:
        """A new session, or None when the registry is full of sessions that are still in use."""
        self.sweep()
        if len(self._sessions) >= self.max_sessions:
            return None
        session = LegacySession(
            id=secrets.token_urlsafe(24),
            protocol_version=protocol_version,
            client_capabilities=capabilities,
            client_info=client_info,
            principal_digest=_principal_digest(principal),
        )
        self._sessions[session.id] = session
        return session

    def get(self, session_id: str) -> LegacySession | None:
        session = self._sessions.get(session_id.strip())
        if session is None or session.ended:
            return None
        session.last_seen = time.monotonic()
        return session

    def end(self, session: LegacySession) -> None:
        self._sessions.pop(session.id, None)
        session.end()

    def end_all(self) -> None:
        for session in list(self._sessions.values()):
            self.end(session)

    def sweep(self) -> None:
        """End sessions idle for longer than ``idle_timeout`` with nothing running."""
        if self.idle_timeout <= 0:
            return
        cutoff = time.monotonic() - self.idle_timeout
        for session in list(self._sessions.values()):
            if session.last_seen < cutoff and not session.calls and not session.notification_reader:
                with contextlib.suppress(Exception):
                    self.end(session)
