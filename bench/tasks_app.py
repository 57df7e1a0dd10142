"""The app ``bench.tasks`` measures: the rig's echo, and the same echo declared as a task two ways."""

from __future__ import annotations

from fastapi import FastAPI

from bench.app import BENCH_STATE_KEY
from fastapi_mrtr import MCP, ServerOptions
from fastapi_mrtr.tasks import TaskConfig

app = FastAPI(title="fastapi-mrtr tasks bench")
mcp = MCP(app, options=ServerOptions(name="bench-tasks", version="1.0.0", request_state_key=BENCH_STATE_KEY))


@mcp.tool()
@app.post("/echo")
async def echo(text: str) -> str:
    """Return the text."""
    return text


@mcp.tool(task="optional")
@app.post("/echo_optional")
async def echo_optional(text: str) -> str:
    """Return the text; a task if it ever took longer than a second."""
    return text


@mcp.tool(task=TaskConfig(promote_after=0, ttl_ms=60_000, poll_interval_ms=50))
@app.post("/echo_task")
async def echo_task(text: str) -> str:
    """Return the text, always as a task."""
    return text


app.mount("/mcp", mcp)
