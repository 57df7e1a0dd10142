"""The official Python client (mcp 2.3.0) with its OAuth provider against the protected endpoint and
a real authorization server (oidc-provider): it finds the metadata from the 401, registers, signs
the user in (authorization code + PKCE, RFC 8707 resource), calls a tool, gets the 403 challenge
on a tool needing more, steps up and succeeds. In the 2026-07-28 era and in a 2025-era session."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from tests.auth.oidc_provider import oidc_provider
from tests.auth.serving import serving
from tests.auth.shop import Shop, build_shop
from tests.auth.signin import Browser, SignIn

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

REDIRECT = "http://127.0.0.1:9/callback"  # never opened: the stand-in browser stops at it


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with oidc_provider() as url:
        yield url


@pytest.fixture
def shop(issuer: str) -> Iterator[tuple[Shop, str]]:
    with serving(lambda base: build_shop(issuer=issuer, resource=f"{base}/mcp")) as (built, base):
        yield built, base


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_the_official_client_signs_in_and_steps_up(shop: tuple[Shop, str], mode: str) -> None:
    app, base = shop
    # alice first declines admin; when the client comes back for it, she grants it.
    browser = Browser(REDIRECT, [SignIn("alice", decline="admin"), SignIn("alice")])

    async def callback() -> AuthorizationCodeResult:
        code, state, iss = await browser.callback()
        return AuthorizationCodeResult(code=code, state=state, iss=iss)

    provider = OAuthClientProvider(
        server_url=f"{base}/mcp",
        client_metadata=OAuthClientMetadata(
            redirect_uris=[AnyUrl(REDIRECT)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            client_name="official client test",
        ),
        storage=MemoryStorage(),
        redirect_handler=browser.open,
        callback_handler=callback,
    )
    async with (
        httpx2.AsyncClient(auth=provider, timeout=20) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http), mode=mode) as client,
    ):
        orders = await client.call_tool("my_orders", {})
        assert not orders.is_error, orders
        assert orders.structured_content == {"subject": "alice", "orders": [1, 2]}
        assert browser.signed_in == ["alice"]

        deleted = await client.call_tool("delete_book", {"book_id": 9})
        assert not deleted.is_error, deleted
        assert deleted.structured_content == {"deleted": 9, "by": "alice"}
    assert browser.signed_in == ["alice", "alice"]  # the 403 made the client sign in again
    # The second authorization asked for admin: the step-up named it.
    assert "admin" in browser.requested[1].split()
    assert app.reached == ["my_orders", "delete_book"]
