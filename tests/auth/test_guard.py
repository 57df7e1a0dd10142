"""The guard on its own: what the endpoint behind it receives, and refusals that are never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.types import Message, Receive, Scope, Send

from fastapi_mrtr import MCP, ServerOptions
from fastapi_mrtr.auth import AccessToken, InvalidTokenError, OAuthResourceServer
from fastapi_mrtr.auth.principal import PRINCIPAL_HEADER, principal_of
from tests.support import rpc_body, rpc_headers, running_server

pytestmark = pytest.mark.anyio
RESOURCE = "https://guarded.example.test/mcp"


class TableVerifier:
    """Tokens from a table; ``boom`` makes the verifier itself fail (a bug, a down issuer...)."""

    async def verify(self, token: str) -> AccessToken:
        if token == "boom":
            raise RuntimeError("verifier bug")
        if token == "alice":
            return AccessToken(subject="alice", scopes=frozenset(), client_id="c", claims={"iss": "https://as.test"})
        raise InvalidTokenError("unknown token")


class Recorder:
    """An endpoint that answers 200 and keeps what it was handed."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.body = b""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        more = True
        while more:
            message: Message = await receive()
            self.body += message.get("body", b"")
            more = message.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def guarded(limit: int = 1000) -> tuple[FastAPI, Recorder, Any]:
    app = FastAPI()
    auth = OAuthResourceServer(resource=RESOURCE, authorization_servers=["https://as.test"], verifier=TableVerifier())
    mcp = MCP(app, options=ServerOptions(max_body_bytes=limit), auth=auth)
    app.mount("/mcp", mcp)
    recorder = Recorder()
    guard = mcp._guard
    assert guard is not None

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        await guard(scope, receive, send, recorder)

    return app, recorder, asgi


async def test_the_endpoint_gets_the_whole_body_and_the_verified_principal_not_a_forged_one() -> None:
    _, recorder, asgi = guarded()
    body = json.dumps(rpc_body("tools/list")).encode()

    async def chunks() -> Any:  # sent in pieces: the guard must hand on every byte
        for start in range(0, len(body), 7):
            yield body[start : start + 7]

    async with httpx.AsyncClient(transport=httpx.ASGITransport(asgi), base_url="http://t") as http:
        headers = {**rpc_headers("tools/list"), "authorization": "Bearer alice", PRINCIPAL_HEADER: "oauth:forged"}
        response = await http.post("/mcp", content=chunks(), headers=headers)
    assert response.status_code == 200
    assert recorder.body == body
    alice = AccessToken(subject="alice", scopes=frozenset(), client_id="c", claims={"iss": "https://as.test"})
    assert recorder.headers[PRINCIPAL_HEADER] == principal_of(alice)


async def test_a_forged_principal_is_dropped_even_when_no_token_is_needed() -> None:
    app = FastAPI()
    auth = OAuthResourceServer(
        resource=RESOURCE, authorization_servers=["https://as.test"], verifier=TableVerifier(), allow_anonymous=True
    )
    mcp = MCP(app, auth=auth)
    recorder = Recorder()
    assert mcp._guard is not None
    guard = mcp._guard

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        await guard(scope, receive, send, recorder)

    async with httpx.AsyncClient(transport=httpx.ASGITransport(asgi), base_url="http://t") as http:
        headers = {**rpc_headers("tools/list"), PRINCIPAL_HEADER: "oauth:forged"}
        assert (await http.post("/mcp", json=rpc_body("tools/list"), headers=headers)).status_code == 200
    assert PRINCIPAL_HEADER not in recorder.headers


@pytest.fixture
def served() -> Iterator[str]:
    app, _, _ = guarded(limit=2000)
    with running_server(app) as base:
        yield base


async def test_refusals_on_real_uvicorn_are_never_a_500(served: str) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        post = lambda body, token: http.post(  # noqa: E731
            f"{served}/mcp",
            content=body,
            headers={
                **rpc_headers("tools/list"),
                "content-type": "application/json",
                "authorization": f"Bearer {token}",
            },
        )
        failing = await post(json.dumps(rpc_body("tools/list")), "boom")
        assert failing.status_code == 401
        assert 'error="invalid_token"' in failing.headers["www-authenticate"]
        # With a good token, a malformed body is the endpoint's own 400, not the guard's.
        malformed = await post(b"{not json", "alice")
        assert malformed.status_code == 400
        assert malformed.json()["error"]["code"] == -32700
        # Larger than the limit: the guard stops reading and the endpoint answers 413.
        big = json.dumps(rpc_body("tools/list", {"pad": "x" * 5000}))
        assert (await post(big, "alice")).status_code == 413
        # And without a token, before any of that: 401.
        bare = await http.post(f"{served}/mcp", content=big, headers=rpc_headers("tools/list"))
        assert bare.status_code == 401
