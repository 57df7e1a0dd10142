"""One server operation: the ``SERVER`` span of one JSON-RPC request and its duration metric.

The span's parent is the context the client sent in ``params._meta`` when there is one; the
ambient context (an HTTP server span, e.g. from opentelemetry-instrumentation-asgi) is then
linked instead, as the conventions ask. Without a ``traceparent`` the ambient context is the
parent. The span is current while the handler runs, so the engine's round hooks
(:mod:`.flows`) and the legacy shim's round spans find it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from fastapi_mrtr.telemetry import conventions as names
from fastapi_mrtr.telemetry.propagation import extract
from fastapi_mrtr.telemetry.setup import Instruments, otel_api, otel_context

T = TypeVar("T")


def network_attributes(scope: Mapping[str, Any], attributes: dict[str, Any] | None = None) -> dict[str, Any]:
    """``network.*`` of an ASGI HTTP scope, added to ``attributes`` (or a new dict)."""
    if attributes is None:
        attributes = {}
    attributes[names.NETWORK_PROTOCOL_NAME] = "http"
    version = scope.get("http_version")
    if isinstance(version, str):
        attributes[names.NETWORK_PROTOCOL_VERSION] = version
    if scope.get("client"):
        attributes[names.NETWORK_TRANSPORT] = "tcp"
    return attributes


def peer_attributes(scope: Mapping[str, Any], attributes: dict[str, Any]) -> dict[str, Any]:
    """``client.address`` and ``client.port`` of an ASGI HTTP scope (span only: too many values
    for a metric), added to ``attributes``."""
    client = scope.get("client")
    if client:
        attributes[names.CLIENT_ADDRESS] = str(client[0])
        attributes[names.CLIENT_PORT] = int(client[1])
    return attributes


async def traced_operation(
    instruments: Instruments,
    *,
    method: str,
    request_id: Any,
    params: Mapping[str, Any],
    meta: Mapping[str, Any],
    protocol_version: str | None,
    session_id: str | None,
    scope: Mapping[str, Any],
    run: Callable[[], Awaitable[T]],
    message_of: Callable[[T], Mapping[str, Any]],
) -> T:
    """Run ``run`` as one MCP server operation; ``message_of`` finds the JSON-RPC response in what it returns."""
    api = otel_api()
    assert api is not None  # instruments exist only when the API does
    trace = api[0]
    # What the span and the metric share; the span takes a copy with its own attributes added.
    name, attributes = names.operation_attributes(method, params)
    if protocol_version:
        attributes[names.PROTOCOL_VERSION] = protocol_version
    network_attributes(scope, attributes)
    started = time.perf_counter()
    span = None
    if instruments.tracer is not None:
        parent = extract(meta)
        links = None
        if parent is not None:
            ambient = trace.get_current_span().get_span_context()
            links = [trace.Link(ambient)] if ambient.is_valid else None
        # Given at creation, as OpenTelemetry asks of attributes known then, so a sampler sees them.
        span = instruments.tracer.start_span(
            name,
            context=parent,
            kind=trace.SpanKind.SERVER,
            attributes=_span_only(attributes, request_id, session_id, scope),
            links=links,
        )
    try:
        if span is None:
            outcome = await run()
        else:  # current while the handler runs (what trace.use_span does, without its generator)
            context = otel_context()
            token = context.attach(trace.set_span_in_context(span))
            try:
                outcome = await run()
            finally:
                context.detach(token)
    except BaseException as exc:  # cancelled (the client left), or a bug below the handlers
        attributes[names.ERROR_TYPE] = type(exc).__qualname__
        _finish(trace, instruments, span, attributes, {names.ERROR_TYPE: attributes[names.ERROR_TYPE]}, None, started)
        raise
    outcome_attributes, description = names.outcome_attributes(message_of(outcome))
    attributes.update(outcome_attributes)
    _finish(trace, instruments, span, attributes, outcome_attributes, description, started)
    return outcome


async def traced_session_verb(
    instruments: Instruments,
    name: str,
    attributes: dict[str, Any],
    scope: Mapping[str, Any],
    run: Callable[[], Awaitable[T]],
) -> T:
    """Run ``run`` (a 2025-era GET stream or DELETE: no JSON-RPC method, so no operation metric)
    as one ``SERVER`` span named ``name``; an exception sets ``error.type`` to its class name."""
    api = otel_api()
    assert api is not None  # instruments exist only when the API does
    trace = api[0]
    if instruments.tracer is None:
        return await run()
    span = instruments.tracer.start_span(name, kind=trace.SpanKind.SERVER)
    if span.is_recording():
        span.set_attributes(peer_attributes(scope, {**attributes, **network_attributes(scope)}))
    try:
        with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            return await run()
    except BaseException as exc:
        if span.is_recording():
            span.set_attribute(names.ERROR_TYPE, type(exc).__qualname__)
            span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc) or None))
        raise
    finally:
        span.end()


def _span_only(
    shared: dict[str, Any], request_id: Any, session_id: str | None, scope: Mapping[str, Any]
) -> dict[str, Any]:
    """The span's attributes: the shared ones, the request id, the session and the peer."""
    attributes = dict(shared)
    request_id_value = names.request_id_attribute(request_id)
    if request_id_value is not None:
        attributes[names.REQUEST_ID] = request_id_value
    if session_id:
        attributes[names.SESSION_ID] = session_id
    return peer_attributes(scope, attributes)


def _finish(
    trace: Any,
    instruments: Instruments,
    span: Any,
    attributes: dict[str, Any],
    outcome: dict[str, str],
    description: str | None,
    started: float,
) -> None:
    if instruments.operation_duration is not None:
        # The shared attributes are the metric's already, but for a resource's URI (too many values).
        point = names.metric_attributes(attributes) if names.RESOURCE_URI in attributes else attributes
        instruments.operation_duration.record(time.perf_counter() - started, point)
    if span is None:
        return
    if outcome and span.is_recording():
        span.set_attributes(outcome)
        span.set_status(trace.Status(trace.StatusCode.ERROR, description))
    span.end()
