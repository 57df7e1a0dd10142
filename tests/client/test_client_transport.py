"""Transport and session details: SSE, HTTP statuses, _meta, headers, version fallback."""

from __future__ import annotations

import json
import warnings
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from fastapi_mrtr.client import (
    ClientOptions,
    InvalidServerResponseError,
    InvalidToolHeadersError,
    McpServerError,
    MrtrClient,
    ProgressNotification,
    StatusCodeError,
    StreamClosedError,
)
from fastapi_mrtr.client._transport import iter_sse_data
from fastapi_mrtr.wire.protocol import Implementation, JSONRPCNotification
from tests.client.client_helpers import ScriptedServer, elicit, input_required, sse, text_result

pytestmark = pytest.mark.anyio

TOOLS = {
    "resultType": "complete",
    "ttlMs": 0,
    "cacheScope": "private",
    "tools": [
        {
            "name": "route",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "urgent": {"type": "boolean", "x-mcp-header": "Urgent"},
                    "query": {"type": "string"},
                },
            },
        },
        {
            "name": "broken",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}},
        },
    ],
}


def progress(token: Any, value: float) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": value, "total": 2},
    }


def reply(body: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": body["id"], "result": result}


async def lines(*items: str) -> AsyncIterator[str]:
    for item in items:
        yield item


async def test_sse_parser_follows_the_event_stream_rules() -> None:
    stream = lines(": comment", 'data: {"a":', "data: 1}", "", "event: other", "data: skipped", "", "data:x", "")
    assert [data async for data in iter_sse_data(stream)] == ['{"a":\n1}', "x"]
    assert [d async for d in iter_sse_data(lines("id: 7", "retry: 10", "data: tail"))] == ["tail"]


async def test_sse_reply_delivers_progress_and_notifications_then_the_result() -> None:
    def respond(body: dict[str, Any]) -> httpx.Response:
        token = body["params"]["_meta"]["progressToken"]
        log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
        stray = {"jsonrpc": "2.0", "id": 99, "method": "elicitation/create", "params": {}}  # ignored
        return sse(
            progress(token, 1),
            log,
            stray,
            progress("someone-else", 5),
            progress(token, 2),
            reply(body, text_result("done")),
        )

    notes: list[ProgressNotification] = []
    others: list[JSONRPCNotification] = []
    server = ScriptedServer(respond, tools=[])
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, on_notification=others.append)
        await client.call_tool("t", progress_callback=notes.append)
    assert [n.progress for n in notes] == [1, 2]
    assert [o.method for o in others] == ["notifications/message", "notifications/progress"]


async def test_client_level_progress_callback_and_async_callbacks() -> None:
    notes: list[float] = []

    async def on_progress(note: ProgressNotification) -> None:
        notes.append(note.progress)

    server = ScriptedServer(
        lambda body: sse(progress(body["params"]["_meta"]["progressToken"], 1), reply(body, text_result("ok"))),
        tools=[],
    )
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, on_progress=on_progress)
        await client.call_tool("t")
    assert notes == [1]


async def test_no_progress_token_without_a_callback() -> None:
    server = ScriptedServer(lambda body: text_result("ok"))
    async with server.client() as http:
        await MrtrClient("/mcp", http_client=http).call_tool("t")
    assert "progressToken" not in server.bodies[0]["params"]["_meta"]


async def test_sse_error_response_raises_server_error() -> None:
    error = {"code": -32603, "message": "boom", "data": [1]}
    server = ScriptedServer(lambda body: sse({"jsonrpc": "2.0", "id": body["id"], "error": error}))
    async with server.client() as http:
        with pytest.raises(McpServerError) as caught:
            await MrtrClient("/mcp", http_client=http).call_tool("t")
    assert (caught.value.code, caught.value.message, caught.value.data) == (-32603, "boom", [1])


