"""The 2025-era wire as the client speaks it, against a scripted stateful peer (httpx.MockTransport).

Covers the era probe of ``mode="auto"``, the session headers, server-to-client requests on a
call's SSE stream, re-initialising after a 404, SSE resumption, DELETE on close and the
progress and notifications that ride on a legacy call's stream.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest

from fastapi_mrtr.client import (
    ClientOptions,
    FlowTimeoutError,
    InputRequiredConfig,
    InvalidServerResponseError,
    McpServerError,
    MrtrClient,
    ProgressNotification,
    RoundTimeoutError,
    StatusCodeError,
    StreamClosedError,
)
from fastapi_mrtr.wire.mrtr import ElicitRequestParams
from fastapi_mrtr.wire.protocol import CallToolResult, JSONRPCNotification
from tests.client.client_helpers import DISCOVERED

pytestmark = pytest.mark.anyio

SSE_HEADERS = {"content-type": "text/event-stream"}
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
# A gate a scripted stream waits on: long enough never to fire in a passing test, short enough
# that a broken client cannot hang the run.
GATE = 10.0

Respond = Callable[[dict[str, Any], httpx.Request], Any]
Hook = Callable[[httpx.Request], Awaitable[httpx.Response]]


def rpc_error(code: int, message: str, request_id: Any = None, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def result(body: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": body["id"], "result": value}


def event(message: dict[str, Any] | None = None, *, event_id: str | None = None, retry: int | None = None) -> bytes:
    """One SSE event; without a message it is a priming event (an id, empty data)."""
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if retry is not None:
        lines.append(f"retry: {retry}")
    lines.append(f"data: {json.dumps(message) if message is not None else ''}")
    return ("\n".join(lines) + "\n\n").encode()


class _GenStream(httpx.AsyncByteStream):
    """A response body read from an async generator, closed with the response."""

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        aclose = getattr(self._chunks, "aclose", None)
        if aclose is not None:
            await aclose()


def sse_stream(chunks: AsyncIterator[bytes]) -> httpx.Response:
    """A ``text/event-stream`` reply whose events come as the generator yields them."""
    return httpx.Response(200, headers=SSE_HEADERS, stream=_GenStream(chunks))


def legacy_discover_refusal(body: dict[str, Any]) -> httpx.Response:
    """How a 2025-era server without a session answers ``server/discover`` (the TS SDK's reply)."""
    return httpx.Response(400, json=rpc_error(-32000, "Bad Request: Server not initialized"))


class LegacyPeer:
    """A stateful 2025-era server: ``initialize`` opens session ``s-<n>``, notifications and
    POSTed responses get 202, GET gets 405 (unless ``on_get``), DELETE 200 (unless ``on_delete``).

    ``respond(body, request)`` answers every other request (sync or async) with a result
    object or an ``httpx.Response``. Every request is recorded in ``requests``.
    """

    def __init__(
        self,
        respond: Respond | None = None,
        *,
        version: str = "2025-11-25",
        discover: Callable[[dict[str, Any]], httpx.Response] = legacy_discover_refusal,
        tools: list[dict[str, Any]] | None = None,
        on_get: Hook | None = None,
        on_delete: Hook | None = None,
        on_cancelled: Hook | None = None,
    ) -> None:
        self.respond = respond
        self.version = version
        self.discover = discover
        self.tools = tools or []
        self.on_get = on_get
        self.on_delete = on_delete
        self.on_cancelled = on_cancelled
        self.requests: list[httpx.Request] = []
        self.sessions = 0
        self.responses: dict[Any, dict[str, Any]] = {}  # POSTed JSON-RPC responses, by id
        self._answered: dict[Any, anyio.Event] = {}

    # --- what the client sent ----------------------------------------------------------------

    def posts(self) -> list[tuple[httpx.Request, dict[str, Any]]]:
        return [(r, json.loads(r.content)) for r in self.requests if r.method == "POST"]

    def methods(self) -> list[str]:
        """The method of every POST, in order; a POSTed response shows as ``<response>``."""
        return [body.get("method", "<response>") for _, body in self.posts()]

    def sent(self, method: str) -> list[tuple[httpx.Request, dict[str, Any]]]:
        return [(r, b) for r, b in self.posts() if b.get("method") == method]

    def of(self, verb: str) -> list[httpx.Request]:
        return [r for r in self.requests if r.method == verb]

    def _event(self, request_id: Any) -> anyio.Event:
        return self._answered.setdefault(request_id, anyio.Event())

    async def answered(self, request_id: Any) -> dict[str, Any]:
        """Wait (bounded) until the client POSTed its response to our request ``request_id``."""
        with anyio.fail_after(GATE):
            await self._event(request_id).wait()
        return self.responses[request_id]

    # --- the endpoint --------------------------------------------------------------------------

    async def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.method == "GET":
            return await self.on_get(request) if self.on_get is not None else httpx.Response(405)
        if request.method == "DELETE":
            return await self.on_delete(request) if self.on_delete is not None else httpx.Response(200)
        body = json.loads(request.content)
        method = body.get("method")
        if method is None:  # the client's answer to one of our requests
            self.responses[body["id"]] = body
            self._event(body["id"]).set()
            return httpx.Response(202)
        if "id" not in body:
            if method == "notifications/cancelled" and self.on_cancelled is not None:
                return await self.on_cancelled(request)
            return httpx.Response(202)
        if method == "server/discover":
            return self.discover(body)
        if method == "initialize":
            self.sessions += 1
            init = {
                "protocolVersion": self.version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy-peer", "version": "1.0"},
            }
            return httpx.Response(200, headers={"Mcp-Session-Id": f"s-{self.sessions}"}, json=result(body, init))
        if method == "tools/list":
            return httpx.Response(200, json=result(body, {"tools": self.tools}))
        assert self.respond is not None, f"unscripted request {method}"
        reply = self.respond(body, request)
        if hasattr(reply, "__await__"):
            reply = await reply
        if isinstance(reply, httpx.Response):
            return reply
        return httpx.Response(200, json=result(body, reply))

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handle), base_url="http://mock")


