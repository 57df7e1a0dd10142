"""Three uvicorn replicas of the bookshop behind nginx round robin (no stickiness), one shared key.

The load: 2,000 ``place_order`` flows (three tools/call requests each), 100 at a time. Every flow
must complete with its own receipt and its own order row, and the rounds of most flows must be
served by more than one replica (``x-replica`` header, cross-checked with nginx's upstream log).
The negative control restarts the replicas with per-process keys: round two then fails.
With Redis single use on, a used state is refused by every replica, and a Redis outage refuses
rounds without losing them.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitResult

from tests.scaleout.conftest import StartNginx, StartReplicas, new_key
from tests.scaleout.flows import (
    McpWire,
    OrderSpec,
    Outcome,
    input_request,
    mismatched_orders,
    order_round_one,
    order_round_three,
    order_round_two,
    run_order_flows,
    stored_orders,
    summarise,
)
from tests.scaleout.services import RedisServer

FLOWS = 2000
CONCURRENCY = 100
LOAD_TIMEOUT = 150.0

pytestmark = [pytest.mark.slow, pytest.mark.timeout(280)]


def databases(db_dir: Path, names: list[str]) -> dict[str, Path]:
    return {name: db_dir / f"{name}.db" for name in names}


def test_2000_flows_across_three_replicas_behind_nginx_and_negative_control(
    start_replicas: StartReplicas, start_nginx: StartNginx, db_dir: Path
) -> None:
    replicas = start_replicas(3, env={"MRTR_STATE_KEY": new_key()})
    nginx = start_nginx(replicas.ports)
    url = nginx.url + "/mcp"

    specs = [OrderSpec.numbered(i) for i in range(FLOWS)]
    began = time.monotonic()
    outcomes = asyncio.run(run_order_flows(url, specs, concurrency=CONCURRENCY, timeout=LOAD_TIMEOUT))
    summary = summarise(outcomes, began)
    print(f"\nnginx + 3 uvicorn replicas: {summary.describe()}")

    assert not summary.failed, f"{len(summary.failed)} flows failed, e.g. {[o.problem for o in summary.failed[:5]]}"
    assert mismatched_orders(outcomes, databases(db_dir, replicas.names)) == []
    assert set(summary.served) == set(replicas.names), summary.served
    assert summary.crossed >= FLOWS // 2, f"only {summary.crossed} of {FLOWS} flows crossed replicas"
    # nginx's own log tells the same story: the tool calls went to all three upstreams.
    upstreams = Counter(re.findall(r"upstream=(\S+) mcp_method=tools/call", "\n".join(nginx.access_log())))
    assert set(upstreams) == {f"127.0.0.1:{port}" for port in replicas.ports}, upstreams
    assert sum(upstreams.values()) == 3 * FLOWS

    # Negative control: the same rig with a per-process (ephemeral) key in each replica.
    replicas.restart({"MRTR_STATE_KEY": None})
    for replica in replicas:
        assert "ephemeral per-process key" in replica.log_text()
    refused = asyncio.run(second_rounds_with_unshared_keys(url, flows=24))
    print(f"negative control: {refused} of 24 second rounds landed on another replica, all refused")
    assert refused >= 12, f"only {refused} second rounds landed on another replica"


async def second_rounds_with_unshared_keys(url: str, *, flows: int) -> int:
    """Round two of each flow, sequentially; returns how many landed on another replica (all refused)."""
    refused = 0
    async with httpx.AsyncClient(timeout=30.0) as http:
        wire = McpWire(http, url)
        for index in range(flows):
            spec = OrderSpec.numbered(index, tag="control")
            outcome = Outcome(spec)
            state = await order_round_one(wire, spec, outcome)
            reply = await wire.call("place_order", spec.arguments, responses=spec.confirm, state=state)
            if reply.replica == outcome.replicas[0]:
                input_request(reply, "shipping")  # the same replica can open its own state
                continue
            assert reply.status == 400 and reply.is_invalid_state, reply.body
            message = reply.body["error"]["message"]
            # Replicas with generated keys are told what is wrong and what to set (issue 28).
            assert message.startswith("Invalid or expired requestState") and "MRTR_STATE_KEY" in message, message
            refused += 1
    return refused


class Shopper:
    """An elicitation callback for one order: confirms, then picks its own speed and note."""

    def __init__(self, spec: OrderSpec) -> None:
        self.spec = spec
        self.asked: list[str] = []

    async def __call__(self, ctx: Any, params: Any) -> ElicitResult:
        key = str(ctx.request_id)
        self.asked.append(key)
        if key == "confirm":
            assert params.message == self.spec.question
            return ElicitResult(action="accept", content={"confirmed": True})
        return ElicitResult(action="accept", content={"speed": self.spec.speed, "gift_note": self.spec.note})


@contextlib.asynccontextmanager
async def official_client(url: str, replicas: list[str], **options: Any) -> AsyncIterator[Client]:
    """The official client (mcp 2.3.0), recording the ``x-replica`` of every tools/call reply."""

    async def record(response: httpx2.Response) -> None:
        if response.request.headers.get("mcp-method") == "tools/call":
            replicas.append(response.headers.get("x-replica", "?"))

    async with (
        httpx2.AsyncClient(event_hooks={"response": [record]}, timeout=30.0) as http,
        Client(streamable_http_client(url, http_client=http), mode="2026-07-28", **options) as client,
    ):
        yield client


async def official_order(url: str, spec: OrderSpec) -> tuple[dict[str, Any], list[str], list[str]]:
    shopper = Shopper(spec)
    served: list[str] = []
    async with official_client(url, served, elicitation_callback=shopper) as client:
        result = await client.call_tool("place_order", spec.arguments)
    assert result.is_error is False and result.structured_content is not None
    return result.structured_content, shopper.asked, served


def test_official_client_flows_across_replicas_and_unshared_keys(
    start_replicas: StartReplicas, start_nginx: StartNginx, tmp_path: Path
) -> None:
    replicas = start_replicas(3, env={"MRTR_STATE_KEY": new_key()})
    nginx = start_nginx(replicas.ports)
    url = nginx.url + "/mcp"
    specs = [OrderSpec.numbered(i, tag="official") for i in range(30)]

    async def all_orders() -> list[tuple[dict[str, Any], list[str], list[str]]]:
        return await asyncio.wait_for(asyncio.gather(*(official_order(url, s) for s in specs)), 60)

    results = asyncio.run(all_orders())
    crossed = 0
    for spec, (receipt, asked, served) in zip(specs, results, strict=True):
        assert {k: receipt[k] for k in spec.expected_receipt} == spec.expected_receipt
        assert asked == ["confirm", "shipping"]
        assert len(served) == 3, served
        crossed += len(set(served)) > 1
    assert crossed >= len(specs) // 2, f"only {crossed} of {len(specs)} official-client flows crossed replicas"

    replicas.restart({"MRTR_STATE_KEY": None})
    spec = OrderSpec.numbered(0, tag="official-control")

    async def refused() -> tuple[MCPError, list[str]]:
        served: list[str] = []
        async with official_client(url, served, elicitation_callback=Shopper(spec)) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("place_order", spec.arguments)
        return caught.value, served

    error, served = asyncio.run(refused())
    assert len(served) == 2 and served[0] != served[1], served  # strict rotation: round two elsewhere
    assert error.error.code == -32602
    assert error.error.data == {"reason": "invalid_request_state"}


def test_single_use_state_with_redis_across_three_replicas(
    redis_server: RedisServer, start_replicas: StartReplicas, start_nginx: StartNginx, db_dir: Path
) -> None:
    replicas = start_replicas(3, env={"MRTR_STATE_KEY": new_key(), "MRTR_REDIS_URL": redis_server.url})
    nginx = start_nginx(replicas.ports)
    url = nginx.url + "/mcp"

    # Single use costs no flow: 300 concurrent flows all complete, rounds crossing replicas.
    specs = [OrderSpec.numbered(i, tag="redis") for i in range(300)]
    began = time.monotonic()
    summary = summarise(asyncio.run(run_order_flows(url, specs, concurrency=50, timeout=90)), began)
    print(f"\nnginx + 3 replicas + Redis single use: {summary.describe()}")
    assert not summary.failed, [o.problem for o in summary.failed[:5]]
    assert summary.crossed >= len(specs) // 2

    asyncio.run(replays_refused_everywhere(url, replicas.ports, db_dir, replicas.names))
    asyncio.run(redis_outage_mid_flow(url, redis_server))


async def replays_refused_everywhere(url: str, ports: list[int], db_dir: Path, names: list[str]) -> None:
    spec = OrderSpec.numbered(7, tag="replayed")
    async with httpx.AsyncClient(timeout=30.0) as http:
        wire = McpWire(http, url)
        outcome = Outcome(spec)
        first = await order_round_one(wire, spec, outcome)
        second = await order_round_two(wire, spec, outcome, first)
        direct = [f"http://127.0.0.1:{port}/mcp" for port in ports]
        # The used round-one state, replayed at each replica in turn: refused by all three.
        for replica_url in direct:
            reply = await wire.call("place_order", spec.arguments, responses=spec.confirm, state=first, url=replica_url)
            assert reply.status == 400 and reply.is_invalid_state, (replica_url, reply.body)
        # The last round sent to all three replicas at once: exactly one places the order.
        replies = await asyncio.gather(
            *(
                wire.call("place_order", spec.arguments, responses=spec.shipping, state=second, url=replica_url)
                for replica_url in direct
            )
        )
    done = [r for r in replies if r.status == 200]
    assert len(done) == 1 and done[0].result["structuredContent"]["status"] == "placed", [r.body for r in replies]
    assert all(r.is_invalid_state for r in replies if r.status != 200)
    notes = [row[3] for row in stored_orders(databases(db_dir, names).values()).values()]
    assert notes.count(spec.note) == 1


async def redis_outage_mid_flow(url: str, redis_server: RedisServer) -> None:
    """Redis down: the round is refused (503) on whichever replica; once it is back the same round passes."""
    spec = OrderSpec.numbered(8, tag="outage")
    async with httpx.AsyncClient(timeout=30.0) as http:
        wire = McpWire(http, url)
        outcome = Outcome(spec)
        state = await order_round_one(wire, spec, outcome)
        redis_server.stop()
        seen = set()
        for _ in range(3):
            reply = await wire.call("place_order", spec.arguments, responses=spec.confirm, state=state)
            assert reply.status == 503 and reply.error is not None, reply.body
            assert reply.error["data"] == {"reason": "replay_store_unavailable"}
            seen.add(reply.replica)
        assert len(seen) == 3  # every replica fails closed
        redis_server.start()
        state = await order_round_two(wire, spec, outcome, state)
        await order_round_three(wire, spec, outcome, state)
    assert outcome.receipt is not None and outcome.receipt["status"] == "placed"


def test_public_host_names_behind_nginx_need_allowed_hosts(
    start_replicas: StartReplicas, start_nginx: StartNginx
) -> None:
    """nginx passes the client's Host on; the replicas refuse names they were not told about (421)."""
    replicas = start_replicas(
        2, per_replica=lambda i: {"MRTR_STATE_KEY": new_key(), "BOOKSHOP_ALLOWED_HOSTS": "shop.test" if i else ""}
    )
    configured, unconfigured = replicas[1], replicas[0]
    nginx = start_nginx([configured.port])
    bare = start_nginx([unconfigured.port])

    async def status(url: str, host: str) -> int:
        async with httpx.AsyncClient(headers={"Host": host}, timeout=30.0) as http:
            reply = await McpWire(http, url + "/mcp").call("get_book", {"book_id": 1})
        return reply.status

    async def statuses() -> list[int]:
        return [
            await status(nginx.url, "shop.test"),
            await status(nginx.url, "other.test"),
            await status(bare.url, "shop.test"),
            await status(bare.url, f"127.0.0.1:{bare.port}"),
        ]

    assert asyncio.run(statuses()) == [200, 421, 421, 200]
