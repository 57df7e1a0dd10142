"""Serve an app whose configuration needs its own URL (the OAuth resource URI) on real uvicorn."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn

from tests.support import loopback_socket


@contextlib.contextmanager
def serving(build: Callable[[str], Any], *, timeout: float = 20.0) -> Iterator[tuple[Any, str]]:
    """Bind a loopback port, call ``build(base_url)`` for the app, serve it; yields (app, base URL)."""
    with loopback_socket() as sock:
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        built = build(base)
        asgi = getattr(built, "app", built)
        server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        try:
            yield built, base
        finally:
            server.should_exit = True
            thread.join(timeout)