def legacy_text(text: str) -> dict[str, Any]:
    """A 2025-era tools/call result: no resultType."""
    return {"content": [{"type": "text", "text": text}]}


def first_text(outcome: Any) -> str:
    assert isinstance(outcome, CallToolResult)
    block = outcome.content[0]
    text: str = block.text  # type: ignore[union-attr]
    return text


def legacy(**kwargs: Any) -> ClientOptions:
    return ClientOptions(mode="legacy", **kwargs)


def timeouts(**kwargs: Any) -> ClientOptions:
    return ClientOptions(mode="legacy", input_required_config=InputRequiredConfig(**kwargs))


# --- 1. the era probe (mode="auto") ------------------------------------------------------------


def _http_400_session_error(body: dict[str, Any]) -> httpx.Response:
    return httpx.Response(400, json=rpc_error(-32000, "Bad Request: No valid session ID provided"))


def _method_not_found(body: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, json=rpc_error(-32601, "Method not found", body["id"]))


def _empty_result(body: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, json=result(body, {}))


@pytest.mark.parametrize("discover", [_http_400_session_error, _method_not_found, _empty_result])
async def test_probe_takes_a_non_modern_reply_for_a_legacy_server_and_initializes(
    discover: Callable[[dict[str, Any]], httpx.Response],
) -> None:
    peer = LegacyPeer(discover=discover)
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http)
        assert client.era is None
        assert await client.connect() == "legacy"
        assert client.era == "legacy"
    assert peer.methods() == ["server/discover", "initialize", "notifications/initialized"]
    assert client.server_info is not None and client.server_info.name == "legacy-peer"
    assert client.protocol_version == "2025-11-25"


