"""A peer server built with the official MCP Python SDK (``mcp`` 2.3.0 ``MCPServer``).

Tools:
* ``echo(text)``: plain.
* ``confirm(item)``: hand-built ``InputRequiredResult`` (key ``confirm``, state ``step1``); the
  body re-runs on the retry and reads ``ctx.input_responses``.
* ``delete_item(item)``: an ``Elicit`` resolver (``Resolve(ask_confirm)``); the SDK seals its
  own ``requestState``.
* ``signup()``: a resolver eliciting a richer form (string, integer with default, enum, boolean).
* ``two_questions()``: one round asking two questions at once (two keys).
* ``slow(steps)``: reports progress (streams SSE when the request has a progress token).
* ``wait_for_ack()``: reports progress, then waits until :data:`ACK` is set (by a test's progress
  callback in the same process) to prove the progress arrived before the result.
* ``ask_roots()`` / ``ask_sample()``: hand-built roots and sampling input requests.
A prompt ``greet(name)`` and a resource ``res://hello`` round it off.

Run as a script: ``python -m tests.client.sdk_server PORT`` serves on 127.0.0.1:PORT.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Annotated, Literal

import anyio
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.server.request_state import RequestStateSecurity
from mcp_types import (
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel, Field
from starlette.applications import Starlette

KEY = b"0123456789abcdef0123456789abcdef"
CONFIRM_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
ACK = threading.Event()


class Confirm(BaseModel):
    ok: bool


class Profile(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(default=30, ge=0)
    colour: Literal["red", "green", "blue"] = "red"
    subscribe: bool = False


def ask_confirm(item: str) -> Elicit[Confirm]:
    return Elicit(f"Really delete {item}?", Confirm)


def ask_profile() -> Elicit[Profile]:
    return Elicit("Tell me about yourself", Profile)


def _text(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)])


def build_server() -> MCPServer:  # noqa: C901 (its nested handlers count: one app, many small tools)
    """A fresh server: an SDK session manager may be started only once per instance."""
    mcp = MCPServer("peer-sdk", request_state_security=RequestStateSecurity(keys=[KEY]))

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    @mcp.tool()
    async def confirm(item: str, ctx: Context) -> CallToolResult | InputRequiredResult:
        answer = (ctx.input_responses or {}).get("confirm")
        if not isinstance(answer, ElicitResult):
            ask = ElicitRequestFormParams(message=f"Confirm {item}?", requested_schema=CONFIRM_SCHEMA)
            return InputRequiredResult(input_requests={"confirm": ElicitRequest(params=ask)}, request_state="step1")
        ok = answer.action == "accept" and bool((answer.content or {}).get("ok"))
        return _text(f"{'done' if ok else 'kept'} {item} (state {ctx.request_state})")

    @mcp.tool()
    def delete_item(item: str, confirm: Annotated[Confirm, Resolve(ask_confirm)]) -> str:
        return f"deleted {item}" if confirm.ok else f"kept {item}"

    @mcp.tool()
    def signup(profile: Annotated[Profile, Resolve(ask_profile)]) -> str:
        p = profile
        return f"signed up name={p.name} age={p.age} colour={p.colour} subscribe={p.subscribe}"

    @mcp.tool()
    async def two_questions(ctx: Context) -> CallToolResult | InputRequiredResult:
        answers = ctx.input_responses or {}
        if not all(isinstance(answers.get(k), ElicitResult) for k in ("first", "second")):

            def ask(n: str) -> ElicitRequest:
                return ElicitRequest(params=ElicitRequestFormParams(message=f"{n}?", requested_schema=CONFIRM_SCHEMA))

            return InputRequiredResult(input_requests={"first": ask("first"), "second": ask("second")})
        return _text("both answered")

    @mcp.tool()
    async def ask_roots(ctx: Context) -> CallToolResult | InputRequiredResult:
        answer = (ctx.input_responses or {}).get("roots")
        if not isinstance(answer, ListRootsResult):
            return InputRequiredResult(input_requests={"roots": ListRootsRequest()}, request_state="r")
        return _text("roots: " + ",".join(str(r.uri) for r in answer.roots))

    @mcp.tool()
    async def ask_sample(ctx: Context) -> CallToolResult | InputRequiredResult:
        answer = (ctx.input_responses or {}).get("capital")
        if not isinstance(answer, CreateMessageResult):
            question = SamplingMessage(role="user", content=TextContent(type="text", text="Capital of France?"))
            params = CreateMessageRequestParams(messages=[question], max_tokens=20)
            return InputRequiredResult(input_requests={"capital": CreateMessageRequest(params=params)})
        content = answer.content
        return _text(f"model said {getattr(content, 'text', content)}")

    @mcp.tool()
    async def slow(ctx: Context, steps: int = 3) -> str:
        for i in range(steps):
            await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        return "done"

    @mcp.tool()
    async def wait_for_ack(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "waiting for the client")
        deadline = time.monotonic() + 10
        while not ACK.is_set() and time.monotonic() < deadline:
            await anyio.sleep(0.01)
        return "acked" if ACK.is_set() else "no ack"

    @mcp.prompt()
    def greet(name: str) -> str:
        return f"Hello {name}"

    @mcp.resource("res://hello")
    def hello() -> str:
        return "hello world"

    return mcp


def build_app(*, json_response: bool = False) -> Starlette:
    """The stateless Streamable HTTP app (SSE allowed unless ``json_response``)."""
    return build_server().streamable_http_app(json_response=json_response, stateless_http=True)


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(build_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
