"""Reading a server's results into models, and a caller's seed answers into wire answers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from fastapi_mrtr.client._errors import InvalidServerResponseError
from fastapi_mrtr.client._handlers import InputAnswer
from fastapi_mrtr.wire.mrtr import (
    CreateMessageResult,
    ElicitResult,
    InputRequiredResult,
    InputResponses,
    ListRootsResult,
    make_input_response_from_create_message_result,
    make_input_response_from_elicit_result,
    make_input_response_from_list_roots_result,
)
from fastapi_mrtr.wire.protocol import JSONObject, Result

R = TypeVar("R", bound=Result)

# The three methods that may answer input_required (mrtr.mdx, Supported Requests).
INPUT_REQUIRED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})


def parse_result(raw: JSONObject, model: type[R], method: str) -> R | InputRequiredResult:
    """Type a result by its ``resultType``: missing means complete, unknown is invalid."""
    kind = raw.get("resultType", "complete")
    target: type[BaseModel]
    if kind == "complete":
        target = model
    elif kind == "input_required" and method in INPUT_REQUIRED_METHODS:
        target = InputRequiredResult
    else:
        raise InvalidServerResponseError(f"resultType {kind!r} is not valid for {method}", raw)
    # The model defaults `content` for building results; on the wire a complete tools/call
    # result must carry it (spec-notes 4.2), so its absence is a broken reply, not "no content".
    if method == "tools/call" and target is model and "content" not in raw:
        raise InvalidServerResponseError("tools/call result without content", raw)
    try:
        parsed = target.model_validate(raw)
    except ValidationError as exc:
        raise InvalidServerResponseError(f"malformed {method} result: {exc}", raw) from exc
    if isinstance(parsed, InputRequiredResult):
        if not parsed.input_requests and parsed.request_state is None:
            raise InvalidServerResponseError("input_required without inputRequests or requestState", raw)
        return parsed
    assert isinstance(parsed, model)
    return parsed


def result_parser(model: type[R], method: str) -> Callable[[JSONObject], R | InputRequiredResult]:
    """How to read one reply of an MRTR method that answers ``model`` when complete."""
    return lambda raw: parse_result(raw, model, method)


def seed_answers(answers: Mapping[str, InputAnswer] | None) -> InputResponses | None:
    """Caller-supplied answers as bare results (models are dumped; dicts go as given)."""
    if not answers:
        return None
    seeded: InputResponses = {}
    for key, answer in answers.items():
        if isinstance(answer, ElicitResult):
            seeded[key] = make_input_response_from_elicit_result(answer)
        elif isinstance(answer, CreateMessageResult):
            seeded[key] = make_input_response_from_create_message_result(answer)
        elif isinstance(answer, ListRootsResult):
            seeded[key] = make_input_response_from_list_roots_result(answer)
        else:
            seeded[key] = dict(answer)
    return seeded


def cursor_params(cursor: str | None) -> JSONObject:
    return {"cursor": cursor} if cursor is not None else {}
