"""Driving a task (SEP-2663) to its result: :class:`ToolTask`.

A ``tools/call`` the server turned into a task is followed with ``tasks/get`` every
``pollIntervalMs`` (within ``TaskOptions``' bounds). A task in ``input_required`` lists its
questions on each poll, all of them outstanding at that moment (a snapshot): the same handlers as
the MRTR loop answer the ones not answered yet, and ``tasks/update`` sends the answers. The end is
what a plain call would have given: ``completed`` is the tool's result (a tool error included,
``isError``), ``failed`` raises its JSON-RPC error (:class:`TaskFailedError`), ``cancelled`` raises
:class:`TaskCancelledError`. A wait that ends any other way (the awaiting coroutine cancelled, a
handler failing, a time limit) sends ``tasks/cancel`` on its way out, so no task is left running
for nobody; :meth:`ToolTask.wait` can be told not to.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Union

import anyio

from fastapi_mrtr.client._errors import (
    InvalidServerResponseError,
    RoundTimeoutError,
    TaskCancelledError,
    TaskFailedError,
    TaskInputRequiredError,
    TaskTimeoutError,
)
from fastapi_mrtr.client._handlers import InputAnswer, InputHandlers
from fastapi_mrtr.client._results import seed_answers
from fastapi_mrtr.client._task_wire import TaskInfo, completed_result, parse_task
from fastapi_mrtr.client._types import call_back
from fastapi_mrtr.client.options import InputRequiredConfig, TaskOptions
from fastapi_mrtr.wire.mrtr import InputRequest
from fastapi_mrtr.wire.protocol import CallToolResult, JSONObject
from fastapi_mrtr.wire.tasks import CANCELLED, COMPLETED, FAILED, INPUT_REQUIRED, TASKS_CANCEL, TASKS_GET, TASKS_UPDATE

logger = logging.getLogger("fastapi_mrtr.client")

TaskStatusCallback = Callable[[TaskInfo], Union[Awaitable[None], None]]
# One request on the era's transport: (method, params) -> the result object.
SendRequest = Callable[[str, JSONObject], Awaitable[JSONObject]]


class ToolTask:
    """A handle on one task: its id, what the server last showed of it, and what you can do with it.

    Made by :meth:`~fastapi_mrtr.client.MrtrClient.start_tool_call` (a call the server turned into
    a task) or :meth:`~fastapi_mrtr.client.MrtrClient.task` (a task id you kept). :meth:`get`,
    :meth:`update` and :meth:`cancel` are one request each; :meth:`wait` drives the task to its
    result the way :meth:`~fastapi_mrtr.client.MrtrClient.call_tool` does.
    """

    def __init__(
        self,
        info: TaskInfo,
        send: SendRequest,
        handlers: InputHandlers,
        options: TaskOptions,
        input_config: InputRequiredConfig,
        check_result: Callable[[CallToolResult], Awaitable[None]] | None = None,
    ) -> None:
        self.last = info  # what the server showed most recently
        self._send = send
        self._handlers = handlers
        self._options = options
        self._input_config = input_config
        self._check_result = check_result  # the tool's outputSchema check, as call_tool does it
        self._answered: set[str] = set()  # keys answered with tasks/update: never answered again

    @property
    def task_id(self) -> str:
        return self.last.task_id

    @property
    def status(self) -> str:
        """The status the server showed last (``working``, ``input_required``, or a terminal one)."""
        return self.last.status

    def __repr__(self) -> str:
        return f"ToolTask(task_id={self.task_id!r}, status={self.status!r})"

    async def get(self) -> TaskInfo:
        """``tasks/get``: the task now (also kept as :attr:`last`)."""
        raw = await self._send(TASKS_GET, {"taskId": self.task_id})
        info = parse_task(raw, TASKS_GET)
        if info.task_id != self.task_id:
            raise InvalidServerResponseError(f"tasks/get for {self.task_id!r} answered task {info.task_id!r}", raw)
        self.last = info
        return info

    async def update(self, input_responses: Mapping[str, InputAnswer]) -> None:
        """``tasks/update``: answers to (some of) the questions of an ``input_required`` task, keyed as
        the server keyed them (a model such as ``ElicitResult``, or its dict)."""
        answers = seed_answers(input_responses) or {}
        await self._send(TASKS_UPDATE, {"taskId": self.task_id, "inputResponses": answers})
        self._answered.update(answers)

    async def cancel(self) -> None:
        """``tasks/cancel``: ask the server to stop the task. Cooperative: the task may still end
        ``completed`` if it was about to; :meth:`get` tells. Acknowledged for a finished task too."""
        await self._send(TASKS_CANCEL, {"taskId": self.task_id})

    async def wait(
        self, *, on_status: TaskStatusCallback | None = None, cancel_on_abort: bool = True
    ) -> CallToolResult:
        """Poll until the task ends, answering its questions with the client's handlers; its result.

        ``on_status`` sees the task as first shown and after every poll. Raises
        :class:`TaskFailedError` (``failed``), :class:`TaskCancelledError` (``cancelled``),
        :class:`TaskInputRequiredError` (questions while ``auto_fulfill`` is off: nothing is
        cancelled then; answer with :meth:`update` and wait again) and
        :class:`TaskTimeoutError` (``TaskOptions.max_wait``). Unless ``cancel_on_abort`` is off,
        any other way out (the coroutine cancelled, a handler failing) sends ``tasks/cancel`` first.
        """
        limit = self._options.max_wait
        try:
            with anyio.move_on_after(limit if limit > 0 else math.inf) as scope:
                return await self._follow(on_status)
            assert scope.cancelled_caught
            raise TaskTimeoutError(self.task_id, limit)
        except (TaskFailedError, TaskCancelledError, TaskInputRequiredError):
            raise  # the task ended, or waits for the caller: nothing to cancel
        except BaseException:
            if cancel_on_abort and not self.last.terminal:
                await self._cancel_on_the_way_out()
            raise

    async def _follow(self, on_status: TaskStatusCallback | None) -> CallToolResult:
        info = self.last
        round_number = 0
        while True:
            if on_status is not None:
                await call_back(on_status, info)
            if info.status == COMPLETED:
                return await self._result(info)
            if info.status == FAILED:
                raise self._failure(info)
            if info.status == CANCELLED:
                raise TaskCancelledError(self.task_id, info.status_message)
            pending = self._unanswered(info) if info.status == INPUT_REQUIRED else {}
            if pending:
                if not self._input_config.auto_fulfill:
                    raise TaskInputRequiredError(self, pending)
                round_number += 1
                await self.update(await self._answer(pending, round_number))
            else:
                await anyio.sleep(self._options.poll_delay(info.poll_interval_ms))
            info = await self.get()

    def _unanswered(self, info: TaskInfo) -> dict[str, InputRequest]:
        """The questions of this snapshot we have not answered (an answered key may linger a poll)."""
        return {key: request for key, request in (info.input_requests or {}).items() if key not in self._answered}

    async def _answer(self, requests: dict[str, InputRequest], round_number: int) -> JSONObject:
        limit = self._input_config.round_timeout
        with anyio.move_on_after(limit if limit > 0 else math.inf) as scope:
            return await self._handlers.answer_all(requests, round_number=round_number)
        assert scope.cancelled_caught
        raise RoundTimeoutError(f"input handlers exceeded round_timeout={limit}s", limit)

    async def _result(self, info: TaskInfo) -> CallToolResult:
        result = completed_result(info)
        if self._check_result is not None:
            await self._check_result(result)
        return result

    def _failure(self, info: TaskInfo) -> TaskFailedError | InvalidServerResponseError:
        error = info.error
        if not (isinstance(error, dict) and type(error.get("code")) is int and isinstance(error.get("message"), str)):
            return InvalidServerResponseError(f"task {self.task_id} failed without a valid error", info.model_dump())
        return TaskFailedError(error["code"], error["message"], error.get("data"), task_id=self.task_id)

    async def _cancel_on_the_way_out(self) -> None:
        """``tasks/cancel``, shielded from the cancellation that brought us here and bounded in time."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._options.cancel_timeout):
            try:
                await self.cancel()
            except Exception as exc:  # the original error matters more than this one
                logger.warning("tasks/cancel for task %s failed: %s", self.task_id, exc)
