"""CPU per operation with tracing off and on: the cost of OpenTelemetry spans and metrics.

Each measurement runs in a fresh process (``--child off|on``) that drives ``bench.app`` in-process
(``bench.inproc``: no uvicorn, no socket, so the difference is the application's own). "on" is an
SDK ``TracerProvider`` with a ``SimpleSpanProcessor`` into an ``InMemorySpanExporter`` and a
``MeterProvider`` with an ``InMemoryMetricReader``, given to the server through its ``Telemetry``
(``ServerOptions.telemetry``), the way docs/observability.md sets it up; "spans" and "metrics"
have one of the two, "sampled" records one trace in ten (``ParentBased(TraceIdRatioBased(0.1))``),
and "floor" times the SDK alone (one span and one histogram point as a
request makes them, no app), so what is the SDK's and what is ours can be told apart.
"peer-off" and "peer-spans" drive the official MCP Python SDK's server (the shared rig's
``peer_sdk``) in the same way, without and with a global ``TracerProvider`` of the same kind:
it emits spans by default (no metrics), so its cost of tracing sits beside ours ("spans"). Runs
alternate (off, on, on, off, ...) so drift on a shared machine hits every mode alike; the figures
are medians over processes.

    python -m bench.tracing_overhead --rounds 8 --modes off,on
    python -m bench.tracing_overhead --rounds 6 --modes off,spans,metrics,sampled,on,floor
    python -m bench.tracing_overhead --rounds 6 --modes off,spans,peer-off,peer-spans
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from bench import inproc
from bench.memory import RIG

WORKS = ("echo", "mrtr")


def traced_app(spans: bool = True, metrics: bool = True, ratio: float | None = None) -> tuple[Any, Any]:
    """``bench.app`` with its server's Telemetry on an in-memory SDK (spans, metrics or both;
    spans sampled at ``ratio`` when given); returns (app, the span exporter or None)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from bench import app as bench_app

    exporter = tracer_provider = meter_provider = None
    if spans:
        exporter = InMemorySpanExporter()
        if ratio is None:
            tracer_provider = TracerProvider()
        else:
            from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

            tracer_provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(ratio)))
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    if metrics:
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    # ServerOptions is frozen and holds one Telemetry, shared by the whole endpoint: point it at ours.
    bench_app.mcp.options.telemetry.__init__(tracer_provider, meter_provider)  # type: ignore[misc]
    return bench_app.app, exporter


def traced_peer(spans: bool) -> tuple[Any, Any]:
    """The official SDK's server of the shared rig, with a global ``TracerProvider`` (a
    ``SimpleSpanProcessor`` into an ``InMemorySpanExporter``) when ``spans``; returns (app,
    the exporter or None). The SDK reads the global provider, so it is set before the import."""
    exporter = None
    if spans:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
    sys.path.insert(0, str(RIG / "servers"))
    import peer_sdk  # type: ignore[import-not-found]  # the rig's server module, found on the path above

    return peer_sdk.app, exporter


def sdk_floor(n: int, repeat: int) -> dict[str, float]:
    """What the SDK alone costs per server operation, no fastapi-mrtr code: one span with an echo
    call's attributes through the same processor and exporter, made current and ended, and one
    point of the duration histogram with its attributes (microseconds, best of ``repeat``)."""
    from opentelemetry import context, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from fastapi_mrtr.telemetry.conventions import metric_attributes

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = tracer_provider.get_tracer("floor")
    meter = MeterProvider(metric_readers=[InMemoryMetricReader()]).get_meter("floor")
    histogram = meter.create_histogram("mcp.server.operation.duration", unit="s")
    attributes: dict[str, Any] = {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool",
        "jsonrpc.request.id": "1",
        "mcp.protocol.version": "2026-07-28",
        "network.protocol.name": "http",
        "network.protocol.version": "1.1",
        "network.transport": "tcp",
        "client.address": "127.0.0.1",
        "client.port": 50000,
    }
    point = metric_attributes(attributes)

    def span() -> None:
        started = tracer.start_span("tools/call echo", kind=trace.SpanKind.SERVER)
        started.set_attributes(attributes)
        token = context.attach(trace.set_span_in_context(started))
        started.set_attributes({"mcp.mrtr.round": 1})
        context.detach(token)
        started.end()

    def metric() -> None:
        histogram.record(0.001, point)

    figures: dict[str, float] = {}
    for name, op in (("span", span), ("metric", metric)):
        best = float("inf")
        for _ in range(repeat + 1):  # the first block warms up
            exporter.clear()
            start = time.process_time()
            for _ in range(n):
                op()
            best = min(best, (time.process_time() - start) / n * 1e6)
        figures[name] = best
    return figures


