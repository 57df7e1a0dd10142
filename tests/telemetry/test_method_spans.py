"""Spans for what is no plain request: the client's notifications (both eras), subscriptions/listen,
a 2025-era session's GET stream and DELETE, resources/subscribe; and the client's spans for its
server/discover probe, its initialize and its notifications, and its session's duration."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from fastapi_mrtr.client import ClientOptions, MrtrClient
from tests.stdio.stdio_peers import python_server
from tests.telemetry.support import Recorder, attributes
from tests.telemetry.test_server_spans import HEADERS, MODERN_META

pytestmark = pytest.mark.anyio
LEGACY = "2025-11-25"


async def finished(recorder: Recorder, name: str, kind: str = "SERVER", count: int = 1) -> list[ReadableSpan]:
    """The finished spans named ``name``, waiting a little for a stream's span to end."""
    deadline = time.monotonic() + 5
    while True:
        spans = [s for s in recorder.spans(kind) if s.name == name]
        if len(spans) >= count or time.monotonic() > deadline:
            return spans
        await asyncio.sleep(0.02)


def assert_network(span_attributes: dict[str, Any]) -> None:
    assert span_attributes["network.transport"] == "tcp" and span_attributes["network.protocol.name"] == "http"
    assert span_attributes["client.address"] == "127.0.0.1" and isinstance(span_attributes["client.port"], int)


async def test_a_modern_notification_gets_a_server_span_without_a_request_id(shop: str, recorder: Recorder) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "_meta": MODERN_META}}
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.post(shop, json=body, headers={**HEADERS, "mcp-method": "notifications/cancelled"})
    assert response.status_code == 202 and response.content == b""
    (span,) = await finished(recorder, "notifications/cancelled")
    found = attributes(span)
    assert found["mcp.method.name"] == "notifications/cancelled"
    assert found["mcp.protocol.version"] == "2026-07-28"
    assert "jsonrpc.request.id" not in found and "error.type" not in found
    assert_network(found)
    points = [
        p for p in recorder.points("mcp.server.operation.duration") if p.attributes["mcp.method.name"] == span.name
    ]
    assert len(points) == 1 and points[0].count == 1


async def test_subscriptions_listen_is_one_span_for_the_whole_stream(shop: str, recorder: Recorder) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": MODERN_META},
    }
    headers = {**HEADERS, "mcp-method": "subscriptions/listen"}
    async with httpx.AsyncClient(timeout=10) as http, http.stream("POST", shop, json=body, headers=headers) as stream:
        assert stream.status_code == 200
        async for line in stream.aiter_lines():
            if line.startswith("data:"):
                break  # the acknowledgement: then the client leaves
        assert not await finished_now(recorder, "subscriptions/listen")  # open while the stream is
    (span,) = await finished(recorder, "subscriptions/listen")
    found = attributes(span)
    assert found["mcp.method.name"] == "subscriptions/listen" and found["jsonrpc.request.id"] == "listen-1"
    assert found["mcp.protocol.version"] == "2026-07-28"
    assert_network(found)


async def finished_now(recorder: Recorder, name: str) -> list[ReadableSpan]:
    return [s for s in recorder.spans("SERVER") if s.name == name]


async def test_a_legacy_session_traces_its_notifications_stream_and_delete(shop: str, recorder: Recorder) -> None:
    async with MrtrClient(shop, options=ClientOptions(mode="legacy")) as client:
        await client.list_tools()
        (initialize,) = await finished(recorder, "initialize")
        (initialized,) = await finished(recorder, "notifications/initialized")
        assert not await finished_now(recorder, "mcp.session.stream")  # the GET stream is still open
    (stream,) = await finished(recorder, "mcp.session.stream")
    (end,) = await finished(recorder, "mcp.session.end")
    session = attributes(initialized)["mcp.session.id"]
    assert session == attributes(end)["mcp.session.id"] == attributes(stream)["mcp.session.id"]
    for span in (initialized, stream, end):
        found = attributes(span)
        assert found["mcp.protocol.version"] == LEGACY and "error.type" not in found
        assert_network(found)
    assert attributes(initialized)["mcp.method.name"] == "notifications/initialized"
    assert "jsonrpc.request.id" not in attributes(initialized)
    assert attributes(stream)["mcp.stream.resumed"] is False
    assert attributes(initialize)["mcp.protocol.version"] == LEGACY
    (list_tools,) = await finished(recorder, "tools/list")
    assert attributes(list_tools)["mcp.session.id"] == session
    assert (end.start_time or 0) > (stream.start_time or 0) > (initialized.start_time or 0) > 0


