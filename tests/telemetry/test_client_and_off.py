"""The client's spans and the traceparent it sends; and with no SDK configured, nothing recorded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fastapi_mrtr import Telemetry
from fastapi_mrtr.client import ClientOptions, McpServerError, MrtrClient
from fastapi_mrtr.telemetry import setup
from fastapi_mrtr.wire import CallToolResult
from tests.support import running_server
from tests.telemetry.support import Recorder, attributes, bookshop
from tests.telemetry.test_server_spans import Shopper

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_client_spans_are_the_parents_of_the_server_spans(shop: str, recorder: Recorder, mode: Any) -> None:
    options = ClientOptions(mode=mode, telemetry=recorder.telemetry())
    async with MrtrClient(shop, options=options) as client:
        client.set_elicitation_handler(Shopper().elicit)
        result = await client.call_tool("place_order", {"book_id": 1, "quantity": 1})
    assert isinstance(result, CallToolResult) and not result.is_error
    clients = [s for s in recorder.spans("CLIENT") if s.name == "tools/call place_order"]
    servers = [s for s in recorder.spans("SERVER") if s.name == "tools/call place_order"]
    assert len(clients) == (3 if mode == "2026-07-28" else 1) == len(servers)
    client_ids = {s.get_span_context().span_id for s in clients}
    for server in servers:
        assert server.parent is not None and server.parent.span_id in client_ids
    first = attributes(clients[0])
    assert first["mcp.method.name"] == "tools/call" and first["gen_ai.tool.name"] == "place_order"
    assert first["server.address"] == "127.0.0.1" and isinstance(first["server.port"], int)
    assert first["jsonrpc.request.id"] and first["network.transport"] == "tcp"
    (point,) = [p for p in recorder.points("mcp.client.operation.duration") if p.attributes.get("gen_ai.tool.name")]
    assert point.count == len(clients) and point.attributes["mcp.method.name"] == "tools/call"


async def test_a_client_error_sets_error_type(shop: str, recorder: Recorder) -> None:
    options = ClientOptions(mode="2026-07-28", telemetry=recorder.telemetry())
    async with MrtrClient(shop, options=options) as client:
        with pytest.raises(McpServerError):
            await client.request("no/such/method")
    (span,) = [s for s in recorder.spans("CLIENT") if s.name == "no/such/method"]
    assert attributes(span)["error.type"] == "-32601" and span.status.status_code.name == "ERROR"


async def test_without_an_sdk_nothing_is_built_or_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOKSHOP_DB", str(tmp_path / "shop.db"))
    idle = Telemetry()  # the global providers: no SDK was ever set in this process
    assert idle.instruments() is None
    resolved: list[Any] = []
    original = setup.Telemetry._resolve

    def spy(self: setup.Telemetry, *args: Any) -> Any:
        resolved.append(original(self, *args))
        return resolved[-1]

    monkeypatch.setattr(setup.Telemetry, "_resolve", spy)
    with running_server(bookshop(idle, "example_app._untraced")) as base:
        async with MrtrClient(f"{base}/mcp") as client:
            client.set_elicitation_handler(Shopper().elicit)
            result = await client.call_tool("place_order", {"book_id": 1, "quantity": 1})
    assert isinstance(result, CallToolResult) and not result.is_error
    # The API's proxies were looked at once per Telemetry (the server's, the client's), never per
    # request, and never became a tracer or an instrument.
    assert resolved == [None, None]


def test_a_telemetry_finds_the_sdk_its_providers_name() -> None:
    recorder = Recorder.new()
    instruments = recorder.telemetry().instruments()
    assert instruments is not None and instruments.tracer is not None
    assert instruments.operation_duration is not None


GLOBAL_SDK_LATER = """
import time
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from fastapi_mrtr import Telemetry

telemetry = Telemetry()  # the global providers
assert telemetry.instruments() is None
trace.set_tracer_provider(TracerProvider())  # an SDK set up globally while serving
print("at once:", telemetry.instruments() is not None)
time.sleep(1.1)
found = telemetry.instruments()
print("a second later:", found is not None and found.tracer is not None)
"""


def test_a_global_sdk_set_up_later_is_found_within_a_second() -> None:
    # Its own process: OpenTelemetry's global providers can be set once per process.
    done = subprocess.run([sys.executable, "-c", GLOBAL_SDK_LATER], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["at once: False", "a second later: True"]
