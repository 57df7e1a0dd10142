"""Serve an app whose configuration needs its own URL (the OAuth resource URI) on real uvicorn."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from tests.support import loopback_socket, serving_on


@contextlib.contextmanager
def serving(build: Callable[[str], Any], *, timeout: float = 20.0) -> Iterator[tuple[Any, str]]:
    """Bind a loopback port, call ``build(base_url)`` for the app, serve it; yields (app, base URL)."""
    with loopback_socket() as sock:
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        built = build(base)
        with serving_on(sock, getattr(built, "app", built), timeout=timeout):
            yield built, base
