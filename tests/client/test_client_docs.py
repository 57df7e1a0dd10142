"""The code in docs/client.md runs and does what the text around it says."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context
from fastapi_mrtr.client import ClientOptions, InputRequiredConfig, InputRequiredResult, MrtrClient
from fastapi_mrtr.protocol import CallToolResult
from tests.support import running_server

pytestmark = pytest.mark.anyio

DOC = (Path(__file__).resolve().parents[2] / "docs" / "client.md").read_text(encoding="utf-8")


def snippet(heading: str) -> str:
    """The first ```python block after ``heading``."""
    match = re.search(re.escape(heading) + r"\n.*?```python\n(.*?)```", DOC, re.DOTALL)
    assert match is not None, heading
    return match.group(1)


def test_options_snippet_runs_as_written() -> None:
    namespace: dict[str, Any] = {}
    exec(snippet("## Options"), namespace)
    options = namespace["options"]
    assert isinstance(options, ClientOptions) and options.client_info.name == "my-agent"


class Ok(BaseModel):
    ok: bool


def booking_app() -> FastAPI:
    app = FastAPI()
    mcp = MCP(app)

    @mcp.tool()
    @app.post("/book")
    async def book(city: str, ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit(f"Book {city}?", Ok)
        return {"city": city, "booked": answer.content is not None and answer.content.ok}

    app.mount("/mcp", mcp)
    return app


async def test_manual_mode_snippet_gets_input_required_and_completes() -> None:
    # The snippet uses top-level await: run it as the body of a coroutine.
    source = "async def manual(url):\n" + textwrap.indent(snippet("### Manual mode"), "    ") + "    return locals()\n"
    namespace: dict[str, Any] = {
        "ClientOptions": ClientOptions,
        "InputRequiredConfig": InputRequiredConfig,
        "InputRequiredResult": InputRequiredResult,
        "MrtrClient": MrtrClient,
    }
    exec(source, namespace)
    with running_server(booking_app()) as base:
        done = await namespace["manual"](f"{base}/mcp")
    await done["client"].aclose()
    assert isinstance(done["first"], InputRequiredResult)
    result = done["done"]
    assert isinstance(result, CallToolResult) and result.structured_content == {"city": "Paris", "booked": True}
