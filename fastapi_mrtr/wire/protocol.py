"""MCP 2026-07-28 wire vocabulary: _meta keys, results, tools, content, the notification.

This module knows nothing of FastAPI. Every model speaks camelCase on the wire and snake_case in
Python (``Tool(input_schema=...)`` dumps as ``inputSchema``); use :func:`dump` to serialise one the
way the wire wants it (aliases, no ``None`` fields). Unknown wire fields are kept (``extra="allow"``)
so that a newer peer's additions survive a round trip.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

PROTOCOL_VERSION = "2026-07-28"
SUPPORTED_PROTOCOL_VERSIONS = (PROTOCOL_VERSION,)
# The handshake-era versions a legacy MCP session may negotiate with ``initialize``, newest first.
LEGACY_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

# Keys of the per-request ``_meta`` object (SEP-2575).
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

# The log levels a client may ask for (``logLevel``), least severe first (RFC 5424 order).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# The methods whose target the Mcp-Name header repeats, and the param it repeats.
NAMED_METHODS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # The tasks extension (SEP-2663): Mcp-Name carries the task id, so a balancer can route by it.
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

JSONObject = dict[str, Any]
RequestId = Union[str, int]


class WireModel(BaseModel):
    """Base of every wire model: camelCase aliases, snake_case attributes, unknown fields kept."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


def dump(model: BaseModel) -> JSONObject:
    """Serialise a wire model as it travels: aliases, JSON-compatible values, no ``None`` fields."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


# --- JSON-RPC notifications (the client reads them; the server writes plain dicts) ------------


class JSONRPCNotification(WireModel):
    jsonrpc: Literal["2.0"] = "2.0"
    method: str
    params: JSONObject | None = None


# --- identities and capabilities --------------------------------------------------------------


class Implementation(WireModel):
    name: str
    version: str
    title: str | None = None


class ServerCapabilities(WireModel):
    tools: JSONObject | None = None
    prompts: JSONObject | None = None
    resources: JSONObject | None = None
    completions: JSONObject | None = None
    logging: JSONObject | None = None
    experimental: JSONObject | None = None
    extensions: JSONObject | None = None


class Result(WireModel):
    """Every 2026-07-28 result carries ``resultType``; a missing one reads as complete."""

    result_type: str = "complete"
    meta: JSONObject | None = Field(default=None, alias="_meta")


class CacheableResult(Result):
    ttl_ms: int = 0
    cache_scope: Literal["public", "private"] = "private"


class DiscoverResult(CacheableResult):
    supported_versions: list[str]
    capabilities: ServerCapabilities
    instructions: str | None = None


# --- content blocks ---------------------------------------------------------------------------


class Annotations(WireModel):
    audience: list[Literal["user", "assistant"]] | None = None
    priority: float | None = None
    last_modified: str | None = None


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None


class ImageContent(WireModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None


class AudioContent(WireModel):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None


class ResourceLink(WireModel):
    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None


class TextResourceContents(WireModel):
    uri: str
    mime_type: str | None = None
    text: str


class BlobResourceContents(WireModel):
    uri: str
    mime_type: str | None = None
    blob: str


ResourceContents = Union[TextResourceContents, BlobResourceContents]


class EmbeddedResource(WireModel):
    type: Literal["resource"] = "resource"
    resource: ResourceContents
    annotations: Annotations | None = None


ContentBlock = Union[TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource]


# --- tools ------------------------------------------------------------------------------------


class ToolAnnotations(WireModel):
    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Tool(WireModel):
    name: str
    title: str | None = None
    description: str | None = None
    input_schema: JSONObject
    output_schema: JSONObject | None = None
    annotations: ToolAnnotations | None = None


class ListToolsResult(CacheableResult):
    tools: list[Tool]
    next_cursor: str | None = None


class CallToolResult(Result):
    content: list[ContentBlock] = Field(default_factory=list)
    structured_content: Any = None
    is_error: bool | None = None


# --- prompts ----------------------------------------------------------------------------------


class PromptArgument(WireModel):
    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


class Prompt(WireModel):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None


class PromptMessage(WireModel):
    role: Literal["user", "assistant"]
    content: ContentBlock


class GetPromptResult(Result):
    description: str | None = None
    messages: list[PromptMessage]


class ListPromptsResult(CacheableResult):
    prompts: list[Prompt]
    next_cursor: str | None = None


# --- resources --------------------------------------------------------------------------------


class Resource(WireModel):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


class ResourceTemplate(WireModel):
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


class ListResourcesResult(CacheableResult):
    resources: list[Resource]
    next_cursor: str | None = None


class ListResourceTemplatesResult(CacheableResult):
    resource_templates: list[ResourceTemplate]
    next_cursor: str | None = None


class ReadResourceResult(CacheableResult):
    contents: list[ResourceContents]
