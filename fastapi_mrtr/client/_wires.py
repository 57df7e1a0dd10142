"""What carries a client's messages: Streamable HTTP or a local stdio server's pipes.

:func:`client_wire` checks the server arguments ``MrtrClient`` was given (a URL or ``stdio=``,
exactly one) and builds the one :class:`ClientWire` the era transports send through. The wire
also opens a 2025-era session of its own kind, and closes what it owns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import httpx

from fastapi_mrtr.client._handlers import InputHandlers
from fastapi_mrtr.client._legacy.listener import Spawner
from fastapi_mrtr.client._legacy.session import LegacySession
from fastapi_mrtr.client._notifications import notification_sink
from fastapi_mrtr.client._stdio import StdioConnection, StdioLegacySession, StdioServer, as_stdio_server
from fastapi_mrtr.client._transport import HttpRpc, RpcWire
from fastapi_mrtr.client._types import NotificationCallback
from fastapi_mrtr.client.options import ClientOptions


@dataclass
class ClientWire:
    """One of ``http`` (with whether this client created its httpx client) and ``stdio``."""

    http: HttpRpc | None
    stdio: StdioConnection | None
    owns_http: bool

    @property
    def rpc(self) -> RpcWire:
        wire = self.http or self.stdio
        assert wire is not None
        return wire

    @property
    def url(self) -> str | None:
        """The endpoint's URL; None for a stdio server."""
        return str(self.http.url) if self.http is not None else None

    def legacy_session(
        self,
        handlers: InputHandlers,
        options: ClientOptions,
        headers: Callable[[], Mapping[str, str]],
        new_id: Callable[[], int],
        on_notification: NotificationCallback | None,
        spawn: Spawner,
    ) -> LegacySession | StdioLegacySession:
        if self.stdio is not None:
            return StdioLegacySession(self.stdio, handlers, options, new_id)
        assert self.http is not None
        sink = notification_sink(None, None, on_notification)
        return LegacySession(self.http, handlers, options, headers, new_id, sink, spawn)

    async def aclose_pipes(self) -> None:
        """Stop a stdio server (before the reader stops: it drains the server's last lines)."""
        if self.stdio is not None:
            await self.stdio.aclose()

    async def aclose_http(self) -> None:
        if self.http is not None and self.owns_http:
            await self.http.http.aclose()


def client_wire(
    url: str | httpx.URL | None,
    stdio: str | Sequence[str] | StdioServer | None,
    http_client: httpx.AsyncClient | None,
    auth: httpx.Auth | None,
    headers: Mapping[str, str] | None,
    options: ClientOptions,
    handlers: InputHandlers,
    on_notification: NotificationCallback | None,
    spawn: Spawner,
) -> ClientWire:
    if http_client is not None and auth is not None:
        raise ValueError("pass auth to your own httpx.AsyncClient (AsyncClient(auth=...)), not to MrtrClient")
    if (url is None) == (stdio is None):
        raise ValueError("give MrtrClient either a url or stdio= (a command that runs a stdio server), one of them")
    if stdio is not None:
        if http_client is not None or auth is not None or headers:
            raise ValueError("http_client, auth and headers are for HTTP servers; a stdio server has none of them")
        sink = notification_sink(None, None, on_notification)
        return ClientWire(None, StdioConnection(as_stdio_server(stdio), handlers, options, sink, spawn), False)
    assert url is not None
    http = http_client or httpx.AsyncClient(timeout=options.http_timeout, auth=auth)
    return ClientWire(HttpRpc(http, url), None, http_client is None)
