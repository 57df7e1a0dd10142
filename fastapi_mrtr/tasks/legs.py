"""The legs of tasks that run in this process: start one, cancel one, and settle how it ended.

A *leg* is one run of a task's handler: the first starts with the ``tools/call`` and goes on after
promotion; each later one is a replay started by the ``tasks/update`` that answered the last
outstanding question. A leg ends in one of four ways, each written to the store by :meth:`TaskLegs.settle`:
a result (``completed``, tool errors included), a :class:`~fastapi_mrtr.wire.errors.McpError`
(``failed``), an unanswered ask (``input_required``: its questions get keys never shown before in
this task, and the answers and ``ctx.once`` results reached so far are kept for the next leg), or
cancellation (``cancelled``). No leg waits for a person: a parked task holds no worker.

While a leg runs, this process holds the task's lease (``lease_owner``), renewed by a heartbeat
(``leases``); if the process dies, another replica takes the task over. A cancel requested on
another replica reaches the leg here through the relay (``ServerOptions.relay``: a ``task_cancel``
message to every replica), else at the next heartbeat. A leg whose lease another process holds
now ends here without writing anything; one stopped by this process's shutdown gives its lease
back (the task stays ``working``, and the next replica to read it resumes it).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi_mrtr.engine.call import CallRecord, Notify
from fastapi_mrtr.state.redis_relay import RedisRelay
from fastapi_mrtr.tasks.leases import LeaseHeartbeat
from fastapi_mrtr.tasks.record import TaskRecord
from fastapi_mrtr.tasks.store import TaskStore, change
from fastapi_mrtr.wire.errors import INTERNAL_ERROR, MISSING_REQUIRED_CLIENT_CAPABILITY, McpError
from fastapi_mrtr.wire.protocol import JSONObject
from fastapi_mrtr.wire.tasks import CANCELLED, COMPLETED, FAILED, INPUT_REQUIRED

logger = logging.getLogger("fastapi_mrtr")

LEASE_SECONDS = 30.0
CANCEL_MESSAGE = "task_cancel"  # the relay message that cancels a leg wherever it runs
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

    def __init__(
        self, store: TaskStore, *, lease_seconds: float = LEASE_SECONDS, relay: RedisRelay | None = None
    ) -> None:
        self.store = store
        self.owner = secrets.token_hex(8)  # this process, in the lease fields
        self.lease_seconds = lease_seconds
        self._relay = relay
        self._running: dict[str, asyncio.Task[JSONObject]] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._lost: set[str] = set()  # legs stopped because another process holds their lease now
        self._closing = False
        self._heartbeat = LeaseHeartbeat(
            store,
            owner=self.owner,
            lease_seconds=lease_seconds,
            running=lambda: list(self._running),
            on_cancel=self.cancel,
            on_lost=self._lose,
        )

    def is_running(self, task_id: str) -> bool:
        return task_id in self._running

    @property
    def closing(self) -> bool:
        """Whether this process is shutting down (it takes no task over then)."""
        return self._closing

    def take_lease(self, record: TaskRecord) -> None:
        """Mark ``record`` as run by this process (written by the caller with its other changes)."""
        record.lease_owner = self.owner
        record.lease_expires_at = time.time() + self.lease_seconds

    def run(self, task_id: str, job: asyncio.Task[JSONObject], record: CallRecord) -> None:
        """Follow a leg already running as ``job``: settle the task when it ends."""
        self._running[task_id] = job
        job.add_done_callback(lambda done: self._spawn(self.settle(task_id, done, record)))
        self._heartbeat.ensure_started()

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

    async def cancel_everywhere(self, task_id: str) -> None:
        """Cancel the leg of ``task_id`` here, or ask every replica to (the one running it will);
        without a relay, the runner sees the cancel flag at its next heartbeat."""
        if self.cancel(task_id) or self._relay is None:
            return
        try:
            await self._relay.broadcast({"t": CANCEL_MESSAGE, "task": task_id})
        except Exception as exc:  # the flag is written: the runner's heartbeat still sees it
            logger.warning("task %s: could not relay its cancel (%s)", task_id[:8], exc)

    def on_relay_message(self, message: JSONObject) -> bool:
        """Handle a message from another replica if it is about tasks (True), else False."""
        if message.get("t") != CANCEL_MESSAGE:
            return False
        task_id = message.get("task")
        if isinstance(task_id, str):
            self.cancel(task_id)
        return True

    def _lose(self, task_id: str) -> None:
        if self.is_running(task_id):
            logger.warning("task %s: another process holds its lease now; its leg here stops", task_id[:8])
            self._lost.add(task_id)
            self.cancel(task_id)

    async def aclose(self) -> None:
        """Stop every leg of this process (the app is shutting down) and give their leases back."""
        self._closing = True
        for job in list(self._running.values()):
            job.cancel()
        if self._running:
            await asyncio.wait(list(self._running.values()), timeout=5)
        await asyncio.sleep(0)  # each stopped leg's done callback spawns its settle: wait for those too
        if self._background:
            await asyncio.wait(list(self._background), timeout=5)
        await self._heartbeat.aclose()

    def _spawn(self, work: Awaitable[Any]) -> None:
        background = asyncio.ensure_future(work)
        self._background.add(background)
        background.add_done_callback(self._background.discard)

    async def settle(self, task_id: str, job: asyncio.Task[JSONObject], record: CallRecord) -> None:
        """Write how the leg ended (see the module docstring)."""
        self._running.pop(task_id, None)
        if task_id in self._lost:
            self._lost.discard(task_id)
            return  # the process that holds the lease now writes the outcome
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
    if task.terminal or task.lease_owner not in (None, owner):
        return False  # ended meanwhile, or another process took the task over: its outcome wins
    status, payload = outcome
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
