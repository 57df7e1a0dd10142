"""Form-mode ``requestedSchema`` from a question's type, or a ``TypeError`` saying why it cannot be one.

A form is what the 2026-07-28 spec's ``PrimitiveSchemaDefinition`` allows: a flat object whose
properties are each a string (``minLength``/``maxLength``, ``format`` email, uri, date or
date-time), a number or integer (``minimum``/``maximum``), a boolean, a single-select enum of
strings (``enum``, or ``oneOf`` of ``{const, title}``) or a multi-select array of such an enum
(``minItems``/``maxItems``); each may carry ``title``, ``description`` and ``default``.

The question's type is a Pydantic model, a dataclass or a TypedDict (a form of its fields), or a
shorthand: any other type, asked as one field named ``value``. Its Pydantic JSON Schema is made
flat and checked here: ``$ref`` to enums are inlined, ``Optional[X]`` becomes ``X`` (not required),
``gt``/``lt`` on an integer become ``minimum``/``maximum`` one step in. What a form cannot carry is
refused with a ``TypeError`` when the question is built (a nested object, a list that is not a
multi-select, a union, a pattern, ``multiple_of``, an exclusive bound on a float), since no answer
could ever satisfy the server. Only what changes no answer is left out: a default that is not of
the field's type (``None`` for an ``Optional[str] = None``; clients reject the whole request over
it), a string format other than the four the spec names (a ``UUID`` is asked as a plain string;
the answer is still checked), ``uniqueItems`` (a multi-select picks each choice once) and
annotations such as ``examples``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.errors import PydanticUserError

from fastapi_mrtr.engine.ledger import canonical_json
from fastapi_mrtr.wire.protocol import JSONObject

STRING_FORMATS = frozenset({"date", "date-time", "email", "uri"})  # StringSchema.format, 2026-07-28

WHAT_A_FORM_ALLOWS = (
    "A form (2026-07-28 PrimitiveSchemaDefinition) is a flat object (a Pydantic model, dataclass or "
    "TypedDict, or one shorthand value) whose fields are each: str (formats email, uri, date, date-time: "
    "e.g. EmailStr, AnyUrl, date, datetime), int, float, bool, a single-select enum of strings (an Enum of "
    "str values or a Literal of strings), or a multi-select list of such an enum (list[Literal[...]], "
    "list[MyEnum]). Constraints carried: min_length/max_length, ge/le (and gt/lt on int), list "
    "min_length/max_length, default, title, description."
)

_COMMON = {"type", "title", "description", "default"}
_CARRIED = {
    "string": _COMMON | {"minLength", "maxLength", "format", "enum", "oneOf", "enumNames"},
    "integer": _COMMON | {"minimum", "maximum"},
    "number": _COMMON | {"minimum", "maximum"},
    "boolean": _COMMON,
    "array": _COMMON | {"items", "minItems", "maxItems"},
}
# Keywords that constrain an answer and that no primitive schema can carry: refused, with why.
_UNCARRIED = {
    "pattern": "a regex pattern cannot be carried by a form (no client could check it); check it in the handler",
    "multipleOf": "multiple_of cannot be carried by a form; check it in the handler",
    "exclusiveMinimum": "an exclusive bound (gt) on a float cannot be carried (forms have minimum only); use ge",
    "exclusiveMaximum": "an exclusive bound (lt) on a float cannot be carried (forms have maximum only); use le",
    "not": "'not' cannot be carried by a form",
    "allOf": "'allOf' cannot be carried by a form",
    "if": "a conditional schema cannot be carried by a form",
    "prefixItems": "a tuple is not a multi-select; use list[Literal[...]] or list[MyEnum]",
    "contains": "'contains' cannot be carried by a form",
}


@dataclass(frozen=True)
class FormShape:
    """A question's form: the schema sent, whether it is a shorthand, and its canonical JSON."""

    requested_schema: JSONObject
    shorthand: bool  # one field named "value": the answer's content is its bare value
    canonical: str


