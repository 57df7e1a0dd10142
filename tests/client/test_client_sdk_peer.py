"""MrtrClient against the official Python SDK's server, on real uvicorn and in-process (ASGI)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from fastapi_mrtr.client import (
    ClientOptions,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredConfig,
    InputRequiredResult,
    McpError,
    McpServerError,
    MrtrClient,
    ProgressNotification,
)
from fastapi_mrtr.wire.protocol import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    CallToolResult,
    GetPromptResult,
    ReadResourceResult,
    TextContent,
)
from tests.client import sdk_server
from tests.client.client_helpers import Wire, asgi_http

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def peer(kind: str, url: str, wire: Wire, options: ClientOptions | None = None) -> AsyncIterator[MrtrClient]:
    """A client for the SDK peer: over TCP to uvicorn, or in-process through ASGITransport."""
    if kind == "uvicorn":
        async with httpx.AsyncClient(event_hooks=wire.hooks()) as http:
            yield MrtrClient(url, http_client=http, options=options)
    else:
        async with asgi_http(wire) as http:
            yield MrtrClient("/mcp", http_client=http, options=options)


@pytest.fixture(params=["uvicorn", "asgi"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def text_of(result: Any) -> str:
    assert isinstance(result, CallToolResult), result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def accept_ok(params: ElicitRequestParams) -> dict[str, Any]:
    return {"action": "accept", "content": {"ok": True}}


async def test_discover_and_lists(kind: str, sdk_url: str, wire: Wire) -> None:
    async with peer(kind, sdk_url, wire) as client:
        discovered = await client.discover()
        assert "2026-07-28" in discovered.supported_versions
        assert discovered.meta and discovered.meta["io.modelcontextprotocol/serverInfo"]["name"] == "peer-sdk"
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert {"echo", "confirm", "delete_item", "slow"} <= set(names)
        assert [p.name for p in (await client.list_prompts()).prompts] == ["greet"]
        assert [r.uri for r in (await client.list_resources()).resources] == ["res://hello"]
        prompt = await client.get_prompt("greet", {"name": "Ada"})
        assert isinstance(prompt, GetPromptResult)
        assert isinstance(prompt.messages[0].content, TextContent)
        assert prompt.messages[0].content.text == "Hello Ada"
        resource = await client.read_resource("res://hello")
        assert isinstance(resource, ReadResourceResult)
        assert getattr(resource.contents[0], "text", None) == "hello world"
    assert all(e.status == 200 for e in wire.exchanges)


async def test_hand_built_input_required_round_trip(kind: str, sdk_url: str, wire: Wire) -> None:
    async with peer(kind, sdk_url, wire) as client:
        client.set_elicitation_handler(accept_ok)
        result = await client.call_tool("confirm", {"item": "report.txt"})
    assert text_of(result) == "done report.txt (state step1)"
    first, retry = wire.calls("tools/call")
    assert first.body["id"] != retry.body["id"]
    assert retry.params["name"] == "confirm" and retry.params["arguments"] == {"item": "report.txt"}
    assert retry.params["inputResponses"] == {"confirm": {"action": "accept", "content": {"ok": True}}}
    # The SDK seals even a hand-built state; what we echo must be its token, byte for byte.
    assert retry.params["requestState"] == wire.request_states()[0]
    assert "inputResponses" not in first.params and "requestState" not in first.params


async def test_resolver_elicit_round_trip_echoes_sealed_state_byte_for_byte(
    kind: str, sdk_url: str, wire: Wire
) -> None:
    seen: list[ElicitRequestParams] = []

    async def handler(params: ElicitRequestParams) -> ElicitResult[Any]:
        seen.append(params)
        return ElicitResult(action="accept", content={"ok": True})

    async with peer(kind, sdk_url, wire) as client:
        client.set_elicitation_handler(handler)
        result = await client.call_tool("delete_item", {"item": "report.txt"})
    assert text_of(result) == "deleted report.txt"
    assert seen[0].message == "Really delete report.txt?" and seen[0].mode == "form"
    first, retry = wire.calls("tools/call")
    [key] = retry.params["inputResponses"]
    assert key.endswith(":ask_confirm")
    [state] = wire.request_states()
    assert retry.params["requestState"] == state  # the SDK's sealed token, unchanged
    assert len(state) > 100
    assert first.body["id"] != retry.body["id"]


async def test_every_request_carries_headers_and_meta(kind: str, sdk_url: str, wire: Wire) -> None:
    async with peer(kind, sdk_url, wire) as client:
        client.set_elicitation_handler(accept_ok)
        await client.list_tools()
        await client.call_tool("confirm", {"item": "x"})
        await client.get_prompt("greet", {"name": "x"})
        await client.read_resource("res://hello")
    for exchange in wire.exchanges:
        method = exchange.body["method"]
        meta = exchange.params["_meta"]
        assert exchange.headers["mcp-protocol-version"] == "2026-07-28" == meta[META_PROTOCOL_VERSION]
        assert exchange.headers["mcp-method"] == method
        assert exchange.headers["accept"] == "application/json, text/event-stream"
        assert exchange.headers["content-type"] == "application/json"
        # The tasks extension is declared where a task may come back: on tools/call (TaskOptions).
        tasks = {"extensions": {"io.modelcontextprotocol/tasks": {}}} if method == "tools/call" else {}
        assert meta[META_CLIENT_CAPABILITIES] == {"elicitation": {"form": {}, "url": {}}, **tasks}
        assert meta[META_CLIENT_INFO]["name"] == "fastapi-mrtr-client"
        expected_name = {"tools/call": "confirm", "prompts/get": "greet", "resources/read": "res://hello"}.get(method)
        assert exchange.headers.get("mcp-name") == expected_name
    ids = [e.body["id"] for e in wire.exchanges]
    assert len(ids) == len(set(ids))


async def test_two_questions_in_one_round(kind: str, sdk_url: str, wire: Wire) -> None:
    async with peer(kind, sdk_url, wire) as client:
        client.set_elicitation_handler(accept_ok)
        result = await client.call_tool("two_questions")
    assert text_of(result) == "both answered"
    _, retry = wire.calls("tools/call")
    assert set(retry.params["inputResponses"]) == {"first", "second"}
    assert "requestState" not in retry.params  # the server sent none


async def test_missing_handler_is_a_local_method_not_found(kind: str, sdk_url: str, wire: Wire) -> None:
    async with peer(kind, sdk_url, wire) as client:
        with pytest.raises(McpError) as caught:
            await client.call_tool("confirm", {"item": "x"})
    assert caught.value.code == -32601
    assert not isinstance(caught.value, McpServerError)
    assert len(wire.calls("tools/call")) == 1  # nothing was sent back


async def test_server_error_surfaces_code_message_and_data(kind: str, sdk_url: str, wire: Wire) -> None:
    async with peer(kind, sdk_url, wire) as client:
        # No elicitation handler, so no capability: the resolver tool refuses with -32021.
        with pytest.raises(McpServerError) as caught:
            await client.call_tool("delete_item", {"item": "x"})
        assert caught.value.code == -32021
        assert caught.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}
        assert caught.value.http_status == 400
        with pytest.raises(McpServerError) as tampered:
            await client.call_tool("delete_item", {"item": "x"}, request_state="v1.tampered")
        assert tampered.value.code == -32602
        assert tampered.value.message == "Invalid or expired requestState"
        assert tampered.value.data == {"reason": "invalid_request_state"}


async def test_manual_mode_returns_input_required_and_accepts_explicit_retry(
    kind: str, sdk_url: str, wire: Wire
) -> None:
    manual = ClientOptions(input_required_config=InputRequiredConfig(auto_fulfill=False))
    async with peer(kind, sdk_url, wire, manual) as client:
        client.set_elicitation_handler(accept_ok)
        first = await client.call_tool("confirm", {"item": "x"})
        assert isinstance(first, InputRequiredResult)
        assert first.input_requests is not None and first.input_requests["confirm"].method == "elicitation/create"
        assert first.request_state == wire.request_states()[0]
        done = await client.call_tool(
            "confirm",
            {"item": "x"},
            input_responses={"confirm": ElicitResult(action="accept", content={"ok": True})},
            request_state=first.request_state,
        )
    assert text_of(done) == "done x (state step1)"


async def test_progress_over_sse(kind: str, sdk_url: str, wire: Wire) -> None:
    notes: list[ProgressNotification] = []
    async with peer(kind, sdk_url, wire) as client:
        result = await client.call_tool("slow", {"steps": 3}, progress_callback=notes.append)
    assert text_of(result) == "done"
    assert [(n.progress, n.total, n.message) for n in notes] == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    [call] = wire.calls("tools/call")
    assert {n.progress_token for n in notes} == {call.params["_meta"]["progressToken"]}


async def test_progress_arrives_while_the_tool_still_runs(sdk_url: str, wire: Wire) -> None:
    """Over real TCP the SSE stream is read as it comes: the tool waits for our callback."""
    sdk_server.ACK.clear()
    async with peer("uvicorn", sdk_url, wire) as client:
        result = await client.call_tool("wait_for_ack", progress_callback=lambda note: sdk_server.ACK.set())
    assert text_of(result) == "acked"


async def test_json_response_mode_server(wire: Wire) -> None:
    async with asgi_http(wire, json_response=True) as http:
        client = MrtrClient("/mcp", http_client=http)
        client.set_elicitation_handler(accept_ok)
        assert text_of(await client.call_tool("confirm", {"item": "y"})) == "done y (state step1)"


async def test_deprecated_sampling_and_roots_handlers_still_answer(kind: str, sdk_url: str, wire: Wire) -> None:
    async with peer(kind, sdk_url, wire) as client:
        with pytest.warns(DeprecationWarning, match="sampling"):
            client.set_sampling_handler(
                lambda params: {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
            )
        with pytest.warns(DeprecationWarning, match="roots"):
            client.set_roots_handler(lambda: {"roots": [{"uri": "file:///work", "name": "work"}]})
        assert text_of(await client.call_tool("ask_sample")) == "model said Paris"
        assert text_of(await client.call_tool("ask_roots")) == "roots: file:///work"
    caps = wire.exchanges[0].params["_meta"][META_CLIENT_CAPABILITIES]
    assert caps == {"sampling": {}, "roots": {}}
    sample_retry = wire.calls("tools/call")[1]
    assert sample_retry.params["inputResponses"]["capital"] == {
        "role": "assistant",
        "content": {"type": "text", "text": "Paris"},
        "model": "m",
    }
