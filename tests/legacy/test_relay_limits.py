"""The relay under pressure and faults (issue 27), with real redis-server and two replicas.

Resumed streams must not starve request-path commands, two servers on one Redis must not hear
each other, a call held here must be answerable after Redis restarts (and its stream still
resumes elsewhere), a replica must relay what it publishes before it has served any MCP request,
and a session's subscriptions in Redis are bounded and go with the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis

from fastapi_mrtr import InputRequiredConfig
from fastapi_mrtr.state import RedisRelay
from fastapi_mrtr.wire.protocol import META_CLIENT_CAPABILITIES as CAPABILITIES_KEY
from fastapi_mrtr.wire.protocol import META_PROTOCOL_VERSION as PROTOCOL_KEY
from tests.legacy.peer import LegacyPeer, messages
from tests.legacy.test_relay import _alive, _at, _next, _replica, _text, _warm
from tests.scaleout.services import RedisServer
from tests.support import rpc_headers

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a redis-server and two servers per test


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=15) as client:
        yield client


async def test_resumed_streams_do_not_starve_other_sessions(redis_server: RedisServer, http: httpx.AsyncClient) -> None:
    """Twelve streams resumed on B, with B's request pool of four connections: other sessions'
    requests on B still answer (each resumed stream used to hold one pooled connection)."""
    url = redis_server.url
    slow_rounds = InputRequiredConfig(round_timeout=30)
    with (
        _replica(url, legacy_sse_close_after=0.2, input_required_config=slow_rounds) as a,
        _replica(url, relay=RedisRelay(url, pool_size=4, pool_wait=3)) as b,
    ):
        await _warm(a, b)
        heavy = LegacyPeer(http, a.url)
        await heavy.initialize()
        last_ids = []
        for _ in range(12):
            async with heavy.call("confirm") as (_, stream):
                seen = [event async for event in stream]  # the question, then A closes the stream
            last_ids.append(next(e.id for e in reversed(seen) if e.id))
        async with contextlib.AsyncExitStack() as stack:
            for last_id in last_ids:
                response, _ = await stack.enter_async_context(_at(heavy, b).get(**{"last-event-id": last_id}))
                assert response.status_code == 200
            await asyncio.sleep(0.5)  # every resumed stream now waits for its call's next event
            other = LegacyPeer(http, b.url)
            await other.initialize()
            for _ in range(5):
                ping = await other.request("ping")
                assert ping.status_code == 200, ping.text
            relay = b.mcp.options.relay
            assert relay is not None and relay._streams.waiting == 12  # on one connection


async def test_two_servers_on_one_redis_do_not_hear_each_other(
    redis_server: RedisServer, http: httpx.AsyncClient
) -> None:
    """Same server name, different database numbers: pub/sub ignores the database."""
    db0, db1 = redis_server.url, redis_server.url.rsplit("/", 1)[0] + "/1"
    with _replica(db0) as x, _replica(db1) as y:
        await _warm(x, y)
        body = _listen_body({"resourceSubscriptions": ["test://x", "test://y"]})
        async with http.stream("POST", y.url, json=body, headers=rpc_headers("subscriptions/listen")) as response:
            assert response.status_code == 200
            frames = _frames(response)
            await _next(frames)  # acknowledged
            x.mcp.notify_resource_updated("test://x")  # another server's change
            await asyncio.sleep(0.5)
            y.mcp.notify_resource_updated("test://y")
            heard = await _next(frames)
        assert heard["params"]["uri"] == "test://y"


async def test_a_call_held_here_is_answered_after_redis_restarts(
    redis_server: RedisServer, http: httpx.AsyncClient
) -> None:
    """Redis restarts empty while a call waits on A: the answer posted to A reaches it; A writes
    its waits back, so a question asked before the restart is also answerable through B; the
    call's stream, copied again once Redis is back, resumes on B to its end."""
    url = redis_server.url
    slow_rounds = InputRequiredConfig(round_timeout=30)
    with (
        _replica(url, legacy_sse_close_after=0.3, input_required_config=slow_rounds) as a,
        _replica(url, input_required_config=slow_rounds) as b,
    ):
        await _warm(a, b)
        peer = await _initialized(LegacyPeer(http, a.url))
        async with peer.call("two_questions") as (_, stream):
            seen = [event async for event in stream]  # the first question; A closes the stream
        name = next(e.data for e in seen if isinstance(e.data, dict) and e.data.get("method") == "elicitation/create")
        redis_server.stop()
        redis_server.start()
        relay_a = a.mcp.options.relay
        assert relay_a is not None
        answered = await peer.answer(name["id"], {"action": "accept", "content": {"value": "Ada"}})
        assert answered.status_code == 202, answered.text  # 400 before: the relay forgot the wait
        # The second question is asked after the restart; the answer lands on B.
        for _ in range(100):
            if await _alive(b, relay_a.replica_id):
                break
            await asyncio.sleep(0.05)
        last_id = next(e.id for e in reversed(seen) if e.id)
        async with _at(peer, b).get(**{"last-event-id": last_id}) as (response, rest):
            assert response.status_code == 200, await response.aread()
            found = messages(rest)
            color = await _next(found)
            assert color["method"] == "elicitation/create"
            ok = await _at(peer, b).answer(color["id"], {"action": "accept", "content": {"value": "teal"}})
            assert ok.status_code == 202, ok.text
            assert _text(await _next(found)) == "Ada likes teal"


