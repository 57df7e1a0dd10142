"""The app the tasks scale-out test runs on each replica: tasks in Redis, side effects counted there.

    MRTR_REDIS_URL=redis://... MRTR_STATE_KEY=... uvicorn tests.scaleout.tasks_app:app

Every tool is a FastAPI route under ``@mcp.tool(task=...)`` with ``promote_after=0`` (a task at
once). A tool's side effect is a "payment" keyed by ``ctx.idempotency_key``, recorded in Redis the
way a payment API with idempotency keys behaves: every attempt is counted (``attempts``), the first
attempt of a key is applied (``applied``), later ones answer the same receipt. The test reads both
hashes: a task whose handler was replayed on another replica shows two attempts and one effect.
"""

from __future__ import annotations

import asyncio
import os
from typing import Annotated

from fastapi import Body, FastAPI
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel
from redis.asyncio import Redis
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fastapi_mrtr import MCP, Context, ServerOptions
from fastapi_mrtr.state import RedisRelay
from fastapi_mrtr.tasks import RedisTaskStore, TaskConfig

REDIS_URL = os.environ["MRTR_REDIS_URL"]
REPLICA = os.environ.get("REPLICA_NAME", "main")
LEASE_SECONDS = float(os.environ.get("TASK_LEASE_SECONDS", "2"))
ATTEMPTS, APPLIED = "effects:attempts", "effects:applied"
NOW = TaskConfig(promote_after=0, ttl_ms=600_000, poll_interval_ms=100)

app = FastAPI()
mcp = MCP(
    app,
    options=ServerOptions(name="tasks-scaleout", relay=RedisRelay(REDIS_URL), task_lease_seconds=LEASE_SECONDS),
    task_store=RedisTaskStore(REDIS_URL),
)
payments = Redis.from_url(REDIS_URL)


class NameForm(BaseModel):
    name: str


async def pay(key: str, job: int) -> str:
    """The side effect: applied once per key, however often it is asked."""
    await payments.hincrby(ATTEMPTS, key, 1)
    await payments.hsetnx(APPLIED, key, f"{job}@{REPLICA}")
    return f"receipt-{key[:8]}"


class SayWhichReplica:
    """Adds ``x-replica`` to every response (pure ASGI: nothing runs between a tool call and its handler)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"x-replica", REPLICA.encode())]}
            await send(message)

        await self.app(scope, receive, tagged if scope["type"] == "http" else send)


app.add_middleware(SayWhichReplica)


@mcp.tool(task=NOW)
@app.post("/interview", response_class=PlainTextResponse)
async def interview(
    ctx: Context, job: Annotated[int, Body(embed=True)], work: Annotated[float, Body(embed=True)] = 0.2
) -> str:
    """Asks the caller's name inside the task, then pays (once) and works ``work`` seconds."""
    reply = await ctx.elicit(f"Who is job {job} for?", NameForm, key="name")
    assert reply.content is not None
    receipt = await pay(ctx.idempotency_key("pay"), job)
    await asyncio.sleep(work)
    return f"job {job} for {reply.content.name} ({receipt})"


@mcp.tool(task=NOW)
@app.post("/long-job", response_class=PlainTextResponse)
async def long_job(
    ctx: Context, job: Annotated[int, Body(embed=True)], work: Annotated[float, Body(embed=True)]
) -> str:
    """Pays (once) at its start, then works ``work`` seconds: long enough to be killed mid-way."""
    receipt = await pay(ctx.idempotency_key("pay"), job)
    await asyncio.sleep(work)
    return f"long job {job} done ({receipt})"


@mcp.tool(task=TaskConfig(promote_after=0, ttl_ms=600_000, poll_interval_ms=100, resumable=False))
@app.post("/fragile-job", response_class=PlainTextResponse)
async def fragile_job(job: Annotated[int, Body(embed=True)], work: Annotated[float, Body(embed=True)]) -> str:
    """Cannot be run twice (no idempotency key downstream): declared resumable=False."""
    await asyncio.sleep(work)
    return f"fragile job {job} done"


@app.get("/health")
def health() -> dict[str, str]:
    return {"status": "ok", "replica": REPLICA}


app.mount("/mcp", mcp)