async def test_probe_takes_a_discover_result_for_a_modern_server() -> None:
    peer = LegacyPeer(discover=lambda body: httpx.Response(200, json=result(body, DISCOVERED)))
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http)
        assert await client.connect() == "2026-07-28"
        assert await client.connect() == "2026-07-28"  # found once, kept
    assert client.era == "2026-07-28"
    assert peer.methods() == ["server/discover"]
    assert peer.sessions == 0


async def test_probe_raises_http_401_instead_of_falling_back() -> None:
    peer = LegacyPeer(discover=lambda body: httpx.Response(401, text="login first"))
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http)
        with pytest.raises(StatusCodeError) as caught:
            await client.connect()
    assert caught.value.status_code == 401
    assert client.era is None
    assert "initialize" not in peer.methods()


async def test_probe_raises_unsupported_version_without_a_shared_one() -> None:
    def refuse(body: dict[str, Any]) -> httpx.Response:
        data = {"supported": ["2099-01-01"], "requested": "2026-07-28"}
        return httpx.Response(400, json=rpc_error(-32022, "Unsupported protocol version", body["id"], data))

    peer = LegacyPeer(discover=refuse)
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http)
        with pytest.raises(McpServerError) as caught:
            await client.connect()
    assert caught.value.code == -32022
    assert "initialize" not in peer.methods()
    assert client.era is None


async def test_probe_adopts_the_shared_version_a_32022_offers() -> None:
    def discover(body: dict[str, Any]) -> httpx.Response:
        asked = body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        if asked != "2026-07-28":
            data = {"supported": ["2026-07-28"], "requested": asked}
            return httpx.Response(400, json=rpc_error(-32022, "Unsupported protocol version", body["id"], data))
        return httpx.Response(200, json=result(body, DISCOVERED))

    peer = LegacyPeer(discover=discover)
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=ClientOptions(protocol_version="2030-01-01"))
        assert await client.connect() == "2026-07-28"
    probes = peer.sent("server/discover")
    assert [r.headers["MCP-Protocol-Version"] for r, _ in probes] == ["2030-01-01", "2026-07-28"]
    assert client.protocol_version == "2026-07-28"
    assert peer.sessions == 0


# --- 2. fixed modes ------------------------------------------------------------------------------


async def test_mode_legacy_sends_no_discover() -> None:
    peer = LegacyPeer()
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        assert await client.connect() == "legacy"
        await client.list_tools()
    assert peer.methods() == ["initialize", "notifications/initialized", "tools/list"]


async def test_mode_modern_sends_no_initialize_and_no_delete() -> None:
    listing = {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private"}
    peer = LegacyPeer(lambda body, request: listing)
    options = ClientOptions(mode="2026-07-28")
    async with peer.http() as http, MrtrClient("/mcp", http_client=http, options=options) as client:
        assert await client.connect() == "2026-07-28"
        await client.list_tools()
    assert peer.methods() == ["tools/list"]
    _, body = peer.sent("tools/list")[0]
    assert body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert peer.of("DELETE") == [] and peer.of("GET") == []


# --- 3. the session on every request -------------------------------------------------------------

ROUTE_TOOL = {
    "name": "route",
    "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}},
}


async def test_every_request_after_initialize_carries_the_session_and_the_chosen_version() -> None:
    peer = LegacyPeer(lambda body, request: legacy_text("routed"), version="2025-06-18", tools=[ROUTE_TOOL])
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http)  # auto: probe, then initialize
        await client.list_tools()
        outcome = await client.call_tool("route", {"region": "eu"}, meta={"trace": "t-1"})
        await client.request("resources/list")
    assert first_text(outcome) == "routed"
    assert client.protocol_version == "2025-06-18"

    posts = peer.posts()
    init_index = next(i for i, (_, body) in enumerate(posts) if body.get("method") == "initialize")
    init_request, init_body = posts[init_index]
    assert init_body["params"]["protocolVersion"] == "2025-11-25"
    assert "Mcp-Session-Id" not in init_request.headers
    after = posts[init_index + 1 :]
    assert [b["method"] for _, b in after] == [
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "resources/list",
    ]
    for request, body in after:
        assert request.headers["Mcp-Session-Id"] == "s-1", body
        assert request.headers["MCP-Protocol-Version"] == "2025-06-18", body
        assert not [h for h in request.headers if h.lower().startswith("mcp-param-")], body
        meta = (body.get("params") or {}).get("_meta") or {}
        assert not [k for k in meta if k.startswith("io.modelcontextprotocol/")], body
    _, call = peer.sent("tools/call")[0]
    assert call["params"] == {"name": "route", "arguments": {"region": "eu"}, "_meta": {"trace": "t-1"}}


