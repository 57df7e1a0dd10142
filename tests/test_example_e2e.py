"""End to end: the example app on real uvicorn, driven by the official MCP Python client (mcp 2.3.0)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitResult

from tests.support import db_rows

pytestmark = pytest.mark.anyio


class ScriptedUser:
    """An elicitation callback answering by input key, recording what it was asked."""

    def __init__(self, answers: dict[str, dict[str, Any] | str]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str]] = []

    async def __call__(self, ctx: Any, params: Any) -> ElicitResult:
        key = str(ctx.request_id)
        self.asked.append((key, params.message))
        answer = self.answers[key]
        if isinstance(answer, str):
            return ElicitResult(action=answer)  # type: ignore[arg-type]
        return ElicitResult(action="accept", content=answer)


@contextlib.asynccontextmanager
async def client_as(url: str, token: str | None, **options: Any) -> AsyncIterator[Client]:
    """The official client, sending ``Authorization: Bearer <token>`` when a token is given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode="2026-07-28", **options) as client,
    ):
        yield client


@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
async def test_discover_list_and_call(shop: tuple[str, Path], mode: str) -> None:
    url, _ = shop
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        tools = await client.list_tools()
        names = [tool.name for tool in tools.tools]
        assert names == ["list_books", "get_book", "place_order", "delete_book", "review_book", "my_orders"]
        get_book = next(t for t in tools.tools if t.name == "get_book")
        assert get_book.input_schema["required"] == ["book_id"]
        assert get_book.annotations is not None and get_book.annotations.read_only_hint is True
        result = await client.call_tool("get_book", {"book_id": 1})
        assert result.is_error is False
        assert result.structured_content == {"id": 1, "title": "Dune", "author": "Frank Herbert", "price_cents": 1250}
        missing = await client.call_tool("get_book", {"book_id": 999})
        assert missing.is_error is True
        assert "404" in missing.content[0].text and "No such book" in missing.content[0].text  # type: ignore[union-attr]
        search = await client.call_tool("list_books", {"q": "gibson"})
        assert search.structured_content == {
            "result": [{"id": 3, "title": "Neuromancer", "author": "William Gibson", "price_cents": 990}]
        }


async def test_ids_beyond_sqlites_integers_are_validation_errors(shop: tuple[str, Path]) -> None:
    url, database = shop
    user = ScriptedUser({})  # nothing may be asked: the arguments fail before the function runs
    async with Client(url, elicitation_callback=user, mode="2026-07-28") as client:
        for tool, arguments in [
            ("get_book", {"book_id": 10**30}),
            ("get_book", {"book_id": 0}),
            ("get_book", {"book_id": 2**63}),
            ("review_book", {"book_id": 10**30}),
            ("place_order", {"book_id": 10**30}),
            ("place_order", {"book_id": -(2**63) - 1}),
        ]:
            result = await client.call_tool(tool, arguments)
            assert result.is_error is True, (tool, arguments)
            text = result.content[0].text  # type: ignore[union-attr]
            assert '"status": 422' in text and "book_id" in text, (tool, arguments, text)
        largest = await client.call_tool("get_book", {"book_id": 2**63 - 1})  # valid, and not a book
        assert largest.is_error is True and "No such book" in largest.content[0].text  # type: ignore[union-attr]
    assert user.asked == []
    assert db_rows(database, "SELECT COUNT(*) FROM orders") == [(0,)]


async def test_order_flow_creates_exactly_one_order(shop: tuple[str, Path]) -> None:
    url, database = shop
    user = ScriptedUser({"confirm": {"confirmed": True}, "shipping": {"speed": "express", "gift_note": "Enjoy"}})
    async with Client(url, elicitation_callback=user, mode="2026-07-28") as client:
        result = await client.call_tool("place_order", {"book_id": 2, "quantity": 2})
    assert result.is_error is False
    assert result.structured_content is not None
    assert result.structured_content["status"] == "placed"
    assert result.structured_content["total_cents"] == 2200
    assert [key for key, _ in user.asked] == ["confirm", "shipping"]
    assert "2 x 'The Left Hand of Darkness', 22.00 EUR" in user.asked[0][1]
    assert db_rows(database, "SELECT book_id, quantity, shipping, gift_note FROM orders") == [
        (2, 2, "express", "Enjoy")
    ]


