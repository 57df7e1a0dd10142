"""Fixtures every test folder shares.

Folder-specific fixtures live next to their tests (``tests/server/conftest.py`` and so on); the
helpers that start real servers are in ``tests/support.py``. The markers (``slow``, ...) are
registered in pyproject.toml under ``[tool.pytest.ini_options]``.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (``pytest.mark.anyio``) run on asyncio only: the server code uses asyncio directly."""
    return "asyncio"
