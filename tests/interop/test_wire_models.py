"""Every message the servers send, checked against the official SDK's wire models (``mcp_types``).

The ``served`` fixture records each exchange with the endpoint on real uvicorn and checks every
message in it (results by method, each ``inputRequests`` entry, notifications, errors); these
tests make the server send each kind: every method, the first round of every tool over plain
JSON, and every refusal. The first tests prove the checker refuses what a client would.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest
from mcp.shared.inbound import encode_header_value

from tests.interop import wire
from tests.interop.recorder import Exchange, exchange_issues, sse_data
from tests.interop.servers import Served, cases, listing, tool_arguments
from tests.interop.test_official_client import REFUSED
from tests.support import META, rpc_body, rpc_headers

pytestmark = pytest.mark.anyio

SERVERS = ["everything", "bookshop", "questions"]

# --- the checker refuses what a client refuses --------------------------------------------------------

FORM_REQUEST: dict[str, Any] = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Shipping?",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "speed": {"type": "string", "enum": ["standard", "express"], "default": "standard"},
                "note": {"type": "string", "maxLength": 200, "title": "Gift note"},
            },
            "required": ["speed"],
        },
    },
}
INPUT_REQUIRED: dict[str, Any] = {
    "resultType": "input_required",
    "inputRequests": {
        "shipping": FORM_REQUEST,
        "capital": {
            "method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 10},
        },
        "roots": {"method": "roots/list", "params": {}},
        "bank": {"method": "elicitation/create", "params": {"mode": "url", "message": "Go", "url": "https://x.test"}},
    },
    "requestState": "sealed",
}
COMPLETE: dict[str, Any] = {
    "resultType": "complete",
    "content": [{"type": "text", "text": '{"result": "hi"}'}],
    "structuredContent": {"result": "hi"},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
}
OUTPUT_SCHEMAS = {"echo": {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}}


def edited(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``document`` with the key at the dotted ``path`` set to ``value`` (or removed)."""
    copied = copy.deepcopy(document)
    *parents, last = path.split(".")
    target = copied
    for key in parents:
        target = target[key]
    if value is REMOVE:
        del target[last]
    else:
        target[last] = value
    return copied


REMOVE = object()
SHIPPING = "inputRequests.shipping.params.requestedSchema"


def test_the_checker_accepts_well_formed_results() -> None:
    assert wire.result_issues("tools/call", INPUT_REQUIRED) == []
    assert wire.tool_result_issues("echo", COMPLETE, OUTPUT_SCHEMAS) == []


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (f"{SHIPPING}.properties.note.default", None, "null is not a valid StringSchema.default"),
        (f"{SHIPPING}.properties.speed.default", "overnight", "speed.default: 'overnight' is not one of"),
        (f"{SHIPPING}.properties.note.anyOf", [{"type": "string"}], "note.anyOf: not a field of StringSchema"),
        (f"{SHIPPING}.properties.note.type", "object", "PrimitiveSchemaDefinition"),
        (f"{SHIPPING}.required", ["speed", "colour"], "'colour' is not a property"),
        (f"{SHIPPING}.additionalProperties", False, "additionalProperties: not a field of RequestedSchema"),
        ("inputRequests.shipping.params.mode", "popup", "ElicitRequest rejects it"),
        ("inputRequests.shipping.method", "tools/call", "'tools/call' is not an input request"),
        ("inputRequests.capital.params.maxTokens", REMOVE, "CreateMessageRequest rejects it"),
        ("inputRequests.roots.jsonrpc", "2.0", "jsonrpc: not a field of ListRootsRequest"),
        ("inputRequests", {}, "requires at least one of input_requests or request_state"),
        ("resultType", "pending", "resultType 'pending' is none of"),
        ("resultType", REMOVE, "Field required"),
        ("ttlMs", 1000, "ttlMs: not a field of InputRequiredResult"),
    ],
)
def test_the_checker_refuses_a_bad_input_required_result(path: str, value: Any, expected: str) -> None:
    document = edited(INPUT_REQUIRED, path, value)
    if path == "inputRequests":
        del document["requestState"]
    issues = wire.result_issues("tools/call", document)
    assert any(expected in issue for issue in issues), issues


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("structuredContent", REMOVE, "has an outputSchema but the result has no structuredContent"),
        ("structuredContent", {"result": 3}, "does not conform to the outputSchema"),
        ("isError", None, "null is not a valid CallToolResult.isError"),
        ("content", [{"type": "text", "text": "x", "extra": 1}], "extra: not a field of TextContent"),
        ("content", [{"type": "video", "data": ""}], "rejects it"),
        ("requestState", "x", "requestState: not a field of CallToolResult"),
    ],
)
def test_the_checker_refuses_a_bad_tool_result(path: str, value: Any, expected: str) -> None:
    issues = wire.tool_result_issues("echo", edited(COMPLETE, path, value), OUTPUT_SCHEMAS)
    assert any(expected in issue for issue in issues), issues


