"""One 2025-era session: ``initialize``, requests in the session, and its end (DELETE).

A request whose session the server no longer knows (404) re-initialises once and is sent again.
When a call is abandoned (a handler failed, a timeout, the caller cancelled) the server is told
with ``notifications/cancelled``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from fastapi_mrtr.client._errors import InvalidServerResponseError, StatusCodeError
from fastapi_mrtr.client._handlers import InputHandlers
from fastapi_mrtr.client._legacy.call_stream import CallStream
from fastapi_mrtr.client._legacy.handshake import (
    INITIALIZED,
    ServerHello,
    initialize_message,
    initialize_params,
    traced_initialize,
)
from fastapi_mrtr.client._legacy.http import SESSION_HEADER, SessionGoneError, SessionHttp
from fastapi_mrtr.client._legacy.listener import SessionListener, Spawner
from fastapi_mrtr.client._legacy.server_requests import ServerRequests
from fastapi_mrtr.client._transport import SSE_MEDIA, HttpRpc, NotificationSink, media_type
from fastapi_mrtr.client.options import ClientOptions
from fastapi_mrtr.telemetry.client import client_notification, client_session_ended
from fastapi_mrtr.wire.errors import McpError
from fastapi_mrtr.wire.protocol import Implementation, JSONObject

logger = logging.getLogger("fastapi_mrtr.client")


class LegacySession:
    """One 2025-era session with one endpoint: its id, version and what the server said of itself.

    Not started until :meth:`initialize`; :meth:`request` re-initialises once when the server
    forgets the session. Server-to-client requests are answered by ``handlers`` while the call
    that brought them is in flight, and on the session's GET stream while ``spawn`` can run it.
    """

    def __init__(
        self,
        rpc: HttpRpc,
        handlers: InputHandlers,
        options: ClientOptions,
        headers: Callable[[], Mapping[str, str]],
        next_id: Callable[[], int],
        notifications: NotificationSink | None,
        spawn: Spawner,
    ) -> None:
        self._handlers = handlers
        self._options = options
        self._next_id = next_id
        self._http = SessionHttp(rpc, headers, options.telemetry)
        self._server_requests = ServerRequests(handlers, options, self._http)
        self._listener = SessionListener(self._http, self._server_requests, notifications, spawn)
        self._lock = anyio.Lock()
        self.server_info: Implementation | None = None
        self.server_capabilities: JSONObject = {}
        self.instructions: str | None = None
        self._started_at = 0.0  # time.monotonic() when initialize was answered

    @property
    def session_id(self) -> str | None:
        return self._http.session_id

    @property
    def protocol_version(self) -> str | None:
        """The version ``initialize`` negotiated; ``None`` until then and once the session ends."""
        return self._http.protocol_version

    @property
    def started(self) -> bool:
        return self.protocol_version is not None

    # --- lifecycle -------------------------------------------------------------------------

    async def initialize(self) -> None:
        """``initialize`` then ``notifications/initialized``; idempotent under concurrency."""
        async with self._lock:
            if not self.started:
                await self._handshake()

    async def _handshake(self) -> None:
        self._http.session_id = None
        params = initialize_params(self._options, self._handlers)

        def send(meta: Mapping[str, Any] | None) -> Awaitable[JSONObject]:
            return self._exchange(initialize_message(self._next_id(), params, meta), None)

        url = str(self._http.rpc.url)
        hello = ServerHello.parse(await traced_initialize(self._options, params, url, send))
        self._started_at = time.monotonic()
        self.server_info = hello.server_info
        self.server_capabilities = hello.capabilities
        self.instructions = hello.instructions
        self._http.protocol_version = hello.protocol_version
        await client_notification(
            self._options.telemetry, INITIALIZED, url, hello.protocol_version, self._http.post_message
        )
        await self._listener.open()

    async def close(self) -> None:
        """End the session on the server (DELETE); a server that does not allow it is fine."""
        self._listener.stop()
        session, version = self._http.session_id, self._http.protocol_version
        self._http.session_id = self._http.protocol_version = None
        if session is not None:
            await self._http.delete(session)
        if version is not None:
            client_session_ended(self._options.telemetry, self._started_at, str(self._http.rpc.url), version)

    # --- requests --------------------------------------------------------------------------

    async def request(self, method: str, params: JSONObject, sink: NotificationSink | None) -> JSONObject:
        """Send one request in the session and return its ``result``."""
        await self.initialize()
        for attempt in range(2):
            message: JSONObject = {"jsonrpc": "2.0", "id": self._next_id(), "method": method, "params": params}
            try:
                return await self._call(message, sink)
            except SessionGoneError:
                if attempt:
                    raise StatusCodeError(
                        404, "the server forgot the MCP session again after a new initialize"
                    ) from None
                logger.info("the MCP session ended on the server; initializing a new one")
                async with self._lock:
                    self._http.protocol_version = None
                    await self._handshake()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _call(self, message: JSONObject, sink: NotificationSink | None) -> JSONObject:
        try:
            return await self._exchange(message, sink)
        except SessionGoneError:
            raise
        except BaseException as exc:
            # Abandoned mid-flight: tell the server so it stops waiting for us.
            if not isinstance(exc, McpError | InvalidServerResponseError | StatusCodeError):
                await self._http.cancel(message["id"], f"the client gave up: {type(exc).__name__}")
            raise

    async def _exchange(self, message: JSONObject, sink: NotificationSink | None) -> JSONObject:
        response = await self._http.post_request(message)
        try:
            if message["method"] == "initialize" and response.is_success:
                self._http.session_id = response.headers.get(SESSION_HEADER) or None
            if response.is_success and media_type(response) == SSE_MEDIA:
                return await CallStream(response, message["id"], sink, self._http, self._server_requests).read()
            return await self._http.rpc.read(response, message["id"], sink)
        finally:
            await response.aclose()
