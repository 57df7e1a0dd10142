"""js/legacy_server.mjs (node_server.py) behaves as a 2025-era server, checked with raw JSON-RPC.

These pin what the project's client will meet there: a session minted by ``initialize``, a
``server/discover`` probe refused with 400 / -32000, server requests on the call's SSE stream
answered by POSTs, and DELETE ending the session.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.legacy_clients.node_server import node_legacy_server

pytestmark = pytest.mark.slow  # a Node process per test

VERSION = "2025-11-25"
ACCEPT = {"Accept": "application/json, text/event-stream"}
TOOLS = {"echo", "place_order", "ask_model", "list_my_roots", "slow"}


@pytest.fixture
def legacy_url() -> Iterator[str]:
    with node_legacy_server() as url:
        yield url


def sse_messages(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body, one per event (each event's data lines joined)."""
    data: list[str] = []
    for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and data:
            yield json.loads("\n".join(data))
            data = []
    if data:
        yield json.loads("\n".join(data))


def answer(response: httpx.Response) -> dict[str, Any]:
    """The one JSON-RPC message of a POST's answer, whether sent as JSON or as an SSE stream."""
    if response.headers["content-type"].startswith("text/event-stream"):
        messages = list(sse_messages(iter(response.text.splitlines())))
        assert len(messages) == 1, messages
        return messages[0]
    body: dict[str, Any] = response.json()
    return body


class Session:
    """A 2025-11-25 session opened with ``initialize`` by hand."""

    def __init__(self, client: httpx.Client, url: str) -> None:
        self.client, self.url = client, url
        opened = client.post(url, headers=ACCEPT, json=self.request(0, "initialize", self.init_params()))
        assert opened.status_code == 200
        self.id = opened.headers["mcp-session-id"]
        assert self.id
        result = answer(opened)["result"]
        assert result["protocolVersion"] == VERSION
        assert result["serverInfo"]["name"] == "legacy-node-server"
        initialized = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert initialized.status_code == 202

    @staticmethod
    def init_params() -> dict[str, Any]:
        capabilities: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}
        return {"protocolVersion": VERSION, "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "0"}}

    @staticmethod
    def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}

    @property
    def headers(self) -> dict[str, str]:
        return {**ACCEPT, "Mcp-Session-Id": self.id, "MCP-Protocol-Version": VERSION}

    def post(self, message: dict[str, Any]) -> httpx.Response:
        return self.client.post(self.url, headers=self.headers, json=message)

    def call(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self.post(self.request(request_id, method, params))
        assert response.status_code == 200, response.text
        return answer(response)


def test_session_tools_probe_and_delete(legacy_url: str) -> None:
    with httpx.Client(timeout=10) as client:
        # The era probe: a 2026-style request without a session, refused before MCP sees it.
        probe = client.post(legacy_url, headers=ACCEPT, json=Session.request(1, "server/discover"))
        assert probe.status_code == 400
        assert probe.headers["content-type"].startswith("application/json")
        assert probe.json() == {
            "jsonrpc": "2.0",
            "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"},
            "id": None,
        }

        session = Session(client, legacy_url)
        tools = session.call(1, "tools/list")["result"]["tools"]
        assert {tool["name"] for tool in tools} == TOOLS
        echoed = session.call(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert echoed["result"]["content"] == [{"type": "text", "text": "echo: hi"}]
        # Inside a session the 2026 method is simply unknown.
        assert session.call(3, "server/discover")["error"]["code"] == -32601
        hello = session.call(4, "resources/read", {"uri": "res://hello"})["result"]["contents"]
        assert [content["text"] for content in hello] == ["hello"]
        greeting = session.call(5, "prompts/get", {"name": "greet", "arguments": {"name": "Ann"}})["result"]
        assert greeting["messages"][0]["content"]["text"] == "Hello, Ann!"

        assert client.delete(legacy_url, headers=session.headers).status_code == 200
        gone = session.post(Session.request(6, "tools/list"))
        assert gone.status_code == 404
        assert gone.json()["error"]["code"] == -32001


def test_place_order_asks_twice_on_the_call_stream(legacy_url: str) -> None:
    with httpx.Client(timeout=10) as client:
        session = Session(client, legacy_url)
        call = Session.request(7, "tools/call", {"name": "place_order", "arguments": {"item": "book", "quantity": 2}})
        asked: list[dict[str, Any]] = []
        final: dict[str, Any] | None = None
        with client.stream("POST", legacy_url, headers=session.headers, json=call) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            for message in sse_messages(stream.iter_lines()):
                if message.get("method") == "elicitation/create":
                    asked.append(message["params"])
                    content = {"confirmed": True} if len(asked) == 1 else {"speed": "express"}
                    reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept", "content": content}}
                    assert session.post(reply).status_code == 202
                elif message.get("id") == 7:
                    final = message
                    break
        assert [question["message"] for question in asked] == ["Place 2 x book?", "Shipping speed?"]
        assert asked[0]["requestedSchema"]["properties"] == {"confirmed": {"type": "boolean"}}
        assert asked[1]["requestedSchema"]["properties"]["speed"]["enum"] == ["standard", "express"]
        assert final is not None
        result = final["result"]
        assert result["content"] == [{"type": "text", "text": "placed 2 x book, express"}]
        assert result["structuredContent"] == {"status": "placed", "item": "book", "quantity": 2, "speed": "express"}


def test_slow_reports_progress_and_logs(legacy_url: str) -> None:
    with httpx.Client(timeout=10) as client:
        session = Session(client, legacy_url)
        params = {"name": "slow", "arguments": {"steps": 2}, "_meta": {"progressToken": "p1"}}
        response = session.post(Session.request(8, "tools/call", params))
        assert response.status_code == 200
        messages = list(sse_messages(iter(response.text.splitlines())))
        progress = [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"]
        logs = [m["params"]["data"] for m in messages if m.get("method") == "notifications/message"]
        assert progress == [1, 2]
        assert logs == ["step 1", "step 2"]
        assert messages[-1]["result"]["content"] == [{"type": "text", "text": "done"}]


def test_declined_order_is_cancelled(legacy_url: str) -> None:
    with httpx.Client(timeout=10) as client:
        session = Session(client, legacy_url)
        call = Session.request(9, "tools/call", {"name": "place_order", "arguments": {"item": "pen", "quantity": 1}})
        with client.stream("POST", legacy_url, headers=session.headers, json=call) as stream:
            messages = sse_messages(stream.iter_lines())
            question = next(messages)
            assert question["method"] == "elicitation/create"
            reply = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}}
            assert session.post(reply).status_code == 202
            final = next(messages)
        assert final["id"] == 9
        assert final["result"]["content"] == [{"type": "text", "text": "cancelled"}]
        assert final["result"]["structuredContent"]["status"] == "cancelled"


