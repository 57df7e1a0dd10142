"""2025-era sessions on real uvicorn, driven byte by byte: the session lifecycle, the shim's rounds,
and every way a client can get it wrong (each gets a legacy error code and status, never a 500)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from fastapi_mrtr.transport.legacy.sessions import LiveSession
from tests.legacy.conftest import ROUND_TIMEOUT, App, build
from tests.legacy.peer import LegacyPeer, messages
from tests.support import running_server

pytestmark = pytest.mark.anyio


async def _next(stream: Any) -> Any:
    return await asyncio.wait_for(stream.__anext__(), 5)


def _live(served: App, peer: LegacyPeer) -> LiveSession | None:
    """What the server holds in process for ``peer``'s session (None: nothing)."""
    legacy = served.mcp._endpoint.legacy
    assert legacy is not None and peer.session_id is not None
    info = legacy.ids.open(peer.session_id, None)
    assert info is not None
    return legacy.live.get(info.key)


def _text(message: dict[str, Any]) -> str:
    """The tool's answer: a JSON route's str is its structured ``result``; an error is text."""
    result = message["result"]
    structured = result.get("structuredContent")
    if isinstance(structured, dict) and "result" in structured:
        return str(structured["result"])
    return " ".join(block["text"] for block in result["content"])


# --- the session ---------------------------------------------------------------------------------


async def test_initialize_negotiates_a_2025_version_and_names_the_session(peer: LegacyPeer) -> None:
    result = await peer.initialize()
    assert result["protocolVersion"] == "2025-11-25"
    assert result["serverInfo"]["name"] == "legacy-tests"
    assert {"tools", "resources", "logging"} <= set(result["capabilities"])
    assert "resultType" not in result and peer.session_id
    listed = (await peer.request("tools/list")).json()["result"]
    assert "resultType" not in listed and "ttlMs" not in listed and "cacheScope" not in listed
    assert (await peer.request("ping")).json()["result"] == {}


@pytest.mark.parametrize(
    ("asked", "agreed"), [("2025-06-18", "2025-06-18"), ("2024-11-05", "2024-11-05"), ("1999-01-01", "2025-11-25")]
)
async def test_version_negotiation(peer: LegacyPeer, asked: str, agreed: str) -> None:
    peer.version = asked
    assert (await peer.initialize())["protocolVersion"] == agreed


async def test_a_modern_initialize_is_still_a_removed_method(served: App) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "initialize", "accept": "application/json"}
    body = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"_meta": meta}}
    response = httpx.post(served.url, json=body, headers=headers)
    assert response.status_code == 404 and response.json()["error"]["code"] == -32601
    assert "mcp-session-id" not in response.headers


async def test_delete_ends_the_session_and_then_it_is_not_found(peer: LegacyPeer) -> None:
    await peer.initialize()
    deleted = await peer.http.delete(peer.url, headers=peer.headers())
    assert deleted.status_code == 200
    after = await peer.request("tools/list")
    assert after.status_code == 404 and after.json()["error"]["code"] == -32001
    async with peer.get() as (response, _):
        assert response.status_code == 404


async def test_a_tampered_or_unknown_session_id_is_not_found(peer: LegacyPeer) -> None:
    await peer.initialize()
    assert peer.session_id is not None
    peer.session_id = peer.session_id[:-2] + ("AA" if not peer.session_id.endswith("AA") else "BB")
    response = await peer.request("tools/list")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == -32001 and "initialize" in response.json()["error"]["message"]


async def test_a_session_is_bound_to_the_caller_that_opened_it(peer: LegacyPeer) -> None:
    peer.extra_headers = {"authorization": "Bearer alice"}
    await peer.initialize()
    peer.extra_headers = {"authorization": "Bearer mallory"}
    assert (await peer.request("tools/list")).status_code == 404
    peer.extra_headers = {"authorization": "Bearer alice"}
    assert (await peer.request("tools/list")).status_code == 200


