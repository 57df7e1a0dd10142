"""Who the bookshop's caller is: OAuth access tokens from a real issuer, or demo tokens.

OAuth mode (``BOOKSHOP_OAUTH_ISSUER`` and ``BOOKSHOP_PUBLIC_URL`` set): the MCP endpoint is an
OAuth resource server (docs/oauth.md). Tokens are JWTs from that issuer, for that public URL of
``/mcp``; the scopes each route needs are the ones its ``Security(..., scopes=[...])`` names in
main.py, declared nowhere else. ``list_books`` and ``get_book`` declare none and stay public.

Demo mode (the default): fixed bearer tokens from ``BOOKSHOP_TOKENS``; the declared scopes are
not checked (the demo tokens carry none), the admin flag of a demo user is.
"""

from __future__ import annotations

import os
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer, SecurityScopes

from fastapi_mrtr.auth import AccessToken, OAuthResourceServer

from .models import User

bearer = HTTPBearer(auto_error=False)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
ADMIN_SCOPE = "admin"


def oauth_from_environment() -> OAuthResourceServer | None:
    """The resource server of OAuth mode, or None (demo mode) when either variable is unset."""
    issuer = os.environ.get("BOOKSHOP_OAUTH_ISSUER", "").strip()
    public_url = os.environ.get("BOOKSHOP_PUBLIC_URL", "").strip()
    if not issuer or not public_url:
        return None
    return OAuthResourceServer(
        resource=public_url,
        authorization_servers=[issuer],
        allow_anonymous=True,  # the catalogue (list_books, get_book) is public
        resource_name="Bookshop",
    )


OAUTH = oauth_from_environment()


def _tokens() -> dict[str, User]:
    # BOOKSHOP_TOKENS="alice-token:alice:admin,bob-token:bob"
    raw = os.environ.get("BOOKSHOP_TOKENS", "alice-token:alice:admin,bob-token:bob")
    users: dict[str, User] = {}
    for entry in filter(None, raw.split(",")):
        token, name, *role = entry.split(":")
        users[token] = User(name=name, is_admin=role == ["admin"])
    return users


def _user_of(token: AccessToken) -> User:
    return User(name=token.subject or token.client_id or "unknown", is_admin=ADMIN_SCOPE in token.scopes)


async def current_user(security_scopes: SecurityScopes, request: Request, credentials: Credentials) -> User:
    """The signed-in user; 401 without one. In OAuth mode, 403 without the route's scopes."""
    if OAUTH is not None:
        return _user_of(await OAUTH.require(security_scopes, request))
    user = _tokens().get(credentials.credentials) if credentials else None
    if user is None:
        raise HTTPException(401, "Sign in: send Authorization: Bearer <token>", headers={"WWW-Authenticate": "Bearer"})
    return user


async def optional_user(security_scopes: SecurityScopes, request: Request, credentials: Credentials) -> User | None:
    """The user if one signed in (demo mode); in OAuth mode the route's scopes are required."""
    if OAUTH is not None:
        return _user_of(await OAUTH.require(security_scopes, request))
    return _tokens().get(credentials.credentials) if credentials else None
