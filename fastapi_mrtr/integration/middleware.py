"""The plugin's pure ASGI middleware on the host app.

* Serves ``/mcp`` as well as ``/mcp/`` (Starlette's ``Mount`` would answer the first with a
  307 redirect, which MCP clients do not follow for POST).
* Catches the suspension signal of a plain REST call and answers 428 ``input_required``.
* Lets the signal of an in-process MCP call through: the dispatcher reads the call record.
"""

from __future__ import annotations

import logging
from typing import Protocol

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fastapi_mrtr.engine.call import SCOPE_KEY, catch_suspension
from fastapi_mrtr.engine.flow import StateGuard
from fastapi_mrtr.integration import fastapi_compat as compat
from fastapi_mrtr.integration.call_runner import CallRunner
from fastapi_mrtr.integration.rest import REST_KEY, RestCall, before_reply, input_required_body
from fastapi_mrtr.transport.http import send_json
from fastapi_mrtr.wire.json_codec import encode


class ServedEndpoint(Protocol):
    """What the middleware needs of the ``MCP`` it serves (the app module builds on this one)."""

    app: FastAPI
    state_guard: StateGuard
    call_runner: CallRunner

    @property
    def mount_path(self) -> str | None: ...

    def start(self) -> None: ...

    async def aclose(self) -> None: ...

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...


logger = logging.getLogger("fastapi_mrtr")


class MrtrMiddleware:
    def __init__(self, app: ASGIApp, server: ServedEndpoint) -> None:
        self.app = app
        self.server = server
        # Where in-process tool calls may enter. When the next layer is FastAPI's own stack, no user
        # middleware sits between this one and the routes, so a request for the endpoint can skip
        # the exception middleware and the router (the endpoint answers every error itself): it
        # sees the same middleware as through the mount, at a fraction of the cost.
        self._serve_directly = server.call_runner.attach(app, MrtrMiddleware)

    def _closing_on_shutdown(self, receive: Receive) -> Receive:
        """The app's lifespan ``receive``: at startup, the endpoint starts (the relay listens, so a
        replica that has served no MCP request yet still relays what it publishes); on shutdown,
        it lets go of what it holds first (2025-era calls, the relay's connections). A mounted
        endpoint sees no lifespan itself."""

        async def wrapped() -> Message:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.server.start()
            elif message["type"] == "lifespan.shutdown":
                await self.server.aclose()
            return message

        return wrapped

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._closing_on_shutdown(receive), send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if SCOPE_KEY in scope:  # an in-process tool call: its dispatcher handles suspension
            await self.app(scope, receive, send)
            return
        mount = self.server.mount_path
        if mount is not None and scope["path"] in (mount, mount + "/"):
            if self._serve_directly:
                await self.server(compat.mounted_scope(scope, mount), receive, send)
                return
            if scope["path"] == mount:
                scope = {**scope, "path": mount + "/", "raw_path": (mount + "/").encode()}
        rest = scope[REST_KEY] = RestCall(self.server.state_guard)
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start" and not started:
                started = True
                await before_reply(scope, message["status"])
            await send(message)

        with catch_suspension:  # the record says whether the endpoint asked
            await self.app(scope, receive, tracking_send)
        if rest.round is None or not rest.stopped_to_ask():
            return
        if started:
            logger.error("an endpoint asked for input after its response had started; the input request is lost")
            return
        status, body = input_required_body(rest.round)
        await before_reply(scope, status)
        await send_json(send, status, encode(body))
