"""Bad input on each verb of the 2025-era endpoint, on real uvicorn: every refusal is a valid
JSON-RPC error (the official SDK's 2025-11-25 models read it) with the code and HTTP status of its
kind, and the headers its kind needs (Allow on 405), whichever verb it came on.

Each refusal is raised and answered in one place (``RpcEndpoint.__call__``), so these cases
pin that one place's answer for POST, GET and DELETE alike.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import httpx
import mcp_types._v2025_11_25 as legacy_wire
import pytest

from fastapi_mrtr.wire.errors import (
    INVALID_REQUEST,
    LEGACY_SESSION_NOT_FOUND,
    PARSE_ERROR,
    http_status_of,
)
from tests.interop.wire import strict_issues
from tests.legacy.conftest import App, build
from tests.legacy.peer import LegacyPeer
from tests.support import running_server

pytestmark = pytest.mark.anyio

BODY_LIMIT = 4096
PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}


@pytest.fixture(scope="module")
def small_bodies() -> Iterator[App]:
    mcp = build(max_body_bytes=BODY_LIMIT)
    with running_server(mcp.app) as base:
        yield App(mcp, f"{base}/mcp")


@dataclass
class Sessions:
    """A session that is open, and one that was DELETEd, with the headers that name each."""

    open: LegacyPeer
    ended: dict[str, str]

    def headers(self, session: str = "open", **more: str) -> dict[str, str]:
        headers = self.open.headers() if session == "open" else dict(self.ended)
        if session == "unknown":
            headers["mcp-session-id"] = headers["mcp-session-id"][:-4] + "AAAA"
        headers.update(more)
        return headers


@pytest.fixture
async def sessions(small_bodies: App) -> AsyncIterator[Sessions]:
    async with httpx.AsyncClient(timeout=10) as http:
        gone = LegacyPeer(http, small_bodies.url)
        await gone.initialize()
        ended = gone.headers()
        assert (await http.delete(small_bodies.url, headers=ended)).status_code == 200
        peer = LegacyPeer(http, small_bodies.url)
        await peer.initialize()
        yield Sessions(peer, ended)


@dataclass(frozen=True)
class Case:
    verb: str
    session: str  # "open", "ended" or "unknown" (a tampered id)
    body: bytes | None
    headers: tuple[tuple[str, str], ...]
    code: int
    status: int
    request_id: int | None = None  # echoed once the refusal came after the id was read


def case(
    verb: str,
    code: int,
    status: int,
    *,
    session: str = "open",
    body: object = None,
    raw: bytes | None = None,
    request_id: int | None = None,
    **headers: str,
) -> Case:
    content = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    pairs = tuple((name.replace("_", "-"), value) for name, value in headers.items())
    return Case(verb, session, content, pairs, code, status, request_id)


CASES = {
    # POST: what reading the body refuses, before the era is known ...
    "post malformed JSON": case("POST", PARSE_ERROR, 400, raw=b'{"jsonrpc": "2.0", "id": 7,'),
    "post wrong content type": case("POST", INVALID_REQUEST, 415, body=PING, content_type="text/plain"),
    "post wrong accept": case("POST", INVALID_REQUEST, 406, body=PING, accept="text/html"),
    "post oversized body": case("POST", INVALID_REQUEST, 413, body={**PING, "params": {"pad": "x" * BODY_LIMIT}}),
    # ... and what the session refuses.
    "post batch": case("POST", INVALID_REQUEST, 400, body=[PING]),
    "post not an object": case("POST", INVALID_REQUEST, 400, body="ping"),
    "post unknown session": case("POST", LEGACY_SESSION_NOT_FOUND, 404, session="unknown", body=PING, request_id=7),
    "post ended session": case("POST", LEGACY_SESSION_NOT_FOUND, 404, session="ended", body=PING, request_id=7),
    "post response to nothing": case("POST", INVALID_REQUEST, 400, body={"jsonrpc": "2.0", "id": 42, "result": {}}),
    "post response for another replica": case(
        "POST", INVALID_REQUEST, 421, body={"jsonrpc": "2.0", "id": "x.1", "result": {}}
    ),
    "post response without result": case("POST", INVALID_REQUEST, 400, body={"jsonrpc": "2.0", "id": 3}),
    "post other protocol version": case(
        "POST", INVALID_REQUEST, 400, body=PING, request_id=7, mcp_protocol_version="2025-03-26"
    ),
    # Was 200 "Method not found: initialize" (the check came after the handler lookup, which has
    # no initialize): initialize is the era's first method, so a second one is an invalid request.
    "post initialize again": case(
        "POST",
        INVALID_REQUEST,
        400,
        body={"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": {}},
        request_id=8,
    ),
    "post without jsonrpc": case("POST", INVALID_REQUEST, 400, body={"id": 7, "method": "ping"}, request_id=7),
    "post boolean id": case("POST", INVALID_REQUEST, 400, body={"jsonrpc": "2.0", "id": True, "method": "ping"}),
    "post foreign origin": case("POST", INVALID_REQUEST, 403, body=PING, origin="https://evil.example"),
    # GET
    "get unknown session": case("GET", LEGACY_SESSION_NOT_FOUND, 404, session="unknown", accept="text/event-stream"),
    "get ended session": case("GET", LEGACY_SESSION_NOT_FOUND, 404, session="ended", accept="text/event-stream"),
    "get wrong accept": case("GET", INVALID_REQUEST, 406, accept="application/json"),
    "get foreign last event id": case(
        "GET", INVALID_REQUEST, 400, accept="text/event-stream", last_event_id="not-ours-at-all"
    ),
    "get unknown stream": case("GET", INVALID_REQUEST, 400, accept="text/event-stream", last_event_id="s7-1"),
    "get another replica's stream": case(
        "GET", INVALID_REQUEST, 421, accept="text/event-stream", last_event_id="zz.9-1"
    ),
    "get foreign origin": case("GET", INVALID_REQUEST, 403, accept="text/event-stream", origin="https://evil.example"),
    # DELETE
    "delete unknown session": case("DELETE", LEGACY_SESSION_NOT_FOUND, 404, session="unknown"),
    "delete ended session": case("DELETE", LEGACY_SESSION_NOT_FOUND, 404, session="ended"),
    "delete foreign origin": case("DELETE", INVALID_REQUEST, 403, origin="https://evil.example"),
}


@pytest.mark.parametrize("bad", CASES.values(), ids=CASES.keys())
async def test_bad_input_is_a_json_rpc_error_with_its_status(sessions: Sessions, bad: Case) -> None:
    headers = sessions.headers(bad.session, **dict(bad.headers))
    response = await sessions.open.http.request(bad.verb, sessions.open.url, content=bad.body, headers=headers)
    assert response.status_code == bad.status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    legacy_wire.JSONRPCErrorResponse.model_validate(body)  # the official SDK reads it as an error
    # The error object exactly as the schema has it. The envelope's ``"id": null`` (an id that
    # could not be read) is what JSON-RPC 2.0 asks; the MCP schema would leave the key out.
    assert set(body) == {"jsonrpc", "id", "error"}
    assert not strict_issues(legacy_wire.Error, body["error"], "error")
    assert body["error"]["code"] == bad.code
    assert body["id"] == bad.request_id
    assert body["error"]["message"]  # names what went wrong
    if bad.status in (400, 404):  # no transport status of its own: the code says it
        assert http_status_of(bad.code) == bad.status


async def test_a_verb_the_endpoint_does_not_serve_names_the_one_it_does(sessions: Sessions) -> None:
    """A GET without a session has no stream to serve: 405 with ``Allow``, from the refusal itself."""
    headers = {"accept": "text/event-stream"}
    response = await sessions.open.http.get(sessions.open.url, headers=headers)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    legacy_wire.JSONRPCErrorResponse.model_validate(response.json())
    assert response.json()["error"]["code"] == INVALID_REQUEST


async def test_a_full_caller_is_told_when_to_retry() -> None:
    """Streams full is 429 for the caller that holds its share, with ``Retry-After``; the session goes on."""
    mcp = build(legacy_max_streams_per_caller=1)
    with running_server(mcp.app) as base:
        async with httpx.AsyncClient(timeout=10) as http:
            peer = LegacyPeer(http, f"{base}/mcp")
            await peer.initialize()
            async with peer.get() as (held, _), peer.call("confirm") as (response, _):
                assert held.status_code == 200
                body = json.loads(await response.aread())
            assert response.status_code == 429 and response.headers["retry-after"] == "5"
            legacy_wire.JSONRPCErrorResponse.model_validate(body)
            assert body["id"] == peer.next_id
            after = await peer.request("ping")
            assert after.status_code == 200 and after.json()["result"] == {}
