"""An async MCP client over Streamable HTTP for servers of either era: MRTR (SEP-2322)
auto-fulfilment on 2026-07-28, and 2025-era sessions whose questions the same handlers answer.

::

    async with MrtrClient("http://127.0.0.1:8000/mcp") as client:
        client.set_elicitation_handler(lambda params: {"action": "accept", "content": {"ok": True}})
        result = await client.call_tool("delete_item", {"item": "report.txt"})

A local server launched as a subprocess, over stdio: ``MrtrClient(stdio="python -m my_server")``.

See ``docs/client.md``. ``python -m fastapi_mrtr.client URL [TOOL ...]`` (or ``--stdio CMD``) is
the terminal client.
OAuth-protected servers: ``MrtrClient(url, auth=fastapi_mrtr.client.auth.OAuthClientAuth(...))``.
"""

from __future__ import annotations

from fastapi_mrtr.client._errors import (
    FlowTimeoutError,
    InputRequiredTimeoutError,
    InvalidServerResponseError,
    InvalidStructuredContentError,
    InvalidToolHeadersError,
    MaxRoundsExceededError,
    McpServerError,
    MrtrClientError,
    RoundTimeoutError,
    StatusCodeError,
    StdioServerError,
    StreamClosedError,
    TaskCancelledError,
    TaskFailedError,
    TaskInputRequiredError,
    TaskTimeoutError,
)
from fastapi_mrtr.client._handlers import (
    ElicitationHandler,
    InputRequestInfo,
    RootsHandler,
    SamplingHandler,
    current_input_request,
)
from fastapi_mrtr.client._session import MrtrClient
from fastapi_mrtr.client._stdio import StdioServer
from fastapi_mrtr.client._task_wire import TaskInfo
from fastapi_mrtr.client._tasks import TaskStatusCallback, ToolTask
from fastapi_mrtr.client._types import NotificationCallback, ProgressCallback, ProgressNotification
from fastapi_mrtr.client.options import ClientOptions, InputRequiredConfig, TaskOptions
from fastapi_mrtr.wire.errors import McpError
from fastapi_mrtr.wire.mrtr import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    ListRootsResult,
    Root,
)
from fastapi_mrtr.wire.protocol import Implementation

__all__ = [
    "ClientOptions",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "ElicitRequestParams",
    "ElicitResult",
    "ElicitationHandler",
    "FlowTimeoutError",
    "Implementation",
    "InputRequestInfo",
    "InputRequiredConfig",
    "InputRequiredResult",
    "InputRequiredTimeoutError",
    "InvalidServerResponseError",
    "InvalidStructuredContentError",
    "InvalidToolHeadersError",
    "ListRootsResult",
    "MaxRoundsExceededError",
    "McpError",
    "McpServerError",
    "MrtrClient",
    "MrtrClientError",
    "NotificationCallback",
    "ProgressCallback",
    "ProgressNotification",
    "Root",
    "RootsHandler",
    "RoundTimeoutError",
    "SamplingHandler",
    "StatusCodeError",
    "StdioServer",
    "StdioServerError",
    "StreamClosedError",
    "TaskCancelledError",
    "TaskFailedError",
    "TaskInfo",
    "TaskInputRequiredError",
    "TaskOptions",
    "TaskStatusCallback",
    "TaskTimeoutError",
    "ToolTask",
    "current_input_request",
]
