"""Per-request notifications: ``notifications/message`` only with ``_meta`` logLevel, and the
context of prompts and resources reporting progress and logs like a tool."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI

from fastapi_mrtr import Context, ToolContext
from tests.mcp_helpers import connect, make_meta, make_server, sse_messages

pytestmark = pytest.mark.anyio

LOG_LEVEL = "io.modelcontextprotocol/logLevel"


def _meta(level: str, **extra: Any) -> dict[str, Any]:
    meta = make_meta(**extra)
    meta[LOG_LEVEL] = level
    return meta


def _app() -> FastAPI:
    app, mcp = make_server()

    @mcp.tool()
    @app.post("/chatty")
    async def chatty(ctx: Context) -> dict[str, bool]:
        await ctx.log("debug", "details")
        await ctx.log("info", "started")
        await ctx.log("error", {"problem": "minor"}, logger_name="worker")
        return {"ok": True}

    @mcp.prompt()
    async def slow_prompt(ctx: ToolContext) -> str:
        for step in (1, 2):
            await ctx.report_progress(step, 2)
        await ctx.log("warning", "prompt built")
        return "done"

    @mcp.resource("test://slow")
    async def slow_resource(ctx: ToolContext) -> str:
        await ctx.report_progress(1, 1, message="read")
        return "content"

    return app


async def test_logs_only_when_the_request_sets_a_level() -> None:
    async with connect(_app()) as client:
        quiet = await client.post("tools/call", {"name": "chatty"}, request_id=1)
        info = await client.post("tools/call", {"name": "chatty"}, request_id=2, meta=_meta("info"))
        errors = await client.post("tools/call", {"name": "chatty"}, request_id=3, meta=_meta("error"))
    assert quiet.headers["content-type"].startswith("application/json")  # nothing to stream
    assert quiet.json()["result"]["structuredContent"] == {"ok": True}

    def logs(response: Any) -> list[dict[str, Any]]:
        return [m["params"] for m in sse_messages(response.text) if m.get("method") == "notifications/message"]

    assert logs(info) == [
        {"level": "info", "data": "started"},
        {"level": "error", "data": {"problem": "minor"}, "logger": "worker"},
    ]
    assert logs(errors) == [{"level": "error", "data": {"problem": "minor"}, "logger": "worker"}]
    assert sse_messages(errors.text)[-1]["id"] == 3


async def test_prompts_and_resources_report_progress_and_logs() -> None:
    meta = _meta("info", progressToken="pt")
    async with connect(_app()) as client:
        prompt = await client.post("prompts/get", {"name": "slow_prompt"}, request_id="g", meta=meta)
        resource = await client.post("resources/read", {"uri": "test://slow"}, request_id="r", meta=meta)
    prompt_messages = sse_messages(prompt.text)
    assert [m.get("method") for m in prompt_messages[:-1]] == [
        "notifications/progress",
        "notifications/progress",
        "notifications/message",
    ]
    assert [m["params"]["progress"] for m in prompt_messages[:2]] == [1, 2]
    assert prompt_messages[-1]["result"]["messages"][0]["content"]["text"] == "done"
    resource_messages = sse_messages(resource.text)
    assert resource_messages[0]["params"] == {"progressToken": "pt", "progress": 1, "total": 1, "message": "read"}
    assert resource_messages[-1]["result"]["contents"][0]["text"] == "content"
