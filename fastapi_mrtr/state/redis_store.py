"""Single-use ``requestState`` shared by every worker and replica: claimed token ids in Redis.

    from fastapi_mrtr.state.redis_store import RedisReplayStore

    options = ServerOptions(request_state_key=..., replay_store=RedisReplayStore("redis://redis:6379/0"))

A claim is one ``SET key receipt NX PX ttl``: atomic, so of two rounds carrying the same token,
on the same or different replicas, exactly one gets the key. The key lives as long as the token
can still be opened (its expiry plus ``clock_skew``), then Redis forgets it by itself. The value
is a random receipt of this claim: when the client library resends the ``SET`` after a timeout
and finds the key taken, a ``GET`` tells our own first write from another round's. A release
(a round refused for a reason the client can correct) deletes the key only while it still holds
that receipt, in one script: a ``DEL`` resent after a lost reply cannot delete the claim that
another round has made in between.

Any Redis error (unreachable, timeout, out of memory, read-only replica) propagates; on a claim
the server refuses the round with a 503 and the token stays unused, so the client can retry it
later. The one ambiguous case is a ``SET`` that Redis applied but whose reply never came: that
token then counts as used, and the client's retry of the round is refused. A failed release
leaves the token used. Works with any Redis from 2.6.12 (and Valkey). Needs the ``redis``
package (``pip install "fastapi-mrtr[redis]"``).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from fastapi_mrtr.state.redis_client import redis_client
from fastapi_mrtr.state.replay_store import new_receipt

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisReplayStore"]

# Delete the key only if it still holds this claim's receipt (atomic: one script).
RELEASE_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""


class RedisReplayStore:
    """A :class:`~fastapi_mrtr.state.replay_store.ReplayStore` backed by Redis (``redis.asyncio``).

    ``client`` is a ``redis.asyncio.Redis`` (used as is, and not closed by :meth:`aclose`) or a
    URL such as ``redis://host:6379/0`` (a client is made with ``connect_timeout`` and
    ``timeout`` in seconds, so a dead Redis fails the round quickly instead of hanging it).
    Keys are ``prefix + token id``. ``ttl_without_expiry`` (seconds) bounds how long the id of a
    token that never expires is remembered; ``clock_skew`` (seconds) is added to every key's
    lifetime so replicas whose clocks run a little behind still find it.
    """

    def __init__(
        self,
        client: Redis | str,
        *,
        prefix: str = "mrtr:used:",
        ttl_without_expiry: float = 86_400.0,
        clock_skew: float = 60.0,
        connect_timeout: float = 2.0,
        timeout: float = 2.0,
    ) -> None:
        if ttl_without_expiry <= 0 or clock_skew < 0:
            raise ValueError("ttl_without_expiry must be positive and clock_skew >= 0")
        self._client, self._owned = redis_client(client, connect_timeout=connect_timeout, timeout=timeout)
        self.prefix = prefix
        self._release = self._client.register_script(RELEASE_SCRIPT)
        self._ttl_without_expiry = ttl_without_expiry
        self._clock_skew = clock_skew

    def __repr__(self) -> str:
        return f"RedisReplayStore(prefix={self.prefix!r})"

    def key_for(self, token_id: str) -> str:
        """The Redis key that marks ``token_id`` as claimed."""
        return self.prefix + token_id

    def ttl_ms(self, expires_at: int | None, now: float | None = None) -> int:
        """How long the mark for a token expiring at ``expires_at`` (unix seconds) is kept."""
        now = time.time() if now is None else now
        if expires_at is None:
            return math.ceil(self._ttl_without_expiry * 1000)
        seconds = max(expires_at - now, 0.0) + self._clock_skew
        return max(1000, math.ceil(seconds * 1000))

    async def claim(self, token_id: str, expires_at: int | None) -> str | None:
        key = self.key_for(token_id)
        receipt = new_receipt()
        if await self._client.set(key, receipt, nx=True, px=self.ttl_ms(expires_at)):
            return receipt
        # Taken: by another round, or by this very call if the client retried a SET that landed.
        held = await self._client.get(key)
        return receipt if held in (receipt, receipt.encode()) else None  # str with decode_responses

    async def release(self, token_id: str, receipt: str) -> None:
        await self._release(keys=[self.key_for(token_id)], args=[receipt])

    async def consume(self, token_id: str, expires_at: int | None) -> bool:
        """Claim for good: True on the id's first use (the first protocol's single method)."""
        return await self.claim(token_id, expires_at) is not None

    async def aclose(self) -> None:
        """Close the client if this store made it from a URL."""
        if self._owned:
            await self._client.aclose()
