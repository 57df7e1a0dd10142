"""Test support: real uvicorn servers on loopback that stop by themselves."""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}, "roots": {}},
}


def loopback_socket() -> socket.socket:
    """A TCP socket bound to a free port of 127.0.0.1, for a server in this process to listen on.

    Handing uvicorn the bound socket leaves no moment in which another process can take the port.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def free_port() -> int:
    """A port of 127.0.0.1 that was free a moment ago, for a server started as a subprocess."""
    with loopback_socket() as sock:
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def running_server(app: Any, *, timeout: float = 20.0, log_level: str = "warning") -> Iterator[str]:
    """Serve ``app`` (an ASGI app or "module:attr") with uvicorn on 127.0.0.1; yields the base URL."""
    with loopback_socket() as sock, serving_on(sock, app, timeout=timeout, log_level=log_level):
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextlib.contextmanager
def serving_on(sock: socket.socket, app: Any, *, timeout: float = 20.0, log_level: str = "warning") -> Iterator[None]:
    """Serve ``app`` with uvicorn on a bound socket until the block ends (for an app that must know
    its own URL before it is built: bind, build, then serve)."""
    config = uvicorn.Config(app, log_level=log_level, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout)


def rpc_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
        "Accept": "application/json, text/event-stream",
    }
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def rpc_body(method: str, params: dict[str, Any] | None = None, *, request_id: int = 1, meta: Any = None) -> Any:
    params = dict(params or {})
    params["_meta"] = META if meta is None else meta
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def db_rows(database: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """The rows ``sql`` selects from a SQLite file (e.g. the example bookshop's database)."""
    with sqlite3.connect(database) as connection:
        return list(connection.execute(sql, params).fetchall())


async def read_asgi_body(receive: Any) -> bytes:
    """The whole body of one ASGI HTTP request, however many messages it comes in (raw ASGI peers)."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body
