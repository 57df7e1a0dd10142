"""The app's ASGI lifespan, run as a server runs it: startup before the first message, shutdown at exit.

Like uvicorn's ``lifespan="auto"``: an app that does not speak the lifespan protocol (it raises
on the scope, or returns at once) simply has none. A startup that fails is an error that stops
the process before it reads a message. The state the startup fills in (``yield {...}`` from a
FastAPI lifespan) is handed to every request, as uvicorn does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.types import ASGIApp, Message

logger = logging.getLogger("fastapi_mrtr.stdio")


class LifespanError(RuntimeError):
    """The app's startup failed (``lifespan.startup.failed``, or it raised while starting)."""


class Lifespan:
    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self.state: dict[str, Any] = {}
        self._to_app: asyncio.Queue[Message] = asyncio.Queue()
        self._from_app: asyncio.Queue[Message | None] = asyncio.Queue()  # None: the app returned
        self._task: asyncio.Task[None] | None = None
        self._running = False
        self._answered = False  # the app answered the startup (complete or failed)

    async def startup(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self.state}
        self._task = asyncio.ensure_future(self._run(scope))
        await self._to_app.put({"type": "lifespan.startup"})
        answer = await self._from_app.get()
        if answer is None:
            return  # the app has no lifespan
        if answer["type"] == "lifespan.startup.failed":
            raise LifespanError(f"the app's startup failed: {answer.get('message') or '(no message)'}")
        self._running = True

    async def shutdown(self, timeout: float = 10.0) -> None:
        if not self._running:
            return
        self._running = False
        await self._to_app.put({"type": "lifespan.shutdown"})
        try:
            answer = await asyncio.wait_for(self._from_app.get(), timeout)
        except asyncio.TimeoutError:
            logger.error("the app's shutdown did not finish within %.0f seconds", timeout)
            return
        if answer is not None and answer["type"] == "lifespan.shutdown.failed":
            logger.error("the app's shutdown failed: %s", answer.get("message") or "(no message)")

    async def _run(self, scope: dict[str, Any]) -> None:
        try:
            await self._app(scope, self._to_app.get, self._send)
        except Exception as exc:
            if self._running:
                logger.exception("the app's lifespan raised")
            elif not self._answered:  # it raised on the scope: an app without a lifespan (uvicorn's "auto")
                logger.info("the app does not run a lifespan (%r): serving without one", exc)
        finally:
            await self._from_app.put(None)

    async def _send(self, message: Message) -> None:
        self._answered = True
        await self._from_app.put(message)
