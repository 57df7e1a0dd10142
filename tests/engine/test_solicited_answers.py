"""Answers count only where the server asked: a first round (no ``requestState``) has no answers.

A handler that reads ``ctx.input_responses`` itself (manual mode) must not find anything there on
a first round, whatever the client sent: the answers it would find were never asked for, so a
confirmation could be skipped by pre-answering it. Every method that runs a handler with ``ctx``
(tools/call, prompts/get, resources/read) and a plain REST call are checked on real uvicorn.
``InputRequiredConfig(accept_unsolicited_answers=True)`` is the documented way to allow them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from fastapi_mrtr import Context, InputRequiredConfig, ToolContext
from fastapi_mrtr.wire import make_input_request_for_elicitation
from tests.mcp_helpers import JSON, McpClient, make_meta, make_server
from tests.support import running_server

pytestmark = pytest.mark.anyio

FORM = make_meta({"elicitation": {}})
CONFIRMED = {"confirm": {"action": "accept", "content": {"ok": True}}}
SCHEMA: JSON = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def confirmed(ctx: ToolContext) -> bool:
    """What a manual-mode handler checks: did the user confirm?"""
    answer = ctx.input_responses.get("confirm")
    return isinstance(answer, dict) and answer.get("action") == "accept"


def ask_to_confirm(ctx: ToolContext) -> Any:
    return ctx.input_required({"confirm": make_input_request_for_elicitation("Go ahead?", requested_schema=SCHEMA)})


def build(**options: Any) -> tuple[FastAPI, list[str]]:
    """A tool, a REST-only route, a prompt and a resource that act only once the user confirmed."""
    app, mcp = make_server(**options)
    done: list[str] = []

    @mcp.tool()
    @app.post("/launch")
    async def launch(ctx: Context) -> Any:
        if confirmed(ctx):
            done.append("launch")
            return {"launched": True}
        return ask_to_confirm(ctx)

    @app.post("/rest-launch")
    async def rest_launch(ctx: Context) -> Any:
        if confirmed(ctx):
            done.append("rest-launch")
            return {"launched": True}
        return ask_to_confirm(ctx)

    @mcp.prompt()
    async def secret_prompt(ctx: ToolContext) -> str:
        if confirmed(ctx):
            done.append("prompt")
            return "the secret"
        ask_to_confirm(ctx)
        return "unreachable"

    @mcp.resource("vault://secret")
    async def secret_resource(ctx: ToolContext) -> str:
        if confirmed(ctx):
            done.append("resource")
            return "the secret"
        ask_to_confirm(ctx)
        return "unreachable"

    return app, done


@pytest.fixture
def served() -> Iterator[tuple[str, list[str]]]:
    app, done = build()
    with running_server(app) as base:
        yield base, done


@pytest.fixture
async def client(served: tuple[str, list[str]]) -> AsyncIterator[McpClient]:
    async with httpx.AsyncClient(base_url=served[0]) as http:
        yield McpClient(http)


FIRST_ROUNDS: list[tuple[str, JSON]] = [
    ("tools/call", {"name": "launch", "arguments": {}}),
    ("prompts/get", {"name": "secret_prompt"}),
    ("resources/read", {"uri": "vault://secret"}),
]


@pytest.mark.parametrize(("method", "params"), FIRST_ROUNDS, ids=[m for m, _ in FIRST_ROUNDS])
async def test_a_first_round_pre_answer_is_not_an_answer(
    client: McpClient, served: tuple[str, list[str]], method: str, params: JSON
) -> None:
    result = await client.result(method, {**params, "inputResponses": CONFIRMED}, meta=FORM)
    assert result["resultType"] == "input_required", result
    assert list(result["inputRequests"]) == ["confirm"]  # the confirmation is shown
    assert served[1] == []


@pytest.mark.parametrize(("method", "params"), FIRST_ROUNDS, ids=[m for m, _ in FIRST_ROUNDS])
async def test_the_answer_to_the_question_asked_counts(
    client: McpClient, served: tuple[str, list[str]], method: str, params: JSON
) -> None:
    first = await client.result(method, params, meta=FORM)
    retry = {**params, "inputResponses": CONFIRMED, "requestState": first["requestState"]}
    result = await client.result(method, retry, meta=FORM)
    assert result.get("resultType", "complete") == "complete", result
    assert len(served[1]) == 1


@pytest.mark.parametrize("path", ["/launch", "/rest-launch"])
async def test_a_rest_pre_answer_without_state_is_not_an_answer(served: tuple[str, list[str]], path: str) -> None:
    base, done = served
    async with httpx.AsyncClient(base_url=base) as http:
        pre_answered = await http.post(path, headers={"MRTR-Input-Responses": json.dumps(CONFIRMED)})
        assert pre_answered.status_code == 428, pre_answered.text
        assert list(pre_answered.json()["inputRequests"]) == ["confirm"]
        assert done == []
        state = pre_answered.json()["requestState"]
        answered = await http.post(
            path, headers={"MRTR-Request-State": state, "MRTR-Input-Responses": json.dumps(CONFIRMED)}
        )
    assert answered.status_code == 200, answered.text
    assert answered.json() == {"launched": True}
    assert len(done) == 1


async def test_unsolicited_answers_reach_input_responses_only_when_allowed() -> None:
    app, done = build(input_required_config=InputRequiredConfig(accept_unsolicited_answers=True))
    with running_server(app) as base:
        async with httpx.AsyncClient(base_url=base) as http:
            client = McpClient(http)
            result = await client.result(
                "tools/call", {"name": "launch", "arguments": {}, "inputResponses": CONFIRMED}, meta=FORM
            )
            rest = await http.post("/rest-launch", headers={"MRTR-Input-Responses": json.dumps(CONFIRMED)})
    assert result["structuredContent"] == {"launched": True}
    assert rest.status_code == 200 and rest.json() == {"launched": True}
    assert done == ["launch", "rest-launch"]
