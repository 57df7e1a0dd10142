"""``RedisTaskStore``: tasks in Redis, shared by every worker and replica of a server.

    from fastapi_mrtr.tasks.redis_store import RedisTaskStore

    mcp = MCP(app, options=ServerOptions(relay=RedisRelay(url)), task_store=RedisTaskStore(url))

One key per task (``prefix + task id``) holding the record as JSON text, so each operation of the
:class:`~fastapi_mrtr.tasks.store.TaskStore` protocol is one atomic Redis step:

* ``create`` is ``SET key json NX PX lifetime``: of two creates of one id exactly one wins, and
  Redis has applied it when the reply comes, so a ``tasks/get`` on any replica finds it before the
  ``CreateTaskResult`` is sent. With ``wait_replicas`` set, ``WAIT`` also holds the reply until
  that many Redis replicas have the write (for a failover that must not lose a task);
* ``get`` is ``GET``;
* ``replace`` is one Lua script: it reads the stored record's ``version`` and writes the new text
  only if it is still the expected one (compare-and-set), so two replicas editing one task never
  lose each other's change: the loser reads again (``store.change``).

The key's lifetime is never shorter than the task's: it expires ``clock_skew`` seconds after
``createdAt + ttlMs`` (a replica whose clock runs a little behind must still find the task), and
each ``replace`` sets it again from the record, so a changed ``ttl_ms`` moves it. A task with
``ttl_ms=None`` is kept ``ttl_without_expiry`` seconds after its last write (Redis needs a bound;
the default is a week). ``get`` never returns a task past its ``expires_at``, whatever the key's
lifetime. Redis errors propagate: the server answers the request they concern with a 503.
Needs the ``redis`` package (``pip install "fastapi-mrtr[redis]"``).
"""

from __future__ import annotations

import json
import math
import time
from typing import TYPE_CHECKING

from fastapi_mrtr.state.redis_client import redis_client
from fastapi_mrtr.tasks.record import TaskRecord

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisTaskStore"]

# KEYS[1] the task; ARGV[1] expected version, ARGV[2] new JSON text, ARGV[3] lifetime in ms.
# 1: written; 0: the version changed meanwhile, or the task is gone.
REPLACE_SCRIPT = """
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
if tonumber(cjson.decode(current)['version']) ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
"""


class RedisTaskStore:
    """A :class:`~fastapi_mrtr.tasks.store.TaskStore` in Redis (``redis.asyncio``).

    ``client`` is a ``redis.asyncio.Redis`` (used as is, not closed by :meth:`aclose`) or a URL
    (a client is made with ``connect_timeout`` and ``timeout`` in seconds, so a dead Redis fails a
    request quickly instead of hanging it). See the module docstring for ``clock_skew``,
    ``ttl_without_expiry`` and ``wait_replicas``.
    """

    def __init__(
        self,
        client: Redis | str,
        *,
        prefix: str = "mrtr:task:",
        clock_skew: float = 60.0,
        ttl_without_expiry: float = 7 * 86_400.0,
        wait_replicas: int = 0,
        wait_timeout: float = 1.0,
        connect_timeout: float = 2.0,
        timeout: float = 2.0,
    ) -> None:
        if clock_skew < 0 or ttl_without_expiry <= 0 or wait_replicas < 0 or wait_timeout <= 0:
            raise ValueError("clock_skew and wait_replicas must be >= 0, ttl_without_expiry and wait_timeout > 0")
        self._client, self._owned = redis_client(client, connect_timeout=connect_timeout, timeout=timeout)
        self.prefix = prefix
        self._replace = self._client.register_script(REPLACE_SCRIPT)
        self._clock_skew = clock_skew
        self._ttl_without_expiry = ttl_without_expiry
        self._wait_replicas = wait_replicas
        self._wait_timeout = wait_timeout

    def __repr__(self) -> str:
        return f"RedisTaskStore(prefix={self.prefix!r})"

    def key_for(self, task_id: str) -> str:
        """The Redis key holding ``task_id``."""
        return self.prefix + task_id

    def lifetime_ms(self, record: TaskRecord, now: float | None = None) -> int:
        """How long the key of ``record`` is kept from ``now``: past its ``expires_at`` plus
        ``clock_skew``, never less (see the module docstring)."""
        now = time.time() if now is None else now
        expires_at = record.expires_at
        if expires_at is None:
            return math.ceil(self._ttl_without_expiry * 1000)
        return max(1000, math.ceil((expires_at - now + self._clock_skew) * 1000))

    async def create(self, record: TaskRecord) -> None:
        record.version = 0
        if not await self._client.set(
            self.key_for(record.task_id), _text(record), nx=True, px=self.lifetime_ms(record)
        ):
            raise KeyError(record.task_id)
        if self._wait_replicas:
            acknowledged = int(await self._client.wait(self._wait_replicas, math.ceil(self._wait_timeout * 1000)))
            if acknowledged < self._wait_replicas:
                raise ConnectionError(f"task {record.task_id[:8]}: {acknowledged} of {self._wait_replicas} replicas")

    async def get(self, task_id: str) -> TaskRecord | None:
        text = await self._client.get(self.key_for(task_id))
        if text is None:
            return None
        record = TaskRecord.from_json(json.loads(text))
        expires_at = record.expires_at
        if expires_at is not None and expires_at < time.time():
            return None  # past its TTL: gone for every caller, though Redis keeps it clock_skew longer
        return record

    async def replace(self, record: TaskRecord, *, expected_version: int) -> bool:
        copy = TaskRecord.from_json(record.to_json())
        copy.version = expected_version + 1
        args = [expected_version, _text(copy), self.lifetime_ms(copy)]
        return bool(await self._replace(keys=[self.key_for(record.task_id)], args=args))

    async def delete(self, task_id: str) -> None:
        """Forget ``task_id`` now (housekeeping and tests; the protocol never needs it)."""
        await self._client.delete(self.key_for(task_id))

    async def aclose(self) -> None:
        """Close the client if this store made it from a URL."""
        if self._owned:
            await self._client.aclose()


def _text(record: TaskRecord) -> str:
    return json.dumps(record.to_json(), separators=(",", ":"))