async def measure(app: Any, work: str, n: int, repeat: int, exporter: Any | None) -> float:
    """CPU microseconds per operation, the best of ``repeat`` blocks of ``n`` (``inproc.measure``'s
    way), with the exporter emptied after each block: an exporter that ships spans away keeps none,
    and a growing list of finished spans would make the garbage collector's passes longer."""
    op = inproc.echo if work == "echo" else inproc.flow
    for _ in range(min(200, n)):  # warm-up: lazy resolution, caches
        await op(app, "/mcp")
    best = float("inf")
    for _ in range(repeat):
        if exporter is not None:
            exporter.clear()
        start = time.process_time()
        for _ in range(n):
            await op(app, "/mcp")
        best = min(best, (time.process_time() - start) / n * 1e6)
        if exporter is not None:  # the spans were recorded (else the figure would mean nothing)
            names = {span.name for span in exporter.get_finished_spans()}
            if not any(name.startswith("tools/call") for name in names):
                raise RuntimeError(f"tracing was on but no tools/call span was recorded: {names}")
    return best


MODES = {
    "off": (False, False),
    "on": (True, True),
    "spans": (True, False),
    "metrics": (False, True),
    "sampled": (True, True),
}
PEER_MODES = ("peer-off", "peer-spans")  # the official SDK's server, without and with spans
SAMPLED_RATIO = 0.1  # "sampled": one trace in ten recorded (the others' spans do not record), metrics on


async def child(mode: str, n: int, repeat: int) -> dict[str, float]:
    if mode == "floor":
        return sdk_floor(n * 4, repeat)
    if mode in PEER_MODES:
        app, exporter = traced_peer(spans=mode == "peer-spans")
        return await _measure_works(app, n, repeat, exporter)
    spans, metrics = MODES[mode]
    if spans or metrics:
        app, exporter = traced_app(spans, metrics, SAMPLED_RATIO if mode == "sampled" else None)
    else:
        from bench import app as bench_app

        app, exporter = bench_app.app, None
    return await _measure_works(app, n, repeat, exporter)


async def _measure_works(app: Any, n: int, repeat: int, exporter: Any | None) -> dict[str, float]:
    task, inbox = await inproc.lifespan(app)
    figures = {work: await measure(app, work, n, repeat, exporter) for work in WORKS}
    await inbox.put({"type": "lifespan.shutdown"})
    await task
    return figures


def run_child(mode: str, n: int, repeat: int) -> dict[str, float]:
    command = [sys.executable, "-m", "bench.tracing_overhead", "--child", mode, "--n", str(n), "--repeat", str(repeat)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    figures: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=8, help="processes per mode, the order turned each round")
    parser.add_argument("--n", type=int, default=500, help="operations per block")
    parser.add_argument("--repeat", type=int, default=5, help="blocks per process; a process reports its best")
    parser.add_argument(
        "--modes",
        default="off,on",
        help="off, on (spans and metrics), spans, metrics, sampled (on, one trace in ten recorded), and "
        "floor (the SDK alone: no app, see sdk_floor), peer-off and peer-spans (the official MCP SDK's "
        "server without and with spans)",
    )
    parser.add_argument("--child", choices=(*MODES, *PEER_MODES, "floor"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args.child, args.n, args.repeat))), flush=True)
        return
    modes = args.modes.split(",")
    samples: dict[str, dict[str, list[float]]] = {mode: {} for mode in modes}
    for index in range(args.rounds):
        order = modes if index % 2 == 0 else modes[::-1]  # ABBA: drift hits every mode alike
        for mode in order:
            for work, us in run_child(mode, args.n, args.repeat).items():
                samples[mode].setdefault(work, []).append(us)
        print(
            f"round {index + 1}: "
            + json.dumps({m: {w: round(v[-1], 1) for w, v in s.items()} for m, s in samples.items()})
        )
    print(f"\nCPU µs per operation, median of {args.rounds} processes per mode")
    medians = {mode: {w: statistics.median(v) for w, v in s.items()} for mode, s in samples.items()}
    for mode, figures in medians.items():
        row = []
        for work, us in figures.items():
            baseline = "peer-off" if mode in PEER_MODES else "off"
            off = medians.get(baseline, {}).get(work)
            against = f" ({100 * (us - off) / off:+.1f}%, {us - off:+.1f} µs)" if off and mode != baseline else ""
            row.append(f"{work} {us:.1f}{against}")
        print(f"{mode:<8} " + "   ".join(row))


if __name__ == "__main__":
    main()