def test_the_checker_refuses_input_required_where_the_method_has_none() -> None:
    assert "input_required is not a result" in wire.result_issues("tools/list", INPUT_REQUIRED)[0]


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"code": -32022, "message": "Unsupported", "data": {"supported": ["2026-07-28"]}}, "requested"),
        ({"code": -32021, "message": "Needs sampling", "data": {"requiredCapabilities": []}}, "rejects it"),
        ({"code": -32602, "message": None}, "rejects it"),
        ({"code": -32602, "message": "Bad", "detail": "x"}, "detail: not a field of"),
    ],
)
def test_the_checker_refuses_a_bad_error(error: dict[str, Any], expected: str) -> None:
    issues = wire.error_issues({"jsonrpc": "2.0", "id": 1, "error": error})
    assert any(expected in issue for issue in issues), issues


def _exchange(request: dict[str, Any], *events: dict[str, Any]) -> Exchange:
    exchange = Exchange("POST", status=200, content_type="text/event-stream", complete=True)
    exchange.request_body += httpx.Request("POST", "/", json=request).content
    for event in events:
        exchange.response_body += b"event: message\ndata: " + httpx.Request("POST", "/", json=event).content + b"\n\n"
    return exchange


def test_the_checker_reads_sse_streams_and_their_notifications() -> None:
    request = rpc_body("tools/call", {"name": "echo"}, request_id=7, meta={**META, "progressToken": "p"})
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}}
    response = {"jsonrpc": "2.0", "id": 7, "result": COMPLETE}
    assert sse_data(b"event: message\ndata: {}\n\n: keep-alive\n\n") == ["{}"]
    assert exchange_issues(_exchange(request, progress, response), OUTPUT_SCHEMAS) == []
    stray = edited(progress, "params.progressToken", "other")
    assert "not ours" in exchange_issues(_exchange(request, stray, response), OUTPUT_SCHEMAS)[0]
    assert "not the last message" in exchange_issues(_exchange(request, response, progress), OUTPUT_SCHEMAS)[0]
    wrong_id = edited(response, "id", 8)
    assert "not the request's id" in exchange_issues(_exchange(request, wrong_id), OUTPUT_SCHEMAS)[0]
    unknown = {"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": "e"}}
    assert "not a server notification" in exchange_issues(_exchange(request, unknown, response), OUTPUT_SCHEMAS)[0]


# --- the servers: every method, every first round, every refusal -------------------------------------


async def post(served: Served, body: Any, headers: dict[str, str] | None = None, **options: Any) -> httpx.Response:
    async with httpx.AsyncClient(headers=served.headers) as http:
        return await http.post(served.url, json=body, headers=headers, **options)


# Every capability a client can declare (URL-mode elicitation included), as the official client does.
EVERY_CAPABILITY: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}


async def call(served: Served, method: str, params: dict[str, Any] | None = None, **meta: Any) -> httpx.Response:
    """``method`` as a client with every capability sends it, headers (``Mcp-Param-*`` too) included."""
    params = params or {}
    headers = rpc_headers(method, params.get("name") or params.get("uri"))
    if method == "tools/call" and params.get("name") in served.listing.tools:
        headers |= param_headers(served.listing.tools[params["name"]]["inputSchema"], params.get("arguments") or {})
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": EVERY_CAPABILITY, **meta}
    return await post(served, rpc_body(method, params, meta=meta), headers)


