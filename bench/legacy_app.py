"""The legacy legs' tools as FastAPI path functions: ``echo(text)`` and ``confirm_twice(item)``.

A 2025-era client reaches them through an MCP session (``initialize``, then ``Mcp-Session-Id``);
``confirm_twice`` asks two boolean questions through ``ctx.elicit``, which the legacy shim sends
as two ``elicitation/create`` requests on the call's SSE stream. Modern clients may call the same
tools on the same ``/mcp``. Serve it with ``uvicorn bench.legacy_app:app``. A separate app from
``bench.app``, so that the modern rows measure exactly what they measured before. With
``BENCH_RELAY_URL`` set (a Redis URL), the sessions go through the Redis relay (the relay leg).
"""

from __future__ import annotations

import os

from fastapi import FastAPI

from bench.app import BENCH_STATE_KEY, Confirm
from fastapi_mrtr import MCP, Context, ServerOptions
from fastapi_mrtr.state import RedisRelay

app = FastAPI(title="fastapi-mrtr legacy bench")
relay_url = os.environ.get("BENCH_RELAY_URL")
mcp = MCP(
    app,
    options=ServerOptions(
        name="bench",
        version="1.0.0",
        request_state_key=BENCH_STATE_KEY,
        relay=RedisRelay(relay_url) if relay_url else None,
    ),
)


@mcp.tool()
@app.post("/echo")
async def echo(text: str) -> str:
    """Return the text."""
    return text


@mcp.tool()
@app.post("/confirm_twice")
async def confirm_twice(item: str, ctx: Context) -> str:
    """Ask twice whether to go ahead with the item, then say what happened."""
    first = await ctx.elicit(f"Confirm {item}?", Confirm)
    if not (first.accepted and first.content is not None and first.content.ok):
        return f"kept {item}"
    second = await ctx.elicit(f"Really {item}?", Confirm)
    ok = second.accepted and second.content is not None and second.content.ok
    return f"{'done' if ok else 'kept'} {item}"


app.mount("/mcp", mcp)
