"""What an answer must be to count, and what of it is kept: strict JSON validation, unknown keys
dropped before sealing, oversized answers refused as the client's error, form-mode capability."""

from __future__ import annotations

import datetime
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel

from fastapi_mrtr import Context
from fastapi_mrtr.wire.errors import MISSING_REQUIRED_CLIENT_CAPABILITY as MISSING_CAPABILITY
from tests.mcp_helpers import JSON, McpClient, connect, make_meta, make_server, rpc_error

pytestmark = pytest.mark.anyio

FORM = make_meta({"elicitation": {}, "sampling": {}})
BIG = 20_000  # beside the 16 KiB default limit of a sealed state


class Person(BaseModel):
    name: str
    born: datetime.date


class Note(BaseModel):
    text: str


class Price(BaseModel):
    amount: float


def build() -> tuple[FastAPI, list[str]]:
    """A shop whose tools ask twice, so that the first answer is sealed into the next state."""
    app, mcp = make_server()
    effects: list[str] = []

    @mcp.tool()
    @app.delete("/books/{book_id}")
    async def delete_book(book_id: int, ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit("Really delete it?", bool, key="delete")
        if answer.content is not True:
            return {"deleted": None}
        effects.append(f"deleted {book_id}")
        return {"deleted": book_id}

    @mcp.tool()
    @app.post("/register")
    async def register(ctx: Context) -> dict[str, Any]:
        person = await ctx.elicit("Who are you?", Person, key="who")
        price = await ctx.elicit("Price?", Price, key="price")
        assert person.content is not None and price.content is not None
        return {"name": person.content.name, "born": person.content.born.isoformat(), "price": price.content.amount}

    @mcp.tool()
    @app.post("/annotate")
    async def annotate(ctx: Context) -> dict[str, Any]:
        note = await ctx.elicit("Note?", Note, key="note")
        ok = await ctx.elicit("Save it?", bool, key="ok")
        return {"note": note.content.text if note.content else None, "ok": ok.content}

    @mcp.tool()
    @app.post("/hoard")
    async def hoard(ctx: Context) -> dict[str, Any]:
        await ctx.once("load", lambda: "x" * BIG)  # the server's own bloat
        ok = await ctx.elicit("Go on?", bool, key="ok")
        return {"ok": ok.content}

    @mcp.tool()
    @app.post("/ask-model")
    async def ask_model(ctx: Context) -> dict[str, Any]:
        reply = await ctx.sample("Capital of France?", key="reply")
        ok = await ctx.elicit("Use it?", bool, key="ok")
        return {"model": reply.model, "extra": reply.model_extra, "ok": ok.content}

    @mcp.tool()
    @app.post("/modes")
    async def modes(ctx: Context) -> dict[str, bool]:
        return {
            "elicitation": ctx.supports("elicitation"),
            "form": ctx.supports("elicitation.form"),
            "url": ctx.supports("elicitation.url"),
        }

    return app, effects


@pytest.fixture
async def shop() -> AsyncIterator[tuple[McpClient, list[str]]]:
    app, effects = build()
    async with connect(app) as client:
        yield client, effects


async def first_state(client: McpClient, tool: str, arguments: JSON | None = None, meta: JSON = FORM) -> str:
    result = await client.call(tool, arguments or {}, meta=meta)
    assert result["resultType"] == "input_required", result
    state: str = result["requestState"]
    return state


async def retry(
    client: McpClient, tool: str, state: str, answers: JSON, arguments: JSON | None = None, request_id: int = 0
) -> httpx.Response:
    params = {"name": tool, "arguments": arguments or {}, "requestState": state, "inputResponses": answers}
    return await client.post("tools/call", params, meta=FORM, request_id=request_id or None)


def accept(content: Any) -> JSON:
    return {"action": "accept", "content": content}


# --- 1. strict answers ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["yes", "1", 1, "true", 0, None, [True]])
async def test_only_a_json_boolean_answers_a_boolean_question(shop: Any, value: Any) -> None:
    client, effects = shop
    state = await first_state(client, "delete_book", {"book_id": 2})
    response = await retry(client, "delete_book", state, {"delete": accept({"value": value})}, {"book_id": 2})
    again = response.json()["result"]
    assert again["resultType"] == "input_required" and list(again["inputRequests"]) == ["delete"]
    assert effects == []
    # The question is still open: a real boolean answers it.
    response = await retry(
        client, "delete_book", again["requestState"], {"delete": accept({"value": True})}, {"book_id": 2}
    )
    assert response.json()["result"]["structuredContent"] == {"deleted": 2}
    assert effects == ["deleted 2"]


@pytest.mark.parametrize(
    ("content", "asked_again"),
    [
        pytest.param({"name": "Ada", "born": "1815-12-10"}, False, id="iso-date-string"),
        pytest.param({"name": 5, "born": "1815-12-10"}, True, id="number-for-string"),
        pytest.param({"name": "Ada", "born": "tomorrow"}, True, id="not-a-date"),
    ],
)
async def test_model_answers_are_read_with_json_semantics(shop: Any, content: JSON, asked_again: bool) -> None:
    client, _ = shop
    state = await first_state(client, "register")
    result = (await retry(client, "register", state, {"who": accept(content)})).json()["result"]
    assert list(result["inputRequests"]) == (["who"] if asked_again else ["price"])


@pytest.mark.parametrize(("amount", "taken"), [(3, 3.0), (2.5, 2.5), ("3", None), (True, None)])
async def test_a_number_field_takes_json_numbers_only(shop: Any, amount: Any, taken: float | None) -> None:
    client, _ = shop
    state = await first_state(client, "register")
    result = (await retry(client, "register", state, {"who": accept({"name": "Ada", "born": "1815-12-10"})})).json()
    response = await retry(client, "register", result["result"]["requestState"], {"price": accept({"amount": amount})})
    result = response.json()["result"]
    if taken is None:
        assert list(result["inputRequests"]) == ["price"]
    else:
        assert result["structuredContent"] == {"name": "Ada", "born": "1815-12-10", "price": taken}


# --- 2. what is recorded, and oversized answers -------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(accept({"text": "hi", "z": "A" * BIG}), id="unknown-content-key"),
        pytest.param({**accept({"text": "hi"}), "junk": "B" * BIG}, id="unknown-answer-key"),
    ],
)
async def test_unknown_keys_are_not_sealed(shop: Any, answer: JSON) -> None:
    client, _ = shop
    state = await first_state(client, "annotate")
    response = await retry(client, "annotate", state, {"note": answer})
    assert response.status_code == 200, response.text
    second = response.json()["result"]
    assert list(second["inputRequests"]) == ["ok"]
    assert len(second["requestState"]) < 2000  # only what the answer means travels on
    response = await retry(client, "annotate", second["requestState"], {"ok": accept({"value": True})})
    assert response.json()["result"]["structuredContent"] == {"note": "hi", "ok": True}


