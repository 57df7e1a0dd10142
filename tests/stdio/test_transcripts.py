"""The example bookshop over stdio, driven by scripted transcripts of the three ways clients open.

- probe only: ``server/discover``, then modern requests (MRTR: ``input_required``, retried with
  the answers and the sealed ``requestState``);
- ``initialize`` only: a 2025-era session, the questions come as ``elicitation/create`` requests
  on the pipe and are answered there;
- probe, then ``initialize`` (what Claude Code 2.1.280 and Copilot CLI send): the probe is
  answered, and the session is still the 2025 era.

Each places one order through both questions, and exactly one order is in the database; every
line the server wrote is JSON-RPC that the official SDK's models accept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.stdio.pipe_client import INITIALIZE, StdioServer, modern
from tests.stdio.wire_check import stream_issues
from tests.support import db_rows

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a Python process per test

ORDER = {"book_id": 2, "quantity": 3}
ANSWERS = {
    "Place this order for 3 x 'The Left Hand of Darkness', 33.00 EUR?": {"confirmed": True},
    "Shipping speed?": {"speed": "express", "gift_note": "Over stdio"},
}
PLACED = {"status": "placed", "order_id": 1, "total_cents": 3300, "shipping": "express"}


class Transcript:
    """A server and the requests sent to it, by id (to check each answer against its request)."""

    def __init__(self, server: StdioServer) -> None:
        self.server = server
        self.sent: dict[Any, dict[str, Any]] = {}
        self.asked: list[str] = []
        self._next = 0

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        message = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        self.sent[self._next] = message
        await self.server.send(message)
        return await self.server.response_to(self._next, self._answer)

    async def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        assert request["method"] == "elicitation/create", request
        self.asked.append(request["params"]["message"])
        return {"action": "accept", "content": ANSWERS[request["params"]["message"]]}

    async def discover(self) -> dict[str, Any]:
        answer = await self.request("server/discover", modern())
        assert answer["result"]["supportedVersions"] == ["2026-07-28"], answer
        return answer

    async def open_session(self) -> None:
        answer = await self.request("initialize", INITIALIZE)
        assert answer["result"]["protocolVersion"] == "2025-11-25", answer
        assert answer["result"]["serverInfo"]["name"] == "bookshop"
        await self.server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def issues(self, output_schemas: dict[str, Any] | None = None) -> list[str]:
        return stream_issues(self.server.lines, self.sent, output_schemas or {})


async def _order_in_session(transcript: Transcript) -> None:
    tools = await transcript.request("tools/list", {})
    assert "place_order" in [tool["name"] for tool in tools["result"]["tools"]]
    answer = await transcript.request("tools/call", {"name": "place_order", "arguments": ORDER})
    assert answer["result"]["structuredContent"] == PLACED, answer
    assert transcript.asked == list(ANSWERS)  # both questions, as requests on the pipe


async def test_probe_only_gets_mrtr(stdio_shop: tuple[str, dict[str, str], Path]) -> None:
    app, env, database = stdio_shop
    async with StdioServer.run(app, env=env) as server:
        transcript = Transcript(server)
        await transcript.discover()
        tools = await transcript.request("tools/list", modern())
        schemas = {tool["name"]: tool.get("outputSchema") for tool in tools["result"]["tools"]}
        call = {"name": "place_order", "arguments": ORDER}
        first = await transcript.request("tools/call", modern(call))
        assert first["result"]["resultType"] == "input_required"
        assert list(first["result"]["inputRequests"]) == ["confirm"]
        confirm = {"confirm": {"action": "accept", "content": {"confirmed": True}}}
        second = await transcript.request(
            "tools/call", modern({**call, "inputResponses": confirm, "requestState": first["result"]["requestState"]})
        )
        assert list(second["result"]["inputRequests"]) == ["shipping"]
        shipping = {"shipping": {"action": "accept", "content": ANSWERS["Shipping speed?"]}}
        done = await transcript.request(
            "tools/call", modern({**call, "inputResponses": shipping, "requestState": second["result"]["requestState"]})
        )
        assert done["result"]["resultType"] == "complete"
        assert done["result"]["structuredContent"] == PLACED
        await server.close_stdin()
        assert await server.exit_code() == 0
    assert transcript.issues(schemas) == []
    assert db_rows(database, "SELECT book_id, quantity, shipping, gift_note FROM orders") == [
        (2, 3, "express", "Over stdio")
    ]


async def test_initialize_only_gets_a_2025_session(stdio_shop: tuple[str, dict[str, str], Path]) -> None:
    app, env, database = stdio_shop
    async with StdioServer.run(app, env=env) as server:
        transcript = Transcript(server)
        await transcript.open_session()
        await _order_in_session(transcript)
        await server.close_stdin()
        assert await server.exit_code() == 0
    assert transcript.issues() == []
    assert db_rows(database, "SELECT book_id, quantity, shipping FROM orders") == [(2, 3, "express")]


async def test_probe_then_initialize_chooses_the_2025_era(stdio_shop: tuple[str, dict[str, str], Path]) -> None:
    """Claude Code 2.1.280 and Copilot CLI: a successful probe, then ``initialize`` anyway."""
    app, env, database = stdio_shop
    async with StdioServer.run(app, env=env) as server:
        transcript = Transcript(server)
        await transcript.discover()
        await transcript.open_session()
        await _order_in_session(transcript)
        await server.close_stdin()
        assert await server.exit_code() == 0
    assert transcript.issues() == []
    assert db_rows(database, "SELECT COUNT(*) FROM orders") == [(1,)]


async def test_a_second_initialize_is_refused(stdio_shop: tuple[str, dict[str, str], Path]) -> None:
    app, env, _ = stdio_shop
    async with StdioServer.run(app, env=env) as server:
        transcript = Transcript(server)
        await transcript.open_session()
        again = await transcript.request("initialize", INITIALIZE)
        assert again["error"]["code"] == -32600 and "already initialized" in again["error"]["message"]
        assert (await transcript.request("ping", {}))["result"] == {}  # the session goes on
    assert transcript.issues() == []


async def test_a_request_without_meta_and_without_a_session_is_told_what_to_send(
    stdio_shop: tuple[str, dict[str, str], Path],
) -> None:
    """No header layer on stdio: the error names the missing _meta, never a header."""
    app, env, _ = stdio_shop
    async with StdioServer.run(app, env=env) as server:
        transcript = Transcript(server)
        answer = await transcript.request("tools/list", {})
        assert answer["error"]["code"] == -32602
        assert "_meta" in answer["error"]["message"] and "header" not in answer["error"]["message"].lower()
    assert transcript.issues() == []
