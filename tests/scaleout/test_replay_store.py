"""Single-use ``requestState``: the in-memory and Redis replay stores, alone and behind the server.

Redis is a real ``redis-server`` started on a free loopback port for each test. A second use of a
state is refused with -32602 before the handler runs; a store failure refuses the round with a
503 and leaves the state unused, so the same round succeeds once the store is back.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import httpx
import pytest
from fastapi import FastAPI
from redis.asyncio import Redis

from fastapi_mrtr import MCP, Context, InMemoryReplayStore, ReplayStore, ServerOptions
from fastapi_mrtr.state.redis_store import RedisReplayStore
from fastapi_mrtr.wire import make_input_request_for_elicitation
from fastapi_mrtr.wire.errors import MISSING_REQUIRED_CLIENT_CAPABILITY as MISSING_CAPABILITY
from tests.mcp_helpers import JSON, McpClient, make_meta, rpc_error
from tests.scaleout.flows import McpWire, Reply, accept, input_request
from tests.scaleout.services import RedisServer
from tests.support import free_port, running_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
# Redis is a real redis-server: its cases are slow (and need it installed); the in-memory ones are not.
BACKENDS = ["memory", pytest.param("redis", marks=pytest.mark.slow)]
KEY = "single-use-tests-key-0123456789abcdef"


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


@pytest.mark.slow
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


@pytest.mark.slow
async def test_redis_store_is_atomic_across_clients(redis_server: RedisServer) -> None:
    stores = [RedisReplayStore(redis_server.url) for _ in range(3)]
    try:
        results = await asyncio.gather(*(stores[i % 3].consume("raced", None) for i in range(150)))
        assert results.count(True) == 1
    finally:
        for store in stores:
            await store.aclose()


@pytest.mark.slow
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


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_released_claim_can_be_made_again_once(backend: str, request: pytest.FixtureRequest) -> None:
    async with a_store(backend, request) as store:
        expiry = int(time.time()) + 60
        first = await store.claim("t", expiry)
        assert first and await store.claim("t", expiry) is None
        await store.release("t", first)
        again = await store.claim("t", expiry)
        assert again and again != first  # each claim has its own receipt
        assert await store.claim("t", expiry) is None


@pytest.mark.parametrize("backend", BACKENDS)
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


@pytest.mark.slow
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


@pytest.mark.parametrize("backend", BACKENDS)
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# --- refusals the client can correct give the state back ---------------------------------------

BIG = 20_000  # past the 16 KiB default limit of a sealed state
FORM_CAPS: JSON = {"elicitation": {"form": {}}}


def signing_app(store: ReplayStore, runs: list[str]) -> FastAPI:
    """A free-text question, then a confirmation; as a tool, and as a REST-only route in manual mode.

    A Redis store is closed when the app shuts down: its connections belong to the server's loop.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        if isinstance(store, RedisReplayStore):
            await store.aclose()

    app = FastAPI(lifespan=lifespan)
    mcp = MCP(app, options=ServerOptions(name="single-use", request_state_key=KEY, replay_store=store))

    @mcp.tool()
    @app.post("/sign")
    async def sign(ctx: Context) -> dict[str, Any]:
        runs.append(f"sign {ctx.round}")
        note = await ctx.elicit("A note for the signature?", str, key="note")
        if note.content == "fail":
            raise RuntimeError("the signing service is down")
        ok = await ctx.elicit("Sign it?", bool, key="ok")
        return {"note": note.content, "ok": ok.content}

    @app.post("/sign-by-hand")
    async def sign_by_hand(ctx: Context) -> Any:
        runs.append(f"by-hand {ctx.round}")
        note = await ctx.elicit("A note for the signature?", str, key="note")
        if ctx.request_state == "asked-ok":
            return {"note": note.content, "ok": ctx.input_responses["ok"]["action"] == "accept"}
        request = make_input_request_for_elicitation("Sign it?", requested_schema={"type": "object", "properties": {}})
        return ctx.input_required({"ok": request}, request_state="asked-ok")

    app.mount("/mcp", mcp)
    return app


def store_for(backend: str, request: pytest.FixtureRequest) -> ReplayStore:
    if backend == "memory":
        return InMemoryReplayStore()
    return RedisReplayStore(request.getfixturevalue("redis_server").url)


@asynccontextmanager
async def signing_server(backend: str, request: pytest.FixtureRequest) -> AsyncIterator[tuple[McpClient, list[str]]]:
    """The signing app on real uvicorn with the backend's store, and the record of its runs."""
    runs: list[str] = []
    with running_server(signing_app(store_for(backend, request), runs)) as base:
        async with httpx.AsyncClient(base_url=base) as http:
            yield McpClient(http), runs