async def test_a_protocol_version_header_other_than_the_sessions_is_refused(peer: LegacyPeer) -> None:
    await peer.initialize()
    response = await peer.post({"jsonrpc": "2.0", "id": 5, "method": "ping"}, **{"mcp-protocol-version": "2025-06-18"})
    assert response.status_code == 400 and response.json()["error"]["code"] == -32600


async def test_malformed_bodies_get_json_rpc_errors(peer: LegacyPeer) -> None:
    await peer.initialize()
    broken = await peer.http.post(peer.url, content=b"{not json", headers=peer.headers())
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700
    batch = await peer.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
    no_result = await peer.post({"jsonrpc": "2.0", "id": 1})
    assert no_result.status_code == 400 and no_result.json()["error"]["code"] == -32600
    unknown = await peer.request("no/such")
    assert unknown.status_code == 200 and unknown.json()["error"]["code"] == -32601
    modern_only = await peer.request("server/discover")
    assert modern_only.json()["error"]["code"] == -32601
    level = await peer.request("logging/setLevel", {"level": "loud"})
    assert level.json()["error"]["code"] == -32602


async def test_resource_not_found_has_the_2025_code(peer: LegacyPeer) -> None:
    await peer.initialize()
    response = await peer.request("resources/read", {"uri": "test://nothing"})
    assert response.json()["error"]["code"] == -32002


# --- the shim --------------------------------------------------------------------------------------


async def test_an_elicitation_is_a_request_on_the_calls_stream(peer: LegacyPeer) -> None:
    await peer.initialize()
    async with peer.call("two_questions") as (response, stream):
        assert response.headers["content-type"].startswith("text/event-stream")
        found = messages(stream)
        first = await _next(found)
        assert first["method"] == "elicitation/create" and first["params"]["message"] == "Your name?"
        assert (await peer.answer(first["id"], {"action": "accept", "content": {"value": "Ada"}})).status_code == 202
        second = await _next(found)
        assert second["params"]["message"] == "Your color?" and second["id"] != first["id"]
        assert (await peer.answer(second["id"], {"action": "accept", "content": {"value": "blue"}})).status_code == 202
        final = await _next(found)
    assert _text(final) == "Ada likes blue" and "resultType" not in final["result"]


async def test_decline_is_an_answer(peer: LegacyPeer) -> None:
    await peer.initialize()
    async with peer.call("confirm") as (_, stream):
        found = messages(stream)
        ask = await _next(found)
        await peer.answer(ask["id"], {"action": "decline"})
        assert _text(await _next(found)) == "not confirmed: decline"


async def test_an_invalid_answer_is_asked_again(peer: LegacyPeer) -> None:
    await peer.initialize()
    async with peer.call("confirm") as (_, stream):
        found = messages(stream)
        ask = await _next(found)
        await peer.answer(ask["id"], {"action": "accept", "content": {"value": "not a bool"}})
        again = await _next(found)
        assert again["method"] == "elicitation/create" and again["id"] != ask["id"]
        await peer.answer(again["id"], {"action": "accept", "content": {"value": True}})
        assert _text(await _next(found)) == "confirmed"


async def test_an_answer_to_a_request_never_sent_is_refused(peer: LegacyPeer) -> None:
    await peer.initialize()
    for stray in (999, "abc"):
        response = await peer.answer(stray, {"action": "accept"})
        assert response.status_code == 400
        assert "sent no request" in response.json()["error"]["message"]


async def test_a_second_answer_to_one_request_is_refused_and_the_first_counts(peer: LegacyPeer) -> None:
    await peer.initialize()
    async with peer.call("confirm") as (_, stream):
        found = messages(stream)
        ask = await _next(found)
        assert (await peer.answer(ask["id"], {"action": "accept", "content": {"value": True}})).status_code == 202
        second = await peer.answer(ask["id"], {"action": "accept", "content": {"value": False}})
        assert second.status_code == 400 and "answered already" in second.json()["error"]["message"]
        assert _text(await _next(found)) == "confirmed"


