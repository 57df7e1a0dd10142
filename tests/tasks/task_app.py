"""The app the tasks tests serve: tools that may run as tasks, and a ledger of what each handler did.

Every tool is a FastAPI route under ``@mcp.tool(task=...)``, as a user would write it. ``Journal``
records each run of a handler, each charge to a fake payment API (deduplicated by its idempotency
key, as such APIs do), and each cancellation a handler saw, so the tests can count them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Body, FastAPI
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context, JsonRpcError, ServerOptions
from fastapi_mrtr.tasks import InMemoryTaskStore, TaskConfig, TaskStore

NOW = TaskConfig(promote_after=0, ttl_ms=60_000, poll_interval_ms=50)  # a task at once


class NameForm(BaseModel):
    name: str


class ColorForm(BaseModel):
    color: str


class SizeForm(BaseModel):
    size: int


@dataclass
class Journal:
    runs: Counter[str] = field(default_factory=Counter)  # tool -> handler runs
    charges: dict[str, int] = field(default_factory=dict)  # idempotency key -> times the API was called
    once_calls: int = 0
    cancelled: list[str] = field(default_factory=list)
    running: dict[str, asyncio.Event] = field(default_factory=dict)

    def charge(self, key: str) -> str:
        self.charges[key] = self.charges.get(key, 0) + 1  # the API sees every attempt...
        return f"receipt-{key[:8]}"  # ...and answers the same receipt for the same key


def build(store: TaskStore | None = None) -> tuple[FastAPI, MCP, Journal]:
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="tasks-test", request_state_key="k" * 40), task_store=store)
    journal = Journal()

    @mcp.tool(task=TaskConfig(promote_after=0.5))
    @app.post("/quick", response_class=PlainTextResponse)
    async def quick() -> str:
        journal.runs["quick"] += 1
        return "quick done"

    @mcp.tool(task=TaskConfig(promote_after=0.1, ttl_ms=60_000, poll_interval_ms=50))
    @app.post("/slow", response_class=PlainTextResponse)
    async def slow(ctx: Context, seconds: Annotated[float, Body(embed=True)]) -> str:
        journal.runs["slow"] += 1
        try:
            for step in range(1, int(seconds * 10) + 1):
                await asyncio.sleep(0.1)
                await ctx.report_progress(step, seconds * 10, f"step {step}")
        except asyncio.CancelledError:
            journal.cancelled.append("slow")
            raise
        return f"slept {seconds:g} s"

    @mcp.tool(task=TaskConfig(mode="required", promote_after=0.1))
    @app.post("/must", response_class=PlainTextResponse)
    async def must(seconds: Annotated[float, Body(embed=True)] = 0.3) -> str:
        journal.runs["must"] += 1
        await asyncio.sleep(seconds)
        return "must done"

    @mcp.tool(task=NOW)
    @app.post("/interview", response_class=PlainTextResponse)
    async def interview(ctx: Context) -> str:
        """Charges once, asks a name, then a colour and a size together."""
        journal.runs["interview"] += 1

        def pay() -> str:
            journal.once_calls += 1
            return journal.charge(ctx.idempotency_key("charge"))

        receipt = await ctx.once("charge", pay)
        name = await ctx.elicit("Your name?", NameForm, key="name")
        color, size = await ctx.gather(
            ctx.elicit("Favourite colour?", ColorForm, key="color"),
            ctx.elicit("Shoe size?", SizeForm, key="size"),
        )
        assert name.content and color.content and size.content
        return f"{name.content.name} {color.content.color} {size.content.size} {receipt}"

    @mcp.tool(task=TaskConfig(promote_after=0.3))
    @app.post("/ask-first", response_class=PlainTextResponse)
    async def ask_first(ctx: Context) -> str:
        """MRTR before the task exists, then long enough to become one."""
        name = await ctx.elicit("Your name?", NameForm, key="name")
        await asyncio.sleep(0.8)
        return f"Hello, {name.content.name if name.content else '?'}"

    @mcp.tool(task=NOW)
    @app.post("/broken", response_class=PlainTextResponse)
    async def broken() -> str:
        raise JsonRpcError("the upstream refused", code=-32000, data={"upstream": "billing"})

    @mcp.tool()
    @app.post("/broken-plain", response_class=PlainTextResponse)
    async def broken_plain() -> str:
        raise JsonRpcError("the upstream refused", code=-32000)

    app.mount("/mcp", mcp)
    return app, mcp, journal


def memory_store() -> InMemoryTaskStore:
    return InMemoryTaskStore()
