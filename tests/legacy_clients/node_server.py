"""js/legacy_server.mjs as a subprocess: a 2025-era-only MCP server on the official TypeScript SDK.

``with node_legacy_server() as url:`` starts ``node legacy_server.mjs PORT`` on a free port of
127.0.0.1, waits for its ``READY <port>`` line and yields ``http://127.0.0.1:PORT/mcp``; leaving
the block stops it. The server holds our end of its stdin, so it also exits if this process dies.

What it offers (one McpServer per session): tools ``echo(text)``, ``place_order(item, quantity)``
(two form elicitations: ``{confirmed: boolean}``, then ``{speed: "standard" | "express"}``;
structuredContent ``{status, item, quantity, speed}``), ``ask_model(prompt)`` (sampling),
``list_my_roots()`` (roots/list), ``slow(steps)`` (progress when asked, a log line per step); the
prompt ``greet(name)`` and the resource ``res://hello``. Server requests of a call arrive on that
call's SSE response stream.

It knows only the 2025 era. A POST without ``Mcp-Session-Id`` that is not ``initialize`` (so a
``server/discover`` probe) is answered, as in the SDK's own stateful example, with HTTP 400 and
``{"jsonrpc": "2.0", "error": {"code": -32000, "message": "Bad Request: No valid session ID
provided"}, "id": null}`` (``application/json``). Inside a session ``server/discover`` gets the
JSON-RPC error -32601 "Method not found"; an unknown or ended session id gets 404 with -32001.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

from tests.support import node_script

JS = Path(__file__).with_name("js")
SCRIPT = JS / "legacy_server.mjs"
SDK = JS / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"


@contextlib.contextmanager
def node_legacy_server(*, timeout: float = 20.0) -> Iterator[str]:
    """Run js/legacy_server.mjs on a free loopback port; yields its MCP endpoint URL."""
    node = shutil.which("node")
    if node is None or not SDK.is_file():
        raise RuntimeError(f"node ({node}) or {SDK} missing: run bash scripts/install-js-client.sh")
    with node_script(node, SCRIPT, timeout=timeout) as port:
        yield f"http://127.0.0.1:{port}/mcp"
