"""Reading the tasks extension's results (SEP-2663): a task's state, and a ``tools/call`` that may be one.

A ``tools/call`` declared with the extension may answer ``resultType: "task"`` (a
``CreateTaskResult``: the task's fields flat beside it); ``tasks/get`` answers a ``DetailedTask``
(``resultType: "complete"``) that inlines ``inputRequests``, ``result`` or ``error`` by status.
Both become a :class:`TaskInfo`. A task result where none was asked for breaks the wire rules.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError, field_validator

from fastapi_mrtr.client._errors import InvalidServerResponseError
from fastapi_mrtr.client._results import parse_result
from fastapi_mrtr.wire.mrtr import InputRequest, InputRequiredResult
from fastapi_mrtr.wire.protocol import CallToolResult, JSONObject, WireModel
from fastapi_mrtr.wire.tasks import (
    RESULT_TYPE_TASK,
    TASK_METHODS,
    TASK_STATUSES,
    TASKS_EXTENSION,
    TERMINAL_STATUSES,
    TaskStatus,
)


def with_tasks_extension(capabilities: JSONObject, method: str, enabled: bool) -> JSONObject:
    """A modern request's client capabilities, naming the extension where it means something: on a
    ``tools/call`` when tasks are enabled (the server may then answer with a task), and always on
    ``tasks/*`` (a server refuses those with -32021 from a client that does not declare it)."""
    if method in TASK_METHODS or (enabled and method == "tools/call"):
        extensions = dict(capabilities.get("extensions") or {})
        extensions[TASKS_EXTENSION] = {}
        capabilities["extensions"] = extensions
    return capabilities


class TaskInfo(WireModel):
    """A task as the server last showed it (``CreateTaskResult`` or ``tasks/get``).

    ``input_requests`` are the questions outstanding (``input_required``: a snapshot of all of
    them, answered ones may linger a moment); ``result`` the tool's result (``completed``, also a
    tool error with ``isError``); ``error`` the JSON-RPC error (``failed``).
    """

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    input_requests: dict[str, InputRequest] | None = None
    result: JSONObject | None = None
    error: JSONObject | None = None

    @field_validator("task_id")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value:
            raise ValueError("taskId is empty")
        return value

    @property
    def terminal(self) -> bool:
        """``completed``, ``failed`` or ``cancelled``: it will not change again."""
        return self.status in TERMINAL_STATUSES


def parse_task(raw: JSONObject, method: str) -> TaskInfo:
    """A ``CreateTaskResult`` or ``DetailedTask`` as a :class:`TaskInfo`, or :class:`InvalidServerResponseError`."""
    if raw.get("status") not in TASK_STATUSES:
        raise InvalidServerResponseError(f"{method} answered a task with status {raw.get('status')!r}", raw)
    try:
        return TaskInfo.model_validate(raw)
    except ValidationError as exc:
        raise InvalidServerResponseError(f"malformed task in the {method} result: {exc}", raw) from exc


ToolCallReply = CallToolResult | InputRequiredResult | TaskInfo


def tool_call_parser(tasks_declared: bool) -> Callable[[JSONObject], ToolCallReply]:
    """How to read one ``tools/call`` reply: a complete result, ``input_required``, or (only when
    the request declared the extension) a task."""

    def parse(raw: JSONObject) -> ToolCallReply:
        if raw.get("resultType") == RESULT_TYPE_TASK:
            if not tasks_declared:
                raise InvalidServerResponseError("a task result, though this call did not declare tasks", raw)
            return parse_task(raw, "tools/call")
        return parse_result(raw, CallToolResult, "tools/call")

    return parse


def completed_result(info: TaskInfo) -> CallToolResult:
    """The ``CallToolResult`` a ``completed`` task carries."""
    if info.result is None:
        raise InvalidServerResponseError(f"task {info.task_id} completed without a result", info.model_dump())
    parsed = parse_result(info.result, CallToolResult, "tools/call")
    if not isinstance(parsed, CallToolResult):
        raise InvalidServerResponseError(f"task {info.task_id} completed with an input_required result", info.result)
    return parsed
