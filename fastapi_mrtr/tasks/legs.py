"""The legs of tasks that run in this process: start one, cancel one, and settle how it ended.

A *leg* is one run of a task's handler: the first starts with the ``tools/call`` and goes on after
promotion; each later one is a replay started by the ``tasks/update`` that answered the last
outstanding question. A leg ends in one of four ways, each written to the store by :meth:`TaskLegs.settle`:
a result (``completed``, tool errors included), a :class:`~fastapi_mrtr.wire.errors.McpError`
(``failed``), an unanswered ask (``input_required``: its questions get keys never shown before in
this task, and the answers and ``ctx.once`` results reached so far are kept for the next leg), or
cancellation (``cancelled``). No leg waits for a person: a parked task holds no worker.

While a leg runs, this process holds the task's lease (``lease_owner``, ``lease_expires_at``) and
renews it every third of :data:`LEASE_SECONDS`; the record says who runs it. A process that shuts
down gives its legs' leases back (the tasks stay ``working``) instead of calling them cancelled: with
a shared store another replica may take them over once the lease is free.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi_mrtr.engine.call import CallRecord, Notify
from fastapi_mrtr.tasks.record import TaskRecord
from fastapi_mrtr.tasks.store import TaskStore, change
from fastapi_mrtr.wire.errors import INTERNAL_ERROR, MISSING_REQUIRED_CLIENT_CAPABILITY, McpError
from fastapi_mrtr.wire.protocol import JSONObject
from fastapi_mrtr.wire.tasks import CANCELLED, COMPLETED, FAILED, INPUT_REQUIRED

logger = logging.getLogger("fastapi_mrtr")

LEASE_SECONDS = 60.0
PROGRESS = "notifications/progress"


class TaskNotifier:
    """A leg's ``notify``: the call's own stream before promotion, the task's ``statusMessage`` after.

    After promotion the request that carried the call has been answered, and the spec sends no
    progress or log notifications for a task: ``ctx.report_progress`` becomes the status message
    (its ``message``, else ``progress/total``) and log messages are dropped.
    """

    def __init__(self, store: TaskStore, stream: Notify | None) -> None:
        self._store = store
        self._stream = stream
        self.task_id: str | None = None

    async def __call__(self, method: str, params: JSONObject) -> None:
        if self.task_id is None:
            if self._stream is not None:
                await self._stream(method, params)
            return
        if method != PROGRESS:
            return
        message = params.get("message")
        if not isinstance(message, str):
            total = params.get("total")
            message = f"{params.get('progress')}/{total}" if total is not None else f"{params.get('progress')}"

        def edit(record: TaskRecord) -> bool:
            if record.terminal or record.status_message == message:
                return False
            record.status_message = message
            return True

        await change(self._store, self.task_id, edit)


class TaskLegs:
    """The legs running in this process, by task id."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self.owner = secrets.token_hex(8)  # this process, in the lease fields
        self._running: dict[str, asyncio.Task[JSONObject]] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._closing = False

    def is_running(self, task_id: str) -> bool:
        return task_id in self._running

    def take_lease(self, record: TaskRecord) -> None:
        """Mark ``record`` as run by this process (written by the caller with its other changes)."""
        record.lease_owner = self.owner
        record.lease_expires_at = time.time() + LEASE_SECONDS

    def run(self, task_id: str, job: asyncio.Task[JSONObject], record: CallRecord) -> None:
        """Follow a leg already running as ``job``: settle the task when it ends."""
        self._running[task_id] = job
        renewal = asyncio.ensure_future(self._renew_lease(task_id, job))

        def ended(done: asyncio.Task[JSONObject]) -> None:
            renewal.cancel()
            self._spawn(self.settle(task_id, done, record))

        job.add_done_callback(ended)

    async def _renew_lease(self, task_id: str, job: asyncio.Task[JSONObject]) -> None:
        def renew(record: TaskRecord) -> bool:
            if record.terminal or record.lease_owner != self.owner:
                return False
            record.lease_expires_at = time.time() + LEASE_SECONDS
            return True

        while not job.done():
            await asyncio.sleep(LEASE_SECONDS / 3)
            try:
                await change(self.store, task_id, renew)
            except Exception as exc:  # the store is down: the leg goes on; the lease may lapse
                logger.warning("task %s: could not renew its lease: %s", task_id[:8], exc)

    def start(self, task_id: str, leg: Callable[[], Awaitable[JSONObject]], record: CallRecord) -> None:
        """Start a leg (a replay after ``tasks/update``) and follow it."""
        job = asyncio.ensure_future(leg())
        self.run(task_id, job, record)

    def cancel(self, task_id: str) -> bool:
        """Cancel the leg running here, if any; it settles as ``cancelled``."""
        job = self._running.get(task_id)
        if job is None or job.done():
            return False
        job.cancel()
        return True

    async def aclose(self) -> None:
        """Stop every leg of this process (the app is shutting down) and give their leases back."""
        self._closing = True
        for job in list(self._running.values()):
            job.cancel()
        pending = [*self._running.values(), *self._background]
        if pending:
            await asyncio.wait(pending, timeout=5)

    def _spawn(self, work: Awaitable[Any]) -> None:
        background = asyncio.ensure_future(work)
        self._background.add(background)
        background.add_done_callback(self._background.discard)

    async def settle(self, task_id: str, job: asyncio.Task[JSONObject], record: CallRecord) -> None:
        """Write how the leg ended (see the module docstring)."""
        self._running.pop(task_id, None)
        outcome = _outcome_of(job, record)
        if self._closing and outcome[0] == CANCELLED:  # stopped by the shutdown, not by tasks/cancel
            edit: Callable[[TaskRecord], bool] = lambda task: _release(task, self.owner)  # noqa: E731
        else:
            edit = lambda task: _apply(task, outcome, record, self.owner)  # noqa: E731
        try:
            await change(self.store, task_id, edit)
        except Exception:  # the store failed: the task keeps its last state and its lease lapses
            logger.exception("task %s: could not record how its leg ended", task_id)