async def test_a_round_nobody_answers_ends_as_a_tool_error_and_a_late_answer_is_refused(
    peer: LegacyPeer, served: App
) -> None:
    await peer.initialize()
    async with peer.call("confirm") as (_, stream):
        found = messages(stream)
        ask = await _next(found)
        final = await asyncio.wait_for(found.__anext__(), ROUND_TIMEOUT + 5)
    assert final["result"]["isError"] is True and "round_timeout" in _text(final)
    late = await peer.answer(ask["id"], {"action": "accept", "content": {"value": True}})
    assert late.status_code == 400 and "stopped waiting" in late.json()["error"]["message"]
    # Nothing of the session is kept once its call ended and its stream was delivered.
    assert _live(served, peer) is None


async def test_a_client_that_leaves_while_asked_cancels_the_call(peer: LegacyPeer, served: App) -> None:
    await peer.initialize()
    async with peer.call("confirm") as (_, stream):
        ask = await _next(messages(stream))
    # The stream is closed: the call is cancelled and nothing waits any more.
    for _ in range(100):
        session = _live(served, peer)
        if session is None or (not session.calls and not session.waiting):
            break
        await asyncio.sleep(0.02)
    assert session is None or (not session.calls and not session.waiting)
    late = await peer.answer(ask["id"], {"action": "accept", "content": {"value": True}})
    assert late.status_code == 400


async def test_notifications_cancelled_cancels_the_call(peer: LegacyPeer, served: App) -> None:
    await peer.initialize()
    async with peer.call("confirm") as (_, stream):
        found = messages(stream)
        await _next(found)
        call_id = peer.next_id
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call_id}}
        assert (await peer.post(cancel)).status_code == 202
        rest = [message async for message in found]
    assert rest == []  # no response follows a cancelled request


async def test_a_missing_capability_is_named(peer: LegacyPeer) -> None:
    await peer.initialize(capabilities={})
    async with peer.call("confirm") as (_, stream):
        final = await _next(messages(stream))
    assert final["error"]["code"] == -32602 and "elicitation" in final["error"]["message"]
    assert "initialize" in final["error"]["message"]


async def test_url_elicitation_is_bridged_with_an_id_and_a_completion(peer: LegacyPeer) -> None:
    await peer.initialize()
    async with peer.call("bank") as (_, stream):
        found = messages(stream)
        ask = await _next(found)
        assert ask["params"]["mode"] == "url" and ask["params"]["elicitationId"]
        await peer.answer(ask["id"], {"action": "accept"})
        complete = await _next(found)
        final = await _next(found)
    assert complete["method"] == "notifications/elicitation/complete"
    assert complete["params"]["elicitationId"] == ask["params"]["elicitationId"]
    assert _text(final) == "bank: accept"


async def test_without_a_stream_a_url_question_is_error_32042(peer: LegacyPeer) -> None:
    await peer.initialize()
    async with peer.call("bank", accept="application/json") as (response, stream):
        final = await _next(messages(stream))
    assert response.headers["content-type"] == "application/json"
    assert final["error"]["code"] == -32042
    [elicitation] = final["error"]["data"]["elicitations"]
    assert elicitation["url"] == "https://bank.example/login" and elicitation["elicitationId"]


async def test_an_older_session_gets_no_priming_event_and_no_form_mode(peer: LegacyPeer) -> None:
    peer.version = "2025-06-18"
    await peer.initialize()
    async with peer.call("confirm") as (_, stream):
        first = await _next(stream)
        assert first.data is not None and "mode" not in first.data["params"]
        await peer.answer(first.data["id"], {"action": "accept", "content": {"value": True}})


async def test_progress_goes_on_the_calls_stream(peer: LegacyPeer) -> None:
    await peer.initialize()
    peer.next_id += 1
    body = {
        "jsonrpc": "2.0",
        "id": peer.next_id,
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {}, "_meta": {"progressToken": "p1"}},
    }
    async with peer.http.stream("POST", peer.url, json=body, headers=peer.headers()) as response:
        from tests.legacy.peer import events

        found = [event.data async for event in events(response) if event.data is not None]
    progress = [m["params"] for m in found if m.get("method") == "notifications/progress"]
    assert [p["progress"] for p in progress] == [0, 1, 2] and {p["progressToken"] for p in progress} == {"p1"}
    assert _text(found[-1]) == "slept"


