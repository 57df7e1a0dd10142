"""A task's legs link to its creation: the ``tools/call`` span that made the task, on any replica.

When a call is promoted to a task (``tasks.tool_calls``), :func:`creation_anchor` gives the
``traceparent`` of the current span (the promoting ``tools/call``), which the task record keeps
(``TaskRecord.trace_anchor``, absent when tracing is off). Every later request about the task
(``tasks/get``, ``tasks/update``, ``tasks/cancel``) links its span to that one
(:func:`link_to_creation`), and every later leg of the task runs in a span of its own
(:func:`task_leg`) that links to it too. The record travels through the task store, so the
replica that serves a poll or runs a leg need not be the one that created the task.

The task id is as good as a bearer token, so no span carries it: the link and the hashed flow id
(``mcp.mrtr.flow.id``, the same on every leg) are what tie a task's spans together.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from fastapi_mrtr.telemetry import conventions as names
from fastapi_mrtr.telemetry.flows import hashed_flow_id, span_context_of, traceparent_of
from fastapi_mrtr.telemetry.setup import SWITCH, Telemetry, otel_api

# The one attribute on a link to the creating span, so a backend can tell it from other links.
CREATED_LINK = {names.TASK_CREATED: True}


def _recording_span() -> Any | None:
    if not SWITCH.on:
        return None
    api = otel_api()
    if api is None:
        return None
    span = api[0].get_current_span()
    return span if span.is_recording() else None


def creation_anchor(flow_id: str) -> str | None:
    """The ``traceparent`` of the current (creating) span, tagged with the task's hashed flow id;
    None when nothing is traced."""
    span = _recording_span()
    if span is None:
        return None
    span.set_attribute(names.MRTR_FLOW_ID, hashed_flow_id(flow_id))
    return traceparent_of(span.get_span_context())


def link_to_creation(anchor: str | None, flow_id: str | None) -> None:
    """Link the current span to the task's creating span and tag it with the task's hashed flow
    id (nothing when untraced, or for a task created untraced)."""
    if anchor is None:
        return
    span = _recording_span()
    creation = span_context_of(anchor) if span is not None else None
    if span is None or creation is None:
        return
    span.add_link(creation, CREATED_LINK)
    if flow_id is not None:
        span.set_attribute(names.MRTR_FLOW_ID, hashed_flow_id(flow_id))


@contextlib.contextmanager
def task_leg(telemetry: Telemetry, tool: str, flow_id: str | None, anchor: str | None) -> Iterator[None]:
    """A later leg of a task (a replay after ``tasks/update``, or a takeover): one ``INTERNAL``
    span, current while the handler runs, linked to the task's creation."""
    instruments = telemetry.instruments() if SWITCH.on else None
    if instruments is None or instruments.tracer is None:
        yield
        return
    trace = otel_api()[0]  # type: ignore[index]
    creation = span_context_of(anchor) if anchor is not None else None
    links = [trace.Link(creation, CREATED_LINK)] if creation is not None else None
    with instruments.tracer.start_as_current_span(
        f"task.leg tools/call {tool}", kind=trace.SpanKind.INTERNAL, links=links, record_exception=False
    ) as span:
        if span.is_recording():
            attributes: dict[str, Any] = {
                names.METHOD: "tools/call",
                names.TOOL_NAME: tool,
                names.OPERATION_NAME: names.EXECUTE_TOOL,
            }
            if flow_id is not None:
                attributes[names.MRTR_FLOW_ID] = hashed_flow_id(flow_id)
            span.set_attributes(attributes)
        yield