def form_shape(schema: Any) -> FormShape:
    """The form for ``schema``, computed once per schema: the result is shared, never mutate it.

    Raises ``TypeError`` naming the type and what a form allows when ``schema`` cannot be a form.
    Generating a JSON Schema costs far more than a whole MRTR round, and a handler asks the same
    question on every replay, so the cache is what keeps ``ctx.elicit`` cheap.
    """
    try:
        return _cached_shape(schema)
    except _Unhashable:  # e.g. Annotated metadata that is not hashable: build it each time
        return _build_shape(schema)


class _Unhashable(Exception):
    pass


def _cached_shape(schema: Any) -> FormShape:
    try:
        hash(schema)
    except TypeError:
        raise _Unhashable() from None
    return _cached_build(schema)


@functools.lru_cache(maxsize=256)
def _cached_build(schema: Any) -> FormShape:
    return _build_shape(schema)


def requested_schema_for(schema: Any) -> JSONObject:
    """The ``requestedSchema`` for ``schema`` (shared: never mutate it); ``TypeError`` if it cannot be one."""
    return form_shape(schema).requested_schema


def requested_schema_json(schema: Any) -> str:
    """:func:`requested_schema_for` as canonical JSON (for question digests), also computed once."""
    return form_shape(schema).canonical


def is_shorthand(schema: Any) -> bool:
    """Whether ``schema`` is asked as one field named ``value`` (anything but a model, dataclass or TypedDict)."""
    return form_shape(schema).shorthand


def type_name(schema: Any) -> str:
    name = getattr(schema, "__qualname__", None)
    if isinstance(name, str) and not getattr(schema, "__args__", None):
        return name
    return repr(schema).replace("typing.", "")


class _NotAPrimitive(Exception):
    """One field that no primitive schema can carry; the message says why."""


def _build_shape(schema: Any) -> FormShape:
    try:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            raw = schema.model_json_schema()
        else:
            raw = TypeAdapter(schema).json_schema()
    except (PydanticUserError, TypeError, ValueError) as exc:
        raise TypeError(
            f"ctx.elicit: {type_name(schema)} cannot be asked as a form: Pydantic cannot describe it ({exc}). "
            + WHAT_A_FORM_ALLOWS
        ) from None
    defs: dict[str, Any] = raw.get("$defs", {})
    top = _resolved(raw, defs)
    try:
        if top.get("type") == "object" and isinstance(top.get("properties"), dict):
            properties = {name: _field(prop, defs, f"field {name!r}") for name, prop in top["properties"].items()}
            out: JSONObject = {"type": "object", "properties": properties}
            if top.get("required"):
                out["required"] = list(top["required"])
            shorthand = False
        else:
            out = {"type": "object", "properties": {"value": _field(raw, defs, "its value")}, "required": ["value"]}
            shorthand = True
    except _NotAPrimitive as exc:
        raise TypeError(
            f"ctx.elicit: {type_name(schema)} cannot be asked as a form: {exc}. {WHAT_A_FORM_ALLOWS}"
        ) from None
    return FormShape(out, shorthand, canonical_json(out))


def _resolved(prop: JSONObject, defs: dict[str, Any]) -> JSONObject:
    """``prop`` with a ``$ref`` replaced by its definition (the reference's own keys win)."""
    ref = prop.get("$ref")
    if not isinstance(ref, str):
        return prop
    merged = {**defs.get(ref.rsplit("/", 1)[-1], {}), **{k: v for k, v in prop.items() if k != "$ref"}}
    return _resolved(merged, defs)


def _field(prop: JSONObject, defs: dict[str, Any], where: str) -> JSONObject:
    """One property as a primitive schema; ``_NotAPrimitive`` saying why when it cannot be one."""
    prop = _resolved(prop, defs)
    variants = prop.get("anyOf")
    if isinstance(variants, list):
        non_null = [v for v in variants if v.get("type") != "null"]
        if len(non_null) == 1:  # Optional[X]
            return _field({**non_null[0], **{k: v for k, v in prop.items() if k != "anyOf"}}, defs, where)
        raise _NotAPrimitive(f"{where} is a union of several types; a field has one type")
    prop = _choices_as_strings(prop, where)
    kind = _primitive_kind(prop, where)
    return _carried(_shaped(prop, kind, defs, where), kind)


