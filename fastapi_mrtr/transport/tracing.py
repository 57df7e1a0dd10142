"""The transport's one hook into :mod:`fastapi_mrtr.telemetry`, for both eras.

:func:`traced` returns ``run()`` untouched when no OpenTelemetry SDK is configured (one check of
the server's :class:`~fastapi_mrtr.telemetry.Telemetry`), else the same work as one MCP server
operation: its span, current while the handler runs, and its duration metric.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from fastapi_mrtr.telemetry.conventions import (
    NETWORK_PROTOCOL_NAME,
    NETWORK_TRANSPORT,
    PROTOCOL_VERSION,
    SESSION_ID,
    STREAM_RESUMED,
)
from fastapi_mrtr.telemetry.server import traced_operation, traced_session_verb
from fastapi_mrtr.telemetry.setup import Telemetry

T = TypeVar("T")


def traced(
    telemetry: Telemetry,
    method: str,
    request_id: Any,
    params: Mapping[str, Any],
    scope: Mapping[str, Any],
    run: Callable[[], Awaitable[T]],
    message_of: Callable[[T], Mapping[str, Any]],
    *,
    meta: Mapping[str, Any] | None = None,
    protocol_version: str | None = None,
    session_id: str | None = None,
) -> Awaitable[T]:
    instruments = telemetry.instruments()
    if instruments is None:
        return run()
    return traced_operation(
        instruments,
        method=method,
        request_id=request_id,
        params=params,
        meta=meta if meta is not None else _meta_of(params),
        protocol_version=protocol_version,
        session_id=session_id,
        scope=scope,
        run=run,
        message_of=message_of,
    )


async def notified(
    telemetry: Telemetry,
    method: str,
    params: Mapping[str, Any],
    scope: Mapping[str, Any],
    handle: Callable[[], Awaitable[None]] | None = None,
    *,
    protocol_version: str | None = None,
    session_id: str | None = None,
) -> None:
    """A notification from the client (``handle`` does its work, if it has any): a server span
    and a duration like a request's, without ``jsonrpc.request.id``."""
    instruments = telemetry.instruments()
    if instruments is None:
        if handle is not None:
            await handle()
        return
    await traced_operation(
        instruments,
        method=method,
        request_id=None,
        params=params,
        meta=_meta_of(params),
        protocol_version=protocol_version,
        session_id=session_id,
        scope=scope,
        run=handle or _nothing_to_do,
        message_of=nothing,
    )


def session_verb(
    telemetry: Telemetry,
    name: str,
    scope: Mapping[str, Any],
    run: Callable[[], Awaitable[T]],
    *,
    protocol_version: str,
    session_id: str,
    resumed: bool | None = None,
) -> Awaitable[T]:
    """A 2025-era session's GET stream or DELETE (``name``: ``conventions.SESSION_STREAM`` or
    ``SESSION_END``) as one server span; ``run()`` untouched when no SDK is configured."""
    instruments = telemetry.instruments()
    if instruments is None:
        return run()
    attributes: dict[str, Any] = {PROTOCOL_VERSION: protocol_version, SESSION_ID: session_id}
    if resumed is not None:
        attributes[STREAM_RESUMED] = resumed
    return traced_session_verb(instruments, name, attributes, scope, run)


async def _nothing_to_do() -> None:
    return None


def response_of(answer: tuple[int, Mapping[str, Any]]) -> Mapping[str, Any]:
    """The JSON-RPC response of the modern endpoint's ``(status, message)``."""
    return answer[1]


def itself(message: Mapping[str, Any]) -> Mapping[str, Any]:
    return message


def nothing(_: object) -> Mapping[str, Any]:
    """For work that sends its own answer (``initialize``): only a raised refusal is seen."""
    return {}


def session_ended(telemetry: Telemetry, issued_at: float, protocol_version: str) -> None:
    """``mcp.server.session.duration`` of a 2025-era session its client ended (DELETE)."""
    instruments = telemetry.instruments()
    if instruments is None or instruments.session_duration is None:
        return
    attributes = {PROTOCOL_VERSION: protocol_version, NETWORK_TRANSPORT: "tcp", NETWORK_PROTOCOL_NAME: "http"}
    instruments.session_duration.record(max(0.0, time.time() - issued_at), attributes)


def _meta_of(params: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = params.get("_meta")
    return meta if isinstance(meta, Mapping) else {}
