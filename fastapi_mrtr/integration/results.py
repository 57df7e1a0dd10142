"""What the endpoint answered, as an MCP ``CallToolResult`` (a plain dict, ready to encode).

2xx JSON becomes ``structuredContent`` (wrapped as ``{"result": ...}`` when the output is not an
object) plus the same JSON as a text block; the text of a string route with a text response class
becomes ``{"result": text}`` beside its text block; images and audio become their content blocks;
any other status becomes ``isError: true`` keeping the status and FastAPI's ``detail``, so the
model can read what went wrong (a 422 lists the invalid arguments).

A tool that publishes an ``outputSchema`` always answers conforming ``structuredContent`` or an
error: a 2xx response that cannot be structured as promised (a route returning a ``Response`` of
another kind itself) becomes ``isError: true``, since clients reject such a result outright.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

from pydantic import ValidationError

from fastapi_mrtr.integration.route_request import CapturedResponse
from fastapi_mrtr.integration.tools import ToolDefinition
from fastapi_mrtr.wire.json_codec import decode_lenient
from fastapi_mrtr.wire.protocol import CallToolResult, JSONObject, dump

logger = logging.getLogger("fastapi_mrtr")


def error_result(text: str) -> JSONObject:
    return {"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": True}


def tool_result(tool: ToolDefinition, response: CapturedResponse) -> JSONObject:
    if not 200 <= response.status < 300:
        return _http_error(response)
    body = bytes(response.body)
    kind = response.content_type
    if tool.raw_result:
        return _raw_result(tool, body)
    if tool.has_output_schema:
        return _structured_result(tool, body, kind)
    if not body:
        return {"resultType": "complete", "content": [], "isError": False}
    if _is_json(kind):
        return _json_result(body)
    if kind.startswith(("image/", "audio/")):
        block = {"type": kind.split("/", 1)[0], "data": base64.b64encode(body).decode(), "mimeType": kind}
        return {"resultType": "complete", "content": [block], "isError": False}
    text = body.decode("utf-8", errors="replace")
    return {"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": False}


def _json_result(body: bytes) -> JSONObject:
    text = body.decode("utf-8")
    result: JSONObject = {"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": False}
    if body[:1] == b"{":
        value = decode_lenient(body)
        if isinstance(value, dict):
            result["structuredContent"] = value
    return result


def _structured_result(tool: ToolDefinition, body: bytes, kind: str) -> JSONObject:
    """The result of a tool with an outputSchema: its structuredContent, or why there is none."""
    if tool.output == "text":
        if kind and not kind.startswith("text/"):
            return _unstructured(tool, f"a {kind} body where its outputSchema promises text")
        text = body.decode("utf-8", errors="replace")
        structured: Any = {"result": text}
    else:
        if not _is_json(kind):
            return _unstructured(tool, f"a {kind or 'untyped'} body where its outputSchema promises JSON")
        try:
            value = decode_lenient(body)
        except ValueError:
            return _unstructured(tool, "a body that is not JSON where its outputSchema promises JSON")
        if tool.output == "wrapped":
            structured = {"result": value}
        elif isinstance(value, dict):
            structured = value
        else:
            return _unstructured(tool, f"a JSON {type(value).__name__} where its outputSchema promises an object")
        text = body.decode("utf-8", errors="replace")
    content = [{"type": "text", "text": text}]
    return {"resultType": "complete", "content": content, "structuredContent": structured, "isError": False}


def _unstructured(tool: ToolDefinition, what: str) -> JSONObject:
    # Clients refuse a result without conforming structuredContent from a tool that declares an
    # outputSchema, so the mismatch is the route's error, reported where its author will look.
    logger.warning(
        "tool %r: the route answered %s; return the value itself (not a Response object) or declare "
        "response_model=None to publish no outputSchema",
        tool.name,
        what,
    )
    return error_result(f"Tool {tool.name!r} answered {what}; the details were logged on the server.")


def _is_json(kind: str) -> bool:
    return kind == "application/json" or kind.endswith("+json")


def _raw_result(tool: ToolDefinition, body: bytes) -> JSONObject:
    try:
        parsed = CallToolResult.model_validate_json(body)
    except ValidationError:
        return error_result(f"tool {tool.name!r} returned a body that is not a CallToolResult")
    result = dump(parsed)
    result["resultType"] = "complete"
    result.pop("_meta", None)
    return result


def _http_error(response: CapturedResponse) -> JSONObject:
    detail: Any
    try:
        decoded = json.loads(bytes(response.body)) if response.body else None
        detail = decoded.get("detail", decoded) if isinstance(decoded, dict) else decoded
    except ValueError:
        detail = bytes(response.body).decode("utf-8", errors="replace")
    payload = {"status": response.status, "detail": detail}
    return error_result(json.dumps(payload, ensure_ascii=False))
