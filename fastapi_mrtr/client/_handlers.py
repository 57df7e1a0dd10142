"""Answering ``inputRequests``: dispatch by method to the registered handlers, concurrently.

Handlers may be sync or async. A sync handler runs in a worker thread, so a blocking one (a
terminal prompt) neither stalls the event loop nor the other handlers of its round, and the
round timeout can still fire (the thread is abandoned, its answer dropped).

While a handler runs, :func:`current_input_request` says which request it answers and whether
the server asked that same question again after our last answer (it did not accept it).

Handlers registered as interactive (they talk to a person) never run at the same time: they
take turns in the order the server listed the requests (:mod:`fastapi_mrtr.client._turns`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar, Union

import anyio
import anyio.to_thread
from pydantic import BaseModel, ValidationError

from fastapi_mrtr.client._turns import TurnOrder
from fastapi_mrtr.wire.errors import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from fastapi_mrtr.wire.mrtr import (
    ELICITATION_CREATE,
    ROOTS_LIST,
    SAMPLING_CREATE_MESSAGE,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequest,
    ListRootsResult,
    make_input_response_from_create_message_result,
    make_input_response_from_elicit_result,
    make_input_response_from_list_roots_result,
)
from fastapi_mrtr.wire.protocol import JSONObject

R = TypeVar("R")

ElicitationAnswer = Union[ElicitResult[Any], JSONObject]
SamplingAnswer = Union[CreateMessageResult, JSONObject]
RootsAnswer = Union[ListRootsResult, JSONObject]

ElicitationHandler = Callable[[ElicitRequestParams], Union[ElicitationAnswer, Awaitable[ElicitationAnswer]]]
SamplingHandler = Callable[[CreateMessageRequestParams], Union[SamplingAnswer, Awaitable[SamplingAnswer]]]
RootsHandler = Callable[[], Union[RootsAnswer, Awaitable[RootsAnswer]]]

InputAnswer = Union[ElicitResult[Any], CreateMessageResult, ListRootsResult, JSONObject]


@dataclass(frozen=True)
class InputRequestInfo:
    """What a running handler may want to know about the input request it answers."""

    key: str  # the server's key for the request (the inputRequests entry)
    round: int  # 1 for the first answered round of the flow, 2 for the next, ...
    # The answer we sent for this key last round, when the server asked the very same question
    # again: a server re-asks a question whose answer it did not accept (it did not validate).
    rejected_answer: JSONObject | None = None
    # Why the server refused our last answer, when it says so (fastapi-mrtr servers do, in the
    # request's params._meta["fastapi-mrtr/refused-answer"]); server text, not yet printable.
    refusal_reason: str | None = None

    @property
    def asked_again(self) -> bool:
        """The server did not accept the previous answer to this question."""
        return self.rejected_answer is not None or self.refusal_reason is not None


REFUSED_ANSWER_META = "fastapi-mrtr/refused-answer"


def refusal_reason(request: InputRequest) -> str | None:
    """The reason a server gave for asking ``request`` again, if it gave one."""
    meta = (request.params or {}).get("_meta")
    refused = meta.get(REFUSED_ANSWER_META) if isinstance(meta, dict) else None
    reason = refused.get("reason") if isinstance(refused, dict) else None
    return reason if isinstance(reason, str) else None


def same_question(asked: InputRequest, before: InputRequest) -> bool:
    """Whether ``asked`` is the question ``before`` was, the server's refusal note aside."""
    return _without_refusal(asked) == _without_refusal(before)


def _without_refusal(request: InputRequest) -> tuple[str, JSONObject | None]:
    params = request.params
    meta = params.get("_meta") if params is not None else None
    if params is None or not isinstance(meta, dict) or REFUSED_ANSWER_META not in meta:
        return request.method, params
    rest = {name: value for name, value in meta.items() if name != REFUSED_ANSWER_META}
    trimmed = {name: value for name, value in params.items() if name != "_meta"}
    if rest:
        trimmed["_meta"] = rest
    return request.method, trimmed


# Set in each handler's own task (and copied into its worker thread), so handlers of one round
# each see their own request.
_current: ContextVar[InputRequestInfo | None] = ContextVar("fastapi_mrtr_input_request", default=None)


def current_input_request() -> InputRequestInfo | None:
    """The input request the calling handler answers; ``None`` outside a handler."""
    return _current.get()


def _is_async(fn: Callable[..., Any]) -> bool:
    call = getattr(fn, "__call__", None)  # noqa: B004 - async __call__ on instances
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


async def _invoke(fn: Callable[..., Any], *args: Any) -> Any:
    if _is_async(fn):
        return await fn(*args)
    value = await anyio.to_thread.run_sync(lambda: fn(*args), abandon_on_cancel=True)
    if inspect.isawaitable(value):  # e.g. a partial() or lambda wrapping a coroutine function
        value = await value
    return value


def _parse(model: type[BaseModel], method: str, params: JSONObject | None) -> Any:
    try:
        return model.model_validate(params or {})
    except ValidationError as exc:
        raise McpError(INVALID_PARAMS, f"invalid params for {method}: {exc.errors()[0]['msg']}") from exc


def _elicitation_params(params: JSONObject | None) -> ElicitRequestParams:
    """Parsed ``elicitation/create`` params, with what each mode needs (spec-notes 1.5).

    The model leaves ``url`` and ``requestedSchema`` optional because it serves both modes;
    a handler must still never see a URL request without a URL or a form without its schema.
    """
    parsed: ElicitRequestParams = _parse(ElicitRequestParams, ELICITATION_CREATE, params)
    if parsed.mode == "url":
        problem = None if parsed.url is not None else "url mode needs a url"
    else:
        problem = _form_schema_problem(parsed.requested_schema)
    if problem is not None:
        raise McpError(INVALID_PARAMS, f"invalid params for {ELICITATION_CREATE}: {problem}")
    return parsed


