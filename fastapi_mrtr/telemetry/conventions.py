"""Names from the OpenTelemetry semantic conventions for MCP, and the few this package adds.

The conventions (``docs/gen-ai/mcp.md`` of the OpenTelemetry GenAI semantic conventions, status
Development) name a span ``{mcp.method.name} {target}``, where the target is the tool or prompt
name when there is one. ``error.type`` is the JSON-RPC error code as a string, or ``tool_error``
for a tool result with ``isError: true``. The ``mcp.mrtr.*`` attributes are this package's own:
the conventions do not cover MRTR rounds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

METHOD = "mcp.method.name"
PROTOCOL_VERSION = "mcp.protocol.version"
SESSION_ID = "mcp.session.id"
RESOURCE_URI = "mcp.resource.uri"
REQUEST_ID = "jsonrpc.request.id"
TOOL_NAME = "gen_ai.tool.name"
PROMPT_NAME = "gen_ai.prompt.name"
OPERATION_NAME = "gen_ai.operation.name"
ERROR_TYPE = "error.type"
STATUS_CODE = "rpc.response.status_code"
NETWORK_TRANSPORT = "network.transport"
NETWORK_PROTOCOL_NAME = "network.protocol.name"
NETWORK_PROTOCOL_VERSION = "network.protocol.version"
CLIENT_ADDRESS = "client.address"
CLIENT_PORT = "client.port"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

# This package's own: which round of an MRTR flow a span served, and the flow (hashed).
MRTR_ROUND = "mcp.mrtr.round"
MRTR_FLOW_ID = "mcp.mrtr.flow.id"
# The 2025-era HTTP verbs that are no JSON-RPC method (the conventions name none for them): a
# session's GET stream (a resumed call stream when Last-Event-ID is sent) and its DELETE.
SESSION_STREAM = "mcp.session.stream"
SESSION_END = "mcp.session.end"
STREAM_RESUMED = "mcp.stream.resumed"
# On a link from a task's later request or leg to the span that created the task (telemetry.tasks).
TASK_CREATED = "mcp.task.created"

SERVER_OPERATION_DURATION = "mcp.server.operation.duration"
SERVER_SESSION_DURATION = "mcp.server.session.duration"
CLIENT_OPERATION_DURATION = "mcp.client.operation.duration"
CLIENT_SESSION_DURATION = "mcp.client.session.duration"
# The bucket boundaries the conventions ask for, in seconds.
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)

TOOL_ERROR = "tool_error"
EXECUTE_TOOL = "execute_tool"

# The attributes a duration metric keeps (a span has more: ids and addresses are too many values).
METRIC_KEYS = (
    METHOD,
    PROTOCOL_VERSION,
    TOOL_NAME,
    PROMPT_NAME,
    OPERATION_NAME,
    ERROR_TYPE,
    STATUS_CODE,
    NETWORK_TRANSPORT,
    NETWORK_PROTOCOL_NAME,
    NETWORK_PROTOCOL_VERSION,
    SERVER_ADDRESS,
    SERVER_PORT,
)


def operation_attributes(method: str, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The span name and the attributes that depend only on the method and its params."""
    attributes: dict[str, Any] = {METHOD: method}
    name = params.get("name")
    if method == "tools/call" and isinstance(name, str):
        attributes[TOOL_NAME] = name
        attributes[OPERATION_NAME] = EXECUTE_TOOL
        return f"{method} {name}", attributes
    if method == "prompts/get" and isinstance(name, str):
        attributes[PROMPT_NAME] = name
        return f"{method} {name}", attributes
    uri = params.get("uri")
    if method.startswith("resources/") and isinstance(uri, str):
        attributes[RESOURCE_URI] = uri  # never in the span name: too many values
    return method, attributes


def request_id_attribute(request_id: Any) -> str | None:
    """``jsonrpc.request.id``: the id as a string; none for a notification or a null id."""
    if request_id is None or isinstance(request_id, bool):
        return None
    return str(request_id)


def outcome_attributes(message: Mapping[str, Any]) -> tuple[dict[str, str], str | None]:
    """``error.type`` (and ``rpc.response.status_code``) of a JSON-RPC response, and the error's
    message for the span status; nothing for a success."""
    error = message.get("error")
    if error is not None and isinstance(error, Mapping):  # None first: an ABC check is not free
        code = str(error.get("code", "_OTHER"))
        text = error.get("message")
        return {ERROR_TYPE: code, STATUS_CODE: code}, text if isinstance(text, str) else None
    result = message.get("result")
    if (type(result) is dict or isinstance(result, Mapping)) and result.get("isError") is True:
        return {ERROR_TYPE: TOOL_ERROR}, None
    return {}, None


def metric_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {key: attributes[key] for key in METRIC_KEYS if key in attributes}
