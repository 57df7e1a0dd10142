"""The yardstick's two tools as FastAPI path functions: ``echo(text)`` and ``confirm(item)``.

``confirm`` asks one boolean question (``ok``) through ``ctx.elicit``, so an MCP client sees the
two-round MRTR flow the shared rig drives. Serve it with ``uvicorn bench.app:app``; the endpoint
is ``/mcp``. The state key is fixed, like the peers', so that the run is reproducible.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context, ServerOptions

BENCH_STATE_KEY = b"0123456789abcdef0123456789abcdef"


class Confirm(BaseModel):
    ok: bool


def build_app(*, fastapi_telemetry: bool = True) -> tuple[FastAPI, MCP]:
    """The bench app and its endpoint; ``fastapi_telemetry=False`` switches FastAPI's own
    per-request OpenTelemetry check off (FastAPI 0.165's ``telemetry`` option), for
    ``bench.app_fastapi_otel_off``."""
    extra: dict[str, Any] = {}
    if not fastapi_telemetry:
        extra["telemetry"] = {"tracing": False, "metrics": False, "logs": False}
    app = FastAPI(title="fastapi-mrtr bench", **extra)
    mcp = MCP(app, options=ServerOptions(name="bench", version="1.0.0", request_state_key=BENCH_STATE_KEY))

    @mcp.tool()
    @app.post("/echo")
    async def echo(text: str) -> str:
        """Return the text."""
        return text

    @mcp.tool()
    @app.post("/confirm")
    async def confirm(item: str, ctx: Context) -> str:
        """Ask the user to confirm the item, then say what happened."""
        answer = await ctx.elicit(f"Confirm {item}?", Confirm)
        ok = answer.accepted and answer.content is not None and answer.content.ok
        return f"{'done' if ok else 'kept'} {item}"

    app.mount("/mcp", mcp)
    return app, mcp


app, mcp = build_app()
