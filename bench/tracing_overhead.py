"""CPU per operation with tracing off and on: the cost of OpenTelemetry spans and metrics.

Each measurement runs in a fresh process (``--child off|on``) that drives ``bench.app`` in-process
(``bench.inproc``: no uvicorn, no socket, so the difference is the application's own). "on" is an
SDK ``TracerProvider`` with a ``SimpleSpanProcessor`` into an ``InMemorySpanExporter`` and a
``MeterProvider`` with an ``InMemoryMetricReader``, given to the server through its ``Telemetry``
(``ServerOptions.telemetry``), the way docs/observability.md sets it up. Runs alternate
off, on, on, off, ... so drift on a shared machine hits both alike; the figures are medians.

    python -m bench.tracing_overhead --rounds 8 --n 500 --repeat 5
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

WORKS = ("echo", "mrtr")


def traced_app() -> tuple[Any, Any]:
    """``bench.app`` with its server's Telemetry on an in-memory SDK; returns (app, exporter)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from bench import app as bench_app

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    # ServerOptions is frozen and holds one Telemetry, shared by the whole endpoint: point it at ours.
    bench_app.mcp.options.telemetry.__init__(tracer_provider, meter_provider)  # type: ignore[misc]
    return bench_app.app, exporter


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


async def child(mode: str, n: int, repeat: int) -> dict[str, float]:
    if mode == "on":
        app, exporter = traced_app()
    else:
        from bench import app as bench_app

        app, exporter = bench_app.app, None
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
    parser.add_argument("--rounds", type=int, default=8, help="processes per mode (alternating off/on)")
    parser.add_argument("--n", type=int, default=500, help="operations per block")
    parser.add_argument("--repeat", type=int, default=5, help="blocks per process; a process reports its best")
    parser.add_argument("--child", choices=("off", "on"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args.child, args.n, args.repeat))), flush=True)
        return
    samples: dict[str, dict[str, list[float]]] = {mode: {w: [] for w in WORKS} for mode in ("off", "on")}
    for index in range(args.rounds):
        order = ("off", "on") if index % 2 == 0 else ("on", "off")  # ABBA: drift hits both alike
        for mode in order:
            for work, us in run_child(mode, args.n, args.repeat).items():
                samples[mode][work].append(us)
        print(f"round {index + 1}: " + json.dumps({m: {w: v[-1] for w, v in s.items()} for m, s in samples.items()}))
    print()
    print(f"{'operation':<10} {'off µs':>8} {'on µs':>8} {'overhead':>9}   (median of {args.rounds} processes each)")
    for work in WORKS:
        off, on = statistics.median(samples["off"][work]), statistics.median(samples["on"][work])
        label = "echo call" if work == "echo" else "MRTR flow"
        print(f"{label:<10} {off:>8.1f} {on:>8.1f} {100 * (on - off) / off:>8.1f}%")


if __name__ == "__main__":
    main()
