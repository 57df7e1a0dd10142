"""``serve_stdio(app)``: run the app's MCP endpoint over this process's stdin and stdout.

The process's standard output belongs to the protocol: before anything runs, the real stdout is
set aside (a duplicate of its file descriptor) for JSON-RPC lines only, and file descriptor 1
and ``sys.stdout`` are pointed at stderr, so a ``print()`` in a route, a library writing to
stdout, even a child process, lands in the log instead of corrupting the stream.

Lifecycle: the app's lifespan starts before the first line is read; the process ends on
end-of-file on stdin (the spec's shutdown signal) or on SIGTERM/SIGINT. At the end, requests
still running get ``grace`` seconds after end-of-file (none after a signal), the 2025-era session
(if any) is ended, and the app's lifespan shutdown runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator

from fastapi import FastAPI

from fastapi_mrtr.app import MCP
from fastapi_mrtr.stdio.bridge import StdioBridge
from fastapi_mrtr.stdio.lifespan import Lifespan
from fastapi_mrtr.stdio.pipe import LineReader, LineWriter
from fastapi_mrtr.stdio.target import Identity, find_target, identity_from_environment

logger = logging.getLogger("fastapi_mrtr.stdio")

EOF_GRACE = 1.0  # seconds for running requests after stdin closes (clients wait about 2 s before SIGTERM)


def serve_stdio(
    app: FastAPI | MCP,
    *,
    path: str | None = None,
    identity: Identity | None = None,
    max_line_bytes: int | None = None,
    grace: float = EOF_GRACE,
) -> None:
    """Serve the MCP endpoint mounted in ``app`` over stdin/stdout until stdin closes or a signal comes.

    ``path``: the endpoint's mount path, when the app mounts several. ``identity``: the headers
    that say who this process acts for, asked for on every request (default:
    ``Authorization: $MRTR_STDIO_AUTHORIZATION`` when that variable is set), so the app's security
    dependencies see the same credentials an HTTP client would send. ``max_line_bytes``: the
    longest message read (default: the endpoint's ``max_body_bytes``). Blocks; runs its own loop.
    """
    with protocol_stdout() as (stdin_fd, stdout_fd):
        asyncio.run(
            serve_stdio_async(
                app,
                stdin_fd=stdin_fd,
                stdout_fd=stdout_fd,
                path=path,
                identity=identity,
                max_line_bytes=max_line_bytes,
                grace=grace,
            )
        )


async def serve_stdio_async(
    app: FastAPI | MCP,
    *,
    stdin_fd: int,
    stdout_fd: int,
    path: str | None = None,
    identity: Identity | None = None,
    max_line_bytes: int | None = None,
    grace: float = EOF_GRACE,
) -> None:
    """:func:`serve_stdio` on the running loop, reading ``stdin_fd`` and writing ``stdout_fd`` (kept open)."""
    target = find_target(app, path)
    limit = max_line_bytes or (target.mcp.options.max_body_bytes if target.mcp is not None else 4 * 1024 * 1024)
    lifespan = Lifespan(target.app)
    await lifespan.startup()
    writer = LineWriter(stdout_fd)
    bridge = StdioBridge(target, writer.write, identity or identity_from_environment, lifespan.state, limit)
    stopped = asyncio.Event()
    signalled = _on_signals(stopped)
    reading = asyncio.ensure_future(_read(LineReader(stdin_fd, limit), bridge))
    logger.info("serving %s over stdio", target.path)
    try:
        await asyncio.wait({reading, asyncio.ensure_future(stopped.wait())}, return_when=asyncio.FIRST_COMPLETED)
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading
        await bridge.close(0.0 if stopped.is_set() else grace)
        await writer.flush(2.0)
    finally:
        for signum in signalled:
            asyncio.get_running_loop().remove_signal_handler(signum)
        await lifespan.shutdown()
        writer.close()


async def _read(reader: LineReader, bridge: StdioBridge) -> None:
    async for line in reader.lines():
        await bridge.accept(line)


def _on_signals(stopped: asyncio.Event) -> list[int]:
    """SIGTERM and SIGINT end the serving loop cleanly (shutdown runs); returns the signals handled."""
    loop = asyncio.get_running_loop()
    handled: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
            loop.add_signal_handler(signum, stopped.set)
            handled.append(signum)
    return handled


@contextlib.contextmanager
def protocol_stdout() -> Iterator[tuple[int, int]]:
    """Keep the real stdout for the protocol; send everything else written to stdout to stderr.

    Yields the file descriptors of the protocol's input and output. Enter it before the app is
    imported, so that what the import prints goes to stderr too (``python -m fastapi_mrtr.stdio``
    does)."""
    sys.stdout.flush()
    protocol = os.dup(1)
    saved_stdout = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield 0, protocol
    finally:
        sys.stdout.flush()
        sys.stdout = saved_stdout
        os.dup2(protocol, 1)
        os.close(protocol)
