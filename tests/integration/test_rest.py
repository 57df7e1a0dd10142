"""Plain REST calls of an eliciting endpoint: 428 with the input_required body, retried with headers."""

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context, ServerOptions
from fastapi_mrtr.wire import make_input_request_for_elicitation

pytestmark = pytest.mark.anyio


class Confirm(BaseModel):
    ok: bool


def build() -> tuple[FastAPI, list[str]]:
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(request_state_key="rest-tests-key-0123456789abcdef0123"))
    effects: list[str] = []

    @mcp.tool()
    @app.post("/items/{item}/delete")
    async def delete_item(item: str, ctx: Context) -> dict[str, str]:
        answer = await ctx.elicit(f"Delete {item}?", Confirm, key="confirm")
        if answer.content is None or not answer.content.ok:
            return {"status": "kept"}
        effects.append(item)
        return {"status": "deleted"}

    @app.post("/manual")
    async def manual(ctx: Context) -> Any:
        if ctx.request_state == "asked":
            return {"answer": ctx.input_responses["who"]["content"]["name"]}
        request = make_input_request_for_elicitation(
            "Who?", requested_schema={"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return ctx.input_required({"who": request}, request_state="asked")

    app.mount("/mcp", mcp)
    return app, effects


async def post(app: FastAPI, path: str, headers: dict[str, str] | None = None) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        return await http.post(path, headers=headers or {})


def answer_headers(state: str, responses: dict[str, Any]) -> dict[str, str]:
    return {"MRTR-Request-State": state, "MRTR-Input-Responses": json.dumps(responses)}


async def test_rest_call_gets_428_then_completes_with_headers() -> None:
    app, effects = build()
    first = await post(app, "/items/report/delete")
    assert first.status_code == 428
    body = first.json()
    assert body["resultType"] == "input_required"
    assert body["inputRequests"]["confirm"]["params"]["message"] == "Delete report?"
    done = await post(
        app,
        "/items/report/delete",
        answer_headers(body["requestState"], {"confirm": {"action": "accept", "content": {"ok": True}}}),
    )
    assert done.status_code == 200 and done.json() == {"status": "deleted"}
    assert effects == ["report"]


async def test_rest_state_is_bound_to_the_path() -> None:
    app, effects = build()
    body = (await post(app, "/items/a/delete")).json()
    answers = {"confirm": {"action": "accept", "content": {"ok": True}}}
    other = await post(app, "/items/b/delete", answer_headers(body["requestState"], answers))
    assert other.status_code == 400
    assert other.json()["detail"]["data"] == {"reason": "invalid_request_state"}
    assert effects == []


async def test_rest_bad_headers_are_400() -> None:
    app, effects = build()
    tampered = await post(app, "/items/a/delete", answer_headers("v1.garbage", {}))
    assert tampered.status_code == 400
    bad_json = await post(app, "/items/a/delete", {"MRTR-Input-Responses": "[1, 2"})
    assert bad_json.status_code == 400
    # Nesting that would exhaust the stack, and a lone surrogate no reply could quote, are bad
    # JSON too (they were a 500).
    deep = await post(app, "/items/a/delete", {"MRTR-Input-Responses": "[" * 995 + "]" * 995})
    assert deep.status_code == 400
    lone = await post(app, "/items/a/delete", {"MRTR-Input-Responses": '{"k": "\\ud800"}'})
    assert lone.status_code == 400
    assert effects == []


async def test_rest_manual_mode_carries_a_sealed_state() -> None:
    app, _ = build()
    first = await post(app, "/manual")
    assert first.status_code == 428
    body = first.json()
    assert "asked" not in body["requestState"]
    done = await post(
        app, "/manual", answer_headers(body["requestState"], {"who": {"action": "accept", "content": {"name": "Jo"}}})
    )
    assert done.status_code == 200 and done.json() == {"answer": "Jo"}
