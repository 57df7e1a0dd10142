"""``InMemoryTaskStore``: tasks in this process's memory, for one process (and tests).

It keeps each record as JSON text, so what it stores is exactly what a shared store (Redis) would
hold and a record that cannot be serialised fails here too. Expired tasks are swept as new ones
are created. Several workers or replicas need a shared store: a task created by one process is
unknown to the others.
"""

from __future__ import annotations

import json
import time

from fastapi_mrtr.tasks.record import TaskRecord


class InMemoryTaskStore:
    """The :class:`~fastapi_mrtr.tasks.store.TaskStore` of one process."""

    def __init__(self) -> None:
        self._records: dict[str, str] = {}
        self._expiry: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._records)

    async def create(self, record: TaskRecord) -> None:
        self._sweep()
        if record.task_id in self._records:
            raise KeyError(record.task_id)
        record.version = 0
        self._write(record)

    async def get(self, task_id: str) -> TaskRecord | None:
        text = self._records.get(task_id)
        if text is None:
            return None
        expiry = self._expiry.get(task_id)
        if expiry is not None and expiry < time.time():
            self._forget(task_id)
            return None
        return TaskRecord.from_json(json.loads(text))

    async def replace(self, record: TaskRecord, *, expected_version: int) -> bool:
        stored = await self.get(record.task_id)
        if stored is None or stored.version != expected_version:
            return False
        copy = TaskRecord.from_json(record.to_json())
        copy.version = expected_version + 1
        self._write(copy)
        return True

    def _write(self, record: TaskRecord) -> None:
        self._records[record.task_id] = json.dumps(record.to_json(), separators=(",", ":"))
        expiry = record.expires_at
        if expiry is None:
            self._expiry.pop(record.task_id, None)
        else:
            self._expiry[record.task_id] = expiry

    def _forget(self, task_id: str) -> None:
        self._records.pop(task_id, None)
        self._expiry.pop(task_id, None)

    def _sweep(self) -> None:
        now = time.time()
        for task_id in [t for t, at in self._expiry.items() if at < now]:
            self._forget(task_id)
