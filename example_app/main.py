"""The bookshop: REST endpoints that are also MCP tools, some of which ask the user.

Run it with ``uvicorn example_app.main:app`` and point an MCP client at http://127.0.0.1:8000/mcp.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Path, Query, Request, Response, Security

from fastapi_mrtr import MCP, Context, InMemoryReplayStore, ReplayStore, ServerOptions
from fastapi_mrtr.state import RedisRelay, RedisReplayStore

from .auth import OAUTH, current_user, optional_user
from .db import get_db
from .models import ID_MAX, Book, Comment, Confirm, NewOrder, Order, Rating, Receipt, Review, Shipping, User

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

Db = Annotated[sqlite3.Connection, Depends(get_db)]
BookId = Annotated[int, Path(ge=1, le=ID_MAX)]  # within SQLite's integers, so a lookup cannot overflow


def _replay_store() -> ReplayStore | None:
    """Single-use requestState: in Redis for all replicas (``MRTR_REDIS_URL``), or in this one process
    (``BOOKSHOP_SINGLE_USE=1``). Optional: the keyed writes below are safe to retry without it."""
    url = os.environ.get("MRTR_REDIS_URL")
    if url:
        return RedisReplayStore(url)
    return InMemoryReplayStore() if os.environ.get("BOOKSHOP_SINGLE_USE") == "1" else None


app = FastAPI(title="Bookshop", version="1.0.0")
mcp = MCP(
    app,
    options=ServerOptions(
        name="bookshop",
        version="1.0.0",
        instructions="A bookshop: look books up, order them, review them.",
        allowed_hosts=tuple(filter(None, os.environ.get("BOOKSHOP_ALLOWED_HOSTS", "").split(","))),
        replay_store=_replay_store(),
        # 2025-era sessions served by any replica: answers, resumed streams and DELETE go through Redis.
        relay=RedisRelay(os.environ["MRTR_REDIS_URL"]) if os.environ.get("MRTR_REDIS_URL") else None,
    ),
    auth=OAUTH,  # OAuth mode (BOOKSHOP_OAUTH_ISSUER, BOOKSHOP_PUBLIC_URL): example_app/auth.py
)


@app.middleware("http")
async def replica_header(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Say which replica answered (scale-out tests read it; harmless otherwise)."""
    response = await call_next(request)
    response.headers["x-replica"] = os.environ.get("REPLICA_NAME", "main")
    return response


def _book(row: sqlite3.Row | None) -> Book:
    if row is None:
        raise HTTPException(404, "No such book")
    return Book(**dict(row))


@mcp.tool()
@app.get("/books", response_model=list[Book])
def list_books(
    db: Db, q: Annotated[str | None, Query(description="Words in the title or author")] = None
) -> list[Book]:
    """List the books in the shop, optionally filtered by a search text."""
    rows = db.execute("SELECT * FROM books ORDER BY id").fetchall()
    books = [Book(**dict(r)) for r in rows]
    if q:
        books = [b for b in books if q.lower() in f"{b.title} {b.author}".lower()]
    return books


@mcp.tool()
@app.get("/books/{book_id}", response_model=Book)
def get_book(book_id: BookId, db: Db) -> Book:
    """Look a book up by its id."""
    return _book(db.execute("SELECT * FROM books WHERE id = ?", (book_id,)).fetchone())


@mcp.tool()
@app.post("/orders", response_model=Receipt)
async def place_order(
    order: NewOrder,
    ctx: Context,
    db: Db,
    user: Annotated[User | None, Security(optional_user, scopes=["orders:write"])],
) -> Receipt:
    """Order a book. Asks the user to confirm the price, then for the shipping speed."""
    book = _book(db.execute("SELECT * FROM books WHERE id = ?", (order.book_id,)).fetchone())
    total = book.price_cents * order.quantity
    ok = await ctx.elicit(
        f"Place this order for {order.quantity} x {book.title!r}, {total / 100:.2f} EUR?", Confirm, key="confirm"
    )
    if ok.content is None or not ok.content.confirmed:
        return Receipt(status="cancelled")
    shipping = await ctx.elicit("Shipping speed?", Shipping, key="shipping")
    if shipping.content is None:
        return Receipt(status="cancelled")
    details = shipping.content
    # A client that lost our answer sends this last round again, maybe many times at once, and each
    # run gets here. The key is the same on every run of this flow, and UNIQUE in the database:
    # the first run inserts the order, every other run inserts nothing and finds that order.
    key = ctx.idempotency_key("order")
    db.execute(
        "INSERT INTO orders (book_id, quantity, shipping, customer, gift_note, idempotency_key)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING",
        (book.id, order.quantity, details.speed, user.name if user else None, details.gift_note, key),
    )
    db.commit()
    placed = Order(**dict(db.execute("SELECT * FROM orders WHERE idempotency_key = ?", (key,)).fetchone()))
    return Receipt(status="placed", order_id=placed.id, total_cents=total, shipping=placed.shipping)


