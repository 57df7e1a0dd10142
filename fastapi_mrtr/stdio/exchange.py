"""One HTTP request to the app, in this process: sent through the whole ASGI app, answered as it streams.

The request goes in at the top of the FastAPI app, as uvicorn would hand it over, so the app's
middleware, dependencies, security and exception handlers all run, and the lifespan state is in
the scope (a copy per request, as uvicorn gives it). The answer is read as it is sent: its status
and headers, then the body piece by piece, so an SSE stream's events reach the pipe as they come.

"Closing the connection" is :meth:`HttpExchange.disconnect`: the app's next ``receive()`` returns
``http.disconnect``, which the MCP endpoint treats as a cancel (the HTTP transport's rule).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.types import ASGIApp, Message

logger = logging.getLogger("fastapi_mrtr.stdio")

PEER = ("127.0.0.1", 0)  # the request never crossed a network; a loopback peer is what it is closest to


class HttpExchange:
    """A request of ``method`` to ``path`` with ``headers`` and ``body``, running in the app once started."""

    def __init__(
        self,
        app: ASGIApp,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes = b"",
        state: Mapping[str, Any] | None = None,
    ) -> None:
        self._app = app
        self._body = body
        self._body_sent = False
        self._gone = asyncio.Event()
        self._abandoned = False
        self._events: asyncio.Queue[Message | None] = asyncio.Queue(maxsize=16)  # None: the app returned
        self._ended = False
        self.status = 0
        self.headers: dict[str, str] = {}
        self.failure: BaseException | None = None  # what the app raised, if it did
        raw_headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]
        if body:
            raw_headers.append((b"content-length", str(len(body)).encode()))
        self._scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode("utf-8"),
            "query_string": b"",
            "root_path": "",
            "headers": raw_headers,
            "client": PEER,
            "server": PEER,
            "state": dict(state or {}),
        }
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            await self._app(self._scope, self._receive, self._send)
        except Exception as exc:  # the app's error: the bridge answers the request with an error instead
            self.failure = exc
            if not self._abandoned:
                logger.exception("the app raised while answering %s %s", self._scope["method"], self._scope["path"])
        finally:
            self._gone.set()  # nothing may wait for the client any more
            if not self._abandoned:
                await self._events.put(None)

    async def _receive(self) -> Message:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self._body, "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: Message) -> None:
        if self._abandoned or (self._gone.is_set() and message["type"] != "http.response.start"):
            return  # the client is gone: what the app still sends goes nowhere, as on a closed socket
        await self._events.put(message)

    async def response(self) -> bool:
        """Wait for the status and headers; False when the app returned without starting a response."""
        while not self._ended:
            message = await self._next()
            if message is None:
                return False
            if message["type"] == "http.response.start":
                self.status = int(message["status"])
                self.headers = {
                    name.decode("latin-1").lower(): value.decode("latin-1")
                    for name, value in message.get("headers", [])
                }
                return True
        return False

    async def body(self) -> AsyncIterator[bytes]:
        """The body's pieces as the app sends them, until its last piece (or the app returns)."""
        while not self._ended:
            message = await self._next()
            if message is None:
                return
            if message["type"] == "http.response.body":
                chunk = message.get("body", b"")
                if chunk:
                    yield bytes(chunk)
                if not message.get("more_body", False):
                    return

    async def read(self, limit: int) -> bytes:
        """The whole body, at most ``limit`` bytes of it (a longer one is cut: only errors are read so)."""
        data = bytearray()
        async for chunk in self.body():
            data += chunk[: max(limit - len(data), 0)]
        return bytes(data)

    async def _next(self) -> Message | None:
        message = await self._events.get()
        if message is None:
            self._ended = True
        return message

    def disconnect(self) -> None:
        """The client closes the connection: the app sees ``http.disconnect`` on its next ``receive()``."""
        self._gone.set()

    async def abandon(self, wait: float = 0.0) -> None:
        """Stop reading: disconnect, let what the app still sends fall away, and wait (a little) for it to return."""
        self.disconnect()
        self._abandoned = True
        while not self._events.empty():
            self._events.get_nowait()
        if self._task is not None and wait > 0:
            await asyncio.wait({self._task}, timeout=wait)

    async def stop(self, grace: float) -> None:
        """Close the connection, and cancel the app's work if it has not ended ``grace`` seconds later.

        The endpoint notices a closed connection where it streams (an SSE answer, a 2025-era call),
        and stops the work cleanly; a plain JSON answer is computed without watching it (as on
        HTTP), so that work is cancelled outright."""
        self.disconnect()
        if self._task is None or self._task.done():
            return
        await asyncio.wait({self._task}, timeout=grace)
        if not self._task.done():
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=grace)

    @property
    def finished(self) -> bool:
        return self._task is not None and self._task.done()
