"""The tasks extension's wire vocabulary (``io.modelcontextprotocol/tasks``, SEP-2663): no FastAPI, no I/O.

A client opts in per request by naming the extension under
``_meta["io.modelcontextprotocol/clientCapabilities"].extensions``; the server may then answer a
``tools/call`` with a ``CreateTaskResult`` (``resultType: "task"``, the task's fields flat beside
it) and serves ``tasks/get``, ``tasks/update`` and ``tasks/cancel``. A task's status is one of
:data:`TASK_STATUSES`; the last three are terminal.
"""

from __future__ import annotations

from typing import Any, Literal

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

TASKS_GET = "tasks/get"
TASKS_UPDATE = "tasks/update"
TASKS_CANCEL = "tasks/cancel"
TASK_METHODS = (TASKS_GET, TASKS_UPDATE, TASKS_CANCEL)

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
WORKING: TaskStatus = "working"
INPUT_REQUIRED: TaskStatus = "input_required"
COMPLETED: TaskStatus = "completed"
FAILED: TaskStatus = "failed"
CANCELLED: TaskStatus = "cancelled"
TASK_STATUSES: tuple[TaskStatus, ...] = (WORKING, INPUT_REQUIRED, COMPLETED, FAILED, CANCELLED)
TERMINAL_STATUSES = frozenset({COMPLETED, FAILED, CANCELLED})

RESULT_TYPE_TASK = "task"


def declares_tasks(client_capabilities: dict[str, Any]) -> bool:
    """Whether a request's client capabilities name the tasks extension (an object under ``extensions``)."""
    extensions = client_capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def tasks_capability_required() -> dict[str, Any]:
    """``data.requiredCapabilities`` of the -32021 refusal of a client that did not declare tasks."""
    return {"extensions": {TASKS_EXTENSION: {}}}