async def test_a_32020_in_a_session_is_the_calls_answer_not_a_reason_to_resend_it() -> None:
    """Only the 2026-07-28 wire refuses a header mismatch before the tool runs, which is what makes
    re-listing and resending a ``tools/call`` safe there. In a 2025-era session the code is just
    the server's answer: resending could run the tool twice."""
    mismatch = rpc_error(-32020, "header mismatch")
    peer = LegacyPeer(
        lambda body, request: httpx.Response(200, json={**mismatch, "id": body["id"]}), tools=[ROUTE_TOOL]
    )
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        with pytest.raises(McpServerError) as raised:
            await client.call_tool("route", {"region": "eu"}, meta={"trace": "t-1"})
    assert raised.value.code == -32020
    assert peer.methods().count("tools/call") == 1
    assert "tools/list" not in peer.methods()


async def test_a_server_choosing_an_unknown_version_is_refused() -> None:
    peer = LegacyPeer(version="1999-01-01")
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        with pytest.raises(InvalidServerResponseError, match="1999-01-01"):
            await client.connect()
    assert "notifications/initialized" not in peer.methods()


# --- 4. the server's requests on the call's stream -----------------------------------------------


def ask(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def asking_tool(peer_ref: list[LegacyPeer], question: dict[str, Any]) -> Respond:
    """A tools/call that asks ``question`` on its stream, waits for the answer, then answers
    with the client's response (as JSON text) in its result."""

    def respond(body: dict[str, Any], request: httpx.Request) -> httpx.Response:
        async def events() -> AsyncIterator[bytes]:
            yield event(question)
            answer = await peer_ref[0].answered(question["id"])
            yield event(result(body, legacy_text(json.dumps(answer))))

        return sse_stream(events())

    return respond


def peer_asking(question: dict[str, Any], **kwargs: Any) -> LegacyPeer:
    ref: list[LegacyPeer] = []
    peer = LegacyPeer(asking_tool(ref, question), **kwargs)
    ref.append(peer)
    return peer


async def test_elicitation_on_the_call_stream_is_answered_with_a_posted_response() -> None:
    question = ask("srv-1", "elicitation/create", {"mode": "form", "message": "ok?", "requestedSchema": FORM})
    peer = peer_asking(question)
    seen: list[ElicitRequestParams] = []

    async def on_elicit(params: ElicitRequestParams) -> dict[str, Any]:
        seen.append(params)
        return {"action": "accept", "content": {"ok": True}}

    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        client.set_elicitation_handler(on_elicit)
        outcome = await client.call_tool("book")
    expected = {"jsonrpc": "2.0", "id": "srv-1", "result": {"action": "accept", "content": {"ok": True}}}
    assert json.loads(first_text(outcome)) == expected
    assert [p.message for p in seen] == ["ok?"]
    answers = [(r, b) for r, b in peer.posts() if "method" not in b]
    assert [b for _, b in answers] == [expected]
    assert answers[0][0].headers["Mcp-Session-Id"] == "s-1"
    assert answers[0][0].headers["MCP-Protocol-Version"] == "2025-11-25"
    _, init = peer.sent("initialize")[0]
    assert init["params"]["capabilities"] == {"elicitation": {"form": {}, "url": {}}}


async def test_a_request_without_a_handler_is_answered_method_not_found() -> None:
    question = ask(41, "sampling/createMessage", {"messages": [], "maxTokens": 5})
    peer = peer_asking(question)
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        outcome = await client.call_tool("summarise")
    answer = json.loads(first_text(outcome))
    assert answer["id"] == 41 and "result" not in answer
    assert answer["error"]["code"] == -32601


async def test_ping_from_the_server_is_answered_with_an_empty_result() -> None:
    peer = peer_asking(ask(7, "ping"))
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        outcome = await client.call_tool("slow")
    assert json.loads(first_text(outcome)) == {"jsonrpc": "2.0", "id": 7, "result": {}}


def never_answering_tool(question: dict[str, Any] | None) -> Respond:
    """A tools/call stream that (maybe) asks, then never sends its response."""

    def respond(body: dict[str, Any], request: httpx.Request) -> httpx.Response:
        async def events() -> AsyncIterator[bytes]:
            if question is not None:
                yield event(question)
            yield b": keep-alive\n\n"
            await anyio.sleep(GATE)

        return sse_stream(events())

    return respond


ELICIT = ask("q-1", "elicitation/create", {"mode": "form", "message": "wait", "requestedSchema": FORM})


async def _slow_handler(params: ElicitRequestParams) -> dict[str, Any]:
    await anyio.sleep(GATE)
    return {"action": "cancel"}


async def test_a_handler_outliving_round_timeout_fails_the_call_and_cancels_it() -> None:
    peer = LegacyPeer(never_answering_tool(ELICIT))
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=timeouts(round_timeout=0.2))
        client.set_elicitation_handler(_slow_handler)
        started = time.monotonic()
        with anyio.fail_after(GATE / 2), pytest.raises(RoundTimeoutError):
            await client.call_tool("wait")
    assert time.monotonic() - started < 3
    _, call = peer.sent("tools/call")[0]
    cancels = [b for _, b in peer.sent("notifications/cancelled")]
    assert [c["params"]["requestId"] for c in cancels] == [call["id"]]
    assert peer.responses == {}  # the abandoned question got no answer


