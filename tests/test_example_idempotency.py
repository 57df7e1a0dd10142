"""The example bookshop survives retries: a repeated last round never orders or deletes twice.

A client whose answer to the last round was lost sends that round again, with the same state and
answers, maybe many times at once. ``ctx.once`` cannot guard that round (its result would be
sealed into a next state that never comes), so the bookshop keys each write with
``ctx.idempotency_key`` under a UNIQUE constraint. These tests drive the example app over HTTP on
real uvicorn, with and without a replay store (single-use state), and count the rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.scaleout.flows import JSON, McpWire, Reply, accept, input_request
from tests.support import running_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

EXAMPLE_MAIN = Path(__file__).resolve().parent.parent / "example_app" / "main.py"
RETRIES = 20
ORDER = {"book_id": 2, "quantity": 2}
CONFIRM = {"confirm": accept({"confirmed": True})}
SHIPPING = {"shipping": accept({"speed": "express", "gift_note": "Enjoy"})}
DELETE = {"delete": accept({"value": True})}


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "shop.db"
    monkeypatch.setenv("BOOKSHOP_DB", str(path))
    return path


def example_app(monkeypatch: pytest.MonkeyPatch, **env: str) -> FastAPI:
    """A fresh copy of example_app.main, built with ``env`` set (it reads its options at import)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    spec = importlib.util.spec_from_file_location("example_app._fresh_main", EXAMPLE_MAIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app = module.app
    assert isinstance(app, FastAPI)
    return app


@pytest.fixture(params=[False, True], ids=["stateless", "single-use"])
def single_use(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
def base_url(database: Path, single_use: bool, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The example app on uvicorn; with a replay store (``BOOKSHOP_SINGLE_USE=1``) when ``single_use``."""
    app = example_app(monkeypatch, BOOKSHOP_SINGLE_USE="1" if single_use else "0")
    with running_server(app) as base:
        yield base


@contextlib.asynccontextmanager
async def wire_as(base: str, token: str | None = None) -> AsyncIterator[McpWire]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        yield McpWire(http, f"{base}/mcp")


def rows(database: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        return list(connection.execute(sql).fetchall())


def completed(reply: Reply) -> JSON:
    result = reply.result
    assert result.get("resultType") == "complete" and result.get("isError") is not True, result
    content = result["structuredContent"]
    assert isinstance(content, dict)
    return content


def refused(reply: Reply) -> bool:
    """A second use of a single-use state: -32602 before the handler runs."""
    return reply.status == 400 and reply.is_invalid_state


async def order_to_last_round(wire: McpWire) -> str:
    """Round one (confirm) and round two (shipping): the state the last round is sent with."""
    _, confirm_state = input_request(await wire.call("place_order", ORDER), "confirm")
    second = await wire.call("place_order", ORDER, state=confirm_state, responses=CONFIRM)
    _, shipping_state = input_request(second, "shipping")
    return shipping_state


async def at_once(wire: McpWire, tool: str, arguments: JSON, state: str, answers: JSON) -> list[Reply]:
    calls = (wire.call(tool, arguments, state=state, responses=answers) for _ in range(RETRIES))
    return list(await asyncio.gather(*calls))


async def one_by_one(wire: McpWire, tool: str, arguments: JSON, state: str, answers: JSON) -> list[Reply]:
    return [await wire.call(tool, arguments, state=state, responses=answers) for _ in range(RETRIES)]


# --- place_order ------------------------------------------------------------------------------


async def test_the_last_round_sent_many_times_at_once_places_one_order(
    base_url: str, database: Path, single_use: bool
) -> None:
    async with wire_as(base_url) as wire:
        state = await order_to_last_round(wire)
        replies = await at_once(wire, "place_order", ORDER, state, SHIPPING)
        later = await one_by_one(wire, "place_order", ORDER, state, SHIPPING)
    orders = rows(database, "SELECT id, book_id, quantity, shipping, gift_note FROM orders")
    assert [order[1:] for order in orders] == [(2, 2, "express", "Enjoy")]
    placed = [completed(r) for r in replies if not (single_use and refused(r))]
    expected = {"status": "placed", "order_id": orders[0][0], "total_cents": 2200, "shipping": "express"}
    if single_use:  # the first use runs; every other use of the state is refused
        assert placed == [expected]
        assert all(refused(r) for r in later)
    else:  # every retry runs and finds the order the first run created
        assert placed == [expected] * RETRIES
        assert [completed(r) for r in later] == [expected] * RETRIES


async def test_retrying_a_completed_last_round_answers_the_same_order(
    base_url: str, database: Path, single_use: bool
) -> None:
    async with wire_as(base_url) as wire:
        state = await order_to_last_round(wire)
        receipt = completed(await wire.call("place_order", ORDER, state=state, responses=SHIPPING))
        replies = await at_once(wire, "place_order", ORDER, state, SHIPPING)
        changed = await wire.call(
            "place_order", ORDER, state=state, responses={"shipping": accept({"speed": "standard"})}
        )
    assert rows(database, "SELECT id, shipping FROM orders") == [(receipt["order_id"], "express")]
    if single_use:
        assert all(refused(r) for r in [*replies, changed])
    else:  # even a retry that changed its answer gets the order that was placed, not a second one
        assert [completed(r) for r in [*replies, changed]] == [receipt] * (RETRIES + 1)


async def test_a_new_flow_with_the_same_arguments_is_a_new_order(base_url: str, database: Path) -> None:
    async with wire_as(base_url) as wire:
        receipts = []
        for _ in range(2):
            state = await order_to_last_round(wire)
            receipts.append(completed(await wire.call("place_order", ORDER, state=state, responses=SHIPPING)))
    assert receipts[0]["order_id"] != receipts[1]["order_id"]
    assert rows(database, "SELECT COUNT(*) FROM orders") == [(2,)]


# --- delete_book ------------------------------------------------------------------------------

KINDRED = {"id": 4, "title": "Kindred", "author": "Octavia E. Butler", "price_cents": 1050}


async def delete_to_last_round(wire: McpWire, book_id: int = 4) -> str:
    _, state = input_request(await wire.call("delete_book", {"book_id": book_id}), "delete")
    return state


async def test_the_last_round_of_a_delete_sent_many_times_at_once_deletes_once(
    base_url: str, database: Path, single_use: bool
) -> None:
    async with wire_as(base_url, "alice-token") as wire:
        state = await delete_to_last_round(wire)
        replies = await at_once(wire, "delete_book", {"book_id": 4}, state, DELETE)
        later = await one_by_one(wire, "delete_book", {"book_id": 4}, state, DELETE)
    assert rows(database, "SELECT id FROM books ORDER BY id") == [(1,), (2,), (3,)]
    deleted = [completed(r) for r in replies if not (single_use and refused(r))]
    if single_use:
        assert deleted == [KINDRED]
        assert all(refused(r) for r in later)
    else:  # no retry answers a confusing 404: each gets the book this flow deleted
        assert deleted == [KINDRED] * RETRIES
        assert [completed(r) for r in later] == [KINDRED] * RETRIES


async def test_a_retried_delete_leaves_a_new_book_with_the_same_id_alone(
    base_url: str, database: Path, single_use: bool
) -> None:
    """SQLite may give a deleted book's id to the next book: a late retry must not delete that one."""
    async with wire_as(base_url, "alice-token") as wire:
        state = await delete_to_last_round(wire)
        assert completed(await wire.call("delete_book", {"book_id": 4}, state=state, responses=DELETE)) == KINDRED
        with contextlib.closing(sqlite3.connect(database)) as connection:
            connection.execute("INSERT INTO books (title, author, price_cents) VALUES ('Kindred', 'Butler', 1)")
            connection.commit()
        assert rows(database, "SELECT id, author FROM books WHERE id = 4") == [(4, "Butler")]
        retry = await wire.call("delete_book", {"book_id": 4}, state=state, responses=DELETE)
    assert rows(database, "SELECT id, author FROM books WHERE id = 4") == [(4, "Butler")]
    assert refused(retry) if single_use else completed(retry) == KINDRED


# --- review_book, and the same tools as REST routes -------------------------------------------


async def test_the_last_round_of_a_review_sent_many_times_at_once_saves_one_review(
    base_url: str, database: Path, single_use: bool
) -> None:
    async with wire_as(base_url) as wire:
        _, state = input_request(await wire.call("review_book", {"book_id": 1}), "rating")
        rated = await wire.call("review_book", {"book_id": 1}, state=state, responses={"rating": accept({"stars": 5})})
        _, state = input_request(rated, "publish")
        replies = await at_once(wire, "review_book", {"book_id": 1}, state, {"publish": accept({"value": True})})
    reviews = rows(database, "SELECT id, book_id, rating FROM reviews")
    assert [review[1:] for review in reviews] == [(1, 5)]
    saved = [completed(r) for r in replies if not (single_use and refused(r))]
    expected = {"status": "saved", "review_id": reviews[0][0], "rating": 5}
    assert saved == [expected] * (1 if single_use else RETRIES)


async def test_a_rest_client_repeating_its_last_request_gets_the_same_order(
    base_url: str, database: Path, single_use: bool
) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:

        async def post(state: str | None = None, answers: JSON | None = None) -> httpx.Response:
            headers = (
                {} if state is None else {"MRTR-Request-State": state, "MRTR-Input-Responses": json.dumps(answers)}
            )
            return await http.post("/orders", json=ORDER, headers=headers)

        asked = await post()
        asked = await post(asked.json()["requestState"], CONFIRM)
        state = asked.json()["requestState"]
        replies = await asyncio.gather(*(post(state, SHIPPING) for _ in range(RETRIES)))
    orders = rows(database, "SELECT id FROM orders")
    assert len(orders) == 1
    placed = [r.json() for r in replies if r.status_code == 200]
    assert placed == [{"status": "placed", "order_id": orders[0][0], "total_cents": 2200, "shipping": "express"}] * (
        1 if single_use else RETRIES
    )
    assert sorted(r.status_code for r in replies) == [200] * len(placed) + [400] * (RETRIES - len(placed))


async def test_a_database_made_before_the_keys_existed_is_upgraded(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        connection.executescript(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, book_id INTEGER NOT NULL, quantity INTEGER NOT NULL,"
            " shipping TEXT NOT NULL, customer TEXT, gift_note TEXT);"
            "INSERT INTO orders (book_id, quantity, shipping) VALUES (1, 1, 'standard');"
            "CREATE TABLE reviews (id INTEGER PRIMARY KEY, book_id INTEGER NOT NULL, rating INTEGER NOT NULL,"
            " comment TEXT);"
        )
    with running_server(example_app(monkeypatch)) as base:
        async with wire_as(base) as wire:
            state = await order_to_last_round(wire)
            replies = await at_once(wire, "place_order", ORDER, state, SHIPPING)
    assert rows(database, "SELECT book_id, shipping FROM orders ORDER BY id") == [(1, "standard"), (2, "express")]
    assert len({completed(r)["order_id"] for r in replies}) == 1
