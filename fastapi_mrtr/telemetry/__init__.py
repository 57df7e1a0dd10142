"""OpenTelemetry spans and metrics by the MCP semantic conventions (docs/observability.md).

Only the OpenTelemetry *API* is used, imported lazily: without it, or without an SDK configured,
every hook here is a check that finds nothing to do, and no span object is built.

* :mod:`.setup`: :class:`Telemetry`, the tracer and the instruments of one server or client,
  resolved from the providers given or the global ones; :data:`.setup.SWITCH` says whether any
  telemetry is on in this process (the engine's one check per round).
* :mod:`.conventions`: the attribute and metric names, span names, ``error.type``.
* :mod:`.propagation`: W3C trace context in ``params._meta`` (SEP-414), both ways.
* :mod:`.server`: one server operation (span and ``mcp.server.operation.duration``).
* :mod:`.flows`: one MRTR conversation, one trace: round numbers, the hashed flow id, links to round 1.
* :mod:`.client`: client spans and ``mcp.client.operation.duration``.

This package sits with ``wire/`` at the bottom of the layers: it knows neither FastAPI nor the
transport, and the client may use it.
"""

from fastapi_mrtr.telemetry.setup import Telemetry

__all__ = ["Telemetry"]