def _choices_as_strings(prop: JSONObject, where: str) -> JSONObject:
    """``Literal``/``Enum`` choices as a string enum (``Literal["x"]`` is a choice of one)."""
    if "const" in prop:
        prop = {**{k: v for k, v in prop.items() if k != "const"}, "enum": [prop["const"]]}
    if "enum" in prop:
        if not all(isinstance(choice, str) for choice in prop["enum"]):
            raise _NotAPrimitive(f"{where} is a choice of {prop['enum']!r}; the choices of a form are strings")
        prop = {**prop, "type": "string"}
    return prop


def _primitive_kind(prop: JSONObject, where: str) -> str:
    """The field's JSON type, if a form can carry it with every keyword it has."""
    kind = prop.get("type")
    if kind == "object" or "properties" in prop or "additionalProperties" in prop:
        raise _NotAPrimitive(f"{where} is a nested object (a model, dataclass or dict); a form is flat")
    if kind is None:
        raise _NotAPrimitive(f"{where} accepts any value (it has no JSON type); a form field has one type")
    if kind not in _CARRIED:
        raise _NotAPrimitive(f"{where} has JSON type {kind!r}, which no form field has")
    for keyword, why in _UNCARRIED.items():
        if keyword in prop and not (kind == "integer" and keyword.startswith("exclusive")):
            raise _NotAPrimitive(f"{where}: {why}")
    return str(kind)


def _shaped(prop: JSONObject, kind: str, defs: dict[str, Any], where: str) -> JSONObject:
    """What a kind needs said its own way: integer bounds, a multi-select's choices, titled choices."""
    if kind == "integer":
        return _integer_bounds(prop)
    if kind == "array":
        return {**prop, "items": _choices(prop.get("items"), defs, where)}
    if kind == "string" and "oneOf" in prop and not _titled_choices(prop["oneOf"]):
        raise _NotAPrimitive(f"{where}: oneOf must list {{const, title}} choices of strings")
    return prop


def _carried(prop: JSONObject, kind: str) -> JSONObject:
    """Only the keywords the kind's primitive schema has; a default or format it cannot take is dropped."""
    out = {k: v for k, v in prop.items() if k in _CARRIED[kind]}
    if "default" in out and not _default_fits(kind, out["default"]):
        del out["default"]
    if "format" in out and out["format"] not in STRING_FORMATS:
        del out["format"]
    return out


def _integer_bounds(prop: JSONObject) -> JSONObject:
    """``gt``/``lt`` on an integer as ``minimum``/``maximum`` (``gt=0`` is ``minimum: 1``)."""
    out = dict(prop)
    if "exclusiveMinimum" in out:
        low = math.floor(out.pop("exclusiveMinimum")) + 1
        out["minimum"] = max(low, out.get("minimum", low))
    if "exclusiveMaximum" in out:
        high = math.ceil(out.pop("exclusiveMaximum")) - 1
        out["maximum"] = min(high, out.get("maximum", high))
    return out


def _choices(items: Any, defs: dict[str, Any], where: str) -> JSONObject:
    """A multi-select's items: its choices and nothing else (no title from the enum's definition)."""
    items = _resolved(items, defs) if isinstance(items, dict) else {}
    if "const" in items:
        items = {**items, "enum": [items["const"]]}
    enum = items.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(choice, str) for choice in enum):
        return {"type": "string", "enum": enum}
    titled = items.get("anyOf", items.get("oneOf"))
    if isinstance(titled, list) and _titled_choices(titled):
        return {"anyOf": titled}
    raise _NotAPrimitive(
        f"{where} is a list of free values; a form's only list is a multi-select of string choices "
        "(list[Literal['a', 'b']] or list[MyEnum])"
    )


def _titled_choices(choices: Any) -> bool:
    return isinstance(choices, list) and all(
        isinstance(c, dict) and isinstance(c.get("const"), str) and isinstance(c.get("title"), str) for c in choices
    )


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
