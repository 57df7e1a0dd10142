"""The official Python SDK (``mcp`` 2.3.0) serving both eras: its stateful streamable HTTP app.

One ``streamable_http_app()`` answers 2026-07-28 requests statelessly and 2025-era sessions
(``initialize``, ``Mcp-Session-Id``) statefully, routed per request. What works on which era is
the SDK's own rule, not ours:

* ``delete_item(item)`` and ``signup()``: declarative resolvers (``Resolve(...)``), which the SDK
  serves on both eras (``input_required`` on the modern wire, a real ``elicitation/create`` on a
  legacy session's stream).
* ``confirm_twice(item)``: two imperative ``ctx.elicit`` calls, which the SDK serves to legacy
  sessions only.
* ``ask_model(prompt)`` / ``list_my_roots()``: sampling and roots through the legacy session.
* ``echo(text)``, ``slow(steps)`` (progress), and ``log_twice()`` (two log notifications).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer, Resolve
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import SamplingMessage, TextContent
from pydantic import BaseModel
from starlette.applications import Starlette

from tests.client.sdk_server import KEY, Confirm, Profile, ask_confirm, ask_profile


@contextlib.contextmanager
def legacy_features() -> Iterator[None]:
    """The SDK warns that sampling, roots and logging are deprecated; the suite turns warnings into
    errors, and these tools use them on purpose."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


class Ok(BaseModel):
    ok: bool


def build_server() -> MCPServer:
    mcp = MCPServer("dual-era-sdk", request_state_security=RequestStateSecurity(keys=[KEY]))

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    @mcp.tool()
    def delete_item(item: str, confirm: Annotated[Confirm, Resolve(ask_confirm)]) -> str:
        return f"deleted {item}" if confirm.ok else f"kept {item}"

    @mcp.tool()
    def signup(profile: Annotated[Profile, Resolve(ask_profile)]) -> str:
        return f"signed up name={profile.name} age={profile.age} colour={profile.colour}"

    @mcp.tool()
    async def confirm_twice(item: str, ctx: Context) -> str:
        first = await ctx.elicit(f"Confirm {item}?", Ok)
        if first.action != "accept" or not first.data.ok:
            return f"kept {item}"
        second = await ctx.elicit(f"Really {item}?", Ok)
        return f"{'done' if second.action == 'accept' and second.data.ok else 'kept'} {item}"

    @mcp.tool()
    async def ask_model(prompt: str, ctx: Context) -> str:
        question = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
        with legacy_features():
            reply = await ctx.session.create_message(
                messages=[question], max_tokens=50, related_request_id=ctx.request_id
            )
        return f"model said: {getattr(reply.content, 'text', reply.content)}"

    @mcp.tool()
    async def list_my_roots(ctx: Context) -> str:
        with legacy_features():
            roots = await ctx.session.list_roots()
        return ",".join(str(root.uri) for root in roots.roots)

    @mcp.tool()
    async def slow(ctx: Context, steps: int = 2) -> str:
        for step in range(steps):
            await ctx.report_progress(step + 1, steps, f"step {step + 1}")
        return "done"

    @mcp.tool()
    async def log_twice(ctx: Context) -> str:
        with legacy_features():
            await ctx.info("first line")
            await ctx.info("second line")
        return "logged"

    return mcp


def build_app() -> Starlette:
    """A fresh stateful app (an SDK session manager starts only once per instance)."""
    return build_server().streamable_http_app()
