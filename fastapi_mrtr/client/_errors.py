"""Errors the client raises.

The whole package's tree, server side included, is drawn in :mod:`fastapi_mrtr.wire.errors`;
this is the client's part of it::

    McpError (fastapi_mrtr.wire.errors)         a JSON-RPC error: code, message, data
    ├── raised locally with -32601              no handler for an input request's method
    ├── raised locally with -32602              an input request whose params do not parse
    └── McpServerError                          the server answered with a JSON-RPC error
        │                                        (adds http_status and request_id)
        └── TaskFailedError                     a task ended ``failed``: its ``error``, and task_id
    MrtrClientError                             a client-side failure that is not a JSON-RPC error
    ├── MaxRoundsExceededError                  still ``input_required`` after max_rounds
    │                                            retries; carries last_result
    ├── InputRequiredTimeoutError (TimeoutError)
    │   ├── RoundTimeoutError                   one round's handlers outlived round_timeout
    │   └── FlowTimeoutError                    the whole flow outlived max_total_timeout
    ├── InvalidServerResponseError              a reply that breaks the wire rules (not JSON, not
    │   │                                        JSON-RPC 2.0, wrong id, malformed error, unknown
    │   │                                        resultType, bad result shape)
    │   └── InvalidStructuredContentError       a tool result that does not fit the tool's
    │                                            outputSchema (no structuredContent, content that
    │                                            does not conform, a schema that cannot be used)
    ├── TaskCancelledError                      a task ended ``cancelled``; carries task_id
    ├── TaskInputRequiredError                  a task waits for input and auto_fulfill is off;
    │                                            carries the task handle and its questions
    ├── TaskTimeoutError (TimeoutError)         a task outlived TaskOptions.max_wait
    ├── StatusCodeError                         a non-2xx HTTP reply without a JSON-RPC error
    │                                            about the request (whatever else its body holds)
    ├── StreamClosedError                       an SSE stream ended (or its connection dropped)
    │                                            before the response
    ├── StdioServerError                        a stdio server could not start, exited, wrote a
    │                                            line that is no JSON-RPC, or was silent past its
    │                                            timeout (returncode, stderr tail)
    ├── InvalidToolHeadersError (ValueError)    a tool's x-mcp-header annotations break SEP-2243;
    │                                            list_tools drops it and call_tool refuses it
    └── OAuthError                              the OAuth flow failed (fastapi_mrtr.client.auth)

Every name ends in ``Error``, and none is one letter-case away from an httpx name (httpx has
``HTTPStatusError``; ours is ``StatusCodeError``). Network failures are httpx's own exceptions
(``httpx.ConnectError`` ...), left unwrapped so that code written against httpx keeps working.
The one exception is a connection that drops in the middle of an SSE stream
(``httpx.RemoteProtocolError``): that is a stream ending early, so ``StreamClosedError``.

The names before this vocabulary (``InputRequiredRoundsExceeded``, ``InputRequiredTimeout``,
``InvalidServerResponse``, ``InvalidStructuredContent``, ``HttpStatusError``,
``InvalidToolHeaders``) are gone: the package has not been released under them.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi_mrtr.wire.errors import McpError
from fastapi_mrtr.wire.mrtr import InputRequiredResult
from fastapi_mrtr.wire.protocol import CallToolResult, JSONObject, RequestId


class McpServerError(McpError):
    """A JSON-RPC error sent by the server (``code``, ``message``, ``data`` as received)."""

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        http_status: int | None = None,
        request_id: RequestId | None = None,
    ) -> None:
        super().__init__(code, message, data)
        self.http_status = http_status
        self.request_id = request_id


class TaskFailedError(McpServerError):
    """A task ended ``failed``: the JSON-RPC error it carries, as if the call had answered it."""

    def __init__(self, code: int, message: str, data: Any = None, *, task_id: str) -> None:
        super().__init__(code, message, data)
        self.task_id = task_id


class MrtrClientError(Exception):
    """Base of the client-side failures that are not JSON-RPC errors."""


class MaxRoundsExceededError(MrtrClientError):
    """The server still wanted input after ``max_rounds`` retries."""

    def __init__(self, max_rounds: int, last_result: InputRequiredResult) -> None:
        super().__init__(f"still input_required after {max_rounds} retries")
        self.max_rounds = max_rounds
        self.last_result = last_result


class InputRequiredTimeoutError(MrtrClientError, TimeoutError):
    """An MRTR time bound elapsed (see the two subclasses)."""

    def __init__(self, message: str, timeout: float) -> None:
        super().__init__(message)
        self.timeout = timeout


class RoundTimeoutError(InputRequiredTimeoutError):
    """The handlers of one round did not finish within ``round_timeout``."""


class FlowTimeoutError(InputRequiredTimeoutError):
    """The whole flow (all rounds and requests) did not finish within ``max_total_timeout``."""


class InvalidServerResponseError(MrtrClientError):
    """The server's reply breaks the protocol; ``body`` is the offending payload when known."""

    def __init__(self, message: str, body: Any = None) -> None:
        super().__init__(message)
        self.body = body


