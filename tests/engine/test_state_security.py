"""Every untrustworthy requestState is refused with -32602 before the handler runs."""

import logging
import time
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel

from fastapi_mrtr import MCP, Context, InputRequiredConfig, ServerOptions
from fastapi_mrtr.state import RequestStateSealer, StateBinding, arguments_digest
from tests.support import rpc_body, rpc_headers

pytestmark = pytest.mark.anyio
KEY_A = "state-security-key-A-0123456789abcdef"
KEY_B = "state-security-key-B-0123456789abcdef"
INVALID = {"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}}


class Answer(BaseModel):
    text: str


class Shop:
    """A server with two eliciting tools that count how often their bodies run."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("request_state_key", KEY_A)
        options.setdefault("name", "shop")
        self.app = FastAPI()
        self.mcp = MCP(self.app, options=ServerOptions(**options))
        self.runs = 0

        @self.mcp.tool()
        @self.app.post("/ask")
        async def ask(topic: str, ctx: Context) -> dict[str, str]:
            self.runs += 1
            answer = await ctx.elicit(f"About {topic}?", Answer, key="a")
            assert answer.content is not None
            return {"text": answer.content.text}

        @self.mcp.tool()
        @self.app.post("/other")
        async def other(topic: str, ctx: Context) -> dict[str, str]:
            self.runs += 1
            answer = await ctx.elicit(f"About {topic}?", Answer, key="a")
            assert answer.content is not None
            return {"text": answer.content.text}

        self.app.mount("/mcp", self.mcp)

    async def call(
        self, tool: str, topic: str = "x", *, state: Any = None, token: str | None = None, send_state: bool = True
    ) -> tuple[int, dict[str, Any]]:
        params: dict[str, Any] = {"name": tool, "arguments": {"topic": topic}}
        if send_state and state is not None:
            params["requestState"] = state
            params["inputResponses"] = {"a": {"action": "accept", "content": {"text": "yes"}}}
        headers = rpc_headers("tools/call", tool)
        if token:
            headers["Authorization"] = f"Bearer {token}"
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://localhost") as h:
            response = await h.post("/mcp", json=rpc_body("tools/call", params), headers=headers)
        return response.status_code, response.json()

    async def first_state(self, tool: str = "ask", topic: str = "x", token: str | None = None) -> str:
        status, body = await self.call(tool, topic, token=token)
        assert status == 200 and body["result"]["resultType"] == "input_required", body
        return str(body["result"]["requestState"])


async def assert_refused(shop: Shop, tool: str = "ask", topic: str = "x", **kw: Any) -> None:
    runs = shop.runs
    status, body = await shop.call(tool, topic, **kw)
    assert status == 400, body
    assert body["error"] == INVALID
    assert shop.runs == runs, "the handler must not run for a refused state"


async def test_the_genuine_state_completes() -> None:
    shop = Shop()
    state = await shop.first_state()
    status, body = await shop.call("ask", state=state)
    assert status == 200 and body["result"]["structuredContent"] == {"text": "yes"}


def flip(token: str, index: int) -> str:
    swapped = "A" if token[index] != "A" else "B"
    return token[:index] + swapped + token[index + 1 :]


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda t: flip(t, len(t) // 2), id="tampered-middle"),
        pytest.param(lambda t: flip(t, len(t) - 1), id="tampered-tag"),
        pytest.param(lambda t: t + "-TAMPERED", id="suffix"),
        pytest.param(lambda t: t[: len(t) // 2], id="truncated"),
        pytest.param(lambda t: "v2" + t[2:], id="other-version"),
        pytest.param(lambda t: "", id="empty"),
        pytest.param(lambda t: 123, id="not-a-string-number"),
        pytest.param(lambda t: {"state": t}, id="not-a-string-object"),
        pytest.param(lambda t: "v1." + "A" * 20_000, id="oversized"),
    ],
)
async def test_mangled_state_is_refused(mangle: Any, caplog: pytest.LogCaptureFixture) -> None:
    shop = Shop()
    state = await shop.first_state()
    with caplog.at_level(logging.WARNING, logger="fastapi_mrtr"):
        await assert_refused(shop, state=mangle(state))
    assert "requestState refused" in caplog.text  # the cause is logged, not sent


async def test_state_from_another_key_is_refused() -> None:
    other = Shop(request_state_key=KEY_B)
    state = await other.first_state()
    await assert_refused(Shop(), state=state)


async def test_state_for_another_tool_or_arguments_is_refused() -> None:
    shop = Shop()
    state = await shop.first_state("ask", "books")
    await assert_refused(shop, "other", "books", state=state)
    await assert_refused(shop, "ask", "films", state=state)


async def test_state_for_another_principal_is_refused() -> None:
    shop = Shop()
    state = await shop.first_state(token="alice")
    await assert_refused(shop, state=state, token="mallory")
    await assert_refused(shop, state=state)  # anonymous may not continue alice's flow
    status, _ = await shop.call("ask", state=state, token="alice")
    assert status == 200


async def test_state_for_another_audience_is_refused() -> None:
    other = Shop(name="another-server")  # same key, different server
    state = await other.first_state()
    await assert_refused(Shop(), state=state)


def later(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Move the clock ``seconds`` ahead of the real one (the state was sealed at the real time)."""
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + seconds)


