"""A tool's ``inputSchema``: the JSON Schema of its arguments, generated from the route's fields.

All arguments are generated in one pass, so a model several arguments share lands once in a
common ``$defs``. A hand-written ``input_schema=`` replaces it after a light check.
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any, Literal

from fastapi.routing import APIRoute
from pydantic import TypeAdapter
from pydantic.fields import FieldInfo

from fastapi_mrtr.integration.call_plan import CallPlan, collect_params, flat_body_model
from fastapi_mrtr.wire.protocol import JSONObject


def checked_input_schema(tool: str, schema: JSONObject) -> JSONObject:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ValueError(f'tool {tool!r}: input_schema must be a JSON Schema object with "type": "object"')
    return dict(schema)


def build_input_schema(tool: str, route: APIRoute, plan: CallPlan) -> JSONObject:
    path, query, body = collect_params(route)
    fields: dict[str, tuple[Any, FieldInfo]] = {}
    for f in [*path, *query]:
        fields[f.alias] = (f.field_info.annotation, f.field_info)
    flat = flat_body_model(body)
    if flat is not None:
        for name, info in flat.model_fields.items():
            fields[info.alias or name] = (info.annotation, info)
    else:
        for f in body:
            fields[f.alias] = (f.field_info.annotation, f.field_info)
    return _schema_of_fields(tool, fields)


def _constrained(annotation: Any, info: FieldInfo) -> Any:
    """The argument's type with its constraints (``ge=``, ``max_length=``...) attached."""
    if not info.metadata:
        return annotation
    return Annotated.__class_getitem__((annotation, *info.metadata))  # type: ignore[attr-defined]


def _schema_of_fields(tool: str, fields: dict[str, tuple[Any, FieldInfo]]) -> JSONObject:
    # One generation pass over every argument, so models shared by several arguments (and
    # recursive ones) land once in a common $defs instead of being inlined or repeated.
    adapters: list[tuple[str, Literal["validation"], TypeAdapter[Any]]] = [
        (alias, "validation", TypeAdapter(_constrained(annotation, info)))
        for alias, (annotation, info) in fields.items()
    ]
    schemas, top = TypeAdapter.json_schemas(adapters, ref_template="#/$defs/{model}")
    properties: JSONObject = {}
    required: list[str] = []
    for alias, (_, info) in fields.items():
        prop = dict(schemas[(alias, "validation")])
        prop.setdefault("title", info.title or alias.replace("_", " ").title())
        if info.description:
            prop["description"] = info.description
        if isinstance(info.json_schema_extra, dict):  # e.g. Query(json_schema_extra={"x-mcp-header": ...})
            prop.update(info.json_schema_extra)
        if info.is_required():
            required.append(alias)
        else:
            default = info.get_default(call_default_factory=True)
            with contextlib.suppress(Exception):  # a default that is not JSON stays out of the schema
                prop["default"] = TypeAdapter(Any).dump_python(default, mode="json")
        properties[alias] = prop
    schema: JSONObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if top.get("$defs"):
        schema["$defs"] = top["$defs"]
    return schema
