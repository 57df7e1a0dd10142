"""The GET stream of a 2025-era session, read in the background.

Some servers send their requests and notifications there rather than on a call's stream. It is
opened after ``initialize`` when the client runs as an ``async with`` block, which owns the task
that reads it; a server that offers none (405, 404, 400) is fine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import httpx

from fastapi_mrtr.client._errors import InvalidServerResponseError, StreamClosedError
from fastapi_mrtr.client._legacy.http import SessionHttp
from fastapi_mrtr.client._legacy.server_requests import OpenRequests, ServerRequests
from fastapi_mrtr.client._transport import NotificationSink, decode_json, iter_sse_events, stream_lines
from fastapi_mrtr.wire.protocol import JSONObject

logger = logging.getLogger("fastapi_mrtr.client")

LISTENER_WAIT = 5.0  # seconds a call waits for the GET stream's headers before it goes ahead

# Starts a background task in the client's task group; False when there is none to start it in.
Spawner = Callable[[Callable[[], Coroutine[Any, Any, None]]], bool]


class SessionListener:
    """Reads the session's GET stream while it is open; :meth:`open` again replaces it."""

    def __init__(
        self,
        http: SessionHttp,
        server_requests: ServerRequests,
        notifications: NotificationSink | None,
        spawn: Spawner,
    ) -> None:
        self._http = http
        self._server_requests = server_requests
        self._notifications = notifications
        self._spawn = spawn
        self._scope: anyio.CancelScope | None = None

    async def open(self) -> None:
        """Open the GET stream in the background and wait (briefly) until the server has it."""
        self.stop()
        ready = anyio.Event()
        scope = anyio.CancelScope()

        async def run() -> None:
            with scope:
                await self._listen(ready)
            ready.set()

        if not self._spawn(run):
            return
        self._scope = scope
        with anyio.move_on_after(LISTENER_WAIT):
            await ready.wait()

    def stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()
            self._scope = None

    async def _listen(self, ready: anyio.Event) -> None:
        try:
            response = await self._http.open_stream({})
        except (httpx.HTTPError, StreamClosedError) as exc:
            logger.info("no GET stream for the MCP session: %s", exc)
            return
        try:
            ready.set()
            open_requests = OpenRequests("GET")
            async with anyio.create_task_group() as answers:
                async for event in iter_sse_events(stream_lines(response, "GET")):
                    message = decode_json(event.data) if event.data else None
                    if not isinstance(message, dict) or "method" not in message:
                        continue  # priming events; anything else has no place here
                    if "id" in message:
                        open_requests.admit()  # too many open ends this stream, logged below
                        ticket = self._server_requests.take_turn(message)
                        answers.start_soon(self._answer, message, ticket, open_requests)
                    elif self._notifications is not None:
                        await self._notifications(message)
        except (StreamClosedError, InvalidServerResponseError, httpx.HTTPError) as exc:
            logger.info("the MCP session's GET stream ended: %s", exc)
        finally:
            await response.aclose()

    async def _answer(self, message: JSONObject, ticket: int | None, open_requests: OpenRequests) -> None:
        try:
            await self._server_requests.answer_in_background(message, ticket)
        finally:
            open_requests.finish()
