"""The official Python client (mcp 2.3.0) on real uvicorn, in the 2025 era and in mode="auto".

``mode="legacy"`` opens an MCP session with ``initialize`` and answers each ``elicitation/create``,
``sampling/createMessage`` and ``roots/list`` the server sends on the call's stream. ``mode="auto"``
probes ``server/discover`` first; this server answers it, so the client settles on 2026-07-28 and
gets ``input_required`` results instead. Both must end every flow with the same results and side
effects, and the wire must show the era each one spoke (traffic.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp_types import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
    Root,
    TextContent,
)
from pydantic import FileUrl

from tests.legacy_clients.conftest import ADMIN_TOKEN, Shop
from tests.legacy_clients.traffic import Traffic, legacy_era_issues, modern_era_issues

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]
# What each mode settles on against this server: auto's probe finds a 2026-07-28 server.
ERA = {"legacy": "2025-11-25", "auto": "2026-07-28"}
GREETING = "Hello from the client's model,"
ROOTS = ["file:///workspace/shop", "file:///workspace/notes"]


@dataclass
class User:
    """The client's callbacks. Answers are chosen by the question's text, which is the same in both
    eras (the request id is not: a key under MRTR, a server-chosen JSON-RPC id in the 2025 era)."""

    answers: dict[str, dict[str, Any] | str] = field(default_factory=dict)
    asked: list[tuple[str, str]] = field(default_factory=list)  # (request id, what was asked)

    async def elicit(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams), params
        self.asked.append((str(context.request_id), params.message))
        answer = self.answers[params.message]
        if isinstance(answer, str):
            return ElicitResult(action=answer)  # type: ignore[arg-type]
        return ElicitResult(action="accept", content=answer)

    async def sample(self, context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
        [message] = params.messages
        assert isinstance(message.content, TextContent)
        self.asked.append((str(context.request_id), f"sample: {message.content.text}"))
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=GREETING), model="canned-1")

    async def roots(self, context: ClientRequestContext) -> ListRootsResult:
        self.asked.append((str(context.request_id), "roots"))
        return ListRootsResult(roots=[Root(uri=FileUrl(uri)) for uri in ROOTS])


@contextlib.asynccontextmanager
async def connect(url: str, user: User, mode: str, token: str | None = None) -> AsyncIterator[tuple[Client, Traffic]]:
    """The official client on ``url`` in ``mode``, its HTTP traffic recorded by event hooks."""
    traffic = Traffic()

    async def on_request(request: httpx2.Request) -> None:
        request.extensions["exchange"] = traffic.sent(request.method, dict(request.headers), request.content)

    async def on_response(response: httpx2.Response) -> None:
        exchange = response.request.extensions["exchange"]
        exchange.status = response.status_code
        exchange.minted_session = response.headers.get("mcp-session-id")
        exchange.content_type = response.headers.get("content-type", "")

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    hooks: dict[str, list[Callable[..., Any]]] = {"request": [on_request], "response": [on_response]}
    async with (
        httpx2.AsyncClient(headers=headers, event_hooks=hooks) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode=mode,
            elicitation_callback=user.elicit,
            sampling_callback=user.sample,
            list_roots_callback=user.roots,
        ) as client,
    ):
        assert client.protocol_version == ERA[mode]
        yield client, traffic


def check_era(mode: str, traffic: Traffic, user: User, keys: dict[str, str]) -> None:
    """The wire shows the era ``mode`` settled on, and the callbacks saw that era's request ids.

    ``keys`` maps each question the flow asks to the handler's key for it.
    """
    ids = [request_id for request_id, _ in user.asked]
    if ERA[mode] == "2026-07-28":
        assert modern_era_issues(traffic) == []
        assert traffic.exchanges[0].rpc_method == "server/discover"  # auto probed, and stayed modern
        assert user.asked == [(keys[question], question) for _, question in user.asked]  # MRTR: by key
    else:
        assert legacy_era_issues(traffic, questions=len(keys)) == []
        assert not set(ids) & set(keys.values())  # server requests, with ids of the server's choosing
        assert len(set(ids)) == len(ids) == len(keys)
        # the questions went out on the stream of the flow's tools/call (each test's first call)
        call = traffic.posted("tools/call")[0]
        assert call.content_type.startswith("text/event-stream")


def text_of(result: CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, TextContent))


@pytest.mark.parametrize("mode", MODES)
async def test_place_order_two_rounds(bookshop: Shop, mode: str) -> None:
    user = User(
        {
            "Place this order for 2 x 'Dune', 25.00 EUR?": {"confirmed": True},
            "Shipping speed?": {"speed": "express", "gift_note": "Happy reading"},
        }
    )
    async with connect(bookshop.url, user, mode, token=ADMIN_TOKEN) as (client, traffic):
        result = await client.call_tool("place_order", {"book_id": 1, "quantity": 2})
    assert result.is_error is False, text_of(result)
    assert result.structured_content == {"status": "placed", "order_id": 1, "total_cents": 2500, "shipping": "express"}
    assert bookshop.rows("SELECT id, book_id, quantity, shipping, customer, gift_note FROM orders") == [
        (1, 1, 2, "express", "alice", "Happy reading")
    ]
    assert [question for _, question in user.asked] == list(user.answers)
    check_era(mode, traffic, user, dict(zip(user.answers, ["confirm", "shipping"], strict=True)))


@pytest.mark.parametrize("mode", MODES)
async def test_review_book_three_rounds(bookshop: Shop, mode: str) -> None:
    user = User(
        {
            "How many stars for 'Neuromancer'?": {"stars": 2},
            "Sorry to hear that. What did you not like?": {"text": "The ending"},
            "Publish your 2-star review?": {"value": True},
        }
    )
    async with connect(bookshop.url, user, mode) as (client, traffic):
        result = await client.call_tool("review_book", {"book_id": 3})
    assert result.is_error is False, text_of(result)
    assert result.structured_content == {"status": "saved", "review_id": 1, "rating": 2}
    assert bookshop.rows("SELECT id, book_id, rating, comment FROM reviews") == [(1, 3, 2, "The ending")]
    assert [question for _, question in user.asked] == list(user.answers)
    check_era(mode, traffic, user, dict(zip(user.answers, ["rating", "comment", "publish"], strict=True)))


@pytest.mark.parametrize("mode", MODES)
async def test_delete_book_after_confirmation(bookshop: Shop, mode: str) -> None:
    user = User({"Really delete 'Kindred'? This cannot be undone.": {"value": True}})
    async with connect(bookshop.url, user, mode, token=ADMIN_TOKEN) as (client, traffic):
        result = await client.call_tool("delete_book", {"book_id": 4})
        listed = await client.call_tool("list_books", {})
    assert result.is_error is False, text_of(result)
    assert result.structured_content == {
        "id": 4,
        "title": "Kindred",
        "author": "Octavia E. Butler",
        "price_cents": 1050,
    }
    assert bookshop.rows("SELECT id FROM books ORDER BY id") == [(1,), (2,), (3,)]
    assert listed.structured_content is not None
    assert [book["id"] for book in listed.structured_content["result"]] == [1, 2, 3]
    check_era(mode, traffic, user, dict(zip(user.answers, ["delete"], strict=True)))


@pytest.mark.parametrize("mode", MODES)
async def test_declined_deletion_deletes_nothing(bookshop: Shop, mode: str) -> None:
    user = User({"Really delete 'Dune'? This cannot be undone.": "decline"})
    async with connect(bookshop.url, user, mode, token=ADMIN_TOKEN) as (client, traffic):
        result = await client.call_tool("delete_book", {"book_id": 1})
    assert result.is_error is True
    assert "409" in text_of(result) and "Deletion not confirmed" in text_of(result)
    assert bookshop.rows("SELECT COUNT(*) FROM books") == [(4,)]
    check_era(mode, traffic, user, dict(zip(user.answers, ["delete"], strict=True)))


@pytest.mark.parametrize("mode", MODES)
async def test_conformance_multi_round(everything: str, mode: str) -> None:
    user = User({"What is your name?": {"name": "Ada"}, "What is your favorite color?": {"color": "teal"}})
    async with connect(everything, user, mode) as (client, traffic):
        result = await client.call_tool("test_input_required_result_multi_round", {})
    assert result.is_error is False, text_of(result)
    assert text_of(result) == "Ada likes teal."
    assert [question for _, question in user.asked] == list(user.answers)
    check_era(mode, traffic, user, dict(zip(user.answers, ["step1", "step2"], strict=True)))


@pytest.mark.parametrize("mode", MODES)
async def test_conformance_multiple_inputs(everything: str, mode: str) -> None:
    """Three questions of three kinds in one round: an elicitation, a sampling and a roots request."""
    user = User({"What is your name?": {"name": "Grace"}})
    # all three in one round: the order the callbacks run in is the client's affair
    questions = {"What is your name?": "user_name", "sample: Generate a greeting": "greeting", "roots": "client_roots"}
    async with connect(everything, user, mode) as (client, traffic):
        result = await client.call_tool("test_input_required_result_multiple_inputs", {})
    assert result.is_error is False, text_of(result)
    assert text_of(result) == f"{GREETING} Grace ({len(ROOTS)} roots)"
    assert sorted(question for _, question in user.asked) == sorted(questions)
    check_era(mode, traffic, user, questions)