async def test_max_total_timeout_bounds_a_legacy_call() -> None:
    peer = LegacyPeer(never_answering_tool(None))
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=timeouts(max_total_timeout=0.3))
        started = time.monotonic()
        with anyio.fail_after(GATE / 2), pytest.raises(FlowTimeoutError):
            await client.call_tool("forever")
    assert time.monotonic() - started < 3
    _, call = peer.sent("tools/call")[0]
    assert [b["params"]["requestId"] for _, b in peer.sent("notifications/cancelled")] == [call["id"]]


async def test_a_failing_handler_fails_the_call_with_its_own_exception() -> None:
    def broken(params: ElicitRequestParams) -> dict[str, Any]:
        raise RuntimeError("the terminal is gone")

    peer = LegacyPeer(never_answering_tool(ELICIT))
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        client.set_elicitation_handler(broken)
        with anyio.fail_after(GATE / 2), pytest.raises(RuntimeError, match="the terminal is gone"):
            await client.call_tool("ask")
    _, call = peer.sent("tools/call")[0]
    assert [b["params"]["requestId"] for _, b in peer.sent("notifications/cancelled")] == [call["id"]]


async def test_cancelling_a_call_is_bounded_when_the_server_stalls_the_notification() -> None:
    """The notifications/cancelled POST is best-effort and promised to take at most
    _CANCEL_GRACE (2 s); a server that sits on it must not hold the failing call."""

    async def stall(request: httpx.Request) -> httpx.Response:
        await anyio.sleep(6)
        return httpx.Response(202)

    peer = LegacyPeer(never_answering_tool(ELICIT), on_cancelled=stall)
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=timeouts(round_timeout=0.2))
        client.set_elicitation_handler(_slow_handler)
        started = time.monotonic()
        with pytest.raises(RoundTimeoutError):
            await client.call_tool("wait")
        elapsed = time.monotonic() - started
    assert peer.sent("notifications/cancelled")
    assert elapsed < 4, f"the call took {elapsed:.1f}s: the cancel grace did not apply"


