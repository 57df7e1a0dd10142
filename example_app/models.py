"""Request, response and question models of the bookshop."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

ID_MAX = 2**63 - 1  # the largest integer SQLite stores: a larger id is a validation error, not a crash


class Book(BaseModel):
    id: int
    title: str
    author: str
    price_cents: int


class NewOrder(BaseModel):
    book_id: int = Field(description="Id of the book to order", ge=1, le=ID_MAX)
    quantity: int = Field(default=1, ge=1, le=20)


class Receipt(BaseModel):
    status: Literal["placed", "cancelled"]
    order_id: int | None = None
    total_cents: int | None = None
    shipping: str | None = None


class Order(BaseModel):
    id: int
    book_id: int
    quantity: int
    shipping: str
    customer: str | None = None
    gift_note: str | None = None


class Review(BaseModel):
    status: Literal["saved", "discarded"]
    review_id: int | None = None
    rating: int | None = None


class User(BaseModel):
    name: str
    is_admin: bool = False


# --- questions asked through ctx.elicit -----------------------------------------------------


class Confirm(BaseModel):
    confirmed: bool = Field(title="Confirm", description="Tick to go ahead")


class Shipping(BaseModel):
    speed: Literal["standard", "express"] = Field(default="standard", title="Shipping speed")
    gift_note: str | None = Field(default=None, title="Gift note", max_length=200)


class Rating(BaseModel):
    stars: int = Field(ge=1, le=5, title="Stars (1 to 5)")


class Comment(BaseModel):
    text: str = Field(min_length=1, max_length=500, title="What did you not like?")
