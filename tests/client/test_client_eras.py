"""``MrtrClient`` against real servers of both eras, on loopback, with the same handlers throughout.

* a 2025-only server on ``@modelcontextprotocol/sdk`` 1.32.2 (Node, started here);
* the official Python SDK's stateful app (``mcp`` 2.3.0), which serves both eras;
* this project's own servers (the example bookshop and the conformance fixture), both eras.

Each era is reached with ``mode="auto"`` (the probe finds it) and with the mode forced. The
handlers never learn which era asked: the answers are checked in the results.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fastapi_mrtr.client import (
    ClientOptions,
    CreateMessageRequestParams,
    ElicitRequestParams,
    McpServerError,
    MrtrClient,
    ProgressNotification,
)
from fastapi_mrtr.client.options import ClientMode
from fastapi_mrtr.wire.protocol import CallToolResult, JSONRPCNotification, TextContent
from tests.client import sdk_dual_server
from tests.legacy_clients.node_server import node_legacy_server
from tests.support import db_rows, running_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# What this "user" answers, by form field: every server below asks with these names.
FIELDS: dict[str, Any] = {
    "confirmed": True,
    "speed": "express",
    "ok": True,
    "name": "Mia",
    "color": "teal",
    "stars": 2,
    "text": "too long",
    "value": True,
}


class Person:
    """The handlers of one client, and what each was asked (so a test sees the questions)."""

    def __init__(self, *, decline: bool = False) -> None:
        self.decline = decline
        self.asked: list[str] = []
        self.sampled: list[str] = []
        self.roots_asked = 0

    def elicit(self, params: ElicitRequestParams) -> dict[str, Any]:
        self.asked.append(params.message)
        if self.decline:
            return {"action": "decline"}
        properties = (params.requested_schema or {}).get("properties", {})
        content = {name: FIELDS[name] for name in properties if name in FIELDS}
        return {"action": "accept", "content": content}

    async def sample(self, params: CreateMessageRequestParams) -> dict[str, Any]:
        first = params.messages[0].content
        self.sampled.append(first.text if isinstance(first, TextContent) else str(first))
        return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "a-person"}

    def roots(self) -> dict[str, Any]:
        self.roots_asked += 1
        return {"roots": [{"uri": "file:///work/a"}, {"uri": "file:///work/b"}]}

    def attach(self, client: MrtrClient) -> MrtrClient:
        client.set_elicitation_handler(self.elicit)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            client.set_sampling_handler(self.sample)
            client.set_roots_handler(self.roots)
        return client


def text(result: Any) -> str:
    assert isinstance(result, CallToolResult), result
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def opts(mode: ClientMode) -> ClientOptions:
    return ClientOptions(mode=mode)


# --- a 2025-only server (TypeScript SDK 1.32.2) ----------------------------------------------


@pytest.fixture(scope="module")
def node_url() -> Iterator[str]:
    with node_legacy_server() as url:
        yield url


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_2025_only_server_lists_calls_and_asks(node_url: str, mode: ClientMode) -> None:
    person = Person()
    progress: list[ProgressNotification] = []
    notes: list[JSONRPCNotification] = []
    async with MrtrClient(node_url, options=opts(mode), on_notification=notes.append) as client:
        person.attach(client)
        assert await client.connect() == "legacy"
        assert client.protocol_version == "2025-11-25"
        assert client.server_info is not None and client.server_info.name == "legacy-node-server"
        assert {tool.name for tool in (await client.list_tools()).tools} >= {"echo", "place_order", "ask_model"}

        order = await client.call_tool("place_order", {"item": "book", "quantity": 2})
        assert text(order) == "placed 2 x book, express"
        assert isinstance(order, CallToolResult) and order.structured_content == {
            "status": "placed",
            "item": "book",
            "quantity": 2,
            "speed": "express",
        }
        assert person.asked == ["Place 2 x book?", "Shipping speed?"]

        assert text(await client.call_tool("ask_model", {"prompt": "Capital of France?"})) == "model said: Paris"
        assert person.sampled == ["Capital of France?"]
        assert text(await client.call_tool("list_my_roots", {})) == "file:///work/a,file:///work/b"
        assert person.roots_asked == 1

        slow = await client.call_tool("slow", {"steps": 2}, progress_callback=progress.append)
        assert text(slow) == "done"
        assert [(note.progress, note.total) for note in progress] == [(1, 2), (2, 2)]
        logged = [note.params for note in notes if note.method == "notifications/message"]
        assert [entry["data"] for entry in logged if entry] == ["step 1", "step 2"]

        prompt = await client.get_prompt("greet", {"name": "Mia"})
        assert "Mia" in str(prompt)
        resource = await client.read_resource("res://hello")
        assert "hello" in str(resource)


async def test_a_2025_only_server_gets_the_decline(node_url: str) -> None:
    person = Person(decline=True)
    async with MrtrClient(node_url) as client:
        person.attach(client)
        assert text(await client.call_tool("place_order", {"item": "pen", "quantity": 1})) == "cancelled"
        assert len(person.asked) == 1


async def test_leaving_the_block_ends_the_session(node_url: str) -> None:
    seen: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        seen.append(request)

    async with httpx.AsyncClient(event_hooks={"request": [record]}) as http:
        async with MrtrClient(node_url, http_client=http, options=opts("legacy")) as client:
            await client.call_tool("echo", {"text": "x"})
        session = seen[0].headers.get("mcp-session-id") or seen[-1].headers["mcp-session-id"]
        deletes = [r for r in seen if r.method == "DELETE"]
        assert len(deletes) == 1 and deletes[0].headers["mcp-session-id"] == session
        # The server has forgotten it: a request naming it is refused with 404.
        gone = await http.post(
            node_url,
            json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
            headers={
                "Mcp-Session-Id": session,
                "MCP-Protocol-Version": "2025-11-25",
                "Accept": "application/json, text/event-stream",
            },
        )
        assert gone.status_code == 404


async def test_modern_mode_against_a_2025_only_server_fails_clearly(node_url: str) -> None:
    async with MrtrClient(node_url, options=opts("2026-07-28")) as client:
        with pytest.raises(McpServerError) as caught:
            await client.list_tools()
    assert caught.value.http_status == 400 and "session" in caught.value.message.lower()


# --- the official Python SDK's server, both eras ---------------------------------------------


@pytest.fixture(scope="module")
def sdk_dual_url() -> Iterator[str]:
    with running_server(sdk_dual_server.build_app()) as base:
        yield f"{base}/mcp"


@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("2026-07-28", "2026-07-28"), ("legacy", "legacy")])
async def test_the_official_sdk_server_resolvers_on_both_eras(sdk_dual_url: str, mode: ClientMode, era: str) -> None:
    person = Person()
    async with MrtrClient(sdk_dual_url, options=opts(mode)) as client:
        person.attach(client)
        assert await client.connect() == era
        assert text(await client.call_tool("echo", {"text": "hi"})) == "hi"
        assert text(await client.call_tool("delete_item", {"item": "report"})) == "deleted report"
        assert text(await client.call_tool("signup", {})) == "signed up name=Mia age=30 colour=red"
        assert person.asked == ["Really delete report?", "Tell me about yourself"]


async def test_the_official_sdk_server_asks_imperatively_in_a_legacy_session(sdk_dual_url: str) -> None:
    person = Person()
    progress: list[ProgressNotification] = []
    notes: list[JSONRPCNotification] = []
    async with MrtrClient(sdk_dual_url, options=opts("legacy"), on_notification=notes.append) as client:
        person.attach(client)
        assert text(await client.call_tool("confirm_twice", {"item": "x"})) == "done x"
        assert person.asked == ["Confirm x?", "Really x?"]
        assert text(await client.call_tool("ask_model", {"prompt": "Capital?"})) == "model said: Paris"
        assert text(await client.call_tool("list_my_roots", {})) == "file:///work/a,file:///work/b"
        assert text(await client.call_tool("slow", {"steps": 2}, progress_callback=progress.append)) == "done"
        assert [note.progress for note in progress] == [1, 2]
        assert text(await client.call_tool("log_twice", {})) == "logged"
        logged = [note.params["data"] for note in notes if note.method == "notifications/message" and note.params]
        assert logged == ["first line", "second line"]


# --- this project's own servers, both eras ---------------------------------------------------


@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("legacy", "legacy"), ("2026-07-28", "2026-07-28")])
async def test_the_bookshop_on_both_eras(shop: tuple[str, Path], mode: ClientMode, era: str) -> None:
    url, database = shop
    person = Person()
    admin = {"Authorization": "Bearer alice-token"}
    async with MrtrClient(url, options=opts(mode), headers=admin) as client:
        person.attach(client)
        assert await client.connect() == era
        placed = await client.call_tool("place_order", {"book_id": 1, "quantity": 2})
        assert isinstance(placed, CallToolResult) and placed.structured_content is not None
        assert placed.structured_content["status"] == "placed"
        assert placed.structured_content["shipping"] == "express"
        # Exactly one order, whichever era asked.
        assert db_rows(database, "SELECT book_id, quantity FROM orders") == [(1, 2)]

        review = await client.call_tool("review_book", {"book_id": 1})
        assert isinstance(review, CallToolResult) and review.structured_content is not None
        assert review.structured_content["status"] == "saved" and review.structured_content["rating"] == 2
        assert len(person.asked) == 5  # two for the order, three for the review

        deleted = await client.call_tool("delete_book", {"book_id": 2})
        assert isinstance(deleted, CallToolResult) and not deleted.is_error, deleted
        assert len(person.asked) == 6


@pytest.fixture(scope="module")
def fixture_url() -> Iterator[str]:
    from tests.conformance.everything_server import create_app

    with running_server(create_app()) as base:
        yield f"{base}/mcp"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_fixture_flows_on_both_eras(fixture_url: str, mode: ClientMode) -> None:
    person = Person()
    async with MrtrClient(fixture_url, options=opts(mode)) as client:
        person.attach(client)
        era = await client.connect()
        assert era == ("legacy" if mode == "legacy" else "2026-07-28")
        assert text(await client.call_tool("test_input_required_result_multi_round", {})) == "Mia likes teal."
        together = await client.call_tool("test_input_required_result_multiple_inputs", {})
        assert text(together) == "Paris Mia (2 roots)"
        sampled = await client.call_tool("test_input_required_result_sampling", {})
        assert text(sampled) == "The model answered: Paris"
        rooted = await client.call_tool("test_input_required_result_list_roots", {})
        assert text(rooted) == "Roots: file:///work/a, file:///work/b"
