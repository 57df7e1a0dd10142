"""The official SDK (mcp 2.3.0) serving the legacy legs' tools to 2025-era MCP sessions.

``echo(text)`` and ``confirm_twice(item)``, which asks two boolean questions with the SDK's own
``ctx.elicit`` (each an ``elicitation/create`` request on the call's SSE stream). The app is the
SDK's stateful streamable HTTP app: sessions opened by ``initialize``, answers as SSE (its
default, and the only mode in which a tool can send the client a request). ``app_json`` is the
same server answering each POST with one JSON body, which cannot elicit: the cheaper echo peer.
Serve with ``uvicorn bench.legacy_sdk:app`` (or ``:app_json``); the endpoint is ``/mcp``.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel


class Confirm(BaseModel):
    ok: bool


def build() -> MCPServer:
    server = MCPServer("legacy-sdk")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    async def confirm_twice(item: str, ctx: Context) -> str:
        first = await ctx.elicit(f"Confirm {item}?", Confirm)
        if first.action != "accept" or not first.data.ok:
            return f"kept {item}"
        second = await ctx.elicit(f"Really {item}?", Confirm)
        ok = second.action == "accept" and second.data.ok
        return f"{'done' if ok else 'kept'} {item}"

    return server


app = build().streamable_http_app()
app_json = build().streamable_http_app(json_response=True)
