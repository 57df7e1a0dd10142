"""Reading an answer: what of it is recorded and replayed, and whether it fits the question.

Answers are JSON and are validated as JSON, strictly (``"yes"`` is no boolean, ``"3"`` no
number). An answer that does not fit is refused: the question is asked again, carrying the reason
(``_meta["fastapi-mrtr/refused-answer"]``). An answer that is no result at all (not an object, no
``action``) is a malformed message, refused with -32602 before the handler runs. Only what
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


ACTIONS = ("accept", "decline", "cancel")


def malformed_reason(answer: Any, elicitation: bool) -> str | None:
    """Why ``answer`` is not a result of the request it answers at all, or None when it is one.

    Such an answer is a malformed message (the client's bug), refused with -32602 rather than
    asked again: asking again would only bring the same message back until ``max_rounds``.
    """
    if not isinstance(answer, dict):
        return f"it is {_json_kind(answer)}, not an object (the result of the request)"
    if not elicitation:
        return None
    action = answer.get("action")
    if action is None:
        return "it has no action (accept, decline or cancel)"
    if action not in ACTIONS:
        return f"its action {action!r} is not accept, decline or cancel"
    if answer.get("content") is not None and not isinstance(answer["content"], dict):
        return f"its content is {_json_kind(answer['content'])}, not an object"
    return None


def parse_elicit_response(
    answer: Any, properties: JSONObject, schema: Any, shorthand: bool, url_mode: bool
) -> tuple[JSONObject, ElicitResult[Any]] | str:
    """(what to record, what the handler gets) for a valid answer; why it was refused otherwise.

    Only what the answer means is recorded (the action and, on a form's accept, the content's
    fields the form asked for): unknown keys are ignored (spec-notes 1.6), so a client cannot
    grow the sealed state with them, and a replay validates exactly what was recorded. The
    reason describes the person's own answer only, so it may be shown to them.
    """
    malformed = malformed_reason(answer, elicitation=True)
    if malformed is not None:
        return f"the answer is not an elicitation result: {malformed}"
    action = answer["action"]
    if action != "accept" or url_mode:  # content comes only with a form's accept
        return {"action": action}, _AnyElicitResult(action=action)
    content = answer.get("content")
    if content is None and schema is None:  # a hand-built form with no typed answer to check
        return {"action": "accept"}, _AnyElicitResult(action="accept")
    if not isinstance(content, dict):
        return "the answer was accepted without content"
    content = {name: value for name, value in content.items() if name in properties}
    recorded: JSONObject = {"action": "accept", "content": content}
    if schema is None:
        return recorded, _AnyElicitResult(action="accept", content=content)
    if shorthand and "value" not in content:
        return "value: Field required"
    try:
        value = _validator(schema)(to_json(content["value"] if shorthand else content))
    except ValidationError as exc:
        return validation_reason(exc)
    except PydanticSerializationError:
        return "the answer's content cannot be read as JSON"
    return recorded, _AnyElicitResult(action="accept", content=value)


def validation_reason(exc: ValidationError, limit: int = 3) -> str:
    """What was wrong with an answer, field by field (``amount: Input should be greater than 0``).

    Only locations and Pydantic's messages, never the input itself nor any server detail.
    """
    parts = []
    for error in exc.errors(include_url=False, include_input=False)[:limit]:
        where = ".".join(str(part) for part in error.get("loc", ()))
        parts.append(f"{where}: {error['msg']}" if where else str(error["msg"]))
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def parse_typed_response(answer: Any, model: type[BaseModel]) -> tuple[JSONObject, Any] | str:
    """(what to record, the result) for a valid sampling or roots answer; why it was refused otherwise."""
    try:
        result = model.model_validate_json(to_json(answer), strict=True)
    except ValidationError as exc:
        return validation_reason(exc)
    except PydanticSerializationError:
        return "the answer cannot be read as JSON"
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
