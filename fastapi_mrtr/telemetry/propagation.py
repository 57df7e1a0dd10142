"""W3C trace context in ``params._meta``: the MCP conventions' carrier (SEP-414 reserves the keys).

The keys are written unprefixed (``traceparent``, ``tracestate``, ``baggage``), as the
conventions say, through whatever propagators the application configured.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any

TRACE_KEYS = ("traceparent", "tracestate", "baggage")


def _propagate() -> Any:
    return importlib.import_module("opentelemetry.propagate")


def extract(meta: Mapping[str, Any]) -> Any | None:
    """The remote context a request's ``_meta`` carries, or None when it carries none."""
    if not isinstance(meta.get("traceparent"), str):
        return None
    carrier = {key: meta[key] for key in TRACE_KEYS if isinstance(meta.get(key), str)}
    return _propagate().extract(carrier)


def inject(meta: MutableMapping[str, Any]) -> None:
    """Write the current context into a request's ``_meta`` (a no-op without an active span)."""
    carrier: dict[str, str] = {}
    _propagate().inject(carrier)
    meta.update(carrier)


def carried(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The trace keys of a ``_meta``, to pass on where a new ``_meta`` is built."""
    return {key: meta[key] for key in TRACE_KEYS if key in meta}
