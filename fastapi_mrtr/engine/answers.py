"""Reading an answer: what of it is recorded and replayed, and whether it fits the question.

Answers are JSON and are validated as JSON, strictly (``"yes"`` is no boolean, ``"3"`` no
number). An answer that does not fit counts as missing, so the question is asked again. Only what
an answer means is recorded (the action and, on a form's accept, the fields the form asked for),
so every replay validates exactly what was recorded and a client cannot grow the sealed state.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from fastapi_mrtr.wire.mrtr import ElicitResult
from fastapi_mrtr.wire.protocol import JSONObject

_AnyElicitResult = ElicitResult[Any]  # parametrised once: pydantic would otherwise rebuild it on some calls


def parse_elicit_answer(
    answer: Any, properties: JSONObject, schema: Any, shorthand: bool, url_mode: bool
) -> tuple[JSONObject, ElicitResult[Any]] | None:
    """(what to record, what the handler gets) for a valid answer; None for an invalid one.

    Only what the answer means is recorded (the action and, on a form's accept, the content's
    fields the form asked for): unknown keys are ignored (spec-notes 1.6), so a client cannot
    grow the sealed state with them, and a replay validates exactly what was recorded.
    """
    if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
        return None
    action = answer["action"]
    if action != "accept" or url_mode:  # content comes only with a form's accept
        return {"action": action}, _AnyElicitResult(action=action)
    content = answer.get("content")
    if content is None and schema is None:  # a hand-built form with no typed answer to check
        return {"action": "accept"}, _AnyElicitResult(action="accept")
    if not isinstance(content, dict):
        return None
    content = {name: value for name, value in content.items() if name in properties}
    recorded: JSONObject = {"action": "accept", "content": content}
    if schema is None:
        return recorded, _AnyElicitResult(action="accept", content=content)
    try:
        value = _validator(schema)(to_json(content["value"] if shorthand else content))
    except (KeyError, ValidationError, PydanticSerializationError):
        return None
    return recorded, _AnyElicitResult(action="accept", content=value)


def parse_typed_answer(answer: Any, model: type[BaseModel]) -> tuple[JSONObject, Any] | None:
    """(what to record, the result) for a valid sampling or roots answer; None for an invalid one."""
    try:
        result = model.model_validate_json(to_json(answer), strict=True)
    except (ValidationError, PydanticSerializationError):
        return None
    recorded = _declared_fields(result)
    if recorded != answer:
        # This round's answer had unknown keys (wire models keep them): hand the handler what
        # the replays will see. A recorded answer comes back equal, so replays validate once.
        result = model.model_validate_json(to_json(recorded), strict=True)
    return recorded, result


def _declared_fields(value: Any) -> Any:
    """A validated wire model as JSON, without the unknown keys it keeps (nor None fields)."""
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        return {
            field.serialization_alias or field.alias or name: _declared_fields(item)
            for name, field in fields.items()
            if (item := getattr(value, name)) is not None
        }
    if isinstance(value, list):
        return [_declared_fields(item) for item in value]
    return value


def _validator(schema: Any) -> Callable[[str | bytes], Any]:
    """Validates an answer's content, as JSON text, against ``schema``; built once per schema.

    The answer is JSON, so it is read with JSON semantics, strictly: a string is neither a boolean
    nor a number ("yes" is no ``True``), yet an ISO string is a date and an integer a float, as in
    JSON Schema. (Strict Python-mode validation would refuse the date string.)
    """
    try:
        return _cached_validator(schema)
    except TypeError:  # an unhashable schema: no cache
        return _build_validator(schema)


@functools.lru_cache(maxsize=256)
def _cached_validator(schema: Any) -> Callable[[str | bytes], Any]:
    return _build_validator(schema)


def _build_validator(schema: Any) -> Callable[[str | bytes], Any]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return functools.partial(schema.model_validate_json, strict=True)
    return functools.partial(TypeAdapter(schema).validate_json, strict=True)