class InvalidStructuredContentError(InvalidServerResponseError):
    """A complete, non-error ``tools/call`` result that breaks the tool's ``outputSchema``.

    ``problem`` says how: ``"missing"`` (no ``structuredContent``), ``"nonconforming"`` (it does
    not validate; ``path`` is where, e.g. ``$.order_id``) or ``"invalid_schema"`` (the schema
    itself is broken, so nothing can be checked). ``result`` is the parsed result, for callers
    that want it anyway; ``schema`` is the ``outputSchema`` it was checked against.
    """

    def __init__(
        self,
        message: str,
        *,
        tool: str,
        problem: Literal["missing", "nonconforming", "invalid_schema"],
        result: CallToolResult,
        schema: JSONObject,
        path: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message, body)
        self.tool = tool
        self.problem = problem
        self.result = result
        self.schema = schema
        self.path = path


class StatusCodeError(MrtrClientError):
    """A non-2xx HTTP reply that carries no JSON-RPC error (e.g. 401, 406, 502).

    Even a body with a JSON-RPC ``result`` is one: a failed HTTP request has no result.
    """

    def __init__(self, status_code: int, body: str) -> None:
        super().__init__(f"HTTP {status_code}: {body[:200]}" if body else f"HTTP {status_code}")
        self.status_code = status_code
        self.body = body


class StreamClosedError(MrtrClientError):
    """The SSE stream closed before carrying the response; the request's outcome is unknown."""


class StdioServerError(MrtrClientError):
    """A stdio server (``MrtrClient(stdio=...)``) could not start, exited, closed its stdout, wrote
    a line that is no JSON-RPC message, or wrote nothing for longer than its timeout.
    ``returncode`` is its exit status once it has one; ``stderr`` is the end of what it wrote there
    (its own account of what went wrong)."""

    def __init__(self, message: str, *, returncode: int | None = None, stderr: str = "") -> None:
        super().__init__(message + (f"\n  its stderr ended with:\n{_indented(stderr)}" if stderr.strip() else ""))
        self.reason = message  # without the stderr
        self.returncode = returncode
        self.stderr = stderr


def _indented(text: str) -> str:
    return "\n".join("    " + line for line in text.strip().splitlines())


class InvalidToolHeadersError(MrtrClientError, ValueError):
    """A tool's ``x-mcp-header`` annotations break SEP-2243, so the tool must not be called."""


class TaskCancelledError(MrtrClientError):
    """A task ended ``cancelled`` (by ``tasks/cancel``, ours or anyone's who holds its id)."""

    def __init__(self, task_id: str, status_message: str | None = None) -> None:
        detail = f": {status_message}" if status_message else ""
        super().__init__(f"task {task_id} was cancelled{detail}")
        self.task_id = task_id
        self.status_message = status_message


class TaskInputRequiredError(MrtrClientError):
    """A task waits for answers and ``auto_fulfill`` is off: answer with ``task.update(...)``, then
    ``await task.wait()`` again. ``input_requests`` are the questions not answered yet."""

    def __init__(self, task: Any, input_requests: Any) -> None:
        super().__init__(f"task {task.task_id} waits for input: {', '.join(map(str, input_requests))}")
        self.task = task  # the ToolTask (typed loosely: the handle's module imports this one)
        self.input_requests = input_requests


class TaskTimeoutError(MrtrClientError, TimeoutError):
    """A task did not end within ``TaskOptions.max_wait``; it was cancelled."""

    def __init__(self, task_id: str, timeout: float) -> None:
        super().__init__(f"task {task_id} did not end within max_wait={timeout}s (cancelled)")
        self.task_id = task_id
        self.timeout = timeout
