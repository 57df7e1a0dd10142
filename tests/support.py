"""Test support: real servers on loopback that stop by themselves (uvicorn in this process, Node scripts)."""

from __future__ import annotations

import contextlib
import selectors
import socket
import sqlite3
import subprocess
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


@contextlib.contextmanager
def node_script(node: str, script: Path, *, timeout: float, quiet: bool = False) -> Iterator[int]:
    """Run ``node SCRIPT PORT`` on a free port of 127.0.0.1; yields the port once it listens.

    The script prints ``READY <port>`` when it listens. It runs in its own folder, so its bare
    imports resolve to that folder's ``node_modules``, and holds our end of its stdin, so it exits
    if this process dies. Its stderr shows in pytest's output unless ``quiet``. Leaving the block
    stops it: SIGTERM, then SIGKILL after five seconds.
    """
    port = free_port()
    process = subprocess.Popen(
        [node, str(script), str(port)],
        cwd=script.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet else None,
        text=True,
    )
    try:
        _wait_ready(process, script.name, f"READY {port}", timeout)
        yield port
    finally:
        _stop(process, timeout=5.0)


def _wait_ready(process: subprocess.Popen[str], name: str, expected: str, timeout: float) -> None:
    """Read the script's stdout until its ``expected`` line, or fail after ``timeout``."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                continue
            line = process.stdout.readline()
            if line == "":  # EOF: the script exited before listening
                raise RuntimeError(f"{name} exited with {process.wait()} before it was ready")
            if line.strip() == expected:
                return
    raise RuntimeError(f"{name} did not print {expected!r} within {timeout}s")


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
