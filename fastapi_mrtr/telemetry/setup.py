"""Which tracer and instruments a server or client uses, found lazily, and whether any are on.

:meth:`Telemetry.instruments` is the one call a request pays when nothing is configured: the
OpenTelemetry API is imported once (or found missing), and the providers are the API's proxies or
no-ops, so it answers None and nothing else runs. Providers given to :class:`Telemetry` are used
from the first request; the global ones are looked at again at most once a second (their getters
read the environment on every call), so an SDK set up globally after the app started serving is
found within a second.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from fastapi_mrtr.telemetry.conventions import (
    CLIENT_OPERATION_DURATION,
    CLIENT_SESSION_DURATION,
    DURATION_BUCKETS,
    SERVER_OPERATION_DURATION,
    SERVER_SESSION_DURATION,
)

SCOPE_NAME = "fastapi_mrtr"
GLOBALS_RECHECK = 1.0  # seconds between two looks at OpenTelemetry's global providers


class _Switch:
    """Whether any telemetry of this process found an SDK: the engine's one check per round."""

    on = False


SWITCH = _Switch()

_api: tuple[ModuleType, ModuleType] | None = None
_api_missing = False


def otel_api() -> tuple[ModuleType, ModuleType] | None:
    """``opentelemetry.trace`` and ``opentelemetry.metrics``, or None when the API is not installed."""
    global _api, _api_missing
    if _api is None and not _api_missing:
        try:
            _api = (importlib.import_module("opentelemetry.trace"), importlib.import_module("opentelemetry.metrics"))
        except ImportError:
            _api_missing = True
    return _api


_context: ModuleType | None = None


def otel_context() -> ModuleType:
    """``opentelemetry.context`` (the API is installed: only code that holds instruments asks)."""
    global _context
    if _context is None:
        _context = importlib.import_module("opentelemetry.context")
    return _context


@dataclass(frozen=True)
class Instruments:
    """What a configured SDK gives: a tracer (None if only metrics are on) and the histograms."""

    tracer: Any | None
    operation_duration: Any | None
    session_duration: Any | None


def _is_real_tracer_provider(trace: ModuleType, provider: Any) -> bool:
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def _is_real_meter_provider(metrics: ModuleType, provider: Any) -> bool:
    # The API's global stands in as a proxy (a private class) until an SDK is set.
    return not isinstance(provider, metrics.NoOpMeterProvider) and type(provider).__name__ != "_ProxyMeterProvider"


class Telemetry:
    """OpenTelemetry for an ``MCP`` server (``ServerOptions.telemetry``) or an ``MrtrClient``
    (``ClientOptions.telemetry``): spans and metrics by the MCP semantic conventions.

    ``tracer_provider`` and ``meter_provider`` default to OpenTelemetry's global ones; with
    neither set up (no SDK), nothing is recorded and nothing is built.
    """

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._side = "server"
        self._seen: tuple[Any, Any] | None = None
        self._instruments: Instruments | None = None
        self._globals_checked_at = 0.0

    def for_client(self) -> Telemetry:
        """The same providers, with the client's metric names (``mcp.client.*``)."""
        client = Telemetry(self._tracer_provider, self._meter_provider)
        client._side = "client"
        return client

    def instruments(self) -> Instruments | None:
        """The tracer and histograms to use now, or None while no SDK is configured."""
        api = _api if _api is not None else otel_api()
        if api is None:
            return None
        uses_globals = self._tracer_provider is None or self._meter_provider is None
        if uses_globals and self._seen is not None and time.monotonic() < self._globals_checked_at + GLOBALS_RECHECK:
            # Until an SDK is set, OpenTelemetry's global getters read the environment on every
            # call: four lookups on every request (~4% of an echo call) to learn nothing new.
            return self._instruments
        trace, metrics = api
        tracer_provider = self._tracer_provider or trace.get_tracer_provider()
        meter_provider = self._meter_provider or metrics.get_meter_provider()
        self._globals_checked_at = time.monotonic()
        seen = self._seen
        if seen is not None and seen[0] is tracer_provider and seen[1] is meter_provider:
            return self._instruments
        self._seen = (tracer_provider, meter_provider)
        self._instruments = self._resolve(trace, metrics, tracer_provider, meter_provider)
        return self._instruments

    def _resolve(
        self, trace: ModuleType, metrics: ModuleType, tracer_provider: Any, meter_provider: Any
    ) -> Instruments | None:
        tracer = None
        if _is_real_tracer_provider(trace, tracer_provider):
            tracer = tracer_provider.get_tracer(SCOPE_NAME, _version())
        operation = session = None
        if _is_real_meter_provider(metrics, meter_provider):
            meter = meter_provider.get_meter(SCOPE_NAME, _version())
            server = self._side == "server"
            operation = meter.create_histogram(
                SERVER_OPERATION_DURATION if server else CLIENT_OPERATION_DURATION,
                unit="s",
                description=f"Duration of MCP requests as the {self._side} saw them",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            )
            session = meter.create_histogram(
                SERVER_SESSION_DURATION if server else CLIENT_SESSION_DURATION,
                unit="s",
                description=f"Duration of MCP sessions as the {self._side} saw them",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            )
        if tracer is None and operation is None:
            return None
        SWITCH.on = True
        return Instruments(tracer, operation, session)


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("fastapi-mrtr")
    except metadata.PackageNotFoundError:
        return "0.0.0"