async def assert_accepted(shop: Shop, state: str) -> None:
    status, body = await shop.call("ask", state=state)
    assert status == 200 and body["result"]["structuredContent"] == {"text": "yes"}, body


async def test_a_state_expires_after_the_default_round_timeout_of_300_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shop = Shop()
    state = await shop.first_state()
    with monkeypatch.context() as clock:
        later(clock, 295)
        await assert_accepted(shop, state)
    later(monkeypatch, 305)
    await assert_refused(shop, state=state)


async def test_round_timeout_is_the_state_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    # Longer than the old request_state_ttl default (300 s), which used to cap it unseen.
    shop = Shop(input_required_config=InputRequiredConfig(round_timeout=900))
    state = await shop.first_state()
    with monkeypatch.context() as clock:
        later(clock, 890)
        await assert_accepted(shop, state)
    later(monkeypatch, 905)
    await assert_refused(shop, state=state)


async def test_round_timeout_zero_seals_states_that_never_expire(monkeypatch: pytest.MonkeyPatch) -> None:
    shop = Shop(input_required_config=InputRequiredConfig(round_timeout=0, flow_timeout=0))
    state = await shop.first_state()
    later(monkeypatch, 10 * 365 * 86400)
    await assert_accepted(shop, state)


async def test_flow_deadline_is_enforced(monkeypatch: pytest.MonkeyPatch) -> None:
    shop = Shop(input_required_config=InputRequiredConfig(round_timeout=0, flow_timeout=60))
    state = await shop.first_state()
    with monkeypatch.context() as clock:
        later(clock, 55)
        await assert_accepted(shop, state)
    later(monkeypatch, 61)
    await assert_refused(shop, state=state)


def forged(shop: Shop, *, now: float, ttl: float = 300) -> str:
    binding = StateBinding(
        method="tools/call",
        target="ask",
        arguments_digest=arguments_digest({"topic": "x"}),
        audience="shop",
        principal=None,
    )
    data = {"asked": {"a": "ignored"}}
    return RequestStateSealer(shop.mcp.state_guard.keys, ttl=ttl).seal(data, binding, now=now)


async def test_state_issued_in_the_future_is_refused_beyond_the_skew() -> None:
    shop = Shop()
    await assert_refused(shop, state=forged(shop, now=time.time() + 600))
    status, _ = await shop.call("ask", state=forged(shop, now=time.time() + 30))
    assert status == 200  # within the allowed clock skew


async def test_key_rotation_keeps_flows_in_flight() -> None:
    old = Shop(request_state_key=KEY_A)
    state = await old.first_state()
    rolling = Shop(request_state_key=[KEY_A, KEY_B])  # phase 1: new key added second
    status, _ = await rolling.call("ask", state=state)
    assert status == 200
    promoted = Shop(request_state_key=[KEY_B, KEY_A])  # phase 2: new key seals, old still opens
    status, _ = await promoted.call("ask", state=state)
    assert status == 200
    new_state = await promoted.first_state()
    status, _ = await old.call("ask", state=new_state)
    assert status == 400  # an instance that lacks the new key cannot open its tokens
    retired = Shop(request_state_key=[KEY_B])  # phase 3: old key gone after one TTL
    await assert_refused(retired, state=state)
    status, _ = await retired.call("ask", state=new_state)
    assert status == 200


async def test_short_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        Shop(request_state_key="too-short")


async def test_custom_verifier_can_refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi_mrtr.state import InvalidRequestStateError

    seen: list[int] = []

    def verifier(claims: Any, headers: Any) -> None:
        seen.append(claims.round)
        if headers.get("x-tenant") != "acme":
            raise InvalidRequestStateError("wrong_tenant")

    shop = Shop(request_state_verifier=verifier)
    state = await shop.first_state()
    await assert_refused(shop, state=state)
    assert seen == [1]


async def test_no_key_means_an_ephemeral_one_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.delenv("MRTR_STATE_KEY", raising=False)
    with caplog.at_level(logging.WARNING, logger="fastapi_mrtr"):
        first, second = Shop(request_state_key=None), Shop(request_state_key=None)
    monkeypatch.undo()
    assert "ephemeral" in caplog.text and "multi-replica" in caplog.text
    state = await first.first_state()
    # Refused, with the hint that processes without a configured key each seal with their own.
    runs = second.runs
    status, body = await second.call("ask", state=state)
    assert status == 400 and body["error"]["code"] == INVALID["code"] and body["error"]["data"] == INVALID["data"]
    assert (
        body["error"]["message"].startswith(INVALID["message"] + ": ") and "MRTR_STATE_KEY" in body["error"]["message"]
    )
    assert second.runs == runs, "the handler must not run for a refused state"


async def test_single_use_store_refuses_a_replayed_state() -> None:
    from fastapi_mrtr import InMemoryReplayStore

    shop = Shop(replay_store=InMemoryReplayStore())
    state = await shop.first_state()
    status, _ = await shop.call("ask", state=state)
    assert status == 200
    await assert_refused(shop, state=state)