async def test_legacy_resources_subscribe_and_cancelled_notifications_have_spans(shop: str, recorder: Recorder) -> None:
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }
    async with httpx.AsyncClient(timeout=10) as http:
        opened = await http.post(shop, json=hello, headers=headers)
        session = {**headers, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
        subscribe = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "shop://books"}}
        refused = (await http.post(shop, json=subscribe, headers=session)).json()
        cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}
        assert (await http.post(shop, json=cancelled, headers=session)).status_code == 202
    assert refused["error"]["code"] == -32601  # the bookshop serves no resources
    (span,) = await finished(recorder, "resources/subscribe")
    found = attributes(span)
    assert found["mcp.resource.uri"] == "shop://books" and found["jsonrpc.request.id"] == "2"
    assert found["error.type"] == "-32601" and found["mcp.protocol.version"] == LEGACY
    (cancel,) = await finished(recorder, "notifications/cancelled")
    assert attributes(cancel)["mcp.session.id"] == found["mcp.session.id"]
    # The duration metric keeps none of the span's many-valued attributes.
    (point,) = [
        p for p in recorder.points("mcp.server.operation.duration") if p.attributes["mcp.method.name"] == span.name
    ]
    assert point.attributes["error.type"] == "-32601" and point.attributes["mcp.protocol.version"] == LEGACY
    many_valued = {"mcp.resource.uri", "mcp.session.id", "jsonrpc.request.id", "client.address", "client.port"}
    assert not many_valued & set(point.attributes)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_clients_discover_and_initialize_get_client_spans(shop: str, recorder: Recorder, mode: Any) -> None:
    options = ClientOptions(mode=mode, telemetry=recorder.telemetry())
    async with MrtrClient(shop, options=options) as client:
        await client.list_tools()
    name = "server/discover" if mode == "auto" else "initialize"
    (sent,) = await finished(recorder, name, "CLIENT")
    (served,) = await finished(recorder, name)
    found = attributes(sent)
    assert found["mcp.method.name"] == name and found["jsonrpc.request.id"]
    assert found["server.address"] == "127.0.0.1" and isinstance(found["server.port"], int)
    assert found["mcp.protocol.version"] == ("2026-07-28" if mode == "auto" else LEGACY)
    # The context went out in params._meta: the server's span is the client span's child.
    assert served.parent is not None and served.parent.span_id == sent.get_span_context().span_id
    (listed,) = await finished(recorder, "tools/list", "CLIENT")
    assert listed.context is not None and listed.context.trace_id != sent.get_span_context().trace_id


async def test_a_legacy_clients_notifications_and_session_are_traced(shop: str, recorder: Recorder) -> None:
    """notifications/initialized and notifications/cancelled get client spans whose context the
    server's spans continue; closing the session records mcp.client.session.duration."""
    never = anyio.Event()

    async def waits_forever(params: Any) -> dict[str, Any]:
        await never.wait()
        raise AssertionError("unreachable")

    options = ClientOptions(mode="legacy", telemetry=recorder.telemetry())
    async with MrtrClient(shop, options=options) as client:
        client.set_elicitation_handler(waits_forever)
        with anyio.move_on_after(1.5):  # the person never answers: the client gives the call up
            await client.call_tool("place_order", {"book_id": 1, "quantity": 1})
        assert not recorder.points("mcp.client.session.duration")  # the session is still open
    for name in ("notifications/initialized", "notifications/cancelled"):
        (sent,) = await finished(recorder, name, "CLIENT")
        (served,) = await finished(recorder, name)
        found = attributes(sent)
        assert found["mcp.method.name"] == name and "jsonrpc.request.id" not in found
        assert found["mcp.protocol.version"] == LEGACY and found["server.address"] == "127.0.0.1"
        assert served.parent is not None and served.parent.span_id == sent.get_span_context().span_id
    (point,) = recorder.points("mcp.client.session.duration")
    assert point.attributes["mcp.protocol.version"] == LEGACY and point.attributes["network.transport"] == "tcp"
    # From initialize (inside the given-up call's 1.5 s) to the close: most of those 1.5 s.
    assert point.count == 1 and 1.0 < point.sum < 30


@pytest.mark.slow
async def test_a_stdio_legacy_session_traces_its_initialized_notification_and_duration(
    tmp_path: Path, recorder: Recorder
) -> None:
    env = {"BOOKSHOP_DB": str(tmp_path / "stdio-shop.db"), "MRTR_STATE_KEY": "k" * 32}
    options = ClientOptions(mode="legacy", telemetry=recorder.telemetry())
    async with MrtrClient(stdio=python_server("example_app.main:app", env), options=options) as client:
        await client.list_tools()
    (sent,) = await finished(recorder, "notifications/initialized", "CLIENT")
    assert attributes(sent)["network.transport"] == "pipe" and attributes(sent)["mcp.protocol.version"] == LEGACY
    (point,) = recorder.points("mcp.client.session.duration")
    assert point.attributes["network.transport"] == "pipe" and point.attributes["mcp.protocol.version"] == LEGACY