def _outcome_of(job: asyncio.Task[JSONObject], record: CallRecord) -> tuple[str, Any]:
    if job.cancelled():
        return CANCELLED, None
    exc = job.exception()
    if isinstance(exc, McpError):
        return FAILED, exc.to_error()
    if exc is not None:
        logger.error("task leg raised an unexpected exception", exc_info=exc)
        return FAILED, {"code": INTERNAL_ERROR, "message": "The task failed with an internal error"}
    if record.missing_capability is not None:
        error = {
            "code": MISSING_REQUIRED_CLIENT_CAPABILITY,
            "message": "Missing required client capability",
            "data": {"requiredCapabilities": record.missing_capability},
        }
        return FAILED, error
    if record.manual_input_requests is not None:
        message = "ctx.input_required (manual mode) cannot park a task; use ctx.elicit and its kin"
        return FAILED, {"code": INTERNAL_ERROR, "message": message}
    if record.wants_input:
        return INPUT_REQUIRED, None
    return COMPLETED, job.result()


def _apply(task: TaskRecord, outcome: tuple[str, Any], record: CallRecord, owner: str) -> bool:
    """Edit the task for the leg's outcome; False when it already ended (e.g. cancelled meanwhile)."""
    if task.terminal:
        return False
    status, payload = outcome
    if task.lease_owner == owner:
        task.lease_owner = None
        task.lease_expires_at = None
    if task.cancel_requested and status != COMPLETED:
        status = CANCELLED  # cancelled while it ran: a leg that still finished keeps its result
    task.flow_id = record.flow_id or task.flow_id
    if status == INPUT_REQUIRED:
        _park(task, record)
    elif status == COMPLETED:
        task.status, task.result, task.status_message = COMPLETED, payload, None
    elif status == FAILED:
        task.status, task.error = FAILED, payload
        task.status_message = f"Failed: {payload.get('message')}"
    else:
        task.status, task.status_message = CANCELLED, "Cancelled"
    return True


def _release(task: TaskRecord, owner: str) -> bool:
    """Give the lease back; the task stays as it is (a cancel requested meanwhile still wins)."""
    if task.terminal or task.lease_owner != owner:
        return False
    task.lease_owner, task.lease_expires_at = None, None
    if task.cancel_requested:
        task.status, task.status_message = CANCELLED, "Cancelled"
    return True


def _park(task: TaskRecord, record: CallRecord) -> None:
    """``input_required``: keep what the leg reached, and show its questions under keys new to the task."""
    ledger = record.ledger
    task.answers.update(ledger.used)
    task.once.update(ledger.once_used)
    task.outstanding = {}
    issued = set(task.issued_keys)
    for ask in ledger.input_requests:
        wire_key, n = ask.key, 1
        while wire_key in issued:  # asked again (e.g. its answer was refused): a key never shown
            n += 1
            wire_key = f"{ask.key}~{n}"
        issued.add(wire_key)
        task.issued_keys.append(wire_key)
        task.outstanding[wire_key] = {"key": ask.key, "q": ask.q, "method": ask.method, "params": ask.params}
    task.status = INPUT_REQUIRED
    task.status_message = "Waiting for input"
