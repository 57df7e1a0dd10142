"""A task's legs link to its creation: every tasks/* request and every later leg, on any replica.

Two replicas of the tasks app (each with its own exporter) share one task store, so the creating
span's context can only reach replica B through the stored record. Without tracing the record is
stored exactly as before (no trace key)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan

from fastapi_mrtr import MCP
from fastapi_mrtr.tasks import InMemoryTaskStore
from fastapi_mrtr.telemetry.flows import hashed_flow_id
from tests.support import running_server
from tests.tasks.peer import TaskPeer, accept
from tests.tasks.task_app import build
from tests.telemetry.support import Recorder, attributes

pytestmark = pytest.mark.anyio


def traced(mcp: MCP, recorder: Recorder) -> None:
    """Point the app's one Telemetry (its options are frozen) at ``recorder``'s providers."""
    mcp.options.telemetry.__init__(recorder.tracer_provider, recorder.meter_provider)  # type: ignore[misc]


@dataclass
class Replicas:
    a: TaskPeer
    b: TaskPeer
    on_a: Recorder
    on_b: Recorder
    store: InMemoryTaskStore

    def spans(self) -> list[ReadableSpan]:
        return sorted([*self.on_a.spans(), *self.on_b.spans()], key=lambda s: s.start_time or 0)


@pytest.fixture
def store() -> InMemoryTaskStore:
    return InMemoryTaskStore()


@pytest.fixture
def two_replicas(store: InMemoryTaskStore) -> Iterator[tuple[str, str, Recorder, Recorder]]:
    on_a, on_b = Recorder.new(), Recorder.new()
    app_a, mcp_a, _ = build(store)
    app_b, mcp_b, _ = build(store)
    traced(mcp_a, on_a)
    traced(mcp_b, on_b)
    with running_server(app_a) as a, running_server(app_b) as b:
        yield f"{a}/mcp", f"{b}/mcp", on_a, on_b


@pytest.fixture
async def replicas(
    two_replicas: tuple[str, str, Recorder, Recorder], store: InMemoryTaskStore
) -> AsyncIterator[Replicas]:
    url_a, url_b, on_a, on_b = two_replicas
    async with httpx.AsyncClient(timeout=10) as http:
        yield Replicas(TaskPeer(http, url_a), TaskPeer(http, url_b), on_a, on_b, store)


def link_ids(span: ReadableSpan) -> list[tuple[int, int, Any]]:
    return [(link.context.trace_id, link.context.span_id, dict(link.attributes or {})) for link in span.links]


async def test_every_later_request_and_leg_links_to_the_creating_span_across_replicas(replicas: Replicas) -> None:
    created = (await replicas.a.call("interview"))["result"]
    task_id = created["taskId"]
    await replicas.b.wait_for(task_id, "input_required")
    await replicas.b.update(task_id, {"name": accept({"name": "Ada"})})  # leg 2 runs on B
    parked = await replicas.a.wait_for(task_id, "input_required")
    while set(parked["inputRequests"]) == {"name"}:
        parked = await replicas.a.wait_for(task_id, "input_required")
    await replicas.a.update(task_id, {"color": accept({"color": "teal"}), "size": accept({"size": 41})})  # leg 3 on A
    done = await replicas.b.wait_for(task_id, "completed")
    assert done["result"]["content"][0]["text"].startswith("Ada teal 41")
    await replicas.b.cancel(task_id)  # acknowledged (already ended): still a request about the task

    (creation,) = [s for s in replicas.on_a.spans("SERVER") if s.name == "tools/call interview"]
    anchor = creation.get_span_context()
    stored = await replicas.store.get(task_id)
    assert stored is not None and stored.flow_id is not None
    flow = hashed_flow_id(stored.flow_id)
    assert attributes(creation)["mcp.mrtr.flow.id"] == flow and not creation.links
    expected_link = [(anchor.trace_id, anchor.span_id, {"mcp.task.created": True})]

    by_replica = {
        name: [s for s in recorder.spans("SERVER") if s.name.startswith("tasks/")]
        for name, recorder in (("a", replicas.on_a), ("b", replicas.on_b))
    }
    assert {s.name for s in by_replica["a"]} == {"tasks/get", "tasks/update"}
    assert {s.name for s in by_replica["b"]} == {"tasks/get", "tasks/update", "tasks/cancel"}
    for span in [*by_replica["a"], *by_replica["b"]]:
        assert link_ids(span) == expected_link, span.name
        assert attributes(span)["mcp.mrtr.flow.id"] == flow
        assert attributes(span)["mcp.method.name"] == span.name

    legs_a = [s for s in replicas.on_a.spans("INTERNAL") if s.name == "task.leg tools/call interview"]
    legs_b = [s for s in replicas.on_b.spans("INTERNAL") if s.name == "task.leg tools/call interview"]
    assert len(legs_a) == 1 and len(legs_b) == 1  # leg 1 is the tools/call itself; legs 2 and 3 replay
    updates = {s.get_span_context().span_id for s in by_replica["a"] + by_replica["b"] if s.name == "tasks/update"}
    for leg in [*legs_a, *legs_b]:
        assert link_ids(leg) == expected_link
        leg_attributes = attributes(leg)
        assert leg_attributes["mcp.mrtr.flow.id"] == flow
        assert leg_attributes["gen_ai.tool.name"] == "interview"
        assert leg_attributes["gen_ai.operation.name"] == "execute_tool"
        assert leg.parent is not None and leg.parent.span_id in updates  # started by the update that resumed it
    # The task id is a bearer secret: no span names it.
    assert all(task_id not in repr(attributes(s)) and task_id not in s.name for s in replicas.spans())


async def test_the_stored_task_carries_the_creating_spans_traceparent(replicas: Replicas) -> None:
    created = (await replicas.a.call("interview"))["result"]
    task_id = created["taskId"]
    await replicas.a.wait_for(task_id, "input_required")
    stored = await replicas.store.get(task_id)
    assert stored is not None and stored.trace_anchor is not None
    (creation,) = [s for s in replicas.on_a.spans("SERVER") if s.name == "tools/call interview"]
    context = creation.get_span_context()
    flags = int(context.trace_flags)
    assert stored.trace_anchor == f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags:02x}"
    # What the store keeps is the record's JSON: the anchor travels in it.
    assert json.loads(json.dumps(stored.to_json()))["trace_anchor"] == stored.trace_anchor


async def test_without_tracing_the_stored_task_has_no_trace_key() -> None:
    store = InMemoryTaskStore()
    app, _, _ = build(store)  # its Telemetry finds no SDK: the global providers are never set
    with running_server(app) as base:
        async with httpx.AsyncClient(timeout=10) as http:
            peer = TaskPeer(http, f"{base}/mcp")
            task_id = (await peer.call("interview"))["result"]["taskId"]
            await peer.wait_for(task_id, "input_required")
            await peer.update(task_id, {"name": accept({"name": "Ada"})})
            await peer.get(task_id)
    raw = store._records[task_id]
    assert "trace_anchor" not in raw and "traceparent" not in raw
    record = await store.get(task_id)
    assert record is not None and record.trace_anchor is None
    assert set(record.to_json()) == set(json.loads(raw))


@pytest.mark.slow  # a redis-server
async def test_two_replicas_on_redis_link_to_the_creation_through_the_stored_record(tmp_path: Path) -> None:
    from redis.asyncio import Redis

    from fastapi_mrtr.tasks.redis_store import RedisTaskStore
    from tests.scaleout.services import RedisServer

    redis_server = RedisServer(tmp_path / "redis")
    redis_server.start()
    try:
        on_a, on_b = Recorder.new(), Recorder.new()
        app_a, mcp_a, _ = build(RedisTaskStore(redis_server.url))
        app_b, mcp_b, _ = build(RedisTaskStore(redis_server.url))
        traced(mcp_a, on_a)
        traced(mcp_b, on_b)
        with running_server(app_a) as a, running_server(app_b) as b:
            async with httpx.AsyncClient(timeout=10) as http:
                peer_a, peer_b = TaskPeer(http, f"{a}/mcp"), TaskPeer(http, f"{b}/mcp")
                task_id = (await peer_a.call("interview"))["result"]["taskId"]
                await peer_b.wait_for(task_id, "input_required")
                await peer_b.update(task_id, {"name": accept({"name": "Ada"})})  # leg 2 on B
                await peer_a.wait_for(task_id, "input_required")
        raw = Redis.from_url(redis_server.url)
        try:
            stored = json.loads(await raw.get(f"mrtr:task:{task_id}"))
        finally:
            await raw.aclose()
    finally:
        redis_server.stop()
    (creation,) = [s for s in on_a.spans("SERVER") if s.name == "tools/call interview"]
    context = creation.get_span_context()
    assert stored["trace_anchor"].split("-")[1:3] == [f"{context.trace_id:032x}", f"{context.span_id:016x}"]
    expected_link = [(context.trace_id, context.span_id, {"mcp.task.created": True})]
    on_b_tasks = [s for s in on_b.spans("SERVER") if s.name.startswith("tasks/")]
    assert {s.name for s in on_b_tasks} == {"tasks/get", "tasks/update"}
    assert all(link_ids(s) == expected_link for s in on_b_tasks)
    (leg,) = [s for s in on_b.spans("INTERNAL") if s.name == "task.leg tools/call interview"]
    assert link_ids(leg) == expected_link
