"""FastAPI's ``TestClient`` reaches the MCP endpoint as it is: users test their apps with it.

``TestClient`` sends ``Host: testserver``, which the DNS-rebinding guard refuses (421) for any
request that came over a network. These tests check that the in-process client passes without
configuration, through a complete two-round call, and that the same Host from a socket, or from
a TestClient posing as another peer, is still refused.
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context, ServerOptions
from tests.mcp_helpers import make_headers, make_meta
from tests.support import running_server

ELICITATION = {"elicitation": {"form": {}}}


class Note(BaseModel):
    text: str


def notes_app() -> FastAPI:
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="notes", request_state_key="test-client-tests-key-0123456789"))

    @mcp.tool()
    @app.post("/notes")
    async def add_note(title: str, ctx: Context) -> Note:
        body = await ctx.elicit(f"Text of {title!r}?", str, key="text")
        return Note(text=f"{title}: {body.content}")

    app.mount("/mcp", mcp)
    return app


def call(client: TestClient | httpx.Client, request_id: int, params: dict[str, Any]) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {**params, "_meta": make_meta(ELICITATION)},
    }
    return client.post("/mcp", json=body, headers=make_headers("tools/call", params["name"], accept="application/json"))


def test_the_test_client_lists_and_completes_a_two_round_call() -> None:
    with TestClient(notes_app()) as client:
        listed = client.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": make_meta()}},
            headers=make_headers("tools/list", accept="application/json"),
        )
        assert listed.status_code == 200, listed.text
        assert [tool["name"] for tool in listed.json()["result"]["tools"]] == ["add_note"]

        first = call(client, 2, {"name": "add_note", "arguments": {"title": "groceries"}})
        assert first.status_code == 200, first.text
        asked = first.json()["result"]
        assert asked["resultType"] == "input_required"
        assert set(asked["inputRequests"]) == {"text"}

        answer = {"text": {"action": "accept", "content": {"value": "milk"}}}
        retry = {"name": "add_note", "arguments": {"title": "groceries"}, "inputResponses": answer}
        second = call(client, 3, {**retry, "requestState": asked["requestState"]})
    assert second.status_code == 200, second.text
    assert second.json()["result"]["structuredContent"] == {"text": "groceries: milk"}


def test_host_testserver_from_a_socket_is_still_refused() -> None:
    with running_server(notes_app()) as base, httpx.Client(base_url=base, headers={"host": "testserver"}) as client:
        response = call(client, 4, {"name": "add_note", "arguments": {"title": "x"}})
    assert response.status_code == 421
    assert response.json()["error"]["code"] == -32600


def test_a_test_client_posing_as_another_peer_is_refused() -> None:
    with TestClient(notes_app(), client=("203.0.113.7", 50000)) as client:
        response = call(client, 5, {"name": "add_note", "arguments": {"title": "x"}})
    assert response.status_code == 421


def test_other_in_process_host_names_need_allowed_hosts() -> None:
    """The documented one line for other base URLs (httpx's ASGITransport, a custom base_url)."""
    app = notes_app()
    with TestClient(app, base_url="http://shop.test") as client:
        refused = call(client, 6, {"name": "add_note", "arguments": {"title": "x"}})
    assert refused.status_code == 421
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="notes", allowed_hosts=("shop.test",)))

    @mcp.tool()
    @app.get("/ping")
    async def ping() -> Note:
        return Note(text="pong")

    app.mount("/mcp", mcp)
    with TestClient(app, base_url="http://shop.test") as client:
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "ping", "_meta": make_meta()}}
        allowed = client.post("/mcp", json=body, headers=make_headers("tools/call", "ping", accept="application/json"))
    assert allowed.status_code == 200, allowed.text