async def test_sse_stream_ending_without_response() -> None:
    server = ScriptedServer(lambda body: sse(progress("x", 1)))
    async with server.client() as http:
        with pytest.raises(StreamClosedError):
            await MrtrClient("/mcp", http_client=http).call_tool("t")


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (httpx.Response(401, text="Unauthorized"), StatusCodeError),
        (httpx.Response(406), StatusCodeError),
        (httpx.Response(202), InvalidServerResponseError),
        (httpx.Response(200, text="<html>"), InvalidServerResponseError),
        (httpx.Response(200, json={"jsonrpc": "2.0", "id": 12345, "result": {}}), InvalidServerResponseError),
        (httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "error": "bad"}), InvalidServerResponseError),
    ],
)
async def test_replies_that_are_not_our_response(response: httpx.Response, error: type[Exception]) -> None:
    server = ScriptedServer(lambda body: response)
    async with server.client() as http:
        with pytest.raises(error):
            await MrtrClient("/mcp", http_client=http).list_tools()


async def test_http_error_with_json_rpc_body_is_a_server_error() -> None:
    server = ScriptedServer(
        lambda body: httpx.Response(
            404, json={"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "Method not found"}}
        )
    )
    async with server.client() as http:
        with pytest.raises(McpServerError) as caught:
            await MrtrClient("/mcp", http_client=http).request("ping")
    assert caught.value.code == -32601 and caught.value.http_status == 404


async def test_capabilities_follow_the_registered_handlers() -> None:
    server = ScriptedServer(lambda body: {"resultType": "complete", "tools": []})
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        await client.list_tools()
        client.set_elicitation_handler(lambda params: {"action": "decline"})
        await client.list_tools()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            client.set_sampling_handler(lambda params: {"content": {"type": "text", "text": ""}, "model": "m"})
            client.set_roots_handler(lambda: {"roots": []})
        await client.list_tools()
        client.set_elicitation_handler(None)
        await client.list_tools()
    caps = [b["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] for b in server.bodies]
    assert caps == [
        {},
        {"elicitation": {"form": {}, "url": {}}},
        {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}},
        {"sampling": {}, "roots": {}},
    ]


async def test_sampling_and_roots_setters_warn() -> None:
    client = MrtrClient("http://unused/mcp")
    with pytest.warns(DeprecationWarning):
        client.set_sampling_handler(None)
    with pytest.warns(DeprecationWarning):
        client.set_roots_handler(None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        client.set_elicitation_handler(None)  # not deprecated
    await client.aclose()


async def test_meta_client_info_and_caller_meta() -> None:
    server = ScriptedServer(lambda body: text_result("ok"))
    info = Implementation(name="my-agent", version="9", title="My Agent")
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, options=ClientOptions(client_info=info))
        await client.call_tool("t", meta={"trace": "abc", "io.modelcontextprotocol/protocolVersion": "1999-01-01"})
    meta = server.bodies[0]["params"]["_meta"]
    assert meta["trace"] == "abc"
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"  # ours wins: it matches the header
    assert meta["io.modelcontextprotocol/clientInfo"] == {"name": "my-agent", "version": "9", "title": "My Agent"}


async def test_extra_headers_and_non_ascii_names() -> None:
    server = ScriptedServer(lambda body: text_result("ok"))
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http, headers={"Authorization": "Bearer t", "Mcp-Method": "x"})
        await client.call_tool("café")
    headers = server.requests[0].headers
    assert headers["authorization"] == "Bearer t"
    assert headers["mcp-method"] == "tools/call"  # ours cannot be overridden
    assert headers["mcp-name"] == "=?base64?Y2Fmw6k=?="


async def test_version_rejected_then_retried_with_a_supported_one() -> None:
    def respond(body: dict[str, Any]) -> Any:
        if len(server.requests) == 1:
            error = {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": "2030-01-01"},
            }
            return httpx.Response(400, json={"jsonrpc": "2.0", "id": body["id"], "error": error})
        return {"resultType": "complete", "tools": []}

    server = ScriptedServer(respond)
    async with server.client() as http:
        options = ClientOptions(protocol_version="2030-01-01", mode="2026-07-28")  # no probe: the call meets -32022
        client = MrtrClient("/mcp", http_client=http, options=options)
        await client.list_tools()
        assert client.protocol_version == "2026-07-28"
    first, second = server.requests
    assert first.headers["mcp-protocol-version"] == "2030-01-01"
    assert second.headers["mcp-protocol-version"] == "2026-07-28"
    assert json.loads(second.content)["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert server.bodies[0]["id"] != server.bodies[1]["id"]


async def test_version_rejection_without_a_common_version_surfaces() -> None:
    error = {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2099-01-01"]}}
    server = ScriptedServer(lambda body: httpx.Response(400, json={"jsonrpc": "2.0", "id": body["id"], "error": error}))
    async with server.client() as http:
        with pytest.raises(McpServerError) as caught:
            await MrtrClient("/mcp", http_client=http).list_tools()
    assert caught.value.code == -32022 and len(server.requests) == 1


async def test_param_headers_are_mirrored_and_invalid_tools_dropped() -> None:
    def respond(body: dict[str, Any]) -> Any:
        return TOOLS if body["method"] == "tools/list" else text_result("ok")

    server = ScriptedServer(respond)
    transport = httpx.MockTransport(server.handle)
    async with httpx.AsyncClient(transport=transport, base_url="http://mock", headers={"Mcp-Param-Stale": "1"}) as http:
        client = MrtrClient("/mcp", http_client=http)
        assert [tool.name for tool in (await client.list_tools()).tools] == ["route"]
        await client.call_tool("route", {"region": " eu west ", "urgent": False, "query": "q"})
        with pytest.raises(InvalidToolHeadersError):
            await client.call_tool("broken", {"n": 1})
    headers = server.requests[1].headers
    assert headers["mcp-param-region"] == "=?base64?IGV1IHdlc3Qg?="
    assert headers["mcp-param-urgent"] == "false"
    assert "mcp-param-query" not in headers and "mcp-param-stale" not in headers
    assert len(server.requests) == 2  # the invalid tool was never called


async def test_header_mismatch_relearns_the_tools_and_resends_once() -> None:
    def respond(body: dict[str, Any]) -> Any:
        if body["method"] == "tools/list":
            return TOOLS
        if "mcp-param-region" not in server.requests[-1].headers:
            error = {"code": -32020, "message": "Mcp-Param-Region header missing"}
            return httpx.Response(400, json={"jsonrpc": "2.0", "id": body["id"], "error": error})
        return text_result("ok")

    server = ScriptedServer(respond)
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        await client.call_tool("route", {"region": "eu"})  # no tools/list yet: no header cache
    assert [b["method"] for b in server.bodies] == ["tools/call", "tools/list", "tools/call"]
    assert server.requests[2].headers["mcp-param-region"] == "eu"


async def test_mirrored_headers_on_every_mrtr_round() -> None:
    replies = [TOOLS, input_required({"q": elicit()}, "s"), text_result("ok")]
    server = ScriptedServer(lambda body: replies.pop(0))
    async with server.client() as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(lambda params: {"action": "accept", "content": {}})
        await client.list_tools()
        await client.call_tool("route", {"region": "eu"})
    assert [r.headers.get("mcp-param-region") for r in server.requests] == [None, "eu", "eu"]


async def test_owned_http_client_is_closed_but_a_given_one_is_not() -> None:
    async with httpx.AsyncClient() as given:
        async with MrtrClient("http://unused/mcp", http_client=given):
            pass
        assert not given.is_closed
    own = MrtrClient("http://unused/mcp")
    async with own:
        pass
    assert own._wire.http.http.is_closed


async def test_a_non_jsonrpc_error_body_is_an_http_status_error() -> None:
    """An OAuth 403 ``{"error": "insufficient_scope"}`` is not a malformed JSON-RPC error."""
    import httpx

    from fastapi_mrtr.client import MrtrClient, StatusCodeError

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, json={"error": "insufficient_scope"})

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with MrtrClient("http://localhost/mcp", http_client=http) as client:
        with pytest.raises(StatusCodeError) as raised:
            await client.list_tools()
    await http.aclose()
    assert "403" in str(raised.value) or getattr(raised.value, "status_code", None) == 403
