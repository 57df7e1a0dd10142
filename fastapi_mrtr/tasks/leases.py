"""Leases: which process runs a task's leg, kept alive by a heartbeat, taken over when it lapses.

A process that runs a leg writes itself into the record (``lease_owner``) with an expiry
(``lease_expires_at``, ``lease_seconds`` ahead). While the leg runs, :class:`LeaseHeartbeat`
pushes the expiry forward every third of the lease; the same beat sees what other replicas wrote
meanwhile: a ``cancel_requested`` flag cancels the leg here (the relay usually got there first),
and a lease that someone else holds, or a task that already ended, stops the leg here without
writing anything (the other writer wins).

When the process dies, nothing renews its leases. Whoever next reads the task (``tasks/get`` or
``tasks/update``, on any replica) finds it ``working`` with a lapsed lease and calls
:func:`take_over`: one compare-and-set decides which replica wins; the winner holds the lease and
replays the leg from the task's ledger (answers and ``ctx.once`` results up to its last park),
or, when the tool declared ``resumable=False``, ends the task ``failed`` with a clear error; a
task whose cancel was requested ends ``cancelled``. Replicas' clocks must agree to well within a
lease (NTP does): the expiry is compared with the reader's clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Literal

from fastapi_mrtr.tasks.record import TaskRecord
from fastapi_mrtr.tasks.store import TaskStore, change
from fastapi_mrtr.wire.errors import INTERNAL_ERROR
from fastapi_mrtr.wire.tasks import CANCELLED, FAILED, WORKING

logger = logging.getLogger("fastapi_mrtr")

Takeover = Literal["resume", "failed", "cancelled"]
INTERRUPTED_REASON = "task_interrupted"


def lease_lapsed(record: TaskRecord, now: float | None = None) -> bool:
    """Whether ``record`` is ``working`` but nobody holds a live lease on it (its runner is gone)."""
    if record.status != WORKING:
        return False
    expires = record.lease_expires_at
    return record.lease_owner is None or expires is None or expires < (time.time() if now is None else now)


def interrupted_error(tool: str) -> dict[str, object]:
    """The ``error`` of a task whose runner stopped and whose tool cannot be run again."""
    message = (
        f"The task was interrupted: the server process running {tool!r} stopped, "
        "and the tool is declared not resumable (resumable=False); call it again"
    )
    return {"code": INTERNAL_ERROR, "message": message, "data": {"reason": INTERRUPTED_REASON}}


async def take_over(
    store: TaskStore, task: TaskRecord, *, owner: str, lease_seconds: float, resumable: bool
) -> tuple[TaskRecord, Takeover | None]:
    """Settle a task whose lease lapsed (see the module docstring); returns the record as it is now
    and what this process did: ``"resume"`` (it now holds the lease and must start the leg),
    ``"failed"``, ``"cancelled"``, or None (the lease is live again: another replica won)."""
    decision: Takeover | None = None

    def edit(record: TaskRecord) -> bool:
        nonlocal decision
        decision = None
        if not lease_lapsed(record):
            return False
        if record.cancel_requested:
            decision = "cancelled"
            record.status, record.status_message = CANCELLED, "Cancelled"
        elif not resumable:
            decision = "failed"
            record.status, record.error = FAILED, interrupted_error(record.tool)
            record.status_message = "Failed: interrupted"
        else:
            decision = "resume"
            record.status_message = "Working (resumed)"
        record.lease_owner = None if decision != "resume" else owner
        record.lease_expires_at = None if decision != "resume" else time.time() + lease_seconds
        return True

    current = await change(store, task.task_id, edit)
    if current is None:
        return task, None
    if decision is not None:
        logger.warning("task %s: its runner's lease lapsed; this process %s it", task.task_id[:8], decision)
    return current, decision


class LeaseHeartbeat:
    """Renews the leases of the legs running here while any runs (see the module docstring).

    ``running()`` lists the task ids whose legs run here; ``on_cancel(task_id)`` cancels one
    (its cancel was requested elsewhere); ``on_lost(task_id)`` stops one without recording it.
    """

    def __init__(
        self,
        store: TaskStore,
        *,
        owner: str,
        lease_seconds: float,
        running: Callable[[], Iterable[str]],
        on_cancel: Callable[[str], object],
        on_lost: Callable[[str], None],
    ) -> None:
        if lease_seconds <= 0:
            raise ValueError("lease_seconds must be positive")
        self._store = store
        self._owner = owner
        self.lease_seconds = lease_seconds
        self._running = running
        self._on_cancel = on_cancel
        self._on_lost = on_lost
        self._beating: asyncio.Task[None] | None = None

    def ensure_started(self) -> None:
        """Start beating (idempotent; needs a running loop). It stops when no leg runs here."""
        if self._beating is None or self._beating.done():
            self._beating = asyncio.get_running_loop().create_task(self._beat_while_running())

    async def _beat_while_running(self) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            if not list(self._running()):
                return
            try:
                await self.beat()
            except Exception as exc:  # Redis away: the next beat tries again (the lease has 2 more)
                logger.warning("could not renew task leases: %s", exc)

    async def beat(self) -> None:
        """Renew every lease held here once (one read and one compare-and-set per task)."""
        await asyncio.gather(*(self._renew(task_id) for task_id in list(self._running())))

    async def _renew(self, task_id: str) -> None:
        record = await self._store.get(task_id)
        if record is None or record.terminal or record.lease_owner != self._owner:
            self._on_lost(task_id)  # ended or taken over elsewhere, or expired: its outcome is not ours
            return
        if record.cancel_requested:
            self._on_cancel(task_id)
        expected = record.version
        record.lease_expires_at = time.time() + self.lease_seconds
        # No touch(): a renewal is not a change the client sees in lastUpdatedAt. A conflict
        # (someone wrote the task meanwhile) is left to the next beat.
        await self._store.replace(record, expected_version=expected)

    async def aclose(self) -> None:
        if self._beating is not None:
            self._beating.cancel()
            with contextlib.suppress(BaseException):
                await self._beating
