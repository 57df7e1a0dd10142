"""Client spans and ``mcp.client.operation.duration``; the trace context goes out in ``params._meta``.

One ``CLIENT`` span per JSON-RPC request (each MRTR round is one) and per notification the client
sends, current while it is sent, so the context injected into its ``_meta`` names it and the
server's span becomes its child. A 2025-era session's length is ``mcp.client.session.duration``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from fastapi_mrtr.telemetry import conventions as names
from fastapi_mrtr.telemetry.propagation import inject
from fastapi_mrtr.telemetry.setup import SWITCH, Instruments, Telemetry, otel_api

Send = Callable[[Mapping[str, Any] | None], Awaitable[dict[str, Any]]]
Post = Callable[[dict[str, Any]], Awaitable[None]]


def client_request(
    telemetry: Telemetry,
    method: str,
    params: Mapping[str, Any],
    meta: Mapping[str, Any] | None,
    url: str | None,
    protocol_version: str,
    send: Send,
) -> Awaitable[dict[str, Any]]:
    """``send(meta)`` as one traced request, or untouched when no SDK is configured."""
    instruments = telemetry.instruments()
    if instruments is None:
        return send(meta)
    return _traced(instruments, method, params, meta, url, protocol_version, send)


async def client_notification(
    telemetry: Telemetry, message: dict[str, Any], url: str | None, protocol_version: str | None, post: Post
) -> None:
    """``post(message)`` (a notification) as one traced operation, like a request's but without
    ``jsonrpc.request.id``; its context goes out in ``params._meta``. Untouched when no SDK is configured."""
    instruments = telemetry.instruments()
    if instruments is None:
        await post(message)
        return
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    meta = params.get("_meta")

    async def send(sent_meta: Mapping[str, Any] | None) -> dict[str, Any]:
        await post({**message, "params": {**params, "_meta": dict(sent_meta)}} if sent_meta else message)
        return {}

    meta = meta if isinstance(meta, dict) else None
    await _traced(instruments, message["method"], params, meta, url, protocol_version, send)


def client_session_ended(telemetry: Telemetry, started_at: float, url: str | None, protocol_version: str) -> None:
    """``mcp.client.session.duration`` of a 2025-era session (HTTP, or stdio when ``url`` is None)
    that this client ended; ``started_at`` is ``time.monotonic()`` when its ``initialize`` was answered."""
    instruments = telemetry.instruments()
    if instruments is None or instruments.session_duration is None:
        return
    attributes = {names.PROTOCOL_VERSION: protocol_version, **_server_attributes(url)}
    instruments.session_duration.record(max(0.0, time.monotonic() - started_at), attributes)


async def _traced(
    instruments: Instruments,
    method: str,
    params: Mapping[str, Any],
    meta: Mapping[str, Any] | None,
    url: str | None,
    protocol_version: str | None,
    send: Send,
) -> dict[str, Any]:
    trace = otel_api()[0]  # type: ignore[index]
    name, attributes = names.operation_attributes(method, params)
    if protocol_version:
        attributes[names.PROTOCOL_VERSION] = protocol_version
    attributes.update(_server_attributes(url))
    started = time.perf_counter()
    outcome: dict[str, str] = {}
    description = None
    span = None
    try:
        if instruments.tracer is None:
            return await send(meta)
        span = instruments.tracer.start_span(name, kind=trace.SpanKind.CLIENT)
        if span.is_recording():
            span.set_attributes(attributes)
        with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            sent_meta = dict(meta or {})
            inject(sent_meta)
            result = await send(sent_meta)
        outcome, description = names.outcome_attributes({"result": result})
        return result
    except BaseException as exc:
        code = getattr(exc, "code", None)
        outcome = {names.ERROR_TYPE: str(code) if isinstance(code, int) else type(exc).__qualname__}
        if isinstance(code, int):
            outcome[names.STATUS_CODE] = str(code)
        description = str(exc)
        raise
    finally:
        attributes.update(outcome)
        if instruments.operation_duration is not None:
            instruments.operation_duration.record(time.perf_counter() - started, names.metric_attributes(attributes))
        if span is not None:
            if outcome and span.is_recording():
                span.set_attributes(outcome)
                span.set_status(trace.Status(trace.StatusCode.ERROR, description))
            span.end()


def note_request_id(request_id: Any) -> None:
    """Put the id a request was sent with on the current client span (the last one drawn wins)."""
    if not SWITCH.on:
        return
    api = otel_api()
    span = api[0].get_current_span() if api is not None else None
    if span is not None and span.is_recording():
        span.set_attribute(names.REQUEST_ID, str(request_id))


def _server_attributes(url: str | None) -> dict[str, Any]:
    if url is None:  # a stdio server: a pipe to a process of this machine
        return {names.NETWORK_TRANSPORT: "pipe"}
    parts = urlsplit(url)
    attributes: dict[str, Any] = {names.NETWORK_TRANSPORT: "tcp", names.NETWORK_PROTOCOL_NAME: "http"}
    if parts.hostname:
        attributes[names.SERVER_ADDRESS] = parts.hostname
        attributes[names.SERVER_PORT] = parts.port or (443 if parts.scheme == "https" else 80)
    return attributes
