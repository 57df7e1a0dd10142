"""Sessions ended by DELETE, in this process: ended for as long as their ids could be valid.

A session id stays valid (sealed) until it expires, so ending a session is a fact the id cannot
carry: it must be remembered until the id expires. :class:`EndedSessions` keeps each ended
session until then, and at most ``limit`` of them. Past the bound it fails closed: it forgets the
oldest ended session and from then on refuses every session issued no later than that one (the
oldest sessions end early; their clients get 404 and initialize again) rather than let an ended
session come back. With the relay, Redis holds the fact as well, for the id's remaining life
(:mod:`~fastapi_mrtr.transport.legacy.cluster`).
"""

from __future__ import annotations

import heapq
import math
import time

from fastapi_mrtr.transport.legacy.session_id import SessionInfo


class EndedSessions:
    """The keys of ended sessions until their ids expire, bounded (failing closed past ``limit``)."""

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ValueError("limit must be positive")
        self.limit = limit
        self._until: dict[str, float] = {}  # key -> when its id expires (unix seconds; inf: never)
        self._by_issue: list[tuple[int, str]] = []  # (issued_at, key), oldest first
        self.ended_before: int | None = None  # every session issued at or before this counts as ended

    def __len__(self) -> int:
        return len(self._until)

    def add(self, info: SessionInfo) -> None:
        self._forget_expired()
        if info.key in self._until:
            return
        self._until[info.key] = math.inf if info.expires_at is None else float(info.expires_at)
        heapq.heappush(self._by_issue, (info.issued_at, info.key))
        while len(self._until) > self.limit:
            issued_at, key = heapq.heappop(self._by_issue)
            if self._until.pop(key, None) is not None:
                self.ended_before = issued_at if self.ended_before is None else max(self.ended_before, issued_at)

    def ended(self, info: SessionInfo) -> bool:
        if self.ended_before is not None and info.issued_at <= self.ended_before:
            return True
        until = self._until.get(info.key)
        return until is not None and until > time.time()

    def _forget_expired(self) -> None:
        """Drop the oldest entries whose ids have expired (ids of one server live equally long)."""
        now = time.time()
        while self._by_issue:
            _, key = self._by_issue[0]
            until = self._until.get(key)
            if until is not None and until > now:
                return
            heapq.heappop(self._by_issue)
            self._until.pop(key, None)
