"""fastapi-mrtr: FastAPI path functions as MCP tools that can ``await ctx.elicit()``.

MCP 2026-07-28 multi round-trip requests (MRTR, SEP-2322) on stateless Streamable HTTP.

This module is for the author of an app, and holds what such an app touches:

* building the server: ``MCP``, ``ServerOptions``, ``InputRequiredConfig``, and the single-use
  stores an option takes (``ReplayStore``, ``InMemoryReplayStore``);
* inside a handler: ``Context`` (the parameter to declare), ``ToolContext`` (its type),
  ``get_context`` (the dependency, for ``app.dependency_overrides`` in tests), the answer an ask
  returns (``ElicitResult``) and what strict replay raises (``ReplayDivergedError``);
* declaring tools, prompts, resources and completions: ``ToolAnnotations``, ``Completion``,
  ``ResourceNotFoundError``;
* tasks (SEP-2663, docs/tasks.md): ``JsonRpcError``, which a tool raises to answer a JSON-RPC
  error (a task then ends ``failed``); ``@mcp.tool(task="optional")`` needs no import, and the
  finer ``TaskConfig`` and the task stores are in ``fastapi_mrtr.tasks``;
* what a handler may return beyond plain values: a ``CallToolResult`` and the five content blocks
  its ``content`` holds (``TextContent``, ``ImageContent``, ``AudioContent``, ``ResourceLink``,
  ``EmbeddedResource``), the two resource contents an embedded resource or a resource function
  carries (``TextResourceContents``, ``BlobResourceContents``), and a prompt's ``PromptMessage``.

Everyone else looks elsewhere: the whole wire vocabulary (``InputRequest``, sampling and roots
shapes, the MRTR helpers for manual mode, ``McpError``, ``PROTOCOL_VERSION``) is in
``fastapi_mrtr.wire``; sealing your own state and the Redis store are in ``fastapi_mrtr.state``;
the client is ``fastapi_mrtr.client``. Every other module is private.
"""

from fastapi_mrtr.app import MCP
from fastapi_mrtr.engine.context import ReplayDivergedError, ToolContext
from fastapi_mrtr.engine.options import InputRequiredConfig, ServerOptions
from fastapi_mrtr.features.completions import Completion
from fastapi_mrtr.features.resources import ResourceNotFoundError
from fastapi_mrtr.integration.dependency import Context, get_context
from fastapi_mrtr.state import InMemoryReplayStore, ReplayStore
from fastapi_mrtr.telemetry import Telemetry
from fastapi_mrtr.wire import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    PromptMessage,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from fastapi_mrtr.wire.errors import JsonRpcError

__version__ = "0.1.0"

__all__ = [
    "MCP",
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "Completion",
    "Context",
    "ElicitResult",
    "EmbeddedResource",
    "ImageContent",
    "InMemoryReplayStore",
    "InputRequiredConfig",
    "JsonRpcError",
    "PromptMessage",
    "ReplayDivergedError",
    "ReplayStore",
    "ResourceLink",
    "ResourceNotFoundError",
    "ServerOptions",
    "Telemetry",
    "TextContent",
    "TextResourceContents",
    "ToolAnnotations",
    "ToolContext",
    "__version__",
    "get_context",
]
