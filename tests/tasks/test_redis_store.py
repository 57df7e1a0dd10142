"""``RedisTaskStore`` against a real redis-server: durable create, compare-and-set, key lifetimes.

Two stores on two clients stand for two replicas: what one writes, the other reads at once, and
their concurrent edits of one task all land (none lost to a stale write).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from fastapi_mrtr.tasks.record import TaskRecord, new_task_id
from fastapi_mrtr.tasks.redis_store import RedisTaskStore
from fastapi_mrtr.tasks.store import TaskStore, change
from tests.scaleout.services import RedisServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a redis-server per test
SKEW = 60.0


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def stores(redis_server: RedisServer) -> AsyncIterator[tuple[RedisTaskStore, RedisTaskStore, Redis]]:
    """Two stores (two replicas' clients) and a raw client to look at what Redis holds."""
    first, second = RedisTaskStore(redis_server.url), RedisTaskStore(redis_server.url)
    raw = Redis.from_url(redis_server.url)
    yield first, second, raw
    for store in (first, second):
        await store.aclose()
    await raw.aclose()


def a_task(ttl_ms: int | None = 60_000) -> TaskRecord:
    return TaskRecord(task_id=new_task_id(), principal="alice", tool="slow", arguments={"n": 1}, ttl_ms=ttl_ms)


async def test_it_is_a_task_store_and_a_create_is_read_by_another_replica_at_once(
    stores: tuple[RedisTaskStore, RedisTaskStore, Redis],
) -> None:
    first, second, _ = stores
    assert isinstance(first, TaskStore)
    task = a_task()
    task.answers = {"name": {"q": "digest", "r": {"action": "accept", "content": {"name": "Ada"}}}}
    await first.create(task)
    found = await second.get(task.task_id)  # the very next command, on another connection
    assert found is not None and found.to_json() == task.to_json() and found.version == 0
    assert await second.get(new_task_id()) is None


async def test_a_second_create_of_one_id_is_refused(stores: tuple[RedisTaskStore, RedisTaskStore, Redis]) -> None:
    first, second, _ = stores
    task = a_task()
    await first.create(task)
    other = a_task()
    other.task_id = task.task_id
    with pytest.raises(KeyError):
        await second.create(other)
    stored = await first.get(task.task_id)
    assert stored is not None and stored.tool == "slow" and stored.arguments == {"n": 1}


async def test_replace_is_a_compare_and_set_on_the_version(
    stores: tuple[RedisTaskStore, RedisTaskStore, Redis],
) -> None:
    first, second, _ = stores
    task = a_task()
    await first.create(task)
    mine, theirs = await first.get(task.task_id), await second.get(task.task_id)
    assert mine is not None and theirs is not None
    mine.status_message = "mine"
    theirs.status_message = "theirs"
    assert await first.replace(mine, expected_version=0)
    assert not await second.replace(theirs, expected_version=0)  # stale: version 1 is stored now
    stored = await second.get(task.task_id)
    assert stored is not None and stored.status_message == "mine" and stored.version == 1
    assert not await first.replace(a_task(), expected_version=0)  # a task that does not exist


async def test_concurrent_edits_from_two_replicas_all_land(
    stores: tuple[RedisTaskStore, RedisTaskStore, Redis],
) -> None:
    first, second, _ = stores
    task = a_task()
    await first.create(task)

    def add(key: str):  # type: ignore[no-untyped-def]
        def edit(record: TaskRecord) -> bool:
            record.once[key] = True
            return True

        return edit

    # Forty writers at once, twenty per replica: of those that read one version only one wins, so
    # without a wait between attempts the last writer needed forty (the limit is twenty).
    writers = [(store, f"{name}-{i}") for i in range(20) for name, store in (("first", first), ("second", second))]
    await asyncio.gather(*(change(store, task.task_id, add(key)) for store, key in writers))
    stored = await first.get(task.task_id)
    assert stored is not None and len(stored.once) == 40 and stored.version == 40


async def test_the_key_outlives_created_at_plus_ttl_plus_the_clock_skew(
    stores: tuple[RedisTaskStore, RedisTaskStore, Redis],
) -> None:
    first, _, raw = stores
    task = a_task(ttl_ms=5_000)
    await first.create(task)
    left_ms = await raw.pttl(first.key_for(task.task_id))
    floor_ms = (task.created_at + 5.0 + SKEW - time.time()) * 1000
    assert floor_ms - 1000 <= left_ms <= floor_ms + 1000, (left_ms, floor_ms)  # PX rounds up; never early
    # A replace keeps it (and a longer TTL moves it).
    stored = await first.get(task.task_id)
    assert stored is not None
    stored.ttl_ms = 600_000
    assert await first.replace(stored, expected_version=0)
    assert await raw.pttl(first.key_for(task.task_id)) > (600 + SKEW - 5) * 1000


async def test_a_task_without_ttl_is_kept_a_week_and_a_task_past_its_ttl_is_gone(
    stores: tuple[RedisTaskStore, RedisTaskStore, Redis],
) -> None:
    first, second, raw = stores
    forever = a_task(ttl_ms=None)
    await first.create(forever)
    assert await raw.pttl(first.key_for(forever.task_id)) > 7 * 86_400_000 - 5_000
    old = a_task(ttl_ms=1_000)
    old.created_at = old.last_updated_at = time.time() - 2.0  # its TTL ended a second ago
    await first.create(old)
    assert await raw.exists(first.key_for(old.task_id))  # Redis keeps it clock_skew longer...
    assert await second.get(old.task_id) is None  # ...but no replica returns it


async def test_wait_replicas_fails_the_create_when_redis_has_no_replica(redis_server: RedisServer) -> None:
    store = RedisTaskStore(redis_server.url, wait_replicas=1, wait_timeout=0.2)
    try:
        with pytest.raises(ConnectionError, match="0 of 1 replicas"):
            await store.create(a_task())
    finally:
        await store.aclose()


async def test_a_dead_redis_fails_fast_with_a_redis_error(tmp_path: Path) -> None:
    from redis.exceptions import ConnectionError as RedisConnectionError

    server = RedisServer(tmp_path / "gone")  # never started: nothing listens on its port
    store = RedisTaskStore(server.url, connect_timeout=0.5, timeout=0.5)
    began = time.monotonic()
    try:
        with pytest.raises(RedisConnectionError):
            await store.get(new_task_id())
    finally:
        await store.aclose()
    assert time.monotonic() - began < 5
