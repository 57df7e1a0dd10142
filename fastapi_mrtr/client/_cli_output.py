"""What the terminal client prints: a readable rendering of each result, or one JSON document.

Both go through :func:`~fastapi_mrtr.client._text.printable` in the caller, so server text never
reaches the terminal raw. The readable form prints text as text and summarises the rest (an image
as its type and size, a link as its URI); ``--json`` prints what the server sent, as it sent it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from fastapi_mrtr.wire.protocol import (
    LOG_LEVELS,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    JSONObject,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceTemplate,
    TextContent,
    Tool,
)


def as_sent(model: BaseModel) -> JSONObject:
    """A parsed wire model as the server sent it: only the fields it set, so a 2025-era result
    does not gain the ``resultType`` or ``ttlMs`` the models default."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def json_document(document: Any) -> str:
    """The ``--json`` output: one indented JSON document (non-ASCII kept readable)."""
    return json.dumps(document, indent=2, ensure_ascii=False)


# --- content ------------------------------------------------------------------------------------


def _blob_summary(contents: BlobResourceContents) -> str:
    return f"[{contents.uri}: {contents.mime_type or 'binary'}, {len(contents.blob)} base64 chars]"


def render_contents_item(contents: ResourceContents) -> str:
    if isinstance(contents, BlobResourceContents):
        return _blob_summary(contents)
    return contents.text


def render_block(block: ContentBlock) -> str:
    """One content block: text as itself, anything else as a one-line summary."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, (ImageContent, AudioContent)):
        return f"[{block.type} {block.mime_type}, {len(block.data)} base64 chars]"
    if isinstance(block, ResourceLink):
        return f"[link {block.uri}] {block.name}"
    if isinstance(block, EmbeddedResource):
        if isinstance(block.resource, BlobResourceContents):
            return _blob_summary(block.resource)
        return block.resource.text
    return f"[{getattr(block, 'type', 'content')}]"  # pragma: no cover - the union is closed


def render_result(result: CallToolResult) -> str:
    parts = [render_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json_document(result.structured_content))
    return "\n".join(parts)


def render_prompt(result: GetPromptResult) -> str:
    """A prompt's messages, each after its role (``user: ...``)."""
    if not result.messages:
        return "(no messages)"
    return "\n".join(f"{message.role}: {render_block(message.content)}" for message in result.messages)


def render_contents(result: ReadResourceResult) -> str:
    if not result.contents:
        return "(no contents)"
    return "\n".join(render_contents_item(contents) for contents in result.contents)


# --- listings -----------------------------------------------------------------------------------


def _argument_hint(key: str, prop: Any, required: bool) -> str:
    kind = prop.get("type", "any") if isinstance(prop, dict) else "any"
    return f"{key}=<{kind}>" + ("" if required else "?")


def _schema_fields(tool: Tool) -> tuple[dict[str, Any], set[str]]:
    """A tool's argument properties and required names. Raises ``ValueError`` for a schema whose
    ``properties`` is no object or whose ``required`` is no list of names: the server's fault."""
    props = tool.input_schema.get("properties") or {}
    required = tool.input_schema.get("required") or []
    if not isinstance(props, dict):
        raise ValueError(f"tool {tool.name!r} has a malformed inputSchema: properties is not an object")
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise ValueError(f"tool {tool.name!r} has a malformed inputSchema: required is not a list of names")
    return props, set(required)


def _described(head: str, description: str | None) -> list[str]:
    return [head, f"    {description}"] if description else [head]


def render_tools(tools: Sequence[Tool]) -> str:
    if not tools:
        return "(no tools)"
    lines = []
    for tool in tools:
        props, required = _schema_fields(tool)
        args = " ".join(_argument_hint(k, v, k in required) for k, v in props.items())
        lines += _described(f"{tool.name} {args}".rstrip(), tool.description)
    return "\n".join(lines)


def render_prompts(prompts: Sequence[Prompt]) -> str:
    """``name arg=<string> opt=<string>?`` (prompt arguments are strings), then the description."""
    if not prompts:
        return "(no prompts)"
    lines = []
    for prompt in prompts:
        args = " ".join(_argument_hint(a.name, {"type": "string"}, bool(a.required)) for a in prompt.arguments or ())
        lines += _described(f"{prompt.name} {args}".rstrip(), prompt.description)
    return "\n".join(lines)


def _mime(mime_type: str | None) -> str:
    return f" ({mime_type})" if mime_type else ""


def render_resources(resources: Sequence[Resource]) -> str:
    if not resources:
        return "(no resources)"
    lines = []
    for resource in resources:
        lines += _described(f"{resource.uri} {resource.name}{_mime(resource.mime_type)}", resource.description)
    return "\n".join(lines)


def render_templates(templates: Sequence[ResourceTemplate]) -> str:
    if not templates:
        return "(no resource templates)"
    lines = []
    for template in templates:
        head = f"{template.uri_template} {template.name}{_mime(template.mime_type)}"
        lines += _described(head, template.description)
    return "\n".join(lines)


# --- log messages -------------------------------------------------------------------------------


def log_line(params: JSONObject, threshold: str) -> str | None:
    """The stderr line of one ``notifications/message``, or ``None`` below ``threshold``.

    The client filters too: a 2025-era server that was not (or could not be) told the level sends
    everything. A level that is none of the spec's is shown, marked, rather than hidden.
    """
    level = params.get("level")
    if level in LOG_LEVELS:
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return None
        label = str(level)
    else:
        label = f"level {json.dumps(level, ensure_ascii=False)}?"
    logger = params.get("logger")
    data = params.get("data")
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    source = f" {logger}" if isinstance(logger, str) and logger else ""
    return f"[{label}{source}] {text}"
