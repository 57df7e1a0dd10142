"""Fixtures every test folder shares.

Folder-specific fixtures live next to their tests (``tests/server/conftest.py`` and so on); the
helpers that start real servers are in ``tests/support.py``. The markers (``slow``, ...) are
registered in pyproject.toml under ``[tool.pytest.ini_options]``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

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
