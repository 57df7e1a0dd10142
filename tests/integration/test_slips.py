"""Common slips get errors that say what to do (issue 28 item 4).

An endpoint never mounted (a bare 404) is a WARNING on the app's first request; ``ctx.elicit``
not awaited says to ``await`` it; workers without a shared key say so and name ``MRTR_STATE_KEY``;
a short key names ``MRTR_STATE_KEY``; Host and Origin refusals name the value and the option.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from fastapi_mrtr import MCP, Context, ServerOptions
from fastapi_mrtr.engine.call import CallRecord
from fastapi_mrtr.engine.context import ToolContext
from fastapi_mrtr.engine.ledger import ReplayLedger
from tests.support import rpc_body, rpc_headers

KEY = "slips-tests-key-0123456789abcdef0123456"


def _app(key: str | None = KEY, *, mount: bool = True, **options: Any) -> tuple[FastAPI, MCP]:
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="slips", request_state_key=key, **options))

    @mcp.tool()
    @app.post("/confirm")
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Go?", bool, key="go")
        return "yes" if answer.content else "no"

    if mount:
        app.mount("/mcp", mcp)
    return app, mcp


async def _post(app: FastAPI, body: Any, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        return await http.post("/mcp", json=body, headers={**rpc_headers("tools/call", "confirm"), **headers})


@pytest.mark.anyio
async def test_an_endpoint_never_mounted_is_a_warning_on_the_first_request(caplog: pytest.LogCaptureFixture) -> None:
    app, _ = _app(mount=False)
    with caplog.at_level(logging.WARNING, logger="fastapi_mrtr"):
        response = await _post(app, rpc_body("tools/call", {"name": "confirm"}))
        await _post(app, rpc_body("tools/call", {"name": "confirm"}))
    assert response.status_code == 404
    said = [r.getMessage() for r in caplog.records if "mounted nowhere" in r.getMessage()]
    assert len(said) == 1 and 'app.mount("/mcp", mcp)' in said[0]
    assert all(r.levelno == logging.WARNING for r in caplog.records if "mounted nowhere" in r.getMessage())


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["app", "sub-application"])
async def test_a_mounted_endpoint_is_no_warning(caplog: pytest.LogCaptureFixture, where: str) -> None:
    if where == "app":
        app, _ = _app()
        path = "/mcp"
    else:
        app, mcp = _app(mount=False)
        api = FastAPI()
        api.mount("/mcp", mcp)
        app.mount("/api", api)
        path = "/api/mcp"
    with caplog.at_level(logging.WARNING, logger="fastapi_mrtr"):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            await http.post(
                path, json=rpc_body("tools/call", {"name": "confirm"}), headers=rpc_headers("tools/call", "confirm")
            )
    assert "mounted nowhere" not in caplog.text


def test_an_ask_not_awaited_says_to_await_it() -> None:
    record = CallRecord(method="tools/call", target="t", arguments={}, client_capabilities={}, ledger=ReplayLedger())
    ctx = ToolContext(record, lambda: None)  # type: ignore[arg-type,return-value]
    answer = ctx.elicit("Go?", bool)
    with pytest.raises(AttributeError) as raised:
        answer.content  # noqa: B018 (the slip under test)
    message = str(raised.value)
    assert "ctx.elicit(...) was not awaited" in message and "await ctx.elicit(...)" in message
    with pytest.raises(AttributeError, match=r"ctx\.sample\(\.\.\.\) was not awaited"):
        ctx.sample("hi").model  # type: ignore[attr-defined] # noqa: B018


@pytest.mark.anyio
async def test_workers_without_a_shared_key_are_told_to_set_one(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes each with an ephemeral key: a state sealed by one is refused by the other, saying why."""
    monkeypatch.delenv("MRTR_STATE_KEY", raising=False)
    first, _ = _app(key=None)
    second, _ = _app(key=None)
    body = (await _post(first, rpc_body("tools/call", {"name": "confirm"}))).json()
    state = body["result"]["requestState"]
    answers = {"go": {"action": "accept", "content": {"value": True}}}
    with caplog.at_level(logging.WARNING, logger="fastapi_mrtr"):
        response = await _post(
            second, rpc_body("tools/call", {"name": "confirm", "requestState": state, "inputResponses": answers})
        )
    error = response.json()["error"]
    assert response.status_code == 400 and error["code"] == -32602
    assert error["data"] == {"reason": "invalid_request_state"}
    assert error["message"].startswith("Invalid or expired requestState: ")
    for text in (error["message"], caplog.text):
        assert "each worker or replica" in text and "MRTR_STATE_KEY" in text
        assert "ServerOptions(request_state_key=...)" in text


@pytest.mark.anyio
async def test_with_a_configured_key_a_foreign_state_stays_the_frozen_error() -> None:
    first, _ = _app(key=None)
    second, _ = _app()
    state = (await _post(first, rpc_body("tools/call", {"name": "confirm"}))).json()["result"]["requestState"]
    response = await _post(second, rpc_body("tools/call", {"name": "confirm", "requestState": state}))
    assert response.json()["error"]["message"] == "Invalid or expired requestState"


def test_a_short_key_names_mrtr_state_key() -> None:
    with pytest.raises(ValueError) as raised:
        _app(key="too-short")
    message = str(raised.value)
    assert "at least 32 bytes, got 9" in message and "MRTR_STATE_KEY" in message
    assert "ServerOptions(request_state_key=...)" in message


@pytest.mark.anyio
async def test_an_origin_refused_names_it_and_allowed_origins() -> None:
    app, _ = _app()
    response = await _post(app, rpc_body("tools/call", {"name": "confirm"}), origin="http://devbox:8000")
    assert response.status_code == 403
    message = response.json()["error"]["message"]
    assert "'http://devbox:8000'" in message and "ServerOptions(allowed_origins=[...])" in message
    app, _ = _app(allowed_origins=("http://devbox:8000",))
    assert (
        await _post(app, rpc_body("tools/call", {"name": "confirm"}), origin="http://devbox:8000")
    ).status_code == 200


@pytest.mark.anyio
async def test_a_host_refused_names_it_and_allowed_hosts() -> None:
    app, _ = _app()
    response = await _post(app, rpc_body("tools/call", {"name": "confirm"}), host="devbox:8000")
    assert response.status_code == 421
    message = response.json()["error"]["message"]
    assert "'devbox:8000'" in message and "ServerOptions(allowed_hosts=[...])" in message
