"""Each test gets the tasks app on real uvicorn (127.0.0.1) and a raw peer of it over httpx."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import httpx
import pytest

from fastapi_mrtr import MCP
from tests.support import running_server
from tests.tasks.peer import TaskPeer
from tests.tasks.task_app import Journal, build


@dataclass
class Served:
    url: str  # the MCP endpoint
    mcp: MCP
    journal: Journal


@pytest.fixture
def served() -> Iterator[Served]:
    app, mcp, journal = build()
    with running_server(app) as base:
        yield Served(f"{base}/mcp", mcp, journal)


@pytest.fixture
async def peer(served: Served) -> AsyncIterator[TaskPeer]:
    async with httpx.AsyncClient(timeout=10) as http:
        yield TaskPeer(http, served.url)
