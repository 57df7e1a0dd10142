"""A small app for the idempotency tests: a tool that charges through a downstream payment API.

The charge sits between two asks, so it runs again on every later round, possibly on another
replica; it sends ``ctx.idempotency_key("charge")`` and the provider deduplicates. Run as
replicas: ``uvicorn tests.scaleout.payments_app:app`` with ``MRTR_STATE_KEY``, ``REPLICA_NAME``
and ``PAYMENTS_PROVIDER`` (the provider's base URL).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from fastapi import FastAPI, Request, Response

from fastapi_mrtr import MCP, Context, ServerOptions

app = FastAPI()
mcp = MCP(app, options=ServerOptions(name="payments"))


@app.middleware("http")
async def replica_header(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    response = await call_next(request)
    response.headers["x-replica"] = os.environ.get("REPLICA_NAME", "main")
    return response


@mcp.tool()
@app.post("/charges")
async def charge(amount: int, ctx: Context) -> dict[str, Any]:
    """Charge ``amount`` cents after a confirmation, then offer a receipt."""
    key = ctx.idempotency_key("charge")
    ok = await ctx.elicit(f"Charge {amount} cents? Reference {key}.", bool, key="ok")
    if ok.content is not True:
        return {"status": "cancelled", "idempotency_key": key}
    async with httpx.AsyncClient(base_url=os.environ["PAYMENTS_PROVIDER"], timeout=10.0) as provider:
        reply = await provider.post(
            "/charges",
            json={"amount": amount},
            headers={"Idempotency-Key": key, "X-Caller": os.environ.get("REPLICA_NAME", "main")},
        )
        reply.raise_for_status()
    receipt = await ctx.elicit("Email a receipt?", bool, key="receipt")
    return {
        "status": "charged",
        "idempotency_key": key,
        "charge_id": reply.json()["id"],
        "receipt": receipt.content is True,
    }


@app.get("/health")
def health() -> dict[str, str]:
    return {"status": "ok"}


app.mount("/mcp", mcp)
