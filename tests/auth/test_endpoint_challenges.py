"""The protected endpoint on real uvicorn: metadata, 401 and 403 challenges before anything runs,
in both eras, with tokens from a real issuer on loopback."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from fastapi_mrtr.auth import AccessToken, JwtVerifier
from tests.auth.issuer import Issuer, rsa_key, running_issuer
from tests.auth.shop import Shop, build_shop
from tests.legacy.peer import LegacyPeer
from tests.support import rpc_body, rpc_headers, running_server

RESOURCE = "https://shop.example.test/mcp"
METADATA = "https://shop.example.test/.well-known/oauth-protected-resource/mcp"
KEY = rsa_key("shop-key")

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer(KEY) as running:
        yield running


def served(issuer: Issuer, **options: Any) -> Iterator[tuple[Shop, str]]:
    shop = build_shop(issuer=issuer.url, resource=RESOURCE, **options)
    with running_server(shop.app) as base:
        yield shop, base


@pytest.fixture
def shop(issuer: Issuer) -> Iterator[tuple[Shop, str]]:
    yield from served(issuer)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def call(
    http: httpx.AsyncClient,
    base: str,
    tool: str,
    token: str | None,
    arguments: dict[str, Any] | None = None,
    **more: str,
) -> httpx.Response:
    headers = {**rpc_headers("tools/call", tool), **(bearer(token) if token else {}), **more}
    body = rpc_body("tools/call", {"name": tool, "arguments": arguments or {}}, request_id=7)
    return await http.post(f"{base}/mcp", json=body, headers=headers)


def challenge(response: httpx.Response) -> dict[str, str]:
    """The parameters of the response's Bearer challenge."""
    value = response.headers["www-authenticate"]
    assert value.startswith("Bearer ")
    params: dict[str, str] = {}
    for part in value[len("Bearer ") :].split('", '):
        name, _, quoted = part.partition("=")
        params[name.strip()] = quoted.strip('"')
    return params


# --- RFC 9728 metadata ---------------------------------------------------------------------------


async def test_metadata_is_served_at_the_mount_path_and_the_root(
    shop: tuple[Shop, str], http: httpx.AsyncClient, issuer: Issuer
) -> None:
    _, base = shop
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        response = await http.get(base + path)
        assert response.status_code == 200, path
        assert response.json() == {
            "resource": RESOURCE,
            "authorization_servers": [issuer.url],
            "bearer_methods_supported": ["header"],
            # From the routes' Security, and auth.scopes on the prompt and resource functions.
            "scopes_supported": ["admin", "docs:read", "orders:read", "orders:write"],
            "resource_name": "Test shop",
        }
        assert response.headers["access-control-allow-origin"] == "*"


# --- 401: no token, a bad token, a token in the query ---------------------------------------------


async def test_no_token_gets_401_naming_the_metadata(shop: tuple[Shop, str], http: httpx.AsyncClient) -> None:
    app, base = shop
    response = await call(http, base, "my_orders", None)
    assert response.status_code == 401
    assert challenge(response) == {"scope": "orders:read", "resource_metadata": METADATA}
    assert response.json()["id"] == 7 and response.json()["error"]["code"] == -32600
    listed = await http.post(f"{base}/mcp", json=rpc_body("tools/list"), headers=rpc_headers("tools/list"))
    assert listed.status_code == 401  # without allow_anonymous every request needs a token
    assert app.reached == []


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def bad_tokens(issuer: Issuer) -> dict[str, str]:
    good_claims = {"iss": issuer.url, "aud": RESOURCE, "exp": 2**33, "sub": "mallory", "scope": "orders:read admin"}
    none_token = (
        f"{_b64(json.dumps({'alg': 'none', 'kid': KEY.kid}).encode())}.{_b64(json.dumps(good_claims).encode())}."
    )
    hs_input = f"{_b64(json.dumps({'alg': 'HS256', 'kid': KEY.kid}).encode())}.{_b64(json.dumps(good_claims).encode())}"
    hs_token = f"{hs_input}.{_b64(hmac.new(KEY.public_pem(), hs_input.encode(), hashlib.sha256).digest())}"
    return {
        "expired": issuer.mint(KEY, audience=RESOURCE, scope="orders:read", expires_in=-300),
        "wrong audience": issuer.mint(KEY, audience="https://elsewhere.test/mcp", scope="orders:read"),
        "wrong issuer": issuer.mint(KEY, audience=RESOURCE, scope="orders:read", issuer="https://evil.test"),
        "unknown kid": issuer.mint(rsa_key("stranger"), audience=RESOURCE, scope="orders:read"),
        "alg none": none_token,
        "HS256 with the public key": hs_token,
        "garbage": "abc.def",
    }