def _form_schema_problem(schema: JSONObject | None) -> str | None:
    """What is wrong with a form's ``requestedSchema`` (``{type, properties, required?}``)."""
    if schema is None:
        return "form mode needs a requestedSchema"
    if not isinstance(schema.get("properties", {}), dict):
        return "requestedSchema.properties must be an object"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        return "requestedSchema.required must be a list of strings"
    return None


def bare_response(method: str, answer: Any) -> JSONObject:
    """The ``inputResponses`` value for a handler's answer (a model or a dict): a bare result."""
    try:
        if method == ELICITATION_CREATE:
            elicit = answer if isinstance(answer, ElicitResult) else ElicitResult[Any].model_validate(answer)
            return make_input_response_from_elicit_result(elicit)
        if method == SAMPLING_CREATE_MESSAGE:
            sample = answer if isinstance(answer, CreateMessageResult) else CreateMessageResult.model_validate(answer)
            return make_input_response_from_create_message_result(sample)
        if method == ROOTS_LIST:
            roots = answer if isinstance(answer, ListRootsResult) else ListRootsResult.model_validate(answer)
            return make_input_response_from_list_roots_result(roots)
    except ValidationError as exc:
        raise TypeError(f"handler for {method} returned an invalid answer: {exc}") from exc
    raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")


class InputHandlers:
    """The registered handlers; they decide the capabilities declared on every request."""

    def __init__(self) -> None:
        self.elicitation: ElicitationHandler | None = None
        self.sampling: SamplingHandler | None = None
        self.roots: RootsHandler | None = None
        # The methods whose handler talks to a person: they take turns, one at a time, in the
        # order the server listed the requests, across every round and call of this client.
        self.interactive: set[str] = set()
        self.turns = TurnOrder()

    def take_turn(self, method: str) -> int | None:
        """A ticket in the turn order when ``method``'s handler is interactive, else ``None``."""
        return self.turns.take() if method in self.interactive else None

    def capabilities(self) -> JSONObject:
        """``clientCapabilities`` implied by the handlers (a fresh dict each time)."""
        caps: JSONObject = {}
        if self.elicitation is not None:
            caps["elicitation"] = {"form": {}, "url": {}}
        if self.sampling is not None:
            caps["sampling"] = {}
        if self.roots is not None:
            caps["roots"] = {}
        return caps

    def _handler_for(self, method: str) -> Callable[..., Any]:
        handler: Callable[..., Any] | None = {
            ELICITATION_CREATE: self.elicitation,
            SAMPLING_CREATE_MESSAGE: self.sampling,
            ROOTS_LIST: self.roots,
        }.get(method)
        if handler is None:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: no handler for {method!r}")
        return handler

    def _prepare(self, request: InputRequest) -> Callable[[], Awaitable[Any]]:
        """Check one request's method and params; return the call that runs its handler."""
        handler = self._handler_for(request.method)
        if request.method == ELICITATION_CREATE:
            elicit = _elicitation_params(request.params)
            return lambda: _invoke(handler, elicit)
        if request.method == SAMPLING_CREATE_MESSAGE:
            sample = _parse(CreateMessageRequestParams, request.method, request.params)
            return lambda: _invoke(handler, sample)
        return lambda: _invoke(handler)

    async def _in_turn(self, ticket: int | None, call: Callable[[], Awaitable[Any]]) -> Any:
        if ticket is None:
            return await call()
        async with self.turns.turn(ticket):
            return await call()

    async def answer(self, request: InputRequest) -> JSONObject:
        """Run the handler for one input request and return its bare result."""
        value = await self._prepare(request)()
        return bare_response(request.method, value)

    async def answer_all(
        self,
        requests: Mapping[str, InputRequest],
        *,
        round_number: int = 1,
        rejected: Mapping[str, JSONObject] | None = None,
        tickets: Mapping[str, int | None] | None = None,
    ) -> dict[str, JSONObject]:
        """Answer every request of one round concurrently, keyed as the server keyed them.

        Every method and every params object is checked before any handler runs, so a round
        nobody can fully answer prompts nobody. The first failure cancels the other handlers
        and is re-raised as is. ``rejected`` maps the keys the server asked again, unchanged,
        to the answers it did not accept; handlers read it through :func:`current_input_request`.
        Interactive handlers take their turns in the listed order (``tickets`` when the caller
        took them already, as a 2025-era stream does on arrival); every ticket is released here.
        """
        rejected = rejected or {}
        calls = {key: self._prepare(request) for key, request in requests.items()}
        if tickets is None:
            tickets = {key: self.take_turn(request.method) for key, request in requests.items()}
        answers: dict[str, JSONObject] = {}
        failures: list[BaseException] = []

        try:
            async with anyio.create_task_group() as group:

                async def run(key: str, method: str, call: Callable[[], Awaitable[Any]]) -> None:
                    info = InputRequestInfo(key, round_number, rejected.get(key), refusal_reason(requests[key]))
                    _current.set(info)  # this task's copy only
                    try:
                        answers[key] = bare_response(method, await self._in_turn(tickets.get(key), call))
                    except Exception as exc:  # surfaced after the group, unwrapped
                        failures.append(exc)
                        group.cancel_scope.cancel()

                for key, request in requests.items():
                    group.start_soon(run, key, request.method, calls[key])
        finally:
            for ticket in tickets.values():  # also the turns of handlers that never started
                if ticket is not None:
                    self.turns.release(ticket)
        if failures:
            raise failures[0]
        return answers
