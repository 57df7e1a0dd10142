"""What the endpoint answered, as an MCP ``CallToolResult`` (a plain dict, ready to encode).

2xx JSON becomes ``structuredContent`` (wrapped as ``{"result": ...}`` when the output is not an
object) plus the same JSON as a text block; images and audio become their content blocks; any
other status becomes ``isError: true`` keeping the status and FastAPI's ``detail``, so the model
can read what went wrong (a 422 lists the invalid arguments).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from pydantic import ValidationError

from ..protocol import CallToolResult, JSONObject, dump
from .invoke import CapturedResponse
from .tools import ToolDefinition


def error_result(text: str) -> JSONObject:
    return {"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": True}


def tool_result(tool: ToolDefinition, response: CapturedResponse) -> JSONObject:
    if not 200 <= response.status < 300:
        return _http_error(response)
    body = bytes(response.body)
    kind = response.content_type
    if tool.raw_result:
        return _raw_result(tool, body)
    if not body:
        return {"resultType": "complete", "content": [], "isError": False}
    if kind == "application/json" or kind.endswith("+json"):
        return _json_result(tool, body)
    if kind.startswith(("image/", "audio/")):
        block = {"type": kind.split("/", 1)[0], "data": base64.b64encode(body).decode(), "mimeType": kind}
        return {"resultType": "complete", "content": [block], "isError": False}
    text = body.decode("utf-8", errors="replace")
    return {"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": False}


def _json_result(tool: ToolDefinition, body: bytes) -> JSONObject:
    text = body.decode("utf-8")
    result: JSONObject = {"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": False}
    if tool.output_wrapped:
        result["structuredContent"] = {"result": json.loads(body)}
    elif tool.has_output_schema or body[:1] == b"{":
        value = json.loads(body)
        if isinstance(value, dict):
            result["structuredContent"] = value
    return result


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
