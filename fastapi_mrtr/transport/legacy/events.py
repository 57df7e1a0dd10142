"""The events of one SSE stream, kept so that a client which lost the stream can resume it.

Every message a legacy session sends on a stream (a call's progress and logs, its requests to the
client, its response; the session's own notifications) is appended to that stream's
:class:`EventLog` with an event id ``<stream>-<seq>``. Whoever writes the HTTP response follows the
log; a client that reconnects with ``Last-Event-ID`` (SEP-1699) gets the events after that id and
then follows the log as the first writer did. The log lives in process; a store shared by replicas
can replace it behind the same three operations (append, since, finish).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from fastapi_mrtr.wire.json_codec import encode

RETRY_MS = 1000  # how soon a client whose stream ended should reconnect (the SSE retry field)


class EventLog:
    """One stream's events, numbered from 1; at most ``limit`` are kept (the oldest go first)."""

    def __init__(self, stream_id: str, limit: int = 10_000) -> None:
        self.stream_id = stream_id
        self._events: deque[tuple[int, bytes]] = deque(maxlen=limit)
        self._seq = 0
        self._changed = asyncio.Event()
        self.finished = False
        self.expiring = False  # finished, undelivered, and set to be forgotten after a while

    @property
    def last_seq(self) -> int:
        return self._seq

    def event_id(self, seq: int) -> str:
        return f"{self.stream_id}-{seq}"

    def append(self, message: Any) -> None:
        if self.finished:
            return  # nothing follows a stream's end (a late progress event of a cancelled call)
        self._seq += 1
        frame = b"id: " + self.event_id(self._seq).encode() + b"\nevent: message\ndata: " + encode(message) + b"\n\n"
        self._events.append((self._seq, frame))
        self._wake()

    def finish(self) -> None:
        self.finished = True
        self._wake()

    def since(self, seq: int) -> list[tuple[int, bytes]]:
        """The frames after ``seq``, oldest first."""
        if seq >= self._seq:
            return []
        return [(n, frame) for n, frame in self._events if n > seq]

    def priming_frame(self, after: int) -> bytes:
        """The first frame of a writer that sends the events after ``after``: resuming from its id
        replays all of them. It carries the retry interval and no data."""
        return b"id: " + self.event_id(after).encode() + b"\nretry: " + str(RETRY_MS).encode() + b"\ndata: \n\n"

    async def wait_beyond(self, seq: int) -> None:
        """Wait until an event after ``seq`` is appended or the stream finishes."""
        while self._seq <= seq and not self.finished:
            await self._changed.wait()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()


def parse_event_id(value: str) -> tuple[str, int] | None:
    """``("<stream>", seq)`` from a ``Last-Event-ID`` this server sent, else None."""
    stream, sep, seq = value.strip().rpartition("-")
    if not sep or not stream or not seq.isdigit() or len(seq) > 12:
        return None
    return stream, int(seq)
