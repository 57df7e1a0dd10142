"""Servers for the real-client tests: each test gets its own app on real uvicorn at 127.0.0.1.

A fresh server (and for the bookshop a fresh SQLite file) per test keeps the tests independent:
sessions, orders and reviews of one test are never seen by another.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import running_server

ADMIN_TOKEN = "alice-token"  # example_app/auth.py's default admin: delete_book needs an admin


@dataclass(frozen=True)
class Shop:
    """The example bookshop on uvicorn: its MCP endpoint and the database it writes."""

    url: str
    database: Path

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.database) as connection:
            return list(connection.execute(sql).fetchall())


@pytest.fixture
def bookshop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Shop]:
    """example_app/main.py on a fresh database (it reads BOOKSHOP_DB on every request)."""
    database = tmp_path / "shop.db"
    monkeypatch.setenv("BOOKSHOP_DB", str(database))
    from example_app.main import app

    with running_server(app) as base:
        yield Shop(f"{base}/mcp", database)


@pytest.fixture
def everything() -> Iterator[str]:
    """tests/conformance/everything_server.py, a new instance; yields its MCP endpoint."""
    from tests.conformance.everything_server import create_app

    with running_server(create_app()) as base:
        yield f"{base}/mcp"