async def test_unknown_keys_of_a_sampling_answer_are_not_sealed(shop: Any) -> None:
    client, _ = shop
    state = await first_state(client, "ask_model")
    reply = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "junk": "C" * BIG}
    response = await retry(client, "ask_model", state, {"reply": reply})
    assert response.status_code == 200, response.text
    second = response.json()["result"]
    assert len(second["requestState"]) < 2000
    response = await retry(client, "ask_model", second["requestState"], {"ok": accept({"value": False})})
    # The replayed answer is what was recorded: the unknown key is gone on every round alike.
    assert response.json()["result"]["structuredContent"] == {"model": "m", "extra": {}, "ok": False}


async def test_a_sampling_answer_is_strict_json(shop: Any) -> None:
    client, _ = shop
    state = await first_state(client, "ask_model")
    reply = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": 5}
    result = (await retry(client, "ask_model", state, {"reply": reply})).json()["result"]
    assert list(result["inputRequests"]) == ["reply"]


async def test_an_answer_too_large_to_seal_is_the_clients_error_and_the_flow_survives(shop: Any) -> None:
    client, _ = shop
    state = await first_state(client, "annotate")
    response = await retry(client, "annotate", state, {"note": accept({"text": "D" * BIG})}, request_id=9)
    error = rpc_error(response, 400, -32602, 9)
    assert error["data"] == {"reason": "input_responses_too_large"}
    assert "too large" in error["message"]
    # The state the client still holds is good: a shorter answer carries the flow on.
    response = await retry(client, "annotate", state, {"note": accept({"text": "short"})})
    assert list(response.json()["result"]["inputRequests"]) == ["ok"]