# --- server notifications ------------------------------------------------------------------------


async def test_the_get_stream_carries_subscribed_updates_and_list_changes(peer: LegacyPeer) -> None:
    await peer.initialize()
    assert (await peer.request("resources/subscribe", {"uri": "test://doc"})).json()["result"] == {}
    async with peer.get() as (response, stream):
        assert response.status_code == 200
        async with peer.get() as (second, _):
            assert second.status_code == 409  # one GET stream per session
        await peer.request("tools/call", {"name": "touch", "arguments": {}})
        found = messages(stream)
        got = {(await _next(found))["method"], (await _next(found))["method"]}
    assert got == {"notifications/resources/updated", "notifications/tools/list_changed"}
    await peer.request("resources/unsubscribe", {"uri": "test://doc"})
    async with peer.get() as (_, stream):
        await peer.request("tools/call", {"name": "touch", "arguments": {}})
        only = await _next(messages(stream))
    assert only["method"] == "notifications/tools/list_changed"


@pytest.mark.parametrize("unread_for", [0.0, 1.2], ids=["while-it-runs", "after-it-ended"])
async def test_a_closed_stream_resumes_with_last_event_id(unread_for: float) -> None:
    """Resumed while the call still runs, or after it ended with nobody reading its stream: the
    result is kept for a resumer (event_ttl) even when nothing else of the session runs (a session
    dropped as idle once lost it: CI's relay burst test caught it)."""
    mcp = build(legacy_sse_close_after=0.2)
    with running_server(mcp.app) as base:
        async with httpx.AsyncClient(timeout=10) as http:
            peer = LegacyPeer(http, f"{base}/mcp")
            await peer.initialize()
            async with peer.call("slow") as (_, stream):
                seen = [event async for event in stream]
            assert seen[0].data is None and seen[0].retry == 1000  # the priming event
            assert not any(isinstance(e.data, dict) and "result" in e.data for e in seen)  # closed mid-call
            await asyncio.sleep(unread_for)  # "slow" ends after 0.9 s
            async with peer.get(**{"last-event-id": seen[-1].id or ""}) as (response, rest):
                assert response.status_code == 200
                resumed = [event.data async for event in rest if event.data is not None]
            assert _text(resumed[-1]) == "slept"
            async with peer.get(**{"last-event-id": "s99-1"}) as (unknown, _):
                assert unknown.status_code == 400


# --- modern-only and limits ----------------------------------------------------------------------


async def test_without_the_shim_initialize_names_the_supported_versions() -> None:
    from fastapi_mrtr import InputRequiredConfig

    mcp = build(input_required_config=InputRequiredConfig(legacy_shim=False, round_timeout=ROUND_TIMEOUT))
    with running_server(mcp.app) as base:
        async with httpx.AsyncClient(timeout=10) as http:
            peer = LegacyPeer(http, f"{base}/mcp")
            response = await http.post(
                peer.url,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "x", "version": "1"},
                    },
                },
                headers=peer.headers(),
            )
            assert response.status_code == 400
            error = response.json()["error"]
            assert error["code"] == -32022 and error["data"]["supported"] == ["2026-07-28"]
            assert "2026-07-28" in error["message"] and "mcp-session-id" not in response.headers
            get = await http.get(peer.url, headers={"mcp-session-id": "x", "accept": "text/event-stream"})
            assert get.status_code == 405


