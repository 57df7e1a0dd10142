"""Form-mode ``requestedSchema`` from a Pydantic model or a primitive shorthand.

Elicitation forms are flat: an object of primitive properties (string, number, integer, boolean,
enums and multi-select arrays). Pydantic's JSON Schema is made flat here: ``$ref`` to enums are
inlined and ``Optional[X]`` becomes ``X`` (not required). What the spec's primitive schemas do not
allow is left out rather than sent: a default that is not of the field's type (``None`` for an
``Optional[str] = None``; clients reject the whole request over it) and a string format other
than the four the spec names.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, TypeAdapter

from fastapi_mrtr.engine.ledger import canonical_json
from fastapi_mrtr.wire.protocol import JSONObject

_KEEP = {
    "type",
    "title",
    "description",
    "default",
    "enum",
    "oneOf",
    "anyOf",
    "items",
    "format",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "enumNames",
    "minItems",
    "maxItems",
}
# A multi-select's items are its choices and nothing else (no title from the enum's definition).
_ITEM_KEYS = {"type", "enum", "anyOf"}


def requested_schema_for(schema: Any) -> JSONObject:
    """The form schema for ``schema``, computed once per schema: the result is shared, never mutate it.

    Generating a JSON Schema costs far more than a whole MRTR round, and a handler asks the same
    question on every replay, so the cache is what keeps ``ctx.elicit`` cheap.
    """
    try:
        return _cached_schema(schema)
    except TypeError:  # unhashable (e.g. Annotated metadata that is not hashable): build it each time
        return _build_schema(schema)


@functools.lru_cache(maxsize=256)
def _cached_schema(schema: Any) -> JSONObject:
    return _build_schema(schema)


def requested_schema_json(schema: Any) -> str:
    """:func:`requested_schema_for` as canonical JSON (for question digests), also computed once."""
    try:
        return _cached_schema_json(schema)
    except TypeError:  # unhashable: see requested_schema_for
        return canonical_json(_build_schema(schema))


@functools.lru_cache(maxsize=256)
def _cached_schema_json(schema: Any) -> str:
    return canonical_json(_cached_schema(schema))


def _build_schema(schema: Any) -> JSONObject:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        raw = schema.model_json_schema()
        defs = raw.get("$defs", {})
        properties = {name: _flatten(prop, defs) for name, prop in raw.get("properties", {}).items()}
        out: JSONObject = {"type": "object", "properties": properties}
        if raw.get("required"):
            out["required"] = list(raw["required"])
        return out
    raw = TypeAdapter(schema).json_schema()
    value = _flatten(raw, raw.get("$defs", {}))  # Optional[Enum] and list[Enum] refer to the enum
    return {"type": "object", "properties": {"value": value}, "required": ["value"]}


def _flatten(prop: JSONObject, defs: dict[str, Any]) -> JSONObject:
    ref = prop.get("$ref")
    if isinstance(ref, str):
        merged = {**defs.get(ref.rsplit("/", 1)[-1], {}), **{k: v for k, v in prop.items() if k != "$ref"}}
        return _flatten(merged, defs)
    variants = prop.get("anyOf")
    if isinstance(variants, list):
        non_null = [v for v in variants if v.get("type") != "null"]
        if len(non_null) == 1:  # Optional[X]
            return _flatten({**non_null[0], **{k: v for k, v in prop.items() if k != "anyOf"}}, defs)
    out = {k: v for k, v in prop.items() if k in _KEEP}
    if "items" in out and isinstance(out["items"], dict):
        items = _flatten(out["items"], defs)
        out["items"] = {k: v for k, v in items.items() if k in _ITEM_KEYS}
    if "enum" in out and "type" not in out:
        out["type"] = "string"
    return _conforming(out)


STRING_FORMATS = frozenset({"date", "date-time", "email", "uri"})  # StringSchema.format, 2026-07-28


def _conforming(prop: JSONObject) -> JSONObject:
    """``prop`` without the keywords a primitive schema of its type cannot carry."""
    kind = prop.get("type")
    if "default" in prop and not _default_fits(kind, prop["default"]):
        prop = {k: v for k, v in prop.items() if k != "default"}
    if "format" in prop and (kind != "string" or prop["format"] not in STRING_FORMATS):
        prop = {k: v for k, v in prop.items() if k != "format"}
    return prop


def _default_fits(kind: Any, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return False
