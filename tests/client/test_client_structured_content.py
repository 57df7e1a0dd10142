"""A tool result's ``structuredContent`` is checked against the tool's ``outputSchema``.

The peer is a raw ASGI app on real uvicorn, so it can break the rule no framework lets a tool
break: a result without ``structuredContent``, or with content that does not fit the schema.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fastapi_mrtr.client import (
    ClientOptions,
    ElicitRequestParams,
    InputRequiredConfig,
    InputRequiredResult,
    InvalidServerResponseError,
    InvalidStructuredContentError,
    MrtrClient,
)
from fastapi_mrtr.wire.protocol import CallToolResult
from tests.client.client_helpers import DISCOVERED, Wire
from tests.support import read_asgi_body, running_server

ROOT = Path(__file__).resolve().parents[2]

ORDER = {
    "type": "object",
    "properties": {"status": {"type": "string"}, "order_id": {"type": "integer"}},
    "required": ["status"],
}
PLACED = {"status": "placed", "order_id": 7}


def complete(structured: Any = ..., *, is_error: bool = False) -> dict[str, Any]:
    """A complete tools/call result; ``structured`` left out means no ``structuredContent``."""
    result: dict[str, Any] = {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}
    if structured is not ...:
        result["structuredContent"] = structured
    if is_error:
        result["isError"] = True
    return result


def tool(name: str, output_schema: Any = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "inputSchema": {"type": "object"}}
    if output_schema is not None:
        entry["outputSchema"] = output_schema
    return entry


Answer = Callable[[dict[str, Any]], dict[str, Any]]


class Peer:
    """An MCP peer: ``tools/list`` serves ``tools`` in pages of ``page_size`` with ``ttl_ms``;
    ``tools/call`` answers with ``results[name]`` (a result, or a function of the params).

    ``methods`` records every JSON-RPC method received; ``other_requests`` any request that is
    not a POST (a ``$ref`` the client fetched would show up there).
    """

    def __init__(self, tools: list[dict[str, Any]], results: dict[str, dict[str, Any] | Answer]) -> None:
        self.tools = tools
        self.results = results
        self.ttl_ms = 60_000
        self.page_size = 100
        self.methods: list[str] = []
        self.other_requests: list[str] = []

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        params = body.get("params") or {}
        if body["method"] == "tools/list":
            start = int(params.get("cursor") or 0)
            page: dict[str, Any] = {
                "resultType": "complete",
                "tools": self.tools[start : start + self.page_size],
                "ttlMs": self.ttl_ms,
                "cacheScope": "private",
            }
            if start + self.page_size < len(self.tools):
                page["nextCursor"] = str(start + self.page_size)
            return page
        reply = self.results[params["name"]]
        return reply(params) if callable(reply) else reply

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        raw = await read_asgi_body(receive)
        if scope["method"] != "POST":
            self.other_requests.append(scope["path"])
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"{}"})
            return
        body = json.loads(raw)
        if body["method"] == "server/discover":  # the era probe: this is a 2026-07-28 peer
            result = DISCOVERED
        else:
            self.methods.append(body["method"])
            result = self.answer(body)
        reply = {"jsonrpc": "2.0", "id": body["id"], "result": result}
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(reply).encode()})


RESULTS: dict[str, Any] = {
    "conforming": complete(PLACED),
    "missing": complete(),
    "wrong_type": complete({"status": "placed", "order_id": "seven"}),
    "no_status": complete({"order_id": 7}),
    "null": complete(None),
    "failing": complete(is_error=True),  # a tool error need not fit the schema
    "schemaless": complete(["anything", 1]),
    "unlisted": complete({"whatever": True}),
    "bad_schema": complete(PLACED),
}
TOOLS = [
    *(tool(name, ORDER) for name in ("conforming", "missing", "wrong_type", "no_status", "null", "failing")),
    tool("schemaless"),
    tool("bad_schema", {"type": 5}),
]


@pytest.fixture
def peer() -> Peer:
    return Peer(list(TOOLS), dict(RESULTS))


@pytest.fixture
def url(peer: Peer) -> Iterator[str]:
    with running_server(peer) as base:
        yield f"{base}/mcp"


# --- conforming results, and results with nothing to check -------------------------------------


@pytest.mark.anyio
async def test_a_conforming_result_passes_and_the_tools_are_listed_once_lazily(peer: Peer, url: str) -> None:
    async with MrtrClient(url) as client:
        first = await client.call_tool("conforming")
        second = await client.call_tool("conforming")
    assert isinstance(first, CallToolResult) and first.structured_content == PLACED
    assert isinstance(second, CallToolResult) and second.structured_content == PLACED
    assert peer.methods == ["tools/call", "tools/list", "tools/call"]


@pytest.mark.anyio
async def test_a_tool_listed_before_the_call_is_not_listed_again(peer: Peer, url: str) -> None:
    async with MrtrClient(url) as client:
        await client.list_tools()
        with pytest.raises(InvalidStructuredContentError):
            await client.call_tool("missing")
    assert peer.methods == ["tools/list", "tools/call"]


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["failing", "schemaless"])
async def test_tool_errors_and_tools_without_output_schema_are_not_checked(url: str, name: str) -> None:
    async with MrtrClient(url) as client:
        result = await client.call_tool(name)
    assert isinstance(result, CallToolResult) and result.structured_content == RESULTS[name].get("structuredContent")


@pytest.mark.anyio
async def test_a_tool_error_costs_no_listing(peer: Peer, url: str) -> None:
    async with MrtrClient(url) as client:
        result = await client.call_tool("failing")
    assert isinstance(result, CallToolResult) and result.is_error
    assert peer.methods == ["tools/call"]


@pytest.mark.anyio
async def test_a_tool_the_server_does_not_list_is_not_checked_and_listed_only_once(
    peer: Peer, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="fastapi_mrtr.client"):
        async with MrtrClient(url) as client:
            first = await client.call_tool("unlisted")
            second = await client.call_tool("unlisted")
    assert isinstance(first, CallToolResult) and first.structured_content == {"whatever": True}
    assert isinstance(second, CallToolResult)
    assert peer.methods == ["tools/call", "tools/list", "tools/call"]
    assert caplog.text.count("tool 'unlisted' is not in tools/list, so its structuredContent is not checked") == 1


# --- results that break the schema -------------------------------------------------------------


@pytest.mark.anyio
async def test_a_result_without_structured_content_raises_naming_the_tool(url: str) -> None:
    async with MrtrClient(url) as client:
        with pytest.raises(InvalidStructuredContentError) as caught:
            await client.call_tool("missing")
    error = caught.value
    assert str(error) == "tool 'missing' has an outputSchema but returned no structuredContent"
    assert isinstance(error, InvalidServerResponseError)  # the server broke a MUST of the spec
    assert (error.tool, error.problem, error.path, error.schema) == ("missing", "missing", None, ORDER)
    assert error.result.content[0].text == "done"
    assert error.body["content"] == [{"type": "text", "text": "done"}]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "path", "detail"),
    [
        ("wrong_type", "$.order_id", "'seven' is not of type 'integer'"),
        ("no_status", "$", "'status' is a required property"),
        ("null", "$", "None is not of type 'object'"),  # an explicit null is content, and no object
    ],
)
async def test_non_conforming_structured_content_raises_saying_where(
    url: str, name: str, path: str, detail: str
) -> None:
    async with MrtrClient(url) as client:
        with pytest.raises(InvalidStructuredContentError) as caught:
            await client.call_tool(name)
    error = caught.value
    assert str(error) == (
        f"tool {name!r} returned structuredContent that does not conform to its outputSchema: at {path}: {detail}"
    )
    assert (error.tool, error.problem, error.path) == (name, "nonconforming", path)
    assert error.result.structured_content == RESULTS[name]["structuredContent"]


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["missing", "wrong_type", "no_status", "null", "bad_schema"])
async def test_the_opt_out_returns_the_result_as_sent_and_lists_nothing(peer: Peer, url: str, name: str) -> None:
    async with MrtrClient(url, validate_structured_content=False) as client:
        result = await client.call_tool(name)
    assert isinstance(result, CallToolResult)
    assert result.structured_content == RESULTS[name].get("structuredContent")
    assert peer.methods == ["tools/call"]


@pytest.mark.anyio
async def test_a_long_instance_is_cut_short_in_the_message(peer: Peer, url: str) -> None:
    peer.results["wrong_type"] = complete({"status": "placed", "order_id": "x" * 5000})
    async with MrtrClient(url) as client:
        with pytest.raises(InvalidStructuredContentError) as caught:
            await client.call_tool("wrong_type")
    assert len(str(caught.value)) < 500 and str(caught.value).endswith("…")


# --- the schema itself -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_invalid_output_schema_raises_rather_than_passing_unchecked(url: str) -> None:
    async with MrtrClient(url) as client:
        with pytest.raises(InvalidStructuredContentError) as caught:
            await client.call_tool("bad_schema")
    assert caught.value.problem == "invalid_schema"
    assert str(caught.value).startswith("tool 'bad_schema' has an invalid outputSchema (at $.type: 5 is not valid")
    assert str(caught.value).endswith("so its structuredContent cannot be checked")


@pytest.mark.anyio
@pytest.mark.parametrize("ref", ["remote", "#/$defs/missing", "#"])
async def test_a_ref_resolves_only_inside_the_schema(peer: Peer, url: str, ref: str) -> None:
    if ref == "remote":
        ref = url.replace("/mcp", "/schemas/order.json")  # the peer itself: a fetch would be seen
    schema = {"$ref": ref} if ref != "#" else {"type": "object", "properties": {"next": {"$ref": "#"}}}
    peer.tools = [tool("refs", schema)]
    peer.results["refs"] = complete(PLACED if ref != "#" else {"next": {"next": {}}})
    async with MrtrClient(url) as client:
        if ref == "#":  # a recursive schema is fine: it recurses only as deep as the content
            assert isinstance(await client.call_tool("refs"), CallToolResult)
        else:
            with pytest.raises(InvalidStructuredContentError) as caught:
                await client.call_tool("refs")
            assert caught.value.problem == "invalid_schema"
    assert peer.other_requests == []


@pytest.mark.anyio
async def test_a_schema_that_refers_to_itself_without_end_is_an_invalid_schema(peer: Peer, url: str) -> None:
    peer.tools = [tool("loop", {"$ref": "#"})]
    peer.results["loop"] = complete(PLACED)
    async with MrtrClient(url) as client:
        with pytest.raises(InvalidStructuredContentError) as caught:
            await client.call_tool("loop")
    assert caught.value.problem == "invalid_schema" and "recurse" in str(caught.value)


# --- where the schema comes from: pages and cache hints ----------------------------------------


@pytest.mark.anyio
async def test_the_lazy_listing_follows_every_page(peer: Peer, url: str) -> None:
    peer.page_size = 3  # "wrong_type" is on the first page, "bad_schema" on the third
    async with MrtrClient(url) as client:
        with pytest.raises(InvalidStructuredContentError, match="'bad_schema' has an invalid outputSchema"):
            await client.call_tool("bad_schema")
    assert peer.methods == ["tools/call", "tools/list", "tools/list", "tools/list"]


V1 = {"type": "object", "required": ["v1"]}
V2 = {"type": "object", "required": ["v2"]}


@pytest.mark.anyio
async def test_a_schema_past_its_ttl_is_listed_again_before_a_result_is_refused(peer: Peer, url: str) -> None:
    peer.ttl_ms = 0  # the listing is stale at once: the tool may have changed since
    peer.tools = [tool("evolving", V1)]
    peer.results["evolving"] = complete({"v2": True})
    async with MrtrClient(url) as client:
        await client.list_tools()
        peer.tools = [tool("evolving", V2)]  # a new release of the server
        result = await client.call_tool("evolving")
        assert isinstance(result, CallToolResult) and result.structured_content == {"v2": True}
        peer.results["evolving"] = complete({"v3": True})  # breaks even the fresh schema
        with pytest.raises(InvalidStructuredContentError, match=r"at \$: 'v2' is a required property"):
            await client.call_tool("evolving")
    assert peer.methods == ["tools/list", "tools/call", "tools/list", "tools/call", "tools/list"]


@pytest.mark.anyio
async def test_a_schema_within_its_ttl_is_trusted(peer: Peer, url: str) -> None:
    peer.tools = [tool("evolving", V1)]
    peer.results["evolving"] = complete({"v2": True})
    async with MrtrClient(url) as client:
        await client.list_tools()  # ttlMs 60 s: the server vouches for this listing
        peer.tools = [tool("evolving", V2)]
        with pytest.raises(InvalidStructuredContentError, match=r"at \$: 'v1' is a required property"):
            await client.call_tool("evolving")
    assert peer.methods == ["tools/list", "tools/call"]


# --- MRTR: the final result is checked ---------------------------------------------------------


def after_one_question(final: dict[str, Any]) -> Answer:
    ask = {"method": "elicitation/create", "params": {"message": "Sure?", "requestedSchema": {"type": "object"}}}

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        if "requestState" not in params:
            return {"resultType": "input_required", "inputRequests": {"sure": ask}, "requestState": "s"}
        return final

    return answer


def yes(params: ElicitRequestParams) -> dict[str, Any]:
    return {"action": "accept", "content": {}}


@pytest.mark.anyio
@pytest.mark.parametrize("final", [complete(PLACED), complete({"status": 1})])
async def test_the_complete_result_of_a_multi_round_call_is_checked(peer: Peer, url: str, final: Any) -> None:
    peer.tools = [tool("ask", ORDER)]
    peer.results["ask"] = after_one_question(final)
    async with MrtrClient(url) as client:
        client.set_elicitation_handler(yes)
        if final["structuredContent"] == PLACED:
            result = await client.call_tool("ask")
            assert isinstance(result, CallToolResult) and result.structured_content == PLACED
        else:
            with pytest.raises(InvalidStructuredContentError, match=r"at \$.status: 1 is not of type 'string'"):
                await client.call_tool("ask")
    assert peer.methods == ["tools/call", "tools/call", "tools/list"]


@pytest.mark.anyio
async def test_an_input_required_result_in_manual_mode_is_not_checked(peer: Peer, url: str) -> None:
    peer.tools = [tool("ask", ORDER)]
    peer.results["ask"] = after_one_question(complete())
    options = ClientOptions(input_required_config=InputRequiredConfig(auto_fulfill=False))
    async with MrtrClient(url, options=options) as client:
        client.set_elicitation_handler(yes)
        first = await client.call_tool("ask")
        assert isinstance(first, InputRequiredResult) and peer.methods == ["tools/call"]
        with pytest.raises(InvalidStructuredContentError, match="no structuredContent"):
            await client.call_tool("ask", input_responses={"sure": {"action": "accept"}}, request_state="s")


# --- this project's own server: its results conform --------------------------------------------


@pytest.mark.anyio
async def test_the_example_apps_results_conform_and_are_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: Wire
) -> None:
    monkeypatch.setenv("BOOKSHOP_DB", str(tmp_path / "shop.db"))
    from example_app.main import app

    def answer(params: ElicitRequestParams) -> dict[str, Any]:
        wanted = (params.requested_schema or {}).get("properties", {})
        content = {"confirmed": True, "speed": "standard"}
        return {"action": "accept", "content": {key: value for key, value in content.items() if key in wanted}}

    with running_server(app) as base:
        async with (
            httpx.AsyncClient(event_hooks=wire.hooks()) as http,
            MrtrClient(f"{base}/mcp", http_client=http) as client,
        ):
            client.set_elicitation_handler(answer)
            books = await client.call_tool("list_books")
            book = await client.call_tool("get_book", {"book_id": 1})
            order = await client.call_tool("place_order", {"book_id": 1})
    assert isinstance(books, CallToolResult) and isinstance(order, CallToolResult)
    assert isinstance(book, CallToolResult) and book.structured_content["price_cents"] == 1250
    assert order.structured_content is not None and order.structured_content["status"] == "placed"
    listed = {tool["name"]: tool for call in wire.calls("tools/list") for tool in call.reply["result"]["tools"]}
    assert all("outputSchema" in listed[name] for name in ("list_books", "get_book", "place_order"))
    assert len(wire.calls("tools/list")) == 1  # learned lazily after the first call, then reused


# --- the terminal client -----------------------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "fastapi_mrtr.client", *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=env, cwd=ROOT, stdin=subprocess.DEVNULL
    )


@pytest.mark.slow
def test_the_cli_names_the_broken_result_and_the_opt_out(url: str) -> None:
    done = run_cli(url, "wrong_type")
    assert done.returncode == 2 and done.stdout == ""
    connected, *lines = done.stderr.splitlines()
    assert connected == "(connected: protocol 2026-07-28, stateless)"
    assert lines[0] == (
        "error: tool 'wrong_type' returned structuredContent that does not conform to its outputSchema: "
        "at $.order_id: 'seven' is not of type 'integer'"
    )
    assert lines[1] == "  (the server broke its own outputSchema; --no-validate prints the result anyway)"
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_cli_opt_out_prints_the_result(url: str) -> None:
    done = run_cli(url, "wrong_type", "--no-validate")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"


@pytest.mark.slow
def test_the_cli_prints_a_conforming_result(url: str) -> None:
    done = run_cli(url, "conforming")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