async def test_open_streams_are_bounded_per_caller_and_in_total() -> None:
    for options, status in (({"legacy_max_streams_per_caller": 1}, 429), ({"legacy_max_streams": 1}, 503)):
        mcp = build(**options)
        with running_server(mcp.app) as base:
            async with httpx.AsyncClient(timeout=10) as http:
                first, second = LegacyPeer(http, f"{base}/mcp"), LegacyPeer(http, f"{base}/mcp")
                await first.initialize()
                await second.initialize()
                async with first.call("confirm") as (_, stream):
                    await _next(messages(stream))  # the first call holds its stream, waiting for an answer
                    refused = await second.request("tools/call", {"name": "confirm", "arguments": {}})
                    assert refused.status_code == status, refused.text
                    assert refused.headers["retry-after"] and "open" in refused.json()["error"]["message"]
                # The first stream closed (the server sees it shortly): the caller may open one again.
                for _ in range(100):
                    async with second.call("confirm") as (response, stream):
                        if response.status_code == status:
                            await asyncio.sleep(0.02)
                            continue
                        assert response.status_code == 200
                        assert (await _next(messages(stream)))["method"] == "elicitation/create"
                        break
                else:
                    raise AssertionError("the stream bound was never released")


async def test_a_session_id_opens_on_another_replica_with_the_same_key(peer: LegacyPeer) -> None:
    """The id carries the session: a second server with the same key serves it, nothing shared."""
    await peer.initialize()
    other = build()
    with running_server(other.app) as base:
        elsewhere = LegacyPeer(peer.http, f"{base}/mcp", version=peer.version, session_id=peer.session_id)
        listed = await elsewhere.request("tools/list")
        assert listed.status_code == 200 and any(t["name"] == "confirm" for t in listed.json()["result"]["tools"])
        # But a question asked there is answered there: answered here, it is misdirected.
        async with elsewhere.call("confirm") as (_, stream):
            found = messages(stream)
            ask = await _next(found)
            misdirected = await peer.answer(ask["id"], {"action": "accept", "content": {"value": True}})
            assert misdirected.status_code == 421
            assert "Mcp-Session-Id" in misdirected.json()["error"]["message"]
            assert misdirected.json()["error"]["code"] == -32600
            assert (
                await elsewhere.answer(ask["id"], {"action": "accept", "content": {"value": True}})
            ).status_code == 202
            assert _text(await _next(found)) == "confirmed"


async def test_a_session_id_from_another_key_server_or_caller_is_unknown(peer: LegacyPeer) -> None:
    await peer.initialize()
    minted = peer.session_id
    for options in ({"request_state_key": "another-key-0123456789abcdef0123456789ab"}, {"name": "another-server"}):
        other = build(**options)
        with running_server(other.app) as base:
            stranger = LegacyPeer(peer.http, f"{base}/mcp", version=peer.version, session_id=minted)
            response = await stranger.request("tools/list")
            assert response.status_code == 404 and response.json()["error"]["code"] == -32001
    # The same id presented by another caller (other credentials) opens to nothing.
    thief = LegacyPeer(peer.http, peer.url, version=peer.version, session_id=minted)
    thief.extra_headers["authorization"] = "Bearer someone-else"
    assert (await thief.request("tools/list")).status_code == 404


async def test_a_session_id_expires_after_legacy_session_ttl() -> None:
    mcp = build(legacy_session_ttl=1)
    with running_server(mcp.app) as base:
        async with httpx.AsyncClient(timeout=10) as http:
            peer = LegacyPeer(http, f"{base}/mcp")
            await peer.initialize()
            assert (await peer.request("ping")).status_code == 200
            await asyncio.sleep(2.2)
            expired = await peer.request("ping")
            assert expired.status_code == 404 and expired.json()["error"]["code"] == -32001


async def test_nothing_of_a_session_is_kept_between_its_calls(peer: LegacyPeer, served: App) -> None:
    await peer.initialize()
    async with peer.call("confirm") as (_, stream):
        found = messages(stream)
        ask = await _next(found)
        assert _live(served, peer) is not None  # while it waits: its call, its stream, one waiter
        live = _live(served, peer)
        assert live is not None and len(live.calls) == 1 and len(live.waiting) == 1
        await peer.answer(ask["id"], {"action": "accept", "content": {"value": True}})
        assert _text(await _next(found)) == "confirmed"
    for _ in range(50):
        if _live(served, peer) is None:
            break
        await asyncio.sleep(0.02)
    assert _live(served, peer) is None