async def test_each_bad_token_gets_401_invalid_token_and_never_reaches_the_route(
    shop: tuple[Shop, str], http: httpx.AsyncClient, issuer: Issuer
) -> None:
    app, base = shop
    for label, token in bad_tokens(issuer).items():
        response = await call(http, base, "my_orders", token)
        assert response.status_code == 401, label
        params = challenge(response)
        assert params["error"] == "invalid_token", label
        assert params["resource_metadata"] == METADATA
        assert params["error_description"], label
        assert response.json()["error"]["message"].startswith("Unauthorized"), label
    assert app.reached == []


async def test_a_token_in_the_query_string_is_refused(
    shop: tuple[Shop, str], http: httpx.AsyncClient, issuer: Issuer
) -> None:
    app, base = shop
    token = issuer.mint(KEY, audience=RESOURCE, scope="orders:read")
    body = rpc_body("tools/call", {"name": "my_orders", "arguments": {}})
    response = await http.post(
        f"{base}/mcp?access_token={token}", json=body, headers=rpc_headers("tools/call", "my_orders")
    )
    assert response.status_code == 401
    assert challenge(response)["error"] == "invalid_request"
    assert app.reached == []


# --- 403: a good token without the scopes --------------------------------------------------------


async def test_a_token_without_the_scope_gets_403_naming_every_scope_the_tool_needs(
    shop: tuple[Shop, str], http: httpx.AsyncClient, issuer: Issuer
) -> None:
    app, base = shop
    token = issuer.mint(KEY, audience=RESOURCE, scope="orders:read orders:write")
    response = await call(http, base, "delete_book", token, {"book_id": 1})
    assert response.status_code == 403
    params = challenge(response)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "admin orders:write"  # the complete set, nested dependency included
    assert params["resource_metadata"] == METADATA
    assert response.json()["error"]["data"] == {"requiredScopes": ["admin", "orders:write"], "missingScopes": ["admin"]}
    assert app.reached == []