async def sign_round(
    client: McpClient,
    *,
    state: str | None = None,
    answers: JSON | None = None,
    caps: JSON = FORM_CAPS,
    request_id: int = 1,
) -> httpx.Response:
    params: JSON = {"name": "sign", "arguments": {}}
    if state is not None:
        params["requestState"] = state
    if answers is not None:
        params["inputResponses"] = answers
    return await client.post("tools/call", params, meta=make_meta(caps), request_id=request_id)


def asked(response: httpx.Response) -> tuple[list[str], str]:
    """(the keys asked, the next state) of an ``input_required`` answer."""
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["resultType"] == "input_required", result
    return list(result["inputRequests"]), result["requestState"]


def note(text: Any) -> JSON:
    return {"note": accept({"value": text})}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_answers_too_large_leave_the_state_usable_with_shorter_ones(
    backend: str, request: pytest.FixtureRequest
) -> None:
    async with signing_server(backend, request) as (client, runs):
        _, first = asked(await sign_round(client))
        for attempt in range(2):  # refused twice in a row: the state is still there
            too_large = await sign_round(client, state=first, answers=note("D" * BIG), request_id=10 + attempt)
            error = rpc_error(too_large, 400, -32602, 10 + attempt)
            assert error["data"] == {"reason": "input_responses_too_large"}
        keys, second = asked(await sign_round(client, state=first, answers=note("short")))
        assert keys == ["ok"]
        replayed = await sign_round(client, state=first, answers=note("short"), request_id=20)
        assert rpc_error(replayed, 400, -32602, 20)["data"] == {"reason": "invalid_request_state"}
        done = await sign_round(client, state=second, answers={"ok": accept({"value": True})})
        assert done.json()["result"]["structuredContent"] == {"note": "short", "ok": True}
        assert runs == ["sign 0", "sign 1", "sign 1", "sign 1", "sign 2"]  # the refused replay never ran


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_missing_capability_leaves_the_state_usable_once_declared(
    backend: str, request: pytest.FixtureRequest
) -> None:
    async with signing_server(backend, request) as (client, runs):
        _, first = asked(await sign_round(client))
        missing = await sign_round(client, state=first, answers=note("hi"), caps={}, request_id=7)
        error = rpc_error(missing, 400, MISSING_CAPABILITY, 7)
        assert error["data"] == {"requiredCapabilities": {"elicitation": {}}}
        keys, _ = asked(await sign_round(client, state=first, answers=note("hi")))
        assert keys == ["ok"]
        assert runs == ["sign 0", "sign 1", "sign 1"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_invalid_answer_is_asked_again_with_a_state_that_works(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """A re-ask is a round like any other: its new state carries the flow; the old one is used."""
    async with signing_server(backend, request) as (client, runs):
        _, first = asked(await sign_round(client))
        keys, again = asked(await sign_round(client, state=first, answers=note(5)))  # no string
        assert keys == ["note"]
        keys, _ = asked(await sign_round(client, state=again, answers=note("hi")))
        assert keys == ["ok"]
        refused = await sign_round(client, state=first, answers=note("hi"), request_id=3)
        assert rpc_error(refused, 400, -32602, 3)["data"] == {"reason": "invalid_request_state"}
        assert runs == ["sign 0", "sign 1", "sign 2"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("path", ["/sign", "/sign-by-hand"])
async def test_a_rest_caller_keeps_its_state_after_answers_too_large(
    backend: str, path: str, request: pytest.FixtureRequest
) -> None:
    async with signing_server(backend, request) as (client, runs):
        http = client.http
        first = await http.post(path)
        assert first.status_code == 428, first.text
        state = first.json()["requestState"]

        def answering(text: str) -> dict[str, str]:
            return {"MRTR-Request-State": state, "MRTR-Input-Responses": json.dumps(note(text))}

        too_large = await http.post(path, headers=answering("D" * BIG))
        assert too_large.status_code == 400, too_large.text
        assert too_large.json()["detail"]["data"] == {"reason": "input_responses_too_large"}
        shorter = await http.post(path, headers=answering("short"))
        assert shorter.status_code == 428, shorter.text
        assert list(shorter.json()["inputRequests"]) == ["ok"]
        replayed = await http.post(path, headers=answering("short"))
        assert replayed.status_code == 400
        assert replayed.json()["detail"]["data"] == {"reason": "invalid_request_state"}
        assert len(runs) == 3  # the first round, the refused one, the shorter one


@pytest.mark.parametrize("backend", BACKENDS)
async def test_concurrent_retries_of_one_state_run_the_handler_exactly_once(
    backend: str, request: pytest.FixtureRequest
) -> None:
    async with signing_server(backend, request) as (client, runs):
        _, first = asked(await sign_round(client))
        replies = await asyncio.gather(
            *(sign_round(client, state=first, answers=note("hi"), request_id=100 + i) for i in range(20))
        )
        assert sorted(r.status_code for r in replies) == [200] + [400] * 19
        refused = [r.json()["error"]["data"] for r in replies if r.status_code == 400]
        assert refused == [{"reason": "invalid_request_state"}] * 19
        assert runs == ["sign 0", "sign 1"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_concurrent_retries_after_a_correctable_refusal_still_run_once(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """The state given back after a refusal is consumed again, once, by its corrected retries."""
    async with signing_server(backend, request) as (client, runs):
        _, first = asked(await sign_round(client))
        too_large = await sign_round(client, state=first, answers=note("D" * BIG), request_id=2)
        rpc_error(too_large, 400, -32602, 2)
        replies = await asyncio.gather(
            *(sign_round(client, state=first, answers=note("hi"), request_id=100 + i) for i in range(20))
        )
        assert sorted(r.status_code for r in replies) == [200] + [400] * 19
        assert runs == ["sign 0", "sign 1", "sign 1"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_round_that_fails_otherwise_uses_its_state(backend: str, request: pytest.FixtureRequest) -> None:
    """A tool error is the round's outcome, not a refusal to correct: its state stays used."""
    async with signing_server(backend, request) as (client, runs):
        _, first = asked(await sign_round(client))
        failed = await sign_round(client, state=first, answers=note("fail"))
        assert failed.status_code == 200 and failed.json()["result"]["isError"] is True
        retried = await sign_round(client, state=first, answers=note("hi"), request_id=2)
        assert rpc_error(retried, 400, -32602, 2)["data"] == {"reason": "invalid_request_state"}
        assert runs == ["sign 0", "sign 1"]


class ReleaseFails(InMemoryReplayStore):
    async def release(self, token_id: str, receipt: str) -> None:
        raise ConnectionError("store went away")


async def test_a_failed_release_still_answers_the_refusal_and_leaves_the_state_used(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runs: list[str] = []
    with running_server(signing_app(ReleaseFails(), runs)) as base:
        async with httpx.AsyncClient(base_url=base) as http:
            client = McpClient(http)
            _, first = asked(await sign_round(client))
            too_large = await sign_round(client, state=first, answers=note("D" * BIG), request_id=2)
            assert rpc_error(too_large, 400, -32602, 2)["data"] == {"reason": "input_responses_too_large"}
            retried = await sign_round(client, state=first, answers=note("hi"), request_id=3)
            assert rpc_error(retried, 400, -32602, 3)["data"] == {"reason": "invalid_request_state"}
    assert "could not release requestState" in caplog.text
    assert runs == ["sign 0", "sign 1"]


class ConsumeOnlyStore:
    """A store written for the first protocol: one ``consume`` method, no claims to release."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    async def consume(self, token_id: str, expires_at: int | None) -> bool:
        if token_id in self.used:
            return False
        self.used.add(token_id)
        return True


async def test_a_store_with_only_consume_still_makes_state_single_use() -> None:
    """It keeps working; a refused round's state then stays used (it cannot be released)."""
    runs: list[str] = []
    store = cast(ReplayStore, ConsumeOnlyStore())  # typed for the first protocol
    with running_server(signing_app(store, runs)) as base:
        async with httpx.AsyncClient(base_url=base) as http:
            client = McpClient(http)
            _, first = asked(await sign_round(client))
            keys, _ = asked(await sign_round(client, state=first, answers=note("hi")))
            assert keys == ["ok"]
            replayed = await sign_round(client, state=first, answers=note("hi"), request_id=2)
            assert rpc_error(replayed, 400, -32602, 2)["data"] == {"reason": "invalid_request_state"}
            _, other = asked(await sign_round(client))
            too_large = await sign_round(client, state=other, answers=note("D" * BIG), request_id=3)
            rpc_error(too_large, 400, -32602, 3)
            retried = await sign_round(client, state=other, answers=note("hi"), request_id=4)
            assert rpc_error(retried, 400, -32602, 4)["data"] == {"reason": "invalid_request_state"}
    assert runs == ["sign 0", "sign 1", "sign 0", "sign 1"]
