"""The 2025 era as an :class:`~fastapi_mrtr.client._era.EraTransport`: requests in one session.

It owns the session: over HTTP a :class:`~fastapi_mrtr.client._legacy.session.LegacySession`
(with its GET stream and the answers to the server's requests), over stdio a
:class:`~fastapi_mrtr.client._stdio.legacy.StdioLegacySession`. A 2025-era ``_meta`` carries no
protocol keys (the session does); the server's questions are answered during the call, so a
flow cannot start from answers or a ``requestState`` of the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from fastapi_mrtr.client._request_meta import listening, with_meta
from fastapi_mrtr.client._transport import NotificationSink
from fastapi_mrtr.client._types import NotificationCallback, ProgressCallback
from fastapi_mrtr.client.options import ClientOptions
from fastapi_mrtr.wire.protocol import Implementation, JSONObject


class Session(Protocol):
    """A 2025-era session, whatever carries it: over HTTP (:class:`LegacySession`) or a stdio pipe."""

    @property
    def protocol_version(self) -> str | None: ...

    @property
    def server_info(self) -> Implementation | None: ...

    @property
    def server_capabilities(self) -> JSONObject: ...

    async def initialize(self) -> None: ...

    async def request(self, method: str, params: JSONObject, sink: NotificationSink | None) -> JSONObject: ...

    async def close(self) -> None: ...


class LegacyTransport:
    """Requests in a 2025-era ``session``, started by :meth:`open` (``initialize``)."""

    era: Literal["legacy"] = "legacy"

    def __init__(
        self,
        session: Session,
        options: ClientOptions,
        next_id: Callable[[], int],
        on_progress: ProgressCallback | None,
        on_notification: NotificationCallback | None,
    ) -> None:
        self._options = options
        self._next_id = next_id
        self._on_progress = on_progress  # for requests that bring no progress callback of their own
        self._on_notification = on_notification
        self.session = session

    async def open(self) -> LegacyTransport:
        await self.session.initialize()
        return self

    @property
    def protocol_version(self) -> str:
        """The version ``initialize`` negotiated (the one we ask for while none is)."""
        return self.session.protocol_version or self._options.legacy_protocol_version

    @property
    def server_info(self) -> Implementation | None:
        return self.session.server_info

    def check_seed(self, seeded: bool) -> None:
        if seeded:
            raise ValueError(
                "input_responses and request_state belong to the 2026-07-28 wire; this server speaks a "
                "2025-era session, where the registered handlers answer its questions during the call"
            )

    async def request(
        self,
        method: str,
        params: JSONObject,
        *,
        progress: ProgressCallback | None,
        meta: Mapping[str, Any] | None,
    ) -> JSONObject:
        """One request in the session (the 2025 era has no ``Mcp-Param-*`` headers to mirror)."""
        # The session numbers the request itself, so the progress token draws a number of its own.
        listens = listening(progress or self._on_progress, self._on_notification, self._next_id)
        return await self.session.request(method, with_meta(params, meta, listens.token), listens.sink)

    async def set_log_level(self, level: str | None) -> bool:
        """``logging/setLevel`` now, if the server declared ``logging``; ``None`` cannot be sent."""
        if level is None or "logging" not in self.session.server_capabilities:
            return False
        await self.request("logging/setLevel", {"level": level}, progress=None, meta=None)
        return True

    async def aclose(self) -> None:
        """End the session on the server (DELETE) and stop its GET stream."""
        await self.session.close()
