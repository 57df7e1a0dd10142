"""The bounds of 2025-era sessions in one process (issue 27): resource subscriptions, callers that
invent credentials, calls that wait with their stream closed, and sessions that were ended."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.legacy.conftest import build
from tests.legacy.peer import LegacyPeer, messages
from tests.support import running_server

pytestmark = pytest.mark.anyio


async def _next(stream: Any) -> Any:
    return await asyncio.wait_for(stream.__anext__(), 10)


async def test_resource_subscriptions_are_bounded_in_count_and_length(peer: LegacyPeer) -> None:
    await peer.initialize()
    for n in range(32):  # the default bound
        ok = await peer.request("resources/subscribe", {"uri": f"test://doc/{n}"})
        assert ok.status_code == 200 and ok.json()["result"] == {}, ok.text
    again = await peer.request("resources/subscribe", {"uri": "test://doc/0"})  # already held: fine
    assert again.json()["result"] == {}
    full = await peer.request("resources/subscribe", {"uri": "test://doc/32"})
    error = full.json()["error"]
    assert error["code"] == -32600 and "32 resource subscriptions" in error["message"]
    # Unsubscribing gives the slot back.
    assert (await peer.request("resources/unsubscribe", {"uri": "test://doc/5"})).json()["result"] == {}
    assert (await peer.request("resources/subscribe", {"uri": "test://doc/32"})).json()["result"] == {}
    long = await peer.request("resources/subscribe", {"uri": "test://" + "x" * 3000})
    assert long.json()["error"]["code"] == -32602 and "longer than 2048" in long.json()["error"]["message"]


async def test_subscriptions_are_dropped_when_the_session_ends() -> None:
    mcp = build(legacy_max_subscriptions=3)
    with running_server(mcp.app) as base:
        async with httpx.AsyncClient(timeout=10) as http:
            peer = LegacyPeer(http, f"{base}/mcp")
            await peer.initialize()
            for n in range(3):
                assert (await peer.request("resources/subscribe", {"uri": f"test://{n}"})).status_code == 200
            assert (await peer.request("resources/subscribe", {"uri": "test://3"})).json()["error"]["code"] == -32600
            legacy = mcp._endpoint.legacy
            assert legacy is not None and legacy.cluster._subscriptions._bytes > 0
            assert (await http.delete(peer.url, headers=peer.headers())).status_code == 200
            assert legacy.cluster._subscriptions._bytes == 0  # nothing of it is kept


async def test_made_up_authorization_values_share_their_address_bound() -> None:
    """One client with invented Authorization values is still one caller: its address."""
    mcp = build(legacy_max_streams_per_caller=2)
    with running_server(mcp.app) as base:
        async with httpx.AsyncClient(timeout=10) as http:
            peers = [
                LegacyPeer(http, f"{base}/mcp", extra_headers={"authorization": f"Bearer invented-{n}"})
                for n in range(3)
            ]
            for peer in peers:
                await peer.initialize()
            async with peers[0].call("confirm") as (_, first), peers[1].call("confirm") as (_, second):
                await _next(messages(first))
                await _next(messages(second))
                refused = await peers[2].request("tools/call", {"name": "confirm", "arguments": {}})
                assert refused.status_code == 429, refused.text


async def test_calls_waiting_with_their_stream_closed_still_count() -> None:
    """With legacy_sse_close_after, a call's stream closes while it waits for an answer: the call
    keeps its slot, so parked calls are bounded like open streams."""
    mcp = build(legacy_sse_close_after=0.2, legacy_max_streams_per_caller=2)
    with running_server(mcp.app) as base:
        async with httpx.AsyncClient(timeout=10) as http:
            peer = LegacyPeer(http, f"{base}/mcp")
            await peer.initialize()
            for _ in range(2):
                async with peer.call("confirm") as (response, stream):
                    assert response.status_code == 200
                    seen = [event async for event in stream]  # the question, then the server closes it
                assert any(isinstance(e.data, dict) and e.data.get("method") == "elicitation/create" for e in seen)
            parked = await peer.request("tools/call", {"name": "confirm", "arguments": {}})
            assert parked.status_code == 429, parked.text
            assert "legacy_max_streams_per_caller" in parked.json()["error"]["message"]  # says what to raise
            legacy = mcp._endpoint.legacy
            assert legacy is not None and legacy.live.open_streams == 2
            # The parked calls end at their round timeout (1 s here) and give their slots back.
            for _ in range(100):
                if legacy.live.open_streams == 0:
                    break
                await asyncio.sleep(0.05)
            assert legacy.live.open_streams == 0


async def test_an_ended_session_stays_ended_past_the_bound() -> None:
    """More sessions ended than the process remembers: the first stays ended (the bound fails
    closed: sessions issued no later than the one forgotten end early), and later sessions work."""
    mcp = build(legacy_max_ended_sessions=3)
    with running_server(mcp.app) as base:
        async with httpx.AsyncClient(timeout=10) as http:
            first = LegacyPeer(http, f"{base}/mcp")
            await first.initialize()
            assert (await http.delete(first.url, headers=first.headers())).status_code == 200
            await asyncio.sleep(1.1)  # ids carry whole seconds: the next ones are issued later
            for _ in range(3):  # one more than the bound holds besides the first: it is forgotten
                other = LegacyPeer(http, f"{base}/mcp")
                await other.initialize()
                assert (await http.delete(other.url, headers=other.headers())).status_code == 200
            gone = await first.request("ping")
            assert gone.status_code == 404 and gone.json()["error"]["code"] == -32001
            fresh = LegacyPeer(http, f"{base}/mcp")
            await fresh.initialize()
            assert (await fresh.request("ping")).status_code == 200
