"""A tool's ``outputSchema`` and how a 2xx response is structured to conform to it.

A schema is published only when every successful response of the route can be structured to
match it (see "Output schema" in docs/api.md); otherwise none is, and no client is promised a
structure it will not get.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from pydantic import TypeAdapter

from fastapi_mrtr.integration import fastapi_compat as compat
from fastapi_mrtr.wire.protocol import CallToolResult, JSONObject

# What a successful response of the tool's route becomes (see "Output schema" in docs/api.md):
# "free": no outputSchema is published; a JSON object still becomes structuredContent.
# "object": the route's JSON object is structuredContent, as its outputSchema describes.
# "wrapped": the route's JSON value (not an object) is structuredContent as {"result": value}.
# "text": the route answers a string as text (PlainTextResponse...): {"result": text}.
OutputShape = Literal["free", "object", "wrapped", "text"]


def returns_call_tool_result(route: APIRoute) -> bool:
    model = route.response_model
    return isinstance(model, type) and issubclass(model, CallToolResult)


def build_output_schema(route: APIRoute) -> tuple[JSONObject | None, OutputShape]:
    """The outputSchema to publish, and how results are structured to conform to it.

    A schema is published only when every 2xx response of the route, as FastAPI serializes the
    return value, can be structured to match it: JSON of the response model, or the text of a
    string sent by a text response class. Anything else (a binary or streaming response class,
    a non-string value as text, a body trimmed by ``response_model_include``/``_exclude``)
    publishes none, so that no client is promised a structure it will not get.
    """
    model = route.response_model
    if model is None or route.response_model_include or route.response_model_exclude:
        return None, "free"
    schema = TypeAdapter(model).json_schema(mode="serialization", by_alias=route.response_model_by_alias)
    schema = _resolve_root_ref(schema)
    if not schema:  # ``-> Any``: nothing is promised about the output
        return None, "free"
    if route.response_model_exclude_none:
        schema = _none_fields_optional(schema)
    response_class = _response_class(route)
    if _sends_json(response_class):
        if schema.get("type") == "object":
            return schema, "object"
        return _wrapped(schema), "wrapped"
    if _sends_text(response_class) and _is_text_schema(schema):
        return _wrapped(schema), "text"
    return None, "free"


def _wrapped(schema: JSONObject) -> JSONObject:
    schema = dict(schema)
    defs = schema.pop("$defs", None)
    wrapped: JSONObject = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if defs:
        wrapped["$defs"] = defs
    return wrapped


def _response_class(route: APIRoute) -> type[Response]:
    value = compat.response_class_of(route)
    return value if isinstance(value, type) else JSONResponse


def _sends_json(response_class: type[Response]) -> bool:
    media_type = response_class.media_type or ""
    return issubclass(response_class, JSONResponse) or media_type == "application/json" or media_type.endswith("+json")


def _sends_text(response_class: type[Response]) -> bool:
    """A class that sends the rendered string as its body (Response, PlainTextResponse, HTMLResponse)."""
    if issubclass(response_class, (StreamingResponse, FileResponse, RedirectResponse)):
        return False
    media_type = response_class.media_type
    return media_type is None or (media_type.startswith("text/") and media_type != "text/event-stream")


def _is_text_schema(schema: JSONObject) -> bool:
    """A string value, sent as its own text (bytes are not text: their body need not be UTF-8)."""
    return schema.get("type") == "string" and schema.get("format") != "binary"


def _none_fields_optional(schema: JSONObject) -> JSONObject:
    """``response_model_exclude_none`` drops fields whose value is None: they cannot stay required."""
    defs = schema.get("$defs", {})

    def nullable(node: Any, seen: frozenset[str] = frozenset()) -> bool:
        if not isinstance(node, dict):
            return False
        if not node or node.get("type") == "null":  # ``{}`` (Any) admits null too
            return True
        if isinstance(node.get("type"), list) and "null" in node["type"]:
            return True
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref not in seen:
            return nullable(defs.get(ref.removeprefix("#/$defs/")), seen | {ref})
        return any(nullable(v, seen) for key in ("anyOf", "oneOf") for v in node.get(key, ()))

    def relax(node: Any) -> Any:
        if isinstance(node, list):
            return [relax(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: relax(value) for key, value in node.items()}
        properties = node.get("properties")
        if isinstance(properties, dict) and isinstance(node.get("required"), list):
            out["required"] = [name for name in node["required"] if not nullable(properties.get(name))]
            if not out["required"]:
                del out["required"]
        return out

    relaxed: JSONObject = relax(schema)
    return relaxed


def _resolve_root_ref(schema: JSONObject) -> JSONObject:
    """Pydantic gives a self-recursive model as a bare ``$ref``; MCP wants the object at the root."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/$defs/") or len(schema) != 2:
        return schema
    defs = schema["$defs"]
    target = dict(defs[ref.removeprefix("#/$defs/")])
    target["$defs"] = defs
    return target
