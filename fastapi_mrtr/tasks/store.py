"""Where tasks live: the :class:`TaskStore` protocol, and :func:`change`, its one read-modify-write loop.

A store keeps :class:`~fastapi_mrtr.tasks.record.TaskRecord` objects by task id. It has three
operations, each a single atomic step on one key, so a Redis store is a ``SET NX``, a ``GET`` and a
compare-and-set script (``WATCH``/``MULTI`` or Lua on the ``version`` field):

* :meth:`TaskStore.create` stores a new record and returns only once a :meth:`TaskStore.get` of it
  from any replica would find it (the spec's "durably created" before ``CreateTaskResult``);
* :meth:`TaskStore.get` returns a fresh copy (mutating it changes nothing stored), or None for an
  unknown or expired id;
* :meth:`TaskStore.replace` writes a changed record only if the stored one still has
  ``expected_version``, and bumps ``version``; it returns False when someone else wrote first.

A record is plain JSON (``TaskRecord.to_json``/``from_json``). A store may forget a record once its
``expires_at`` (creation + ``ttl_ms``) has passed, never before; a record with ``ttl_ms=None``
is kept until the store is cleared. Principals are checked by the caller, not the store.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from fastapi_mrtr.tasks.record import TaskRecord


@runtime_checkable
class TaskStore(Protocol):
    """Keeps tasks for ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` (see the module docstring)."""

    async def create(self, record: TaskRecord) -> None:
        """Store a new record (``version`` 0); durable when this returns. Raises ``KeyError`` if the id exists."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """A copy of the record, or None when the id is unknown or the task expired."""
        ...

    async def replace(self, record: TaskRecord, *, expected_version: int) -> bool:
        """Write ``record`` (its ``version`` becomes ``expected_version + 1``) if the stored version is
        still ``expected_version``; False if it changed meanwhile or the task is gone."""
        ...


MAX_ATTEMPTS = 20
BACKOFF_CAP = 0.05  # seconds: the longest wait between two attempts


async def change(store: TaskStore, task_id: str, edit: Callable[[TaskRecord], bool]) -> TaskRecord | None:
    """Read, edit and write back one task, again on a conflict; returns the record as written.

    ``edit`` changes the record in place and returns whether anything changed (False: nothing is
    written). Returns None when the task is unknown or expired.
    """
    for attempt in range(MAX_ATTEMPTS):
        if attempt:
            # Lost a race. Of writers that read the same version only one wins, so without a wait
            # the same crowd collides again and the last of n writers needs n attempts; a random
            # wait, growing with each loss, spreads them out.
            await asyncio.sleep(random.uniform(0, min(BACKOFF_CAP, 0.001 * 2**attempt)))
        record = await store.get(task_id)
        if record is None:
            return None
        expected = record.version
        if not edit(record):
            return record
        record.touch()
        if await store.replace(record, expected_version=expected):
            record.version = expected + 1
            return record
    raise RuntimeError(f"task {task_id!r}: too many concurrent writers")
