"""A 2025-era session over a stdio pipe: ``initialize``, then requests on the same pipe.

The session is the process (the spec scopes a stdio session to it): no session id, no GET stream,
nothing to DELETE. The server's own requests arrive on the pipe between our answers and are
answered by the :class:`~fastapi_mrtr.client._stdio.connection.StdioConnection`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from fastapi_mrtr.client._handlers import InputHandlers
from fastapi_mrtr.client._legacy.handshake import (
    INITIALIZED,
    ServerHello,
    initialize_message,
    initialize_params,
    traced_initialize,
)
from fastapi_mrtr.client._stdio.connection import StdioConnection
from fastapi_mrtr.client._transport import NotificationSink
from fastapi_mrtr.client.options import ClientOptions
from fastapi_mrtr.telemetry.client import client_notification, client_session_ended
from fastapi_mrtr.wire.protocol import Implementation, JSONObject


class StdioLegacySession:
    """One 2025-era session with a stdio server; started by :meth:`initialize`."""

    def __init__(
        self, connection: StdioConnection, handlers: InputHandlers, options: ClientOptions, next_id: Callable[[], int]
    ) -> None:
        self._connection = connection
        self._handlers = handlers
        self._options = options
        self._next_id = next_id
        self._lock = anyio.Lock()
        self._hello: ServerHello | None = None
        self._started_at = 0.0  # time.monotonic() when initialize was answered

    @property
    def protocol_version(self) -> str | None:
        return self._hello.protocol_version if self._hello is not None else None

    @property
    def server_info(self) -> Implementation | None:
        return self._hello.server_info if self._hello is not None else None

    @property
    def server_capabilities(self) -> JSONObject:
        return self._hello.capabilities if self._hello is not None else {}

    async def initialize(self) -> None:
        """``initialize`` then ``notifications/initialized``; once, however many ask at once."""
        async with self._lock:
            if self._hello is None:
                params = initialize_params(self._options, self._handlers)

                def send(meta: Mapping[str, Any] | None) -> Awaitable[JSONObject]:
                    return self._connection.request(initialize_message(self._next_id(), params, meta))

                hello = ServerHello.parse(await traced_initialize(self._options, params, None, send))
                self._started_at = time.monotonic()
                await client_notification(
                    self._options.telemetry, INITIALIZED, None, hello.protocol_version, self._connection.notify
                )
                self._hello = hello

    async def request(self, method: str, params: JSONObject, sink: NotificationSink | None) -> JSONObject:
        await self.initialize()
        message: JSONObject = {"jsonrpc": "2.0", "id": self._next_id(), "method": method, "params": params}
        return await self._connection.request(message, None, sink)

    async def close(self) -> None:
        """Nothing to send here: the session ends with the process (the client stops it)."""
        if self._hello is not None:
            client_session_ended(self._options.telemetry, self._started_at, None, self._hello.protocol_version)
        self._hello = None
