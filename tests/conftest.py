"""Fixtures every test folder shares.

Folder-specific fixtures live next to their tests (``tests/legacy/conftest.py`` and so on); the
helpers that start real servers are in ``tests/support.py``, the in-process MCP wire helpers in
``tests/mcp_helpers.py``. The markers (``slow``, ...) are registered in pyproject.toml under
``[tool.pytest.ini_options]``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, HTTPException
from hypothesis import settings
from pydantic import BaseModel

from fastapi_mrtr import MCP
from tests.mcp_helpers import make_server
from tests.support import running_server

# Property tests draw the same examples on every run unless asked to explore: a CI run must not
# fail by the luck of a new random draw (a failure must be reproducible on the spot), and the
# examples a search finds are kept as regression tests. HYPOTHESIS_PROFILE=explore searches anew.
settings.register_profile("repeatable", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (``pytest.mark.anyio``) run on asyncio only: the server code uses asyncio directly."""
    return "asyncio"


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """The example bookshop on uvicorn with a database of its own; yields (MCP URL, database path).

    The app reads ``BOOKSHOP_DB`` on each connection, so every test gets a fresh shop.
    """
    database = tmp_path / "shop.db"
    monkeypatch.setenv("BOOKSHOP_DB", str(database))
    from example_app.main import app

    with running_server(app) as base:
        yield f"{base}/mcp", database


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
