"""MRTR (SEP-2322) vocabulary: input requests, the ``input_required`` result and the embedded
elicitation, sampling and roots shapes, with helpers to build and read them.

Embedded requests travel as bare ``{method, params}`` objects (no ``jsonrpc``, no ``id``) and the
answers as bare results (no ``resultType``, no ``_meta``). Like :mod:`fastapi_mrtr.wire.protocol`, this
module knows nothing of FastAPI and is shared by the server and the client.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar, Union

from pydantic import Field

from fastapi_mrtr.wire.protocol import (
    AudioContent,
    ImageContent,
    JSONObject,
    Result,
    TextContent,
    WireModel,
    dump,
)

ELICITATION_CREATE = "elicitation/create"
SAMPLING_CREATE_MESSAGE = "sampling/createMessage"
ROOTS_LIST = "roots/list"
T = TypeVar("T")


class InputRequest(WireModel):
    """One entry of ``inputRequests``: a server-to-client request carried inside a result."""

    method: str
    params: JSONObject | None = None


InputRequests = dict[str, InputRequest]
InputResponses = dict[str, JSONObject]


class InputRequiredResult(Result):
    """The interim answer to ``tools/call``, ``prompts/get`` or ``resources/read``."""

    result_type: str = "input_required"
    input_requests: dict[str, InputRequest] | None = None
    request_state: str | None = None


# --- elicitation ------------------------------------------------------------------------------


class ElicitRequestParams(WireModel):
    """``elicitation/create`` params: form mode (``requested_schema``) or URL mode (``url``)."""

    mode: Literal["form", "url"] = "form"
    message: str
    requested_schema: JSONObject | None = None
    url: str | None = None


ElicitAction = Literal["accept", "decline", "cancel"]


class ElicitResult(WireModel, Generic[T]):
    """The user's answer. ``content`` is set only on ``accept`` in form mode.

    ``ElicitResult[Model]`` is the typed form the server hands to handlers: on accept, ``content``
    has been validated into ``Model``.
    """

    action: ElicitAction
    content: T | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


# --- sampling (deprecated in the spec, still on the wire) -------------------------------------

SamplingContent = Union[TextContent, ImageContent, AudioContent]


class SamplingMessage(WireModel):
    role: Literal["user", "assistant"]
    content: SamplingContent | list[SamplingContent]


class ModelHint(WireModel):
    name: str | None = None


class ModelPreferences(WireModel):
    hints: list[ModelHint] | None = None
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None


class CreateMessageRequestParams(WireModel):
    messages: list[SamplingMessage]
    max_tokens: int
    system_prompt: str | None = None
    model_preferences: ModelPreferences | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    metadata: JSONObject | None = None
    tools: list[JSONObject] | None = None
    tool_choice: JSONObject | None = None


class CreateMessageResult(WireModel):
    role: Literal["user", "assistant"] = "assistant"
    content: SamplingContent | list[SamplingContent] | JSONObject | list[JSONObject]
    model: str
    stop_reason: str | None = None


# --- roots (deprecated in the spec, still on the wire) ----------------------------------------


class Root(WireModel):
    uri: str
    name: str | None = None


class ListRootsResult(WireModel):
    roots: list[Root] = Field(default_factory=list)


# --- helpers ----------------------------------------------------------------------------------


def make_input_request_for_elicitation(params: ElicitRequestParams | str, **form: Any) -> InputRequest:
    """An ``elicitation/create`` input request; a bare message plus ``requested_schema=`` is a form."""
    if isinstance(params, str):
        params = ElicitRequestParams(message=params, **form)
    return InputRequest(method=ELICITATION_CREATE, params=dump(params))


def make_input_request_for_sampling(params: CreateMessageRequestParams) -> InputRequest:
    """A ``sampling/createMessage`` input request."""
    return InputRequest(method=SAMPLING_CREATE_MESSAGE, params=dump(params))


def make_input_request_for_roots() -> InputRequest:
    """A ``roots/list`` input request (params ``{}``, as the conformance fixtures send it)."""
    return InputRequest(method=ROOTS_LIST, params={})


def _bare(model: WireModel) -> JSONObject:
    body = dump(model)
    body.pop("resultType", None)
    body.pop("_meta", None)
    return body


def make_input_response_from_elicit_result(result: ElicitResult[Any]) -> JSONObject:
    """The ``inputResponses`` value for an elicitation answer: a bare result."""
    return _bare(result)


def make_input_response_from_create_message_result(result: CreateMessageResult) -> JSONObject:
    """The ``inputResponses`` value for a sampling answer: a bare result."""
    return _bare(result)


def make_input_response_from_list_roots_result(result: ListRootsResult) -> JSONObject:
    """The ``inputResponses`` value for a roots answer: a bare result."""
    return _bare(result)