@mcp.tool()
@app.delete("/books/{book_id}", response_model=Book)
async def delete_book(
    book_id: BookId, ctx: Context, db: Db, user: Annotated[User, Security(current_user, scopes=["admin"])]
) -> Book:
    """Remove a book from the catalogue (admins only). Asks for confirmation first."""
    if not user.is_admin:
        raise HTTPException(403, "Only admins may delete books")
    key = ctx.idempotency_key("delete")  # the same on every round and every retry of this flow
    if (deleted := _deleted_by(db, key)) is not None:
        return deleted  # a retry after this flow deleted it: the same answer, nothing deleted
    book = _book(db.execute("SELECT * FROM books WHERE id = ?", (book_id,)).fetchone())
    answer = await ctx.elicit(f"Really delete {book.title!r}? This cannot be undone.", bool, key="delete")
    if answer.content is not True:
        raise HTTPException(409, "Deletion not confirmed")
    with db:  # one transaction: the record of the deletion (its key is unique) and the deletion itself
        recorded = db.execute(
            "INSERT INTO deleted_books (idempotency_key, id, title, author, price_cents)"
            " SELECT ?, id, title, author, price_cents FROM books WHERE id = ? ON CONFLICT DO NOTHING",
            (key, book_id),
        )
        if recorded.rowcount:  # else a concurrent retry of this flow deleted it, or another flow did
            db.execute("DELETE FROM books WHERE id = ?", (book_id,))
    deleted = _deleted_by(db, key)
    if deleted is None:  # another flow deleted the book first
        raise HTTPException(404, "No such book")
    return deleted


def _deleted_by(db: sqlite3.Connection, key: str) -> Book | None:
    """The book that the flow with this idempotency key deleted, if it did."""
    query = "SELECT id, title, author, price_cents FROM deleted_books WHERE idempotency_key = ?"
    row = db.execute(query, (key,)).fetchone()
    return None if row is None else Book(**dict(row))


@mcp.tool()
@app.post(
    "/books/{book_id}/reviews",
    response_model=Review,
    dependencies=[Security(optional_user, scopes=["orders:write"])],  # reviews are anonymous; writing needs the scope
)
async def review_book(book_id: BookId, ctx: Context, db: Db) -> Review:
    """Review a book: a rating, a comment when the rating is low, then a final confirmation."""
    book = _book(db.execute("SELECT * FROM books WHERE id = ?", (book_id,)).fetchone())
    rating = await ctx.elicit(f"How many stars for {book.title!r}?", Rating, key="rating")
    if rating.content is None:
        return Review(status="discarded")
    stars = rating.content.stars
    comment = None
    if stars <= 2:  # a conditional ask: it has its own key, so replay stays stable
        answer = await ctx.elicit("Sorry to hear that. What did you not like?", Comment, key="comment")
        comment = answer.content.text if answer.content else None
    confirm = await ctx.elicit(f"Publish your {stars}-star review?", bool, key="publish")
    if confirm.content is not True:
        return Review(status="discarded", rating=stars)
    key = ctx.idempotency_key("review")  # a retried last round saves nothing twice (see place_order)
    db.execute(
        "INSERT INTO reviews (book_id, rating, comment, idempotency_key) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (idempotency_key) DO NOTHING",
        (book_id, stars, comment, key),
    )
    db.commit()
    saved = db.execute("SELECT id, rating FROM reviews WHERE idempotency_key = ?", (key,)).fetchone()
    return Review(status="saved", review_id=saved["id"], rating=saved["rating"])


@mcp.tool()
@app.get("/me/orders", response_model=list[Order])
def my_orders(db: Db, user: Annotated[User, Security(current_user, scopes=["orders:read"])]) -> list[Order]:
    """The signed-in customer's orders (needs Authorization: Bearer <token>)."""
    rows = db.execute("SELECT * FROM orders WHERE customer = ? ORDER BY id", (user.name,)).fetchall()
    return [Order(**dict(r)) for r in rows]


@app.get("/health")
def health() -> dict[str, str]:
    """Not a tool: a plain route stays a plain route."""
    return {"status": "ok"}


app.mount("/mcp", mcp)
