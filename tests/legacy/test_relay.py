"""Two replicas (two servers, one key) and a real redis-server: a 2025-era session served by both.

Each test sends some requests of one session to replica A and others to replica B, as a
round-robin balancer would, and checks what the relay must make true: the answer reaches the
replica that asked, exactly once, and only for the session that was asked; streams resume on the
other replica; DELETE, cancellation and notifications reach every replica; a replica that is gone,
or Redis that is gone, gives a clear error instead of a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis

from fastapi_mrtr import MCP, InputRequiredConfig
from fastapi_mrtr.state import RedisRelay
from fastapi_mrtr.transport.legacy.cluster import SessionCluster, relayed_stream
from fastapi_mrtr.transport.legacy.events import EventLog
from fastapi_mrtr.wire.protocol import META_CLIENT_CAPABILITIES as CAPABILITIES_KEY
from fastapi_mrtr.wire.protocol import META_PROTOCOL_VERSION as PROTOCOL_KEY
from tests.legacy.conftest import build
from tests.legacy.peer import LegacyPeer, messages
from tests.scaleout.services import RedisServer
from tests.support import rpc_headers, running_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a redis-server and two servers per test


@dataclass
class Replica:
    mcp: MCP
    url: str
    redis_url: str


@dataclass
class Pair:
    a: Replica
    b: Replica
    redis: RedisServer


@contextlib.contextmanager
def _replica(redis_url: str, *, relay: RedisRelay | None = None, **options: Any) -> Iterator[Replica]:
    """A replica on uvicorn with a relay to ``redis_url`` (``relay`` for one with other options)."""
    mcp = build(relay=relay if relay is not None else RedisRelay(redis_url), **options)
    with running_server(mcp.app) as base:
        yield Replica(mcp, f"{base}/mcp", redis_url)


@pytest.fixture
def pair(redis_server: RedisServer) -> Iterator[Pair]:
    with _replica(redis_server.url) as a, _replica(redis_server.url) as b:
        yield Pair(a, b, redis_server)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


def _at(peer: LegacyPeer, replica: Replica) -> LegacyPeer:
    """The same session, its requests sent to ``replica``."""
    return LegacyPeer(peer.http, replica.url, version=peer.version, session_id=peer.session_id)


async def _next(stream: Any) -> Any:
    return await asyncio.wait_for(stream.__anext__(), 10)


def _text(message: dict[str, Any]) -> str:
    return str(json.loads(message["result"]["content"][0]["text"]))


async def _opened(peer: LegacyPeer) -> LegacyPeer:
    await peer.initialize()
    # The replicas listen on the relay from their first request: make sure both have had one.
    return peer


async def _warm(*replicas: Replica) -> None:
    for replica in replicas:
        relay = replica.mcp.options.relay
        assert relay is not None
        async with httpx.AsyncClient() as http:
            await http.post(replica.url, json={})  # any request starts the relay's subscriber
        for _ in range(100):
            if relay._subscribed.is_set():
                break
            await asyncio.sleep(0.02)


async def test_an_answer_posted_to_the_other_replica_reaches_the_call(pair: Pair, http: httpx.AsyncClient) -> None:
    await _warm(pair.a, pair.b)
    peer = await _opened(LegacyPeer(http, pair.a.url))
    on_b = _at(peer, pair.b)
    async with peer.call("two_questions") as (_, stream):
        found = messages(stream)
        name = await _next(found)
        assert (await on_b.answer(name["id"], {"action": "accept", "content": {"value": "Ada"}})).status_code == 202
        color = await _next(found)
        assert (await peer.answer(color["id"], {"action": "accept", "content": {"value": "teal"}})).status_code == 202
        assert _text(await _next(found)) == "Ada likes teal"
        # Exactly once: the same answer again, to either replica, finds nothing waiting.
        for again in (peer, on_b):
            late = await again.answer(name["id"], {"action": "accept", "content": {"value": "Eve"}})
            assert late.status_code == 400 and "awaits" in late.json()["error"]["message"]


async def test_another_session_cannot_answer_the_question(pair: Pair, http: httpx.AsyncClient) -> None:
    await _warm(pair.a, pair.b)
    victim = await _opened(LegacyPeer(http, pair.a.url))
    intruder = await _opened(LegacyPeer(http, pair.b.url))
    async with victim.call("confirm") as (_, stream):
        found = messages(stream)
        ask = await _next(found)
        forged = await intruder.answer(ask["id"], {"action": "accept", "content": {"value": False}})
        assert forged.status_code == 400
        # The question still waits for its own session, which answers it from the other replica.
        ok = await _at(victim, pair.b).answer(ask["id"], {"action": "accept", "content": {"value": True}})
        assert ok.status_code == 202
        assert _text(await _next(found)) == "confirmed"


async def test_a_stream_resumes_on_the_other_replica(redis_server: RedisServer, http: httpx.AsyncClient) -> None:
    with _replica(redis_server.url, legacy_sse_close_after=0.3) as a, _replica(redis_server.url) as b:
        await _warm(a, b)
        peer = await _opened(LegacyPeer(http, a.url))
        async with peer.call("slow") as (_, stream):
            seen = [event async for event in stream]  # closed by A after 0.3 s, mid-call
        assert not any(isinstance(e.data, dict) and "result" in e.data for e in seen)
        last_id = next(e.id for e in reversed(seen) if e.id)
        async with _at(peer, b).get(**{"last-event-id": last_id}) as (response, rest):
            assert response.status_code == 200, await response.aread()
            resumed = [event.data async for event in rest if event.data is not None]
        assert _text(resumed[-1]) == "slept"
        assert sum("result" in message for message in resumed) == 1


async def test_delete_on_one_replica_ends_the_session_on_every_replica(pair: Pair, http: httpx.AsyncClient) -> None:
    await _warm(pair.a, pair.b)
    peer = await _opened(LegacyPeer(http, pair.a.url))
    async with peer.call("confirm") as (_, stream):
        found = messages(stream)
        await _next(found)
        assert (await http.delete(pair.b.url, headers=_at(peer, pair.b).headers())).status_code == 200
        ended = [message async for message in found]  # the call on A was cancelled: its stream ends
        assert not any("result" in m for m in ended)
    for replica in (pair.a, pair.b):
        gone = await _at(peer, replica).request("ping")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == -32001


async def test_cancelled_on_the_other_replica_cancels_the_call(pair: Pair, http: httpx.AsyncClient) -> None:
    await _warm(pair.a, pair.b)
    peer = await _opened(LegacyPeer(http, pair.a.url))
    async with peer.call("confirm") as (_, stream):
        found = messages(stream)
        await _next(found)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": peer.next_id}}
        assert (await _at(peer, pair.b).post(cancel)).status_code == 202
        rest = await asyncio.wait_for(_drain(found), 5)
        assert not any("result" in m for m in rest)
    legacy = pair.a.mcp._endpoint.legacy
    assert legacy is not None and legacy.live.open_streams == 0


async def _drain(found: AsyncIterator[Any]) -> list[Any]:
    return [message async for message in found]


async def test_notifications_reach_sessions_on_every_replica(pair: Pair, http: httpx.AsyncClient) -> None:
    await _warm(pair.a, pair.b)
    peer = await _opened(LegacyPeer(http, pair.a.url))
    subscribed = await peer.request("resources/subscribe", {"uri": "test://doc"})
    assert subscribed.status_code == 200
    async with _at(peer, pair.b).get() as (response, stream):  # the GET stream is held by B
        assert response.status_code == 200
        found = messages(stream)
        await asyncio.sleep(0.2)
        async with peer.call("touch") as (_, answer):  # the change happens on A
            assert _text(await _next(messages(answer))) == "touched"
        first, second = await _next(found), await _next(found)
    methods = {first["method"], second["method"]}
    assert methods == {"notifications/resources/updated", "notifications/tools/list_changed"}
    updated = first if first["method"] == "notifications/resources/updated" else second
    assert updated["params"]["uri"] == "test://doc"


async def test_an_answer_for_a_replica_that_is_gone_fails_at_once(pair: Pair, http: httpx.AsyncClient) -> None:
    await _warm(pair.a, pair.b)
    peer = await _opened(LegacyPeer(http, pair.a.url))
    async with peer.call("confirm") as (_, stream):
        ask = await _next(messages(stream))
        await _die(pair.a, pair.b)
        lost = await _at(peer, pair.b).answer(ask["id"], {"action": "accept", "content": {"value": True}})
        assert lost.status_code == 503 and "stopped" in lost.json()["error"]["message"]


async def _die(replica: Replica, witness: Replica) -> None:
    """Make ``replica`` look dead to the others, as when its process is killed: it stops listening."""
    relay = replica.mcp.options.relay
    assert relay is not None and relay._listener is not None
    listener = relay._listener
    listener.get_loop().call_soon_threadsafe(listener.cancel)  # the replica's loop runs in its own thread
    for _ in range(100):
        if not await _alive(witness, relay.replica_id):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the replica still looks alive")


async def test_a_resumed_stream_of_a_replica_that_died_ends_with_an_error(
    redis_server: RedisServer, http: httpx.AsyncClient
) -> None:
    with _replica(redis_server.url) as b:
        # A round timeout longer than the test: the call could only end by A's death being noticed.
        slow_rounds = InputRequiredConfig(round_timeout=30)
        with _replica(redis_server.url, legacy_sse_close_after=0.2, input_required_config=slow_rounds) as a:
            await _warm(a, b)
            peer = await _opened(LegacyPeer(http, a.url))
            async with peer.call("confirm") as (_, stream):
                seen = [event async for event in stream]  # the question, then A closes the stream
            assert any(isinstance(e.data, dict) and e.data.get("method") == "elicitation/create" for e in seen)
            last_id = next(e.id for e in reversed(seen) if e.id)
            await _die(a, b)  # and its call never ends
            async with _at(peer, b).get(**{"last-event-id": last_id}) as (response, rest):
                assert response.status_code == 200
                resumed = await asyncio.wait_for(_drain(messages(rest)), 10)
        error = resumed[-1]["error"]
        assert error["code"] == -32603 and "stopped" in error["message"]
        assert resumed[-1]["id"] == peer.next_id


async def _alive(replica: Replica, other: str) -> bool:
    """Whether ``replica`` would find ``other`` alive (asked with a client of this test's own loop)."""
    relay = replica.mcp.options.relay
    assert relay is not None
    client = Redis.from_url(replica.redis_url)
    probe = RedisRelay(client, prefix=relay.prefix)
    probe.serve(relay.server)
    try:
        return await probe.alive(other)
    finally:
        await probe.aclose()
        await client.aclose()


async def test_redis_down_gives_a_clear_503_and_recovers(pair: Pair, http: httpx.AsyncClient) -> None:
    await _warm(pair.a, pair.b)
    peer = await _opened(LegacyPeer(http, pair.a.url))
    pair.redis.stop()
    down = await peer.request("ping")
    assert down.status_code == 503 and down.json()["error"]["code"] == -32603
    assert "relay" in down.json()["error"]["message"]
    pair.redis.start()
    for _ in range(100):
        back = await peer.request("ping")
        if back.status_code == 200:
            break
        await asyncio.sleep(0.1)
    assert back.status_code == 200


async def test_a_modern_listener_on_one_replica_hears_a_change_made_on_the_other(
    pair: Pair, http: httpx.AsyncClient
) -> None:
    """``subscriptions/listen`` (2026-07-28) streams are per process; the relay joins them up."""
    await _warm(pair.a, pair.b)
    body = {
        "jsonrpc": "2.0",
        "id": 77,
        "method": "subscriptions/listen",
        "params": {
            "_meta": {PROTOCOL_KEY: "2026-07-28", CAPABILITIES_KEY: {}},
            "notifications": {"toolsListChanged": True},
        },
    }
    frames = await asyncio.wait_for(_listen_while_touching(pair, http, body), 10)  # never, without the relay
    assert frames[-1]["method"] == "notifications/tools/list_changed"


async def _listen_while_touching(pair: Pair, http: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    async with http.stream("POST", pair.b.url, json=body, headers=rpc_headers("subscriptions/listen")) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            frames.append(json.loads(line[5:]))
            if len(frames) > 1:
                break
            peer = await _opened(LegacyPeer(http, pair.a.url))  # acknowledged: change the tools on A
            async with peer.call("touch") as (_, answer):
                assert _text(await _next(messages(answer))) == "touched"
    return frames


class _FinishingWhileCopying(RedisRelay):
    """A real relay whose first copy of a stream lets the call add its result and finish meanwhile,
    as a call does while the copy waits for Redis."""

    def __init__(self, url: str, log: EventLog, result: dict[str, Any]) -> None:
        super().__init__(url)
        self._log, self._result, self._first = log, result, True

    async def append(self, stream: str, events: Any, ttl: float) -> None:
        if self._first:
            self._first = False
            self._log.append(self._result)
            self._log.finish()
        await super().append(stream, events, ttl)


async def test_a_call_that_finishes_while_its_stream_is_copied_is_copied_to_its_end(
    redis_server: RedisServer,
) -> None:
    log = EventLog("r1.7")
    log.append({"jsonrpc": "2.0", "id": "r1.8", "method": "elicitation/create", "params": {}})
    result = {"jsonrpc": "2.0", "id": 3, "result": {"content": []}}
    relay = _FinishingWhileCopying(redis_server.url, log, result)
    try:
        cluster = SessionCluster(relay, event_ttl=60)
        cluster.mirror("k", log, 3)
        await asyncio.wait_for(cluster.drain(10), 15)
        copied = await relay.read_now(relayed_stream("k", log.stream_id), -1)
    finally:
        await relay.aclose()
    frames = [json.loads(fields["f"].split("data: ", 1)[1]) for _, fields in copied if "f" in fields]
    assert frames[-1] == result  # the result the call added during the first copy is there
    assert copied[-1][1] == {"end": "1"} and [seq for seq, _ in copied] == list(range(len(copied)))
