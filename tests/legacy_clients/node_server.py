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
import selectors
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support import free_port

JS = Path(__file__).with_name("js")
SCRIPT = JS / "legacy_server.mjs"
SDK = JS / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"


def _wait_ready(process: subprocess.Popen[str], port: int, timeout: float) -> None:
    """Read the server's stdout until its ``READY <port>`` line, or fail after ``timeout``."""
    assert process.stdout is not None
    expected = f"READY {port}"
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                continue
            line = process.stdout.readline()
            if line == "":  # EOF: the server exited before listening
                raise RuntimeError(f"legacy_server.mjs exited with {process.wait()} before it was ready")
            if line.strip() == expected:
                return
    raise RuntimeError(f"legacy_server.mjs did not print {expected!r} within {timeout}s")


def _stop(process: subprocess.Popen[str], timeout: float) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``timeout``."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()


@contextlib.contextmanager
def node_legacy_server(*, timeout: float = 20.0) -> Iterator[str]:
    """Run js/legacy_server.mjs on a free loopback port; yields its MCP endpoint URL."""
    node = shutil.which("node")
    if node is None or not SDK.is_file():
        raise RuntimeError(f"node ({node}) or {SDK} missing: run bash scripts/install-js-client.sh")
    port = free_port()
    # cwd is the js folder so the script's bare imports resolve to its node_modules; stderr is
    # inherited so pytest shows what the server complained about.
    process = subprocess.Popen(
        [node, str(SCRIPT), str(port)],
        cwd=JS,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_ready(process, port, timeout)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        _stop(process, timeout=5.0)
