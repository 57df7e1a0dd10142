"""What a 2025-era client is told about its answers and its capabilities, on real uvicorn.

A refused answer's question comes back carrying the reason in ``_meta`` (and still parses with
the official SDK's 2025-11-25 models); an answer that is no elicitation result at all ends the
call with a -32602 error naming the key (before, the same question came back until
``max_rounds``); a missing capability names the request that needs it (before: "This tool needs
it", also on ``prompts/get``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import mcp_types._v2025_11_25 as legacy_wire
import pytest

from fastapi_mrtr import Context, InputRequiredConfig
from tests.legacy.conftest import App, build
from tests.legacy.peer import LegacyPeer, messages
from tests.support import running_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(scope="module")
def asking() -> Iterator[App]:
    mcp = build(input_required_config=InputRequiredConfig(round_timeout=60))  # an answer is never timed out here

    @mcp.prompt()
    async def greeting(ctx: Context) -> str:
        name = await ctx.elicit("Whom to greet?", str, key="who")
        return f"Hello {name.content}"

    with running_server(mcp.app) as base:
        yield App(mcp, f"{base}/mcp")


@pytest.fixture
async def peer(asking: App) -> AsyncIterator[LegacyPeer]:
    async with httpx.AsyncClient(timeout=10) as http:
        yield LegacyPeer(http, asking.url)


async def _next(stream: Any) -> Any:
    return await asyncio.wait_for(stream.__anext__(), 5)


async def test_a_refused_answer_comes_back_with_the_reason_in_meta(peer: LegacyPeer) -> None:
    await peer.initialize()
    async with peer.call("confirm") as (_, stream):
        found = messages(stream)
        ask = await _next(found)
        assert "_meta" not in ask["params"]
        await peer.answer(ask["id"], {"action": "accept", "content": {"value": "not a bool"}})
        again = await _next(found)
        legacy_wire.ElicitRequest.model_validate(again)  # the official SDK still reads the request
        assert again["params"]["_meta"] == {
            "fastapi-mrtr/refused-answer": {"reason": "Input should be a valid boolean"}
        }
        assert {k: v for k, v in again["params"].items() if k != "_meta"} == ask["params"]
        await peer.answer(again["id"], {"action": "accept", "content": {"value": True}})
        final = await _next(found)
    assert final["result"]["structuredContent"] == {"result": "confirmed"}


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        pytest.param({"content": {"value": True}}, "it has no action", id="no-action"),
        pytest.param({"action": "yes"}, "its action 'yes' is not accept", id="unknown-action"),
    ],
)
async def test_a_malformed_answer_ends_the_call_with_an_error_naming_the_key(
    peer: LegacyPeer, answer: dict[str, Any], why: str
) -> None:
    await peer.initialize()
    async with peer.call("confirm") as (_, stream):
        found = messages(stream)
        ask = await _next(found)
        assert (await peer.answer(ask["id"], answer)).status_code == 202
        final = await _next(found)  # at once: not the same question again, not a hang
    assert "method" not in final, final
    assert final["error"]["code"] == -32602
    assert "inputResponses['go']" in final["error"]["message"] and why in final["error"]["message"]


async def test_a_missing_capability_names_the_request_that_needs_it(peer: LegacyPeer) -> None:
    await peer.initialize(capabilities={})
    async with peer.call("confirm") as (_, stream):
        final = await _next(messages(stream))
    message = final["error"]["message"]
    assert "tools/call of tool 'confirm' needs it" in message and "This tool" not in message
    response = await peer.request("prompts/get", {"name": "greeting"})
    error = response.json()["error"]
    assert error["code"] == -32602
    assert "elicitation" in error["message"] and "prompts/get of prompt 'greeting' needs it" in error["message"]
    assert "This tool" not in error["message"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"result": 5}, id="result-not-an-object"),
        pytest.param({"result": None}, id="result-null"),
        pytest.param({}, id="neither-result-nor-error"),
    ],
)
async def test_a_response_that_is_no_result_ends_the_call_at_once(peer: LegacyPeer, body: dict[str, Any]) -> None:
    """Before, the POST was refused and the call then waited for round_timeout for an answer."""
    await peer.initialize()
    async with peer.call("confirm") as (_, stream):
        found = messages(stream)
        ask = await _next(found)
        response = await peer.post({"jsonrpc": "2.0", "id": ask["id"], **body})
        assert response.status_code == 400
        assert "the call waiting for it was ended" in response.json()["error"]["message"]
        final = await _next(found)  # well before the round_timeout of this app (60 s)
    assert final["result"]["isError"] is True
    assert "elicitation/create" in _tool_text(final) and "malformed response" in _tool_text(final)


def _tool_text(message: dict[str, Any]) -> str:
    return " ".join(block["text"] for block in message["result"]["content"])