async def test_the_403_comes_before_any_sse_byte(
    shop: tuple[Shop, str], http: httpx.AsyncClient, issuer: Issuer
) -> None:
    app, base = shop
    token = issuer.mint(KEY, audience=RESOURCE, scope="orders:write")
    meta = {**rpc_body("tools/list")["params"]["_meta"], "progressToken": "p1"}
    body = rpc_body("tools/call", {"name": "delete_book", "arguments": {"book_id": 1}}, meta=meta)
    headers = {**rpc_headers("tools/call", "delete_book"), **bearer(token)}
    async with http.stream("POST", f"{base}/mcp", json=body, headers=headers) as response:
        assert response.status_code == 403
        assert response.headers["content-type"] == "application/json"
        assert (await response.aread()).startswith(b'{"jsonrpc"')
    assert app.reached == []
    # The same request with every scope streams its progress, then the result.
    token = issuer.mint(KEY, audience=RESOURCE, scope="orders:write admin")
    headers = {**rpc_headers("tools/call", "delete_book"), **bearer(token)}
    async with http.stream("POST", f"{base}/mcp", json=body, headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        text = (await response.aread()).decode()
    assert "notifications/progress" in text and '\\"deleted\\":1' in text.replace(" ", "")
    assert app.reached == ["delete_book"]


async def test_a_token_with_the_scopes_calls_the_tool_and_the_route_sees_it(
    shop: tuple[Shop, str], http: httpx.AsyncClient, issuer: Issuer
) -> None:
    app, base = shop
    token = issuer.mint(KEY, audience=RESOURCE, scope="orders:read", subject="alice")
    response = await call(http, base, "my_orders", token)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["structuredContent"] == {"subject": "alice", "orders": [1, 2]}
    assert app.reached == ["my_orders"]


async def test_the_route_dependency_challenges_rest_callers_the_same_way(
    shop: tuple[Shop, str], http: httpx.AsyncClient, issuer: Issuer
) -> None:
    app, base = shop
    response = await http.get(f"{base}/orders")
    assert response.status_code == 401
    assert challenge(response) == {"scope": "orders:read", "resource_metadata": METADATA}
    token = issuer.mint(KEY, audience=RESOURCE, scope="orders:write")
    response = await http.delete(f"{base}/books/3", headers=bearer(token))
    assert response.status_code == 403
    assert challenge(response)["error"] == "insufficient_scope"
    assert app.reached == []


async def test_prompts_and_resources_are_challenged_for_their_marked_scopes(
    shop: tuple[Shop, str], http: httpx.AsyncClient, issuer: Issuer
) -> None:
    app, base = shop
    lacking = bearer(issuer.mint(KEY, audience=RESOURCE, scope="orders:read"))
    reading = bearer(issuer.mint(KEY, audience=RESOURCE, scope="docs:read"))
    requests = [
        ("prompts/get", "briefing", {"name": "briefing", "arguments": {"topic": "books"}}, "briefing"),
        ("resources/read", "docs://guide", {"uri": "docs://guide"}, "doc"),
    ]
    for method, name, params, function in requests:
        body = rpc_body(method, params)
        refused = await http.post(f"{base}/mcp", json=body, headers={**rpc_headers(method, name), **lacking})
        assert refused.status_code == 403, method
        assert challenge(refused)["scope"] == "docs:read"
        assert function not in app.reached
        served = await http.post(f"{base}/mcp", json=body, headers={**rpc_headers(method, name), **reading})
        assert served.status_code == 200, served.text
    assert app.reached == ["briefing", "doc"]
    listed = await http.post(
        f"{base}/mcp", json=rpc_body("prompts/list"), headers={**rpc_headers("prompts/list"), **lacking}
    )
    assert listed.status_code == 200  # listing needs only a valid token


# --- options: a scope hierarchy, anonymous access to unscoped operations ------------------------


async def test_a_declared_scope_hierarchy_is_honoured(http: httpx.AsyncClient, issuer: Issuer) -> None:
    for app, base in served(issuer, scope_hierarchy={"admin": ["orders:write"], "orders:write": ["orders:read"]}):
        writer = issuer.mint(KEY, audience=RESOURCE, scope="orders:write")
        assert (await call(http, base, "my_orders", writer)).status_code == 200  # orders:write implies read
        assert (await call(http, base, "delete_book", writer, {"book_id": 4})).status_code == 403  # not admin
        admin = issuer.mint(KEY, audience=RESOURCE, scope="admin")
        # admin implies orders:write: the endpoint and the route's own dependency both agree.
        deleted = await call(http, base, "delete_book", admin, {"book_id": 4})
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["result"]["structuredContent"] == {"deleted": 4, "by": "alice"}
        assert app.reached == ["my_orders", "delete_book"]


async def test_anonymous_callers_reach_unscoped_operations_only(http: httpx.AsyncClient, issuer: Issuer) -> None:
    for app, base in served(issuer, allow_anonymous=True):
        listed = await http.post(f"{base}/mcp", json=rpc_body("tools/list"), headers=rpc_headers("tools/list"))
        assert listed.status_code == 200
        assert (await call(http, base, "list_books", None)).status_code == 200
        refused = await call(http, base, "my_orders", None)
        assert refused.status_code == 401
        assert challenge(refused) == {"scope": "orders:read", "resource_metadata": METADATA}
        # A token that is sent must be valid, even for a public operation.
        bad = await call(http, base, "list_books", issuer.mint(KEY, audience=RESOURCE, expires_in=-300))
        assert bad.status_code == 401
        assert app.reached == ["list_books"]


# --- the 2025 era ---------------------------------------------------------------------------------


async def test_a_2025_era_session_gets_the_same_challenges(
    shop: tuple[Shop, str], http: httpx.AsyncClient, issuer: Issuer
) -> None:
    app, base = shop
    anonymous = LegacyPeer(http, f"{base}/mcp")
    response = await anonymous.post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "1"},
            },
        }
    )
    assert response.status_code == 401
    token = issuer.mint(KEY, audience=RESOURCE, scope="orders:read orders:write")
    peer = LegacyPeer(http, f"{base}/mcp", extra_headers=bearer(token))
    await peer.initialize()
    response = await peer.request("tools/call", {"name": "delete_book", "arguments": {"book_id": 2}})
    assert response.status_code == 403
    assert challenge(response)["scope"] == "admin orders:write"
    assert app.reached == []
    response = await peer.request("tools/call", {"name": "my_orders", "arguments": {}})
    assert response.status_code == 200
    assert app.reached == ["my_orders"]


class CountingVerifier:
    """The issuer's JWT verifier, counting the tokens it is asked to check."""

    def __init__(self, issuer: Issuer) -> None:
        self.inner = JwtVerifier(issuer=issuer.url, audience=RESOURCE)
        self.verified: list[str] = []

    async def verify(self, token: str) -> AccessToken:
        self.verified.append(token)
        return await self.inner.verify(token)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_tool_call_verifies_its_token_once_and_the_route_sees_the_verified_claims(
    http: httpx.AsyncClient, issuer: Issuer
) -> None:
    verifier = CountingVerifier(issuer)
    for app, base in served(issuer, verifier=verifier):
        token = issuer.mint(KEY, audience=RESOURCE, scope="admin orders:write", subject="carol")
        response = await call(http, base, "delete_book", token, {"book_id": 4})
        assert response.status_code == 200, response.text
        assert response.json()["result"]["structuredContent"] == {"deleted": 4, "by": "carol"}
        # The guard verified it; both Security(auth.require) dependencies of the route reused that.
        assert verifier.verified == [token]
        # A REST call of the same route has no guard in front: the dependency verifies it itself.
        rest = await http.delete(f"{base}/books/5", headers=bearer(token))
        assert rest.status_code == 200, rest.text
        assert verifier.verified == [token, token]
        assert app.reached == ["delete_book", "delete_book"]
