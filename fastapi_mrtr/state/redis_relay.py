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
  as its id), read by a replica that resumes the stream elsewhere; every key expires by itself.

Connections (docs/deployment.md sizes them): short request-path commands share one bounded pool
(``pool_size``; a command that finds it full waits up to ``pool_wait`` seconds for a connection
instead of failing at once, and a command that meets a dropped connection or a timeout is retried
``retries`` times with a short back-off). Waiting for a resumed stream's next events never uses
that pool: one connection per replica reads every stream it follows with one ``XREAD BLOCK``
(:mod:`~fastapi_mrtr.state.redis_streams`), so any number of resumed streams costs one
connection. The subscriber has one more.

Channels are named by the server (its ``ServerOptions.name``, set by ``MCP``, plus ``namespace``)
and by the Redis database number: pub/sub ignores the database, so two servers sharing one Redis
(even on different database numbers) would otherwise hear each other's notifications.

Errors from Redis that outlast the retries propagate: the caller turns them into a clear answer
(503) for the one request they concern. The subscriber reconnects by itself after Redis restarts
and, when it finds Redis restarted (its run id changed), calls ``on_reconnect`` (the server
writes back what a restarted Redis forgot). Needs the
``redis`` package (``pip install "fastapi-mrtr[redis]"``); knows nothing of MCP or FastAPI.
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

from fastapi_mrtr.state.redis_streams import Event, MultiplexedStreamReader, decode_entries

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisRelay"]

logger = logging.getLogger("fastapi_mrtr")

