"""InMemoryTaskStore against the TaskStore contract: what a Redis store must do the same way."""

from __future__ import annotations

import asyncio
import json

import pytest

from fastapi_mrtr.tasks import InMemoryTaskStore, TaskRecord, TaskStore
from fastapi_mrtr.tasks.record import principal_digest
from fastapi_mrtr.tasks.store import change

pytestmark = pytest.mark.anyio


def record(task_id: str = "t1", **fields: object) -> TaskRecord:
    return TaskRecord(task_id=task_id, principal=principal_digest("Bearer a"), tool="slow", arguments={}, **fields)  # type: ignore[arg-type]


async def test_it_is_a_task_store_and_keeps_plain_json() -> None:
    store = InMemoryTaskStore()
    assert isinstance(store, TaskStore)
    original = record(ttl_ms=1000, answers={"k": {"q": "d", "r": {"action": "accept"}}})
    await store.create(original)
    loaded = await store.get("t1")
    assert loaded == original
    assert TaskRecord.from_json(json.loads(json.dumps(loaded.to_json()))) == original  # type: ignore[union-attr]
    assert original.principal is not None and "Bearer" not in original.principal  # no credential stored


async def test_create_refuses_an_existing_id_and_get_returns_a_copy() -> None:
    store = InMemoryTaskStore()
    await store.create(record())
    with pytest.raises(KeyError):
        await store.create(record())
    copy = await store.get("t1")
    assert copy is not None
    copy.status = "failed"
    assert (await store.get("t1")).status == "working"  # type: ignore[union-attr]
    assert await store.get("unknown") is None


async def test_replace_is_compare_and_set() -> None:
    store = InMemoryTaskStore()
    await store.create(record())
    first, second = await store.get("t1"), await store.get("t1")
    assert first is not None and second is not None
    first.status_message = "first"
    second.status_message = "second"
    assert await store.replace(first, expected_version=0)
    assert not await store.replace(second, expected_version=0)  # someone wrote first
    stored = await store.get("t1")
    assert stored is not None and stored.status_message == "first" and stored.version == 1


async def test_change_retries_on_a_conflict() -> None:
    store = InMemoryTaskStore()
    await store.create(record())
    calls = 0

    def edit(task: TaskRecord) -> bool:
        nonlocal calls
        calls += 1
        if calls == 1:  # another writer slips in between this read and its write
            raced = TaskRecord.from_json(task.to_json())
            raced.status_message = "raced"
            store._write(raced.__class__.from_json({**raced.to_json(), "version": task.version + 1}))
        task.status = "completed"
        return True

    written = await change(store, "t1", edit)
    assert calls == 2 and written is not None and written.status == "completed"
    stored = await store.get("t1")
    assert stored is not None and stored.status == "completed" and stored.status_message == "raced"


async def test_a_task_is_kept_for_its_ttl_then_forgotten() -> None:
    store = InMemoryTaskStore()
    await store.create(record("short", ttl_ms=300))
    await store.create(record("forever", ttl_ms=None))
    assert await store.get("short") is not None
    await asyncio.sleep(0.35)
    assert await store.get("short") is None
    assert await store.get("forever") is not None
    await store.create(record("next"))  # creating sweeps what expired
    assert len(store) == 2
