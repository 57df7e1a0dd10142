"""End to end with a real authorization server: oidc-provider on loopback issues JWT access tokens
for the endpoint (RFC 8707 resource indicators); the endpoint on real uvicorn finds the provider's
keys through its discovery document and serves or challenges each call."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from fastapi_mrtr.auth import IntrospectionVerifier
from tests.auth.oidc_provider import client_credentials_token, oidc_provider
from tests.auth.serving import serving
from tests.auth.shop import Shop, build_shop
from tests.support import rpc_body, rpc_headers

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with oidc_provider() as url:
        yield url


def call(base: str, tool: str, token: str, arguments: dict[str, object] | None = None) -> httpx.Response:
    body = rpc_body("tools/call", {"name": tool, "arguments": arguments or {}})
    headers = {**rpc_headers("tools/call", tool), "authorization": f"Bearer {token}"}
    return httpx.post(f"{base}/mcp", json=body, headers=headers, timeout=10)


def test_tokens_from_oidc_provider_call_tools_or_get_the_403_challenge(issuer: str) -> None:
    with serving(lambda base: build_shop(issuer=issuer, resource=f"{base}/mcp")) as (shop, base):
        assert isinstance(shop, Shop)
        resource = f"{base}/mcp"
        metadata = httpx.get(f"{base}/.well-known/oauth-protected-resource/mcp").json()
        assert metadata["resource"] == resource and metadata["authorization_servers"] == [issuer]

        granted = client_credentials_token(issuer, "reader", "reader-secret", resource, "orders:read")
        assert granted.status_code == 200, granted.text
        reader = granted.json()["access_token"]
        orders = call(base, "my_orders", reader)
        assert orders.status_code == 200, orders.text
        assert orders.json()["result"]["structuredContent"] == {"subject": "reader", "orders": [1, 2]}

        refused = call(base, "delete_book", reader, {"book_id": 1})
        assert refused.status_code == 403
        assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
        assert 'scope="admin orders:write"' in refused.headers["www-authenticate"]
        assert shop.reached == ["my_orders"]

        # Step up: a token with the scopes the challenge named.
        admin = client_credentials_token(issuer, "admin", "admin-secret", resource, "admin orders:write")
        deleted = call(base, "delete_book", admin.json()["access_token"], {"book_id": 1})
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["result"]["structuredContent"] == {"deleted": 1, "by": "admin"}

        # The same provider's token for another resource is refused: audience is checked.
        elsewhere = client_credentials_token(issuer, "admin", "admin-secret", "https://elsewhere.test/mcp", "admin")
        wrong = call(base, "my_orders", elsewhere.json()["access_token"])
        assert wrong.status_code == 401
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
        assert shop.reached == ["my_orders", "delete_book"]


def test_opaque_tokens_are_checked_by_introspection(issuer: str) -> None:
    def build(base: str) -> Shop:
        verifier = IntrospectionVerifier(
            issuer=issuer, audience=f"{base}/mcp", client_id="introspector", client_secret="introspector-secret"
        )
        return build_shop(issuer=issuer, resource=f"{base}/mcp", verifier=verifier)

    with serving(build) as (shop, base):
        resource = f"{base}/mcp"
        granted = client_credentials_token(issuer, "opaque-reader", "opaque-secret", resource, "orders:read")
        opaque = granted.json()["access_token"]
        assert opaque.count(".") == 0  # not a JWT: only the issuer can say what it is
        orders = call(base, "my_orders", opaque)
        assert orders.status_code == 200, orders.text
        # A client-credentials token acts for no user: the introspection answer names no subject.
        assert orders.json()["result"]["structuredContent"] == {"subject": None, "orders": [1, 2]}
        refused = call(base, "delete_book", opaque, {"book_id": 1})
        assert refused.status_code == 403
        assert 'scope="admin orders:write"' in refused.headers["www-authenticate"]

        # Another resource's token is active at the issuer, but not for this audience.
        other = client_credentials_token(
            issuer, "opaque-reader", "opaque-secret", "https://elsewhere.test/mcp", "orders:read"
        )
        wrong = call(base, "my_orders", other.json()["access_token"])
        assert wrong.status_code == 401
        assert "audience" in wrong.headers["www-authenticate"]
        # A token the issuer never issued is not active.
        unknown = call(base, "my_orders", "made-up-opaque-token")
        assert unknown.status_code == 401
        assert "not active" in unknown.headers["www-authenticate"]
        assert shop.reached == ["my_orders"]
