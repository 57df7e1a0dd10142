"""The two ends of the pipe: newline-delimited messages read from one file descriptor, written to another.

Both ends run their blocking ``os.read``/``os.write`` on a daemon thread of their own, so the
event loop never blocks on the client, and a client that stops reading or writing cannot keep the
process from exiting (a thread of the default executor would be joined at exit; a daemon thread is
not). Each end hands work across with a bounded queue, so a client that writes faster than the
app answers, or reads slower than it writes, holds back its side instead of growing memory.

A line longer than ``max_line_bytes`` is never held whole: the reader keeps what a reply needs of
it (:class:`~fastapi_mrtr.stdio.oversized.TopLevelSkeleton`) and drops the rest as it streams by.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass

from fastapi_mrtr.stdio.oversized import TopLevelSkeleton

CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class Oversized:
    """A line that went past the limit: its length read so far and the top-level fields it had."""

    length: int
    skeleton: TopLevelSkeleton


class LineReader:
    """Lines of a file descriptor (without their newline), or :class:`Oversized` for a line past the limit."""

    def __init__(self, fd: int, max_line_bytes: int) -> None:
        self._fd = fd
        self._limit = max_line_bytes
        self._chunks: asyncio.Queue[bytes] = asyncio.Queue(maxsize=4)  # b"" marks the end of the input
        self._loop = asyncio.get_running_loop()
        threading.Thread(target=self._pump, name="mrtr-stdin", daemon=True).start()

    def _pump(self) -> None:
        """On the thread: read chunks until end of file, handing each to the loop (blocking when it is behind)."""
        while True:
            try:
                chunk = os.read(self._fd, CHUNK_BYTES)
            except OSError:
                chunk = b""
            try:
                asyncio.run_coroutine_threadsafe(self._chunks.put(chunk), self._loop).result()
            except (RuntimeError, asyncio.CancelledError):
                return  # the loop is gone: nobody reads any more
            if not chunk:
                return

    async def lines(self) -> AsyncIterator[bytes | Oversized]:
        pending = bytearray()
        dropping: TopLevelSkeleton | None = None  # set while the rest of an over-long line streams by
        dropped = 0
        while True:
            chunk = await self._chunks.get()
            if not chunk:
                if dropping is not None:
                    yield Oversized(dropped, dropping)
                elif pending.strip():
                    yield bytes(pending)  # a last line without its newline still counts
                return
            start = 0
            while start < len(chunk):
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end == -1 else chunk[start:end]
                start = len(chunk) if end == -1 else end + 1
                if dropping is not None:
                    dropping.feed(piece)
                    dropped += len(piece)
                elif len(pending) + len(piece) > self._limit:
                    dropping = TopLevelSkeleton()
                    dropping.feed(bytes(pending))
                    dropping.feed(piece)
                    dropped = len(pending) + len(piece)
                    pending.clear()
                else:
                    pending += piece
                if end == -1:
                    continue
                if dropping is not None:
                    yield Oversized(dropped, dropping)
                    dropping, dropped = None, 0
                else:
                    line = bytes(pending).rstrip(b"\r")
                    pending.clear()
                    if line.strip():
                        yield line


class LineWriter:
    """Writes each message as one line, in the order given; ``write`` waits while the client is behind."""

    def __init__(self, fd: int, max_pending: int = 256) -> None:
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._room = asyncio.Semaphore(max_pending)
        self._lines: queue.SimpleQueue[tuple[bytes, asyncio.Future[None]] | None] = queue.SimpleQueue()
        self._last: asyncio.Future[None] | None = None
        self.broken = False  # the client closed its end of the pipe
        threading.Thread(target=self._drain, name="mrtr-stdout", daemon=True).start()

    async def write(self, line: bytes) -> None:
        """Queue ``line`` (no newline in it: JSON text escapes them) to be written with its newline."""
        if self.broken:
            return
        await self._room.acquire()
        done: asyncio.Future[None] = self._loop.create_future()
        done.add_done_callback(lambda _: self._room.release())
        self._last = done
        self._lines.put((line + b"\n", done))

    async def flush(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) until every queued line is written."""
        if self._last is not None and not self._last.done():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._last), timeout)

    def close(self) -> None:
        self._lines.put(None)

    def _drain(self) -> None:
        while (item := self._lines.get()) is not None:
            data, done = item
            try:
                view = memoryview(data)
                while view and not self.broken:
                    view = view[os.write(self._fd, view) :]
            except OSError:
                self.broken = True
            with contextlib.suppress(RuntimeError):  # the loop closed at exit
                self._loop.call_soon_threadsafe(_settle, done)


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
