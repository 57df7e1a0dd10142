"""``bench.app`` with FastAPI's own OpenTelemetry switched off: ``FastAPI(telemetry=...)`` all False.

FastAPI 0.165 looks on every request for a configured OpenTelemetry provider (its native HTTP
telemetry), which costs an echo call about a seventh of its CPU in process when none is configured.
This row shows what this project costs without that check; the project's own MCP spans are
configured apart (``ServerOptions.telemetry``) and are unaffected. The targets are measured on
``bench.app``, FastAPI's default.
"""

from __future__ import annotations

from bench.app import build_app

app, _ = build_app(fastapi_telemetry=False)
