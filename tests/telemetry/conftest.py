"""The fixtures every telemetry test module uses: an in-memory recorder, and the example app's
shop on uvicorn with a fresh database, its telemetry going to that recorder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import running_server
from tests.telemetry.support import Recorder, bookshop

STATE_KEY = "k" * 32


@pytest.fixture
def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Recorder:
    monkeypatch.setenv("BOOKSHOP_DB", str(tmp_path / "shop.db"))
    monkeypatch.setenv("MRTR_STATE_KEY", STATE_KEY)
    return Recorder.new()


@pytest.fixture
def shop(recorder: Recorder) -> Iterator[str]:
    with running_server(bookshop(recorder.telemetry())) as base:
        yield f"{base}/mcp"
