"""The example bookshop over stdio, with a database of its own per test."""

from __future__ import annotations

from pathlib import Path

import pytest

SHOP = "example_app.main:app"


@pytest.fixture
def stdio_shop(tmp_path: Path) -> tuple[str, dict[str, str], Path]:
    """(the app to launch, the environment to launch it with, its database)."""
    database = tmp_path / "shop.db"
    return SHOP, {"BOOKSHOP_DB": str(database), "MRTR_STATE_KEY": "stdio-test-key-" + "k" * 32}, database
