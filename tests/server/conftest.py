"""Fixtures of the in-process protocol tests: the anyio backend and small app factories."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).parent))

from mcp_helpers import make_server

from fastapi_mrtr import MCP


class Book(BaseModel):
    id: int
    title: str


@pytest.fixture
def server_factory() -> Callable[..., tuple[FastAPI, MCP]]:
    """``server_factory(**options)``: a fresh empty app with ``MCP`` mounted at ``/mcp``."""

    def factory(**options: Any) -> tuple[FastAPI, MCP]:
        return make_server(**options)

    return factory


@pytest.fixture
def bookshop() -> Callable[..., FastAPI]:
    """``bookshop(**options)``: a fresh app with two tools, ``get_book`` and ``delete_book``."""

    def factory(**options: Any) -> FastAPI:
        app, mcp = make_server(**options)

        @mcp.tool()
        @app.get("/books/{book_id}", response_model=Book)
        async def get_book(book_id: int, verbose: bool = False) -> Book:
            """Look a book up."""
            if book_id == 0:
                raise HTTPException(404, "no such book")
            return Book(id=book_id, title="Dune" if not verbose else "Dune (1965)")

        @mcp.tool()
        @app.delete("/books/{book_id}")
        async def delete_book(book_id: int) -> dict[str, int]:
            return {"deleted": book_id}

        return app

    return factory