async def test_declined_order_creates_nothing(shop: tuple[str, Path]) -> None:
    url, database = shop
    user = ScriptedUser({"confirm": "decline"})
    async with Client(url, elicitation_callback=user, mode="2026-07-28") as client:
        result = await client.call_tool("place_order", {"book_id": 1})
    assert result.structured_content == {"status": "cancelled", "order_id": None, "total_cents": None, "shipping": None}
    assert user.asked == [("confirm", "Place this order for 1 x 'Dune', 12.50 EUR?")]
    assert db_rows(database, "SELECT COUNT(*) FROM orders") == [(0,)]


async def test_three_round_review_with_conditional_question(shop: tuple[str, Path]) -> None:
    url, database = shop
    user = ScriptedUser({"rating": {"stars": 2}, "comment": {"text": "Too long"}, "publish": {"value": True}})
    async with Client(url, elicitation_callback=user, mode="2026-07-28") as client:
        result = await client.call_tool("review_book", {"book_id": 4})
    assert result.structured_content is not None and result.structured_content["status"] == "saved"
    assert [key for key, _ in user.asked] == ["rating", "comment", "publish"]
    assert db_rows(database, "SELECT book_id, rating, comment FROM reviews") == [(4, 2, "Too long")]


async def test_auth_guarded_tool_sees_the_callers_authorization(shop: tuple[str, Path]) -> None:
    url, _ = shop
    user = ScriptedUser({"confirm": {"confirmed": True}, "shipping": {"speed": "standard"}})
    async with client_as(url, None) as anonymous:
        denied = await anonymous.call_tool("my_orders", {})
    assert denied.is_error is True
    assert "401" in denied.content[0].text  # type: ignore[union-attr]
    async with client_as(url, "bob-token", elicitation_callback=user) as bob:
        placed = await bob.call_tool("place_order", {"book_id": 3})
        assert placed.structured_content is not None and placed.structured_content["status"] == "placed"
        mine = await bob.call_tool("my_orders", {})
    assert mine.is_error is False
    assert mine.structured_content is not None
    orders = mine.structured_content["result"]
    assert [(o["book_id"], o["customer"]) for o in orders] == [(3, "bob")]


async def test_destructive_tool_asks_before_deleting(shop: tuple[str, Path]) -> None:
    url, database = shop
    async with client_as(url, "alice-token", elicitation_callback=ScriptedUser({"delete": "decline"})) as alice:
        kept = await alice.call_tool("delete_book", {"book_id": 1})
        tools = await alice.list_tools()
    assert kept.is_error is True and "409" in kept.content[0].text  # type: ignore[union-attr]
    delete_tool = next(t for t in tools.tools if t.name == "delete_book")
    assert delete_tool.annotations is not None and delete_tool.annotations.destructive_hint is True
    assert db_rows(database, "SELECT COUNT(*) FROM books WHERE id = 1") == [(1,)]
    async with client_as(url, "alice-token", elicitation_callback=ScriptedUser({"delete": {"value": True}})) as alice:
        deleted = await alice.call_tool("delete_book", {"book_id": 1})
    assert deleted.is_error is False
    assert db_rows(database, "SELECT COUNT(*) FROM books WHERE id = 1") == [(0,)]


async def test_tools_stay_rest_routes(shop: tuple[str, Path]) -> None:
    url, _ = shop
    base = url.removesuffix("/mcp")
    async with httpx2.AsyncClient(base_url=base) as http:
        book = await http.get("/books/1")
        assert book.status_code == 200 and book.json()["title"] == "Dune"
        order = await http.post("/orders", json={"book_id": 1})
        assert order.status_code == 428
        body = order.json()
        assert body["resultType"] == "input_required" and list(body["inputRequests"]) == ["confirm"]
