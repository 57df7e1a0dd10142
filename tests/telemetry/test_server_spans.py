"""Server spans by the MCP conventions: a two-question place_order in each era, links between rounds,
replicas, a client's traceparent, error.type, metrics, and nothing at all without an SDK."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from fastapi_mrtr.client import ClientOptions, MrtrClient
from fastapi_mrtr.telemetry.flows import hashed_flow_id
from fastapi_mrtr.wire import CallToolResult
from tests.support import running_server
from tests.telemetry.support import Recorder, attributes, bookshop

pytestmark = pytest.mark.anyio
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}
HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28"}
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def tools_call(http: httpx.AsyncClient, url: str, request_id: int, **params: Any) -> dict[str, Any]:
    meta = {**MODERN_META, **params.pop("meta", {})}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {**params, "_meta": meta}}
    headers = {**HEADERS, "mcp-method": "tools/call", "mcp-name": params["name"]}
    response = await http.post(url, json=body, headers=headers)
    return dict(response.json())


async def place_order(urls: list[str], meta: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The three requests of a two-question place_order, round i to urls[i % len(urls)]."""
    answers = [
        {},
        {"confirm": {"action": "accept", "content": {"confirmed": True}}},
        {"shipping": {"action": "accept", "content": {"speed": "express"}}},
    ]
    replies: list[dict[str, Any]] = []
    state = None
    async with httpx.AsyncClient(timeout=30) as http:
        for index, answer in enumerate(answers):
            params: dict[str, Any] = {"name": "place_order", "arguments": {"book_id": 1, "quantity": 1}}
            if state is not None:
                params.update(inputResponses=answer, requestState=state)
            if meta:
                params["meta"] = meta
            reply = await tools_call(http, urls[index % len(urls)], index + 1, **params)
            replies.append(reply)
            state = reply["result"].get("requestState")
    assert replies[-1]["result"].get("structuredContent", {}).get("status") == "placed", replies
    return replies


def server_spans(recorder: Recorder, name: str = "tools/call place_order") -> list[ReadableSpan]:
    return sorted((s for s in recorder.spans("SERVER") if s.name == name), key=lambda s: s.start_time or 0)


def assert_one_flow(rounds: list[ReadableSpan]) -> None:
    """Round numbers 1..n, one hashed flow id from the round that first asked, links to round 1."""
    assert [attributes(s)["mcp.mrtr.round"] for s in rounds] == list(range(1, len(rounds) + 1))
    flow_ids = {attributes(s)["mcp.mrtr.flow.id"] for s in rounds}
    assert len(flow_ids) == 1 and len(next(iter(flow_ids))) == 32
    first = rounds[0].get_span_context()
    assert not rounds[0].links
    for later in rounds[1:]:
        assert [link.context.span_id for link in later.links] == [first.span_id]
        assert [link.context.trace_id for link in later.links] == [first.trace_id]


async def test_a_modern_place_order_has_one_span_per_round_by_the_conventions(shop: str, recorder: Recorder) -> None:
    replies = await place_order([shop])
    rounds = server_spans(recorder)
    assert len(rounds) == 3
    first = attributes(rounds[0])
    assert first["mcp.method.name"] == "tools/call"
    assert first["gen_ai.tool.name"] == "place_order"
    assert first["gen_ai.operation.name"] == "execute_tool"
    assert first["jsonrpc.request.id"] == "1"
    assert first["mcp.protocol.version"] == "2026-07-28"
    assert first["network.transport"] == "tcp" and first["network.protocol.name"] == "http"
    assert first["network.protocol.version"] == "1.1"
    assert first["client.address"] == "127.0.0.1" and isinstance(first["client.port"], int)
    assert "error.type" not in first and "mcp.session.id" not in first
    assert [attributes(s)["jsonrpc.request.id"] for s in rounds] == ["1", "2", "3"]
    assert all(s.status.status_code.name == "UNSET" for s in rounds)
    assert_one_flow(rounds)
    # The flow id on the spans is a hash: the sealed one never leaves the token.
    assert all(replies[i]["result"]["requestState"] not in str(attributes(rounds[i])) for i in range(2))


