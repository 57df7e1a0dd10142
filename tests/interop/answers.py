"""Valid answers made up from a schema: form answers for elicitations, arguments for tools.

Small on purpose: the primitive schemas of the 2026-07-28 forms (string with enum, oneOf or
format and lengths; integer/number with bounds; boolean; arrays of enum choices) and the flat
input schemas FastAPI routes give (``anyOf`` with ``null`` for Optional parameters).
"""

from __future__ import annotations

from typing import Any

FORMAT_EXAMPLES = {
    "email": "ada@example.com",
    "uri": "https://example.com/ada",
    "date": "2026-07-28",
    "date-time": "2026-07-28T12:00:00Z",
}


def form_answer(requested_schema: dict[str, Any]) -> dict[str, Any]:
    """A value for every property of a form (optional ones too: a user who fills everything in)."""
    properties: dict[str, Any] = requested_schema.get("properties") or {}
    return {name: value_for(prop) for name, prop in properties.items()}


def arguments_for(input_schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool: its required parameters only, as a caller would send them."""
    properties: dict[str, Any] = input_schema.get("properties") or {}
    return {name: value_for(properties[name]) for name in input_schema.get("required") or [] if name in properties}


def value_for(schema: dict[str, Any]) -> Any:
    """A value that ``schema`` accepts: its default when it has a usable one, else the simplest."""
    default = schema.get("default")
    if default is not None:
        return default
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("oneOf"):
        return schema["oneOf"][0]["const"]
    if "anyOf" in schema:  # Optional[X]: the X arm
        arms = [arm for arm in schema["anyOf"] if arm.get("type") != "null"]
        return value_for(arms[0]) if arms else None
    kind = schema.get("type")
    if kind == "string":
        return _string(schema)
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "array":
        return _array(schema)
    if kind == "object":
        return form_answer(schema)
    raise ValueError(f"no example value for the schema {schema!r}")


def _string(schema: dict[str, Any]) -> str:
    text = FORMAT_EXAMPLES.get(schema.get("format", ""), "Ada")
    minimum = int(schema.get("minLength") or 0)
    maximum = schema.get("maxLength")
    text = text.ljust(minimum, "a")
    return text[: int(maximum)] if maximum is not None else text


def _number(schema: dict[str, Any], *, integer: bool) -> int | float:
    low, high = schema.get("minimum"), schema.get("maximum")
    value = low if low is not None else (min(high, 1) if high is not None else 1)
    return int(value) if integer else float(value)


def _array(schema: dict[str, Any]) -> list[Any]:
    items = schema.get("items") or {}
    if items.get("anyOf"):
        return [items["anyOf"][0]["const"]]
    count = max(int(schema.get("minItems") or 1), 1)
    return [value_for(items) for _ in range(count)]
