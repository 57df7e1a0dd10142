"""More bad input on each verb of the 2025-era endpoint, on real uvicorn: the edges
``test_bad_input.py`` leaves out (a broken initialize, odd envelopes, a foreign Host, a second GET
stream, other verbs naming a session).

Each bad input is answered in the one refusing place (``RpcEndpoint.__call__``): the HTTP status
the error vocabulary gives it, a JSON-RPC error body that the official SDK's models read (the
session era's ``mcp.types.JSONRPCError``, and the 2025-11-25 schema's error response with no key
it lacks), the request id when one was read, and the headers the refusal needs (``Allow``,
``Retry-After``), never a 500 and never an empty body.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import mcp.types
import mcp_types._v2025_11_25 as legacy_wire
import pytest

from tests.interop.wire import strict_issues
from tests.legacy.conftest import App, build
from tests.legacy.peer import ACCEPT_BOTH, LegacyPeer
from tests.support import running_server

pytestmark = pytest.mark.anyio

BODY_LIMIT = 2048
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.fixture(scope="module")
def small() -> Iterator[App]:
    mcp = build(max_body_bytes=BODY_LIMIT)
    with running_server(mcp.app) as base:
        yield App(mcp, f"{base}/mcp")


@pytest.fixture
async def peer(small: App) -> AsyncIterator[LegacyPeer]:
    async with httpx.AsyncClient(timeout=10) as http:
        peer = LegacyPeer(http, small.url)
        await peer.initialize()
        yield peer


def assert_refusal(response: httpx.Response, status: int, code: int, request_id: Any = None) -> dict[str, Any]:
    """``response`` is the refusal: status, JSON-RPC error code and id, a body the SDK's models read."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    message = response.json()
    mcp.types.JSONRPCError.model_validate(message)  # the official SDK's session-era model
    envelope = {key: value for key, value in message.items() if not (key == "id" and value is None)}
    legacy_wire.JSONRPCErrorResponse.model_validate(envelope)
    assert strict_issues(legacy_wire.JSONRPCErrorResponse, envelope, "refusal") == []
    assert message["error"]["code"] == code
    assert message["id"] == request_id
    assert isinstance(message["error"]["message"], str) and message["error"]["message"]
    return message


@dataclass
class Bad:
    """One bad POST: the body (bytes as sent), the headers to change, what it must get."""

    body: bytes
    status: int
    code: int
    request_id: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    session: Callable[[str], str] = lambda session_id: session_id


def _raw(message: Any) -> bytes:
    return json.dumps(message).encode()


PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}

BAD_POSTS = {
    "not-utf8": Bad(b"\xff\xfe{}", 400, -32700),
    "no-content-type": Bad(_raw(PING), 415, -32600, headers={"content-type": ""}),
    "empty-batch": Bad(b"[]", 400, -32600),
    "no-method": Bad(_raw({"jsonrpc": "2.0", "id": 7}), 400, -32600),
    "empty-method": Bad(_raw({"jsonrpc": "2.0", "id": 7, "method": ""}), 400, -32600, 7),
    "params-a-list": Bad(_raw({**PING, "params": [1]}), 400, -32600, 7),
    "id-a-float": Bad(_raw({**PING, "id": 1.5}), 400, -32600),
    "notification-without-jsonrpc": Bad(_raw({"method": "notifications/initialized"}), 400, -32600),
    "foreign-host": Bad(_raw(PING), 421, -32600, headers={"host": "evil.example"}),
}


@pytest.mark.parametrize("case", BAD_POSTS.values(), ids=BAD_POSTS.keys())
async def test_a_bad_post_in_a_session_is_refused_once_with_its_status_and_code(peer: LegacyPeer, case: Bad) -> None:
    assert peer.session_id is not None
    headers = peer.headers(**{"mcp-session-id": case.session(peer.session_id), **case.headers})
    headers = {name: value for name, value in headers.items() if value}
    response = await peer.http.post(peer.url, content=case.body, headers=headers)
    assert_refusal(response, case.status, case.code, case.request_id)
    assert "mcp-session-id" not in response.headers  # no refusal opens a session


BAD_INITIALIZES = {
    "no-id": ({k: v for k, v in INITIALIZE.items() if k != "id"}, 400, -32600, None),
    "id-null": ({**INITIALIZE, "id": None}, 400, -32600, None),
    "no-params": ({k: v for k, v in INITIALIZE.items() if k != "params"}, 400, -32602, 1),
    "no-protocol-version": ({**INITIALIZE, "params": {"capabilities": {}}}, 400, -32602, 1),
    "capabilities-a-list": (
        {**INITIALIZE, "params": {"protocolVersion": "2025-11-25", "capabilities": []}},
        400,
        -32602,
        1,
    ),
    "client-info-a-string": (
        {**INITIALIZE, "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": "me"}},
        400,
        -32602,
        1,
    ),
}


@pytest.mark.parametrize(
    ("message", "status", "code", "request_id"), BAD_INITIALIZES.values(), ids=BAD_INITIALIZES.keys()
)
async def test_a_bad_initialize_is_refused_and_opens_no_session(
    small: App, message: Any, status: int, code: int, request_id: Any
) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        headers = {"accept": ACCEPT_BOTH, "content-type": "application/json"}
        response = await http.post(small.url, content=_raw(message), headers=headers)
    assert_refusal(response, status, code, request_id)
    assert "mcp-session-id" not in response.headers


async def test_a_notification_only_body_is_taken_with_an_empty_202(peer: LegacyPeer) -> None:
    response = await peer.post({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    assert response.status_code == 202 and response.content == b""


BAD_GETS: dict[str, tuple[dict[str, str], Callable[[str], str], int]] = {
    "tampered-session": ({}, lambda sid: sid + "x", 404),
    "no-accept": ({"accept": ""}, lambda sid: sid, 406),
    "foreign-host": ({"host": "evil.example"}, lambda sid: sid, 421),
}


@pytest.mark.parametrize(("headers", "session", "status"), BAD_GETS.values(), ids=BAD_GETS.keys())
async def test_a_bad_get_is_refused_once_with_its_status_and_code(
    peer: LegacyPeer, headers: dict[str, str], session: Callable[[str], str], status: int
) -> None:
    assert peer.session_id is not None
    sent = {"accept": "text/event-stream", "mcp-session-id": session(peer.session_id), **headers}
    response = await peer.http.get(peer.url, headers={name: value for name, value in sent.items() if value})
    assert_refusal(response, status, -32001 if status == 404 else -32600)


async def test_a_second_get_stream_is_refused_with_409(peer: LegacyPeer) -> None:
    async with peer.get():
        response = await peer.http.get(peer.url, headers=peer.headers(accept="text/event-stream"))
    assert_refusal(response, 409, -32600)


async def test_a_delete_from_a_foreign_origin_is_refused_and_the_session_lives(peer: LegacyPeer) -> None:
    assert peer.session_id is not None
    headers = {"mcp-session-id": peer.session_id, "origin": "https://evil.example"}
    assert_refusal(await peer.http.delete(peer.url, headers=headers), 403, -32600)
    assert (await peer.request("ping")).json()["result"] == {}


@pytest.mark.parametrize("verb", ["PUT", "PATCH", "HEAD"])
async def test_other_verbs_naming_a_session_get_405_with_allow(peer: LegacyPeer, verb: str) -> None:
    response = await peer.http.request(verb, peer.url, headers=peer.headers())
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    if verb != "HEAD":  # a HEAD answer has no body to read
        assert_refusal(response, 405, -32600)
