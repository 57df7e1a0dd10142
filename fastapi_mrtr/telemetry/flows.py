"""One MRTR conversation, one trace: each round's span names its round and flow, and links to round 1.

A modern flow is one JSON-RPC request per round, so each round has its own server span. The
first round's span context (its ``traceparent``) is sealed into ``requestState`` with the flow
(``state.sealing``: the optional ``tc`` claim), so whichever replica serves a later round links
its span to round 1 and tags it with the same hashed flow id. The flow id itself stays sealed:
spans carry a hash of it. A 2025-era call runs its rounds in one request: each is a child span
(:func:`shim_round`) of the call's span, and gets the same round attributes and links.

The engine calls :func:`round_opened` and :func:`flow_sealed` only when :data:`.setup.SWITCH`
is on; both act on the current span, and only when it is recording.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

from fastapi_mrtr.telemetry import conventions as names
from fastapi_mrtr.telemetry.setup import SWITCH, Telemetry, otel_api


def hashed_flow_id(flow_id: str) -> str:
    """What spans show of a flow id: enough to group rounds, nothing to open a state with."""
    return hashlib.sha256(b"fastapi-mrtr flow:" + flow_id.encode()).hexdigest()[:32]


def _recording_span() -> Any | None:
    api = otel_api()
    if api is None:
        return None
    span = api[0].get_current_span()
    return span if span.is_recording() else None


def traceparent_of(span_context: Any) -> str:
    return f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-{int(span_context.trace_flags):02x}"


def span_context_of(traceparent: str) -> Any | None:
    """The span context a sealed ``traceparent`` names (None if it is not one)."""
    api = otel_api()
    parts = traceparent.split("-")
    if api is None or len(parts) != 4:
        return None
    trace = api[0]
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None
    context = trace.SpanContext(trace_id, span_id, is_remote=True, trace_flags=trace.TraceFlags(flags))
    return context if context.is_valid else None


def round_opened(round_number: int, flow_id: str | None, anchor: str | None) -> str | None:
    """Tag the current span with its round and link it to round 1 (``anchor``, from the state).
    Returns ``anchor``: a flow's first traced round has none yet, and takes its own span's
    context when it seals (:func:`flow_sealed`), so a call that never asks formats none."""
    span = _recording_span()
    if span is None:
        return anchor
    attributes: dict[str, Any] = {names.MRTR_ROUND: round_number}
    if flow_id is not None:
        attributes[names.MRTR_FLOW_ID] = hashed_flow_id(flow_id)
    span.set_attributes(attributes)  # one call: each one takes the span's lock
    first = span_context_of(anchor) if anchor is not None else None
    if first is not None:
        span.add_link(first, {names.MRTR_ROUND: 1})
    return anchor


def flow_sealed(flow_id: str | None, anchor: str | None) -> tuple[str, str | None]:
    """The flow id to seal (drawn on the first round that asks) and tag on the current span, and
    the anchor to seal with it: the state's, or this span's own on the flow's first traced round."""
    if flow_id is None:
        flow_id = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    span = _recording_span()
    if span is not None:
        span.set_attribute(names.MRTR_FLOW_ID, hashed_flow_id(flow_id))
        if anchor is None:
            anchor = traceparent_of(span.get_span_context())
    return flow_id, anchor


@contextlib.contextmanager
def shim_round(telemetry: Telemetry, method: str, params: Mapping[str, Any], round_number: int) -> Iterator[None]:
    """A 2025-era call's round: a child span of the call's span, current while the handler runs."""
    instruments = telemetry.instruments() if SWITCH.on else None
    if instruments is None or instruments.tracer is None:
        yield
        return
    name, attributes = names.operation_attributes(method, params)
    trace = otel_api()[0]  # type: ignore[index]
    with instruments.tracer.start_as_current_span(
        f"mrtr.round {name}", kind=trace.SpanKind.INTERNAL, record_exception=False
    ) as span:
        if span.is_recording():
            attributes[names.MRTR_ROUND] = round_number
            span.set_attributes(attributes)
        yield
