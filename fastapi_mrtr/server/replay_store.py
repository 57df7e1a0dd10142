"""Single-use ``requestState`` (opt-in): remember each consumed token id until it expires.

A sealed state is valid until its expiry; MRTR by itself lets a client replay it. With a
``ServerOptions(replay_store=...)`` every token is consumed atomically on first use, and a second
use is refused before the handler runs. One process: :class:`InMemoryReplayStore`. Several
workers or replicas need one shared store (``fastapi_mrtr.server.redis_store.RedisReplayStore``).
"""

from __future__ import annotations

import asyncio
import heapq
import time
from typing import Protocol


class ReplayStore(Protocol):
    async def consume(self, token_id: str, expires_at: int | None) -> bool:
        """Record ``token_id`` as used; True on its first use, False if it was used before.

        Raises on a storage failure; the server then refuses the round (fail closed).
        """
        ...


class InMemoryReplayStore:
    """Consumed token ids of this process, forgotten once their token has expired.

    Tokens that never expire (``request_state_ttl=0`` and no round timeout) are kept for
    ``max_age_without_expiry`` seconds, so memory stays bounded.
    """

    def __init__(self, *, max_age_without_expiry: float = 3600.0) -> None:
        self._used: dict[str, float] = {}
        self._expiries: list[tuple[float, str]] = []
        self._lock = asyncio.Lock()
        self._default_age = max_age_without_expiry

    def __len__(self) -> int:
        return len(self._used)

    async def consume(self, token_id: str, expires_at: int | None) -> bool:
        now = time.time()
        async with self._lock:
            self._evict(now)
            if token_id in self._used:
                return False
            until = float(expires_at) if expires_at is not None else now + self._default_age
            self._used[token_id] = until
            heapq.heappush(self._expiries, (until, token_id))
            return True

    def _evict(self, now: float) -> None:
        while self._expiries and self._expiries[0][0] <= now:
            _, token_id = heapq.heappop(self._expiries)
            self._used.pop(token_id, None)