async def test_a_state_grown_by_the_servers_own_results_stays_a_server_error(shop: Any) -> None:
    client, _ = shop
    response = await client.post("tools/call", {"name": "hoard", "arguments": {}}, meta=FORM, request_id=7)
    error = rpc_error(response, 500, -32603, 7)
    assert error["data"] == {"reason": "request_state_too_large"}


def rest_answer(state: str, responses: JSON) -> dict[str, str]:
    return {"MRTR-Request-State": state, "MRTR-Input-Responses": json.dumps(responses)}


async def test_rest_answers_drop_unknown_keys_and_oversized_ones_are_400() -> None:
    app, _ = build()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        first = await http.post("/annotate")
        assert first.status_code == 428
        state = first.json()["requestState"]
        junk = await http.post(
            "/annotate", headers=rest_answer(state, {"note": accept({"text": "hi", "z": "A" * BIG})})
        )
        assert junk.status_code == 428, junk.text
        big = await http.post("/annotate", headers=rest_answer(state, {"note": accept({"text": "D" * BIG})}))
        assert big.status_code == 400, big.text
        assert big.json()["detail"]["code"] == -32602
        assert big.json()["detail"]["data"] == {"reason": "input_responses_too_large"}
        bool_as_text = await http.delete("/books/3", headers={})
        state = bool_as_text.json()["requestState"]
        again = await http.delete("/books/3", headers=rest_answer(state, {"delete": accept({"value": "yes"})}))
        assert again.status_code == 428


# --- 3. form mode needs the form capability ------------------------------------------------------


@pytest.mark.parametrize("elicitation", [{}, {"form": {}}, {"form": {}, "url": {}}])
async def test_form_asks_go_to_clients_that_declared_form(shop: Any, elicitation: JSON) -> None:
    client, _ = shop
    result = await client.call("annotate", {}, meta=make_meta({"elicitation": elicitation}))
    assert result["inputRequests"]["note"]["params"]["mode"] == "form"


async def test_a_url_only_client_is_not_sent_a_form(shop: Any) -> None:
    client, _ = shop
    response = await client.post(
        "tools/call", {"name": "annotate", "arguments": {}}, meta=make_meta({"elicitation": {"url": {}}}), request_id=3
    )
    error = rpc_error(response, 400, MISSING_CAPABILITY, 3)
    assert error["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}


@pytest.mark.parametrize(
    ("caps", "form", "url"),
    [
        pytest.param({}, False, False, id="none"),
        pytest.param({"elicitation": {}}, True, False, id="bare-means-form"),
        pytest.param({"elicitation": {"form": {}}}, True, False, id="form"),
        pytest.param({"elicitation": {"url": {}}}, False, True, id="url-only"),
        pytest.param({"elicitation": {"form": {}, "url": {}}}, True, True, id="both"),
    ],
)
async def test_supports_tells_the_elicitation_modes_apart(shop: Any, caps: JSON, form: bool, url: bool) -> None:
    client, _ = shop
    result = await client.call("modes", {}, meta=make_meta(caps))
    assert result["structuredContent"] == {"elicitation": form, "form": form, "url": url}