CLAIM_SCRIPT = """
local owner = redis.call('GET', KEYS[1])
if owner then redis.call('DEL', KEYS[1]) end
return owner
"""
# Add ARGV[1] to the set unless it already holds ARGV[2] members; 1: in the set now, 0: full.
ADD_BOUNDED_SCRIPT = """
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 0 then
    if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
    redis.call('SADD', KEYS[1], ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""
RECONNECT_SECONDS = 0.5
RESTART_CHECK_SECONDS = 1.0  # how often the subscriber asks Redis whether it restarted
Message = dict[str, Any]


def _ms(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisRelay:
    """Redis between the replicas of one server. ``client`` is a ``redis.asyncio.Redis`` (used as
    is for request-path commands) or a URL; keys start with ``prefix``; ``replica_id`` names this
    process (random by default: a restarted replica is a new one); ``namespace`` tells apart two
    servers of the same name on one Redis. ``pool_size``, ``pool_wait`` and ``retries`` shape the
    request-path pool made from a URL; ``stream_block`` is the longest a new resumed stream waits
    to join the shared reader."""

    def __init__(
        self,
        client: Redis | str,
        *,
        prefix: str = "mrtr:legacy:",
        replica_id: str | None = None,
        namespace: str = "",
        connect_timeout: float = 2.0,
        timeout: float = 2.0,
        pool_size: int = 64,
        pool_wait: float = 5.0,
        retries: int = 3,
        stream_block: float = 0.25,
    ) -> None:
        from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis

        if pool_size <= 0 or pool_wait < 0 or retries < 0 or stream_block <= 0:
            raise ValueError("pool_size and stream_block must be positive, pool_wait and retries >= 0")
        if isinstance(client, str):
            pool = BlockingConnectionPool.from_url(
                client,
                max_connections=pool_size,
                timeout=pool_wait,
                socket_connect_timeout=connect_timeout,
                socket_timeout=timeout,
                retry=_retry(retries),
                retry_on_error=_transient(),
            )
            self._client: Any = Redis(connection_pool=pool)
            kwargs: dict[str, Any] = dict(pool.connection_kwargs)
            connection_class: Any = pool.connection_class
            self._owned = True
        else:
            self._client = client
            kwargs = dict(client.connection_pool.connection_kwargs)
            connection_class = client.connection_pool.connection_class
            self._owned = False
        # Two connections of the relay's own, whatever ``client`` is: the subscriber idles between
        # messages and the stream reader blocks, so neither has the request path's read timeout.
        kwargs["socket_timeout"] = None
        self._listener_client: Any = Redis(
            connection_pool=ConnectionPool(connection_class=connection_class, max_connections=2, **kwargs)
        )
        self._reader_client: Any = Redis(
            connection_pool=ConnectionPool(connection_class=connection_class, max_connections=1, **kwargs)
        )
        self._streams = MultiplexedStreamReader(self._reader_client, block=stream_block)
        self.db = int(kwargs.get("db") or 0)
        self.prefix = prefix
        self.namespace = namespace
        self.server = ""
        self.replica_id = replica_id or secrets.token_hex(4)
        self._claim = self._client.register_script(CLAIM_SCRIPT)
        self._add_bounded = self._client.register_script(ADD_BOUNDED_SCRIPT)
        self._handler: Callable[[Message], None] | None = None
        self._on_reconnect: Callable[[], object] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._run_id: str | None = None  # the Redis run seen last (a restart changes it)
        self._next_check = 0.0
        self._restarted_at: float | None = None  # loop time when a restart was noticed

    def __repr__(self) -> str:
        return f"RedisRelay(prefix={self.prefix!r}, replica_id={self.replica_id!r})"

    def serve(self, server: str) -> None:
        """Name the server this relay joins (``MCP`` calls it with ``ServerOptions.name``)."""
        self.server = server

    # --- messages ---------------------------------------------------------------------------------

    @property
    def _channel_prefix(self) -> str:
        # Pub/sub channels are global to a Redis server: name the server, namespace and database.
        return f"{self.prefix}{self.server}:{self.namespace}:db{self.db}:"

    def _channel(self, replica: str) -> str:
        return f"{self._channel_prefix}replica:{replica}"

    @property
    def _shared_channel(self) -> str:
        return f"{self._channel_prefix}all"

    def start(self, on_message: Callable[[Message], None], on_reconnect: Callable[[], object] | None = None) -> None:
        """Listen for messages to this replica and to all (idempotent; needs a running loop).
        ``on_reconnect`` runs each time the subscriber finds that Redis restarted."""
        self._handler = on_message
        if on_reconnect is not None:
            self._on_reconnect = on_reconnect
        if self._listener is None or self._listener.done():
            self._listener = asyncio.get_running_loop().create_task(self._listen())

    @property
    def started(self) -> bool:
        return self._listener is not None and not self._listener.done()

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
                await self._check_restart()
                while True:
                    raw = await pubsub.get_message(timeout=RESTART_CHECK_SECONDS)
                    if raw is not None:
                        self._dispatch(raw.get("data"))
                    await self._check_restart()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis went away: try again shortly, forever
                self._subscribed.clear()
                logger.warning("relay subscriber lost Redis (%s); reconnecting", exc)
                await asyncio.sleep(RECONNECT_SECONDS)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    async def _check_restart(self) -> None:
        """Call ``on_reconnect`` when Redis is another run than before (it restarted, and forgot
        what it held). The client library resubscribes by itself; this notices what it hides."""
        now = asyncio.get_running_loop().time()
        if now < self._next_check:
            return
        self._next_check = now + RESTART_CHECK_SECONDS
        info = await self._listener_client.info("server")
        run_id = str(info.get("run_id", ""))
        if self._run_id is not None and run_id != self._run_id and self._on_reconnect is not None:
            logger.warning("the relay's Redis restarted; writing back this replica's waits")
            self._restarted_at = now
            self._on_reconnect()
        self._run_id = run_id

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

    async def restarted_within(self, seconds: float) -> bool:
        """Whether Redis restarted (and may have lost what it held) less than ``seconds`` ago: a
        restart the subscriber noticed, or one it has not noticed yet (another run id now)."""
        if self._restarted_at is not None and asyncio.get_running_loop().time() - self._restarted_at < seconds:
            return True
        info = await self._client.info("server")
        return self._run_id is not None and str(info.get("run_id", "")) != self._run_id

    async def forget(self, key: str) -> None:
        await self._client.delete(self.prefix + key)

    # --- facts and sets ----------------------------------------------------------------------------

    async def set_fact(self, key: str, value: str, ttl: float) -> None:
        await self._client.set(self.prefix + key, value, px=_ms(ttl))

    async def facts(self, keys: Sequence[str]) -> list[str | None]:
        return [_text(v) for v in await self._client.mget([self.prefix + k for k in keys])]

    async def add_member(self, key: str, member: str, ttl: float, limit: int) -> bool:
        """Add ``member`` to the set ``key`` unless it already holds ``limit`` others (then False)."""
        return bool(await self._add_bounded(keys=[self.prefix + key], args=[member, limit, _ms(ttl)]))

    async def delete(self, keys: Sequence[str]) -> None:
        if keys:
            await self._client.delete(*[self.prefix + key for key in keys])

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

    async def append(self, stream: str, events: Sequence[Event], ttl: float) -> None:
        """Add ``(seq, fields)`` events to ``stream`` in order (seq >= 0, above every earlier one).
        Events the stream holds already (a retry after a reply was lost) are skipped."""
        from redis.exceptions import ResponseError

        key = self.prefix + "events:" + stream
        async with self._client.pipeline(transaction=False) as pipe:
            for seq, fields in events:
                pipe.xadd(key, fields, id=f"0-{seq + 1}")  # Redis refuses the id 0-0
            pipe.pexpire(key, _ms(ttl))
            results = await pipe.execute(raise_on_error=False)
        for result in results:
            if isinstance(result, ResponseError) and "equal or smaller" not in str(result):
                raise result
            if isinstance(result, Exception) and not isinstance(result, ResponseError):
                raise result

    async def read_now(self, stream: str, after: int) -> list[Event]:
        """The events of ``stream`` after ``after`` that are there now (a short request-path read)."""
        key = self.prefix + "events:" + stream
        found = await self._client.xread({key: f"0-{after + 1}"}, count=100)
        return [event for _name, entries in found or [] for event in decode_entries(entries)]

    async def read(self, stream: str, after: int, block: float) -> list[Event]:
        """The events of ``stream`` after ``after``, waiting up to ``block`` seconds for one; the
        wait shares this replica's one reader connection with every other resumed stream."""
        return await self._streams.read(self.prefix + "events:" + stream, after, block)

    async def exists(self, stream: str) -> bool:
        return bool(await self._client.exists(self.prefix + "events:" + stream))

    async def aclose(self) -> None:
        """Stop listening and reading; close the clients this relay made."""
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(BaseException):
                await self._listener
        await self._streams.aclose()
        # Clients built on a pool of ours do not close it themselves: disconnect the pools.
        clients = [self._listener_client, self._reader_client] + ([self._client] if self._owned else [])
        for client in clients:
            await client.aclose()
            await client.connection_pool.disconnect()


def _retry(retries: int) -> Any:
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff

    return Retry(ExponentialBackoff(cap=1.0, base=0.05), retries)


def _transient() -> list[type[Exception]]:
    from redis.exceptions import ConnectionError, TimeoutError

    return [ConnectionError, TimeoutError]
