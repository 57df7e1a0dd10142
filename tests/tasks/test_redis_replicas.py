"""Two replicas (two apps on real uvicorn, in one process) sharing tasks through a real redis-server.

Each replica has its own ``RedisTaskStore``, its own ``RedisRelay`` and its own leases, exactly as
two processes would; only the journal of what the handlers did is shared, so the tests can count.
A crashed runner is a record whose lease has lapsed (what SIGKILL leaves behind; the scale-out
test kills a real process); a graceful stop gives its leases back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from fastapi import Body, FastAPI
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context, ServerOptions
from fastapi_mrtr.state.redis_relay import RedisRelay
from fastapi_mrtr.tasks import TaskConfig
from fastapi_mrtr.tasks.record import TaskRecord, new_task_id, principal_digest
from fastapi_mrtr.tasks.redis_store import RedisTaskStore
from tests.scaleout.services import RedisServer
from tests.support import running_server
from tests.tasks.peer import TaskPeer, accept

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a redis-server and two servers per test
NOW = TaskConfig(promote_after=0, ttl_ms=60_000, poll_interval_ms=50)
KEY = "r" * 40


class NameForm(BaseModel):
    name: str


@dataclass
class Journal:
    charges: dict[str, int] = field(default_factory=dict)  # idempotency key -> calls the payment API saw
    cancelled: list[str] = field(default_factory=list)

    def charge(self, key: str) -> str:
        self.charges[key] = self.charges.get(key, 0) + 1  # one charge per key, however often it is asked
        return f"receipt-{key[:8]}"


def replica(redis_url: str, journal: Journal, *, lease_seconds: float, relay: bool = True) -> tuple[FastAPI, MCP]:
    app = FastAPI()
    options = ServerOptions(
        name="tasks-replicas",
        request_state_key=KEY,
        relay=RedisRelay(redis_url) if relay else None,
        task_lease_seconds=lease_seconds,
    )
    mcp = MCP(app, options=options, task_store=RedisTaskStore(redis_url))

    @mcp.tool(task=NOW)
    @app.post("/slow", response_class=PlainTextResponse)
    async def slow(seconds: Annotated[float, Body(embed=True)]) -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            journal.cancelled.append("slow")
            raise
        return f"slept {seconds:g} s"

    @mcp.tool(task=NOW)
    @app.post("/ask-then-charge", response_class=PlainTextResponse)
    async def ask_then_charge(ctx: Context) -> str:
        name = await ctx.elicit("Your name?", NameForm, key="name")
        assert name.content is not None
        return f"{name.content.name} {journal.charge(ctx.idempotency_key('charge'))}"

    @mcp.tool(task=NOW)
    @app.post("/charge-then-sleep", response_class=PlainTextResponse)
    async def charge_then_sleep(ctx: Context, seconds: Annotated[float, Body(embed=True)]) -> str:
        receipt = journal.charge(ctx.idempotency_key("charge"))
        await asyncio.sleep(seconds)
        return f"{receipt} after {seconds:g} s"

    @mcp.tool(task=TaskConfig(promote_after=0, ttl_ms=60_000, resumable=False))
    @app.post("/fragile", response_class=PlainTextResponse)
    async def fragile(seconds: Annotated[float, Body(embed=True)]) -> str:
        await asyncio.sleep(seconds)
        return "done"

    app.mount("/mcp", mcp)
    return app, mcp


@dataclass
class Pair:
    a: TaskPeer
    b: TaskPeer
    store: RedisTaskStore  # a third client, to look at and plant records
    journal: Journal
    stop_a: contextlib.ExitStack


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextlib.asynccontextmanager
async def pair_of(redis_url: str, *, lease_seconds: float, relay: bool = True) -> AsyncIterator[Pair]:
    journal = Journal()
    app_a, _ = replica(redis_url, journal, lease_seconds=lease_seconds, relay=relay)
    app_b, _ = replica(redis_url, journal, lease_seconds=lease_seconds, relay=relay)
    store = RedisTaskStore(redis_url)
    with contextlib.ExitStack() as stop_a, running_server(app_b) as base_b:
        base_a = stop_a.enter_context(running_server(app_a))
        async with httpx.AsyncClient(timeout=10) as http:
            a, b = TaskPeer(http, f"{base_a}/mcp", token="alice"), TaskPeer(http, f"{base_b}/mcp", token="alice")
            yield Pair(a, b, store, journal, stop_a)
    await store.aclose()


@pytest.fixture
async def pair(redis_server: RedisServer) -> AsyncIterator[Pair]:
    async with pair_of(redis_server.url, lease_seconds=30.0) as replicas:
        yield replicas


def acked(message: dict[str, Any]) -> bool:
    """The empty acknowledgement of tasks/update and tasks/cancel (``_meta`` aside)."""
    return {k: v for k, v in message["result"].items() if k != "_meta"} == {"resultType": "complete"}


async def created(peer: TaskPeer, tool: str, arguments: dict[str, Any] | None = None) -> str:
    message = await peer.call(tool, arguments)
    assert message["result"]["resultType"] == "task", message
    task_id: str = message["result"]["taskId"]
    return task_id


async def test_a_task_made_on_one_replica_is_read_answered_and_finished_through_the_other(pair: Pair) -> None:
    task_id = await created(pair.a, "ask_then_charge")
    asked = await pair.b.wait_for(task_id, "input_required")
    (key,) = asked["inputRequests"]
    assert acked(await pair.b.update(task_id, {key: accept({"name": "Ada"})}))
    done = await pair.a.wait_for(task_id, "completed")
    assert done["result"]["content"][0]["text"].startswith("Ada receipt-")
    assert list(pair.journal.charges.values()) == [1]


async def test_another_callers_task_id_answers_like_an_unknown_one_on_every_replica(pair: Pair) -> None:
    task_id = await created(pair.a, "slow", {"seconds": 5})
    for peer in (pair.a, pair.b):
        mine = await peer.get(task_id)
        assert mine["result"]["status"] == "working"
        peer.token = "mallory"
        for method, params in [
            ("tasks/get", {"taskId": task_id}),
            ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
            ("tasks/cancel", {"taskId": task_id}),
        ]:
            foreign = await peer.rpc(method, params, name=task_id)
            unknown_id = new_task_id()
            unknown = await peer.rpc(method, {**params, "taskId": unknown_id}, name=unknown_id)
            assert foreign["status"] == unknown["status"] == 400, (foreign, unknown)
            assert foreign["error"] == unknown["error"] and foreign["error"]["code"] == -32602
        peer.token = "alice"
    assert (await pair.b.get(task_id))["result"]["status"] == "working"  # mallory's cancel did nothing


async def test_a_cancel_on_one_replica_stops_the_leg_on_the_other_through_the_relay(pair: Pair) -> None:
    task_id = await created(pair.a, "slow", {"seconds": 20})
    began = time.monotonic()
    assert acked(await pair.b.cancel(task_id))
    ended = await pair.b.wait_for(task_id, "cancelled", timeout=5)
    # The lease is 30 s, so its heartbeat (every 10 s) cannot be what brought the cancel.
    assert time.monotonic() - began < 3, ended
    assert pair.journal.cancelled == ["slow"]


async def test_without_a_relay_the_cancel_arrives_with_the_runners_next_heartbeat(redis_server: RedisServer) -> None:
    async with pair_of(redis_server.url, lease_seconds=1.5, relay=False) as replicas:
        task_id = await created(replicas.a, "slow", {"seconds": 20})
        await replicas.b.cancel(task_id)
        assert (await replicas.b.get(task_id))["result"]["status"] == "working"  # A's leg still runs
        await replicas.b.wait_for(task_id, "cancelled", timeout=3)
        assert replicas.journal.cancelled == ["slow"]


async def plant_crashed(store: RedisTaskStore, tool: str, arguments: dict[str, Any], *, lapsed: bool = True) -> str:
    """A task as a replica killed mid-leg leaves it: working, its lease held by a dead process."""
    task = TaskRecord(
        task_id=new_task_id(),
        principal=principal_digest("Bearer alice"),
        tool=tool,
        arguments=arguments,
        ttl_ms=60_000,
        flow_id="flow-of-the-dead-replica",
        client_capabilities={"extensions": {"io.modelcontextprotocol/tasks": {}}},
        status_message="Working",
        lease_owner="dead-replica",
        lease_expires_at=time.time() + (-1 if lapsed else 30),
    )
    await store.create(task)
    return task.task_id


async def test_a_task_whose_runner_died_is_resumed_by_the_next_replica_that_reads_it(pair: Pair) -> None:
    task_id = await plant_crashed(pair.store, "charge_then_sleep", {"seconds": 0.2})
    # The dead replica had charged already, under the flow's idempotency key.
    first = await pair.b.get(task_id)
    assert first["result"]["status"] == "working"
    resumed = await pair.store.get(task_id)
    assert resumed is not None and resumed.lease_owner not in (None, "dead-replica")
    done = await pair.a.wait_for(task_id, "completed")
    assert done["result"]["content"][0]["text"].endswith("after 0.2 s")
    assert list(pair.journal.charges.values()) == [1]  # the replay asked under the same key: one charge


async def test_a_live_lease_is_left_alone(pair: Pair) -> None:
    task_id = await plant_crashed(pair.store, "charge_then_sleep", {"seconds": 0.2}, lapsed=False)
    for peer in (pair.a, pair.b, pair.a):
        assert (await peer.get(task_id))["result"]["status"] == "working"
    stored = await pair.store.get(task_id)
    assert stored is not None and stored.lease_owner == "dead-replica" and not pair.journal.charges


async def test_a_task_whose_tool_cannot_resume_fails_with_a_clear_error(pair: Pair) -> None:
    task_id = await plant_crashed(pair.store, "fragile", {"seconds": 0.1})
    failed = (await pair.b.get(task_id))["result"]
    assert failed["status"] == "failed", failed
    assert failed["error"]["code"] == -32603
    assert "interrupted" in failed["error"]["message"] and "resumable=False" in failed["error"]["message"]
    assert failed["error"]["data"] == {"reason": "task_interrupted"}
    assert (await pair.a.get(task_id))["result"]["error"] == failed["error"]


async def test_a_cancelled_task_whose_runner_died_ends_cancelled(pair: Pair) -> None:
    task_id = await plant_crashed(pair.store, "charge_then_sleep", {"seconds": 0.2})
    await pair.a.cancel(task_id)
    assert (await pair.b.get(task_id))["result"]["status"] == "cancelled"
    assert not pair.journal.charges


async def test_a_replica_that_stops_gracefully_hands_its_tasks_to_another(pair: Pair) -> None:
    task_id = await created(pair.a, "charge_then_sleep", {"seconds": 1.5})
    await pair.b.wait_for(task_id, "working")
    pair.stop_a.close()  # A shuts down: its leg is stopped and its lease given back, not cancelled
    stored = await pair.store.get(task_id)
    assert stored is not None and stored.status == "working" and stored.lease_owner is None
    done = await pair.b.wait_for(task_id, "completed")
    assert done["result"]["content"][0]["text"].endswith("after 1.5 s")
    assert list(pair.journal.charges.values()) == [2]  # asked twice, under one key: one charge