async def test_waits_are_written_back_after_redis_restarts(redis_server: RedisServer, http: httpx.AsyncClient) -> None:
    url = redis_server.url
    slow_rounds = InputRequiredConfig(round_timeout=30)
    with (
        _replica(url, input_required_config=slow_rounds) as a,
        _replica(url) as b,
    ):
        await _warm(a, b)
        peer = await _initialized(LegacyPeer(http, a.url))
        async with peer.call("confirm") as (_, stream):
            found = messages(stream)
            ask = await _next(found)
            redis_server.stop()
            redis_server.start()
            relay = a.mcp.options.relay
            assert relay is not None
            await _until(lambda: relay._subscribed.is_set(), "A's subscriber is back")
            for _ in range(50):  # A writes its wait back once it has reconnected
                answer = await _at(peer, b).answer(ask["id"], {"action": "accept", "content": {"value": True}})
                if answer.status_code == 202:
                    break
                await asyncio.sleep(0.1)
            assert answer.status_code == 202, answer.text
            assert _text(await _next(found)) == "confirmed"


async def test_a_replica_relays_before_its_first_mcp_request(
    redis_server: RedisServer, http: httpx.AsyncClient
) -> None:
    """B has served no MCP request: what it publishes still reaches A's listeners (the relay and
    the loop start with the app's lifespan)."""
    url = redis_server.url
    with _replica(url) as a, _replica(url) as b:
        await _warm(a)
        relay_b = b.mcp.options.relay
        assert relay_b is not None
        await _until(lambda: relay_b._subscribed.is_set(), "B listens from its startup")
        body = _listen_body({"toolsListChanged": True})
        async with http.stream("POST", a.url, json=body, headers=rpc_headers("subscriptions/listen")) as response:
            frames = _frames(response)
            await _next(frames)
            b.mcp.notify_tools_changed()
            heard = await _next(frames)
        assert heard["method"] == "notifications/tools/list_changed"


async def test_subscriptions_in_redis_are_bounded_and_go_with_the_session(
    redis_server: RedisServer, http: httpx.AsyncClient
) -> None:
    url = redis_server.url
    with _replica(url, legacy_max_subscriptions=2) as a:
        peer = await _initialized(LegacyPeer(http, a.url))
        for uri in ("test://1", "test://2"):
            assert (await peer.request("resources/subscribe", {"uri": uri})).json()["result"] == {}
        full = await peer.request("resources/subscribe", {"uri": "test://3"})
        assert full.json()["error"]["code"] == -32600
        long = await peer.request("resources/subscribe", {"uri": "test://" + "x" * 3000})
        assert long.json()["error"]["code"] == -32602
        client = Redis.from_url(url)
        try:
            keys = await client.keys("mrtr:legacy:subs:*")
            assert len(keys) == 1 and await client.scard(keys[0]) == 2
            assert (await http.delete(peer.url, headers=peer.headers())).status_code == 200
            assert await client.keys("mrtr:legacy:subs:*") == []
        finally:
            await client.aclose()


# --- helpers -----------------------------------------------------------------------------------


async def _initialized(peer: LegacyPeer) -> LegacyPeer:
    await peer.initialize()
    return peer


async def _until(check: Any, what: str) -> None:
    for _ in range(200):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never true: {what}")


def _listen_body(notifications: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "subscriptions/listen",
        "params": {"_meta": {PROTOCOL_KEY: "2026-07-28", CAPABILITIES_KEY: {}}, "notifications": notifications},
    }


async def _frames(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            yield json.loads(line[5:])
