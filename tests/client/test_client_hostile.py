"""Hostile replies: every broken reply is one of the documented errors, never a raw Python error."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from fastapi_mrtr.client import (
    ClientOptions,
    ElicitRequestParams,
    InvalidServerResponseError,
    McpError,
    McpServerError,
    MrtrClient,
    StatusCodeError,
    StreamClosedError,
)
from fastapi_mrtr.wire.protocol import CallToolResult, JSONRPCNotification
from tests.client.client_helpers import ScriptedServer, elicit, input_required, sse, text_result

pytestmark = pytest.mark.anyio

DEEP = b"[" * 100_000 + b"]" * 100_000  # far deeper than the recursion limit


def accept(params: ElicitRequestParams) -> dict[str, Any]:
    return {"action": "accept", "content": {}}


def raw_json(body: bytes, status: int = 200) -> httpx.Response:
    return httpx.Response(status, headers={"content-type": "application/json"}, content=body)


# These peers misbehave on the 2026-07-28 wire; no era probe stands between them and the call.
MODERN = ClientOptions(mode="2026-07-28")


async def call(server: ScriptedServer, **client_options: Any) -> Any:
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, options=MODERN, **client_options)
        client.set_elicitation_handler(accept)
        return await client.call_tool("t")


# --- 1. lone surrogates are echoed exactly ------------------------------------------------------


async def test_lone_surrogates_in_state_and_keys_are_echoed_exactly() -> None:
    ask = json.dumps(elicit()).encode()

    def respond(body: dict[str, Any]) -> Any:
        if "requestState" in body["params"]:
            return text_result("done")
        return raw_json(
            b'{"jsonrpc":"2.0","id":%d,"result":{"resultType":"input_required",'
            b'"inputRequests":{"k\\udfff":%s},"requestState":"ab\\ud800cd"}}' % (body["id"], ask)
        )

    server = ScriptedServer(respond)
    assert isinstance(await call(server), CallToolResult)
    retry = server.requests[1].content
    assert b'"requestState":"ab\\ud800cd"' in retry  # the escape went back as it came
    params = json.loads(retry)["params"]
    assert params["requestState"] == "ab\ud800cd" and list(params["inputResponses"]) == ["k\udfff"]


async def test_messages_without_surrogates_stay_compact_utf8() -> None:
    server = ScriptedServer(lambda body: text_result("ok"))
    async with server.client() as http:
        await MrtrClient("/mcp", http_client=http, options=MODERN).call_tool("t", {"city": "Zürich"})
    assert '"city":"Zürich"'.encode() in server.requests[0].content


# --- 2. deeply nested JSON ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        raw_json(b'{"jsonrpc":"2.0","id":1,"result":' + DEEP + b"}"),
        httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b"data: " + DEEP + b"\n\n"),
    ],
    ids=["json", "sse"],
)
async def test_deeply_nested_json_is_an_invalid_response(response: httpx.Response) -> None:
    with pytest.raises(InvalidServerResponseError, match="not JSON"):
        await call(ScriptedServer(lambda body: response))


# --- 3. malformed notifications are dropped -----------------------------------------------------


@pytest.mark.parametrize(
    "notification",
    [
        {"jsonrpc": "2.0", "method": "notifications/message", "params": [1]},
        {"jsonrpc": "2.0", "method": 5},
        {"method": "notifications/message", "params": {}},  # not JSON-RPC 2.0
    ],
)
async def test_malformed_notifications_are_logged_and_dropped(
    notification: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    good = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
    seen: list[JSONRPCNotification] = []
    server = ScriptedServer(
        lambda body: sse(notification, good, {"jsonrpc": "2.0", "id": body["id"], "result": text_result("done")}),
        tools=[],
    )
    with caplog.at_level(logging.WARNING, logger="fastapi_mrtr.client"):
        assert isinstance(await call(server, on_notification=seen.append), CallToolResult)
    assert [n.params for n in seen] == [good["params"]]
    assert "dropping malformed notification" in caplog.text


# --- 4, 5. non-2xx replies keep their status ----------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        {"error": {"code": "BAD_GATEWAY", "message": "upstream down"}},  # a gateway's own error
        {"error": {"code": -32603, "message": "no jsonrpc member"}},
        {"jsonrpc": "2.0", "id": 1},  # a bare envelope
        {"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": "x"}},  # a boolean code
        {"jsonrpc": "2.0", "id": 1, "result": text_result("done")},  # a result is no success here
    ],
)
async def test_non_2xx_without_a_json_rpc_error_is_an_http_status_error(payload: dict[str, Any]) -> None:
    with pytest.raises(StatusCodeError) as caught:
        await call(ScriptedServer(lambda body: httpx.Response(502, json=payload)))
    assert caught.value.status_code == 502 and json.loads(caught.value.body) == payload


async def test_non_2xx_deeply_nested_body_is_an_http_status_error() -> None:
    with pytest.raises(StatusCodeError) as caught:
        await call(ScriptedServer(lambda body: raw_json(DEEP, status=500)))
    assert caught.value.status_code == 500


async def test_non_2xx_json_rpc_error_is_still_a_server_error() -> None:
    error = {"code": -32602, "message": "Unknown tool: t"}
    server = ScriptedServer(lambda body: httpx.Response(400, json={"jsonrpc": "2.0", "id": None, "error": error}))
    with pytest.raises(McpServerError) as caught:
        await call(server)
    assert (caught.value.code, caught.value.http_status) == (-32602, 400)


# --- 6, 10. ids are type-exact, codes are integers, jsonrpc is "2.0" ----------------------------


@pytest.mark.parametrize(
    "envelope",
    [
        {"jsonrpc": "2.0", "id": True, "result": text_result("done")},  # True == 1 in Python
        {"jsonrpc": "2.0", "id": 1.0, "result": text_result("done")},
        {"jsonrpc": "2.0", "id": "1", "result": text_result("done")},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": "x"}},
        {"id": 1, "result": text_result("done")},
        {"jsonrpc": "1.0", "id": 1, "result": text_result("done")},
    ],
)
@pytest.mark.parametrize("framing", ["json", "sse"])
async def test_replies_that_only_look_like_ours_are_refused(envelope: dict[str, Any], framing: str) -> None:
    def respond(body: dict[str, Any]) -> httpx.Response:
        assert body["id"] == 1  # the envelopes above are built for the first id
        return sse(envelope) if framing == "sse" else httpx.Response(200, json=envelope)

    # Over SSE a reply to another id is skipped, so the stream then ends without ours.
    with pytest.raises((InvalidServerResponseError, StreamClosedError)):
        await call(ScriptedServer(respond))


# --- 7. a complete tools/call result carries content --------------------------------------------


async def test_tools_call_result_without_content_is_invalid() -> None:
    with pytest.raises(InvalidServerResponseError, match="without content"):
        await call(ScriptedServer(lambda body: {"resultType": "complete", "structuredContent": {"a": 1}}))


async def test_tools_call_result_with_empty_content_is_fine() -> None:
    result = await call(ScriptedServer(lambda body: {"resultType": "complete", "content": []}))
    assert isinstance(result, CallToolResult) and result.content == []


# --- 8. elicitation params that do not fit their mode -------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {"mode": "url", "message": "go"},
        {"mode": "form", "message": "go"},
        {"message": "go"},  # no mode: form
        {"message": "go", "requestedSchema": {"type": "object", "properties": [["a"]]}},
        {"message": "go", "requestedSchema": {"type": "object", "properties": {}, "required": 5}},
    ],
)
async def test_elicitation_params_missing_what_their_mode_needs_are_refused_locally(params: dict[str, Any]) -> None:
    asked: list[ElicitRequestParams] = []

    def handler(p: ElicitRequestParams) -> dict[str, Any]:
        asked.append(p)
        return {"action": "accept"}

    other = elicit("fine?")  # a valid request in the same round: its handler must not run either
    server = ScriptedServer(
        lambda body: input_required({"a": other, "b": {"method": "elicitation/create", "params": params}}, "s")
    )
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, options=MODERN)
        client.set_elicitation_handler(handler)
        with pytest.raises(McpError) as caught:
            await client.call_tool("t")
    assert caught.value.code == -32602 and not isinstance(caught.value, McpServerError)
    assert asked == [] and len(server.requests) == 1  # nothing sent back


# --- 10. a stream cut mid-event -----------------------------------------------------------------


async def test_connection_dropped_mid_sse_is_a_stream_closed_error(hostile_url: str) -> None:
    async with MrtrClient(f"{hostile_url}/sse-cut", options=MODERN) as client:
        with pytest.raises(StreamClosedError, match="broke off"):
            await client.call_tool("t")
