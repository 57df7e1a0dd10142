"""A refused answer is visible: a WARNING with the reason, and the reason on the question asked again.

The reason rides in ``params._meta["fastapi-mrtr/refused-answer"]`` of the input request asked
again; the result still parses with the official SDK's 2026-07-28 models, and the reason stays out
of the question digest (the next answer is taken). A malformed answer (no result at all) is
logged at WARNING too, and refused with -32602.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
import mcp_types._v2026_07_28 as wire
import pytest
from fastapi import FastAPI
from pydantic import BaseModel, Field

from fastapi_mrtr import MCP, Context, InputRequiredConfig, ServerOptions
from tests.support import rpc_body, rpc_headers

pytestmark = pytest.mark.anyio
KEY = "refused-answers-key-0123456789abcdef0123"
META_KEY = "fastapi-mrtr/refused-answer"


class Expense(BaseModel):
    amount: int = Field(gt=0)
    reason: str


def app_with_tools() -> FastAPI:
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="t", request_state_key=KEY))

    @mcp.tool()
    @app.post("/claim")
    async def claim(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit("Your expense?", Expense, key="expense")
        assert answer.content is not None
        return {"amount": answer.content.amount}

    @mcp.tool()
    @app.post("/ask_model")
    async def ask_model(ctx: Context) -> str:
        reply = await ctx.sample("Say hi", key="model")
        return str(reply.model)

    app.mount("/mcp", mcp)
    return app


async def call(app: FastAPI, tool: str, params: dict[str, Any], request_id: int) -> tuple[int, dict[str, Any]]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        response = await http.post(
            "/mcp",
            json=rpc_body("tools/call", {"name": tool, **params}, request_id=request_id),
            headers=rpc_headers("tools/call", tool),
        )
    return response.status_code, response.json()


async def test_a_refused_answer_is_a_warning_and_the_question_comes_back_with_the_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = app_with_tools()
    _, body = await call(app, "claim", {}, 1)
    first = body["result"]
    answers = {"expense": {"action": "accept", "content": {"amount": 0, "reason": "taxi"}}}
    with caplog.at_level(logging.WARNING, logger="fastapi_mrtr"):
        _, body = await call(app, "claim", {"requestState": first["requestState"], "inputResponses": answers}, 2)
    again = body["result"]
    wire.InputRequiredResult.model_validate(again)  # the official SDK reads it
    request = again["inputRequests"]["expense"]
    wire.ElicitRequest.model_validate(request)
    reason = "amount: Input should be greater than 0"
    assert request["params"]["_meta"] == {META_KEY: {"reason": reason}}
    assert {k: v for k, v in request["params"].items() if k != "_meta"} == first["inputRequests"]["expense"]["params"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'expense'" in r.getMessage() and reason in r.getMessage() for r in warnings), caplog.text
    # The reason is outside the digest: a good answer to the question asked again is taken.
    answers = {"expense": {"action": "accept", "content": {"amount": 12, "reason": "taxi"}}}
    _, body = await call(app, "claim", {"requestState": again["requestState"], "inputResponses": answers}, 3)
    assert body["result"]["structuredContent"] == {"amount": 12}


async def test_a_refused_model_reply_says_what_was_wrong(caplog: pytest.LogCaptureFixture) -> None:
    app = app_with_tools()
    _, body = await call(app, "ask_model", {}, 1)
    state = body["result"]["requestState"]
    answers = {"model": {"role": "assistant", "content": {"type": "text", "text": "hi"}}}  # no model
    with caplog.at_level(logging.WARNING, logger="fastapi_mrtr"):
        _, body = await call(app, "ask_model", {"requestState": state, "inputResponses": answers}, 2)
    request = body["result"]["inputRequests"]["model"]
    wire.CreateMessageRequest.model_validate(request)
    reason = request["params"]["_meta"][META_KEY]["reason"]
    assert reason == "not a valid sampling/createMessage result: model: Field required"
    assert any(reason in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


async def test_a_malformed_answer_is_a_warning_and_an_error(caplog: pytest.LogCaptureFixture) -> None:
    app = app_with_tools()
    _, body = await call(app, "claim", {}, 1)
    state = body["result"]["requestState"]
    with caplog.at_level(logging.WARNING, logger="fastapi_mrtr"):
        status, body = await call(app, "claim", {"requestState": state, "inputResponses": {"expense": "yes"}}, 2)
    assert status == 400 and body["error"]["code"] == -32602
    assert (
        body["error"]["message"]
        == "Invalid inputResponses['expense']: it is a string, not an object (the result of the request)"
    )
    assert any("'expense'" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


async def test_an_unsolicited_answer_that_is_not_an_object_is_refused_too() -> None:
    """With ``accept_unsolicited_answers`` (the conformance fixture's setting), a first round's answers count:
    one that is no object is no result of any request (the suite sends ``{"user_name": 12345}``)."""
    app = FastAPI()
    mcp = MCP(
        app,
        options=ServerOptions(
            name="t", request_state_key=KEY, input_required_config=InputRequiredConfig(accept_unsolicited_answers=True)
        ),
    )

    @mcp.tool()
    @app.post("/claim")
    async def claim(ctx: Context) -> str:
        answer = await ctx.elicit("Your expense?", Expense, key="expense")
        return answer.action

    app.mount("/mcp", mcp)
    status, body = await call(app, "claim", {"inputResponses": {"expense": 12345}}, 1)
    assert status == 400 and body["error"]["code"] == -32602
    assert body["error"]["data"] == {"reason": "malformed_input_response", "key": "expense"}
    _, body = await call(app, "claim", {"inputResponses": {"expense": {"action": "decline"}}}, 2)
    assert body["result"]["structuredContent"] == {"result": "decline"}