# --- 5. a session the server forgot ------------------------------------------------------------


async def test_a_404_re_initializes_once_and_resends() -> None:
    def respond(body: dict[str, Any], request: httpx.Request) -> Any:
        if request.headers.get("Mcp-Session-Id") == "s-1":
            return httpx.Response(404, text="session not found")
        return legacy_text(f"served in {request.headers['Mcp-Session-Id']}")

    peer = LegacyPeer(respond)
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        outcome = await client.call_tool("t")
    assert first_text(outcome) == "served in s-2"
    assert peer.methods() == [
        "initialize",
        "notifications/initialized",
        "tools/call",
        "initialize",
        "notifications/initialized",
        "tools/call",
        "tools/list",
    ]
    reinit, _ = peer.sent("initialize")[1]
    assert "Mcp-Session-Id" not in reinit.headers
    assert [r.headers["Mcp-Session-Id"] for r, _ in peer.sent("tools/call")] == ["s-1", "s-2"]


async def test_a_second_404_is_raised() -> None:
    peer = LegacyPeer(lambda body, request: httpx.Response(404, text="session not found"))
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        with pytest.raises(StatusCodeError) as caught:
            await client.call_tool("t")
    assert caught.value.status_code == 404
    assert peer.sessions == 2
    assert len(peer.sent("tools/call")) == 2


# --- 6. resumption ---------------------------------------------------------------------------


def closing_early(body: dict[str, Any], request: httpx.Request) -> httpx.Response:
    """The call's stream primes with an event id and a retry hint, then closes (SEP-1699)."""

    async def events() -> AsyncIterator[bytes]:
        yield event(event_id="e1", retry=100)

    return sse_stream(events())


async def test_a_closed_call_stream_is_resumed_with_last_event_id() -> None:
    calls: list[dict[str, Any]] = []

    def respond(body: dict[str, Any], request: httpx.Request) -> httpx.Response:
        calls.append(body)
        return closing_early(body, request)

    async def on_get(request: httpx.Request) -> httpx.Response:
        if "Last-Event-ID" not in request.headers:
            return httpx.Response(405)  # the session's own GET stream: none here
        reply = result(calls[0], legacy_text("resumed"))
        return httpx.Response(200, headers=SSE_HEADERS, content=event(reply, event_id="e2"))

    peer = LegacyPeer(respond, on_get=on_get)
    async with peer.http() as http, MrtrClient("/mcp", http_client=http, options=legacy()) as client:
        with anyio.fail_after(GATE / 2):
            outcome = await client.call_tool("long")
    assert first_text(outcome) == "resumed"
    resumes = [r for r in peer.of("GET") if "Last-Event-ID" in r.headers]
    assert len(resumes) == 1
    assert resumes[0].headers["Last-Event-ID"] == "e1"
    assert resumes[0].headers["Mcp-Session-Id"] == "s-1"
    assert resumes[0].headers["MCP-Protocol-Version"] == "2025-11-25"
    assert "text/event-stream" in resumes[0].headers["Accept"]
    listeners = [r for r in peer.of("GET") if "Last-Event-ID" not in r.headers]
    assert len(listeners) == 1  # the session's GET stream, opened after initialize


async def test_a_resume_refused_with_405_ends_the_call() -> None:
    peer = LegacyPeer(closing_early)
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        with anyio.fail_after(GATE / 2), pytest.raises(StreamClosedError):
            await client.call_tool("long")
    gets = peer.of("GET")
    assert [r.headers.get("Last-Event-ID") for r in gets] == ["e1"]