def reply_to_one(session: Session, call: dict[str, Any], method: str, result: dict[str, Any]) -> dict[str, Any]:
    """POST ``call``, answer its one server request (which must be ``method``) with ``result``;
    returns the call's final response."""
    with session.client.stream("POST", session.url, headers=session.headers, json=call) as stream:
        messages = sse_messages(stream.iter_lines())
        question = next(messages)
        assert question["method"] == method
        assert session.post({"jsonrpc": "2.0", "id": question["id"], "result": result}).status_code == 202
        final = next(messages)
    assert final["id"] == call["id"]
    return final


def test_sampling_and_roots_on_the_call_stream(legacy_url: str) -> None:
    with httpx.Client(timeout=10) as client:
        session = Session(client, legacy_url)
        ask = Session.request(10, "tools/call", {"name": "ask_model", "arguments": {"prompt": "hi?"}})
        said = {"role": "assistant", "content": {"type": "text", "text": "hello there"}, "model": "m"}
        sampled = reply_to_one(session, ask, "sampling/createMessage", said)
        assert sampled["result"]["content"] == [{"type": "text", "text": "model said: hello there"}]

        roots = {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}
        listed = reply_to_one(
            session, Session.request(11, "tools/call", {"name": "list_my_roots"}), "roots/list", roots
        )
        assert listed["result"]["content"] == [{"type": "text", "text": "file:///a,file:///b"}]
