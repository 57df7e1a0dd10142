"""The MCP endpoint on the wire: HTTP rules, JSON-RPC envelope, per-request ``_meta`` and headers."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from fastapi_mrtr import MCP
from tests.mcp_helpers import (
    ACCEPT_BOTH,
    CAPS_KEY,
    PROTOCOL,
    SERVER_INFO_KEY,
    VERSION_KEY,
    connect,
    make_headers,
    make_meta,
    make_server,
    rpc_error,
)

pytestmark = pytest.mark.anyio

BookshopFactory = Callable[..., FastAPI]
ServerFactory = Callable[..., tuple[FastAPI, MCP]]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
HEADER_MISMATCH = -32020
UNSUPPORTED_VERSION = -32022


# --- server/discover ------------------------------------------------------------------------------


async def test_discover_result(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("server/discover", {}, request_id="d-1")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    message = response.json()
    assert message["jsonrpc"] == "2.0"
    assert message["id"] == "d-1"
    result = message["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == [PROTOCOL]
    assert "tools" in result["capabilities"]
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
    assert result["cacheScope"] in ("public", "private")
    assert result["_meta"][SERVER_INFO_KEY] == {"name": "test-server", "version": "1.2.3"}
    assert "serverInfo" not in result


async def test_discover_options(bookshop: BookshopFactory) -> None:
    app = bookshop(cache_ttl_ms=1234, cache_scope="private", instructions="Be kind.", title="Test")
    async with connect(app) as client:
        result = await client.result("server/discover")
    assert result["ttlMs"] == 1234
    assert result["cacheScope"] == "private"
    assert result["instructions"] == "Be kind."
    assert result["_meta"][SERVER_INFO_KEY] == {"name": "test-server", "version": "1.2.3", "title": "Test"}


async def test_every_result_carries_server_info(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        results = [
            await client.result("server/discover"),
            await client.result("tools/list"),
            await client.call("get_book", {"book_id": 1}),
            await client.call("get_book", {"book_id": 0}),  # an isError result too
        ]
    for result in results:
        assert result["_meta"][SERVER_INFO_KEY] == {"name": "test-server", "version": "1.2.3"}


async def test_client_info_is_optional(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        bare = await client.result("server/discover", meta=make_meta())
        with_info = await client.result(
            "server/discover", meta=make_meta(**{"io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}})
        )
    assert bare["supportedVersions"] == with_info["supportedVersions"] == [PROTOCOL]


# --- _meta and the version headers ------------------------------------------------------------------


async def test_missing_meta_is_invalid_params(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
        response = await client.post_raw(json.dumps(body), make_headers("tools/list"))
    rpc_error(response, 400, INVALID_PARAMS, 7)


async def test_missing_params_is_missing_meta(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        body = {"jsonrpc": "2.0", "id": "no-params", "method": "tools/list"}
        response = await client.post_raw(json.dumps(body), make_headers("tools/list"))
    rpc_error(response, 400, INVALID_PARAMS, "no-params")


async def test_missing_meta_without_version_header_is_invalid_params(bookshop: BookshopFactory) -> None:
    headers = make_headers("tools/list")
    del headers["mcp-protocol-version"]
    async with connect(bookshop()) as client:
        body = {"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}}
        response = await client.post_raw(json.dumps(body), headers)
    rpc_error(response, 400, INVALID_PARAMS, 8)


async def test_missing_protocol_version_in_meta(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", request_id=9, meta={CAPS_KEY: {}})
    error = rpc_error(response, 400, INVALID_PARAMS, 9)
    assert VERSION_KEY in error["message"]


async def test_missing_client_capabilities_in_meta(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", request_id=10, meta={VERSION_KEY: PROTOCOL})
    error = rpc_error(response, 400, INVALID_PARAMS, 10)
    assert CAPS_KEY in error["message"]


async def test_meta_not_an_object(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        body = {"jsonrpc": "2.0", "id": 11, "method": "tools/list", "params": {"_meta": "nope"}}
        response = await client.post_raw(json.dumps(body), make_headers("tools/list"))
    rpc_error(response, 400, INVALID_PARAMS, 11)


async def test_meta_without_version_header_is_header_mismatch(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post(
            "tools/list", request_id=12, headers={"mcp-protocol-version": ""}
        )  # an empty value is not a version either
        assert rpc_error(response, 400, HEADER_MISMATCH, 12)
        headers = make_headers("tools/list")
        del headers["mcp-protocol-version"]
        body = {"jsonrpc": "2.0", "id": 13, "method": "tools/list", "params": {"_meta": make_meta()}}
        response = await client.post_raw(json.dumps(body), headers)
    rpc_error(response, 400, HEADER_MISMATCH, 13)


async def test_a_bare_request_is_told_everything_it_lacks_and_what_to_send(bookshop: BookshopFactory) -> None:
    """A first curl carries none of the MCP pieces: one refusal names them all, not one per try."""
    bare = {"content-type": "application/json", "accept": "application/json"}
    call = {
        "jsonrpc": "2.0",
        "id": 21,
        "method": "tools/call",
        "params": {"name": "get_book", "arguments": {"book_id": 1}},
    }
    async with connect(bookshop()) as client:
        response = await client.post_raw(json.dumps(call), bare)
        error = rpc_error(response, 400, INVALID_PARAMS, 21)
        assert error["data"]["missing"] == [
            "MCP-Protocol-Version header",
            "Mcp-Method header",
            "Mcp-Name header",
            "params._meta",
        ]
        for piece in error["data"]["missing"]:
            assert piece in error["message"]
        send = error["data"]["send"]
        assert send["headers"] == {"MCP-Protocol-Version": PROTOCOL, "Mcp-Method": "tools/call", "Mcp-Name": "get_book"}
        # What the refusal says to send is enough: the same call with it succeeds.
        fixed = {**call, "params": {**call["params"], "_meta": send["_meta"]}}
        response = await client.post_raw(json.dumps(fixed), {**bare, **send["headers"]})
    assert response.status_code == 200, response.text
    assert response.json()["result"]["isError"] is False


async def test_several_missing_meta_fields_are_named_together(bookshop: BookshopFactory) -> None:
    headers = make_headers("tools/list")
    del headers["mcp-method"]
    async with connect(bookshop()) as client:
        body = {"jsonrpc": "2.0", "id": 22, "method": "tools/list", "params": {"_meta": {}}}
        response = await client.post_raw(json.dumps(body), headers)
    error = rpc_error(response, 400, INVALID_PARAMS, 22)
    assert error["data"]["missing"] == [
        "Mcp-Method header",
        f"params._meta[{VERSION_KEY!r}]",
        f"params._meta[{CAPS_KEY!r}]",
    ]
    assert "Mcp-Name" not in error["data"]["send"]["headers"]  # tools/list names nothing


async def test_only_named_headers_missing_is_a_header_mismatch(bookshop: BookshopFactory) -> None:
    headers = make_headers("tools/call", "get_book")
    del headers["mcp-method"], headers["mcp-name"]
    async with connect(bookshop()) as client:
        body = {
            "jsonrpc": "2.0",
            "id": 23,
            "method": "tools/call",
            "params": {"name": "get_book", "_meta": make_meta()},
        }
        response = await client.post_raw(json.dumps(body), headers)
    error = rpc_error(response, 400, HEADER_MISMATCH, 23)
    assert error["data"]["missing"] == ["Mcp-Method header", "Mcp-Name header"]


async def test_meta_present_without_header_wins_over_missing_capabilities(bookshop: BookshopFactory) -> None:
    headers = make_headers("tools/list")
    del headers["mcp-protocol-version"]
    async with connect(bookshop()) as client:
        body = {"jsonrpc": "2.0", "id": 14, "method": "tools/list", "params": {"_meta": {VERSION_KEY: PROTOCOL}}}
        response = await client.post_raw(json.dumps(body), headers)
    rpc_error(response, 400, HEADER_MISMATCH, 14)


async def test_header_differs_from_meta(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post(
            "tools/list", request_id=15, meta={VERSION_KEY: "v999.0.0", CAPS_KEY: {}}
        )  # header 2026-07-28, _meta v999.0.0: a mismatch, not an unsupported version
    rpc_error(response, 400, HEADER_MISMATCH, 15)


async def test_supported_meta_with_other_header_is_mismatch(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", request_id=16, headers={"mcp-protocol-version": "2025-11-25"})
    rpc_error(response, 400, HEADER_MISMATCH, 16)


async def test_unsupported_version(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post(
            "tools/list",
            request_id="v",
            meta={VERSION_KEY: "1900-01-01", CAPS_KEY: {}},
            headers={"mcp-protocol-version": "1900-01-01"},
        )
        discover = await client.result("server/discover")
    error = rpc_error(response, 400, UNSUPPORTED_VERSION, "v")
    assert error["data"]["requested"] == "1900-01-01"
    assert PROTOCOL in error["data"]["supported"]
    assert set(error["data"]["supported"]) <= set(discover["supportedVersions"])


async def test_missing_method_header(bookshop: BookshopFactory) -> None:
    headers = make_headers("tools/list")
    del headers["mcp-method"]
    async with connect(bookshop()) as client:
        body = {"jsonrpc": "2.0", "id": 17, "method": "tools/list", "params": {"_meta": make_meta()}}
        response = await client.post_raw(json.dumps(body), headers)
    rpc_error(response, 400, HEADER_MISMATCH, 17)


async def test_mismatched_method_header(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", request_id=18, headers={"mcp-method": "server/discover"})
    rpc_error(response, 400, HEADER_MISMATCH, 18)


async def test_header_names_are_case_insensitive(bookshop: BookshopFactory) -> None:
    headers = {
        "Content-Type": "application/json",
        "Accept": ACCEPT_BOTH,
        "MCP-PROTOCOL-VERSION": PROTOCOL,
        "MCP-METHOD": "tools/call",
        "MCP-NAME": "get_book",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 19,
        "method": "tools/call",
        "params": {"_meta": make_meta(), "name": "get_book", "arguments": {"book_id": 1}},
    }
    async with connect(bookshop()) as client:
        response = await client.post_raw(json.dumps(body), headers)
    assert response.status_code == 200
    assert response.json()["result"]["isError"] is False


async def test_missing_name_header_on_tools_call(bookshop: BookshopFactory) -> None:
    headers = make_headers("tools/call")
    body = {
        "jsonrpc": "2.0",
        "id": 20,
        "method": "tools/call",
        "params": {"_meta": make_meta(), "name": "get_book", "arguments": {"book_id": 1}},
    }
    async with connect(bookshop()) as client:
        response = await client.post_raw(json.dumps(body), headers)
    rpc_error(response, 400, HEADER_MISMATCH, 20)


async def test_mismatched_name_header_on_tools_call(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post(
            "tools/call", {"name": "get_book", "arguments": {"book_id": 1}}, request_id=21, name="delete_book"
        )
    rpc_error(response, 400, HEADER_MISMATCH, 21)


async def test_base64_name_header_is_decoded(server_factory: ServerFactory) -> None:
    app, mcp = server_factory()

    @mcp.tool(name="cafi-ish_tool")
    @app.get("/cafe")
    async def cafe() -> dict[str, str]:
        return {"ok": "yes"}

    encoded = "=?base64?" + base64.b64encode(b"cafi-ish_tool").decode() + "?="
    async with connect(app) as client:
        result = await client.call("cafi-ish_tool", {}, name=encoded)
        wrong = "=?base64?" + base64.b64encode(b"something_else").decode() + "?="
        response = await client.post("tools/call", {"name": "cafi-ish_tool"}, request_id=22, name=wrong)
    assert result["isError"] is False
    assert result["structuredContent"] == {"ok": "yes"}
    rpc_error(response, 400, HEADER_MISMATCH, 22)


async def test_name_header_not_needed_on_other_methods(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        result = await client.result("tools/list")
    assert result["tools"]


# --- removed and unknown methods --------------------------------------------------------------------


@pytest.mark.parametrize(
    "method",
    ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "unknown/method"],
)
async def test_removed_and_unknown_methods(bookshop: BookshopFactory, method: str) -> None:
    async with connect(bookshop()) as client:
        response = await client.post(method, {}, request_id=f"id-{method}")
    error = rpc_error(response, 404, METHOD_NOT_FOUND, f"id-{method}")
    assert method in error["message"]


# --- the JSON-RPC envelope --------------------------------------------------------------------------


async def test_parse_error(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post_raw(b'{"jsonrpc": "2.0", "id": 1,', make_headers("tools/list"))
    rpc_error(response, 400, PARSE_ERROR, None)


async def test_invalid_utf8_is_parse_error(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post_raw(b'{"a": "\xff\xfe"}', make_headers("tools/list"))
    rpc_error(response, 400, PARSE_ERROR, None)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
async def test_non_finite_numbers_are_a_parse_error_before_any_tool_runs(number: str) -> None:
    app, mcp = make_server()
    runs: list[float] = []

    @mcp.tool()
    @app.post("/scale")
    async def scale(factor: float) -> float:
        runs.append(factor)
        return factor * 2

    params = {"name": "scale", "arguments": {"factor": "FACTOR"}, "_meta": make_meta()}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    body = json.dumps(message).replace('"FACTOR"', number)  # json.dumps would write NaN itself, not 1e400
    async with connect(app) as client:
        response = await client.post_raw(body, make_headers("tools/call", "scale"))
        finite = await client.call("scale", {"factor": 1.5})
    rpc_error(response, 400, PARSE_ERROR, None)
    assert finite["structuredContent"] == {"result": 3.0}
    assert runs == [1.5]


@pytest.mark.parametrize(
    "where",
    ["id", "method", "argument", "progress_token", "deep_params", "deep_argument"],
)
async def test_values_no_reply_could_carry_are_a_parse_error_before_any_tool_runs(where: str) -> None:
    # A lone surrogate cannot be written back as UTF-8 (the error echoing the id, the result
    # quoting the argument, the SSE stream a progress token opens), and deep nesting exhausts
    # the stack of whatever walks it next: refused as unreadable, never a 500 or a cut stream.
    app, mcp = make_server()
    runs: list[str] = []

    @mcp.tool()
    @app.post("/shout")
    async def shout(text: str, extra: dict[str, Any] | None = None) -> str:
        runs.append(text)
        return text.upper()

    params: dict[str, Any] = {"name": "shout", "arguments": {"text": "hi"}, "_meta": make_meta()}
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    lone = "\ud800"
    if where == "id":
        message["id"] = lone
    elif where == "method":
        message["method"] = lone
    elif where == "argument":
        params["arguments"]["text"] = lone
    elif where == "progress_token":
        params["_meta"]["progressToken"] = lone
    elif where == "deep_params":
        params["deep"] = "DEEP"
    else:
        params["arguments"]["extra"] = {"x": "DEEP"}
    levels = 990 if where == "deep_params" else 250
    # ensure_ascii: the surrogate travels as the escape \ud800; the nesting is spliced in as text.
    body = json.dumps(message).replace('"DEEP"', "[" * levels + "]" * levels)
    async with connect(app) as client:
        response = await client.post_raw(body, make_headers("tools/call", "shout"))
        fine = await client.call("shout", {"text": "ok"})
    rpc_error(response, 400, PARSE_ERROR, None)
    assert fine["structuredContent"] == {"result": "OK"}
    assert runs == ["ok"]


async def test_batch_is_refused(bookshop: BookshopFactory) -> None:
    one = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": make_meta()}}
    async with connect(bookshop()) as client:
        response = await client.post_raw(json.dumps([one, {**one, "id": 2}]), make_headers("tools/list"))
        empty = await client.post_raw("[]", make_headers("tools/list"))
    rpc_error(response, 400, INVALID_REQUEST, None)
    rpc_error(empty, 400, INVALID_REQUEST, None)


@pytest.mark.parametrize("body", ['"tools/list"', "42", "null", "true"])
async def test_non_object_body(bookshop: BookshopFactory, body: str) -> None:
    async with connect(bookshop()) as client:
        response = await client.post_raw(body, make_headers("tools/list"))
    rpc_error(response, 400, INVALID_REQUEST, None)


@pytest.mark.parametrize("jsonrpc", [None, "1.0", 2.0])
async def test_missing_or_wrong_jsonrpc(bookshop: BookshopFactory, jsonrpc: Any) -> None:
    body: dict[str, Any] = {"id": 30, "method": "tools/list", "params": {"_meta": make_meta()}}
    if jsonrpc is not None:
        body["jsonrpc"] = jsonrpc
    async with connect(bookshop()) as client:
        response = await client.post_raw(json.dumps(body), make_headers("tools/list"))
    rpc_error(response, 400, INVALID_REQUEST, 30)


@pytest.mark.parametrize("method", [None, 5, ""])
async def test_missing_or_bad_method(bookshop: BookshopFactory, method: Any) -> None:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 31, "params": {"_meta": make_meta()}}
    if method is not None:
        body["method"] = method
    async with connect(bookshop()) as client:
        response = await client.post_raw(json.dumps(body), make_headers("tools/list"))
    rpc_error(response, 400, INVALID_REQUEST, 31)


@pytest.mark.parametrize("bad_id", [None, True, False, 1.5, {"a": 1}, [1]])
async def test_bad_id_type(bookshop: BookshopFactory, bad_id: Any) -> None:
    body = {"jsonrpc": "2.0", "id": bad_id, "method": "tools/list", "params": {"_meta": make_meta()}}
    async with connect(bookshop()) as client:
        response = await client.post_raw(json.dumps(body), make_headers("tools/list"))
    rpc_error(response, 400, INVALID_REQUEST, None)


@pytest.mark.parametrize("request_id", [0, -5, 2**53, "", "abc"])
async def test_string_and_integer_ids_are_echoed(bookshop: BookshopFactory, request_id: str | int) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", request_id=request_id)
    assert response.status_code == 200
    assert response.json()["id"] == request_id


@pytest.mark.parametrize("params", [[1, 2], "x", 3])
async def test_params_not_an_object(bookshop: BookshopFactory, params: Any) -> None:
    body = {"jsonrpc": "2.0", "id": 32, "method": "tools/list", "params": params}
    async with connect(bookshop()) as client:
        response = await client.post_raw(json.dumps(body), make_headers("tools/list"))
    rpc_error(response, 400, INVALID_REQUEST, 32)


async def test_posted_response_is_refused(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post_raw(json.dumps({"jsonrpc": "2.0", "id": 33, "result": {}}))
    rpc_error(response, 400, INVALID_REQUEST, 33)


async def test_notification_is_accepted_with_202(bookshop: BookshopFactory) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    version_only = {"content-type": "application/json", "mcp-protocol-version": PROTOCOL}
    async with connect(bookshop()) as client:
        response = await client.post_raw(json.dumps(body), make_headers("notifications/cancelled"))
        bare = await client.post_raw(json.dumps({"jsonrpc": "2.0", "method": "notifications/x"}), version_only)
    assert response.status_code == 202
    assert response.content == b""
    assert bare.status_code == 202  # Mcp-Method is checked when sent; the version header is required
    assert bare.content == b""


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, HEADER_MISMATCH),
        ({"mcp-protocol-version": "1900-01-01"}, UNSUPPORTED_VERSION),
        ({"mcp-protocol-version": PROTOCOL, "mcp-method": "tools/call"}, HEADER_MISMATCH),
    ],
)
async def test_notification_with_bad_transport_headers_is_refused(
    bookshop: BookshopFactory, headers: dict[str, str], code: int
) -> None:
    # Every POST carries MCP-Protocol-Version; a notification is no exception (spec-notes §3.3).
    body = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    async with connect(bookshop()) as client:
        response = await client.post_raw(body, {"content-type": "application/json", **headers})
    rpc_error(response, 400, code, None)


# --- HTTP rules -------------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["GET", "DELETE", "PUT", "PATCH"])
async def test_only_post(bookshop: BookshopFactory, verb: str) -> None:
    async with connect(bookshop()) as client:
        response = await client.http.request(verb, "/mcp", headers={"accept": ACCEPT_BOTH})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
async def test_wrong_content_type(bookshop: BookshopFactory, content_type: str | None) -> None:
    headers = make_headers("tools/list")
    del headers["content-type"]
    if content_type is not None:
        headers["content-type"] = content_type
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": make_meta()}}
    async with connect(bookshop()) as client:
        response = await client.http.post("/mcp", content=json.dumps(body), headers=headers)
    assert response.status_code == 415


async def test_content_type_with_charset_is_fine(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", headers={"content-type": "application/json; charset=utf-8"})
    assert response.status_code == 200


async def test_accept_html_only(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", headers={"accept": "text/html"})
    assert response.status_code == 406


@pytest.mark.parametrize("accept", ["application/json", "text/event-stream", "*/*", ACCEPT_BOTH])
async def test_acceptable_accepts(bookshop: BookshopFactory, accept: str) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", headers={"accept": accept})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")


def _padded_request(size: int) -> bytes:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {"_meta": make_meta(), "padding": "x" * size},
    }
    return json.dumps(body).encode()


async def test_body_over_limit_with_content_length(bookshop: BookshopFactory) -> None:
    async with connect(bookshop(max_body_bytes=1024)) as client:
        response = await client.post_raw(_padded_request(2048), make_headers("tools/list"))
    assert response.status_code == 413
    assert response.json()["error"]["code"] == INVALID_REQUEST


async def test_body_over_limit_streamed(bookshop: BookshopFactory) -> None:
    payload = _padded_request(4096)

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(payload), 300):
            yield payload[start : start + 300]

    async with connect(bookshop(max_body_bytes=1024)) as client:
        request = client.http.build_request("POST", "/mcp", content=chunks(), headers=make_headers("tools/list"))
        assert "content-length" not in request.headers
        response = await client.http.send(request)
    assert response.status_code == 413


async def test_body_under_limit_streamed(bookshop: BookshopFactory) -> None:
    payload = _padded_request(100)

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(payload), 50):
            yield payload[start : start + 50]

    async with connect(bookshop(max_body_bytes=1024)) as client:
        request = client.http.build_request("POST", "/mcp", content=chunks(), headers=make_headers("tools/list"))
        response = await client.http.send(request)
    assert response.status_code == 200
    assert response.json()["result"]["tools"]


async def test_evil_origin_is_forbidden(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", headers={"origin": "http://evil.example.com"})
        lookalike = await client.post("tools/list", headers={"origin": "http://localhost.evil.example.com"})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == INVALID_REQUEST
    assert lookalike.status_code == 403


@pytest.mark.parametrize(
    "origin",
    [
        "http://localhost",
        "http://localhost:3000",
        "https://localhost:8443",
        "http://127.0.0.1",
        "http://127.0.0.1:6274",
        "http://[::1]",
        "http://[::1]:8080",
    ],
)
async def test_local_origins_are_accepted(bookshop: BookshopFactory, origin: str) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", headers={"origin": origin})
    assert response.status_code == 200


async def test_allowed_origins_option(bookshop: BookshopFactory) -> None:
    async with connect(bookshop(allowed_origins=("https://app.example.com",))) as client:
        allowed = await client.post("tools/list", headers={"origin": "https://app.example.com"})
        other = await client.post("tools/list", headers={"origin": "https://other.example.com"})
    assert allowed.status_code == 200
    assert other.status_code == 403


async def test_evil_host_is_refused(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", headers={"host": "evil.example.com"})
        with_port = await client.post("tools/list", headers={"host": "evil.example.com:8000"})
    assert 400 <= response.status_code < 500
    assert 400 <= with_port.status_code < 500
    assert response.json()["error"]["code"] == INVALID_REQUEST


@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1:9", "[::1]", "[::1]:8080"])
async def test_local_hosts_are_accepted(bookshop: BookshopFactory, host: str) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", headers={"host": host})
    assert response.status_code == 200


async def test_allowed_hosts_option(bookshop: BookshopFactory) -> None:
    async with connect(bookshop(allowed_hosts=("api.example.com",))) as client:
        allowed = await client.post("tools/list", headers={"host": "api.example.com"})
        allowed_port = await client.post("tools/list", headers={"host": "api.example.com:443"})
        other = await client.post("tools/list", headers={"host": "evil.example.com"})
    assert allowed.status_code == 200
    assert allowed_port.status_code == 200
    assert 400 <= other.status_code < 500


async def test_wildcard_allows_any_host_and_origin(bookshop: BookshopFactory) -> None:
    async with connect(bookshop(allowed_hosts=("*",), allowed_origins=("*",))) as client:
        response = await client.post(
            "tools/list", headers={"host": "evil.example.com", "origin": "http://evil.example.com"}
        )
    assert response.status_code == 200


@pytest.mark.parametrize("path", ["/mcp", "/mcp/"])
async def test_both_paths_are_served(bookshop: BookshopFactory, path: str) -> None:
    async with connect(bookshop(), path=path) as client:
        response = await client.post("tools/list")
    assert response.status_code == 200
    assert response.json()["result"]["tools"]


@pytest.mark.parametrize("path", ["/mcp/x", "/mcp//", "/mcp/tools/call"])
async def test_paths_below_the_endpoint_are_not_found(bookshop: BookshopFactory, path: str) -> None:
    async with connect(bookshop(), path=path) as client:
        response = await client.post("tools/list")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


async def test_session_id_is_never_minted(bookshop: BookshopFactory) -> None:
    async with connect(bookshop()) as client:
        response = await client.post("tools/list", headers={"mcp-session-id": "abc"})
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers


async def test_errors_before_dispatch_are_json(bookshop: BookshopFactory) -> None:
    # Era detection in clients needs a JSON-RPC body on every modern error.
    async with connect(bookshop()) as client:
        responses: list[httpx.Response] = [
            await client.post("tools/list", meta={CAPS_KEY: {}}),
            await client.post("tools/list", headers={"mcp-method": "x"}),
            await client.post("nope/nope"),
        ]
    for response in responses:
        assert response.json()["error"]["code"] in (INVALID_PARAMS, HEADER_MISMATCH, METHOD_NOT_FOUND)
