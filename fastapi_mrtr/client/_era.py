"""The era a server speaks, chosen once per client as the transport every request then goes through.

:class:`EraTransport` is what :class:`~fastapi_mrtr.client.MrtrClient` sends through, whichever
era: :class:`~fastapi_mrtr.client._modern.ModernTransport` (the stateless 2026-07-28 wire) or
:class:`~fastapi_mrtr.client._legacy.transport.LegacyTransport` (a 2025-era session).
:func:`open_transport` chooses between them by ``ClientOptions.mode``; ``"auto"`` sends one
``server/discover`` (:func:`probe`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from fastapi_mrtr.client._errors import InvalidServerResponseError, McpServerError, StatusCodeError, StreamClosedError
from fastapi_mrtr.client._modern import ModernTransport
from fastapi_mrtr.client._types import ProgressCallback
from fastapi_mrtr.client.options import ClientMode, Era
from fastapi_mrtr.wire.errors import HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION
from fastapi_mrtr.wire.protocol import Implementation, JSONObject

logger = logging.getLogger("fastapi_mrtr.client")

# Errors only a modern server sends (spec-notes 2.6): the probe raises them rather than fall back.
_MODERN_ERRORS = frozenset({UNSUPPORTED_PROTOCOL_VERSION, MISSING_REQUIRED_CLIENT_CAPABILITY, HEADER_MISMATCH})


class EraTransport(Protocol):
    """How requests reach a server of one era."""

    @property
    def era(self) -> Era: ...

    @property
    def protocol_version(self) -> str:
        """The version in use."""
        ...

    @property
    def server_info(self) -> Implementation | None:
        """What a handshake said of the server; ``None`` where there is none."""
        ...

    def check_seed(self, seeded: bool) -> None:
        """Raise ``ValueError`` if a flow may not start from caller-supplied answers or state."""
        ...

    async def request(
        self,
        method: str,
        params: JSONObject,
        *,
        progress: ProgressCallback | None,
        meta: Mapping[str, Any] | None,
    ) -> JSONObject:
        """Send one request and return its ``result``."""
        ...

    async def set_log_level(self, level: str | None) -> bool:
        """Ask for the server's log messages at ``level`` and above; whether the server was told."""
        ...

    async def aclose(self) -> None:
        """End what the era keeps open on the server; idempotent."""
        ...


async def open_transport(
    mode: ClientMode,
    modern: ModernTransport,
    open_legacy: Callable[[], Awaitable[EraTransport]],
    discover: Callable[[], Awaitable[JSONObject]] | None = None,
) -> EraTransport:
    """The transport for ``mode``: the modern one, or a 2025-era session opened now."""
    if mode == "2026-07-28" or (mode == "auto" and await probe(modern, discover) == "2026-07-28"):
        return modern
    return await open_legacy()


async def probe(modern: ModernTransport, discover: Callable[[], Awaitable[JSONObject]] | None = None) -> Era:
    """``server/discover`` on the modern wire; which era its reply shows (versioning.mdx).

    ``discover`` sends it (the client's traced request); by default ``modern`` does, untraced.

    A result, or a modern error, means the 2026-07-28 wire; any other reply (a 2025-era server
    answers it with an HTTP 400, or a ``Method not found``) means a 2025-era server. Network
    errors and an HTTP 401 or 403 are raised, not taken for an era.
    """
    try:
        if discover is not None:
            raw = await discover()
        else:
            raw = await modern.request("server/discover", {}, progress=None, meta=None)
    except McpServerError as exc:
        if exc.code in _MODERN_ERRORS:
            raise  # a modern server refusing us: falling back would hide the real problem
        logger.info("server/discover answered %s %s: a 2025-era server", exc.code, exc.message)
        return "legacy"
    except StatusCodeError as exc:
        if exc.status_code in (401, 403):
            raise
        logger.info("server/discover answered HTTP %s: a 2025-era server", exc.status_code)
        return "legacy"
    except (InvalidServerResponseError, StreamClosedError) as exc:
        logger.info("server/discover got no modern reply (%s): a 2025-era server", exc)
        return "legacy"
    versions = raw.get("supportedVersions")
    if not isinstance(versions, list):
        # A 2025-era server may answer an unknown method with an empty result: no discovery.
        logger.info("server/discover answered without supportedVersions: a 2025-era server")
        return "legacy"
    if modern.protocol_version not in versions and not modern.adopt_version(versions):
        logger.info("server/discover lists %s, none of them ours: a 2025-era session", versions)
        return "legacy"
    return "2026-07-28"
