"""``tasks/get``, ``tasks/update`` and ``tasks/cancel``: reading, answering and cancelling a task.

Each is refused with -32021 for a client that did not declare the extension on that request, and
is unknown (-32601) on a 2025-era session, where tasks do not exist. A task belongs to the caller
that created it: an id of another caller's task is answered exactly as an unknown one (-32602), so
an id reveals nothing to anyone else.

``tasks/update`` takes answers only for the task's outstanding keys; any other key (never issued,
already answered) is ignored whatever its value, as the spec asks. Answers to a subset leave the
task in ``input_required``; the answer to the last outstanding key starts the next leg here: the
handler is replayed from its first line with the task's ledger, as an MRTR round would be.

``tasks/cancel`` is cooperative: a leg running in this process is cancelled (``CancelledError``
in the handler) and the task ends ``cancelled``; a parked task ends ``cancelled`` at once; a task
that already ended gets the same empty acknowledgement.
"""

from __future__ import annotations

import time

from fastapi_mrtr.engine.call import CallRecord
from fastapi_mrtr.engine.ledger import ReplayLedger
from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.engine.rounds import missing_capability
from fastapi_mrtr.integration.tool_methods import ToolMethods
from fastapi_mrtr.tasks.leases import lease_lapsed, take_over
from fastapi_mrtr.tasks.legs import TaskLegs, TaskNotifier
from fastapi_mrtr.tasks.record import TaskRecord, principal_digest
from fastapi_mrtr.tasks.store import change
from fastapi_mrtr.tasks.tool_calls import PROGRESS_TOKEN_OF_TASKS
from fastapi_mrtr.telemetry.tasks import link_to_creation, task_leg
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.errors import INVALID_PARAMS, METHOD_NOT_FOUND, ServerError
from fastapi_mrtr.wire.protocol import JSONObject
from fastapi_mrtr.wire.tasks import (
    CANCELLED,
    FAILED,
    INPUT_REQUIRED,
    WORKING,
    declares_tasks,
    tasks_capability_required,
)

ACK: JSONObject = {"resultType": "complete"}


def task_not_found() -> ServerError:
    """The one answer for an unknown, expired or another caller's task id."""
    return ServerError(INVALID_PARAMS, "Failed to retrieve task: Task not found")


