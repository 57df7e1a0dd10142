"""Fixtures for the client tests: the SDK peer on real uvicorn, in-process, and a wire recorder."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
for path in (ROOT, HERE):  # the package from this checkout, and sdk_server next to us
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import hostile_server  # noqa: E402
import sdk_server  # noqa: E402
from client_helpers import Wire  # noqa: E402


@pytest.fixture
def wire() -> Wire:
    return Wire()


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextlib.contextmanager
def _serve(app: Any, log_level: str = "warning") -> Iterator[str]:
    """``app`` served by real uvicorn on 127.0.0.1 (a free port) in a background thread."""
    sock = _free_socket()
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level=log_level, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


@pytest.fixture(scope="session")
def sdk_url() -> Iterator[str]:
    """The SDK peer on real uvicorn."""
    with _serve(sdk_server.build_app()) as base:
        yield f"{base}/mcp"


@pytest.fixture(scope="session")
def hostile_url() -> Iterator[str]:
    """The hostile peer (``hostile_server.py``) on real uvicorn; append ``/<scenario>``."""
    # "critical": uvicorn logs an error for each stream the peer cuts on purpose.
    with _serve(hostile_server.app, log_level="critical") as base:
        yield base
