"""What replicas of one server tell each other through Redis, for 2025-era sessions.

    from fastapi_mrtr.state.redis_relay import RedisRelay

    options = ServerOptions(request_state_key=..., relay=RedisRelay("redis://redis:6379/0"))

A legacy call is served by the replica that holds its stream, but the client's answer to a
question, a resumed stream (``Last-Event-ID``) or a DELETE may reach any replica. The relay gives
them five small things, each one plain Redis:

* **waiters**: ``SET key owner PX ttl`` when a replica asks a question; whoever receives the
  answer claims the key (``GET`` + ``DEL`` in one script), so exactly one answer wins, wherever it
  lands, and an answer to a question nobody waits for (never asked, answered already, timed out,
  another session's) finds nothing;
* **messages**: each replica subscribes to its own channel (answers handed over) and to one
  shared channel (notifications, cancellations); ``PUBLISH`` says how many received it, so a
  message for a replica that is gone fails at once instead of waiting;
* **facts**: small values with an expiry (a session ended, its log level);
* **sets**: a session's resource subscriptions;
* **event streams**: a call stream's SSE frames (``XADD`` with the event's own sequence number
  as its id), read by a replica that resumes the stream elsewhere (``XREAD BLOCK``); every key
  expires by itself.

Errors from Redis propagate: the caller turns them into a clear answer (503) for the one request
they concern. The subscriber reconnects by itself after Redis restarts. Needs the ``redis``
package (``pip install "fastapi-mrtr[redis]"``); knows nothing of MCP or FastAPI.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisRelay"]

logger = logging.getLogger("fastapi_mrtr")

CLAIM_SCRIPT = """
local owner = redis.call('GET', KEYS[1])
if owner then redis.call('DEL', KEYS[1]) end
return owner
"""
RECONNECT_SECONDS = 0.5
Message = dict[str, Any]


def _ms(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisRelay:
    """Redis between the replicas of one server. ``client`` is a ``redis.asyncio.Redis`` (used as
    is) or a URL; keys and channels start with ``prefix``; ``replica_id`` names this process
    (random by default: a restarted replica is a new one)."""

    def __init__(
        self,
        client: Redis | str,
        *,
        prefix: str = "mrtr:legacy:",
        replica_id: str | None = None,
        connect_timeout: float = 2.0,
        timeout: float = 2.0,
    ) -> None:
        from redis.asyncio import Redis

        if isinstance(client, str):
            self._client: Any = Redis.from_url(client, socket_connect_timeout=connect_timeout, socket_timeout=timeout)
            # The subscriber idles between messages: no read timeout on its connection.
            self._listener_client: Any = Redis.from_url(client, socket_connect_timeout=connect_timeout)
            self._owned = True
        else:
            self._client = self._listener_client = client
            self._owned = False
        self.prefix = prefix
        self.replica_id = replica_id or secrets.token_hex(4)
        self._claim = self._client.register_script(CLAIM_SCRIPT)
        self._handler: Callable[[Message], None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()

    def __repr__(self) -> str:
        return f"RedisRelay(prefix={self.prefix!r}, replica_id={self.replica_id!r})"

    # --- messages ---------------------------------------------------------------------------------

    def _channel(self, replica: str) -> str:
        return f"{self.prefix}replica:{replica}"

    @property
    def _shared_channel(self) -> str:
        return f"{self.prefix}all"

    def start(self, on_message: Callable[[Message], None]) -> None:
        """Listen for messages to this replica and to all (idempotent; needs a running loop)."""
        self._handler = on_message
        if self._listener is None or self._listener.done():
            self._listener = asyncio.get_running_loop().create_task(self._listen())

    async def ready(self, timeout: float = 2.0) -> bool:
        """Whether the subscriber is listening (waits up to ``timeout``)."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._subscribed.wait(), timeout)
        return self._subscribed.is_set()

    async def _listen(self) -> None:
        while True:
            pubsub = self._listener_client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self._channel(self.replica_id), self._shared_channel)
                self._subscribed.set()
                while True:
                    raw = await pubsub.get_message(timeout=5.0)
                    if raw is not None:
                        self._dispatch(raw.get("data"))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis went away: try again shortly, forever
                self._subscribed.clear()
                logger.warning("relay subscriber lost Redis (%s); reconnecting", exc)
                await asyncio.sleep(RECONNECT_SECONDS)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    def _dispatch(self, data: Any) -> None:
        try:
            message = json.loads(data)
        except (TypeError, ValueError):
            return
        if not isinstance(message, dict) or message.get("from") == self.replica_id or self._handler is None:
            return  # our own broadcast comes back too; it was handled locally already
        try:
            self._handler(message)
        except Exception:
            logger.exception("relay message handler failed")

    async def send(self, replica: str, message: Message) -> bool:
        """Hand ``message`` to ``replica``; False when no such replica listens."""
        body = json.dumps({**message, "from": self.replica_id}, separators=(",", ":"))
        return int(await self._client.publish(self._channel(replica), body)) > 0

    async def broadcast(self, message: Message) -> None:
        """Hand ``message`` to every other replica."""
        body = json.dumps({**message, "from": self.replica_id}, separators=(",", ":"))
        await self._client.publish(self._shared_channel, body)

    async def alive(self, replica: str) -> bool:
        """Whether ``replica`` listens on its channel (it is running and reaches Redis)."""
        counts = await self._client.pubsub_numsub(self._channel(replica))
        return bool(counts) and int(counts[0][1]) > 0

    # --- waiters ---------------------------------------------------------------------------------

    async def expect(self, key: str, value: str, ttl: float) -> None:
        await self._client.set(self.prefix + key, value, px=_ms(ttl))

    async def claim(self, key: str) -> str | None:
        """The value of ``key``, which no later claim finds again; None when there is none."""
        return _text(await self._claim(keys=[self.prefix + key]))

    async def forget(self, key: str) -> None:
        await self._client.delete(self.prefix + key)

    # --- facts and sets ----------------------------------------------------------------------------

    async def set_fact(self, key: str, value: str, ttl: float) -> None:
        await self._client.set(self.prefix + key, value, px=_ms(ttl))

    async def facts(self, keys: Sequence[str]) -> list[str | None]:
        return [_text(v) for v in await self._client.mget([self.prefix + k for k in keys])]

    async def add_member(self, key: str, member: str, ttl: float) -> None:
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.sadd(self.prefix + key, member)
            pipe.pexpire(self.prefix + key, _ms(ttl))
            await pipe.execute()

    async def remove_member(self, key: str, member: str) -> None:
        await self._client.srem(self.prefix + key, member)

    async def members(self, keys: Sequence[str], member: str) -> list[bool]:
        """For each set in ``keys``, whether ``member`` is in it (one round trip)."""
        if not keys:
            return []
        async with self._client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.sismember(self.prefix + key, member)
            return [bool(found) for found in await pipe.execute()]

    # --- event streams -------------------------------------------------------------------------------

    async def append(self, stream: str, events: Sequence[tuple[int, dict[str, str]]], ttl: float) -> None:
        """Add ``(seq, fields)`` events to ``stream`` in order (seq >= 0, above every earlier one)."""
        key = self.prefix + "events:" + stream
        async with self._client.pipeline(transaction=False) as pipe:
            for seq, fields in events:
                pipe.xadd(key, fields, id=f"0-{seq + 1}")  # Redis refuses the id 0-0
            pipe.pexpire(key, _ms(ttl))
            await pipe.execute()

    async def read(self, stream: str, after: int, block: float) -> list[tuple[int, dict[str, str]]]:
        """The events of ``stream`` after ``after``, waiting up to ``block`` seconds for one."""
        key = self.prefix + "events:" + stream
        found = await self._client.xread({key: f"0-{after + 1}"}, block=_ms(block), count=100)
        events: list[tuple[int, dict[str, str]]] = []
        for _name, entries in found or []:
            for entry_id, fields in entries:
                seq = int(_text(entry_id).rpartition("-")[2]) - 1  # type: ignore[union-attr]
                events.append((seq, {_text(k) or "": _text(v) or "" for k, v in fields.items()}))
        return events

    async def exists(self, stream: str) -> bool:
        return bool(await self._client.exists(self.prefix + "events:" + stream))

    async def aclose(self) -> None:
        """Stop listening; close the clients if this relay made them from a URL."""
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(BaseException):
                await self._listener
        if self._owned:
            await self._client.aclose()
            await self._listener_client.aclose()