class TaskMethods:
    """The three ``tasks/*`` methods of one server."""

    def __init__(self, tools: ToolMethods, legs: TaskLegs, options: ServerOptions) -> None:
        self._tools = tools
        self._legs = legs
        self._store = legs.store
        self._options = options

    async def get(self, rpc: RpcRequest) -> JSONObject:
        task = await self._live_task_of(rpc)
        return task.detailed()

    async def update(self, rpc: RpcRequest) -> JSONObject:
        task = await self._live_task_of(rpc)
        responses = rpc.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise ServerError(INVALID_PARAMS, "Invalid params: tasks/update needs inputResponses, an object")
        resumed = False

        def answer(record: TaskRecord) -> bool:
            nonlocal resumed
            resumed = False
            if record.status != INPUT_REQUIRED:
                return False  # nothing is outstanding: every key is ignored
            taken = False
            for key, response in responses.items():
                entry = record.outstanding.pop(key, None)
                if entry is None:
                    continue  # never issued, or already answered: ignored (spec)
                record.answers[entry["key"]] = {"q": entry["q"], "r": response}
                taken = True
            if taken and not record.outstanding:
                record.status, record.status_message, resumed = WORKING, "Working", True
                record.client_capabilities = {**record.client_capabilities, **rpc.client_capabilities}
                self._legs.take_lease(record)
            return taken

        updated = await change(self._store, task.task_id, answer)
        if updated is None:
            raise task_not_found()
        if resumed:
            await self._resume(rpc, updated)
        return dict(ACK)

    async def cancel(self, rpc: RpcRequest) -> JSONObject:
        task = await self._task_of(rpc)
        runs_here = self._legs.is_running(task.task_id)

        def request_cancel(record: TaskRecord) -> bool:
            if record.terminal:
                return False  # already ended: the same empty acknowledgement
            record.cancel_requested = True
            if not runs_here and not _leg_running_elsewhere(record):
                record.status, record.status_message = CANCELLED, "Cancelled"
            return True

        cancelled = await change(self._store, task.task_id, request_cancel)
        if cancelled is not None and not cancelled.terminal:  # a leg runs, here or elsewhere: stop it
            await self._legs.cancel_everywhere(task.task_id)  # the leg settles the task as cancelled
        return dict(ACK)

    async def _live_task_of(self, rpc: RpcRequest) -> TaskRecord:
        """The caller's task, taken over first when its runner's lease lapsed (``leases``)."""
        task = await self._task_of(rpc)
        if not lease_lapsed(task) or self._legs.is_running(task.task_id) or self._legs.closing:
            return task
        tool = self._tools.registry.resolved().get(task.tool)
        resumable = tool is None or tool.spec.task is None or tool.spec.task.resumable  # gone: _resume fails it
        task, decision = await take_over(
            self._store, task, owner=self._legs.owner, lease_seconds=self._legs.lease_seconds, resumable=resumable
        )
        if decision == "resume":
            await self._resume(rpc, task)
            task = await self._store.get(task.task_id) or task
        return task

    async def _task_of(self, rpc: RpcRequest) -> TaskRecord:
        """The caller's task named by ``params.taskId``, after the checks every method makes."""
        if rpc.legacy:
            raise ServerError(METHOD_NOT_FOUND, f"Method not found: {rpc.method}")
        if not declares_tasks(rpc.client_capabilities):
            raise missing_capability(tasks_capability_required())
        task_id = rpc.params.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise ServerError(INVALID_PARAMS, f"Invalid params: {rpc.method} needs taskId, a string")
        task = await self._store.get(task_id)
        if task is None or task.principal != principal_digest(self._options.principal_resolver(rpc.headers)):
            raise task_not_found()
        link_to_creation(task.trace_anchor, task.flow_id)  # this request's span, when traced
        return task

    async def _resume(self, rpc: RpcRequest, task: TaskRecord) -> None:
        """Start the next leg here: the handler replayed with the task's ledger."""
        tool = self._tools.registry.resolved().get(task.tool)
        if tool is None:  # the tool is gone (a redeploy): the task cannot go on

            def fail(record: TaskRecord) -> bool:
                record.status, record.status_message = FAILED, "The tool is no longer served"
                record.error = {"code": INVALID_PARAMS, "message": f"Unknown tool: {task.tool}"}
                return True

            await change(self._store, task.task_id, fail)
            return
        notifier = TaskNotifier(self._store, None)
        notifier.task_id = task.task_id
        record = CallRecord(
            method="tools/call",
            target=task.tool,
            arguments=task.arguments,
            client_capabilities=task.client_capabilities,
            ledger=ReplayLedger(answers=dict(task.answers), once_results=dict(task.once)),
            flow_id=task.flow_id,
            round=max(1, len(task.issued_keys)),  # > 0: ctx.is_replaying (after a park, or a takeover)
            progress_token=PROGRESS_TOKEN_OF_TASKS,
            notify=notifier,
            strict_replay=self._options.strict_replay,
        )
        scope, telemetry = rpc.scope, self._options.telemetry

        async def leg() -> JSONObject:
            with task_leg(telemetry, task.tool, task.flow_id, task.trace_anchor):  # a span, when traced
                return await self._tools.run_tool(tool, scope, task.arguments, record)

        self._legs.start(task.task_id, leg, record)


def _leg_running_elsewhere(record: TaskRecord) -> bool:
    """Whether another process holds a live lease on the task (it will see the cancel flag)."""
    if record.status != WORKING or record.lease_owner is None or record.lease_expires_at is None:
        return False
    return record.lease_expires_at > time.time()
