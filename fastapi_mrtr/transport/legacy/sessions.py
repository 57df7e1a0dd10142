"""What is in flight for legacy sessions in this process, and the bounds on it.

What a session *is* travels in its id (:mod:`~fastapi_mrtr.transport.legacy.session_id`), so a
process keeps nothing for a session that has nothing running. While something runs, a
:class:`LiveSession` holds it: the calls (to cancel them), the requests waiting for the client's
answer, the event logs of the call streams, the GET stream's log. :class:`LiveSessions` creates
one on a session's first stream and drops it when the last ends and no result is left for a
client to resume, and counts the open streams, per caller and in total, so one caller cannot
hold them all.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from fastapi_mrtr.transport.legacy.events import EventLog
from fastapi_mrtr.transport.legacy.session_id import SessionInfo
from fastapi_mrtr.wire.protocol import JSONObject, RequestId

NOTIFICATION_STREAM = "s0"  # the stream id of a session's GET stream (served by one process)
CLOSED_ANSWER_IDS = 4096  # ids of requests to clients that were answered or given up, remembered


@dataclass
class LiveSession:
    """One session's calls, questions and streams in this process."""

    info: SessionInfo
    calls: dict[RequestId, asyncio.Task[Any]] = field(default_factory=dict)
    waiting: dict[str, asyncio.Future[JSONObject]] = field(default_factory=dict)
    streams: dict[str, EventLog] = field(default_factory=dict)
    notifications: EventLog = field(default_factory=lambda: EventLog(NOTIFICATION_STREAM, limit=100))
    notification_reader: bool = False
    writers: int = 0  # HTTP responses of this session being written now

    @property
    def key(self) -> str:
        return self.info.key

    @property
    def idle(self) -> bool:
        # A finished stream still listed is kept for a client that resumes it (until event_ttl
        # drops it): counting only unfinished ones dropped a result its client had not yet read.
        return not (self.calls or self.waiting or self.streams or self.writers or self.notification_reader)

    def stream(self, stream_id: str) -> EventLog | None:
        if stream_id == NOTIFICATION_STREAM:
            return self.notifications
        return self.streams.get(stream_id)

    def end(self) -> None:
        """DELETE or shutdown: cancel what runs and end every stream."""
        for task in list(self.calls.values()):
            task.cancel()
        for future in self.waiting.values():
            if not future.done():
                future.cancel()
        for log in self.streams.values():
            log.finish()
        self.notifications.finish()


class LiveSessions:
    """The live sessions of this process by key, and its open legacy streams, bounded."""

    def __init__(self, replica_id: str, max_streams: int, max_streams_per_caller: int) -> None:
        self.replica_id = replica_id
        self.max_streams = max_streams
        self.max_streams_per_caller = max_streams_per_caller
        self._live: dict[str, LiveSession] = {}
        self._streams_by_caller: dict[str, int] = {}
        self.open_streams = 0
        self._ids = itertools.count(1)
        self._closed: OrderedDict[tuple[str, str], str] = OrderedDict()

    def __iter__(self) -> Any:
        return iter(list(self._live.values()))

    def __len__(self) -> int:
        return len(self._live)

    def get(self, key: str) -> LiveSession | None:
        return self._live.get(key)

    def attach(self, info: SessionInfo) -> LiveSession:
        live = self._live.get(info.key)
        if live is None:
            live = self._live[info.key] = LiveSession(info)
        return live

    def release(self, live: LiveSession) -> None:
        """Forget ``live`` once nothing of it runs (called whenever something of it ends)."""
        if live.idle and self._live.get(live.key) is live:
            del self._live[live.key]

    def end(self, key: str) -> None:
        live = self._live.pop(key, None)
        if live is not None:
            live.end()

    def end_all(self) -> None:
        for key in list(self._live):
            self.end(key)

    def cancel(self, key: str, call_id: Any) -> bool:
        """Cancel the call ``call_id`` of session ``key`` if it runs here; whether it did."""
        live = self._live.get(key)
        is_id = isinstance(call_id, str) or (isinstance(call_id, int) and not isinstance(call_id, bool))
        task = live.calls.get(call_id) if live is not None and is_id else None
        if task is None:
            return False
        task.cancel()
        return True

    # --- ids this process gives out ------------------------------------------------------------------

    def new_id(self) -> str:
        """An id for a stream or a request to a client: unique among replicas, naming this one."""
        return f"{self.replica_id}.{next(self._ids)}"

    @staticmethod
    def replica_of(request_id: Any) -> str | None:
        """The replica an id names, if it has this server's shape."""
        if not isinstance(request_id, str):
            return None
        replica, sep, n = request_id.partition(".")
        return replica if sep and n.isdigit() and replica else None

    def close_request(self, live: LiveSession, request_id: str, why: str) -> None:
        """Stop waiting for ``request_id``; a later answer to it is refused with ``why``."""
        future = live.waiting.pop(request_id, None)
        if future is not None and not future.done():
            future.cancel()
        self._closed[(live.key, request_id)] = why
        while len(self._closed) > CLOSED_ANSWER_IDS:
            self._closed.popitem(last=False)

    def why_closed(self, key: str, request_id: str) -> str | None:
        return self._closed.get((key, request_id))

    # --- stream bounds ----------------------------------------------------------------------------------

    def open_stream(self, caller: str) -> bool:
        """Count one more open stream for ``caller``; False (and nothing counted) when full."""
        held = self._streams_by_caller.get(caller, 0)
        if self.open_streams >= self.max_streams or held >= self.max_streams_per_caller:
            return False
        self._streams_by_caller[caller] = held + 1
        self.open_streams += 1
        return True

    def close_stream(self, caller: str) -> None:
        held = self._streams_by_caller.get(caller, 0) - 1
        if held > 0:
            self._streams_by_caller[caller] = held
        else:
            self._streams_by_caller.pop(caller, None)
        self.open_streams = max(0, self.open_streams - 1)

    def streams_full(self, caller: str) -> str | None:
        """Why ``caller`` may not open a stream now, or None."""
        if self.open_streams >= self.max_streams:
            return "total"
        if self._streams_by_caller.get(caller, 0) >= self.max_streams_per_caller:
            return "caller"
        return None
