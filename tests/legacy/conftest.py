"""A small app with one tool per shim behaviour, on real uvicorn, and a raw 2025-era peer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from fastapi_mrtr import MCP, Context, InputRequiredConfig, ServerOptions
from tests.legacy.peer import LegacyPeer
from tests.scaleout.services import RedisServer
from tests.support import running_server

STATE_KEY = "legacy-tests-state-key-0123456789abcdef0123"
ROUND_TIMEOUT = 1.0


@dataclass
class App:
    mcp: MCP
    url: str


def build(**options: object) -> MCP:
    app = FastAPI()
    mcp = MCP(
        app,
        options=ServerOptions(
            **{  # type: ignore[arg-type]
                "name": "legacy-tests",
                "request_state_key": STATE_KEY,
                "input_required_config": InputRequiredConfig(round_timeout=ROUND_TIMEOUT),
                **options,
            },
        ),
    )

    @mcp.tool()
    @app.post("/confirm")
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Go ahead?", bool, key="go")
        if answer.action != "accept":
            return f"not confirmed: {answer.action}"
        return "confirmed" if answer.content else "refused"

    @mcp.tool()
    @app.post("/two_questions")
    async def two_questions(ctx: Context) -> str:
        name = await ctx.elicit("Your name?", str, key="name")
        color = await ctx.elicit("Your color?", str, key="color")
        return f"{name.content} likes {color.content}"

    @mcp.tool()
    @app.post("/bank")
    async def bank(ctx: Context) -> str:
        answer = await ctx.elicit_url("Log in at your bank", "https://bank.example/login", key="bank")
        return f"bank: {answer.action}"

    @mcp.tool()
    @app.post("/slow")
    async def slow(ctx: Context) -> str:
        for step in range(3):
            await ctx.report_progress(step, 3)
            await asyncio.sleep(0.3)
        return "slept"

    @mcp.tool()
    @app.post("/touch")
    async def touch() -> str:
        mcp.notify_resource_updated("test://doc")
        mcp.notify_tools_changed()
        return "touched"

    @mcp.resource("test://doc", name="doc", mime_type="text/plain")
    def doc() -> str:
        return "the doc"

    app.mount("/mcp", mcp)
    return mcp


@pytest.fixture(scope="module")
def served() -> Iterator[App]:
    mcp = build()
    with running_server(mcp.app) as base:
        yield App(mcp, f"{base}/mcp")


@pytest.fixture
async def peer(served: App) -> AsyncIterator[LegacyPeer]:
    async with httpx.AsyncClient(timeout=10) as http:
        yield LegacyPeer(http, served.url)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A real redis-server on loopback, for the relay tests; stopped after the test."""
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()
