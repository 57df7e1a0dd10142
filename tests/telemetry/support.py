"""The example bookshop with its own in-memory span exporter and metric reader, on real uvicorn."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from fastapi_mrtr import Telemetry

EXAMPLE_MAIN = Path(__file__).resolve().parents[2] / "example_app" / "main.py"


@dataclass
class Recorder:
    """One in-memory exporter and reader, behind providers of their own (the global ones stay unset)."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    @classmethod
    def new(cls) -> Recorder:
        exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
        return cls(exporter, reader, tracer_provider, MeterProvider(metric_readers=[reader]))

    def telemetry(self) -> Telemetry:
        return Telemetry(self.tracer_provider, self.meter_provider)

    def spans(self, kind: str | None = None) -> list[ReadableSpan]:
        spans = list(self.exporter.get_finished_spans())
        return [s for s in spans if kind is None or s.kind.name == kind]

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        found.extend(item.data.data_points)
        return found


def bookshop(telemetry: Telemetry, name: str = "example_app._traced_main") -> FastAPI:
    """A fresh copy of the example app (it builds its options at import), traced through ``telemetry``.

    Its ``ServerOptions`` are frozen and hold one ``Telemetry``, shared by every part of the
    endpoint: that object takes our providers."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLE_MAIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.mcp.options.telemetry.__init__(telemetry._tracer_provider, telemetry._meter_provider)
    app = module.app
    assert isinstance(app, FastAPI)
    return app


@contextlib.contextmanager
def shop_database(tmp_path: Path, monkeypatch: Any) -> Iterator[Path]:
    path = tmp_path / "shop.db"
    monkeypatch.setenv("BOOKSHOP_DB", str(path))
    yield path


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})