def param_headers(input_schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-{Name}`` header of each argument whose property says ``"x-mcp-header": Name``."""
    headers = {}
    for name, prop in (input_schema.get("properties") or {}).items():
        header = prop.get("x-mcp-header")
        if header and name in arguments:
            value = arguments[name]
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            headers[f"Mcp-Param-{header}"] = encode_header_value(text)
    return headers


# The capability each listing method needs; a server without it refuses the method (-32601).
LIST_METHODS = {
    "server/discover": None,
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resources",
}


@pytest.mark.parametrize("served", SERVERS, indirect=True)
@pytest.mark.parametrize("method", LIST_METHODS)
async def test_every_listing_method_conforms(served: Served, method: str) -> None:
    reply = await call(served, method)
    capability = LIST_METHODS[method]
    if capability is None or capability in served.listing.capabilities:
        assert reply.status_code == 200, reply.text
    else:
        assert reply.json()["error"]["code"] == -32601, reply.text
    assert served.assert_wire_conforms() == 1


@pytest.mark.parametrize("served", SERVERS, indirect=True)
async def test_every_listing_page_conforms(served: Served) -> None:
    """Follow ``nextCursor`` with the smallest pages the server allows (one item each)."""
    reply = (await call(served, "tools/list")).json()["result"]
    while reply.get("nextCursor"):
        reply = (await call(served, "tools/list", {"cursor": reply["nextCursor"]})).json()["result"]
    served.assert_wire_conforms()


TOOLS = cases("tools")


@pytest.mark.parametrize(("served", "tool"), TOOLS, ids=[f"{s}:{t}" for s, t in TOOLS], indirect=["served"])
async def test_every_first_round_conforms_over_json(served: Served, tool: str) -> None:
    """The first round of each tool, answered as one JSON body (no stream), with every capability."""
    reply = await call(served, "tools/call", {"name": tool, "arguments": tool_arguments(served.name, tool)})
    assert reply.headers["content-type"].startswith("application/json")
    refused = REFUSED.get((served.name, tool))  # a JSON-RPC error by design (tasks fixtures)
    if refused is not None:
        assert reply.json()["error"]["code"] == refused
    else:
        assert reply.json()["result"]["resultType"] in ("complete", "input_required")
    assert served.assert_wire_conforms() == 1


def _refusals() -> list[tuple[str, dict[str, Any], int]]:
    """``(what, request, expected code)``: each way a request can be refused."""
    good = rpc_body("tools/list")
    headers = rpc_headers("tools/list")
    return [
        ("ping (gone in 2026-07-28)", {"body": rpc_body("ping"), "headers": rpc_headers("ping")}, -32601),
        ("unknown method", {"body": rpc_body("nope/nope"), "headers": rpc_headers("nope/nope")}, -32601),
        ("not JSON", {"content": b"{", "headers": {**headers, "Content-Type": "application/json"}}, -32700),
        ("a batch", {"body": [good], "headers": headers}, -32600),
        ("no method", {"body": {"jsonrpc": "2.0", "id": 1}, "headers": headers}, -32600),
        ("a boolean id", {"body": {**good, "id": True}, "headers": headers}, -32600),
        ("no _meta", {"body": {**good, "params": {}}, "headers": headers}, -32602),
        ("no version header", {"body": good, "headers": {**headers, "MCP-Protocol-Version": ""}}, -32020),
        ("other Mcp-Method", {"body": good, "headers": {**headers, "Mcp-Method": "prompts/list"}}, -32020),
        (
            "unsupported version",
            {
                "body": rpc_body("tools/list", meta={**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}),
                "headers": {**headers, "MCP-Protocol-Version": "2099-01-01"},
            },
            -32022,
        ),
        (
            "unknown tool",
            {"body": rpc_body("tools/call", {"name": "nope"}), "headers": rpc_headers("tools/call", "nope")},
            -32602,
        ),
        ("a bad cursor", {"body": rpc_body("tools/list", {"cursor": "nope"}), "headers": headers}, -32602),
        ("a GET", {"method": "GET", "headers": headers}, -32600),
        ("not JSON content", {"content": b"x", "headers": {**headers, "Content-Type": "text/plain"}}, -32600),
    ]


REFUSALS = _refusals()


@pytest.mark.parametrize("served", SERVERS, indirect=True)
@pytest.mark.parametrize(("what", "request_", "code"), REFUSALS, ids=[r[0] for r in REFUSALS])
async def test_every_refusal_conforms(served: Served, what: str, request_: dict[str, Any], code: int) -> None:
    request_ = dict(request_)
    method = request_.pop("method", "POST")
    body = request_.pop("body", None)
    headers = {k: v for k, v in request_.pop("headers").items() if v}
    async with httpx.AsyncClient(headers=served.headers) as http:
        reply = await http.request(method, served.url, json=body, headers=headers, **request_)
    assert reply.status_code >= 400, reply.text
    assert reply.json()["error"]["code"] == code, reply.text
    assert served.assert_wire_conforms() == 1


@pytest.mark.parametrize("served", SERVERS, indirect=True)
async def test_a_notification_gets_no_message(served: Served) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    reply = await post(served, body, rpc_headers("notifications/cancelled"))
    assert reply.status_code == 202 and reply.content == b""
    assert served.assert_wire_conforms() == 1


@pytest.mark.parametrize("served", ["everything"], indirect=True)
async def test_fixture_refusals_conform(served: Served) -> None:
    """The fixture server's own refusals: a missing capability, a tampered state, bad answers."""
    no_sampling: dict[str, Any] = {"elicitation": {}}
    reply = await call(
        served,
        "tools/call",
        {"name": "test_missing_capability"},
        **{"io.modelcontextprotocol/clientCapabilities": no_sampling},
    )
    assert reply.json()["error"]["code"] == -32021
    first = (await call(served, "tools/call", {"name": "test_input_required_result_tampered_state"})).json()
    state = first["result"]["requestState"]
    tampered = {"name": "test_input_required_result_tampered_state", "requestState": state + "-TAMPERED"}
    assert "error" in (await call(served, "tools/call", tampered)).json()
    bad_answers = {"name": "test_input_required_result_elicitation", "inputResponses": {"user_name": 12345}}
    await call(served, "tools/call", bad_answers)
    await call(served, "resources/read", {"uri": "test://nope"})
    await call(served, "prompts/get", {"name": "nope"})
    await call(served, "prompts/get", {"name": "test_prompt_with_arguments", "arguments": {}})
    await call(served, "completion/complete", {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {}})
    assert served.assert_wire_conforms() == 8


@pytest.mark.parametrize("served", ["everything"], indirect=True)
async def test_listen_stream_conforms(served: Served) -> None:
    """``subscriptions/listen`` over SSE: the acknowledgement, then a change notification."""
    params = {"notifications": {"toolsListChanged": True, "promptsListChanged": True}}
    async with (
        httpx.AsyncClient() as http,
        http.stream(
            "POST",
            served.url,
            json=rpc_body("subscriptions/listen", params),
            headers=rpc_headers("subscriptions/listen"),
        ) as stream,
    ):
        lines = stream.aiter_lines()
        assert "subscriptions/acknowledged" in await _next_data(lines)
        await call(served, "tools/call", {"name": "test_trigger_tool_change"})
        assert "tools/list_changed" in await _next_data(lines)
    assert served.assert_wire_conforms() == 2


async def _next_data(lines: Any) -> str:
    async for line in lines:
        if line.startswith("data:"):
            return str(line)
    raise AssertionError("the stream ended")


def test_the_harness_covers_every_kind_of_input_request() -> None:
    """Between them the servers ask every kind of question (a form, a URL, sampling, roots)."""
    from tests.interop.test_official_client import EXPECTED

    assert {("questions", "ask_url"), ("everything", "test_input_required_result_multiple_inputs")} <= set(EXPECTED)
    assert listing("questions").templates and listing("everything").prompts
