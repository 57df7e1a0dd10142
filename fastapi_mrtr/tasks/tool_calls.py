"""``tools/call`` of a tool that may run as a task: a plain call until its deadline, a task after it.

The call runs exactly like any other (``ToolMethods.run_tool`` inside an MRTR round), but as an
``asyncio`` task this request waits on for the tool's ``promote_after``. What ends within it answers
as a plain call: a result, an error, or ``input_required`` (MRTR before the task exists, with its
sealed ``requestState``). What is still running then is *promoted*: the task is created in the
store (durably, before anything is answered), the request answers ``CreateTaskResult``, and the
run goes on as the task's first leg (``legs``). The handler is not changed in any way.

Who gets a task: only a client that declared the extension on this very request, on the
2026-07-28 wire. Without it an ``optional`` tool runs as a plain call and a ``required`` one is
refused with -32021; a 2025-era session runs every tool as a plain call.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os

from fastapi_mrtr.engine.call import CallRecord
from fastapi_mrtr.engine.options import ServerOptions
from fastapi_mrtr.engine.rounds import Round, missing_capability
from fastapi_mrtr.engine.task_config import TaskConfig
from fastapi_mrtr.integration.tool_methods import ToolMethods
from fastapi_mrtr.integration.tools import ToolDefinition
from fastapi_mrtr.tasks.legs import TaskLegs, TaskNotifier
from fastapi_mrtr.tasks.record import TaskRecord, new_task_id, principal_digest
from fastapi_mrtr.telemetry.tasks import creation_anchor
from fastapi_mrtr.transport.request import RpcRequest
from fastapi_mrtr.wire.errors import INTERNAL_ERROR, ServerError
from fastapi_mrtr.wire.protocol import JSONObject
from fastapi_mrtr.wire.tasks import declares_tasks, tasks_capability_required

logger = logging.getLogger("fastapi_mrtr")

PROGRESS_TOKEN_OF_TASKS = "fastapi-mrtr/task"  # lets ctx.report_progress reach the task's status message


class TaskToolCalls:
    """The ``tools/call`` handler when some tool may run as a task (see the module docstring)."""

    def __init__(self, tools: ToolMethods, legs: TaskLegs, options: ServerOptions) -> None:
        self._tools = tools
        self._legs = legs
        self._options = options

    async def call_tool(self, rpc: RpcRequest) -> JSONObject:
        tool, arguments = self._tools.tool_call_of(rpc)
        config = tool.spec.task
        if config is None or rpc.legacy:  # tasks do not exist on a 2025-era session
            return await self._tools.call_tool(rpc)
        if not declares_tasks(rpc.client_capabilities):
            if config.mode == "required":
                raise missing_capability(tasks_capability_required())
            return await self._tools.call_tool(rpc)
        return await self._call_maybe_promoted(rpc, tool, config, arguments)

    async def _call_maybe_promoted(
        self, rpc: RpcRequest, tool: ToolDefinition, config: TaskConfig, arguments: JSONObject
    ) -> JSONObject:
        round_ = await Round.open(
            self._tools.state_guard,
            method="tools/call",
            target=tool.name,
            arguments=arguments,
            params=rpc.params,
            headers=rpc.headers,
            client_capabilities=rpc.client_capabilities,
            progress_token=rpc.progress_token,
            log_level=rpc.log_level,
            notify=rpc.notify,
        )
        record = round_.record
        notifier = TaskNotifier(self._legs.store, record.notify)
        record.notify = notifier
        job = asyncio.create_task(self._tools.run_tool(tool, rpc.scope, arguments, record))
        promoted = False
        try:
            if config.promote_after > 0:  # 0: a task at once, before the handler runs a line
                await asyncio.wait({job}, timeout=config.promote_after)
            if job.done():
                return round_.outcome(job.result())
            result = await self._promote(rpc, tool, config, arguments, (job, record), notifier)
            promoted = True
            return result
        except ServerError as exc:
            if exc.correctable:  # the client can fix this and resend the same state: give it back
                await round_.release()
            raise
        finally:
            if not promoted and not job.done():  # this request was cancelled (the client left)
                job.cancel()

    async def _promote(
        self,
        rpc: RpcRequest,
        tool: ToolDefinition,
        config: TaskConfig,
        arguments: JSONObject,
        running: tuple[asyncio.Task[JSONObject], CallRecord],
        notifier: TaskNotifier,
    ) -> JSONObject:
        job, record = running
        if record.flow_id is None:  # every leg keeps it: ctx.idempotency_key is the same on each
            record.flow_id = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        task = TaskRecord(
            task_id=new_task_id(),
            principal=principal_digest(self._options.principal_resolver(rpc.headers)),
            tool=tool.name,
            arguments=arguments,
            ttl_ms=config.ttl_ms,
            poll_interval_ms=config.poll_interval_ms,
            flow_id=record.flow_id,
            client_capabilities=dict(rpc.client_capabilities),
            status_message="Working",
            trace_anchor=creation_anchor(record.flow_id),  # this span, for later legs' links
        )
        self._legs.take_lease(task)
        try:
            await self._legs.store.create(task)  # durable before the CreateTaskResult is sent
        except Exception:
            logger.exception("task store unavailable; the call is not promoted")
            raise ServerError(
                INTERNAL_ERROR,
                "The task store is unavailable; retry later",
                {"reason": "task_store_unavailable"},
                http_status=503,
            ) from None
        notifier.task_id = task.task_id
        if record.progress_token is None:
            record.progress_token = PROGRESS_TOKEN_OF_TASKS
        self._legs.run(task.task_id, job, record)
        logger.info("tools/call %r became task %s", tool.name, task.task_id[:8])
        return task.create_result()
