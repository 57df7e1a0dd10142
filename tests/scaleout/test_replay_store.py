"""Single-use ``requestState``: the in-memory and Redis replay stores, alone and behind the server.

Redis is a real ``redis-server`` started on a free loopback port for each test. A second use of a
state is refused with -32602 before the handler runs; a store failure refuses the round with a
503 and leaves the state unused, so the same round succeeds once the store is back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from redis.asyncio import Redis

from fastapi_mrtr import MCP, Context, InMemoryReplayStore, ReplayStore, ServerOptions
from fastapi_mrtr.server.redis_store import RedisReplayStore
from tests.scaleout.flows import McpWire, Reply, accept, input_request
from tests.scaleout.services import RedisServer
from tests.support import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
KEY = "single-use-tests-key-0123456789abcdef"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# --- the stores on their own ------------------------------------------------------------------


async def test_in_memory_store_consumes_each_id_once() -> None:
    store = InMemoryReplayStore()
    expiry = int(time.time()) + 60
    assert await store.consume("a", expiry) is True
    assert await store.consume("a", expiry) is False
    assert await store.consume("b", None) is True
    assert len(store) == 2


async def test_in_memory_store_forgets_ids_once_their_token_expired() -> None:
    store = InMemoryReplayStore(max_age_without_expiry=0.05)
    assert await store.consume("expired", int(time.time()) - 1)
    assert await store.consume("forever", None)
    await asyncio.sleep(0.1)
    assert await store.consume("other", int(time.time()) + 60)
    assert len(store) == 1  # both earlier ids were evicted
    assert await store.consume("forever", None) is True


async def test_in_memory_store_is_atomic_under_concurrency() -> None:
    store = InMemoryReplayStore()
    results = await asyncio.gather(*(store.consume("same", None) for _ in range(200)))
    assert results.count(True) == 1


async def test_redis_store_sets_nx_with_the_tokens_lifetime(redis_server: RedisServer) -> None:
    store = RedisReplayStore(redis_server.url, prefix="test:used:", clock_skew=5)
    inspector = Redis.from_url(redis_server.url)
    try:
        expiry = int(time.time()) + 100
        assert await store.consume("t1", expiry) is True
        assert await store.consume("t1", expiry) is False
        ttl = await inspector.pttl("test:used:t1")
        assert 100_000 <= ttl <= 105_000  # the token's remaining life plus the clock skew
        assert await store.consume("t2", None) is True
        assert 86_000_000 < await inspector.pttl("test:used:t2") <= 86_400_000  # the default for no expiry
        assert sorted(await inspector.keys("test:used:*")) == [b"test:used:t1", b"test:used:t2"]
    finally:
        await store.aclose()
        await inspector.aclose()


async def test_redis_store_is_atomic_across_clients(redis_server: RedisServer) -> None:
    stores = [RedisReplayStore(redis_server.url) for _ in range(3)]
    try:
        results = await asyncio.gather(*(stores[i % 3].consume("raced", None) for i in range(150)))
        assert results.count(True) == 1
    finally:
        for store in stores:
            await store.aclose()


async def test_redis_store_recognises_its_own_retried_write(redis_server: RedisServer) -> None:
    """A client library that resends a SET which had landed must not turn a first use into a refusal."""

    class ResendingRedis(Redis):
        async def set(self, *args: Any, **kwargs: Any) -> Any:
            await super().set(*args, **kwargs)  # landed, but the reply was "lost"...
            return await super().set(*args, **kwargs)  # ...so the library sends it again

    client = ResendingRedis.from_url(redis_server.url)
    store = RedisReplayStore(client)
    try:
        assert await store.consume("once", None) is True
        assert await store.consume("once", None) is False
    finally:
        await store.aclose()  # not closed by the store: it did not make the client
        assert await client.ping()
        await client.aclose()


async def test_redis_store_given_a_url_fails_fast_when_redis_is_down() -> None:
    store = RedisReplayStore(f"redis://127.0.0.1:{free_port()}/0")
    began = time.monotonic()
    with pytest.raises(Exception, match="onnect"):
        await store.consume("x", None)
    assert time.monotonic() - began < 5
    await store.aclose()


@asynccontextmanager
async def a_store(backend: str, request: pytest.FixtureRequest, **redis_options: Any) -> AsyncIterator[ReplayStore]:
    """A store of ``backend`` used in the test's own loop (closed afterwards)."""
    if backend == "memory":
        yield InMemoryReplayStore()
        return
    store = RedisReplayStore(request.getfixturevalue("redis_server").url, **redis_options)
    try:
        yield store
    finally:
        await store.aclose()


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_a_released_claim_can_be_made_again_once(backend: str, request: pytest.FixtureRequest) -> None:
    async with a_store(backend, request) as store:
        expiry = int(time.time()) + 60
        first = await store.claim("t", expiry)
        assert first and await store.claim("t", expiry) is None
        await store.release("t", first)
        again = await store.claim("t", expiry)
        assert again and again != first  # each claim has its own receipt
        assert await store.claim("t", expiry) is None


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_a_release_with_another_claims_receipt_changes_nothing(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """A release resent after a lost reply (the id was claimed again since) leaves the new claim."""
    async with a_store(backend, request) as store:
        old = await store.claim("t", None)
        assert old is not None
        await store.release("t", old)
        new = await store.claim("t", None)
        assert new is not None
        await store.release("t", old)  # the resent release
        assert await store.claim("t", None) is None
        await store.release("t", "not-a-receipt")
        assert await store.claim("t", None) is None
        await store.release("never-claimed", "x")  # nothing to release: no error


async def test_in_memory_store_keeps_a_claim_made_again_after_release_for_its_own_lifetime() -> None:
    store = InMemoryReplayStore(max_age_without_expiry=0.2)
    first = await store.claim("t", None)
    assert first is not None
    await asyncio.sleep(0.1)
    await store.release("t", first)
    assert await store.claim("t", None)  # forgotten 0.2 s from now, not when the first claim would
    await asyncio.sleep(0.15)
    assert await store.claim("t", None) is None
    await asyncio.sleep(0.1)
    assert await store.claim("t", None)


async def test_redis_store_claims_and_releases_with_a_client_decoding_responses(redis_server: RedisServer) -> None:
    client = Redis.from_url(redis_server.url, decode_responses=True)
    store = RedisReplayStore(client, prefix="test:used:")
    try:
        receipt = await store.claim("t", None)
        assert receipt is not None and await client.get("test:used:t") == receipt
        assert await store.claim("t", None) is None
        await store.release("t", receipt)
        assert await client.exists("test:used:t") == 0
    finally:
        await client.aclose()


# --- behind the server ------------------------------------------------------------------------


def payments_app(store: ReplayStore, runs: list[int]) -> FastAPI:
    """One tool asking twice; ``runs`` records every run of the handler (its round)."""
    app = FastAPI()
    mcp = MCP(app, options=ServerOptions(name="single-use", request_state_key=KEY, replay_store=store))

    @mcp.tool()
    @app.post("/pay")
    async def pay(amount: int, ctx: Context) -> dict[str, Any]:
        runs.append(ctx.round)
        ok = await ctx.elicit(f"Pay {amount} EUR?", bool, key="ok")
        note = await ctx.elicit("A note for the payee?", str, key="note")
        return {"amount": amount, "ok": ok.content, "note": note.content}

    app.mount("/mcp", mcp)
    return app


@asynccontextmanager
async def wire_to(app: FastAPI) -> AsyncIterator[McpWire]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        yield McpWire(http, "/mcp")


OK = {"ok": accept({"value": True})}
NOTE = {"note": accept({"value": "thanks"})}


def assert_refused(reply: Reply) -> None:
    assert reply.status == 400 and reply.is_invalid_state, reply.body
    assert reply.body["error"]["message"] == "Invalid or expired requestState"


def assert_store_unavailable(reply: Reply) -> None:
    assert reply.status == 503, reply.body
    assert reply.error is not None and reply.error["code"] == -32603
    assert reply.error["data"] == {"reason": "replay_store_unavailable"}


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_a_second_use_of_a_state_is_refused_before_the_handler_runs(
    backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "memory":
        store: InMemoryReplayStore | RedisReplayStore = InMemoryReplayStore()
    else:
        store = RedisReplayStore(request.getfixturevalue("redis_server").url)
    runs: list[int] = []
    try:
        async with wire_to(payments_app(store, runs)) as wire:
            _, first = input_request(await wire.call("pay", {"amount": 5}), "ok")
            _, second = input_request(await wire.call("pay", {"amount": 5}, responses=OK, state=first), "note")
            assert runs == [0, 1]
            assert_refused(await wire.call("pay", {"amount": 5}, responses=OK, state=first))
            assert runs == [0, 1]  # refused before the handler ran
            done = await wire.call("pay", {"amount": 5}, responses=NOTE, state=second)
            assert done.result["structuredContent"] == {"amount": 5, "ok": True, "note": "thanks"}
            assert_refused(await wire.call("pay", {"amount": 5}, responses=NOTE, state=second))
            assert runs == [0, 1, 2]
    finally:
        if isinstance(store, RedisReplayStore):
            await store.aclose()


async def test_concurrent_uses_of_one_state_let_exactly_one_through(redis_server: RedisServer) -> None:
    store = RedisReplayStore(redis_server.url)
    runs: list[int] = []
    try:
        async with wire_to(payments_app(store, runs)) as wire:
            _, state = input_request(await wire.call("pay", {"amount": 7}), "ok")
            replies = await asyncio.gather(
                *(wire.call("pay", {"amount": 7}, responses=OK, state=state) for _ in range(20))
            )
        assert sorted(r.status for r in replies) == [200] + [400] * 19
        assert all(r.is_invalid_state for r in replies if r.status == 400)
        assert runs == [0, 1]
    finally:
        await store.aclose()


async def test_unreachable_redis_refuses_the_round_and_keeps_the_state(tmp_path: Any) -> None:
    port = free_port()
    store = RedisReplayStore(f"redis://127.0.0.1:{port}/0")
    runs: list[int] = []
    redis = RedisServer(tmp_path / "late-redis", port=port)
    try:
        async with wire_to(payments_app(store, runs)) as wire:
            _, state = input_request(await wire.call("pay", {"amount": 9}), "ok")  # round one consumes nothing
            for _ in range(2):
                assert_store_unavailable(await wire.call("pay", {"amount": 9}, responses=OK, state=state))
            assert runs == [0]
            redis.start()  # Redis is back: the very same round now goes through, once
            input_request(await wire.call("pay", {"amount": 9}, responses=OK, state=state), "note")
            assert_refused(await wire.call("pay", {"amount": 9}, responses=OK, state=state))
            assert runs == [0, 1]
    finally:
        await store.aclose()
        redis.stop()


async def test_a_failing_redis_refuses_the_round_and_consumes_nothing(redis_server: RedisServer) -> None:
    """Redis up but refusing writes (out of memory): 503, no key written, the round works afterwards."""
    store = RedisReplayStore(redis_server.url, prefix="mrtr:used:")
    admin = Redis.from_url(redis_server.url)
    runs: list[int] = []
    try:
        async with wire_to(payments_app(store, runs)) as wire:
            _, state = input_request(await wire.call("pay", {"amount": 3}), "ok")
            await admin.config_set("maxmemory", "1")
            assert_store_unavailable(await wire.call("pay", {"amount": 3}, responses=OK, state=state))
            assert await admin.keys("mrtr:used:*") == []
            await admin.config_set("maxmemory", "0")
            input_request(await wire.call("pay", {"amount": 3}, responses=OK, state=state), "note")
            assert len(await admin.keys("mrtr:used:*")) == 1
            assert runs == [0, 1]
    finally:
        await store.aclose()
        await admin.aclose()
