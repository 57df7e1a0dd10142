"""OAuth 2.1 for the MCP client (MCP 2026-07-28 authorization), as an ``httpx.Auth``.

::

    from fastapi_mrtr.client import MrtrClient
    from fastapi_mrtr.client.auth import ClientMetadata, OAuthClientAuth

    async def authorize(url: str) -> str:
        print("Open", url)
        return input("Paste the URL you were redirected to: ")

    auth = OAuthClientAuth(
        authorization_handler=authorize,
        client_metadata=ClientMetadata(redirect_uris=["http://127.0.0.1:8765/callback"]),
    )
    async with MrtrClient("https://mcp.example.com/mcp", auth=auth) as client:
        await client.list_tools()

See ``docs/client.md`` (Authorization).
"""

from __future__ import annotations

from fastapi_mrtr.client.auth._challenge import BearerChallenge, bearer_challenge
from fastapi_mrtr.client.auth._discovery import Discovery
from fastapi_mrtr.client.auth._errors import (
    OAuthAuthorizationError,
    OAuthDiscoveryError,
    OAuthError,
    OAuthRegistrationError,
    OAuthTokenError,
)
from fastapi_mrtr.client.auth._flow import AssertionProvider, Grant
from fastapi_mrtr.client.auth._httpx_auth import OAuthClientAuth
from fastapi_mrtr.client.auth._loopback import LoopbackSignIn
from fastapi_mrtr.client.auth._models import (
    AuthorizationServerMetadata,
    ClientMetadata,
    OAuthClientInfo,
    OAuthToken,
    ProtectedResourceMetadata,
)
from fastapi_mrtr.client.auth._redirect import AuthorizationHandler, follow_authorization_redirect
from fastapi_mrtr.client.auth._storage import InMemoryTokenStore, TokenStore

__all__ = [
    "AssertionProvider",
    "AuthorizationHandler",
    "AuthorizationServerMetadata",
    "BearerChallenge",
    "ClientMetadata",
    "Discovery",
    "Grant",
    "InMemoryTokenStore",
    "LoopbackSignIn",
    "OAuthAuthorizationError",
    "OAuthClientAuth",
    "OAuthClientInfo",
    "OAuthDiscoveryError",
    "OAuthError",
    "OAuthRegistrationError",
    "OAuthToken",
    "OAuthTokenError",
    "ProtectedResourceMetadata",
    "TokenStore",
    "bearer_challenge",
    "follow_authorization_redirect",
]