async def test_rounds_served_by_two_replicas_link_to_round_one(
    recorder: Recorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = Recorder.new()
    with (
        running_server(bookshop(recorder.telemetry(), "example_app._replica_a")) as a,
        running_server(bookshop(other.telemetry(), "example_app._replica_b")) as b,
    ):
        await place_order([f"{a}/mcp", f"{b}/mcp"])
    on_a, on_b = server_spans(recorder), server_spans(other)
    assert len(on_a) == 2 and len(on_b) == 1  # rounds 1 and 3 on A, round 2 on B
    assert_one_flow(sorted([*on_a, *on_b], key=lambda s: attributes(s)["mcp.mrtr.round"]))


async def test_a_client_traceparent_is_the_parent_and_the_http_span_a_link(
    recorder: Recorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    app = OpenTelemetryMiddleware(bookshop(recorder.telemetry()), tracer_provider=recorder.tracer_provider)
    with running_server(app) as base:
        await place_order([f"{base}/mcp"], meta={"traceparent": TRACEPARENT, "tracestate": "rojo=00f067aa0ba902b7"})
    rounds = server_spans(recorder)
    http_spans = [s for s in recorder.spans("SERVER") if s.name.startswith("POST")]
    assert len(rounds) == 3 and len(http_spans) == 3
    for span in rounds:
        assert span.parent is not None and span.parent.is_remote
        assert span.context is not None and span.context.trace_id == int(TRACEPARENT.split("-")[1], 16)
        assert span.parent.span_id == int(TRACEPARENT.split("-")[2], 16)
        assert span.context.trace_state.to_header() == "rojo=00f067aa0ba902b7"
        http_ids = {s.get_span_context().span_id for s in http_spans}
        assert sum(link.context.span_id in http_ids for link in span.links) == 1
    assert_one_flow_links_skip_http(rounds, {s.get_span_context().span_id for s in http_spans})


def assert_one_flow_links_skip_http(rounds: list[ReadableSpan], http_ids: set[int]) -> None:
    first = rounds[0].get_span_context().span_id
    for later in rounds[1:]:
        assert [link.context.span_id for link in later.links if link.context.span_id not in http_ids] == [first]


async def test_without_a_traceparent_the_http_span_is_the_parent(
    recorder: Recorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    app = OpenTelemetryMiddleware(bookshop(recorder.telemetry()), tracer_provider=recorder.tracer_provider)
    with running_server(app) as base:
        await place_order([f"{base}/mcp"])
    http_ids = {s.get_span_context().span_id for s in recorder.spans("SERVER") if s.name.startswith("POST")}
    for span in server_spans(recorder):
        assert span.parent is not None and span.parent.span_id in http_ids


async def test_json_rpc_errors_and_tool_errors_set_error_type(shop: str, recorder: Recorder) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        refused = await tools_call(http, shop, 7, name="place_order", arguments={"book_id": 1}, requestState="v1.bad")
        failed = await tools_call(http, shop, 8, name="get_book", arguments={"book_id": 999})
    assert refused["error"]["code"] == -32602 and failed["result"]["isError"] is True
    bad_state = attributes(server_spans(recorder)[0])
    assert bad_state["error.type"] == "-32602" and bad_state["rpc.response.status_code"] == "-32602"
    assert server_spans(recorder)[0].status.status_code.name == "ERROR"
    assert server_spans(recorder)[0].status.description == refused["error"]["message"]
    tool_error = server_spans(recorder, "tools/call get_book")[0]
    assert attributes(tool_error)["error.type"] == "tool_error"
    assert "rpc.response.status_code" not in attributes(tool_error)
    assert tool_error.status.status_code.name == "ERROR"


async def test_the_operation_duration_metric_has_the_conventions_attributes(shop: str, recorder: Recorder) -> None:
    await place_order([shop])
    async with httpx.AsyncClient(timeout=30) as http:
        await tools_call(http, shop, 9, name="get_book", arguments={"book_id": 999})
    points = recorder.points("mcp.server.operation.duration")
    by_tool = {(p.attributes["gen_ai.tool.name"], p.attributes.get("error.type")): p for p in points}
    placed = by_tool[("place_order", None)]
    assert placed.count == 3 and placed.sum > 0
    assert placed.attributes["mcp.method.name"] == "tools/call"
    assert placed.attributes["mcp.protocol.version"] == "2026-07-28"
    assert placed.attributes["network.transport"] == "tcp"
    assert "jsonrpc.request.id" not in placed.attributes and "client.port" not in placed.attributes
    assert by_tool[("get_book", "tool_error")].count == 1
    assert tuple(placed.explicit_bounds)[:3] == (0.01, 0.02, 0.05)


class Shopper:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, params: Any) -> dict[str, Any]:
        self.asked.append(params.message)
        if "Shipping" in params.message:
            return {"action": "accept", "content": {"speed": "standard"}}
        return {"action": "accept", "content": {"confirmed": True}}


async def test_a_legacy_place_order_is_one_call_span_with_a_child_span_per_round(shop: str, recorder: Recorder) -> None:
    shopper = Shopper()
    async with MrtrClient(shop, options=ClientOptions(mode="legacy")) as client:
        client.set_elicitation_handler(shopper.elicit)
        result = await client.call_tool("place_order", {"book_id": 1, "quantity": 1})
    assert isinstance(result, CallToolResult) and result.structured_content["status"] == "placed"
    calls = server_spans(recorder)
    assert len(calls) == 1
    call = attributes(calls[0])
    assert call["mcp.protocol.version"] == "2025-11-25" and call["jsonrpc.request.id"]
    session = call["mcp.session.id"]
    assert [attributes(s)["mcp.session.id"] for s in recorder.spans("SERVER") if s.name != "initialize"] == [
        session
    ] * (len(recorder.spans("SERVER")) - 1)
    rounds = sorted(
        (s for s in recorder.spans("INTERNAL") if s.name == "mrtr.round tools/call place_order"),
        key=lambda s: s.start_time or 0,
    )
    assert len(rounds) == 3
    for span in rounds:
        assert span.parent is not None and span.parent.span_id == calls[0].get_span_context().span_id
    assert_one_flow(rounds)
    assert "initialize" in {s.name for s in recorder.spans("SERVER")}


async def test_a_legacy_session_ended_by_delete_records_its_duration(shop: str, recorder: Recorder) -> None:
    async with MrtrClient(shop, options=ClientOptions(mode="legacy")) as client:
        await client.list_tools()
    (point,) = recorder.points("mcp.server.session.duration")
    assert point.count == 1 and point.attributes["mcp.protocol.version"] == "2025-11-25"


def test_the_hashed_flow_id_is_stable_and_not_the_flow_id() -> None:
    assert hashed_flow_id("abc") == hashed_flow_id("abc") != hashed_flow_id("abd")
    assert "abc" not in hashed_flow_id("abc")


class _DropToolSampler:
    """Records what it was shown at span creation and drops one tool's spans, as a user's sampler may."""

    def __init__(self, dropped_tool: str) -> None:
        self.dropped_tool = dropped_tool
        self.seen: list[dict[str, Any]] = []

    def should_sample(self, parent_context: Any, trace_id: int, name: str, kind: Any = None,
                      attributes: Any = None, links: Any = None, trace_state: Any = None) -> Any:  # fmt: skip
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON, Decision, SamplingResult

        shown = dict(attributes or {})
        self.seen.append(shown)
        if shown.get("gen_ai.tool.name") == self.dropped_tool:
            return SamplingResult(Decision.DROP)
        return ALWAYS_ON.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        return f"drop {self.dropped_tool}"


async def test_a_sampler_sees_the_operations_attributes_when_the_span_is_created(recorder: Recorder) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    sampler = _DropToolSampler("get_book")
    recorder.tracer_provider = TracerProvider(sampler=sampler)  # type: ignore[arg-type]
    recorder.tracer_provider.add_span_processor(SimpleSpanProcessor(recorder.exporter))
    with running_server(bookshop(recorder.telemetry())) as base:
        async with httpx.AsyncClient(timeout=30) as http:
            await tools_call(http, f"{base}/mcp", 1, name="get_book", arguments={"book_id": 1})
        await place_order([f"{base}/mcp"])
    shown = [seen for seen in sampler.seen if seen.get("mcp.method.name") == "tools/call"]
    assert {seen.get("gen_ai.tool.name") for seen in shown} == {"get_book", "place_order"}
    assert all(seen["gen_ai.operation.name"] == "execute_tool" and "jsonrpc.request.id" in seen for seen in shown)
    names = {span.name for span in recorder.spans("SERVER")}
    assert "tools/call get_book" not in names and "tools/call place_order" in names