async def test_a_json_rpc_error_on_the_call_stream_is_raised_as_a_server_error() -> None:
    """2025-era SDK servers answer over SSE by default, errors included ("Unknown tool")."""

    def respond(body: dict[str, Any], request: httpx.Request) -> httpx.Response:
        async def events() -> AsyncIterator[bytes]:
            yield event(rpc_error(-32602, "Unknown tool: nope", body["id"]), event_id="1")

        return sse_stream(events())

    peer = LegacyPeer(respond)
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        with anyio.fail_after(GATE / 2), pytest.raises(McpServerError) as caught:
            await client.call_tool("nope")
    assert caught.value.code == -32602
    assert peer.sent("notifications/cancelled") == []  # the server answered: nothing to cancel


# --- 7. closing the session --------------------------------------------------------------------


async def test_leaving_async_with_deletes_the_session() -> None:
    peer = LegacyPeer()
    async with peer.http() as http:
        async with MrtrClient("/mcp", http_client=http, options=legacy()) as client:
            await client.connect()
            assert peer.of("DELETE") == []
        deletes = peer.of("DELETE")
        assert len(deletes) == 1
        assert deletes[0].headers["Mcp-Session-Id"] == "s-1"
        await client.aclose()  # closing twice sends nothing more
    assert len(peer.of("DELETE")) == 1


async def test_closing_is_bounded_when_the_server_stalls_the_delete() -> None:
    """The DELETE is best-effort within _CANCEL_GRACE (2 s), like notifications/cancelled."""

    async def stall(request: httpx.Request) -> httpx.Response:
        await anyio.sleep(6)
        return httpx.Response(200)

    peer = LegacyPeer(on_delete=stall)
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        await client.connect()
        started = time.monotonic()
        await client.aclose()
        elapsed = time.monotonic() - started
    assert len(peer.of("DELETE")) == 1
    assert elapsed < 4, f"aclose took {elapsed:.1f}s: the DELETE grace did not apply"


# --- 8. MRTR arguments have no place in a session ---------------------------------------------


async def test_request_state_in_a_legacy_session_is_a_value_error() -> None:
    peer = LegacyPeer(lambda body, request: legacy_text("never"))
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy())
        with pytest.raises(ValueError, match="2025-era"):
            await client.call_tool("t", request_state="x")
        with pytest.raises(ValueError):
            await client.call_tool("t", input_responses={"k": {"action": "cancel"}})
    assert peer.sent("tools/call") == []


# --- 9. progress and notifications on the call's stream -------------------------------------


async def test_progress_and_notifications_on_the_call_stream_reach_the_callbacks() -> None:
    def respond(body: dict[str, Any], request: httpx.Request) -> httpx.Response:
        token = body["params"]["_meta"]["progressToken"]
        progress = {"progressToken": token, "progress": 1, "total": 2}
        log = {"level": "info", "data": "halfway"}

        async def events() -> AsyncIterator[bytes]:
            yield event({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}, event_id="1")
            yield event({"jsonrpc": "2.0", "method": "notifications/message", "params": log}, event_id="2")
            yield event(result(body, legacy_text("done")), event_id="3")

        return sse_stream(events())

    notes: list[ProgressNotification] = []
    others: list[JSONRPCNotification] = []
    peer = LegacyPeer(respond)
    async with peer.http() as http:
        client = MrtrClient("/mcp", http_client=http, options=legacy(), on_notification=others.append)
        outcome = await client.call_tool("work", progress_callback=notes.append)
    assert first_text(outcome) == "done"
    assert [(n.progress, n.total) for n in notes] == [(1, 2)]
    assert [(o.method, (o.params or {}).get("data")) for o in others] == [("notifications/message", "halfway")]
    _, call = peer.sent("tools/call")[0]
    assert set(call["params"]["_meta"]) == {"progressToken"}
