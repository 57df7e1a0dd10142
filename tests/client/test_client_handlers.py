"""Handler dispatch: sync/async callables, model or dict answers, bare results, capabilities."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from fastapi_mrtr.client._handlers import InputHandlers
from fastapi_mrtr.wire.errors import McpError
from fastapi_mrtr.wire.mrtr import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequest,
    ListRootsResult,
    Root,
    make_input_request_for_elicitation,
    make_input_request_for_roots,
    make_input_request_for_sampling,
)
from fastapi_mrtr.wire.protocol import TextContent

pytestmark = pytest.mark.anyio

FORM = make_input_request_for_elicitation("Name?", requested_schema={"type": "object", "properties": {}})


class AsyncCallable:
    def __init__(self) -> None:
        self.seen: list[ElicitRequestParams] = []

    async def __call__(self, params: ElicitRequestParams) -> ElicitResult[Any]:
        self.seen.append(params)
        return ElicitResult(action="accept", content={"name": "Ada"})


async def answer_later(prefix: str, params: ElicitRequestParams) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": prefix + params.message}}


async def test_async_callable_object_gets_typed_params() -> None:
    handlers = InputHandlers()
    handler = AsyncCallable()
    handlers.elicitation = handler
    assert await handlers.answer(FORM) == {"action": "accept", "content": {"name": "Ada"}}
    assert isinstance(handler.seen[0], ElicitRequestParams) and handler.seen[0].mode == "form"


async def test_partial_of_a_coroutine_function_is_awaited() -> None:
    handlers = InputHandlers()
    handlers.elicitation = functools.partial(answer_later, ">")
    assert await handlers.answer(FORM) == {"action": "accept", "content": {"name": ">Name?"}}


async def test_model_answers_become_bare_results() -> None:
    handlers = InputHandlers()
    handlers.sampling = lambda params: CreateMessageResult(content=TextContent(text="Paris"), model="m")
    handlers.roots = lambda: ListRootsResult(roots=[Root(uri="file:///a", name="a")])
    question = CreateMessageRequestParams.model_validate(
        {"messages": [{"role": "user", "content": {"type": "text", "text": "Capital?"}}], "maxTokens": 5}
    )
    sampled = await handlers.answer(make_input_request_for_sampling(question))
    assert sampled == {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
    assert await handlers.answer(make_input_request_for_roots()) == {"roots": [{"uri": "file:///a", "name": "a"}]}
    assert await handlers.answer(InputRequest(method="roots/list")) == {"roots": [{"uri": "file:///a", "name": "a"}]}


async def test_url_mode_params_reach_the_handler() -> None:
    handlers = InputHandlers()
    seen: list[ElicitRequestParams] = []
    handlers.elicitation = lambda params: seen.append(params) or ElicitResult(action="accept")
    request = InputRequest(
        method="elicitation/create", params={"mode": "url", "message": "Sign in", "url": "https://x.test"}
    )
    assert await handlers.answer(request) == {"action": "accept"}
    assert seen[0].mode == "url" and seen[0].url == "https://x.test"


async def test_answer_all_keys_answers_like_the_server() -> None:
    handlers = InputHandlers()
    handlers.elicitation = lambda params: {"action": "decline"}
    assert await handlers.answer_all({"k1": FORM, "k2": FORM}) == {
        "k1": {"action": "decline"},
        "k2": {"action": "decline"},
    }
    assert await handlers.answer_all({}) == {}


async def test_no_handler_means_method_not_found() -> None:
    with pytest.raises(McpError) as caught:
        await InputHandlers().answer(FORM)
    assert caught.value.code == -32601


def test_capabilities() -> None:
    handlers = InputHandlers()
    assert handlers.capabilities() == {}
    handlers.roots = lambda: {"roots": []}
    assert handlers.capabilities() == {"roots": {}}
    handlers.elicitation = lambda params: {"action": "cancel"}
    handlers.sampling = lambda params: {"content": {"type": "text", "text": ""}, "model": "m"}
    assert handlers.capabilities() == {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
